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
"""One finished MovieLens scenario as a small record, meant to be committed.

The paper's horizon (arXiv:2205.13655, section 4.3: 2,000 rounds at S = 100)
costs hours on 2 cores here, and a run that is interrupted, or continued on
another machine, may have lost its `outputs/` (and so the checkpoints).
Each scenario therefore leaves, when it finishes, a record in a directory
of its own (`docs/results/movielens/` for `make results-movielens`): its
evaluation rows (`<scenario>_metrics.csv`: round, recall@10, hinge loss)
and a JSON summary (`<scenario>.json`: the settings it ran with, its
measured costs, wall time, machine, date and command). No checkpoint and
nothing of the ratings is in it. A later run, on this machine or another,
adds the missing scenarios, reads the finished ones back instead of
training them again, and `movielens_report` builds the RESULTS.md section
from all of them.

The reference rows of the section (`movielens_reference`: the popularity
floor, the central ceiling, the search for the spreadout's lambda, the
same central training with the paper's SGD) are small JSON records of their
own, in `<records_dir>/reference/` (`popularity.json`, `central.json`,
`lambda_search.json`, `central_sgd.json`), each with the
settings it was made with: read back when a run's settings are the same,
made again (minutes, not hours) when they are not.

The settings of records written before the model's forms were settings
lack them; those records were made with the earlier forms, and read back
as such (`EARLIER_FORMS`), so a run of the cited forms does not take them
for its own: `check_settings` names the forms that differ. To start over
with the cited forms, remove the old records (they stay in git's history)
or pass another records directory.
"""

import math
import os
from typing import Any, NamedTuple, Optional

from experiments.common import run_store
from experiments.movielens import movielens_config as config_lib

METRICS_SUFFIX = '_metrics.csv'
METRICS_COLUMNS = ('round', 'recall_at_10', 'hinge_loss')
# The forms every record was made with before its settings named them
# (`dual_encoder`'s IDENTITY_LINEAR, HINGE at margin 1, MEAN_SQUARED with
# no lambda, i.e. 1). Fixed: what those records are, whatever the model's
# defaults become.
EARLIER_FORMS = {'context_layer': 'identity_linear', 'client_loss': 'hinge',
                 'margin': 1.0, 'spreadout_form': 'mean_squared',
                 'spreadout_lambda': 1.0}
# Settings that only some scenarios' numbers depend on, and those scenarios:
# compared only for their records, so that the others' records stay valid
# when one changes (the baseline broadcasts the table: no key budget).
SCENARIO_SETTINGS = {
    'parallel_training_lr': (config_lib.PARALLEL_TRAINING,),
    'keys_per_client': tuple(s for s in config_lib.SCENARIOS
                             if s != config_lib.BASELINE),
}
# The reference records' directory under a records directory, and names.
REFERENCE_DIR = 'reference'
POPULARITY = 'popularity'
CENTRAL = 'central'
LAMBDA_SEARCH = 'lambda_search'
CENTRAL_SGD = 'central_sgd'


class ScenarioRecord(NamedTuple):
  """One finished scenario.

  Attributes:
    scenario: The scenario.
    rounds: Rounds trained.
    rows: Evaluations, round 0 first: dicts of `METRICS_COLUMNS`.
    settings: Everything but `rounds` that changes its numbers: the
      experiment's `Config` fields that do (not how clients are grouped,
      which gives the same numbers) and `data`, the data's description.
      Records are comparable when their settings are equal.
    costs: Per client and round, `movielens_config.Costs` as a dict.
    mean_keys: The paper's n, the mean distinct movies a client trains on.
    seconds: Wall-clock seconds of all `rounds` (evaluations included),
      summed over the invocations that ran them.
    seconds_complete: False when an invocation whose time is unknown ran
      some rounds (an interrupted one that left only a checkpoint): then
      `seconds` is a lower bound.
    seconds_per_round: Seconds per round of the invocation that finished it.
    machine: `results.machine_description()` of that invocation.
    date: Its `results.utc_now()`.
    command: Its command line.
    diagnostics: For a table 4 run, its `bgd_diagnostics.Diagnostics` as a
      dict.
  """

  scenario: str
  rounds: int
  rows: list[dict[str, float]]
  settings: dict[str, Any]
  costs: dict[str, Any]
  mean_keys: float
  seconds: float
  seconds_complete: bool
  seconds_per_round: float
  machine: str
  date: str
  command: str
  diagnostics: Optional[dict[str, Any]] = None


# repr: the shortest text that reads back as the same float.
LAYOUT = run_store.Layout(metrics_suffix=METRICS_SUFFIX,
                          columns=METRICS_COLUMNS,
                          format_value=lambda value: repr(float(value)))
_REMEDY = 'delete it and its metrics to run the scenario again'


def _store(records_dir: str) -> run_store.RecordStore:
  return run_store.RecordStore(records_dir, LAYOUT, _REMEDY)


def paths(records_dir: str, scenario: str) -> tuple[str, str]:
  """`(json_path, metrics_path)` of a scenario's record."""
  store = _store(records_dir)
  return store.path(scenario), store.metrics_path(scenario)


def write_record(records_dir: str, record: ScenarioRecord) -> None:
  """Writes the record's two files (each atomically; the CSV first, so a
  JSON summary never names rows that are not there)."""
  _store(records_dir).write(record.scenario, record._asdict())


def read_record(records_dir: str, scenario: str) -> Optional[ScenarioRecord]:
  """The scenario's record, or `None` if it has none.

  Raises:
    ValueError: For a record that exists but cannot be read (the message
      names the file): a damaged record is not silently retrained over.
  """
  store = _store(records_dir)
  record = store.read_as(scenario, lambda fields: ScenarioRecord(**fields))
  if record is None:
    return None
  json_path = store.path(scenario)
  if 'context_layer' not in record.settings:
    record = record._replace(settings=dict(EARLIER_FORMS, **record.settings))
  if ('parallel_training_lr' not in record.settings
      and 'client_lr' in record.settings):
    # Made before PT had an eta of its own: PT's was the clients'.
    record = record._replace(settings=dict(
        record.settings,
        parallel_training_lr=record.settings.get('client_lr')))
  if record.scenario != scenario or not record.rows or record.rows[-1][
      'round'] != record.rounds:
    raise ValueError(f'The MovieLens record {json_path} does not hold '
                     f'{scenario} up to its round {record.rounds}. Delete '
                     'it and its metrics to run the scenario again.')
  return record


def read_records(records_dir: str,
                 scenarios: Any = None) -> list[ScenarioRecord]:
  """The records in `records_dir`, in `scenarios` order (default: every
  record there, by name); scenarios without one are left out."""
  if scenarios is None:
    scenarios = _store(records_dir).names()
  found = (read_record(records_dir, s) for s in scenarios)
  return [r for r in found if r is not None]


def _for_scenarios(settings: dict[str, Any], *scenarios: str
                   ) -> dict[str, Any]:
  """`settings` without those that some of `scenarios` do not depend on.

  A diagnostics run (`with_diagnostics`) broadcasts the whole table: the
  key budget changes none of its numbers.
  """
  return {k: v for k, v in settings.items()
          if all(s in SCENARIO_SETTINGS.get(k, (s,)) for s in scenarios)
          and not (k == 'keys_per_client' and settings.get('with_diagnostics'))}


def differing_between(a: 'ScenarioRecord', b: 'ScenarioRecord') -> list[str]:
  """The settings in which records `a` and `b` differ, of those both their
  scenarios depend on: what keeps them out of one section."""
  return run_store.differing_settings(
      _for_scenarios(a.settings, a.scenario, b.scenario),
      _for_scenarios(b.settings, a.scenario, b.scenario))


def same_settings(record: 'ScenarioRecord', settings: dict[str, Any]) -> bool:
  """Whether `record` was made with `settings`, as far as its scenario's
  numbers depend on them."""
  return (_for_scenarios(record.settings, record.scenario)
          == _for_scenarios(settings, record.scenario))


def check_settings(records_dir: str, settings: dict[str, Any]) -> None:
  """Raises `ValueError` if a record in `records_dir` was made with other
  settings: one report cannot compare it with runs made with `settings`, so
  it has to go (the message names it) before hours of training."""
  for record in read_records(records_dir):
    keys = run_store.differing_settings(
        _for_scenarios(record.settings, record.scenario),
        _for_scenarios(settings, record.scenario))
    if keys:
      json_path, metrics_path = paths(records_dir, record.scenario)
      changes = ', '.join(f'{k}: {record.settings.get(k)!r} there, '
                          f'{settings.get(k)!r} now' for k in keys)
      raise ValueError(
          f'The record {json_path} was made with other settings '
          f'({changes}). Delete it and {metrics_path}, or use another '
          'records directory.')


def accumulated_seconds(previous: Optional[ScenarioRecord],
                        settings: dict[str, Any], resumed_from: int,
                        seconds: float) -> tuple[float, bool]:
  """`(seconds, complete)` of a scenario an invocation finished.

  The invocation trained rounds `resumed_from + 1` onwards in `seconds`.
  Rounds before that come from a checkpoint; their time is known only if
  a record of the same settings ended exactly there (an earlier, shorter
  horizon that this one extends).
  """
  if resumed_from == 0:
    return seconds, True
  if (previous is not None and same_settings(previous, settings)
      and previous.rounds == resumed_from
      and math.isfinite(previous.seconds)):
    return previous.seconds + seconds, previous.seconds_complete
  return seconds, False


class PopularityRecord(NamedTuple):
  """The popularity floor (`movielens_reference.popularity_recall`).

  Attributes:
    recall_at_10: The share of the test labels among `top_movies`.
    top_movies: The 10 movies most often a label among the training users'
      examples, most frequent first (table rows, 1 = the first movie).
    train_examples: The training examples counted.
    test_examples: The test examples scored.
    settings: What its number depends on (`movielens_reference`).
    date: `results.utc_now()` of the run that made it.
    command: Its command line.
  """

  recall_at_10: float
  top_movies: list[int]
  train_examples: int
  test_examples: int
  settings: dict[str, Any]
  date: str
  command: str


class CentralRecord(NamedTuple):
  """A central training (`movielens_reference.train_central`): the
  ceiling (Adam) or the paper's SGD.

  Attributes:
    rows: Per epoch, epoch 0 (the initial model) first: `epoch`,
      `train_loss` (the mean of the epoch's batch losses; None at 0), and
      `recall_at_10`, `hinge_loss` (the client loss) on the test examples.
    settings: What its numbers depend on, its epochs, learning rate and
      batch size included.
    seconds: Wall-clock seconds of the training and evaluations.
    machine: `results.machine_description()` of the run that made it.
    date: Its `results.utc_now()`.
    command: Its command line.
  """

  rows: list[dict[str, Any]]
  settings: dict[str, Any]
  seconds: float
  machine: str
  date: str
  command: str


class LambdaSearchRecord(NamedTuple):
  """The search for the spreadout's lambda
  (`movielens_reference.search_lambda`).

  Attributes:
    lambdas: The grid, as given.
    scores: Per lambda, recall@10 on the validation users' examples after
      the last epoch of central training.
    selected: The lambda of the best score (ties: the smallest).
    validation_recalls: Per lambda, recall@10 on the validation examples
      after each epoch, epoch 0 first.
    settings: What the scores depend on (the central training's, but the
      lambda).
    seconds: Wall-clock seconds of the search.
    machine: `results.machine_description()` of the run that made it.
    date: Its `results.utc_now()`.
    command: Its command line.
  """

  lambdas: list[float]
  scores: list[float]
  selected: float
  validation_recalls: list[list[float]]
  settings: dict[str, Any]
  seconds: float
  machine: str
  date: str
  command: str


class References(NamedTuple):
  """The reference records of a records directory (None: not made)."""

  popularity: Optional[PopularityRecord] = None
  central: Optional[CentralRecord] = None
  lambda_search: Optional[LambdaSearchRecord] = None
  central_sgd: Optional[CentralRecord] = None


_REFERENCE_TYPES = {POPULARITY: PopularityRecord, CENTRAL: CentralRecord,
                    LAMBDA_SEARCH: LambdaSearchRecord,
                    CENTRAL_SGD: CentralRecord}


def reference_store(records_dir: str) -> run_store.RecordStore:
  """The reference records of `records_dir` (in its `reference/`)."""
  return run_store.RecordStore(os.path.join(records_dir, REFERENCE_DIR),
                               run_store.INDENTED, 'delete it to make it again')


def reference_path(records_dir: str, name: str) -> str:
  """The JSON file of the reference record `name` under `records_dir`."""
  return reference_store(records_dir).path(name)


def read_reference(records_dir: str, name: str) -> Optional[NamedTuple]:
  """The reference record `name` (`POPULARITY`, `CENTRAL`,
  `LAMBDA_SEARCH`, `CENTRAL_SGD`), or None if there is none.

  Raises:
    ValueError: For a record that exists but cannot be read (naming it).
  """
  return reference_store(records_dir).read_as(
      name, lambda fields: _REFERENCE_TYPES[name](**fields))


def read_references(records_dir: str) -> References:
  """Every reference record of `records_dir`."""
  return References(*(read_reference(records_dir, name)
                      for name in References._fields))
