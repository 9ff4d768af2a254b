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
"""The experiments' one persistence layer: records written, read back,
kept or made, and every committed record family spelled byte for byte."""

import glob
import json
import os
import shutil
import tempfile

from absl.testing import absltest

from experiments.common import run_store
from experiments.hybrid_async import hybrid_records
from experiments.movielens import movielens_records
from experiments.stackoverflow_wikipedia import lm_records

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RESULTS = os.path.join(_REPO, 'docs', 'results')
_SPLIT = run_store.Layout(sort_keys=False, metrics_suffix='_m.csv',
                          columns=('round', 'accuracy'))

# Each committed family of records (a glob under docs/results) and the
# layout its study writes it with.
_FAMILIES = (
    ('stackoverflow_wikipedia*/*.json', lm_records.LAYOUT),
    ('movielens*/*.json', movielens_records.LAYOUT),
    ('movielens*/diagnostics/*.json', movielens_records.LAYOUT),
    ('movielens*/reference/*.json', run_store.INDENTED),
    ('celeba_bgd_inputs/*.json', run_store.INDENTED),
    ('advice/*.json', run_store.INDENTED),
    ('hybrid_async_celeba/*.json', hybrid_records.LAYOUT),
    ('hybrid_async_cifar10/transferred/*.json', hybrid_records.LAYOUT),
    ('hybrid_async_tuned/*/*.json', hybrid_records.LAYOUT),
    ('hybrid_async_tuned/earlier_protocol/*.json',
     hybrid_records.EARLIER_LAYOUT),
    ('hybrid_async_tuned/*/*/*.json', hybrid_records.LAYOUT),
    ('hybrid_tuning/*/points/*/*/*.json', hybrid_records.LAYOUT),
    ('hybrid_async_study/*.json', hybrid_records.STUDY_LAYOUT),
    ('feddle_span*/*.json', hybrid_records.STUDY_LAYOUT),
)
# A tuning search's selection (`tune_lib`), not a kept run.
_SELECTED = 'selected.json'


def _read_bytes(path: str) -> bytes:
  with open(path, 'rb') as f:
    return f.read()


class RecordStoreTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
    self.store = run_store.RecordStore(self.dir, _SPLIT, 'start over')

  def test_split_files_and_round_trip(self):
    fields = dict(name='a', rows=[dict(round=0, accuracy=0.5),
                                  dict(round=10, accuracy=0.75)],
                  settings=dict(z=1, b=2))
    self.assertEqual(self.store.write('a', fields), self.store.path('a'))
    self.assertEqual(_read_bytes(self.store.metrics_path('a')),
                     b'round,accuracy\n0,0.5\n10,0.75\n')
    # The other fields in the order given, the CSV's name last.
    self.assertEqual(
        _read_bytes(self.store.path('a')),
        b'{\n  "name": "a",\n  "settings": {\n    "z": 1,\n    "b": 2\n'
        b'  },\n  "metrics": "a_m.csv"\n}\n')
    self.assertEqual(self.store.read('a'), fields)
    self.assertIn('rows', fields)  # The caller's fields are not consumed.

  def test_inline_layouts(self):
    fields = dict(b=[1, 2], a=0.1)
    for layout, text in ((run_store.INDENTED,
                          '{\n  "a": 0.1,\n  "b": [\n    1,\n    2\n  ]\n}\n'),
                         (run_store.ONE_LINE, '{"b": [1, 2], "a": 0.1}\n'),
                         (run_store.BARE_LINE, '{"b": [1, 2], "a": 0.1}')):
      store = run_store.RecordStore(self.dir, layout)
      store.write('x', fields)
      self.assertEqual(_read_bytes(store.path('x')).decode(), text)
      self.assertEqual(store.read('x'), fields)

  def test_damaged_records_are_named(self):
    self.store.write('a', dict(rows=[dict(round=0, accuracy=0.5)]))
    with open(self.store.metrics_path('a'), 'w') as f:
      f.write('round,loss\n0,1.0\n')
    with self.assertRaisesRegex(
        ValueError, r"a\.json cannot be read \(a_m\.csv has columns "
        r"\['round', 'loss'\].*start over"):
      self.store.read('a')
    with open(self.store.path('b'), 'w') as f:
      f.write('[1]')
    with self.assertRaisesRegex(ValueError, r'b\.json cannot be read \(a '
                                'JSON list'):
      self.store.read('b')
    self.assertIsNone(self.store.read('none'))
    self.assertIsNone(self.store.read_as('none', dict))

  def test_read_as_names_fields_its_type_refuses(self):
    store = run_store.RecordStore(self.dir, run_store.INDENTED, 'start over')
    store.write('a', dict(x=1))
    self.assertEqual(store.read_as('a', lambda fields: fields['x']), 1)
    with self.assertRaisesRegex(ValueError, r"a\.json cannot be read \('y'\); "
                                'start over'):
      store.read_as('a', lambda fields: fields['y'])

  def test_names(self):
    self.assertEqual(run_store.RecordStore(
        os.path.join(self.dir, 'none')).names(), [])
    self.assertFalse(os.path.exists(os.path.join(self.dir, 'none')))
    for name in ('b', 'a'):
      self.store.write(name, dict(rows=[]))
    self.assertEqual(self.store.names(), ['a', 'b'])
    self.assertEqual(list(self.store.read_all()), ['a', 'b'])


class SettingsTest(absltest.TestCase):

  def test_differing_settings(self):
    self.assertEqual(run_store.differing_settings(
        dict(a=1, b=2, c=3), dict(a=1, b=3, d=4)), ['b', 'c', 'd'])
    self.assertEqual(run_store.differing_settings(
        dict(a=1, b=2, c=3), dict(a=1, b=3, d=4), every_field=False),
        ['b', 'c'])
    self.assertEqual(run_store.differing_settings(dict(a=1), dict(a=1)), [])

  def test_a_behaviour_before_makes_a_record_outdated(self):
    before = dict(unit='rounds')
    want = dict(lr=0.1, unit='steps')
    # Made before `unit` existed: it counted rounds, so it is outdated,
    # whatever else differs.
    self.assertEqual(run_store.settings_status(
        dict(lr=0.5), want, behaviour_before=before),
        (run_store.OUTDATED, ['lr', 'unit']))
    # Made before, with today's behaviour as its default: it matches.
    self.assertEqual(run_store.settings_status(
        dict(lr=0.1), dict(lr=0.1, unit='rounds'), behaviour_before=before),
        (run_store.MATCHES, []))
    # Made since with another value: it differs.
    self.assertEqual(run_store.settings_status(
        dict(lr=0.1, unit='rounds'), want, behaviour_before=before),
        (run_store.DIFFERS, ['unit']))


class KeptOrMadeTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
    self.store = run_store.RecordStore(self.dir, run_store.INDENTED,
                                       'remove it')
    self.made = []

  def _make(self, value):
    def make():
      self.made.append(value)
      return dict(settings=dict(lr=0.1, sizes=[1, 2]), value=value)
    return make

  def test_made_once_then_read_back(self):
    want = dict(lr=0.1, sizes=(1, 2))  # JSON reads the tuple as a list.
    first = run_store.kept_or_made(self.store, 'r', want, self._make(1))
    again = run_store.kept_or_made(self.store, 'r', want, self._make(2))
    self.assertEqual(self.made, [1])
    self.assertEqual(first, again)
    self.assertEqual(again['value'], 1)

  def test_other_settings_are_refused_or_replaced(self):
    run_store.kept_or_made(self.store, 'r', dict(lr=0.1, sizes=[1, 2]),
                           self._make(1))
    with self.assertRaisesRegex(
        ValueError, r'r\.json was made with other settings \(lr\): lr: 0\.1 '
        r'there, 0\.5 now; remove it\.'):
      run_store.kept_or_made(self.store, 'r', dict(lr=0.5, sizes=[1, 2]),
                             self._make(2))
    self.assertEqual(self.made, [1])
    replaced = run_store.kept_or_made(
        self.store, 'r', dict(lr=0.5, sizes=[1, 2]), self._make(3),
        on_differs=run_store.REPLACE)
    self.assertEqual((self.made, replaced['value']), ([1, 3], 3))
    with self.assertRaisesRegex(ValueError, 'on_differs'):
      run_store.kept(self.store, 'r', {}, on_differs='ignore')

  def test_a_record_without_settings_is_named(self):
    self.store.write('r', dict(value=1))
    with self.assertRaisesRegex(ValueError, r'r\.json cannot be read \(no '
                                'settings'):
      run_store.kept(self.store, 'r', dict(lr=0.1))


class CommittedRecordsTest(absltest.TestCase):
  """Every committed record reads back and is written byte for byte as it
  is: the store never reformats what a study committed."""

  def test_every_family_rewrites_byte_identically(self):
    target = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, target, ignore_errors=True)
    seen = set()
    for pattern, layout in _FAMILIES:
      # Each file of one family only (the earlier protocol's rows are under
      # the tuned runs' glob too).
      paths = [p for p in sorted(glob.glob(os.path.join(_RESULTS, pattern)))
               if os.path.basename(p) != _SELECTED
               and ('earlier_protocol' in pattern
                    or '/earlier_protocol/' not in p)]
      self.assertNotEmpty(paths, pattern)
      for path in paths:
        directory, name = os.path.split(path[:-len(run_store.JSON_SUFFIX)])
        store = run_store.RecordStore(directory, layout)
        out = run_store.RecordStore(os.path.join(target, str(len(seen))),
                                    layout)
        out.write(name, store.read(name))
        self.assertEqual(_read_bytes(out.path(name)), _read_bytes(path), path)
        if layout.metrics_suffix:
          self.assertEqual(_read_bytes(out.metrics_path(name)),
                           _read_bytes(store.metrics_path(name)), path)
        seen.add(path)
    # The families cover every committed record but the advisors' own
    # files (`<records>/advice/`) and the searches' selections.
    everything = {p for p in glob.glob(os.path.join(_RESULTS, '**', '*.json'),
                                       recursive=True)
                  if not p.endswith(os.path.join('advice', 'advice.json'))
                  and os.path.basename(p) != _SELECTED}
    self.assertEqual(everything - seen, set())

  def test_movielens_files(self):
    directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
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
    movielens_records.write_record(directory, record)
    json_path, metrics_path = movielens_records.paths(directory, 'baseline')
    self.assertEqual(
        _read_bytes(metrics_path),
        b'round,recall_at_10,hinge_loss\n0,0.1,0.9\n'
        b'10,0.3333333333333333,0.5\n')
    summary = json.loads(_read_bytes(json_path))
    self.assertEqual(summary['metrics'], 'baseline_metrics.csv')
    self.assertEqual(list(summary), sorted(summary))
    self.assertEqual(movielens_records.read_record(directory, 'baseline'),
                     record)


if __name__ == '__main__':
  absltest.main()
