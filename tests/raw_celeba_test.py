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
"""Tests of the raw CelebA to `celeba.sqlite` converter, against TFF's loader.

The round trip goes through `tff.simulation.datasets.celeba.load_data`, TFF's
real loader, reading the converted file from its `cache_dir`.
"""

import collections
import hashlib
import os
import re
import shutil
import sqlite3
import tempfile
from unittest import mock

from absl.testing import absltest
import numpy as np
from PIL import Image
import tensorflow as tf
import tensorflow_federated as tff

from experiments.celeba_smile import celeba_sqlite
from experiments.celeba_smile import raw_celeba_files
from experiments.celeba_smile import raw_celeba_lib
from experiments.common import sqlite_files
from tests import binary_runs
from tests import celeba_testing
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.tasks import celeba_database

# Line 2 of CelebA's list_attr_celeba.txt.
_CELEBA_HEADER = (
    '5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs '
    'Big_Lips Big_Nose Black_Hair Blond_Hair Blurry Brown_Hair Bushy_Eyebrows '
    'Chubby Double_Chin Eyeglasses Goatee Gray_Hair Heavy_Makeup '
    'High_Cheekbones Male Mouth_Slightly_Open Mustache Narrow_Eyes No_Beard '
    'Oval_Face Pale_Skin Pointy_Nose Receding_Hairline Rosy_Cheeks Sideburns '
    'Smiling Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat '
    'Wearing_Lipstick Wearing_Necklace Wearing_Necktie Young')
# Identity -> images; 303 and 707 fall under the default minimum of 5.
_IDENTITIES = {101: 6, 202: 7, 303: 3, 404: 5, 505: 6, 606: 8, 707: 4}
_KEPT = sorted(str(i) for i, n in _IDENTITIES.items() if n >= 5)


def _read_expected(paths: celeba_testing.RawCelebaPaths, present=None):
  """Independently parses a fake raw copy: client -> [(name, image, attrs)]."""
  with open(paths.attr_file) as f:
    lines = f.read().split('\n')
  header = lines[1].split()
  to_tff = dict(zip(_CELEBA_HEADER.split(), celeba_sqlite.ATTRIBUTE_NAMES))
  attributes = {}
  for line in lines[2:]:
    fields = line.split()
    if fields:
      attributes[fields[0]] = {to_tff[h]: v == '1'
                               for h, v in zip(header, fields[1:])}
  by_client = collections.defaultdict(list)
  with open(paths.identity_file) as f:
    for line in f:
      name, identity = line.split()
      if present is not None and name not in present:
        continue
      with Image.open(os.path.join(paths.image_dir, name)) as image:
        pixels = np.asarray(image.convert('RGB').resize((84, 84),
                                                        Image.BILINEAR))
      by_client[identity].append((name, pixels, attributes[name]))
  return {c: sorted(v, key=lambda e: e[0]) for c, v in by_client.items()}


def _client_examples(client_data, client_id):
  return list(client_data.create_tf_dataset_for_client(client_id)
              .as_numpy_iterator())


def _rows(database_path):
  with sqlite3.connect(database_path) as connection:
    examples = connection.execute(
        'SELECT split_name, client_id, serialized_example_proto FROM examples '
        'ORDER BY rowid;').fetchall()
    metadata = connection.execute(
        'SELECT * FROM client_metadata ORDER BY rowid;').fetchall()
  return examples, metadata


def _sha256(path):
  with open(path, 'rb') as f:
    return hashlib.sha256(f.read()).hexdigest()


class AttributeNamesTest(absltest.TestCase):

  def test_match_tff(self):
    self.assertEqual(celeba_sqlite.ATTRIBUTE_NAMES,
                     tuple(tff.simulation.datasets.celeba.ATTRIBUTE_NAMES))

  def test_celeba_spelling_maps_to_tff(self):
    self.assertEqual(celeba_testing.CELEBA_ATTRIBUTE_NAMES,
                     tuple(_CELEBA_HEADER.split()))
    self.assertEqual(
        tuple(raw_celeba_files.celeba_to_tff_attribute_name(n)
              for n in _CELEBA_HEADER.split()),
        celeba_sqlite.ATTRIBUTE_NAMES)


class RoundTripTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.paths = celeba_testing.make_fake_raw_celeba(
        os.path.join(cls.root, 'raw'), _IDENTITIES, seed=1)
    cls.output_dir = os.path.join(cls.root, 'cache')
    cls.summary = raw_celeba_lib.convert_raw_celeba(
        cls.paths.image_dir, cls.paths.attr_file, cls.paths.identity_file,
        cls.output_dir, progress=False)
    cls.expected = _read_expected(cls.paths)
    celeba = tff.simulation.datasets.celeba
    cls.by_clients = celeba.load_data(split_by_clients=True,
                                      cache_dir=cls.output_dir)
    cls.by_examples = celeba.load_data(split_by_clients=False,
                                       cache_dir=cls.output_dir)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def test_summary(self):
    summary = self.summary
    self.assertEqual(summary.database_path,
                     os.path.join(self.output_dir, 'celeba.sqlite'))
    self.assertEqual(summary.images_listed, sum(_IDENTITIES.values()))
    self.assertEqual(summary.images_found, sum(_IDENTITIES.values()))
    self.assertEqual(summary.images_used, 6 + 7 + 5 + 6 + 8)
    self.assertEqual(summary.clients_found, 7)
    self.assertEqual(summary.clients_dropped, 2)
    db = summary.database
    self.assertEqual(db.split_by_clients_train_clients, 4)
    self.assertEqual(db.split_by_clients_test_clients, 1)
    self.assertEqual(db.split_by_clients_train_examples
                     + db.split_by_clients_test_examples, 32)
    self.assertEqual(db.split_by_examples_train_clients, 5)
    self.assertEqual(db.split_by_examples_test_clients, 5)
    self.assertEqual(db.split_by_examples_train_examples
                     + db.split_by_examples_test_examples, 32)
    self.assertEqual(os.listdir(self.output_dir), ['celeba.sqlite'])
    self.assertEqual(
        celeba_database.check_database(summary.database_path),
        {'split_by_clients_train': 4, 'split_by_clients_test': 1,
         'split_by_examples_train': 5, 'split_by_examples_test': 5})

  def test_split_by_clients_ids_and_counts(self):
    train, test = self.by_clients
    self.assertLen(test.client_ids, 1)
    self.assertEmpty(set(train.client_ids) & set(test.client_ids))
    # Clients under min_images_per_client (303, 707) are dropped.
    self.assertEqual(sorted(train.client_ids + test.client_ids), _KEPT)
    for data in (train, test):
      for client_id in data.client_ids:
        self.assertLen(_client_examples(data, client_id),
                       _IDENTITIES[int(client_id)])

  def test_images_and_attributes_match_the_raw_copy(self):
    train, test = self.by_clients
    for data in (train, test):
      for client_id in data.client_ids:
        got = _client_examples(data, client_id)
        want = self.expected[client_id]
        self.assertLen(got, len(want))
        for element, (name, pixels, attributes) in zip(got, want):
          self.assertEqual(element['image'].dtype, np.int64)
          np.testing.assert_array_equal(element['image'], pixels,
                                        err_msg=name)
          self.assertEqual(set(element),
                           {'image', *celeba_sqlite.ATTRIBUTE_NAMES})
          for attribute, value in attributes.items():
            self.assertEqual(bool(element[attribute]), value,
                             f'{name} {attribute}')
    # Both kinds of attribute appear with both values.
    values = [e[2][a] for c in self.expected.values() for e in c
              for a in ('smiling', 'five_o_clock_shadow')]
    self.assertIn(True, values)
    self.assertIn(False, values)

  def test_split_by_examples(self):
    train, test = self.by_examples
    self.assertEqual(train.client_ids, _KEPT)
    self.assertEqual(test.client_ids, _KEPT)
    for client_id in _KEPT:
      train_images = [e['image'].tobytes()
                      for e in _client_examples(train, client_id)]
      test_images = [e['image'].tobytes()
                     for e in _client_examples(test, client_id)]
      self.assertNotEmpty(test_images)
      self.assertLess(len(test_images), len(train_images))
      want = [p.astype(np.int64).tobytes()
              for _, p, _ in self.expected[client_id]]
      self.assertCountEqual(train_images + test_images, want)

  def test_same_seed_same_database_other_seeds_differ(self):
    want = _rows(self.summary.database_path)
    again = raw_celeba_lib.convert_raw_celeba(
        self.paths.image_dir, self.paths.attr_file, self.paths.identity_file,
        temp_dirs.temp_dir(self), progress=False)
    self.assertEqual(_rows(again.database_path), want)
    others = [
        _rows(raw_celeba_lib.convert_raw_celeba(
            self.paths.image_dir, self.paths.attr_file,
            self.paths.identity_file, temp_dirs.temp_dir(self), seed=seed,
            progress=False).database_path)
        for seed in (1, 2, 3)]
    self.assertTrue(any(rows != want for rows in others))

  def test_subset_of_images(self):
    raw = temp_dirs.temp_dir(self)
    paths = celeba_testing.make_fake_raw_celeba(raw, _IDENTITIES, seed=1)
    # Deleting two images of 202 (7 -> 5) keeps it; two of 404 drop it.
    with open(paths.identity_file) as f:
      owners = [line.split() for line in f]
    deleted = ([n for n, i in owners if i == '202'][:2]
               + [n for n, i in owners if i == '404'][:2])
    for name in deleted:
      os.remove(os.path.join(paths.image_dir, name))
    output_dir = temp_dirs.temp_dir(self)
    summary = raw_celeba_lib.convert_raw_celeba(
        paths.image_dir, paths.attr_file, paths.identity_file, output_dir,
        progress=False)
    self.assertEqual(summary.images_listed, 39)
    self.assertEqual(summary.images_found, 35)
    self.assertEqual(summary.images_used, 6 + 5 + 6 + 8)
    present = set(os.listdir(paths.image_dir))
    expected = _read_expected(paths, present)
    train, test = tff.simulation.datasets.celeba.load_data(
        cache_dir=output_dir)
    self.assertEqual(sorted(train.client_ids + test.client_ids),
                     ['101', '202', '505', '606'])
    for data in (train, test):
      for client_id in data.client_ids:
        got = _client_examples(data, client_id)
        want = expected[client_id]
        self.assertLen(got, len(want))
        for element, (_, pixels, attributes) in zip(got, want):
          np.testing.assert_array_equal(element['image'], pixels)
          self.assertEqual(bool(element['smiling']), attributes['smiling'])

  def test_options(self):
    output_dir = temp_dirs.temp_dir(self)
    summary = raw_celeba_lib.convert_raw_celeba(
        self.paths.image_dir, self.paths.attr_file, self.paths.identity_file,
        output_dir, min_images_per_client=1, test_client_fraction=0.5,
        max_images=20, progress=True)
    self.assertEqual(summary.images_found, 39)
    self.assertEqual(summary.images_used, 20)
    db = summary.database
    num_clients = (db.split_by_clients_train_clients
                   + db.split_by_clients_test_clients)
    self.assertEqual(num_clients, summary.clients_found)
    self.assertEqual(db.split_by_clients_test_clients,
                     round(num_clients * 0.5))

  def test_crlf_and_extra_spaces(self):
    raw = temp_dirs.temp_dir(self)
    paths = celeba_testing.make_fake_raw_celeba(raw, {1: 5, 2: 5}, seed=4)
    for path in (paths.attr_file, paths.identity_file):
      with open(path) as f:
        text = f.read()
      with open(path, 'w', newline='') as f:
        f.write(text.replace(' ', '  ').replace('\n', '\r\n'))
    summary = raw_celeba_lib.convert_raw_celeba(
        paths.image_dir, paths.attr_file, paths.identity_file,
        temp_dirs.temp_dir(self), progress=False)
    self.assertEqual(summary.images_used, 10)


def _fake_clients(num_clients=3, images_per_client=4, seed=0):
  rng = np.random.default_rng(seed)
  return {
      str(c): [(rng.integers(0, 256, (84, 84, 3), dtype=np.uint8),
                {n: bool(rng.integers(2))
                 for n in celeba_sqlite.ATTRIBUTE_NAMES})
               for _ in range(images_per_client)]
      for c in range(1, num_clients + 1)}


class WriteAndCheckTest(absltest.TestCase):

  def test_write_and_load(self):
    directory = temp_dirs.temp_dir(self)
    clients = _fake_clients(num_clients=4, images_per_client=10)
    path = os.path.join(directory, 'celeba.sqlite')
    summary = celeba_sqlite.write_celeba_database(
        path, clients, ['2'], example_test_fraction=0.2, seed=5)
    self.assertEqual(summary, celeba_sqlite.DatabaseSummary(
        path, 3, 30, 1, 10, 4, 32, 4, 8))
    self.assertEqual(celeba_database.check_database(path), {
        'split_by_clients_train': 3, 'split_by_clients_test': 1,
        'split_by_examples_train': 4, 'split_by_examples_test': 4})
    train, test = tff.simulation.datasets.celeba.load_data(
        cache_dir=directory)
    self.assertEqual(train.client_ids, ['1', '3', '4'])
    self.assertEqual(test.client_ids, ['2'])
    got = _client_examples(test, '2')
    for element, (image, attributes) in zip(got, clients['2']):
      np.testing.assert_array_equal(element['image'], image)
      self.assertEqual({k: bool(v) for k, v in element.items()
                        if k != 'image'}, attributes)

  def test_small_clients_split_by_examples(self):
    directory = temp_dirs.temp_dir(self)
    clients = {'1': _fake_clients(1, 1)['1'], '2': _fake_clients(1, 2)['1'],
               '3': _fake_clients(1, 30)['1']}
    summary = celeba_sqlite.write_celeba_database(
        os.path.join(directory, 'celeba.sqlite'), clients, ['3'])
    # One example: train only; two: one each; 30: 3 test.
    self.assertEqual(summary.split_by_examples_train_clients, 3)
    self.assertEqual(summary.split_by_examples_test_clients, 2)
    self.assertEqual(summary.split_by_examples_test_examples, 1 + 3)

  def test_fake_cache_has_a_smile_signal(self):
    directory = celeba_testing.make_fake_celeba_cache(
        os.path.join(temp_dirs.temp_dir(self), 'cache'), num_train_clients=4,
        num_test_clients=2, images_per_client=6)
    self.assertEqual(
        celeba_database.check_database(
            os.path.join(directory, 'celeba.sqlite')),
        {'split_by_clients_train': 4, 'split_by_clients_test': 2,
         'split_by_examples_train': 6, 'split_by_examples_test': 6})
    train, test = tff.simulation.datasets.celeba.load_data(
        cache_dir=directory)
    self.assertEqual(train.client_ids, ['1', '2', '3', '4'])
    self.assertEqual(test.client_ids, ['5', '6'])
    contrast = {True: [], False: []}
    for client_id in train.client_ids:
      for element in _client_examples(train, client_id):
        image = element['image'].astype(float)
        contrast[bool(element['smiling'])].append(
            image[42:].mean() - image[:42].mean())
    self.assertNotEmpty(contrast[True])
    self.assertNotEmpty(contrast[False])
    self.assertGreater(np.mean(contrast[True]) - np.mean(contrast[False]), 30)


  def test_write_rejects_bad_examples(self):
    directory = temp_dirs.temp_dir(self)
    path = os.path.join(directory, 'celeba.sqlite')
    good = _fake_clients(2, 2)
    image, attributes = good['1'][0]
    cases = [
        ({**good, '1': [(image[:80], attributes)]}, ['2'], r'shape'),
        ({**good, '1': [(image.astype(float), attributes)]}, ['2'],
         r'integer dtype'),
        ({**good, '1': [(np.where(image == image[0, 0, 0], 256,
                                  image.astype(int)), attributes)]}, ['2'],
         r'\[0, 255\]'),
        ({**good, '1': [(image, {**attributes, 'Smiling': True})]}, ['2'],
         r"unknown \['Smiling'\]"),
        ({**good, '1': [(image, {k: v for k, v in attributes.items()
                                 if k != 'young'})]}, ['2'],
         r"missing \['young'\]"),
        ({**good, '1': [(image, {**attributes, 'smiling': -1})]}, ['2'],
         r"'smiling' must be a bool"),
        ({**good, '1': []}, ['2'], r"Client '1' has no examples"),
        (good, ['3'], r"test_client_ids \['3'\] are not clients"),
        (good, [], r'at least one train and one test client'),
        (good, ['1', '2'], r'at least one train and one test client'),
        ({**good, "o'brien": good['1']}, ['2'], r'single quotes'),
    ]
    for clients, test_ids, regex in cases:
      with self.subTest(regex):
        with self.assertRaisesRegex(ValueError, regex):
          celeba_sqlite.write_celeba_database(path, clients, test_ids)
        self.assertEmpty(os.listdir(directory))
    with self.assertRaisesRegex(ValueError, r'example_test_fraction'):
      celeba_sqlite.write_celeba_database(path, good, ['2'],
                                          example_test_fraction=1.0)

  def test_check_missing_file(self):
    with self.assertRaisesRegex(FileNotFoundError, r'nowhere\.sqlite'):
      celeba_database.check_database(
          os.path.join(temp_dirs.temp_dir(self), 'nowhere.sqlite'))

  def test_check_corrupt_file(self):
    path = os.path.join(temp_dirs.temp_dir(self), 'celeba.sqlite')
    with open(path, 'wb') as f:
      f.write(np.random.default_rng(0).bytes(4096))
    with self.assertRaisesRegex(
        ValueError, f'{re.escape(path)} is not an SQLite database'):
      celeba_database.check_database(path)

  def test_check_wrong_schema(self):
    path = os.path.join(temp_dirs.temp_dir(self), 'celeba.sqlite')
    with sqlite3.connect(path) as connection:
      connection.execute('CREATE TABLE something (x INTEGER);')
    with self.assertRaisesRegex(ValueError,
                                f"{re.escape(path)} has no table 'examples'"):
      celeba_database.check_database(path)
    os.remove(path)
    with sqlite3.connect(path) as connection:
      connection.execute('CREATE TABLE examples (split_name TEXT, '
                         'client_id TEXT);')
      connection.execute('CREATE TABLE client_metadata (client_id TEXT, '
                         'split_name TEXT, num_examples INTEGER);')
    with self.assertRaisesRegex(ValueError,
                                r"lacks the columns \['serialized_example"):
      celeba_database.check_database(path)

  def _write_raw_database(self, example: tf.train.Example,
                          splits=('split_by_clients_train',
                                  'split_by_clients_test')) -> str:
    path = os.path.join(temp_dirs.temp_dir(self), 'celeba.sqlite')
    with sqlite3.connect(path) as connection:
      connection.execute('CREATE TABLE examples (split_name TEXT, client_id '
                         'TEXT, serialized_example_proto BLOB);')
      connection.execute('CREATE TABLE client_metadata (client_id TEXT, '
                         'split_name TEXT, num_examples INTEGER);')
      for split in splits:
        connection.execute('INSERT INTO examples VALUES (?, ?, ?);',
                           (split, '1', example.SerializeToString()))
        connection.execute('INSERT INTO client_metadata VALUES (?, ?, ?);',
                           ('1', split, 1))
    return path

  def _example(self, num_pixels=84 * 84 * 3, drop=(), add=()):
    example = tf.train.Example()
    feature = example.features.feature
    feature['image'].int64_list.value.extend([7] * num_pixels)
    for name in celeba_sqlite.ATTRIBUTE_NAMES:
      if name not in drop:
        feature[name].int64_list.value.append(1)
    for name in add:
      feature[name].int64_list.value.append(1)
    return example

  def test_check_handmade_database(self):
    path = self._write_raw_database(self._example())
    self.assertEqual(celeba_database.check_database(path),
                     {'split_by_clients_train': 1, 'split_by_clients_test': 1})

  def test_check_wrong_image_size(self):
    path = self._write_raw_database(self._example(num_pixels=80 * 80 * 3))
    with self.assertRaisesRegex(
        ValueError, f'{re.escape(path)}.*the image has 19200 values'):
      celeba_database.check_database(path)

  def test_check_missing_and_extra_features(self):
    path = self._write_raw_database(self._example(drop=['smiling']))
    with self.assertRaisesRegex(ValueError, r"missing \['smiling'\]"):
      celeba_database.check_database(path)
    path = self._write_raw_database(self._example(add=['label']))
    with self.assertRaisesRegex(ValueError, r"unexpected \['label'\]"):
      celeba_database.check_database(path)

  def test_check_missing_split(self):
    path = self._write_raw_database(self._example(),
                                    splits=['split_by_clients_train'])
    with self.assertRaisesRegex(ValueError, r"\['split_by_clients_test'\]"):
      celeba_database.check_database(path)


class BadInputTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.raw = temp_dirs.temp_dir(self)
    self.paths = celeba_testing.make_fake_raw_celeba(
        self.raw, {1: 5, 2: 5}, seed=2, image_size=(40, 48))
    self.output_dir = os.path.join(self.raw, 'out')

  def _convert(self, **kwargs):
    args = dict(image_dir=self.paths.image_dir,
                attr_file=self.paths.attr_file,
                identity_file=self.paths.identity_file,
                output_dir=self.output_dir, progress=False)
    args.update(kwargs)
    return raw_celeba_lib.convert_raw_celeba(**args)

  def _edit_line(self, path, line_number, new_line):
    with open(path) as f:
      lines = f.read().split('\n')
    lines[line_number - 1] = new_line
    with open(path, 'w') as f:
      f.write('\n'.join(lines))

  def _line(self, path, line_number):
    with open(path) as f:
      return f.read().split('\n')[line_number - 1]

  def test_missing_paths(self):
    missing = os.path.join(self.raw, 'missing')
    for arg in ('image_dir', 'attr_file', 'identity_file'):
      with self.subTest(arg):
        with self.assertRaisesRegex(FileNotFoundError, re.escape(missing)):
          self._convert(**{arg: missing})

  def test_bad_arguments(self):
    cases = [
        (dict(min_images_per_client=0), 'min_images_per_client'),
        (dict(test_client_fraction=0.0), 'test_client_fraction'),
        (dict(test_client_fraction=1.0), 'test_client_fraction'),
        (dict(example_test_fraction=-0.1), 'example_test_fraction'),
        (dict(example_test_fraction=2), 'example_test_fraction'),
        (dict(seed=-1), 'seed'),
        (dict(max_images=0), 'max_images'),
    ]
    for kwargs, regex in cases:
      with self.subTest(regex):
        with self.assertRaisesRegex(ValueError, regex):
          self._convert(**kwargs)

  def test_attr_header_with_unknown_name(self):
    self._edit_line(self.paths.attr_file, 2,
                    _CELEBA_HEADER.replace('Smiling', 'Smiles'))
    with self.assertRaisesRegex(
        ValueError, r"list_attr_celeba.txt, line 2: .*unknown \['Smiles'\], "
        r"missing \['smiling'\]"):
      self._convert()

  def test_attr_count_line(self):
    self._edit_line(self.paths.attr_file, 1, 'image_id,5_o_Clock_Shadow')
    with self.assertRaisesRegex(ValueError,
                                r'list_attr_celeba.txt, line 1: expected the '
                                'number of images'):
      self._convert()
    self._edit_line(self.paths.attr_file, 1, '11')
    with self.assertRaisesRegex(ValueError, r'declares 11 images but 10'):
      self._convert()

  def test_attr_line_with_wrong_number_of_values(self):
    self._edit_line(self.paths.attr_file, 5,
                    self._line(self.paths.attr_file, 5) + ' -1')
    with self.assertRaisesRegex(
        ValueError, r'list_attr_celeba.txt, line 5: expected an image name '
        r'and 40 values, got 42'):
      self._convert()

  def test_attr_value_not_plus_minus_one(self):
    line = self._line(self.paths.attr_file, 4)
    self._edit_line(self.paths.attr_file, 4, line[:-2] + ' 0')
    with self.assertRaisesRegex(
        ValueError, r"list_attr_celeba.txt, line 4: attribute young of "
        r"000002.jpg is '0'; CelebA values are -1 and 1"):
      self._convert()

  def test_malformed_identity_line(self):
    self._edit_line(self.paths.identity_file, 3, '000003.jpg abc')
    with self.assertRaisesRegex(ValueError,
                                r'identity_CelebA.txt, line 3: expected'):
      self._convert()
    self._edit_line(self.paths.identity_file, 3, '000003.jpg')
    with self.assertRaisesRegex(ValueError,
                                r'identity_CelebA.txt, line 3: expected'):
      self._convert()

  def test_no_images_left(self):
    with self.assertRaisesRegex(
        ValueError, r'No images left after filtering: 10 images of 2 '
        r'identities .* min_images_per_client=6'):
      self._convert(min_images_per_client=6)
    for name in os.listdir(self.paths.image_dir):
      os.remove(os.path.join(self.paths.image_dir, name))
    with self.assertRaisesRegex(ValueError, r'None of the 10 images listed'):
      self._convert()

  def test_single_client(self):
    with open(self.paths.identity_file) as f:
      name = next(n for n, i in (line.split() for line in f) if i == '2')
    os.remove(os.path.join(self.paths.image_dir, name))
    with self.assertRaisesRegex(ValueError, r'Only one client \(1\).*needs '
                                'two or more'):
      self._convert()

  def test_corrupt_jpeg_is_named(self):
    with open(os.path.join(self.paths.image_dir, '000004.jpg'), 'wb') as f:
      f.write(b'not a jpeg')
    with self.assertRaisesRegex(ValueError,
                                r'Cannot read the image .*000004\.jpg'):
      self._convert()


class AtomicityTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.raw = temp_dirs.temp_dir(self)
    self.paths = celeba_testing.make_fake_raw_celeba(
        self.raw, {1: 5, 2: 6, 3: 5}, seed=3, image_size=(40, 48))
    self.output_dir = os.path.join(self.raw, 'out')

  def _convert(self):
    return raw_celeba_lib.convert_raw_celeba(
        self.paths.image_dir, self.paths.attr_file, self.paths.identity_file,
        self.output_dir, progress=False)

  def _truncate_a_late_jpeg(self):
    path = os.path.join(self.paths.image_dir, '000014.jpg')
    with open(path, 'rb') as f:
      data = f.read()
    with open(path, 'wb') as f:
      f.write(data[:len(data) // 2])

  def test_corrupt_image_leaves_nothing(self):
    self._truncate_a_late_jpeg()
    with self.assertRaisesRegex(ValueError, r'000014\.jpg'):
      self._convert()
    self.assertEmpty(os.listdir(self.output_dir))

  def test_corrupt_image_keeps_the_previous_database(self):
    path = self._convert().database_path
    before = _sha256(path)
    self._truncate_a_late_jpeg()
    with self.assertRaises(ValueError):
      self._convert()
    self.assertEqual(os.listdir(self.output_dir), ['celeba.sqlite'])
    self.assertEqual(_sha256(path), before)
    celeba_database.check_database(path)

  def test_keyboard_interrupt_midway(self):
    path = self._convert().database_path
    before = _sha256(path)
    load_image = raw_celeba_files.load_image
    calls = []

    def interrupt_on_the_eighth(image_path):
      calls.append(image_path)
      if len(calls) == 8:
        raise KeyboardInterrupt
      return load_image(image_path)

    with mock.patch.object(raw_celeba_files, 'load_image',
                           interrupt_on_the_eighth):
      with self.assertRaises(KeyboardInterrupt):
        self._convert()
    self.assertLen(calls, 8)
    self.assertEqual(os.listdir(self.output_dir), ['celeba.sqlite'])
    self.assertEqual(_sha256(path), before)

  def test_failure_while_writing_the_index(self):
    # A failure after all rows are in (e.g. a full disk) removes the file.
    with mock.patch.object(sqlite_files, 'CLIENT_DATA_INDEX', 'NOT SQL;'):
      with self.assertRaises(sqlite3.OperationalError):
        self._convert()
    self.assertEmpty(os.listdir(self.output_dir))


@binary_runs.runs_binaries
class BinaryTest(absltest.TestCase):

  def _run(self, *args):
    return preloaded_python.run_module(
        'experiments.celeba_smile.convert_raw_celeba_main', *args,
        timeout=600)

  def test_success_and_missing_file(self):
    raw = temp_dirs.temp_dir(self)
    paths = celeba_testing.make_fake_raw_celeba(
        raw, {1: 5, 2: 5, 3: 2}, image_size=(40, 48))
    output_dir = os.path.join(raw, 'cache')
    args = [f'--raw_image_dir={paths.image_dir}',
            f'--raw_attr_file={paths.attr_file}',
            f'--raw_identity_file={paths.identity_file}',
            f'--sqlite_output_dir={output_dir}', '--split_seed=3']
    result = self._run(*args)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('Wrote ', result.stdout)
    self.assertIn('1 of 3 identities dropped', result.stdout)
    self.assertIn(f'--cache_dir={output_dir}', result.stdout)
    self.assertEqual(
        celeba_database.check_database(
            os.path.join(output_dir, 'celeba.sqlite')),
        {'split_by_clients_train': 1, 'split_by_clients_test': 1,
         'split_by_examples_train': 2, 'split_by_examples_test': 2})

    missing = os.path.join(raw, 'no_such_attr.txt')
    result = self._run(*args[:1], f'--raw_attr_file={missing}', *args[2:])
    self.assertNotEqual(result.returncode, 0)
    self.assertIn(f'error: The attribute file {missing} does not exist',
                  result.stderr)
    self.assertNotIn('Traceback', result.stderr)


if __name__ == '__main__':
  absltest.main()
