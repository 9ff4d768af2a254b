# Copyright 2026, The tff_mixed Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Feddle's coefficient search in the gaps section, measured.

The guided-model-merging paper (Zhu et al.) tunes the search of Feddle's
coefficients; whether a search moves them, and what the atlas's span can
hold at all, decide how far Feddle can leave FedBuff's merge. From the
committed records:

*   `search_lines`: Feddle-ID's search grid on the validation split (the
    merge stage's points), by optimizer and lr, the point selected, and
    what the span of its atlas holds (`feddle_span_lib`'s records);
*   `search_rate_lines`: Feddle-ID run through at other search settings
    than the selected ones, against its fallback FedBuff (test accuracy, a
    diagnostic), each named by its settings (`search_label`).
"""

from collections.abc import Mapping, Sequence
import glob
import json
import os
from typing import Any, Optional

import numpy as np

from experiments.hybrid_async import feddle_span_lib
from experiments.hybrid_async import gaps_records
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
from experiments.hybrid_async import tune_lib


def _rate(key: str) -> tuple[str, str]:
  """(optimizer, lr) of a Feddle search point's key (Adam where the key
  names none: the points searched before the scaled SGD)."""
  values = dict(part.split('=') for part in key.split(','))
  return (values.get('feddle_search_optimizer', 'adam'),
          values['feddle_search_lr'])


def selected_search(tuning_dir: str) -> Optional[Mapping[str, Any]]:
  """Feddle-ID's search values that `tune_lib` selected in `tuning_dir`
  (its selected.json), or None."""
  path = os.path.join(tuning_dir, tune_lib.SELECTED_FILE)
  if not os.path.exists(path):
    return None
  return tune_lib.read_selected(path).methods.get(hybrid_config.FEDDLE_ID)


def search_lines(merge_dir: str, span_dirs: Sequence[str] = ()
                 ) -> list[str]:
  """Feddle-ID's search grid on the validation split (the merge stage's
  points in `merge_dir`), by optimizer and lr, and what its atlas's span
  holds (the records in each of `span_dirs`)."""
  scores = gaps_records.point_scores(merge_dir, hybrid_config.FEDDLE_ID)
  if not scores:
    return []
  by_rate, epochs = {}, set()
  for key, score in scores.items():
    by_rate.setdefault(_rate(key), []).append(score)
    epochs.add(int(dict(part.split('=') for part in key.split(','))
                   .get('feddle_search_epochs', 0)))
  fedbuff = gaps_records.best_point(
      gaps_records.point_scores(merge_dir, hybrid_config.FEDBUFF))
  lines = [f'Feddle-ID\'s coefficient search on the validation split '
           f'(`{merge_dir}`; mean over its search epochs '
           f'{sorted(epochs)}): ' + ', '.join(
               f'{optimizer} lr {lr}: {np.mean(v):.1f}%'
               for (optimizer, lr), v in sorted(
                   by_rate.items(), key=lambda kv: (kv[0][0],
                                                    float(kv[0][1]))))]
  if fedbuff:
    lines[0] += (f'; FedBuff, the merge it starts from, {fedbuff[1]:.1f}% at '
                 'its best point')
  size = gaps_records.validation_size(merge_dir, hybrid_config.FEDDLE_ID)
  if size:
    best = max(scores.values())
    se = 100 * np.sqrt(best / 100 * (1 - best / 100) / size)
    near = sorted(k for k, v in scores.items() if best - v <= se)
    chosen = selected_search(merge_dir)
    lines += ['', f'* Each point is one run scored on {size} validation '
              f'images: a standard error of about {se:.1f} points at the best '
              f'score ({best:.1f}%), within which lie {len(near)} of the '
              f'{len(scores)} points.' + (
                  ' Selected (by the tie rule of the search\'s tuning.md): '
                  f'{search_label(chosen)}.' if chosen else '')]
  for span_dir in span_dirs:
    span = feddle_span_lib.read_records(span_dir)
    if not span:
      continue
    settings = sorted(
        {hybrid_config.Setting(r.alpha, r.delay_std) for r in span},
        key=lambda s: (s.alpha, s.delay_std))
    kind = feddle_span_lib.variant(span).lstrip('; ') or 'from scratch'
    lines += ['', f'What the span of Feddle\'s atlas holds (`{span_dir}`, '
              f'{kind}; settings '
              f'{", ".join(s.label for s in settings)}, seeds '
              f'{sorted({r.seed for r in span})}):', '']
    lines += feddle_span_lib.reading(span, settings)
  return lines + ['']


def search_label(values: Mapping[str, Any]) -> str:
  """A Feddle search's settings in words, from a run's config or a
  selected point: optimizer and epochs where they are named, and lr."""
  text = f'lr {float(values["feddle_search_lr"]):g}'
  if 'feddle_search_optimizer' in values:
    text = f'{values["feddle_search_optimizer"]} {text}'
  if 'feddle_search_epochs' in values:
    text += f', {values["feddle_search_epochs"]} epochs'
  return text


def _point_search(point_dir: str) -> Optional[dict[str, Any]]:
  """The search settings of a Feddle-ID run kept in `point_dir` (its
  config), or None."""
  for path in sorted(glob.glob(os.path.join(point_dir, '*.json'))):
    with open(path) as f:
      kept = json.load(f)
    config = kept.get('config') or kept.get('fingerprint') or {}
    if 'feddle_search_lr' in config:
      return config
  return None


def search_rate_lines(rates_dir: str, tuned_rows: Sequence[hybrid_runs.RunRow],
                      selected: Optional[Mapping[str, Any]]) -> list[str]:
  """Feddle-ID through whole runs at each search rate kept under
  `rates_dir/feddle_search_lr=<lr>/` (with FedBuff at Feddle's fallback
  values there), beside the tuned table's Feddle-ID (`tuned_rows`, at the
  `selected` search settings)."""
  points = gaps_records.point_dirs(rates_dir)
  if not points:
    return []
  every = [r for rows in points.values() for r in rows]
  settings = gaps_records.settings_of(every)
  keys = [(s.alpha, s.delay_std) for s in settings]
  fedbuff = hybrid_tables.mean_finals(every, [hybrid_config.FEDBUFF],
                                      settings)[hybrid_config.FEDBUFF]
  lines = [
      '### Feddle-ID through whole runs at other search settings (from '
      'scratch, test accuracy, seeds '
      f'{sorted({r.seed for r in every})}; a diagnostic, nothing is '
      'selected on it)', '',
      gaps_records.columns([s.label for s in settings])
  ]

  def row(name, means):
    return (f'| {name} | ' + ' | '.join(
        f'{means[k]:.1f}' if k in means else 'n/a' for k in keys) + ' |')

  tuned = hybrid_tables.mean_finals(tuned_rows, [hybrid_config.FEDDLE_ID],
                                    settings)[hybrid_config.FEDDLE_ID]
  named = []
  if tuned and selected:
    named.append((f'search {search_label(selected)} (selected; the tuned '
                  'table)', tuned))
  for point, rows in points.items():
    means = hybrid_tables.mean_finals(rows, [hybrid_config.FEDDLE_ID],
                                      settings)[hybrid_config.FEDDLE_ID]
    config = _point_search(os.path.join(rates_dir, point))
    if means:
      named.append((f'search {search_label(config)}' if config else
                    f'search {point.replace("=", " ")}', means))
  lines += [row(f'feddle_id, {name}', means) for name, means in named]
  if fedbuff:
    lines.append(row('fedbuff at Feddle\'s fallback values', fedbuff))
  gains = []
  for name, means in named:
    diffs = [means[k] - fedbuff[k] for k in keys if k in means
             and k in fedbuff]
    if diffs:
      gains.append(f'{name} {min(diffs):+.1f} to {max(diffs):+.1f}')
  if gains:
    lines += ['', '* Feddle-ID over its fallback FedBuff (points): '
              + '; '.join(gains) + '.']
  return lines + ['']
