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
"""A comparison's results as text: the results table and the metrics CSV."""

import csv
from collections.abc import Sequence
import io

from experiments.common import records
from tff_mixed.training import reports

CSV_COLUMNS = records.MetricsRow._fields


def format_table(summaries: Sequence[records.ScenarioSummary],
                 target_auc: float) -> str:
  """Formats the summaries as a fixed-width text table.

  Columns: the final eval AUC, accuracy and per-label accuracies; the mean
  AUC and accuracy over the last quarter of rounds; the first evaluated round
  reaching `target_auc` ('-': never); the scenario's wall-clock seconds.

  Args:
    summaries: The `ScenarioSummary`s, one row each.
    target_auc: The AUC target the summaries were computed with.

  Returns:
    The table, one line per row, ending in a newline.
  """
  header = ('scenario', 'AUC', 'accuracy', 'pos. acc.', 'neg. acc.',
            'AUC last 1/4', 'acc. last 1/4', f'rounds to AUC>={target_auc:g}',
            'seconds')
  lines = []
  for s in summaries:
    lines.append((
        s.scenario, f'{s.final.auc:.3f}', f'{s.final.accuracy:.3f}',
        f'{s.final.positive_accuracy:.3f}',
        f'{s.final.negative_accuracy:.3f}', f'{s.tail_auc:.3f}',
        f'{s.tail_accuracy:.3f}',
        '-' if s.rounds_to_target is None else str(s.rounds_to_target),
        f'{s.seconds:.1f}'))
  widths = [max(len(r[i]) for r in [header, *lines])
            for i in range(len(header))]

  def fmt(cells):
    # Names left-aligned, numbers right-aligned.
    return '  '.join(
        c.ljust(w) if i == 0 else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths)))

  rule = '  '.join('-' * w for w in widths)
  return '\n'.join([fmt(header), rule, *(fmt(r) for r in lines)]) + '\n'


def write_metrics_csv(path: str,
                      rows: Sequence[records.MetricsRow]) -> None:
  """Writes `rows` as CSV with the header `CSV_COLUMNS`."""
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator='\n')
  writer.writerow(CSV_COLUMNS)
  for row in rows:
    writer.writerow([
        f'{v:.6g}' if isinstance(v, float) else v for v in row
    ])
  reports.atomic_write(path, lambda f: f.write(buffer.getvalue()))


def markdown_table(header: Sequence[str],
                   rows: Sequence[Sequence[str]]) -> list[str]:
  """A Markdown table's lines: the header, the `|---|` separator (one `---`
  per column), then one line per row. Cells are used as given."""

  def line(cells: Sequence[str]) -> str:
    return '| ' + ' | '.join(cells) + ' |'

  return [line(header), '|' + '---|' * len(header), *map(line, rows)]
