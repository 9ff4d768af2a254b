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
"""Example Transfer's merge as tensors equals its datasets' (merged_batches).

Each tensor computation is compared with the tf.data pipeline it replaces:
the shuffle order with `Dataset.shuffle`, the fingerprint of rows with
`transfer_select.data_fingerprint` of a dataset, the merged batches with
`client_work.MergedData`. Both in a TF1 graph (as TFF traces computations)
and in a `tf.function`. The process-level check, grouped Example Transfer
from tensors against the per-client process over 3 rounds, is
client_groups_test.py's `BatchesEqualPerClientTest`.
"""

import numpy as np
import tensorflow as tf
from absl.testing import absltest
from absl.testing import parameterized

from tff_mixed.core import client_work
from tff_mixed.core import transfer_select
from tff_mixed.simulation import merged_batches

# Seeds as `transfer_select.shuffle_seed` makes them (below 2**52), 0, and
# one above 2**31 - 1 (tf.data takes it modulo that).
_SEEDS = (0, 3, 2**31 + 5, 4_503_599_627_370_000)


def _in_graph(fn):
  """`fn()` run in a TF1 graph, as TFF runs its computations."""
  graph = tf.Graph()
  with graph.as_default():
    fetches = fn()
    with tf.compat.v1.Session(graph=graph) as session:
      return session.run(fetches)


def _in_function(fn):
  return tf.nest.map_structure(lambda t: t.numpy(), tf.function(fn)())


_RUNNERS = (('graph', _in_graph), ('function', _in_function))


def _dataset_order(size, seed):
  return tf.data.Dataset.range(size).shuffle(
      transfer_select.SHUFFLE_BUFFER_SIZE, seed=seed,
      reshuffle_each_iteration=False).batch(size).get_single_element()


class ShuffleOrderTest(parameterized.TestCase):

  @parameterized.named_parameters(*_RUNNERS)
  def test_order_is_tf_data_shuffle(self, run):
    for size in (1, 2, 7, 40):

      def both(size=size):
        seeds = tf.constant(_SEEDS, tf.int64)
        return (merged_batches.shuffle_order(size, seeds),
                tf.stack([_dataset_order(size, seeds[i])
                          for i in range(len(_SEEDS))]))

      order, expected = run(both)
      np.testing.assert_array_equal(order, expected, err_msg=f'size {size}')
      # Not the identity: the comparison is between shuffles.
      if size == 40:
        self.assertFalse(np.all(order == np.arange(size)))

  def test_larger_than_the_buffer_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'at most'):
      merged_batches.shuffle_order(transfer_select.SHUFFLE_BUFFER_SIZE + 1,
                                   tf.constant([1], tf.int64))


def _client_rows(rng, members=3, rows=6):
  """Rows of several leaf kinds: float vectors, int scalars, bool images."""
  return (rng.normal(size=(members, rows, 5)).astype(np.float32),
          rng.integers(0, 9, (members, rows)).astype(np.int64),
          rng.random((members, rows, 2, 2)) < 0.5)


class RowsFingerprintTest(parameterized.TestCase):

  @parameterized.named_parameters(*_RUNNERS)
  def test_equals_data_fingerprint(self, run):
    rows = _client_rows(np.random.default_rng(0))
    strings = np.array([[b'a', b'bc', b''], [b'x', b'yy', b'a']])

    def both():
      datasets = [
          tf.data.Dataset.from_tensor_slices(tuple(r[m] for r in rows))
          .batch(4) for m in range(3)]
      string_datasets = [tf.data.Dataset.from_tensor_slices(s).batch(2)
                         for s in strings]
      return (transfer_select.rows_fingerprint(rows),
              tf.stack([transfer_select.data_fingerprint(d)
                        for d in datasets]),
              transfer_select.rows_fingerprint(tf.constant(strings)),
              tf.stack([transfer_select.data_fingerprint(d)
                        for d in string_datasets]))

    fingerprints, expected, of_strings, strings_expected = run(both)
    np.testing.assert_array_equal(fingerprints, expected)
    self.assertLen(set(fingerprints), 3)
    np.testing.assert_array_equal(of_strings, strings_expected)

  def test_order_of_rows_does_not_matter(self):
    rows = _client_rows(np.random.default_rng(1), members=1)
    reversed_rows = tuple(r[:, ::-1] for r in rows)
    a, b = _in_function(lambda: (transfer_select.rows_fingerprint(rows),
                                 transfer_select.rows_fingerprint(
                                     reversed_rows)))
    np.testing.assert_array_equal(a, b)


class DrawRowsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # A member count known when tracing (a draw op per member) and one
      # known only when running (a loop over the members).
      ('redrawn_graph', True, _in_graph, True),
      ('fixed_function', False, _in_function, True),
      ('redrawn_unknown_count', True, _in_function, False),
  )
  def test_equals_each_members_draw(self, redraw_each_round, run,
                                    static_count):
    rows = _client_rows(np.random.default_rng(3), members=4)
    args = dict(seed=7, num_keys=3, num_examples=50,
                redraw_each_round=redraw_each_round)

    def both():
      round_num = tf.constant(2)
      datasets = [
          tf.data.Dataset.from_tensor_slices(tuple(r[m] for r in rows))
          .batch(4) for m in range(4)]
      each = [transfer_select.draw(d, round_num, **args) for d in datasets]
      held = rows
      if not static_count:
        held = tuple(tf.compat.v1.placeholder_with_default(
            r, [None, *r.shape[1:]]) for r in rows)
      return (transfer_select.draw_rows(held, round_num, **args),
              tf.stack([d.keys for d in each]),
              tf.stack([d.shuffle_seed for d in each]))

    draw, keys, shuffle_seeds = run(both)
    np.testing.assert_array_equal(draw.keys, keys)
    np.testing.assert_array_equal(draw.shuffle_seed, shuffle_seeds)
    # Members draw different central examples.
    self.assertLen({tuple(k) for k in keys}, 4)


class MergeBatchesTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # 8 local and 4 transferred examples: 3 full batches of 4, cycled by
      # 5 steps; 8 and 3 in batches of 4: the 2 steps end before the
      # partial batch; one pass (no K).
      ('full_batches_graph', 4, 4, 5, _in_graph),
      ('before_the_partial_batch_function', 3, 4, 2, _in_function),
      ('one_pass_graph', 4, 2, None, _in_graph),
  )
  def test_equals_merged_data(self, num_examples, batch_size, num_steps, run):
    rng = np.random.default_rng(2)
    local = (rng.normal(size=(3, 2, 4, 5)).astype(np.float32),
             rng.integers(0, 2, (3, 2, 4)).astype(np.int32))
    examples = (rng.normal(size=(3, num_examples, 5)).astype(np.float32),
                rng.integers(0, 2, (3, num_examples)).astype(np.int32))
    seeds = np.array(_SEEDS[1:], np.int64)
    size = 8 + num_examples
    batches = (size // batch_size if num_steps is None
               else min(num_steps, size // batch_size))

    def both():
      merged = merged_batches.merge_batches(
          local, examples, tf.constant(seeds), batch_size, num_steps)
      expected = []
      for m in range(3):
        dataset = client_work.MergedData(batch_size)(
            tf.data.Dataset.from_tensor_slices(
                tuple(l[m].reshape((8,) + l.shape[3:]) for l in local)
            ).batch(4),
            tf.data.Dataset.from_tensor_slices(
                tuple(e[m] for e in examples)),
            tf.constant(seeds[m]))
        expected.append(dataset.take(batches).batch(
            batches).get_single_element())
      return merged, expected

    merged, expected = run(both)
    for leaf, expected_leaf in zip(merged, zip(*expected)):
      self.assertEqual(leaf.shape[1:3], (batches, batch_size))
      np.testing.assert_array_equal(leaf[:, :batches],
                                    np.stack(expected_leaf))

  def test_partial_batch_to_train_on_is_refused(self):
    self.assertTrue(merged_batches.can_merge(12, 4, None))
    self.assertTrue(merged_batches.can_merge(11, 4, 2))
    self.assertFalse(merged_batches.can_merge(11, 4, 3))
    self.assertFalse(merged_batches.can_merge(11, 4, None))
    self.assertFalse(merged_batches.can_merge(3, 4, 1))
    local = np.zeros((1, 2, 4, 5), np.float32)
    with self.assertRaisesRegex(ValueError, 'partial batch'):
      merged_batches.merge_batches(local, np.zeros((1, 3, 5), np.float32),
                                   tf.constant([1], tf.int64), 4, 3)


if __name__ == '__main__':
  absltest.main()
