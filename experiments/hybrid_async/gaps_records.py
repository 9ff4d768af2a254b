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
"""The committed records the gaps section reads: kept runs, search points.

`gaps_lib` and `gaps_search` set measurements beside the differences
between the tuned hybrid tables and the guided-model-merging paper's (Zhu
et al.); both read the same JSON records: the kept runs of a
`hybrid_async_main --runs_dir` (`kept_rows`, `point_dirs`), the points of a
`tune_main` search (`point_scores`, `best_point`, `validation_size`), and
the settings they cover (`settings_of`, `columns` for a table's header).
Pure Python over JSON records.
"""

from collections.abc import Mapping, Sequence
import glob
import os
from typing import Optional

import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
from experiments.hybrid_async import tune_lib


def kept_rows(runs_dir: str) -> list[hybrid_runs.RunRow]:
  """Every row of the runs kept in `runs_dir` (`hybrid_async_main
  --runs_dir`), whatever their configuration."""
  return [row for run in _kept_runs(runs_dir) for row in run]


def _kept_runs(runs_dir: str) -> list[list[hybrid_runs.RunRow]]:
  """The rows of each run kept in `runs_dir`, by name."""
  return [[hybrid_runs.RunRow(**r) for r in fields['rows']]
          for fields in hybrid_records.store(runs_dir).read_all().values()]


def point_scores(tuning_dir: str, method: str) -> dict[str, float]:
  """{point key: validation accuracy in %} of a search's kept points
  (`tune_lib`'s layout; a point's runs averaged)."""
  scores = {}
  for point in sorted(glob.glob(os.path.join(
      tuning_dir, tune_lib.POINTS_DIR, method, '*'))):
    finals = [hybrid_tables.final_metric(rows)
              for rows in _kept_runs(point)]
    if finals:
      scores[os.path.basename(point)] = 100 * float(np.mean(finals))
  return scores


def best_point(scores: Mapping[str, float]) -> Optional[tuple[str, float]]:
  if not scores:
    return None
  key = max(sorted(scores), key=lambda k: scores[k])
  return key, scores[key]


def columns(labels: Sequence[str]) -> str:
  return ('| | ' + ' | '.join(labels) + ' |\n| --- |'
          + ' --- |' * len(labels))


def validation_size(tuning_dir: str, method: str) -> int:
  """The validation split's size the search's runs of `method` were scored
  on (their fingerprint), 0 if none is kept."""
  fingerprint = {}
  for point in sorted(glob.glob(os.path.join(
      tuning_dir, tune_lib.POINTS_DIR, method, '*'))):
    runs = hybrid_records.store(point)
    if runs.names():
      fingerprint = runs.read(runs.names()[0]).get('fingerprint', {})
      break
  return int(fingerprint.get('validation_size', 0))


def point_dirs(root: str) -> dict[str, list[hybrid_runs.RunRow]]:
  """{subdirectory name: its kept rows} of the non-empty subdirectories."""
  if not os.path.isdir(root):
    return {}
  rows = {p: kept_rows(os.path.join(root, p)) for p in sorted(os.listdir(
      root)) if os.path.isdir(os.path.join(root, p))}
  return {p: r for p, r in rows.items() if r}


def settings_of(rows: Sequence[hybrid_runs.RunRow]
                ) -> list[hybrid_config.Setting]:
  """The settings (columns) the runs cover, in the paper's column order
  (alpha ascending, then delay descending, as its tables 6 and 7), from
  the methods that run under the delays."""
  keys = {(r.alpha, r.delay_std) for r in rows if r.method not in
          hybrid_config.DELAY_FREE}
  return [hybrid_config.Setting(a, d) for a, d in sorted(
      keys, key=lambda k: (-1 if k[0] is None else k[0], -k[1]))]
