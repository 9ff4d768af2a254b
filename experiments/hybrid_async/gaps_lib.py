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
"""Where the tuned hybrid tables differ from the paper's, and why, measured.

The tuned tables (`hybrid_async_main --runs_dir`) sit below the guided-
model-merging paper's (Zhu et al., tables 2 and 7) and rank the methods
differently (`paper_comparison`). This module reads the committed run
records and sets, beside each kind of difference, the measurement that
accounts for it, each computed from runs, never typed in:

*   `scale_lines`: the level. FedAvg at the same client values, scored on
    the validation split, at our scale (the search of
    `docs/results/hybrid_tuning/cifar10_16`) and at the paper's (all of
    CIFAR-10 at 32x32, 500 clients, 200 rounds: `cifar10_32_scratch`), so
    the scale's part in every method's level is a difference of runs; and
    Center against FedAvg at both.
*   `delay_lines`: the asynchronous rows. FedAvg with and without the
    delays (`fedavg_delayed`, `fedavg`) in our own table, and each
    asynchronous method against the delayed FedAvg, ours and the paper's.
*   `merge_gain_lines`: the server-data rows. What each method that post-
    processes FedBuff's merge (Fed+FT, FedDF, Feddle) adds to FedBuff,
    ours and the paper's, and Center's standing against that gain.
*   Feddle's coefficient search, its span and its runs at other search
    settings (`gaps_search`).
*   `client_grid_lines`: FedAvg with and without the delays over the
    client grid (test accuracy, a diagnostic: nothing is selected on it),
    against the client values selected without delays.
*   `run_length_lines`: the delayed FedAvg, FedAvg and FedBuff at our run
    length (70 rounds) and at the paper's (200), at our scale.
*   `pretrained_lines`: the pretrained start. Where the runs start (their
    round-0 accuracy, with the new head), what the body adds to FedAvg,
    and the client grid searched again from the pretrained start.

Pure Python over JSON records (`gaps_records` reads them); `gaps_main`
writes the RESULTS section.
"""

from collections.abc import Mapping, Sequence
import os
from typing import Hashable, Optional

import numpy as np

from experiments.hybrid_async import gaps_records
from experiments.hybrid_async import gaps_search
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
from experiments.hybrid_async import paper_comparison
from experiments.hybrid_async import paper_tables
from experiments.hybrid_async import tune_lib



Means = Mapping[str, Mapping[Hashable, float]]

# Methods that post-process FedBuff's merges with the server's data.
MERGE_METHODS = (hybrid_config.FED_FT, hybrid_config.FEDDF_ID,
                 hybrid_config.FEDDLE_ID)
ASYNC_METHODS = (hybrid_config.FEDASYNC, hybrid_config.FEDBUFF,
                 hybrid_config.CA2FL)


def scale_lines(small_dir: str, full_dir: str,
                full_center_dir: Optional[str] = None) -> list[str]:
  """The level: FedAvg's validation accuracy at both scales, and Center's
  against FedAvg's at both (Center's search at the paper's scale is kept
  apart, `full_center_dir`: it needs no client values)."""
  small = gaps_records.point_scores(small_dir, hybrid_config.FEDAVG)
  full = gaps_records.point_scores(full_dir, hybrid_config.FEDAVG)
  both = [k for k in small if k in full]
  if not both:
    return []
  lines = [
      'FedAvg (no delays, Dir(0.1), seed 0; validation accuracy, best of the '
      'last 5 evaluations) at the same client values, at our scale and at '
      'the paper\'s:', '',
      '| client values | ours (16x16, 5,000 images, 150 clients, 70 rounds) '
      '| the paper\'s scale (32x32, 50,000 images, 500 clients, 200 rounds) '
      '| difference |', '| --- | --- | --- | --- |']
  for k in both:
    lines.append(f'| {k} | {small[k]:.1f} | {full[k]:.1f} | '
                 f'{full[k] - small[k]:+.1f} |')
  diffs = [full[k] - small[k] for k in both]
  learning = [full[k] - small[k] for k in both if full[k] > small[k]]
  low, high = min(learning or [0.0]), max(learning or [0.0])
  lines += ['', f'* At the paper\'s scale FedAvg scores {low:+.1f} to '
            f'{high:+.1f} points more at the '
            f'{len(learning)} of these {len(both)} points where it learns '
            f'more there ({np.mean(diffs):+.1f} on average over all): the '
            'scale alone shifts the level of a federated method by this '
            'much, with the same algorithm and values.']
  center = gaps_records.best_point(
      gaps_records.point_scores(small_dir, hybrid_config.CENTER))
  fedavg = gaps_records.best_point(small)
  full_center = (
      gaps_records.best_point(
          gaps_records.point_scores(full_center_dir, hybrid_config.CENTER))
      if full_center_dir else None)
  if center and fedavg:
    text = (f'* Center against FedAvg (best points of each search): at our '
            f'scale {center[1]:.1f} vs {fedavg[1]:.1f} '
            f'({center[1] - fedavg[1]:+.1f} points)')
    if full_center:
      best_full = gaps_records.best_point(full)
      text += (f', at the paper\'s {full_center[1]:.1f} vs '
               f'{best_full[1]:.1f} ({full_center[1] - best_full[1]:+.1f}; '
               f'FedAvg\'s best of the {len(full)} client points searched '
               'there)')
    lines.append(text + '. Center trains on the server\'s images alone: '
                 'where it leads FedAvg, the clients\' data teaches FedAvg '
                 'less than the server\'s images teach Center.')
  return lines + ['']


def _diff_row(name: str, a: Mapping, b: Mapping, keys) -> Optional[str]:
  cells = [f'{a[k] - b[k]:+.1f}' if k in a and k in b else 'n/a'
           for k in keys]
  if all(c == 'n/a' for c in cells):
    return None
  return f'| {name} | ' + ' | '.join(cells) + ' |'


def delay_lines(ours: Means, table: paper_tables.PaperTable,
                keys: Sequence[Hashable], labels: Sequence[str]) -> list[str]:
  """The asynchronous rows: the delays' cost to FedAvg, and each
  asynchronous method against the delayed FedAvg, ours and the paper's."""
  paper = paper_comparison.paper_means(table)
  base = hybrid_config.FEDAVG_DELAYED
  rows = []
  row = _diff_row('ours: fedavg (no delays) - fedavg_delayed',
                  ours.get(hybrid_config.FEDAVG, {}), ours.get(base, {}), keys)
  if row:
    rows.append(row)
    # The paper's FedAvg under delays against our FedAvg without them (a
    # reading in which FedAvg waits for each round's clients), to set
    # beside the scale's shift of FedAvg (`scale_lines`).
    row = _diff_row('paper fedavg_delayed - ours: fedavg (no delays)',
                    paper.get(base, {}), ours.get(hybrid_config.FEDAVG, {}),
                    keys)
    if row:
      rows.append(row)
  for m in ASYNC_METHODS:
    for who, means in (('ours', ours), ('paper', paper)):
      row = _diff_row(f'{who}: {m} - fedavg_delayed', means.get(m, {}),
                      means.get(base, {}), keys)
      if row:
        rows.append(row)
  if not rows:
    return []
  return ['Delays (points; every row a difference of two rows of the same '
          'table):', '', gaps_records.columns(labels)] + rows + ['']


def merge_gain_lines(ours: Means, table: paper_tables.PaperTable,
                     keys: Sequence[Hashable], labels: Sequence[str]
                     ) -> list[str]:
  """The server-data rows: each merge post-processor's gain over FedBuff,
  and Center against FedBuff, ours and the paper's."""
  paper = paper_comparison.paper_means(table)
  rows = []
  for m in MERGE_METHODS + (hybrid_config.CENTER,):
    for who, means in (('ours', ours), ('paper', paper)):
      row = _diff_row(f'{who}: {m} - fedbuff', means.get(m, {}),
                      means.get(hybrid_config.FEDBUFF, {}), keys)
      if row:
        rows.append(row)
  if not rows:
    return []
  return ['Server data on top of FedBuff\'s merge (points; Fed+FT, FedDF-ID '
          'and Feddle-ID all start from FedBuff\'s merge, so their gain over '
          'FedBuff is what the server\'s data adds; Center uses the server\'s '
          'data alone):', '', gaps_records.columns(labels)] + rows + ['']


RUN_LENGTH_METHODS = (hybrid_config.FEDAVG, hybrid_config.FEDAVG_DELAYED,
                      hybrid_config.FEDBUFF)


def run_length_lines(short_rows: Sequence[hybrid_runs.RunRow],
                     long_rows: Sequence[hybrid_runs.RunRow],
                     table: paper_tables.PaperTable) -> list[str]:
  """FedAvg with and without the delays and FedBuff at two run lengths
  (the tuned table's and 200 rounds, `long_rows`), beside the paper's."""
  settings = gaps_records.settings_of(long_rows)
  if not settings:
    return []
  keys = [(s.alpha, s.delay_std) for s in settings]
  rounds = [max((r.round for r in rows), default=0)
            for rows in (short_rows, long_rows)]
  means = [hybrid_tables.mean_finals(rows, RUN_LENGTH_METHODS, settings)
           for rows in (short_rows, long_rows)]
  paper = paper_comparison.paper_means(table)
  lines = [f'### Run length: {rounds[0]} and {rounds[1]} rounds at our scale '
           f'(from scratch; the paper\'s {table.name} runs 200 rounds)', '',
           gaps_records.columns([s.label for s in settings])]
  for m in RUN_LENGTH_METHODS:
    for who, source in ((f'ours, {rounds[0]} rounds', means[0]),
                        (f'ours, {rounds[1]} rounds', means[1]),
                        ('paper', paper)):
      cells = [f'{source[m][k]:.1f}' if k in source.get(m, {}) else 'n/a'
               for k in keys]
      lines.append(f'| {who}: {m} | ' + ' | '.join(cells) + ' |')
  lines.append('')
  gaps = []
  for who, source in ((f'{rounds[0]} rounds', means[0]),
                      (f'{rounds[1]} rounds', means[1]), ('the paper', paper)):
    free = source.get(hybrid_config.FEDAVG, {})
    delayed = source.get(hybrid_config.FEDAVG_DELAYED, {})
    cost = [free[k] - delayed[k] for k in keys
            if k in free and k in delayed]
    if cost:
      gaps.append(f'{who} {min(cost):+.1f} to {max(cost):+.1f}')
  if gaps:
    lines += ['* What the delays cost FedAvg (delay-free minus delayed, '
              'points): ' + '; '.join(gaps) + '.', '']
  return lines


def client_grid_lines(grid_dir: str, selected_key: Optional[str],
                      table: paper_tables.PaperTable) -> list[str]:
  """FedAvg with and without the delays at each client point kept under
  `grid_dir/<point>/` (`hybrid_async_main --runs_dir` per point), beside
  the paper's FedAvg; `selected_key` is the point selected without delays.
  """
  rows = gaps_records.point_dirs(grid_dir)
  if not rows:
    return []
  settings = sorted(
      {s for r in rows.values() for s in gaps_records.settings_of(r)},
      key=lambda s: (s.alpha, s.delay_std))
  keys = [(s.alpha, s.delay_std) for s in settings]
  methods = (hybrid_config.FEDAVG, hybrid_config.FEDAVG_DELAYED)
  means = {p: hybrid_tables.mean_finals(r, methods, settings)
           for p, r in rows.items()}
  seeds = sorted({row.seed for r in rows.values() for row in r})
  lines = ['### The client grid under the delays (from scratch, test '
           f'accuracy, seeds {seeds}; a diagnostic, nothing is selected on '
           'it)', '',
           '| client values | fedavg (no delays) | ' + ' | '.join(
               f'fedavg_delayed {s.label}' for s in settings) + ' |',
           '| --- | --- |' + ' --- |' * len(settings)]
  for p in sorted(means, key=lambda p: (p != selected_key, p)):
    free = list(means[p].get(hybrid_config.FEDAVG, {}).values())
    delayed = means[p].get(hybrid_config.FEDAVG_DELAYED, {})
    name = f'{p} (selected)' if p == selected_key else p
    lines.append(f'| {name} | ' + (f'{free[0]:.1f}' if free else 'n/a')
                 + ' | ' + ' | '.join(f'{delayed[k]:.1f}' if k in delayed
                                      else 'n/a' for k in keys) + ' |')
  paper = paper_comparison.paper_means(table).get(
      hybrid_config.FEDAVG_DELAYED, {})
  best = []
  for k, s in zip(keys, settings):
    cells = {p: m[hybrid_config.FEDAVG_DELAYED][k] for p, m in means.items()
             if k in m.get(hybrid_config.FEDAVG_DELAYED, {})}
    if cells:
      point = max(sorted(cells), key=cells.get)
      best.append(f'{s.label}: best {cells[point]:.1f}% ({point})'
                  + (f', the selected point {cells[selected_key]:.1f}%'
                     if selected_key in cells else '')
                  + (f', the paper\'s FedAvg {paper[k]:.1f}%' if k in paper
                     else ''))
  return lines + ['', '* Under the delays: ' + '; '.join(best) + '.', '']


def start_accuracy(rows: Sequence[hybrid_runs.RunRow]) -> float:
  """Mean round-0 evaluation accuracy (%) of the runs: where they start."""
  starts = [r.accuracy for r in rows if r.round == 0]
  return float(100 * np.mean(starts)) if starts else float('nan')


def pretrained_lines(scratch_rows: Sequence[hybrid_runs.RunRow],
                     pretrained_rows: Sequence[hybrid_runs.RunRow],
                     small_dir: str, pretrained_dir: str) -> list[str]:
  """The pretrained start: where the runs start, what the body adds to
  delay-free FedAvg, and the client grid searched from the pretrained
  start against the same grid from scratch."""
  if not pretrained_rows:
    return []
  lines = ['### The pretrained start', '',
           f'* The runs start at {start_accuracy(pretrained_rows):.1f}% '
           f'(round 0, mean over runs; from scratch '
           f'{start_accuracy(scratch_rows):.1f}%): they take the pretrained '
           'body with a new head drawn from their seed, as a backbone '
           'pretrained on another task is used, so the pretrained model\'s '
           'own accuracy with its own head (the section\'s data line) is '
           'never where a run starts.']
  settings = gaps_records.settings_of(pretrained_rows)
  both = {}
  for name, rows in (('scratch', scratch_rows),
                     ('pretrained', pretrained_rows)):
    means = hybrid_tables.mean_finals(rows, [hybrid_config.FEDAVG],
                                      settings).get(hybrid_config.FEDAVG, {})
    both[name] = [v for v in means.values()]
  if both['scratch'] and both['pretrained']:
    lines.append(
        f'* Delay-free FedAvg ends at {np.mean(both["pretrained"]):.1f}% from '
        f'the pretrained body against {np.mean(both["scratch"]):.1f}% from '
        'scratch (mean over the columns): the body adds '
        f'{np.mean(both["pretrained"]) - np.mean(both["scratch"]):+.1f} '
        'points.')
  scratch = gaps_records.point_scores(small_dir, hybrid_config.FEDAVG)
  pretrained = gaps_records.point_scores(pretrained_dir,
                                         hybrid_config.FEDAVG)
  common = [k for k in scratch if k in pretrained]
  if common:
    best_s = gaps_records.best_point({k: scratch[k] for k in common})
    best_p = gaps_records.best_point({k: pretrained[k] for k in common})
    lines += [
        f'* The client grid searched again from the pretrained start '
        f'(`{pretrained_dir}`, FedAvg, validation): it selects '
        f'{best_p[0]} ({best_p[1]:.1f}%), against {best_s[0]} '
        f'({best_s[1]:.1f}%) from scratch:', '',
        '| client values | from scratch | pretrained start | difference |',
        '| --- | --- | --- | --- |']
    lines += [f'| {k} | {scratch[k]:.1f} | {pretrained[k]:.1f} | '
              f'{pretrained[k] - scratch[k]:+.1f} |' for k in common]
  return lines + ['']


def table_lines(title: str, rows: Sequence[hybrid_runs.RunRow],
                table: paper_tables.PaperTable) -> list[str]:
  """One tuned table's measured differences (delays, server data)."""
  settings = gaps_records.settings_of(rows)
  if not settings:
    return []
  methods = [m for m in hybrid_config.METHODS
             if any(r.method == m for r in rows)]
  ours = hybrid_tables.mean_finals(rows, methods, settings)
  keys = [(s.alpha, s.delay_std) for s in settings]
  labels = [s.label for s in settings]
  seeds = sorted({r.seed for r in rows})
  body = (delay_lines(ours, table, keys, labels)
          + merge_gain_lines(ours, table, keys, labels))
  if not body:
    return []
  return [f'### {title} (against the paper\'s {table.name}; ours: seeds '
          f'{seeds})', ''] + body


def results_markdown(*, command: str, machine: str, date: str,
                     small_dir: str, full_dir: str,
                     full_center_dir: Optional[str],
                     tables: Sequence[tuple[str, Sequence[hybrid_runs.RunRow],
                                            paper_tables.PaperTable]],
                     span_dirs: Sequence[str] = (),
                     pretrained_dir: Optional[str] = None,
                     long_rows: Sequence[hybrid_runs.RunRow] = (),
                     client_grid_dir: Optional[str] = None,
                     search_rates_dir: Optional[str] = None,
                     merge_dir: Optional[str] = None) -> str:
  """The RESULTS.md section: the measured differences, table by table.

  `merge_dir` is the merge stage's search (Feddle's coefficient search among
  its points); without it, `small_dir`'s points stand in.
  """
  lines = [
      '## Where the tuned hybrid tables differ from the paper, measured '
      '(guided model merging, Zhu et al., tables 2, 6 and 7)', '',
      f'Generated on {date} by `{command}`, from the run records committed '
      'under `docs/results/` (no run is made).', '',
      f'* Machine: {machine}.',
      '* The tables themselves, with the paper\'s numbers beside ours and the '
      'point-by-point comparison (gaps, ranks, rank correlation), are the '
      'sections `hybrid_async_tuned_scratch`, `hybrid_async_tuned_pretrained` '
      'and `hybrid_async_celeba`; the asynchronous baselines\' and FedDF\'s '
      'own causes are measured variant by variant in `hybrid_async_study`.',
      '* Final accuracy in %: best of the last 5 evaluations, mean over the '
      'seeds kept.', '',
      '### The level: our scale', '']
  lines += scale_lines(small_dir, full_dir, full_center_dir) or [
      'No search points at both scales yet.', '']
  lines += gaps_search.search_lines(merge_dir or small_dir, span_dirs)
  for title, rows, table in tables:
    lines += table_lines(title, rows, table)
  by_table = {table.name: rows for _, rows, table in tables}
  if search_rates_dir:
    # Feddle's values were selected in the merge stage where there is one.
    lines += gaps_search.search_rate_lines(
        search_rates_dir,
        by_table.get(paper_tables.TABLE7_CIFAR10_CNN.name, []),
        gaps_search.selected_search(merge_dir or small_dir))
  if client_grid_dir:
    selected = os.path.join(small_dir, tune_lib.SELECTED_FILE)
    client = (tune_lib.read_selected(selected).client
              if os.path.exists(selected) else {})
    # Named as the search's points: the lr axis first.
    key = tune_lib.point_key({k: client[k] for k in (
        'client_lr', 'client_epochs') if k in client}) if client else None
    lines += client_grid_lines(client_grid_dir, key,
                               paper_tables.TABLE7_CIFAR10_CNN)
  if long_rows:
    lines += run_length_lines(
        by_table.get(paper_tables.TABLE7_CIFAR10_CNN.name, []), long_rows,
        paper_tables.TABLE7_CIFAR10_CNN)
  if pretrained_dir:
    lines += pretrained_lines(
        by_table.get(paper_tables.TABLE7_CIFAR10_CNN.name, []),
        by_table.get(paper_tables.TABLE6_CIFAR10_RESNET18.name, []),
        small_dir, pretrained_dir)
  return '\n'.join(lines).rstrip('\n') + '\n'
