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
"""The shared record files: written, read back, and the committed ones."""

import json
import os
import shutil
import tempfile
from typing import Any, NamedTuple

from absl.testing import absltest

from experiments.common import run_records
from experiments.movielens import movielens_records
from experiments.stackoverflow_wikipedia import lm_records

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LM_RECORDS = os.path.join(_REPO, 'docs', 'results', 'stackoverflow_wikipedia')
_COLUMNS = ('round', 'accuracy')


class _Record(NamedTuple):
  name: str
  rows: list[dict[str, float]]
  settings: dict[str, Any]


def _read_bytes(path: str) -> bytes:
  with open(path, 'rb') as f:
    return f.read()


class RunRecordsTest(absltest.TestCase):
  """The shared files, and the two experiments' records through them."""

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

  def _write(self, record, **kwargs):
    run_records.write(self.dir, record.name, record, _COLUMNS, repr,
                      '_m.csv', **kwargs)

  def test_files_and_round_trip(self):
    record = _Record('a', [dict(round=0, accuracy=0.5),
                           dict(round=10, accuracy=0.75)], dict(z=1, b=2))
    self._write(record, sort_keys=True)
    json_path, metrics_path = run_records.paths(self.dir, 'a', '_m.csv')
    self.assertEqual(_read_bytes(metrics_path),
                     b'round,accuracy\n0,0.5\n10,0.75\n')
    self.assertEqual(
        json.loads(_read_bytes(json_path)),
        dict(name='a', settings=dict(b=2, z=1), metrics='a_m.csv'))
    self.assertLess(_read_bytes(json_path).index(b'"metrics"'),
                    _read_bytes(json_path).index(b'"name"'))
    self.assertEqual(run_records.read(json_path, _Record, _COLUMNS), record)

  def test_damaged_columns_are_an_error(self):
    self._write(_Record('a', [dict(round=0, accuracy=0.5)], {}))
    _, metrics_path = run_records.paths(self.dir, 'a', '_m.csv')
    with open(metrics_path, 'w') as f:
      f.write('round,loss\n0,1.0\n')
    with self.assertRaisesRegex(ValueError, "columns \\['round', 'loss'\\]"):
      run_records.read(os.path.join(self.dir, 'a.json'), _Record, _COLUMNS)

  def test_names(self):
    self.assertEqual(run_records.names(os.path.join(self.dir, 'none')), [])
    for name in ('b', 'a'):
      self._write(_Record(name, [dict(round=0, accuracy=0.5)], {}))
    self.assertEqual(run_records.names(self.dir), ['a', 'b'])

  def test_differing_settings(self):
    self.assertEqual(run_records.differing_settings(
        dict(a=1, b=2, c=3), dict(a=1, b=3, d=4)), ['b', 'c', 'd'])
    self.assertEqual(run_records.differing_settings(dict(a=1), dict(a=1)),
                     [])

  def test_committed_lm_records_rewrite_byte_identically(self):
    records = lm_records.read_records(_LM_RECORDS)
    self.assertIn('oracle', records)
    for record in records.values():
      lm_records.write_record(self.dir, record)
    # The records' files (the advisor's advice/ subdirectory is not one).
    committed = sorted(n for n in os.listdir(_LM_RECORDS)
                       if os.path.isfile(os.path.join(_LM_RECORDS, n)))
    self.assertEqual(sorted(os.listdir(self.dir)), committed)
    for name in committed:
      self.assertEqual(_read_bytes(os.path.join(self.dir, name)),
                       _read_bytes(os.path.join(_LM_RECORDS, name)), name)
    self.assertEqual(lm_records.read_records(self.dir), records)

  def test_movielens_files(self):
    record = movielens_records.ScenarioRecord(
        scenario='baseline', rounds=10,
        rows=[dict(round=0, recall_at_10=0.1, hinge_loss=0.9),
              dict(round=10, recall_at_10=1 / 3, hinge_loss=0.5)],
        # Settings that name the model's forms read back as written (those
        # that do not are the earlier forms': movielens_reference_test).
        settings=dict(rounds_per_eval=10, context_layer='relu_dense'),
        costs=dict(flops=1.0),
        mean_keys=40.0, seconds=3.0, seconds_complete=True,
        seconds_per_round=0.3, machine='m', date='d', command='c')
    movielens_records.write_record(self.dir, record)
    json_path, metrics_path = movielens_records.paths(self.dir, 'baseline')
    self.assertEqual(
        _read_bytes(metrics_path),
        b'round,recall_at_10,hinge_loss\n0,0.1,0.9\n'
        b'10,0.3333333333333333,0.5\n')
    summary = json.loads(_read_bytes(json_path))
    self.assertEqual(summary['metrics'], 'baseline_metrics.csv')
    self.assertEqual(list(summary), sorted(summary))
    self.assertEqual(movielens_records.read_record(self.dir, 'baseline'),
                     record)


if __name__ == '__main__':
  absltest.main()
