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
"""Hyperparameter search of the hybrid experiment, as the paper tunes.

The guided-model-merging paper (Zhu et al., appendix D) tunes the clients'
Adam learning rate and epochs with FedAvg, applies them to every method,
and searches each method's own grid (`tuning`). Here
every grid point is scored on a validation split held apart from the test
set (`hybrid_images.HybridSplit.for_validation`): the run's final metric
(best of the last 5 evaluations, as the paper reports), averaged over the
tuning settings and seeds; the best point is selected, the first on ties.

1.  Client stage (when `fedavg` is tuned): FedAvg over the client grid; the
    selected client values then hold for every method.
2.  Method stage: each method's grid, with the selected client values.

Every run is kept under `output_dir/points/<method>/<point>/`, so an
interrupted search resumes, and a search can be done method by method
(`tune_methods`) or on a stated part of a grid (`only`): `selected.json`
keeps what earlier searches selected, and `tuning.md` says, per method,
which values were searched out of the paper's grid and which are our
choice.
"""

from collections.abc import Callable, Mapping, Sequence
import json
import os
from typing import Any, NamedTuple, Optional

import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_tables
from experiments.hybrid_async import tuning
import tff_mixed
from tff_mixed.training import reports as reports_lib

SELECTED_FILE = 'selected.json'
TABLE_FILE = 'tuning.md'
POINTS_DIR = 'points'


class Selected(NamedTuple):
  """What a search selected.

  Attributes:
    client: The clients' values (`client_lr`, `client_epochs`), for every
      method; empty if the client grid was not searched.
    methods: Per method, its own selected values.
    searched: Per method searched (`fedavg`: the client grid), per axis,
      `{'values': searched, 'grid': the paper's, 'source': 'paper' or
      'ours'}`: which part of the grid the selection comes from.
  """

  client: dict[str, Any]
  methods: dict[str, dict[str, Any]]
  searched: dict[str, dict[str, dict[str, Any]]]


class PointScore(NamedTuple):
  """One grid point's validation score.

  Attributes:
    values: The point, {config field: value}.
    score: Mean over settings and seeds of the final validation accuracy.
    runs: Number of runs averaged.
    late_score: The same of the mean accuracy over each run's last half.
  """

  values: dict[str, Any]
  score: float
  runs: int
  # Mean over the same runs of the mean accuracy over their last half,
  # which breaks ties (`tuning.select`); NaN in searches kept before it.
  late_score: float = float('nan')


class MethodSearch(NamedTuple):
  """One method's search: the grid searched, its points, the selection."""

  method: str
  grid: tuning.Grid
  full_grid: tuning.Grid
  points: list[PointScore]
  selected: int


def point_key(values: Mapping[str, Any]) -> str:
  """A grid point as a directory name, e.g. `client_lr=0.001,epochs=1`."""
  return ','.join(f'{k}={v:g}' if isinstance(v, float) else f'{k}={v}'
                  for k, v in values.items())


def grids(methods: Sequence[str],
          only: Optional[Mapping[str, Sequence[Any]]] = None
          ) -> list[tuple[str, tuning.Grid, tuning.Grid]]:
  """`(method, searched grid, full grid)` per method with a grid, the
  client stage (FedAvg) first, then FedBuff (the methods built on it take
  its selection).

  `only` keys are an axis (for every method that has it) or
  `method:axis` (for that method only, over an unqualified key): methods
  share axis names whose grids differ (Center's server epochs are
  {10, 20, 50}, Fed+FT's {1, 10, 20}).
  """
  only = dict(only or {})
  qualified = [k for k in only if ':' in k]
  for key in qualified:
    if key.split(':', 1)[0] not in methods:
      raise ValueError(f'Restriction {key!r} names no method tuned '
                       f'({list(methods)}).')
  result = []
  tuned = ([(hybrid_config.FEDAVG, tuning.CLIENT_GRID)]
           if hybrid_config.FEDAVG in methods else [])
  # FedBuff before the methods built on it, which take its selection.
  ordered = sorted(methods, key=lambda m: m != hybrid_config.FEDBUFF)
  tuned += [(m, tuning.METHOD_GRIDS[m]) for m in ordered
            if m in tuning.METHOD_GRIDS]
  for method, grid in tuned:
    own = {k: v for k, v in only.items() if ':' not in k}
    own.update({k.split(':', 1)[1]: v for k, v in only.items()
                if k.startswith(method + ':')})
    result.append((method, tuning.restrict(grid, own), grid))
  return result


def read_selected(path: str) -> Selected:
  """`selected.json` of an earlier search.

  Raises:
    ValueError: If the file is missing, unreadable or names unknown
      methods or fields.
  """
  try:
    with open(path) as f:
      raw = json.load(f)
    selected = Selected(dict(raw['client']),
                        {m: dict(v) for m, v in raw['methods'].items()},
                        {m: dict(v) for m, v in raw.get('searched',
                                                        {}).items()})
  except FileNotFoundError:
    raise ValueError(f'No selected hyperparameters at {path!r}.') from None
  except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
    raise ValueError(f'{path!r} is not a selected.json of tune_main '
                     f'({e}).') from None
  fields = set(hybrid_config.Config._fields)
  bad = [m for m in selected.methods if m not in hybrid_config.METHODS]
  bad += [k for v in [selected.client, *selected.methods.values()]
          for k in v if k not in fields]
  if bad:
    raise ValueError(f'{path!r} names unknown methods or fields: {bad}.')
  return selected


def tune(data_fn: Callable[[int, float], hybrid_config.Data],
         config: hybrid_config.Config, *,
         methods: Sequence[str], seeds: Sequence[int],
         settings: Sequence[hybrid_config.Setting], output_dir: str,
         only: Optional[Mapping[str, Sequence[Any]]] = None,
         clients_per_group: int = tff_mixed.simulation.AUTO,
         base_selected: Optional[Selected] = None
         ) -> tuple[Selected, list[MethodSearch]]:
  """Searches the methods' grids on the validation split (module docstring).

  Args:
    data_fn: `data_fn(seed, alpha) -> Data`, whose split has a validation
      set (`validation_size` > 0).
    config: The fixed hyperparameters; each point replaces its fields.
    methods: The methods to tune (`fedavg`: the client stage).
    seeds: Seeds of every point's runs.
    settings: Settings of every point's runs.
    output_dir: Where the runs, `selected.json` and `tuning.md` go.
    only: Optional {axis: values}: search only these values of an axis (a
      stated subset of the paper's grid).
    clients_per_group: As in `run_method`.
    base_selected: The selection to start from when `output_dir` has none
      (its client values and its other methods' values stand).

  Returns:
    The selection (merged with an earlier `selected.json` in `output_dir`)
    and this search's `MethodSearch`es.

  Raises:
    ValueError: For bad arguments, before any training.
  """
  if not seeds or not settings:
    raise ValueError('Tuning needs seeds and settings.')
  if config.validation_size < 1:
    raise ValueError('Tuning scores on a validation split: set '
                     'validation_size > 0.')
  plan = grids(methods, only)
  if not plan:
    raise ValueError(f'None of {list(methods)} has a grid; tunable: '
                     f'{[hybrid_config.FEDAVG] + list(tuning.METHOD_GRIDS)}.')
  for method, grid, _ in plan:
    for values in grid.points():
      hybrid_config.validate(config._replace(**values), [method], settings,
                             seeds)
  selected_path = os.path.join(output_dir, SELECTED_FILE)
  if os.path.exists(selected_path):
    selected = read_selected(selected_path)
  elif base_selected is not None:
    selected = Selected(dict(base_selected.client),
                        {m: dict(v) for m, v in base_selected.methods.items()},
                        {m: dict(v) for m, v in
                         base_selected.searched.items()})
  else:
    selected = Selected({}, {}, {})
  data_of = {}
  cache = {}
  searches = []
  for method, grid, full_grid in plan:
    if (method in hybrid_config.FEDBUFF_BASED
        and hybrid_config.FEDBUFF not in selected.methods):
      raise ValueError(f'{method} is built on FedBuff and takes its selected '
                       'values: tune fedbuff first (or with it).')
    # A method built on FedBuff is tuned at FedBuff's selected values (the
    # plan tunes FedBuff before them).
    base = (config if method == hybrid_config.FEDAVG else
            hybrid_methods.method_config(config._replace(**selected.client),
                                         method, selected.methods))
    scores = []
    for values in grid.points():
      finals, lates = [], []
      for seed in seeds:
        for setting in settings:
          if (seed, setting.alpha) not in data_of:
            data = data_fn(seed, setting.alpha)
            data_of[(seed, setting.alpha)] = data._replace(
                split=data.split.for_validation())
          run_dir = os.path.join(output_dir, POINTS_DIR, method,
                                 point_key(values))
          reports_lib.make_directory(run_dir, 'a tuning point directory')
          c = base._replace(alpha=setting.alpha, delay_std=setting.delay_std,
                            **values)
          run = hybrid_records.kept_run(
              run_dir, hybrid_records.run_key(method, setting, seed),
              method, data_of[(seed, setting.alpha)], c, seed, cache,
              clients_per_group)
          finals.append(hybrid_tables.final_metric(run.rows))
          lates.append(hybrid_tables.late_mean_metric(run.rows))
      scores.append(PointScore(values, float(np.mean(finals)), len(finals),
                               float(np.mean(lates))))
    # Points within one validation image of the best tie.
    best = tuning.select({i: p.score for i, p in enumerate(scores)},
                         {i: p.late_score for i, p in enumerate(scores)},
                         tolerance=1.0 / config.validation_size)
    searches.append(MethodSearch(method, grid, full_grid, scores, best))
    selected.searched[method] = {
        axis.name: dict(values=list(axis.values), grid=list(full.values),
                        source=axis.source)
        for axis, full in zip(grid.axes, full_grid.axes)}
    if method == hybrid_config.FEDAVG:
      selected = selected._replace(client=dict(scores[best].values))
    else:
      selected.methods[method] = dict(scores[best].values)
  reports_lib.atomic_write_text(selected_path, json.dumps(
      selected._asdict(), indent=2, sort_keys=True) + '\n')
  reports_lib.atomic_write_text(
      os.path.join(output_dir, TABLE_FILE),
      tuning_markdown(searches, settings, seeds, config))
  return selected, searches


def _value(v: Any) -> str:
  return f'{v:g}' if isinstance(v, float) else str(v)


def tuning_markdown(searches: Sequence[MethodSearch],
                    settings: Sequence[hybrid_config.Setting],
                    seeds: Sequence[int], config: hybrid_config.Config) -> str:
  """The search's report: per method, the searched part of its grid and
  every point's validation score, the selected one in bold."""
  lines = [
      f'Scored on a validation split of {config.validation_size} held-out '
      'examples (never the test set): final accuracy (best of the last 5 '
      'evaluations), mean over settings '
      + ', '.join(s.label for s in settings) + f' and seeds {list(seeds)}; '
      f'{config.rounds} rounds, {config.num_clients} clients. Points within '
      f'one validation image ({100 / config.validation_size:.2g} points) of '
      'the best tie; the tie goes to the highest mean accuracy over the '
      'runs\' last half (the second score), then to the first point. '
      'Grids: the paper\'s appendix D; axes marked "our choice" it tunes '
      'without listing values.', '']
  for search in searches:
    lines.append(f'### {search.method}')
    lines.append('')
    for axis, full in zip(search.grid.axes, search.full_grid.axes):
      source = 'our choice' if axis.source == tuning.OURS else 'paper'
      part = ('whole grid' if axis.values == full.values else
              f'searched {[_value(v) for v in axis.values]} of '
              f'{[_value(v) for v in full.values]}')
      lines.append(f'* {axis.name} ({source}): {part}')
    lines += ['', '| ' + ' | '.join(a.name for a in search.grid.axes)
              + ' | validation accuracy (%) | last half (%) | runs |',
              '| ' + '--- | ' * (len(search.grid.axes) + 3)]
    for i, point in enumerate(search.points):
      cells = [_value(point.values[a.name]) for a in search.grid.axes]
      scores = [f'{100 * point.score:.1f}', f'{100 * point.late_score:.1f}']
      if i == search.selected:
        cells = [f'**{c}**' for c in cells]
        scores = [f'**{v}**' for v in scores]
      lines.append('| ' + ' | '.join(cells + scores + [str(point.runs)])
                   + ' |')
    lines.append('')
  return '\n'.join(lines)
