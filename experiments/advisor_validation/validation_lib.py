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
"""The advisor's recommendation against the algorithm that measurably wins.

`tff_mixed.advise` reads arXiv:2205.13655's table 3 with constants sampled
over a probe's first rounds and names the algorithm whose bound is smallest
(with a tolerance favouring the cheaper ones). Whether that is the algorithm
a user should have run is a measurement: on each task, the one among
Parallel Training, 1-way and 2-way GT that first reaches a target of the
task's evaluation metric in full-length runs at the same settings.

A task's validation is one small JSON record (committed under
`docs/results/advice/`, since `outputs/` may not outlive the machine):
the advice as `advice.json` holds it, the target, and for each algorithm
the first evaluated round reaching the target in each measured curve (one
curve per seed). The RESULTS.md section is rebuilt from every record.

Curves are CSV files with a round column (`round` or `round_num`) and the
metric's column; a file with a `scenario` column (a comparison's combined
`metrics.csv`) is filtered to the algorithm's rows.
"""

import csv
import glob
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple, Optional

import numpy as np

from experiments.common import run_store

ALGORITHMS = ('parallel_training', 'one_way_gt', 'two_way_gt')
LABELS = {'parallel_training': 'PT', 'one_way_gt': '1-way GT',
          'two_way_gt': '2-way GT'}
_ROUND_COLUMNS = ('round', 'round_num')
_ESTIMATES = (('sigma2', 'sigma^2'), ('sigma_c2', 'sigma_c^2'),
              ('bgd_G2', 'G~^2'), ('bgd_B2', 'B~^2'))


class Validation(NamedTuple):
  """One task: the advice and the measured rounds to the target.

  Attributes:
    task: A short name (the record's file name).
    title: The task and its settings, one phrase.
    advice: The advice's JSON object (`tff_mixed.Advice.to_json`).
    metric: The evaluation column the target is on.
    target: The target value (reached when the metric is >= it, or <= it
      with `minimize`).
    target_rule: How the target was chosen, one phrase.
    measured: `{algorithm: [first round reaching the target, or None, per
      curve]}`.
    curves: `{algorithm: [curve file, ...]}`, as given.
    machine: Where the record was made.
    date: When (UTC).
    command: The command line that made it.
    minimize: Whether lower values of the metric are better (a loss).
    resolution: The curves' largest evaluation spacing (rounds): a first
      round reaching the target is known only to within it.
    note: What a reader should know beside the numbers (one sentence, from
      the command line), or ''.
  """

  task: str
  title: str
  advice: dict
  metric: str
  target: float
  target_rule: str
  measured: dict
  curves: dict
  machine: str
  date: str
  command: str
  minimize: bool = False
  resolution: int = 0
  note: str = ''


def read_curve(path: str, metric: str,
               scenario: Optional[str] = None) -> list[tuple[int, float]]:
  """`[(round, value)]` of `metric` in the CSV `path`, by round.

  Rows without a value (evaluation every few rounds) are skipped; with a
  `scenario` column, only `scenario`'s rows are read.

  Raises:
    ValueError: Naming the file, if it lacks the columns or holds no value.
  """
  with open(path, newline='') as f:
    reader = csv.DictReader(f)
    columns = reader.fieldnames or []
    round_column = next((c for c in _ROUND_COLUMNS if c in columns), None)
    if round_column is None or metric not in columns:
      raise ValueError(f'{path} has no round column ({"/".join(_ROUND_COLUMNS)}'
                       f') or no column {metric!r}: columns {columns}')
    points = []
    for row in reader:
      if scenario and 'scenario' in columns and row['scenario'] != scenario:
        continue
      if row[metric] in ('', None):
        continue
      value = float(row[metric])
      if math.isfinite(value):
        points.append((int(float(row[round_column])), value))
  if not points:
    raise ValueError(f'{path} holds no finite {metric!r} value'
                     + (f' for {scenario}' if scenario else ''))
  return sorted(points)


def first_round_reaching(points: Sequence[tuple[int, float]],
                         target: float,
                         minimize: bool = False) -> Optional[int]:
  """The first round whose value is >= `target` (<= with `minimize`), or
  None."""
  return next((r for r, v in points
               if (v <= target if minimize else v >= target)), None)


def tail_mean(points: Sequence[tuple[int, float]]) -> float:
  """The mean value over the last quarter of the rounds (at least one
  point): the level a run settles at."""
  last = points[-1][0]
  tail = [v for r, v in points if r >= last - last / 4.0]
  return float(np.mean(tail))


def expand_curves(specs: Sequence[str]) -> dict[str, list[str]]:
  """`{algorithm: sorted files}` of `ALGORITHM:GLOB` specs.

  Raises:
    ValueError: For a malformed spec, an unknown algorithm or a glob that
      matches no file.
  """
  curves: dict[str, list[str]] = {}
  for spec in specs:
    algorithm, sep, pattern = spec.partition(':')
    if not sep or not pattern:
      raise ValueError(f'--curve {spec!r} is not ALGORITHM:GLOB')
    if algorithm not in ALGORITHMS:
      raise ValueError(f'--curve {spec!r}: the algorithm must be one of '
                       f'{", ".join(ALGORITHMS)}')
    files = sorted(glob.glob(pattern))
    if not files:
      raise ValueError(f'--curve {spec!r}: no file matches {pattern}')
    curves.setdefault(algorithm, []).extend(files)
  missing = [a for a in ALGORITHMS if a not in curves]
  if missing:
    raise ValueError(f'no --curve for {", ".join(missing)}: the winner is '
                     'decided among all three algorithms')
  return curves


def measure(curves: Mapping[str, Sequence[str]], metric: str, *,
            target: Optional[float] = None,
            target_share: Optional[float] = None,
            minimize: bool = False) -> tuple[float, str, dict, int]:
  """`(target, target_rule, measured, resolution)` of the curves.

  `resolution` is the largest spacing of evaluations in any curve (the
  median gap between evaluated rounds): two first rounds reaching the
  target that differ by no more are not told apart.

  Exactly one of `target` (absolute) and `target_share` is given: that
  share of the lowest last-quarter mean over the algorithms' curves, a
  level every algorithm settles above, as the task reports use; with
  `minimize` (a loss), the highest last-quarter mean divided by the share,
  a level every algorithm settles below.
  """
  if (target is None) == (target_share is None):
    raise ValueError('give exactly one of target and target_share')
  points = {a: [read_curve(p, metric, scenario=a) for p in paths]
            for a, paths in curves.items()}
  tails = [tail_mean(c) for cs in points.values() for c in cs]
  if target is None and minimize:
    target = max(tails) / target_share
    rule = (f'the highest last-quarter mean {metric} of the three '
            f'({max(tails):.4g}) / {target_share:g}')
  elif target is None:
    target = target_share * min(tails)
    rule = (f'{target_share:g} x the lowest last-quarter mean {metric} of '
            f'the three ({min(tails):.4g})')
  else:
    rule = (f'{metric} {"<=" if minimize else ">="} {target:g}, as in the '
            'task\'s own section')
  measured = {a: [first_round_reaching(c, target, minimize) for c in cs]
              for a, cs in points.items()}
  resolution = max(int(np.median(np.diff([r for r, _ in c])))
                   if len(c) > 1 else 0
                   for cs in points.values() for c in cs)
  return float(target), rule, measured, resolution


class Outcome(NamedTuple):
  """A record's verdict.

  Attributes:
    mean_rounds: `{algorithm: mean rounds to the target over the curves
      that reached it, or None}`.
    reached: `{algorithm: (curves reaching it, curves)}`.
    winner: The algorithm with the fewest mean rounds (None if no
      algorithm reached the target).
    tied: Algorithms the measurement cannot order before the winner: their
      mean rounds exceed the winner's by at most one standard deviation
      over seeds (the winner's or their own, whichever is larger) or the
      curves' evaluation spacing (`Validation.resolution`).
    agrees: Whether the recommendation is the winner.
    agrees_within_spread: Whether it is the winner or tied with it.
  """

  mean_rounds: dict
  reached: dict
  winner: Optional[str]
  tied: tuple
  agrees: bool
  agrees_within_spread: bool


def outcome(record: Validation) -> Outcome:
  """Who reached the target first, and whether the advice said so."""
  stats = {}
  for algorithm in ALGORITHMS:
    rounds = [r for r in record.measured.get(algorithm, []) if r is not None]
    stats[algorithm] = (np.mean(rounds) if rounds else None,
                        np.std(rounds, ddof=1) if len(rounds) > 1 else 0.0,
                        len(rounds), len(record.measured.get(algorithm, [])))
  # Only algorithms that reached the target in every curve can win: one
  # that misses it in some seed is not faster there.
  candidates = {a: s for a, s in stats.items()
                if s[0] is not None and s[2] == s[3]}
  winner = min(candidates, key=lambda a: candidates[a][0], default=None)
  tied = ()
  if winner is not None:
    mean, std = candidates[winner][:2]
    tied = tuple(a for a, s in candidates.items() if a != winner
                 and s[0] - mean <= max(std, s[1], record.resolution))
  recommendation = record.advice['recommendation']
  return Outcome(
      mean_rounds={a: None if s[0] is None else float(s[0])
                   for a, s in stats.items()},
      reached={a: (s[2], s[3]) for a, s in stats.items()},
      winner=winner, tied=tied, agrees=recommendation == winner,
      agrees_within_spread=(recommendation == winner
                            or recommendation in tied))


def _store(records_dir: str) -> run_store.RecordStore:
  return run_store.RecordStore(records_dir, run_store.INDENTED,
                               'delete it and rerun its task')


def write_record(records_dir: str, record: Validation) -> str:
  """Writes `<records_dir>/<task>.json` atomically; returns its path."""
  return _store(records_dir).write(record.task, record._asdict())


def read_records(records_dir: str) -> list[Validation]:
  """Every record in `records_dir`, by task name.

  Raises:
    ValueError: Naming a record that cannot be read.
  """
  store = _store(records_dir)
  return [store.read_as(name, lambda fields: Validation(**fields))
          for name in store.names()]


def _rounds_text(record: Validation, result: Outcome, algorithm: str) -> str:
  reached, curves = result.reached[algorithm]
  values = [r for r in record.measured[algorithm] if r is not None]
  if not reached:
    return 'not reached'
  text = (f'{result.mean_rounds[algorithm]:.0f}' if len(values) == 1 else
          f'{np.mean(values):.0f} ± {np.std(values, ddof=1):.0f}')
  return text + ('' if reached == curves else f' ({reached} of {curves})')


def _measured_ratios(result: Outcome) -> str:
  """Mean rounds over 2-way GT's: the measured counterpart of the bounds'
  ratios ('-' where an algorithm did not reach the target)."""
  base = result.mean_rounds['two_way_gt']
  if not base:
    return '-'
  return ', '.join('-' if result.mean_rounds[a] is None else
                   f'{result.mean_rounds[a] / base:.3g}'
                   for a in ('parallel_training', 'one_way_gt'))


def _bounds_order(ratios: Mapping[str, float], tolerance: float) -> str:
  """The algorithms from the smallest bound to the largest, e.g. '1-way GT
  = 2-way GT < PT' ('=': within `tolerance`, relative, of the previous)."""
  ranked = sorted((v, a) for a, v in ratios.items())
  text = LABELS[ranked[0][1]]
  for (previous, _), (value, algorithm) in zip(ranked, ranked[1:]):
    text += (' = ' if value <= previous * (1.0 + tolerance) else ' < ')
    text += LABELS[algorithm]
  return text


def _slowness(result: Outcome, algorithm: str) -> tuple[float, float]:
  """Sorts measured algorithms from fastest to slowest: first by the share
  of curves that missed the target, then by the mean rounds of the rest."""
  reached, curves = result.reached[algorithm]
  mean = result.mean_rounds[algorithm]
  return (1.0 - reached / max(curves, 1), 0.0 if mean is None else mean)


def _measured_order(result: Outcome) -> str:
  """The algorithms from fastest to slowest as measured (`_slowness`), e.g.
  '1-way GT < 2-way GT (2 of 3) < PT (never)'."""
  ranked = sorted(ALGORITHMS, key=lambda a: _slowness(result, a))
  parts = []
  for algorithm in ranked:
    reached, curves = result.reached[algorithm]
    note = ('' if reached == curves else ' (never)' if not reached else
            f' ({reached} of {curves})')
    parts.append(LABELS[algorithm] + note)
  text = parts[0]
  for previous, algorithm, part in zip(ranked, ranked[1:], parts[1:]):
    same = _slowness(result, previous) == _slowness(result, algorithm)
    text += (' = ' if same else ' < ') + part
  return text


def _slowest_agreement(results) -> tuple[int, int]:
  """`(agreeing, tasks)`: tasks whose bounds single out one slowest
  algorithm (beyond the tolerance), and of those, how many measured it
  slowest too (last in the measured order)."""
  agreeing = tasks = 0
  for record, result in results:
    ratios = record.advice['ratios']
    worst = max(ratios, key=ratios.get)
    others = [v for a, v in ratios.items() if a != worst]
    if ratios[worst] <= max(others) * (1.0 + record.advice.get(
        'tolerance', 0.0)):
      continue
    tasks += 1
    slowest = max(ALGORITHMS, key=lambda a: _slowness(result, a))
    agreeing += slowest == worst
  return agreeing, tasks


def _verdict(result: Outcome) -> str:
  if result.winner is None:
    return 'undecided (no algorithm reached the target in every curve)'
  if result.agrees:
    return 'agrees' + (' (tied with it: ' + ', '.join(
        LABELS[a] for a in result.tied) + ')' if result.tied else '')
  if result.agrees_within_spread:
    return ('agrees within the measurement\'s resolution (seed spread or '
            'evaluation spacing), not the fastest on average')
  return 'disagrees'


def results_markdown(records: Sequence[Validation], *, command: str,
                     date: str) -> str:
  """The RESULTS.md section: per task, estimates, advice, measured winner."""
  lines = [
      '## The algorithm advisor against measurement (arXiv:2205.13655, '
      'section 5, table 3)', '',
      f'Generated on {date} by `{command}` from the records in '
      '`docs/results/advice/` (one per task; each names the command, '
      'machine and date that made it).', '',
      'Per task: the estimates a Parallel Training probe sampled over its '
      'first rounds (window means; G~^2 and B~^2 the window maxima, as '
      'table 4), table 3\'s bounds as ratios to 2-way GT\'s, the advisor\'s '
      'recommendation with its bootstrap agreement, and the measured '
      'rounds to the target (mean ± std over the seeds\' curves) of the '
      'three algorithms at the same settings. The winner is the algorithm '
      'with the fewest mean rounds among those that reach the target in '
      'every curve; another algorithm is tied with it when its mean exceeds '
      'the winner\'s by at most one standard deviation over seeds or one '
      'evaluation spacing (a first round reaching the target is known only '
      'to within the spacing of evaluations). The orders list the three '
      'from fewest rounds to most: by the bounds (\'=\' within the '
      'advisor\'s tolerance) and as measured (first by the share of curves '
      'missing the target, then by mean rounds).', '',
      '| task | probe rounds, K, S | sigma^2 | sigma_c^2 | G~^2 | B~^2 | '
      'bound / 2-way GT (PT, 1-way) | advice (agreement) | target | PT | '
      '1-way GT | 2-way GT | measured rounds / 2-way GT (PT, 1-way) | '
      'order by the bounds | measured order | measured winner | verdict |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
      '---|']
  results = [(r, outcome(r)) for r in records]
  for record, result in results:
    advice = record.advice
    est = advice['estimates']
    cells = [record.title,
             f'{advice["rounds"][0]}-{advice["rounds"][1]}, '
             f'{advice["settings"]["client_steps"]}, '
             f'{advice["settings"]["cohort_size"]}']
    for name, _ in _ESTIMATES:
      stat = 'max' if name.startswith('bgd') else 'mean'
      cells.append(f'{est[name][stat]:.3g}' if name in est else '-')
    cells += [
        f'{advice["ratios"]["parallel_training"]:.3g}, '
        f'{advice["ratios"]["one_way_gt"]:.3g}',
        f'{LABELS[advice["recommendation"]]} '
        f'({advice["agreement"]:.0%})',
        f'{record.metric} {"<=" if record.minimize else ">="} '
        f'{record.target:.4g}',
        *(_rounds_text(record, result, a) for a in ALGORITHMS),
        _measured_ratios(result),
        _bounds_order(advice['ratios'], advice.get('tolerance', 0.0)),
        _measured_order(result),
        LABELS[result.winner] if result.winner else '-',
        _verdict(result)]
    lines.append('| ' + ' | '.join(cells) + ' |')
  decided = [(r, o) for r, o in results if o.winner is not None]
  exact = sum(o.agrees for _, o in decided)
  loose = sum(o.agrees_within_spread for _, o in decided)
  slowest_measured, slowest_singled = _slowest_agreement(results)
  lines += [
      '', f'Agreement: the advice names the measured winner on {exact} of '
      f'{len(decided)} decided tasks, and the winner or an algorithm tied '
      f'with it on {loose} of {len(decided)}. The bounds single out one '
      f'slowest algorithm on {slowest_singled} tasks; it is measured '
      f'slowest on {slowest_measured} of them.', '',
      'Targets and curves:', '']
  for record, _ in results:
    files = sum(len(v) for v in record.curves.values())
    lines.append(f'* {record.title}: target {record.target_rule}; {files} '
                 f'curves evaluated every {record.resolution} rounds; made '
                 f'on {record.date}, {record.machine}.'
                 + (f' {record.note}' if record.note else ''))
  lines += [
      '', 'Where the right answer is known by construction (quadratic '
      'losses with G, B, sigma, sigma_c set), the estimators and the rule '
      'are tested in `tests/advisor_test.py`. The bounds are orders with '
      'their constants dropped: the advice says which terms matter, not how '
      'many rounds a run takes, so a tie between algorithms whose bounds '
      'are within the tolerance is not a disagreement with the theory.']
  return '\n'.join(lines) + '\n'
