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
"""

import math
import os
from typing import Any, NamedTuple, Optional

from experiments.common import run_records

METRICS_SUFFIX = '_metrics.csv'
METRICS_COLUMNS = ('round', 'recall_at_10', 'hinge_loss')


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
    costs: Per client and round, `movielens_lib.Costs` as a dict.
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


def paths(records_dir: str, scenario: str) -> tuple[str, str]:
  """`(json_path, metrics_path)` of a scenario's record."""
  return run_records.paths(records_dir, scenario, METRICS_SUFFIX)


def write_record(records_dir: str, record: ScenarioRecord) -> None:
  """Writes the record's two files (each atomically; the CSV first, so a
  JSON summary never names rows that are not there)."""
  # repr: the shortest text that reads back as the same float.
  run_records.write(records_dir, record.scenario, record, METRICS_COLUMNS,
                    lambda value: repr(float(value)), METRICS_SUFFIX,
                    sort_keys=True)


def read_record(records_dir: str, scenario: str) -> Optional[ScenarioRecord]:
  """The scenario's record, or `None` if it has none.

  Raises:
    ValueError: For a record that exists but cannot be read (the message
      names the file): a damaged record is not silently retrained over.
  """
  json_path, metrics_path = paths(records_dir, scenario)
  if not os.path.exists(json_path):
    return None
  try:
    record = run_records.read(json_path, ScenarioRecord, METRICS_COLUMNS)
  except (OSError, ValueError, TypeError, KeyError) as e:
    raise ValueError(f'The MovieLens record {json_path} (with '
                     f'{metrics_path}) cannot be read: {e}. Delete both '
                     'files to run the scenario again.') from e
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
    scenarios = run_records.names(records_dir)
  found = (read_record(records_dir, s) for s in scenarios)
  return [r for r in found if r is not None]


def check_settings(records_dir: str, settings: dict[str, Any]) -> None:
  """Raises `ValueError` if a record in `records_dir` was made with other
  settings: one report cannot compare it with runs made with `settings`, so
  it has to go (the message names it) before hours of training."""
  for record in read_records(records_dir):
    keys = run_records.differing_settings(record.settings, settings)
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
  if (previous is not None and previous.settings == settings
      and previous.rounds == resumed_from
      and math.isfinite(previous.seconds)):
    return previous.seconds + seconds, previous.seconds_complete
  return seconds, False
