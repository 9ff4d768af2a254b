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
"""Runs the CelebA smile scenarios of arXiv:2205.13655 over several seeds.

Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning", section 4.1 and appendix B (tables 4-6). Every
scenario runs once per seed at the paper's hyperparameters, each (scenario,
seed) in a directory of its own, so that an interrupted reproduction resumes
(the shared runner's checkpoints) and a finished run is read back from its
`run.json` instead of being trained again. The table 4 diagnostics are
separate runs of each mixed algorithm with K = 1 (appendix B.1).
`reproduce_report` turns the runs into tables, a plot and the claims.
"""

from collections.abc import Callable, Mapping, Sequence
import csv
import json
import math
import os
from typing import Any, NamedTuple, Optional

from absl import logging

from experiments.celeba_smile import celeba_smile_lib
from experiments.common import cli
from experiments.common import records as records_lib
from experiments.common import run_store
from experiments.common import scenarios as scenarios_lib
from experiments.common import tables
from tff_mixed.tasks import celeba_smile as celeba

PT = scenarios_lib.PARALLEL_TRAINING
ONE_WAY_GT = scenarios_lib.ONE_WAY_GT
TWO_WAY_GT = scenarios_lib.TWO_WAY_GT
# The paper's three mixed FL algorithms (figure 1a); Example Transfer is our
# reference point, outside its claims.
MIXED = (PT, ONE_WAY_GT, TWO_WAY_GT)
_RUN_NAME = 'run'
RUN_FILE = _RUN_NAME + run_store.JSON_SUFFIX
_RUN_LAYOUT = run_store.Layout(sort_keys=False)
# Table 6: |B_c| = 1000 for 1-way GT, 500 for PT and 2-way GT. Given
# explicitly, not by the K S |B_i| rule, so that a smaller cohort (S capped
# at the number of clients) keeps the paper's central batches.
PAPER_CENTRAL_BATCH_SIZES = {PT: 500, ONE_WAY_GT: 1000, TWO_WAY_GT: 500}
# Appendix B.1: the table 4 runs take a single local step per round.
DIAGNOSTIC_CLIENT_STEPS = 1


class RunRecord(NamedTuple):
  """One finished (scenario, seed) run.

  Attributes:
    scenario: The scenario.
    seed: The seed.
    rows: Its `records.MetricsRow`s (round 0 first), from its metrics CSV.
    seconds: Wall-clock seconds of the invocation that finished it.
    resumed: Whether earlier invocations ran some of its rounds (then
      `seconds` covers only the rest).
    data_description: One sentence on the data (`run_experiment`'s).
    diagnostics: Its `celeba_smile_lib.Diagnostics`, for a diagnostics run.
  """

  scenario: str
  seed: int
  rows: list[records_lib.MetricsRow]
  seconds: float
  resumed: bool
  data_description: str
  diagnostics: Optional[celeba_smile_lib.Diagnostics] = None

  @property
  def rounds(self) -> int:
    return self.rows[-1].round


def parse_seeds(values: Sequence[str]) -> list[int]:
  """`--seeds` as ints; raises ValueError unless distinct, in [0,
  `cli.MAX_SEED`]."""
  return cli.check_seeds('seeds', values)


def read_metrics_csv(path: str) -> list[records_lib.MetricsRow]:
  """Reads `tables.write_metrics_csv`'s CSV back into `MetricsRow`s."""
  with open(path) as f:
    reader = csv.DictReader(f)
    if tuple(reader.fieldnames or ()) != tables.CSV_COLUMNS:
      raise ValueError(f'{path} is not a metrics CSV: columns '
                       f'{reader.fieldnames}, expected {tables.CSV_COLUMNS}.')
    return [records_lib.MetricsRow(
        r['scenario'], int(r['round']),
        *(float(r[c]) for c in tables.CSV_COLUMNS[2:])) for r in reader]


def run_key(scenario: str, seed: int, with_diagnostics: bool,
            kwargs: Mapping[str, Any]) -> dict[str, Any]:
  """What a finished run must share with a request to be reused.

  Everything that changes its numbers: the `run_experiment` arguments (not
  where it writes, its progress bars, its rounds per TFF call or the target
  AUC, which the report applies to the rows) and the database's size and
  modification time.
  """
  key = {k: v for k, v in kwargs.items()
         if k not in ('output_dir', 'progress', 'rounds_per_call',
                      'target_auc')}
  database = celeba.database_path(kwargs.get('cache_dir'))
  stat = os.stat(database) if os.path.exists(database) else None
  key.update(scenario=scenario, seed=seed, with_diagnostics=with_diagnostics,
             database=[database, stat and stat.st_size,
                       stat and stat.st_mtime_ns])
  return json.loads(json.dumps(key, default=list))  # Tuples as lists.


def _store(run_dir: str) -> run_store.RecordStore:
  return run_store.RecordStore(run_dir, _RUN_LAYOUT,
                               'delete it to run the scenario again')


def _load_run(run_dir: str, key: dict[str, Any]) -> Optional[RunRecord]:
  """The finished run in `run_dir`, if it was made with `key`."""
  saved = run_store.kept(_store(run_dir), _RUN_NAME, key,
                         settings_of=lambda fields: fields['key'],
                         on_differs=run_store.REPLACE)
  if saved is None:
    return None
  diagnostics = saved.get('diagnostics')
  return RunRecord(
      scenario=key['scenario'], seed=key['seed'],
      rows=read_metrics_csv(os.path.join(run_dir, saved['metrics'])),
      seconds=saved['seconds'], resumed=saved['resumed'],
      data_description=saved['data_description'],
      diagnostics=(celeba_smile_lib.Diagnostics(**diagnostics)
                   if diagnostics else None))


def run_one(scenario: str, seed: int, *, output_dir: str,
            with_diagnostics: bool = False,
            run_fn: Callable[..., Any] = celeba_smile_lib.run_experiment,
            **kwargs) -> RunRecord:
  """Runs one scenario with one seed, or reads it back if already done.

  The run lives in `output_dir/<scenario>/seed<seed>`; `run_fn`
  (`celeba_smile_lib.run_experiment`) resumes an interrupted one from its
  checkpoints, and a finished one (its `run.json` written with the same
  `run_key`) is not run again.

  Args:
    scenario: One of `scenarios.SCENARIOS`.
    seed: The seed.
    output_dir: Root directory of the runs.
    with_diagnostics: Report G~_t^2 and B~_t^2 (a mixed algorithm only).
    run_fn: `celeba_smile_lib.run_experiment` or a stand-in with its
      signature.
    **kwargs: The other `run_experiment` arguments.

  Returns:
    The `RunRecord`.
  """
  run_dir = os.path.join(output_dir, scenario, f'seed{seed}')
  key = run_key(scenario, seed, with_diagnostics, kwargs)
  done = _load_run(run_dir, key)
  if done is not None:
    logging.info('%s seed %d: finished earlier, read from %s', scenario,
                 seed, run_dir)
    return done
  result = run_fn(scenarios=[scenario], seed=seed, output_dir=run_dir,
                  with_diagnostics=with_diagnostics, **kwargs)
  (summary,) = result.comparison.summaries
  rows = result.comparison.rows
  diagnostics = result.diagnostics[0] if result.diagnostics else None
  saved = dict(
      key=key, metrics=os.path.basename(result.comparison.files['metrics']),
      seconds=summary.seconds,
      resumed=any(math.isnan(r.seconds) for r in rows[1:]),
      data_description=result.data_description,
      diagnostics=diagnostics and diagnostics._asdict())
  _store(run_dir).write(_RUN_NAME, saved)
  return _load_run(run_dir, key)


class Reproduction(NamedTuple):
  """What `reproduce` returns.

  Attributes:
    runs: The `RunRecord`s at the paper's settings, seed by seed.
    diagnostic_runs: Those of the table 4 runs (K = 1, with diagnostics).
    clients_per_round: S per seed (the requested S, capped at the number of
      clients).
    central_batch_sizes: |B_c| per mixed algorithm.
  """

  runs: list[RunRecord]
  diagnostic_runs: list[RunRecord]
  clients_per_round: dict[int, int]
  central_batch_sizes: dict[str, int]


def count_clients(seed: int, **kwargs) -> int:
  """The number of federated clients `run_experiment(seed=seed, **kwargs)`
  trains on (composites without a positive image are left out, which
  depends on the seeded grouping)."""
  return celeba.build_task(
      kwargs.get('cache_dir'), work_dir=kwargs.get('work_dir'),
      label=kwargs.get('label', celeba.DEFAULT_LABEL),
      raw_clients_per_client=kwargs.get('raw_clients_per_client', 3),
      client_batch_size=kwargs.get('client_batch_size', 5),
      max_eval_examples=kwargs.get('max_eval_examples'), seed=seed,
      download=kwargs.get('download', False)).num_clients


def reproduce(
    scenarios: Sequence[str], seeds: Sequence[int], *, output_dir: str,
    clients_per_round: int = 100, diagnostic_rounds: int = 100,
    central_batch_sizes: Optional[Mapping[str, int]] = None,
    run_fn: Callable[..., Any] = celeba_smile_lib.run_experiment,
    count_clients_fn: Callable[..., int] = count_clients,
    **kwargs) -> Reproduction:
  """Runs every scenario with every seed, then the table 4 runs.

  Args:
    scenarios: Names from `scenarios.SCENARIOS`.
    seeds: The seeds (distinct).
    output_dir: Root directory: `runs/<scenario>/seed<seed>` and
      `diagnostics/<scenario>/seed<seed>` below it.
    clients_per_round: S, capped per seed at the number of clients.
    diagnostic_rounds: Rounds of the table 4 runs of the mixed algorithms
      among `scenarios` (K = 1, with diagnostics); 0: none.
    central_batch_sizes: |B_c| per mixed algorithm; `None`: table 6's.
    run_fn: `celeba_smile_lib.run_experiment` or a stand-in.
    count_clients_fn: `count_clients` or a stand-in.
    **kwargs: The other `run_experiment` arguments (not `scenarios`, `seed`,
      `central_batch_size`, `with_diagnostics`, `output_dir`).

  Returns:
    A `Reproduction`.
  """
  seeds = list(seeds)
  if not seeds or len(set(seeds)) != len(seeds):
    raise ValueError(f'`seeds` must be distinct and non-empty, got {seeds}.')
  scenarios = scenarios_lib.check_scenarios(scenarios)
  batch_sizes = dict(central_batch_sizes or PAPER_CENTRAL_BATCH_SIZES)
  cohorts = {}
  for seed in seeds:
    cohorts[seed] = min(clients_per_round,
                        count_clients_fn(seed=seed, **kwargs))
    if cohorts[seed] < clients_per_round:
      logging.info('Seed %d: S = %d, all the clients (fewer than %d).', seed,
                   cohorts[seed], clients_per_round)

  def run(scenario, seed, root, **overrides):
    return run_one(scenario, seed, output_dir=os.path.join(output_dir, root),
                   run_fn=run_fn, clients_per_round=cohorts[seed],
                   central_batch_size=batch_sizes.get(scenario),
                   **dict(kwargs, **overrides))

  runs = [run(s, seed, 'runs') for seed in seeds for s in scenarios]
  diagnostic_runs = [] if not diagnostic_rounds else [
      run(s, seed, 'diagnostics', with_diagnostics=True,
          rounds=diagnostic_rounds, client_steps=DIAGNOSTIC_CLIENT_STEPS)
      for seed in seeds for s in scenarios if s in MIXED]
  return Reproduction(runs, diagnostic_runs, cohorts,
                      {s: batch_sizes[s] for s in MIXED if s in scenarios})
