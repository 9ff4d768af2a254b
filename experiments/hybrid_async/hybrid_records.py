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
"""The hybrid experiment's runs kept on disk, and what they must match.

Each finished run is a small JSON file (`kept_run`): its rows, Feddle's
diagnostics and the fingerprint of the configuration and data that made
it. A run found with the same fingerprint is read back instead of run
again, so an interrupted experiment resumes where it stopped and a report
is rebuilt from the kept runs without training; one made before its
method's behaviour changed is outdated and run again
(`kept_config_status`); one made with other values is an error. The rows
of an earlier protocol's records are kept apart (`save_earlier_runs`), for
a section to compare them with the runs that replaced them.
"""

from collections.abc import Callable, Mapping, Sequence
import hashlib
import json
import os
from typing import Any, NamedTuple, Optional

from absl import logging

from experiments.common import run_store
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
import tff_mixed
from tff_mixed.asynchronous import staleness
from tff_mixed.training import reports as reports_lib


# Fields of a run's record that say how a method behaves, each added when
# that behaviour changed, with the behaviour a record made before (without
# the field) stands for. A kept run that differs from the one wanted only
# there was made by older code: it is outdated, and run again.
#   fedasync_staleness_unit: FedAsync counted staleness in rounds.
#   feddf_teachers: FedDF distilled every arrival since its last
#     distillation, once a round, where it now distills each merge's buffer.
FEDDF_TEACHERS = 'merged_buffer'
BEHAVIOUR_BEFORE = {
    'fedasync_staleness_unit': staleness.ROUNDS,
    'feddf_teachers': 'arrivals_since_distillation',
}
# A kept run is one line; a study's record (the asynchronous study's,
# Feddle span's) one line without a newline.
LAYOUT = run_store.ONE_LINE
STUDY_LAYOUT = run_store.BARE_LINE
# An earlier protocol's rows (`save_earlier_runs`).
EARLIER_LAYOUT = run_store.Layout(indent=1)
MATCHES, OUTDATED, DIFFERS = (run_store.MATCHES, run_store.OUTDATED,
                              run_store.DIFFERS)


def method_fields(fields: dict[str, Any], method: str) -> dict[str, Any]:
  """A config's `fields` as `method`'s runs record them: the behaviour
  fields only where they change the run (FedAsync's staleness unit when a
  staleness discount a > 0 applies; FedDF's teacher set), so that the other
  methods' kept runs stay valid."""
  fields = dict(fields)
  if method != hybrid_config.FEDASYNC or not fields['fedasync_a']:
    del fields['fedasync_staleness_unit']
  if method in (hybrid_config.FEDDF_ID, hybrid_config.FEDDF_OOD):
    fields['feddf_teachers'] = FEDDF_TEACHERS
  return fields


def config_record(config: hybrid_config.Config,
                  method: str) -> dict[str, Any]:
  """`config` as a JSON-able dict, as the studies' records of `method`'s
  runs keep it."""
  return method_fields({k: list(v) if isinstance(v, tuple) else v
                        for k, v in config._asdict().items()}, method)


def kept_config_status(kept: dict[str, Any], want: dict[str, Any],
                       every_field: bool = False) -> str:
  """MATCHES, OUTDATED or DIFFERS: a kept record's config against `want`.

  A behaviour field `want` has and the record lacks is read as the
  behaviour before it (`BEHAVIOUR_BEFORE`); a record that differs there
  is OUTDATED, whatever else differs (e.g. values a new search selected):
  older code made it, so it is run again. Compared on the fields the record
  knows (fields added to `Config` later keep the earlier behaviour by
  default), or, with `every_field`, on the fields of either.
  """
  return run_store.settings_status(kept, want, every_field=every_field,
                                   behaviour_before=BEHAVIOUR_BEFORE)[0]


def store(records_dir: str, layout: run_store.Layout = LAYOUT
          ) -> run_store.RecordStore:
  """The kept records of `records_dir`: kept runs (one line each), or with
  `layout` the studies' records."""
  return run_store.RecordStore(
      records_dir, layout,
      'use a new --output_dir, or remove it to run it again')


def kept_config(records_dir: str, name: str, want: dict[str, Any],
                every_field: bool = False) -> Optional[dict[str, Any]]:
  """The study record `name` (its config under `config`) if it was made
  with `want`; None if there is none or it is outdated
  (`kept_config_status`: run it again); a ValueError if it differs."""
  return run_store.kept(store(records_dir, STUDY_LAYOUT), name, want,
                        settings_of=lambda fields: fields['config'],
                        every_field=every_field,
                        behaviour_before=BEHAVIOUR_BEFORE)


def keep_record(records_dir: str, name: str, record: NamedTuple) -> None:
  """Writes a study's `record` (its config under `config`) as `name`."""
  store(records_dir, STUDY_LAYOUT).write(name, record._asdict())


def read_records(records_dir: str,
                 record_type: Callable[..., Any]) -> list[Any]:
  """Every `*.json` record in `records_dir` as `record_type(**fields)`,
  by file name (none if the directory does not exist); a ValueError names
  a file that is not one."""
  records_store = store(records_dir)
  return [records_store.read_as(name, lambda fields: record_type(**fields))
          for name in records_store.names()]


def run_key(method: str, setting: hybrid_config.Setting, seed: int) -> str:
  delay = ('none' if method in hybrid_config.DELAY_FREE
           else f'{setting.delay_std:g}')
  split = ('identities' if setting.alpha is hybrid_config.IDENTITIES
           else f'alpha{setting.alpha:g}')
  return f'{method}_{split}_delay{delay}_seed{seed}'


def run_fingerprint(config: hybrid_config.Config, description: str,
                    method: str) -> dict[str, Any]:
  """What a kept run must match to be reused (the setting is in its name).

  `center_once` only for Center, the one method it changes, and
  `feddle_atlas_size` and `fedbuff_staleness_exponent` only away from their
  defaults: runs kept before either existed stay valid. The behaviour
  fields as `method_fields` gives them: FedAsync's and FedDF's runs kept
  before their behaviour changed are outdated (`kept_config_status`).
  """
  fields = method_fields(config._asdict(), method)
  del fields['alpha'], fields['delay_std']
  if method != hybrid_config.CENTER:
    del fields['center_once']
  for name in ('feddle_atlas_size', 'fedbuff_staleness_exponent'):
    if not fields[name]:
      del fields[name]
  fields['conv_filters'] = list(fields['conv_filters'])
  return dict(fields, data=description)


def key_digest(key: Mapping[str, Any]) -> str:
  """16 hex digits of a JSON-able key's SHA-256: a file name that changes
  whenever the key does (kept checkpoints, pretrained backbones)."""
  return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()
                        ).hexdigest()[:16]


def kept_run(runs_dir: str, key: str, method: str,
             data: hybrid_config.Data, config: hybrid_config.Config,
             seed: int, cache: dict,
             clients_per_group: int = tff_mixed.simulation.AUTO,
             checkpoint_dir: Optional[str] = None) -> hybrid_runs.MethodRun:
  """`hybrid_runs.run_method`'s run, kept in `runs_dir` as `key`: read back
  if it is there (made with the same config and data), else run and saved.

  With `checkpoint_dir`, a run not kept yet saves its state there after
  every round, in a file named after the run and a digest of its
  configuration (another configuration starts afresh, never from it), and
  resumes from it: a run longer than a sitting survives an interruption.
  The file is removed once the run is kept.

  Raises:
    ValueError: If `runs_dir` holds a run `key` made with another
      configuration, or unreadable.
  """
  fingerprint = run_fingerprint(config, data.description, method)
  label = hybrid_config.Setting(config.alpha, config.delay_std).label
  run = load_run(runs_dir, key, fingerprint)
  if run is not None:
    logging.info('%s: %s, seed %d: kept run', label, method, seed)
    return run
  logging.info('%s: %s, seed %d', label, method, seed)
  checkpoint = None
  if checkpoint_dir:
    checkpoint = os.path.join(
        reports_lib.make_directory(checkpoint_dir, 'checkpoint directory'),
        f'{key}-{key_digest(fingerprint)}.pkl')
  run = hybrid_runs.run_method(method, data, config, seed, cache,
                               clients_per_group, checkpoint_path=checkpoint)
  save_run(runs_dir, key, fingerprint, run)
  if checkpoint and os.path.exists(checkpoint):
    os.remove(checkpoint)
  return run


def save_run(runs_dir: str, key: str, fingerprint: dict[str, Any],
             run: hybrid_runs.MethodRun) -> None:
  """Keeps `run`, made with `fingerprint`, in `runs_dir` as `key`."""
  store(runs_dir).write(key, dict(
      fingerprint=fingerprint, rows=[r._asdict() for r in run.rows],
      diagnostics=run.diagnostics, notes=run.notes))


def load_run(runs_dir: str, key: str, fingerprint: dict[str, Any]
             ) -> Optional[hybrid_runs.MethodRun]:
  """The run kept in `runs_dir` as `key`; None if there is none or it is
  outdated (made before its method's behaviour changed:
  `kept_config_status`); an error if its config differs."""
  runs = store(runs_dir)
  kept = run_store.kept(runs, key, fingerprint,
                        settings_of=lambda fields: fields['fingerprint'],
                        behaviour_before=BEHAVIOUR_BEFORE)
  if kept is None:
    return None
  try:
    return hybrid_runs.MethodRun([hybrid_runs.RunRow(**r)
                                  for r in kept['rows']],
                                 kept['diagnostics'], kept['notes'])
  except (KeyError, TypeError) as e:
    raise runs.damaged(key, e) from None


# What `save_earlier_runs` keeps of a method's records before they are run
# again under a changed protocol: the values that changed.
EARLIER_FIELDS = ('buffer_size', 'server_lr', 'feddle_search_optimizer',
                  'feddle_search_lr', 'feddle_search_epochs',
                  'feddle_atlas_size', 'server_sgd_lr', 'server_epochs')


def method_of_record(name: str,
                     methods: Sequence[str] = hybrid_config.METHODS
                     ) -> Optional[str]:
  """The method of `methods` whose run a kept record's file `name`
  (`run_key`) holds, None for another file. The longest name matches first
  (fedavg_delayed before fedavg)."""
  return next((m for m in sorted(methods, key=len, reverse=True)
               if name.startswith((m + '_alpha', m + '_identities'))), None)


def save_earlier_runs(runs_dir: str, methods: Sequence[str],
                      path: str) -> int:
  """Keeps at `path` the rows of `methods`' records in `runs_dir` (and
  each method's `EARLIER_FIELDS`), before the records are replaced.

  The records' fingerprints are not checked: they belong to the earlier
  protocol. `hybrid_report.earlier_protocol_lines` compares them with the
  new runs.

  Returns:
    How many records were kept.
  """
  rows, fields, count = [], {}, 0
  runs = store(runs_dir)
  for name in runs.names():
    method = method_of_record(name, methods)
    if method is None:
      continue
    kept = runs.read(name)
    rows += kept['rows']
    fields.setdefault(method, {k: kept['fingerprint'].get(k)
                               for k in EARLIER_FIELDS})
    count += 1
  directory, name = os.path.split(os.path.splitext(path)[0])
  run_store.RecordStore(directory, EARLIER_LAYOUT).write(
      name, dict(rows=rows, fields=fields))
  return count
