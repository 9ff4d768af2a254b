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
"""The files of a finished scenario's small committed record.

A paper's horizon takes hours to days on a small machine, and a run that is
interrupted, or continued on another machine, may have lost `outputs/`
(checkpoints, converted data). So the long experiments (`movielens_records`,
`lm_records`) leave, per finished scenario, a record small enough to commit:
its evaluations (a CSV, one row per evaluated round: `round`, then float
columns) and a JSON summary (the record's other fields, and `metrics`, the
CSV's name). A later run reads the finished scenarios back and adds the
missing ones, so an experiment resumes after an interruption. This module
holds what those records share: writing the two files, reading them back,
listing them. Each experiment keeps its own record type, file names, number
format and error messages.
"""

import csv
import io
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from tff_mixed.training import reports as reports_lib

JSON_SUFFIX = '.json'


def paths(records_dir: str, name: str,
          metrics_suffix: str) -> tuple[str, str]:
  """`(json_path, metrics_path)` of the record `name`."""
  base = os.path.join(records_dir, name)
  return base + JSON_SUFFIX, base + metrics_suffix


def write(records_dir: str, name: str, record: NamedTuple,
          columns: Sequence[str], format_value: Callable[[Any], str],
          metrics_suffix: str, sort_keys: bool = False) -> None:
  """Writes the record's metrics CSV and JSON summary.

  Each file is written atomically, the CSV first, so a JSON summary never
  names rows that are not there.

  Args:
    records_dir: The records' directory (created if missing).
    name: The record's name: its files are `<name>.json` and
      `<name><metrics_suffix>`.
    record: A NamedTuple whose `rows` are dicts with `columns`; its other
      fields make the summary.
    columns: `round`, then the float columns of a row.
    format_value: A float column's value as CSV text.
    metrics_suffix: How the CSV's name ends.
    sort_keys: Whether the JSON summary's keys are sorted.
  """
  reports_lib.make_directory(records_dir, 'records directory')
  json_path, metrics_path = paths(records_dir, name, metrics_suffix)
  out = io.StringIO()
  writer = csv.writer(out, lineterminator='\n')
  writer.writerow(columns)
  for row in record.rows:
    writer.writerow([int(row[columns[0]])]
                    + [format_value(row[c]) for c in columns[1:]])
  reports_lib.atomic_write_text(metrics_path, out.getvalue())
  summary = record._asdict()
  del summary['rows']
  summary['metrics'] = os.path.basename(metrics_path)
  reports_lib.atomic_write_text(
      json_path, json.dumps(summary, indent=2, sort_keys=sort_keys) + '\n')


def read(json_path: str, record_type: type[NamedTuple],
         columns: Sequence[str]) -> Any:
  """The `record_type` written to `json_path` (and its metrics CSV).

  Raises:
    OSError, ValueError, KeyError, TypeError: If the record is missing,
      damaged (a CSV with other `columns`, a value that is no number) or of
      another type. The callers name the record in their own message.
  """
  with open(json_path) as f:
    summary = json.load(f)
  metrics_path = os.path.join(os.path.dirname(json_path), summary['metrics'])
  del summary['metrics']
  with open(metrics_path) as f:
    reader = csv.DictReader(f)
    if tuple(reader.fieldnames or ()) != tuple(columns):
      raise ValueError(f'columns {reader.fieldnames}, expected '
                       f'{list(columns)}')
    rows = [{columns[0]: int(r[columns[0]]),
             **{c: float(r[c]) for c in columns[1:]}} for r in reader]
  return record_type(rows=rows, **summary)


def names(records_dir: str) -> list[str]:
  """The names of the records in `records_dir` (those of its `.json`
  files), sorted; none if it does not exist."""
  try:
    files = os.listdir(records_dir)
  except FileNotFoundError:
    return []
  return sorted(f[:-len(JSON_SUFFIX)] for f in files
                if f.endswith(JSON_SUFFIX))


def differing_settings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
  """The names of the settings in which `a` and `b` differ."""
  return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
