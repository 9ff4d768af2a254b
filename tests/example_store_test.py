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
"""Tests of the file-backed central examples (`example_store.ExampleStore`)."""

import json
import os
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tests import temp_dirs
from tests import testing_utils
import tff_mixed
from tff_mixed.core import example_store


def _mixed_batches(rng, sizes):
  for n in sizes:
    yield {
        'pixels': rng.integers(0, 256, (n, 3, 2), dtype=np.uint8),
        'value': rng.normal(size=(n, 4)).astype(np.float32),
        'count': rng.integers(-2**40, 2**40, (n,), dtype=np.int64),
        'flag': rng.random((n, 1)) < 0.5,
    }


_LAYOUTS = (('per_example', False), ('packed', True))


class ExampleStoreTest(parameterized.TestCase):

  @parameterized.named_parameters(*_LAYOUTS)
  def test_round_trip_of_every_dtype_in_any_order(self, packed):
    rng = np.random.default_rng(0)
    # An empty batch in the middle writes nothing.
    batches = list(_mixed_batches(rng, [3, 5, 0, 1]))
    store = example_store.write_example_store(
        os.path.join(temp_dirs.temp_dir(self), 'store'), batches,
        packed=packed)
    self.assertEqual(store.packed, packed)
    self.assertEqual(store.num_examples, 9)
    self.assertEqual(store.structure, 'dict')
    expected = {k: np.concatenate([b[k] for b in batches]) for k in
                batches[0]}
    indices = np.array([8, 0, 4, 4, 7])
    got = store.read(tf.constant(indices))
    self.assertCountEqual(got, expected)
    for key, array in expected.items():
      np.testing.assert_array_equal(got[key].numpy(), array[indices])
      self.assertEqual(got[key].dtype, tf.dtypes.as_dtype(array.dtype))

  @parameterized.named_parameters(*_LAYOUTS)
  def test_reads_inside_a_graph_keep_a_static_batch_size(self, packed):
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.arange(6, dtype=np.float32).reshape(6, 1)
    store = example_store.write_example_store(
        os.path.join(temp_dirs.temp_dir(self), 'store'), [(x, y)],
        packed=packed)

    @tf.function
    def read(indices):
      return store.read(indices)

    concrete = read.get_concrete_function(tf.TensorSpec([2], tf.int32))
    self.assertEqual([t.shape.as_list() for t in concrete.structured_outputs],
                     [[2, 2], [2, 1]])
    got_x, got_y = read(tf.constant([5, 1]))
    np.testing.assert_array_equal(got_x, x[[5, 1]])
    np.testing.assert_array_equal(got_y, y[[5, 1]])

  @parameterized.named_parameters(*_LAYOUTS)
  def test_map_fn_is_applied_on_read(self, packed):
    pixels = np.arange(8, dtype=np.uint8).reshape(4, 2)
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')
    example_store.write_example_store(directory, [(pixels,)], packed=packed)
    store = example_store.load_example_store(
        directory, map_fn=lambda b: tf.cast(b[0], tf.float32) / 2.0)
    self.assertEqual(store.packed, packed)
    np.testing.assert_allclose(store.read(tf.constant([3])), [[3.0, 3.5]])

  @parameterized.named_parameters(*_LAYOUTS)
  def test_rewrite_replaces_a_store_only_when_complete(self, packed):
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')
    example_store.write_example_store(directory,
                                      [(np.zeros([2, 1], np.int32),)])

    def failing_batches():
      yield (np.ones([3, 1], np.int32),)
      raise KeyboardInterrupt  # An interrupted write.

    with self.assertRaises(KeyboardInterrupt):
      example_store.write_example_store(directory, failing_batches(),
                                        packed=packed)
    store = example_store.load_example_store(directory)
    self.assertFalse(store.packed)
    self.assertEqual(store.num_examples, 2)  # The old store, intact.
    self.assertEqual(os.listdir(os.path.dirname(directory)), ['store'])
    example_store.write_example_store(directory, [(np.ones([3, 1], np.int32),)],
                                      packed=packed)
    store = example_store.load_example_store(directory)
    self.assertEqual((store.num_examples, store.packed), (3, packed))

  @parameterized.named_parameters(*_LAYOUTS)
  def test_bad_batches_are_refused(self, packed):
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')

    def write(batches):
      example_store.write_example_store(directory, batches, packed=packed)

    with self.assertRaisesRegex(ValueError, 'No examples'):
      write([])
    with self.assertRaisesRegex(ValueError, 'same fields'):
      write([(np.zeros([1, 2], np.float32),),
             (np.zeros([1, 3], np.float32),)])
    with self.assertRaisesRegex(ValueError, 'different lengths'):
      write([(np.zeros([2, 2]), np.zeros([3, 1]))])
    with self.assertRaisesRegex(TypeError, 'dtype'):
      write([(np.array([['a']]),)])
    with self.assertRaisesRegex(TypeError, 'tuple or a mapping'):
      write([np.zeros([2, 2])])
    self.assertFalse(os.path.exists(directory))
    self.assertEqual(os.listdir(os.path.dirname(directory)), [])

  def test_missing_or_damaged_stores_are_refused(self):
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')
    with self.assertRaisesRegex(FileNotFoundError, 'manifest.json'):
      example_store.load_example_store(directory)
    store = example_store.write_example_store(
        directory, [(np.zeros([5, 2], np.float32),)])
    os.remove(store.example_path(4))
    with self.assertRaisesRegex(ValueError, 'damaged'):
      example_store.load_example_store(directory)
    with open(os.path.join(directory, 'manifest.json'), 'w') as f:
      json.dump({'format_version': 1}, f)
    with self.assertRaisesRegex(ValueError, 'Malformed'):
      example_store.load_example_store(directory)

  def test_packed_store_that_is_too_large_is_refused(self):
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')
    # 3 examples of 8 bytes fit in 24 bytes; the fourth does not.
    with mock.patch.object(example_store, 'MAX_PACKED_BYTES', 24):
      example_store.write_example_store(
          directory, [(np.zeros([3, 2], np.float32),)], packed=True)
      with self.assertRaisesRegex(ValueError, 'packed=False'):
        example_store.write_example_store(
            directory, [(np.zeros([3, 2], np.float32),),
                        (np.zeros([1, 2], np.float32),)], packed=True)
    self.assertEqual(
        example_store.load_example_store(directory).num_examples, 3)

  def test_damaged_packed_store_is_refused(self):
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')
    store = example_store.write_example_store(
        directory, [(np.zeros([5, 2], np.float32),)], packed=True)
    self.assertEqual(os.path.getsize(store.packed_path), 5 * 8)
    with self.assertRaisesRegex(ValueError, 'no file per example'):
      store.example_path(0)
    with open(store.packed_path, 'r+b') as f:
      f.truncate(4 * 8)  # A record short.
    with self.assertRaisesRegex(ValueError, 'damaged'):
      example_store.load_example_store(directory)

  def test_manifest_without_a_layout_is_a_file_per_example(self):
    # As stores written before the packed layout existed.
    directory = os.path.join(temp_dirs.temp_dir(self), 'store')
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    example_store.write_example_store(directory, [(x,)])
    manifest_path = os.path.join(directory, 'manifest.json')
    with open(manifest_path) as f:
      manifest = json.load(f)
    self.assertEqual(manifest.pop('layout'), 'per_example')
    with open(manifest_path, 'w') as f:
      json.dump(manifest, f)
    store = example_store.load_example_store(directory)
    self.assertFalse(store.packed)
    np.testing.assert_array_equal(store.read(tf.constant([2]))[0], x[[2]])


class StoreObjectiveTest(absltest.TestCase):
  """A store-backed f_c trains exactly like the same data as numpy arrays."""

  def _run(self, objective, builder):
    model = testing_utils.linear_model()
    process = builder(model, objective)
    state = process.initialize()
    data = testing_utils.to_datasets(testing_utils.client_arrays(), 2)
    for _ in range(2):
      state = process.next(state, data).state
    return testing_utils.trainable(process, state)

  def test_same_weights_as_numpy_central_data(self):
    x, y = testing_utils.central_arrays(n=8)
    stores = {
        layout: example_store.write_example_store(
            os.path.join(temp_dirs.temp_dir(self), layout),
            [(x[:3], y[:3]), (x[3:], y[3:])], packed=packed)
        for layout, packed in _LAYOUTS}
    sgd = testing_utils.sgd
    builders = {
        # Central batches of 3 of 8: sampled indices, read from files.
        'one_way_gt': lambda m, o: tff_mixed.build_one_way_gradient_transfer(
            m, o, sgd(0.05), sgd(1.0), central_batch_size=3, client_steps=2,
            seed=4),
        'parallel_training': lambda m, o: tff_mixed.build_parallel_training(
            m, o, sgd(0.05), sgd(0.05), sgd(1.0), sgd(1.0),
            central_batch_size=3, client_steps=2, seed=4),
        # Examples sent to clients come from the store too.
        'example_transfer': lambda m, o: tff_mixed.build_example_transfer(
            m, o, sgd(0.05), sgd(1.0), examples_per_client=2,
            client_batch_size=2, client_steps=2, seed=4),
    }
    for name, builder in builders.items():
      with self.subTest(name):
        from_numpy = self._run(
            tff_mixed.central_data_objective((x, y)), builder)
        initial = [np.asarray(w) for w in testing_utils.initial_weights()]
        for layout, store in stores.items():
          from_store = self._run(tff_mixed.central_data_objective(store),
                                 builder)
          for a, b, w0 in zip(from_numpy, from_store, initial):
            np.testing.assert_array_equal(a, b, err_msg=layout)
            self.assertFalse(np.allclose(a, w0))  # It trained.

  def test_store_that_does_not_fit_the_model_is_refused(self):
    store = example_store.write_example_store(
        os.path.join(temp_dirs.temp_dir(self), 'store'),
        [(np.zeros([4, 3], np.float32), np.zeros([4, 1], np.float32))])
    with self.assertRaisesRegex(ValueError, 'does not fit the model'):
      tff_mixed.build_one_way_gradient_transfer(
          testing_utils.linear_model(),
          tff_mixed.central_data_objective(store), testing_utils.sgd(0.1),
          testing_utils.sgd(1.0), central_batch_size=2, client_steps=1)


if __name__ == '__main__':
  absltest.main()
