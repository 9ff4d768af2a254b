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
"""The hybrid experiment's final metrics, tables and verdicts.

Reported as the guided-model-merging paper does (Feddle, Zhu et al.,
section 5): evaluate every `eval_every` rounds; a run's final metric is the
best of its last 5 evaluations; mean and standard deviation over seeds
(`format_table`, the paper's table 1). Beside it, the mean over the last
half of the evaluations, less exposed to one lucky evaluation. From the
runs' rows: where Feddle ranks against the paper's ranking
(`ranking_summary`), each method's wall time (`wall_time_line`) and
Feddle's diagnostics per setting (`diagnostics_summary`).
"""

import collections
from collections.abc import Callable, Sequence
import math
from typing import Any

import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs

# A final metric of one run's rows (`METRICS`).
_Metric = Callable[[Sequence[hybrid_runs.RunRow]], float]

TAIL_EVALUATIONS = 5


def final_metric(rows: Sequence[hybrid_runs.RunRow]) -> float:
  """The paper's final metric: best accuracy of the last 5 evaluations."""
  rows = sorted(rows, key=lambda r: r.round)
  return max(r.accuracy for r in rows[-TAIL_EVALUATIONS:])


def late_mean_metric(rows: Sequence[hybrid_runs.RunRow]) -> float:
  """The mean accuracy over the last half of the evaluations after round 0.

  Less exposed to one lucky evaluation than the paper's best of the last
  5, which a jump in the last rounds decides.
  """
  rows = sorted((r for r in rows if r.round > 0), key=lambda r: r.round)
  return float(np.mean([r.accuracy for r in rows[len(rows) // 2:]]))


# The two final metrics every table gives: (name, function, what it is).
METRICS = (
    ('best of the last 5', final_metric, 'best of the last 5 evaluations, '
     'as in the paper'),
    ('mean of the last half', late_mean_metric, 'mean over the last half '
     'of the evaluations'),
)


def _cell(values: Sequence[float]) -> str:
  return f'{100 * np.mean(values):.1f} ± {100 * np.std(values):.1f}'


def final_metrics(rows: Sequence[hybrid_runs.RunRow], methods: Sequence[str],
                  settings: Sequence[hybrid_config.Setting],
                  metric: _Metric = final_metric
                 ) -> dict[tuple[str, hybrid_config.Setting], list[float]]:
  """Per method and setting, `metric` (the paper's by default) of each
  seed."""
  by_run = collections.defaultdict(list)
  for r in rows:
    by_run[(r.method, r.alpha, r.delay_std, r.seed)].append(r)
  finals = {}
  for method in methods:
    for setting in settings:
      delay = hybrid_config.delay_of(method, setting.delay_std)
      finals[(method, setting)] = [
          metric(v) for (m, a, d, _), v in sorted(by_run.items())
          if m == method and a == setting.alpha and d == delay]
  return finals


def mean_finals(rows: Sequence[hybrid_runs.RunRow], methods: Sequence[str],
                settings: Sequence[hybrid_config.Setting]
                ) -> dict[str, dict[tuple, float]]:
  """{method: {(alpha, delay sigma): mean final accuracy in %}} over the
  seeds run (the keys of `paper_tables`); cells without runs left out."""
  finals = final_metrics(rows, methods, settings)
  return {m: {(s.alpha, s.delay_std): 100 * float(np.mean(finals[(m, s)]))
              for s in settings if finals[(m, s)]} for m in methods}


def format_table(rows: Sequence[hybrid_runs.RunRow], methods: Sequence[str],
                 settings: Sequence[hybrid_config.Setting],
                 metric: _Metric = final_metric) -> str:
  """A Markdown table like the paper's table 1 of `metric` (the paper's by
  default), mean ± std over seeds, the best per column in bold."""
  finals = final_metrics(rows, methods, settings, metric)
  means = {k: np.mean(v) if v else -1.0 for k, v in finals.items()}
  lines = ['| method | server data | ' + ' | '.join(
      s.label for s in settings) + ' |',
           '| --- | --- |' + ' --- |' * len(settings)]
  for method in methods:
    server = ('in-domain' if method in hybrid_config.ID_METHODS else
              'out-of-domain' if method in hybrid_config.OOD_METHODS
              else 'none')
    cells = []
    for setting in settings:
      values = finals[(method, setting)]
      if not values:
        cells.append('n/a')
        continue
      best = max(means[(m, setting)] for m in methods)
      cell = _cell(values)
      if len(values) != max(len(finals[(m, setting)]) for m in methods):
        cell += f' (n = {len(values)})'
      cells.append(f'**{cell}**' if means[(method, setting)] == best
                   else cell)
    name = method + (' *' if method in hybrid_config.DELAY_FREE else '')
    lines.append(f'| {name} | {server} | ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines) + '\n'


def _duration(seconds: float) -> str:
  if seconds < 60:
    return f'{seconds:.0f} s'
  if seconds < 3600:
    return f'{seconds / 60:.1f} min'
  return f'{seconds / 3600:.2f} h'


def wall_time_line(rows: Sequence[hybrid_runs.RunRow],
                   methods: Sequence[str]) -> str:
  """Each method's wall time per run, and the methods without a kept run.

  A run's time is its last row's `seconds`: its own rounds and evaluations,
  counted across a resumed run's parts (`run_async` keeps the clock in its
  checkpoint); data loading is not counted. Over seeds and settings, the
  mean; the total sums every run, so a reader can price the missing ones.
  A further seed is priced at each kept (method, setting)'s mean over its
  seeds, summed: what a section states where 3 seeds do not fit.
  """
  last = {}
  for r in rows:
    key = (r.method, r.alpha, r.delay_std, r.seed)
    if key not in last or r.round > last[key].round:
      last[key] = r
  # method -> (alpha, delay_std) -> each seed's seconds: one grouping
  # serves both the per-run mean and the further seed's price.
  by_method = collections.defaultdict(lambda: collections.defaultdict(list))
  for (method, alpha, delay_std, _), r in last.items():
    by_method[method][(alpha, delay_std)].append(r.seconds)
  parts, missing, total, per_seed = [], [], 0.0, 0.0
  for method in methods:
    settings = by_method.get(method, {})
    times = [s for seeds in settings.values() for s in seeds]
    if not times:
      missing.append(method)
      continue
    total += sum(times)
    per_seed += sum(float(np.mean(seeds)) for seeds in settings.values())
    runs = f' ({len(times)} runs, mean)' if len(times) > 1 else ''
    parts.append(f'{method} {_duration(float(np.mean(times)))}{runs}')
  line = ('Wall time per run (training and evaluation, from each run\'s '
          'last round; resumed runs count every part): '
          + (', '.join(parts) if parts else 'none kept')
          + f'; {_duration(total)} in all.')
  if parts:
    line += (' A further seed of the methods kept: about '
             f'{_duration(per_seed)}.')
  if missing:
    line += ' Not run yet: ' + ', '.join(missing) + '.'
  return line


def _lead(values: dict[str, list[float]], first: str, second: str) -> str:
  """`first`'s lead over `second` in points, and whether it exceeds the
  spread: the sum of the two standard deviations over seeds (their
  mean +- std intervals do not overlap)."""
  gap = np.mean(values[first]) - np.mean(values[second])
  spread = np.std(values[first]) + np.std(values[second])
  beyond = ('beyond' if abs(gap) > spread else 'within')
  return (f'{100 * gap:+.1f} points vs {second}, {beyond} the spread '
          f'({100 * spread:.1f})')


def ranking_summary(rows: Sequence[hybrid_runs.RunRow], methods: Sequence[str],
                    settings: Sequence[hybrid_config.Setting]) -> list[str]:
  """Per setting, where Feddle ranks by both metrics (`METRICS`), on the
  means over seeds: the paper has Feddle (in domain) first in every column
  of its tables 1 and 7, out of domain mostly above the baselines.

  "Reproduced" needs Feddle first by the paper's metric; each comparison
  says whether the difference exceeds the spread over seeds (`_lead`).
  """
  lines = []
  for setting in settings:
    parts, verdict = [], None
    for name, metric, _ in METRICS:
      finals = final_metrics(rows, methods, settings, metric)
      values = {m: finals[(m, setting)] for m in methods
                if finals[(m, setting)]}
      if not values:
        continue
      means = {m: np.mean(v) for m, v in values.items()}
      order = sorted(means, key=lambda m: -means[m])
      text = f'{name}: best {order[0]} ({100 * means[order[0]]:.1f}%)'
      for m in hybrid_config.FEDDLE_METHODS:
        if m in means:
          text += f', {m} ranks {order.index(m) + 1} of {len(order)}'
          # FedBuff is Feddle's fallback: the search's own contribution.
          if hybrid_config.FEDBUFF in means:
            text += f' ({_lead(values, m, hybrid_config.FEDBUFF)})'
          if (order[0] == m and len(order) > 1
              and order[1] != hybrid_config.FEDBUFF):
            text += f' ({_lead(values, m, order[1])})'
      if hybrid_config.CENTER in means and metric is final_metric:
        above = [m for m in order if means[m] > means[hybrid_config.CENTER]]
        text += '; above Center: ' + (', '.join(above) or 'none')
      parts.append(text)
      if metric is final_metric:
        if not any(m in means for m in hybrid_config.FEDDLE_METHODS):
          # A table still being run (or one without Feddle) cannot say.
          verdict = 'undecided (no Feddle run kept)'
        else:
          verdict = ('reproduced' if order[0] in hybrid_config.FEDDLE_METHODS
                     else 'NOT reproduced')
    if not parts:
      continue
    if verdict is not None:
      parts.append('paper\'s ranking (Feddle first, by the mean over seeds) '
                   + verdict)
    lines.append(f'{setting.label}: ' + '; '.join(parts) + '.')
  return lines


def setting_diagnostics(diagnostics, method: str,
                        setting: hybrid_config.Setting):
  """The rows of `diagnostics` of one method and setting."""
  return [d for d in diagnostics if d['method'] == method
          and d['alpha'] == setting.alpha
          and d['delay_std'] == setting.delay_std]


def diagnostics_summary(diagnostics: Sequence[dict[str, Any]],
                        settings: Sequence[hybrid_config.Setting]) -> list[str]:
  """Feddle's diagnostics per setting, averaged over merges and seeds."""
  lines = []
  for setting in settings:
    parts = []
    for method in hybrid_config.FEDDLE_METHODS:
      ds = setting_diagnostics(diagnostics, method, setting)
      if not ds:
        continue
      negative = np.mean([d['negative_share'] for d in ds])
      text = f'{method}: {100 * negative:.0f}% negative coefficients'
      with_fallback = [d['id_ood_cosine'] for d in ds
                       if math.isfinite(d['id_ood_cosine'])]
      without = [d['id_ood_cosine_at_zero'] for d in ds
                 if math.isfinite(d['id_ood_cosine_at_zero'])]
      if with_fallback:
        text += (f', ID/OOD coefficient-gradient cosine '
                 f'{np.mean(with_fallback):.2f} at the fallback start vs '
                 f'{np.mean(without):.2f} at c = 0')
      text += search_move_text(ds)
      parts.append(text)
    if parts:
      lines.append(f'{setting.label}: ' + '; '.join(parts) + '.')
  return lines


def merge_values(diagnostics: Sequence[dict[str, Any]],
                 name: str) -> np.ndarray:
  """One of `hybrid_runs.MERGE_DIAGNOSTICS` over every merge of
  `diagnostics`' rows (none for rows kept before it was recorded)."""
  return np.array([v for d in diagnostics for v in d.get(name, ())],
                  np.float64)


def search_move_text(diagnostics: Sequence[dict[str, Any]]) -> str:
  """How far the searches of `diagnostics`' merges moved, in words ('' for
  rows kept before it was recorded): the median of ||c - c'|| / ||c'||,
  and the search loss at c against c' (FedBuff's merge)."""
  moves = merge_values(diagnostics, 'coefficient_move')
  moves = moves[np.isfinite(moves)]
  if not moves.size:
    return ''
  change = (merge_values(diagnostics, 'final_loss')
            - merge_values(diagnostics, 'prior_loss'))
  change = change[np.isfinite(change)]
  return (f'; the search moved c by a median {100 * np.median(moves):.3g}% '
          f'of |c\'| ({moves.size} merges), its server loss '
          f'{np.mean(change):+.3g} on average from c\' (lower in '
          f'{100 * np.mean(change < 0):.0f}% of merges)')
