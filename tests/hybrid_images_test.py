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
"""Tests for `tff_mixed.tasks.hybrid_images`."""

import os
import shutil
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tff_mixed.tasks import hybrid_images

# Real CIFAR-10 test images, present on the project's shared machine only.
_CIFAR_NPZ = ('/work/shared/data/cifar10_test_jpeg/'
              'cifar10_test_500perclass_jpeg.npz')


def _smooth_images(count, seed):
  """Random but smooth uint8 images, which JPEG encodes nearly losslessly."""
  rng = np.random.default_rng(seed)
  coarse = rng.uniform(0, 255, (count, 4, 4, 3)).astype(np.float32)
  return tf.cast(tf.image.resize(coarse, [32, 32]), tf.uint8).numpy()


def _write_npz(path, images, labels, drop=None):
  files = [tf.io.encode_jpeg(image, quality=95).numpy() for image in images]
  arrays = dict(
      jpeg_bytes=np.frombuffer(b''.join(files), np.uint8),
      jpeg_offsets=np.cumsum([0] + [len(f) for f in files]).astype(np.int64),
      label=np.asarray(labels, np.int8),
  )
  if drop:
    del arrays[drop]
  np.savez(path, **arrays)


def _toy_data(num_classes=10, per_class=60, seed=0):
  """Tiny images whose first pixel holds the row number, to trace rows."""
  labels = np.random.default_rng(seed).permutation(
      np.repeat(np.arange(num_classes), per_class)).astype(np.int32)
  images = np.zeros((labels.size, 2, 2, 1), np.float32)
  images[:, 0, 0, 0] = np.arange(labels.size)
  return images, labels


class LoadCifar10NpzTest(absltest.TestCase):

  def _tempdir(self):
    # Not `create_tempdir`: under pytest absl's flags are unparsed.
    path = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, path, ignore_errors=True)
    return path

  def test_round_trip(self):
    images = _smooth_images(6, seed=0)
    labels = [3, 0, 9, 1, 1, 7]
    path = os.path.join(self._tempdir(), 'tiny.npz')
    _write_npz(path, images, labels)
    decoded, decoded_labels = hybrid_images.load_cifar10_npz(path)
    self.assertEqual(decoded.shape, (6, 32, 32, 3))
    self.assertEqual(decoded.dtype, np.float32)
    self.assertEqual(decoded_labels.dtype, np.int32)
    np.testing.assert_array_equal(decoded_labels, labels)
    self.assertGreaterEqual(decoded.min(), 0.0)
    self.assertLessEqual(decoded.max(), 1.0)
    # JPEG is lossy: compare on average.
    self.assertLess(np.abs(decoded - images / 255.0).mean(), 0.05)

  def test_missing_file(self):
    path = os.path.join(self._tempdir(), 'absent.npz')
    with self.assertRaisesRegex(FileNotFoundError, 'absent.npz'):
      hybrid_images.load_cifar10_npz(path)

  def test_missing_array(self):
    path = os.path.join(self._tempdir(), 'nooffsets.npz')
    _write_npz(path, _smooth_images(2, seed=1), [0, 1], drop='jpeg_offsets')
    with self.assertRaisesRegex(ValueError, 'nooffsets.npz.*jpeg_offsets'):
      hybrid_images.load_cifar10_npz(path)

  def test_inconsistent_labels(self):
    path = os.path.join(self._tempdir(), 'labels.npz')
    images = _smooth_images(3, seed=2)
    files = [tf.io.encode_jpeg(image).numpy() for image in images]
    np.savez(path, jpeg_bytes=np.frombuffer(b''.join(files), np.uint8),
             jpeg_offsets=np.cumsum([0] + [len(f) for f in files]),
             label=np.zeros([2], np.int8))
    with self.assertRaisesRegex(ValueError, 'label'):
      hybrid_images.load_cifar10_npz(path)

  def test_real_cifar10_test_images(self):
    if not os.path.exists(_CIFAR_NPZ):
      self.skipTest(f'{_CIFAR_NPZ} is absent (only on the shared machine).')
    images, labels = hybrid_images.load_cifar10_npz(_CIFAR_NPZ)
    self.assertEqual(images.shape, (5000, 32, 32, 3))
    np.testing.assert_array_equal(np.bincount(labels), [500] * 10)
    self.assertGreaterEqual(images.min(), 0.0)
    self.assertLessEqual(images.max(), 1.0)
    self.assertGreater(images.std(), 0.1)  # Real pictures, not blanks.


class LoadDigitsImagesTest(parameterized.TestCase):

  def test_shapes_range_and_labels(self):
    images, labels = hybrid_images.load_digits_images()
    self.assertEqual(images.shape, (1797, 32, 32, 3))
    self.assertEqual(images.dtype, np.float32)
    self.assertEqual(labels.dtype, np.int32)
    self.assertGreaterEqual(images.min(), 0.0)
    self.assertLessEqual(images.max(), 1.0)
    self.assertGreater(images.max(), 0.9)
    np.testing.assert_array_equal(np.unique(labels), np.arange(10))
    # The three channels are the same gray level.
    np.testing.assert_array_equal(images[..., 0], images[..., 2])

  def test_size_eight_is_the_original(self):
    from sklearn import datasets  # pylint: disable=g-import-not-at-top
    images, labels = hybrid_images.load_digits_images(size=8, channels=1)
    digits = datasets.load_digits()
    np.testing.assert_allclose(images[..., 0], digits.images / 16.0,
                               atol=1e-6)
    np.testing.assert_array_equal(labels, digits.target)

  @parameterized.named_parameters(('size', dict(size=0), 'size'),
                                  ('channels', dict(channels=2), 'channels'))
  def test_bad_arguments(self, kwargs, message):
    with self.assertRaisesRegex(ValueError, message):
      hybrid_images.load_digits_images(**kwargs)


class DownsampleImagesTest(absltest.TestCase):

  def test_block_means(self):
    images = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    small = hybrid_images.downsample_images(images, 2)
    self.assertEqual(small.shape, (2, 2, 2, 3))
    self.assertEqual(small.dtype, np.float32)
    np.testing.assert_allclose(small[1, 0, 1],
                               images[1, 0:2, 2:4].mean(axis=(0, 1)))
    np.testing.assert_array_equal(hybrid_images.downsample_images(images, 1),
                                  images)

  def test_bad_arguments(self):
    images = np.zeros([1, 6, 6, 3], np.float32)
    with self.assertRaisesRegex(ValueError, 'does not divide'):
      hybrid_images.downsample_images(images, 4)
    with self.assertRaisesRegex(ValueError, 'positive int'):
      hybrid_images.downsample_images(images, 0)
    with self.assertRaisesRegex(ValueError, 'channels'):
      hybrid_images.downsample_images(images[0], 2)


class BuildHybridSplitTest(parameterized.TestCase):

  def _split(self, **kwargs):
    images, labels = _toy_data()
    args = dict(num_clients=20, alpha=0.1, server_size=50, eval_size=150,
                seed=3)
    args.update(kwargs)
    return hybrid_images.build_hybrid_split(images, labels, **args)

  def test_indices_are_disjoint_and_complete(self):
    split = self._split()
    client_rows = np.concatenate(split.client_indices)
    everything = np.concatenate(
        [client_rows, split.server_indices, split.eval_indices])
    np.testing.assert_array_equal(np.sort(everything), np.arange(600))
    self.assertEmpty(np.intersect1d(split.server_indices, split.eval_indices))

  def test_validation_set_is_held_apart_from_everything_else(self):
    split = self._split(validation_size=40)
    plain = self._split()
    parts = [np.concatenate(split.client_indices), split.server_indices,
             split.validation_indices, split.eval_indices]
    # Disjoint (no row twice) and complete.
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)),
                                  np.arange(600))
    self.assertLen(split.validation_indices, 40)
    self.assertLen(split.eval_indices, 60)
    np.testing.assert_array_equal(split.validation_x[:, 0, 0, 0],
                                  split.validation_indices)
    np.testing.assert_array_equal(split.validation_y,
                                  split.labels[split.validation_indices])
    # Clients and server data do not depend on the validation set: the
    # search and the final runs share them; the evaluation set shrinks.
    for got, want in zip(split.client_indices, plain.client_indices):
      np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(split.server_indices, plain.server_indices)
    self.assertEmpty(np.setdiff1d(split.eval_indices, plain.eval_indices))
    self.assertIn('40 validation', split.description)
    # Scoring on the validation set swaps it in for the evaluation set.
    validation = split.for_validation()
    np.testing.assert_array_equal(validation.eval_indices,
                                  split.validation_indices)
    np.testing.assert_array_equal(validation.eval_x, split.validation_x)
    with self.assertRaisesRegex(ValueError, 'validation'):
      plain.for_validation()
    with self.assertRaisesRegex(ValueError, 'validation_size'):
      self._split(validation_size=100)
    with self.assertRaisesRegex(ValueError, 'validation_size'):
      self._split(validation_size=-1)

  def test_sizes_and_arrays(self):
    split = self._split()
    self.assertEqual(split.num_clients, 20)
    self.assertLen(split.server_indices, 50)
    self.assertLen(split.eval_indices, 100)
    self.assertEqual(sum(p.size for p in split.client_indices), 450)
    self.assertTrue(all(p.size >= 1 for p in split.client_indices))
    # The arrays hold the indexed rows (pixel 0 is the row number).
    np.testing.assert_array_equal(split.server_x[:, 0, 0, 0],
                                  split.server_indices)
    np.testing.assert_array_equal(split.eval_x[:, 0, 0, 0],
                                  split.eval_indices)
    np.testing.assert_array_equal(split.server_y,
                                  split.labels[split.server_indices])
    x, y = split.client_arrays(4)
    np.testing.assert_array_equal(x[:, 0, 0, 0], split.client_indices[4])
    np.testing.assert_array_equal(y, split.labels[split.client_indices[4]])
    self.assertIn('20 clients', split.description)

  def test_small_alpha_is_skewed(self):
    split = self._split(num_clients=10, alpha=0.1)
    shares = [np.bincount(split.labels[p]).max() / p.size
              for p in split.client_indices]
    self.assertGreater(np.mean(shares), 0.5)

  def test_eval_fraction(self):
    split = self._split(eval_size=None, eval_fraction=0.25)
    self.assertEqual(split.server_indices.size + split.eval_indices.size, 150)

  def test_deterministic_from_seed(self):
    first, second, other = (self._split(seed=s) for s in (3, 3, 4))
    for a, b in zip(first.client_indices, second.client_indices):
      np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first.server_indices, second.server_indices)
    np.testing.assert_array_equal(first.eval_indices, second.eval_indices)
    self.assertFalse(
        np.array_equal(first.server_indices, other.server_indices))

  def test_every_client_non_empty_with_many_clients(self):
    # About two examples per client: empty clients must be topped up.
    split = self._split(num_clients=200, alpha=0.1, eval_size=150)
    self.assertTrue(all(p.size >= 1 for p in split.client_indices))

  @parameterized.named_parameters(
      ('both_eval_args', dict(eval_fraction=0.2), 'exactly one'),
      ('no_eval_args', dict(eval_size=None), 'exactly one'),
      ('fraction_range', dict(eval_size=None, eval_fraction=1.0),
       'eval_fraction'),
      ('server_too_big', dict(server_size=150), 'larger than'),
      ('too_many_clients', dict(num_clients=451), 'cannot give'),
      ('negative_server', dict(server_size=-1), 'server_size'),
      ('bad_alpha', dict(alpha=0.0), 'alpha'),
      ('bad_seed', dict(seed=-2), 'seed'),
  )
  def test_bad_arguments(self, kwargs, message):
    with self.assertRaisesRegex(ValueError, message):
      self._split(**kwargs)

  def test_bad_arrays(self):
    images, labels = _toy_data()
    with self.assertRaisesRegex(ValueError, 'labels'):
      hybrid_images.build_hybrid_split(
          images, labels[:-1], num_clients=2, alpha=1.0, server_size=1,
          eval_size=10, seed=0)
    with self.assertRaisesRegex(ValueError, 'images'):
      hybrid_images.build_hybrid_split(
          images[..., 0], labels, num_clients=2, alpha=1.0, server_size=1,
          eval_size=10, seed=0)


class ClientDatasetsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    images, labels = _toy_data()
    self.split = hybrid_images.build_hybrid_split(
        images, labels, num_clients=8, alpha=0.3, server_size=20,
        eval_size=100, seed=1)

  def test_client_data_serves_each_clients_examples(self):
    data = hybrid_images.client_data(self.split)
    self.assertEqual(data.client_ids, [str(i) for i in range(8)])
    for client in ('0', '5', '7'):
      x, y = zip(*data.create_tf_dataset_for_client(client).as_numpy_iterator())
      index = int(client)
      np.testing.assert_array_equal(
          np.array(x)[:, 0, 0, 0], self.split.client_indices[index])
      np.testing.assert_array_equal(
          y, self.split.labels[self.split.client_indices[index]])
    x_spec, y_spec = data.element_type_structure
    self.assertEqual(x_spec.shape.as_list(), [2, 2, 1])
    self.assertEqual(y_spec.dtype, tf.int32)
    # The dataset function is traceable with a string tensor id.
    # The traced dataset function (TFF's graph path) gives the same rows.
    self.assertIn('float32[2,2,1]',
                  str(data.dataset_computation.type_signature.result))
    traced = data.dataset_computation('5')
    np.testing.assert_array_equal([int(x[0, 0, 0]) for x, _ in traced],
                                  self.split.client_indices[5])

  def test_client_dataset_batches(self):
    client = int(np.argmin([p.size for p in self.split.client_indices]))
    size = self.split.client_indices[client].size
    batch = size + 3  # Larger than the client: batches wrap around.
    dataset = hybrid_images.client_dataset(self.split, str(client),
                                           batch_size=batch, num_steps=4,
                                           seed=5)
    batches = list(dataset.as_numpy_iterator())
    self.assertLen(batches, 4)
    rows = set(self.split.client_indices[client].tolist())
    for x, y in batches:
      self.assertEqual(x.shape, (batch, 2, 2, 1))
      self.assertEqual(y.dtype, np.int32)
      self.assertTrue(set(x[:, 0, 0, 0].astype(int).tolist()) <= rows)
    again = list(hybrid_images.client_dataset(
        self.split, client, batch_size=batch, num_steps=4,
        seed=5).as_numpy_iterator())
    for (x, _), (x_again, _) in zip(batches, again):
      np.testing.assert_array_equal(x, x_again)

  def test_client_epochs_see_every_example_once_per_epoch(self):
    client = int(np.argmax([p.size for p in self.split.client_indices]))
    rows = self.split.client_indices[client]
    batch = 3
    dataset = hybrid_images.client_dataset(self.split, client, batch, None,
                                           seed=2, epochs=3)
    batches = [x[:, 0, 0, 0].astype(int)
               for x, _ in dataset.as_numpy_iterator()]
    per_epoch = -(-rows.size // batch)
    self.assertLen(batches, 3 * per_epoch)
    epochs = [np.concatenate(batches[e * per_epoch:(e + 1) * per_epoch])
              for e in range(3)]
    for epoch in epochs:
      # Each epoch is a permutation of the client's rows, the last batch
      # holding the remainder.
      np.testing.assert_array_equal(np.sort(epoch), rows)
    self.assertEqual([b.size for b in batches[:per_epoch]],
                     [batch] * (rows.size // batch)
                     + ([rows.size % batch] if rows.size % batch else []))
    # A fresh permutation every epoch.
    self.assertFalse(np.array_equal(epochs[0], epochs[1])
                     and np.array_equal(epochs[1], epochs[2]))
    again = [x[:, 0, 0, 0].astype(int) for x, _ in hybrid_images.client_dataset(
        self.split, client, batch, None, seed=2, epochs=3).as_numpy_iterator()]
    np.testing.assert_array_equal(np.concatenate(again),
                                  np.concatenate(batches))

  def test_client_dataset_bad_arguments(self):
    with self.assertRaisesRegex(ValueError, 'No client'):
      hybrid_images.client_dataset(self.split, 8, 4, 1, seed=0)
    with self.assertRaisesRegex(ValueError, 'No client'):
      hybrid_images.client_dataset(self.split, 'x', 4, 1, seed=0)
    with self.assertRaisesRegex(ValueError, 'batch_size'):
      hybrid_images.client_dataset(self.split, 0, 0, 1, seed=0)
    with self.assertRaisesRegex(ValueError, 'num_steps'):
      hybrid_images.client_dataset(self.split, 0, 4, 0, seed=0)
    with self.assertRaisesRegex(ValueError, 'epochs'):
      hybrid_images.client_dataset(self.split, 0, 4, None, seed=0, epochs=0)
    with self.assertRaisesRegex(ValueError, 'exactly one'):
      hybrid_images.client_dataset(self.split, 0, 4, 2, seed=0, epochs=1)
    with self.assertRaisesRegex(ValueError, 'exactly one'):
      hybrid_images.client_dataset(self.split, 0, 4, None, seed=0)


if __name__ == '__main__':
  absltest.main()
