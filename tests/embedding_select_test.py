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
"""Tests of embedding slices by `tff.federated_select` and the scatter-back.

The oracle is dense FedAvg on the full table: a round that selects every row
a client uses and scatters the row updates back must equal it.
"""

import collections

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.core import communication
from tff_mixed.core import embedding_select
from tff_mixed.models import dual_encoder
from tff_mixed.tasks import movielens

_ROWS, _DIM, _CONTEXT, _KEYS = 30, 4, 3, 12


def _sgd(lr):
  return tff.learning.optimizers.build_sgdm(learning_rate=lr)


def _client_arrays(rng, n, movies):
  """n examples whose ids all come from `movies` (0 pads contexts)."""
  context = rng.choice(movies, (n, _CONTEXT)).astype(np.int32)
  context[rng.random((n, _CONTEXT)) < 0.3] = 0
  label = rng.choice(movies, n).astype(np.int32)
  return context, label


def _dataset(context, label, batch_size=2):
  return tf.data.Dataset.from_tensor_slices(collections.OrderedDict(
      context=context, label=label)).map(dual_encoder.model_batch).batch(
          batch_size)


def _clients(seed=0, movies_per_client=5, sizes=(4, 6, 3)):
  rng = np.random.default_rng(seed)
  arrays = []
  for n in sizes:
    movies = rng.choice(np.arange(1, _ROWS), movies_per_client, replace=False)
    arrays.append(_client_arrays(rng, n, movies))
  return arrays


def _weights(process, state):
  return [np.asarray(w) for w in process.get_model_weights(state).trainable]


class SelectKeysTest(absltest.TestCase):

  def _keys(self, context, label, keys_per_client, steps=None):
    selection = dual_encoder.build_embedding_selection(
        _ROWS, keys_per_client, _DIM, _CONTEXT)
    return embedding_select.select_keys(
        _dataset(context, label), selection, steps).numpy()

  def test_keys_match_the_numpy_reference_with_and_without_overflow(self):
    rng = np.random.default_rng(1)
    context, label = _client_arrays(rng, 9, np.arange(1, _ROWS))
    for budget in (4, 12, 29):
      with self.subTest(budget=budget):
        expected, _ = movielens.client_movie_keys(context, label, budget)
        np.testing.assert_array_equal(self._keys(context, label, budget),
                                      expected)

  def test_only_the_batches_of_k_steps_count(self):
    context = np.array([[1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0]],
                       np.int32)
    label = np.array([5, 6, 7, 8], np.int32)
    # Batches of 2: one step sees examples 0-1 only.
    np.testing.assert_array_equal(
        self._keys(context, label, 6, steps=1), [1, 2, 5, 6, 0, 0])

  def test_lookup_maps_ids_to_key_positions_and_others_to_minus_one(self):
    keys = tf.constant([3, 7, 9, 0, 0], tf.int32)
    lookup = embedding_select.local_lookup(keys, _ROWS)
    np.testing.assert_array_equal(
        lookup(tf.constant([[3, 9, -1], [7, 0, 4]])).numpy(),
        [[0, 2, -1], [1, -1, -1]])


class SelectRoundTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model = dual_encoder.build_dual_encoder(_ROWS, _DIM, _CONTEXT,
                                                seed=1)
    cls.selection = dual_encoder.build_embedding_selection(
        _ROWS, _KEYS, _DIM, _CONTEXT)
    cls.spreadout = tff_mixed.central_regularizer(
        dual_encoder.spreadout_loss_fn, name='spreadout')

  def test_parallel_training_without_central_loss_equals_dense_fedavg(self):
    data = [_dataset(*a) for a in _clients()]
    selected = tff_mixed.build_parallel_training(
        self.model, self.spreadout, _sgd(0.5), _sgd(0.5),
        central_batch_size=1, client_steps=2, federated_weight=1.0,
        central_weight=0.0, embedding_selection=self.selection)
    dense = tff.learning.algorithms.build_weighted_fed_avg(
        self.model, client_optimizer_fn=_sgd(0.5),
        server_optimizer_fn=_sgd(1.0))
    s1, s2 = selected.initialize(), dense.initialize()
    for _ in range(2):
      s1 = selected.next(s1, data).state
      s2 = dense.next(s2, [d.repeat().take(2) for d in data]).state
    initial = [np.asarray(w) for w in self.model.initial_weights[0]]
    for a, b, w0 in zip(_weights(selected, s1), _weights(dense, s2), initial):
      np.testing.assert_allclose(a, b, atol=1e-6)
      self.assertFalse(np.allclose(a, w0))

  def test_scatter_back_touches_only_the_clients_rows(self):
    (context, label), = _clients(seed=3, sizes=(6,))
    selected = tff_mixed.build_parallel_training(
        self.model, self.spreadout, _sgd(0.5), _sgd(0.5),
        central_batch_size=1, client_steps=3, federated_weight=1.0,
        central_weight=0.0, embedding_selection=self.selection)
    state = selected.next(selected.initialize(),
                          [_dataset(context, label)]).state
    table = _weights(selected, state)[0]
    initial = self.model.initial_weights[0][0]
    used = np.unique(np.concatenate([context.ravel(), label]))
    used = used[used > 0]
    changed = np.flatnonzero(np.any(table != initial, axis=1))
    self.assertNotEmpty(changed)
    self.assertTrue(set(changed) <= set(used), (changed, used))

  def test_gradient_transfer_equals_dense_when_clients_hold_every_row(self):
    # With every movie on every client, every client receives every row of
    # x and g~_c, so selecting changes nothing.
    rows = 8
    model = dual_encoder.build_dual_encoder(rows, _DIM, _CONTEXT, seed=2)
    selection = dual_encoder.build_embedding_selection(
        rows, rows - 1, _DIM, _CONTEXT)
    rng = np.random.default_rng(4)
    data = []
    for _ in range(2):
      label = rng.permutation(np.arange(1, rows)).astype(np.int32)
      context = rng.choice(np.arange(1, rows), (rows - 1, _CONTEXT))
      data.append(_dataset(context.astype(np.int32), label, batch_size=7))
    for name, build in (
        ('one_way', tff_mixed.build_one_way_gradient_transfer),
        ('two_way', tff_mixed.build_two_way_gradient_transfer)):
      with self.subTest(name):
        extra = (_sgd(0.3),) if name == 'two_way' else ()

        def make(**kwargs):
          return build(model, self.spreadout, _sgd(0.3), *extra,
                       central_batch_size=1, client_steps=1, **kwargs)

        selected, dense = make(embedding_selection=selection), make()
        s1, s2 = selected.initialize(), dense.initialize()
        for _ in range(2):
          s1 = selected.next(s1, data).state
          s2 = dense.next(s2, data).state
        for a, b in zip(_weights(selected, s1), _weights(dense, s2)):
          np.testing.assert_allclose(a, b, atol=1e-5)

  def test_only_selected_rows_travel(self):
    dense_weights = _DIM * _DIM * 4 + _DIM * 4  # kernel + bias, float32
    rows = _KEYS * _DIM * 4
    pt = tff_mixed.build_parallel_training(
        self.model, self.spreadout, _sgd(0.5), _sgd(0.5),
        central_batch_size=1, client_steps=2,
        embedding_selection=self.selection)
    gt = tff_mixed.build_one_way_gradient_transfer(
        self.model, self.spreadout, _sgd(0.5), central_batch_size=1,
        client_steps=2, embedding_selection=self.selection)
    fedavg = tff.learning.algorithms.build_weighted_fed_avg(
        self.model, client_optimizer_fn=_sgd(0.5))
    pt_cost = communication.per_client_communication(pt)
    gt_cost = communication.per_client_communication(gt)
    dense_cost = communication.per_client_communication(fedavg)
    table = _ROWS * _DIM * 4
    self.assertEqual(dense_cost.down_bytes, table + dense_weights)
    # PT: the rows (2nd in the paper's terms) plus the dense layer.
    self.assertEqual(pt_cost.down, [('federated_select', rows),
                                    ('federated_broadcast', dense_weights)])
    # GT: rows of x and of g~_c (3nd with the upload), dense layer twice.
    self.assertEqual(gt_cost.down_bytes, 2 * rows + 2 * dense_weights)
    # Up: keys, row updates, dense updates, weight; never a full table.
    self.assertIn(('federated_aggregate',
                   _KEYS * 4 + rows + dense_weights + 4), pt_cost.up)
    self.assertIn(('federated_sum', table + dense_weights), dense_cost.up)

  def test_select_sends_each_client_exactly_its_rows(self):
    table_type = tff.TensorType(np.float32, [_ROWS, _DIM])
    select_fn = embedding_select.build_select_fn(table_type)
    rows_type = tff.SequenceType(tff.TensorType(np.float32, [_DIM]))

    @tff.tensorflow.computation(rows_type)
    def stack(rows):
      return embedding_select.rows_from_sequence(rows, _KEYS, [_DIM])

    @tff.federated_computation(
        tff.FederatedType(table_type, tff.SERVER),
        tff.FederatedType(tff.TensorType(np.int32, [_KEYS]), tff.CLIENTS))
    def rows_per_client(table, keys):
      return tff.federated_map(stack, tff.federated_select(
          keys, tff.federated_value(_ROWS - 1, tff.SERVER), table,
          select_fn))

    table = np.random.default_rng(5).normal(size=(_ROWS, _DIM)).astype(
        np.float32)
    keys = [self._keys(context, label)
            for context, label in _clients(seed=6, sizes=(5, 7))]
    for rows, client_keys in zip(rows_per_client(table, keys), keys):
      np.testing.assert_array_equal(rows, table[client_keys])

  def _keys(self, context, label):
    return embedding_select.select_keys(
        _dataset(context, label), self.selection, 2).numpy()

  def test_an_empty_client_contributes_nothing(self):
    (context, label), = _clients(seed=7, sizes=(6,))
    empty = _dataset(context[:0], label[:0])
    process = tff_mixed.build_one_way_gradient_transfer(
        self.model, self.spreadout, _sgd(0.5), central_batch_size=1,
        client_steps=2, embedding_selection=self.selection)
    alone = process.next(process.initialize(),
                         [_dataset(context, label)]).state
    with_empty = process.next(process.initialize(),
                              [_dataset(context, label), empty]).state
    for a, b in zip(_weights(process, alone), _weights(process, with_empty)):
      np.testing.assert_allclose(a, b, atol=1e-6)

  def test_bad_selection_is_refused(self):
    wrong = self.selection._replace(num_rows=_ROWS + 1)
    with self.assertRaisesRegex(ValueError, 'num_rows'):
      tff_mixed.build_parallel_training(
          self.model, self.spreadout, _sgd(0.5), _sgd(0.5),
          central_batch_size=1, client_steps=2, embedding_selection=wrong)
    with self.assertRaisesRegex(ValueError, 'model_aggregator'):
      tff_mixed.build_parallel_training(
          self.model, self.spreadout, _sgd(0.5), _sgd(0.5),
          central_batch_size=1, client_steps=2,
          embedding_selection=self.selection,
          model_aggregator=tff.aggregators.SumFactory())


class DualEncoderLossTest(absltest.TestCase):

  def test_hinge_and_spreadout_match_hand_computation(self):
    embeddings = np.array([[0, 0], [1, 0], [0, 2], [3, 4]], np.float32)
    weights = (embeddings, np.eye(2, dtype=np.float32),
               np.zeros([2], np.float32))
    context = np.array([[1, -1], [1, 2]], np.int32)
    label = np.array([3, -1], np.int32)
    scores, valid = dual_encoder.pair_scores(weights, context, label)
    # Example 0: context vector (1, 0); label (3, 4)/5 -> cos = 0.6.
    self.assertAlmostEqual(float(scores[0]), 0.6, places=6)
    np.testing.assert_array_equal(valid, [1.0, 0.0])
    self.assertAlmostEqual(
        float(dual_encoder.hinge_loss(scores, valid, margin=1.0)), 0.4,
        places=6)
    # Rows 1..3 normalized: (1,0), (0,1), (.6,.8); squared dot products of
    # the 6 ordered distinct pairs: 0, .36, .64 twice each.
    self.assertAlmostEqual(float(dual_encoder.spreadout(embeddings)),
                           2 * (0.36 + 0.64) / 6, places=6)

  def test_recall_at_k_counts_labels_among_the_top_k(self):
    embeddings = np.array([[0, 0], [1, 0], [0, 1], [-1, 0]], np.float32)
    weights = (embeddings, np.eye(2, dtype=np.float32),
               np.zeros([2], np.float32))
    context = np.array([[1, -1], [1, -1]], np.int32)
    # Scores vs context (1, 0): movie 1 -> 1, 2 -> 0, 3 -> -1.
    self.assertEqual(dual_encoder.recall_at_k(
        weights, context, np.array([1, 3], np.int32), k=1), 0.5)
    self.assertEqual(dual_encoder.recall_at_k(
        weights, context, np.array([1, 3], np.int32), k=3), 1.0)


if __name__ == '__main__':
  absltest.main()
