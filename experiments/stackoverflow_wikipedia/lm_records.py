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
"""Per-scenario records of the LM reproduction, small enough to commit.

A run of every scenario of arXiv:2205.13655's language model (section 4.2,
figure 13, table 4) at tables 7-8 takes hours on a small machine, and its
outputs (checkpoints, the converted posts) are not kept. So each finished
scenario leaves a record: its evaluations (a CSV, one row per evaluated
round) and a JSON summary (settings, data, machine, date, wall time, and
for a diagnostics run table 4's maxima). `lm_report` builds the RESULTS.md
section from whatever records exist, so later runs add the missing
scenarios one invocation at a time, and the experiment resumes after an
interruption. No weights, no text.
"""

from typing import Any, NamedTuple, Optional

from experiments.common import run_store

# The evaluated quantities of a row, after `round`.
METRICS = tuple(f'{s}_{m}' for s in ('mixed', 'federated', 'central')
                for m in ('accuracy', 'loss'))
# A metrics CSV's columns, and how its name ends.
COLUMNS = ('round', *METRICS)
METRICS_SUFFIX = '.csv'
DIAGNOSTICS_SUFFIX = '_diagnostics'


class ScenarioRecord(NamedTuple):
  """One finished scenario run.

  Attributes:
    name: The record's name: the scenario, or `<scenario>_diagnostics` for
      a table 4 run.
    scenario: The scenario.
    rows: One dict per evaluation: `round` (int) and `METRICS` (floats),
      round 0 first.
    settings: The run's settings (`Config` as a dict, with `switch_round`).
    data: One sentence on the data.
    machine: Where it ran.
    date: When it finished (UTC).
    command: The command line that ran it.
    seconds: Wall-clock seconds of the invocation that finished it.
    seconds_per_round: Of those, per round it trained.
    resumed_from: The round it resumed from (0: one invocation ran it all,
      so `seconds` is its whole wall time).
    diagnostics: For a table 4 run: `max_g2`, `max_b2`, `first_round`,
      `last_round`; else `None`.
  """

  name: str
  scenario: str
  rows: list[dict[str, float]]
  settings: dict[str, Any]
  data: str
  machine: str
  date: str
  command: str
  seconds: float
  seconds_per_round: float
  resumed_from: int
  diagnostics: Optional[dict[str, float]] = None

  @property
  def rounds(self) -> int:
    return int(self.rows[-1]['round'])


LAYOUT = run_store.Layout(sort_keys=False, metrics_suffix=METRICS_SUFFIX,
                          columns=COLUMNS,
                          format_value=lambda value: f'{value:.6g}')


def _store(records_dir: str) -> run_store.RecordStore:
  return run_store.RecordStore(records_dir, LAYOUT,
                               'delete it (and its CSV) to run it again')


def write_record(records_dir: str, record: ScenarioRecord) -> None:
  """Writes `<name>.csv` and `<name>.json` atomically (the JSON last: a
  record counts once its JSON is there)."""
  _store(records_dir).write(record.name, record._asdict())


def _record(store: run_store.RecordStore, name: str) -> ScenarioRecord:
  record = store.read_as(name, lambda fields: ScenarioRecord(**fields))
  if not record.rows:
    raise store.damaged(name, 'no evaluation rows')
  return record


def read_records(records_dir: str) -> dict[str, ScenarioRecord]:
  """Every record in `records_dir` by name (none if it does not exist).

  Raises:
    ValueError: If a record is damaged (named in the message).
  """
  store = _store(records_dir)
  return {name: _record(store, name) for name in store.names()}


# Settings added after records were kept, each with the value the runs made
# before it had: a record without one was made at that value. Each sets how
# a run trains, not what it computes (members in lockstep give the numbers
# of the member loop), so older records stay those of their settings.
ADDED_SETTINGS = {'members_at_once': 0}


def recorded(records_dir: str, name: str, settings: dict[str, Any],
             data: str) -> Optional[ScenarioRecord]:
  """The record `name` if it was made with these settings and data (a
  setting of `ADDED_SETTINGS` it lacks counting as its value there);
  else None: a record of other settings is run again and replaced."""
  store = _store(records_dir)
  if run_store.kept(store, name, dict(settings, data=data),
                    settings_of=lambda f: dict(f['settings'], data=f['data']),
                    on_differs=run_store.REPLACE,
                    behaviour_before=ADDED_SETTINGS) is None:
    return None
  return _record(store, name)
