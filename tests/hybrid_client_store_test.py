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
"""A split's client store streams `hybrid_images.client_dataset`'s batches."""

import os
import tempfile

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from tff_mixed.tasks import hybrid_client_store
from tff_mixed.tasks import hybrid_images

_BATCH = 3


def _split(pixels: bool) -> hybrid_images.HybridSplit:
  rng = np.random.default_rng(5)
  count = 90
  if pixels:  # As cifar10_pngs loads them: uint8 / 255 in float32.
    images = np.divide(rng.integers(0, 256, (count, 4, 4, 3), np.uint8),
                       255.0, dtype=np.float32)
  else:
    images = rng.normal(size=(count, 4, 4, 3)).astype(np.float32)
  labels = np.tile(np.arange(3), count // 3)
  # Dirichlet(0.3): clients of unequal size, some below a batch.
  return hybrid_images.build_hybrid_split(
      images, labels, num_clients=6, alpha=0.3, server_size=2, eval_size=10,
      seed=1)


def _batches(dataset):
  return [tuple(t.numpy() for t in batch) for batch in dataset]


class ClientStoreTest(absltest.TestCase):

  def _directory(self) -> str:
    root = tempfile.TemporaryDirectory()
    self.addCleanup(root.cleanup)
    return os.path.join(root.name, 'store')

  def _assert_same_stream(self, pixels: bool):
    split = _split(pixels)
    store = hybrid_client_store.write_client_store(
        split, self._directory())
    self.assertEqual(store.sizes.tolist(),
                     [part.size for part in split.client_indices])
    for client in range(split.num_clients):
      for seed in (0, 7):
        for kwargs in (dict(num_steps=5), dict(epochs=2)):
          want = _batches(hybrid_images.client_dataset(
              split, client, _BATCH, kwargs.get('num_steps'), seed,
              epochs=kwargs.get('epochs')))
          # Tensors for the id and seed, as in a group's computation.
          got = _batches(store.client_dataset(
              tf.constant(client, tf.int32), _BATCH,
              tf.constant(seed, tf.int64), **kwargs))
          self.assertLen(got, len(want), msg=(client, seed, kwargs))
          for (gx, gy), (wx, wy) in zip(got, want):
            self.assertEqual(gx.dtype, np.float32)
            np.testing.assert_array_equal(gx, wx)
            np.testing.assert_array_equal(gy, wy)
    return store

  def test_pixel_images_are_stored_as_bytes(self):
    store = self._assert_same_stream(pixels=True)
    self.assertEqual(store.store.fields[0].dtype, 'uint8')
    self.assertEqual(store.store.record_bytes, 4 * 4 * 3 + 4)

  def test_other_images_are_stored_as_float32(self):
    store = self._assert_same_stream(pixels=False)
    self.assertEqual(store.store.fields[0].dtype, 'float32')
    self.assertIsNone(store.store.map_fn)

  def test_needs_exactly_one_protocol(self):
    store = hybrid_client_store.write_client_store(
        _split(True), self._directory())
    for kwargs in (dict(), dict(num_steps=2, epochs=1)):
      with self.assertRaisesRegex(ValueError, 'exactly one'):
        store.client_dataset(0, _BATCH, 0, **kwargs)


if __name__ == '__main__':
  absltest.main()
