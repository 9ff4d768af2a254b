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
"""Kept runs: the experiments' one persistence layer.

A paper's horizon takes hours to days on a small machine, and a run that is
interrupted, or continued on another machine, may have lost `outputs/`. So
every study keeps each finished run (or reference row, or probe) as a small
record that can be committed: a JSON object, with its evaluation rows either
inline or in a CSV beside it (one row per evaluated round: `round`, then
float columns). A later invocation reads a record back instead of training
it again if it was made with the settings wanted, so a study resumes after
an interruption and its report is rebuilt from the records alone.

- `Layout`: how one family of records is spelled, byte for byte. Records
  are committed, so the store never reformats one: each study keeps its
  spelling (indentation, key order, trailing newline, CSV number format).
- `RecordStore`: one directory of records of one layout: names, atomic
  writes (the CSV before the JSON that names it), reads whose errors name
  the file.
- `settings_status`: a kept record's settings against the wanted ones:
  MATCHES, OUTDATED (made before a behaviour changed: run again) or DIFFERS.
- `kept_or_made`: read a record back if it matches, else make and write it.
"""

import csv
import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Optional

from absl import logging

from tff_mixed.training import reports as reports_lib

JSON_SUFFIX = '.json'
# The field of a split record's JSON that names its CSV, and the field that
# holds its rows once read.
METRICS_FIELD = 'metrics'
ROWS_FIELD = 'rows'


class Layout(NamedTuple):
  """How the records of one family are spelled on disk.

  Attributes:
    indent: `json.dumps`'s indent; None writes one line.
    sort_keys: Whether the JSON's keys are sorted (else in the order given).
    newline: Whether the JSON ends with a newline.
    metrics_suffix: With a suffix, a record's `rows` are written to
      `<name><metrics_suffix>` (a CSV with `columns`) and the JSON names it
      in `metrics`; without, the rows (if any) stay in the JSON.
    columns: The CSV's columns: `round` (an int), then float columns.
    format_value: A float column's value as CSV text.
  """

  indent: Optional[int] = 2
  sort_keys: bool = True
  newline: bool = True
  metrics_suffix: Optional[str] = None
  columns: tuple[str, ...] = ()
  format_value: Callable[[Any], str] = repr

  def dumps(self, fields: Mapping[str, Any]) -> str:
    """`fields` as this layout writes them."""
    text = json.dumps(dict(fields), indent=self.indent,
                      sort_keys=self.sort_keys)
    return text + '\n' if self.newline else text


# The spellings that have no study of their own: indented with sorted keys
# (reference rows, diagnostics records, advice), one line ending in a
# newline (the hybrid experiment's kept runs), one bare line (the
# asynchronous study's and Feddle span's records).
INDENTED = Layout()
ONE_LINE = Layout(indent=None, sort_keys=False)
BARE_LINE = Layout(indent=None, sort_keys=False, newline=False)


class RecordStore:
  """The records of one directory, all of one `Layout`.

  A record is a dict of JSON-able fields; a split layout's record also has
  `rows` (dicts with the layout's columns), read from and written to its
  CSV. Nothing is written until a record is: an empty store needs no
  directory.
  """

  def __init__(self, directory: str, layout: Layout = INDENTED,
               remedy: str = 'delete it to make it again'):
    """A store of `directory`'s records.

    Args:
      directory: Where the records are (created by the first write).
      layout: How they are spelled.
      remedy: What an error about a record tells the user to do.
    """
    self.directory = directory
    self.layout = layout
    self.remedy = remedy

  def path(self, name: str) -> str:
    """The JSON file of the record `name`."""
    return os.path.join(self.directory, name + JSON_SUFFIX)

  def metrics_path(self, name: str) -> Optional[str]:
    """The CSV of the record `name` (None for an inline layout)."""
    suffix = self.layout.metrics_suffix
    return None if suffix is None else os.path.join(self.directory,
                                                    name + suffix)

  def names(self) -> list[str]:
    """The names of the records here (of the `.json` files), sorted; none
    if the directory does not exist."""
    try:
      files = os.listdir(self.directory)
    except FileNotFoundError:
      return []
    return sorted(f[:-len(JSON_SUFFIX)] for f in files
                  if f.endswith(JSON_SUFFIX))

  def exists(self, name: str) -> bool:
    return os.path.exists(self.path(name))

  def write(self, name: str, fields: Mapping[str, Any]) -> str:
    """Writes the record `name` atomically; returns its JSON's path.

    A split layout writes the CSV of `fields['rows']` first and then the
    JSON naming it (after the other fields), so a JSON never names rows
    that are not there.
    """
    reports_lib.make_directory(self.directory, 'records directory')
    fields = dict(fields)
    metrics_path = self.metrics_path(name)
    if metrics_path is not None:
      columns = self.layout.columns
      out = io.StringIO()
      writer = csv.writer(out, lineterminator='\n')
      writer.writerow(columns)
      for row in fields.pop(ROWS_FIELD):
        writer.writerow([int(row[columns[0]])]
                        + [self.layout.format_value(row[c])
                           for c in columns[1:]])
      reports_lib.atomic_write_text(metrics_path, out.getvalue())
      fields[METRICS_FIELD] = os.path.basename(metrics_path)
    path = self.path(name)
    reports_lib.atomic_write_text(path, self.layout.dumps(fields))
    return path

  def read(self, name: str) -> Optional[dict[str, Any]]:
    """The record `name` (with its `rows` for a split layout), or None if
    there is none.

    Raises:
      ValueError: If it is there but damaged (not JSON, not an object, a
        CSV missing or with other columns, a value that is no number); the
        message names the file and the remedy.
    """
    path = self.path(name)
    if not os.path.exists(path):
      return None
    try:
      return self._read(path)
    except (OSError, ValueError, KeyError, TypeError) as e:
      raise self.damaged(name, e) from None

  def read_as(self, name: str, convert: Callable[[dict[str, Any]], Any]
              ) -> Any:
    """`convert(fields)` of the record `name` (a study's view of it, e.g.
    its record type), or None if there is none.

    Raises:
      ValueError: As `read`, also for fields `convert` refuses (a
        KeyError or TypeError: a field missing or unknown).
    """
    fields = self.read(name)
    if fields is None:
      return None
    try:
      return convert(fields)
    except (KeyError, TypeError) as e:
      raise self.damaged(name, e) from None

  def damaged(self, name: str, reason: Any) -> ValueError:
    """The error for the record `name`, which cannot be read for `reason`."""
    return ValueError(f'{self.path(name)} cannot be read ({reason}); '
                      f'{self.remedy}.')

  def _read(self, path: str) -> dict[str, Any]:
    with open(path) as f:
      fields = json.load(f)
    if not isinstance(fields, dict):
      raise ValueError(f'a JSON {type(fields).__name__}, not an object')
    if self.layout.metrics_suffix is None:
      return fields
    columns = tuple(self.layout.columns)
    metrics = fields.pop(METRICS_FIELD)
    with open(os.path.join(self.directory, metrics)) as f:
      reader = csv.DictReader(f)
      if tuple(reader.fieldnames or ()) != columns:
        raise ValueError(f'{metrics} has columns {reader.fieldnames}, '
                         f'expected {list(columns)}')
      rows = [{columns[0]: int(r[columns[0]]),
               **{c: float(r[c]) for c in columns[1:]}} for r in reader]
    return dict(fields, **{ROWS_FIELD: rows})

  def read_all(self) -> dict[str, dict[str, Any]]:
    """Every record here, by name (`read`'s errors)."""
    return {name: self.read(name) for name in self.names()}


# ----------------------------------------------------------------------------
# Is a kept record the run wanted?

MATCHES, OUTDATED, DIFFERS = 'matches', 'outdated', 'differs'


def differing_settings(kept: Mapping[str, Any], want: Mapping[str, Any], *,
                       every_field: bool = True,
                       behaviour_before: Mapping[str, Any] = None
                       ) -> list[str]:
  """The settings in which a kept record's `kept` differ from `want`.

  Args:
    kept: The kept record's settings.
    want: The settings wanted.
    every_field: Whether a setting only `want` has counts (else only those
      `kept` has are compared: settings added later default to the behaviour
      the record was made with).
    behaviour_before: For settings added when a behaviour changed, the
      behaviour a record made before (without the setting) stands for.
  """
  filled = dict(kept, **{k: v for k, v in (behaviour_before or {}).items()
                         if k in want and k not in kept})
  keys = set(filled) | set(want) if every_field else set(filled)
  return sorted(k for k in keys if filled.get(k) != want.get(k))


def settings_status(kept: Mapping[str, Any], want: Mapping[str, Any], *,
                    every_field: bool = True,
                    behaviour_before: Mapping[str, Any] = None
                    ) -> tuple[str, list[str]]:
  """`(status, differing)`: MATCHES, OUTDATED or DIFFERS, and the settings
  that differ (`differing_settings`).

  A record that differs in a setting of `behaviour_before` it lacks was
  made by code that behaved otherwise: it is OUTDATED (run it again),
  whatever else differs.
  """
  differing = differing_settings(kept, want, every_field=every_field,
                                 behaviour_before=behaviour_before)
  if not differing:
    return MATCHES, differing
  predated = set(behaviour_before or ()) & set(want) - set(kept)
  return (OUTDATED if predated & set(differing) else DIFFERS), differing


def changes(kept: Mapping[str, Any], want: Mapping[str, Any],
            keys: Sequence[str]) -> str:
  """`keys` with their value in `kept` and in `want`, for a message."""
  return ', '.join(f'{k}: {kept.get(k)!r} there, {want.get(k)!r} now'
                   for k in keys)


def other_settings_error(path: str, kept: Mapping[str, Any],
                         want: Mapping[str, Any], keys: Sequence[str],
                         remedy: str) -> ValueError:
  """The error for a record at `path` made with other settings."""
  return ValueError(f'{path} was made with other settings '
                    f'({", ".join(keys)}): {changes(kept, want, keys)}; '
                    f'{remedy}.')


RAISE, REPLACE = 'raise', 'replace'


def settings_field(fields: Mapping[str, Any]) -> Mapping[str, Any]:
  """The settings of a record that keeps them under `settings`."""
  return fields['settings']


def kept(store: RecordStore, name: str, want: Mapping[str, Any], *,
         settings_of: Callable[[Mapping[str, Any]], Mapping[str, Any]]
         = settings_field,
         on_differs: str = RAISE, every_field: bool = True,
         behaviour_before: Mapping[str, Any] = None
         ) -> Optional[dict[str, Any]]:
  """The record `name` if it is kept and was made with `want`, else None
  (none kept, an OUTDATED one, or with REPLACE one of other settings).

  Args:
    store: Where the record is kept.
    name: Its name.
    want: The settings it must have been made with (JSON-able; compared as
      JSON reads them back, so tuples match lists).
    settings_of: A kept record's settings, from its fields.
    on_differs: What a record made with other settings gets: RAISE (an
      error naming it and what differs: it may be hours of training, and
      a report cannot put it beside runs of `want`) or REPLACE (None: it is
      to be made again; the log names what differed).
    every_field, behaviour_before: As in `settings_status`.

  Raises:
    ValueError: For a damaged record, or one of other settings (RAISE).
  """
  if on_differs not in (RAISE, REPLACE):
    raise ValueError(f'on_differs must be {RAISE!r} or {REPLACE!r}, not '
                     f'{on_differs!r}.')
  fields = store.read(name)
  if fields is None:
    return None
  path = store.path(name)
  try:
    kept_settings = settings_of(fields)
  except (KeyError, TypeError) as e:
    raise store.damaged(name, f'no settings: {e}') from None
  want = json.loads(json.dumps(dict(want)))
  status, keys = settings_status(kept_settings, want,
                                 every_field=every_field,
                                 behaviour_before=behaviour_before)
  if status == MATCHES:
    logging.info('%s: kept, read back from %s', name, path)
    return fields
  if status == DIFFERS and on_differs == RAISE:
    raise other_settings_error(path, kept_settings, want, keys, store.remedy)
  logging.info('%s: %s (%s); to be made again', path,
               'made before its behaviour changed' if status == OUTDATED
               else 'made with other settings', ', '.join(keys))
  return None


def kept_or_made(store: RecordStore, name: str, want: Mapping[str, Any],
                 make: Callable[[], Mapping[str, Any]],
                 **how: Any) -> dict[str, Any]:
  """The record `name` made with `want`: read back if it is `kept` (with
  `how`: `kept`'s keyword arguments), else made (`make()` returns its
  fields: it trains, measures) and written.

  Raises:
    ValueError: As `kept`.
  """
  fields = kept(store, name, want, **how)
  if fields is None:
    fields = dict(make())
    store.write(name, fields)
  return fields
