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
"""Our hybrid table against the paper's, point by point.

Zhu et al. ("Guided Model Merging for Hybrid Data Learning") report final
accuracy per method and setting (`paper_tables`). Our runs differ in scale
(fewer, smaller images, a shorter run), which moves every method's level;
what the paper claims is the ranking. So each cell is compared twice:

*   the gap, ours minus the paper's, in points, and the gap beyond the
    column's median gap (the median is the level shift the whole column
    shares; what is left is the method's own departure from the paper);
*   the rank among the methods both tables have, ours and the paper's, and
    per column Spearman's rank correlation of the two orders.

Pure Python and numpy: the report calls it with mean accuracies in %.
"""

from collections.abc import Mapping, Sequence
from typing import Hashable

import numpy as np

from experiments.hybrid_async import paper_tables


def ranks(values: Mapping[str, float]) -> dict[str, float]:
  """1 for the highest value; ties share the mean of their ranks."""
  order = sorted(values, key=lambda m: -values[m])
  result = {}
  i = 0
  while i < len(order):
    j = i
    while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
      j += 1
    for m in order[i:j + 1]:
      result[m] = (i + j) / 2 + 1
    i = j + 1
  return result


def spearman(a: Mapping[str, float], b: Mapping[str, float]) -> float:
  """Spearman's rank correlation of two scores of the same keys (the
  Pearson correlation of their ranks); nan below 3 keys or if a side is
  constant."""
  keys = sorted(set(a) & set(b))
  if len(keys) < 3:
    return float('nan')
  ra, rb = ranks({k: a[k] for k in keys}), ranks({k: b[k] for k in keys})
  x = np.array([ra[k] for k in keys])
  y = np.array([rb[k] for k in keys])
  if x.std() == 0 or y.std() == 0:
    return float('nan')
  return float(np.corrcoef(x, y)[0, 1])


def paper_means(table: paper_tables.PaperTable
                ) -> dict[str, dict[Hashable, float]]:
  """{method: {setting key: the paper's mean}} (a std, where given, is
  dropped)."""
  return {m: {k: v[0] if isinstance(v, tuple) else v
              for k, v in values.items()}
          for m, values in table.values.items()}


def comparison_lines(ours: Mapping[str, Mapping[Hashable, float]],
                     table: paper_tables.PaperTable,
                     keys: Sequence[Hashable], labels: Sequence[str],
                     feddle: str = 'feddle_id') -> list[str]:
  """The point-by-point comparison, as Markdown lines.

  Args:
    ours: {method: {setting key: our mean accuracy in %}}; keys as the
      paper table's, `(alpha, delay sigma)`.
    table: The paper's table.
    keys: The settings (columns), in order.
    labels: Their labels.
    feddle: The method whose rank is reported per column (the paper's).

  Returns:
    Lines: a table of gap and ranks per method and column, then per column
    the median gap, the rank correlation and the largest departures. Empty
    if no method and column are in both.
  """
  paper = paper_means(table)
  methods = [m for m in ours if m in paper]
  columns = []
  for key in keys:
    both = [m for m in methods if key in ours[m] and key in paper[m]]
    mine = {m: ours[m][key] for m in both}
    theirs = {m: paper[m][key] for m in both}
    gaps = {m: mine[m] - theirs[m] for m in both}
    columns.append((mine, theirs, gaps, ranks(mine), ranks(theirs),
                    float(np.median(list(gaps.values()))) if gaps else 0.0))
  if not any(c[0] for c in columns):
    return []
  lines = [
      f'Point by point against the paper\'s {table.name}: ours minus the '
      'paper\'s (points), then the rank among the methods both have (ours / '
      'the paper\'s); the last column is the mean over columns of the gap '
      'beyond each column\'s median gap (the level shift the column '
      'shares), i.e. the method\'s own departure from the paper.', '',
      '| method | ' + ' | '.join(labels) + ' | beyond the median gap |',
      '| --- |' + ' --- |' * (len(labels) + 1)]
  for m in methods:
    cells, beyond = [], []
    for mine, _, gaps, rank_mine, rank_theirs, median in columns:
      if m not in gaps:
        cells.append('n/a')
        continue
      cells.append(f'{gaps[m]:+.1f} ({rank_mine[m]:g} / '
                   f'{rank_theirs[m]:g} of {len(mine)})')
      beyond.append(gaps[m] - median)
    lines.append(f'| {m} | ' + ' | '.join(cells) + ' | '
                 + (f'{np.mean(beyond):+.1f}' if beyond else 'n/a') + ' |')
  lines.append('')
  for label, (mine, theirs, gaps, rank_mine, rank_theirs, median) in zip(
      labels, columns):
    if not mine:
      continue
    rho = spearman(mine, theirs)
    parts = [f'median gap {median:+.1f} points',
             f'rank correlation {rho:+.2f} over {len(mine)} methods'
             if rho == rho else 'rank correlation n/a (it needs 3 methods '
             f'with distinct scores; {len(mine)} here)']
    if feddle in mine:
      parts.append(f'{feddle} ranks {rank_mine[feddle]:g} (paper: '
                   f'{rank_theirs[feddle]:g})')
    below = sorted(mine, key=lambda m: gaps[m])
    parts.append('furthest below the median gap: ' + ', '.join(
        f'{m} ({gaps[m] - median:+.1f})' for m in below[:3]))
    parts.append('furthest above: ' + ', '.join(
        f'{m} ({gaps[m] - median:+.1f})' for m in below[::-1][:2]))
    lines.append(f'* {label}: ' + '; '.join(parts) + '.')
  return lines
