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

Two oracles: dense FedAvg on the full table (a round that selects every row
every client uses must equal it), and, where clients hold different rows, a
round of gradient transfer replayed by hand in numpy on a bag-of-embeddings
model.
"""

import collections

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.core import communication
from tff_mixed.core import embedding_select
from tff_mixed.models import dense as dense_models
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

  def test_counts_times_a_million_rows_do_not_overflow(self):
    # The score counts * num_rows + tie-break passes 2^31 once an id
    # appears more than 2,147 times in a table of a million rows: in int32
    # it wrapped negative and the most frequent id lost to a rarer one.
    num_rows = 1_000_000
    selection = embedding_select.EmbeddingSelection(
        table_index=0, num_rows=num_rows, keys_per_client=2,
        local_model=None, ids_fn=lambda batch: batch,
        remap_fn=lambda batch, lookup: lookup(batch))
    ids = np.concatenate([np.full(3000, 999_999), np.full(5, 7),
                          np.full(2500, 12)]).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(ids).batch(1000)
    keys = embedding_select.select_keys(dataset, selection).numpy()
    # The two most frequent ids (3,000 and 2,500 times), ascending.
    np.testing.assert_array_equal(keys, [12, 999_999])

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


# --- A bag-of-embeddings model: clients hold different rows of its table. ---

_BAG_ROWS, _BAG_DIM, _BAG_KEYS = 8, 2, 4
# The ids of each client's examples (-1: none). Rows 1, 2 and 6 are held by
# one client each, row 4 by two, row 3 by all three; no client holds rows 5
# and 7, nor row 0 (the padding row). With 4 keys per client every client
# has padding slots (two, one and one).
_BAG_IDS = (
    np.array([[1, 3], [3, -1], [1, 1], [-1, 3]], np.int32),
    np.array([[2, 3], [4, 4], [3, -1], [2, 4], [4, 2], [-1, 3]], np.int32),
    np.array([[6, 3], [4, -1]], np.int32),
)
# With K = 2 steps: clients train on 4, 6 and 4 examples (the third cycles
# its single batch), so the aggregation weights differ.
_BAG_BATCH_SIZES = (2, 3, 2)
_BAG_K = 2


def _bag_model(rows, initial=None):
  """pred = (sum of the example's embedding rows) . v, squared error."""
  if initial is None:
    initial = (np.zeros([rows, _BAG_DIM], np.float32),
               np.zeros([_BAG_DIM], np.float32))

  @tf.function
  def predict_on_batch(model_weights, x, training=True):
    del training  # No dropout.
    (table, v), _ = model_weights
    mask = tf.cast(x >= 0, tf.float32)[..., tf.newaxis]
    bag = tf.reduce_sum(tf.gather(table, tf.maximum(x, 0)) * mask, axis=1)
    return tf.linalg.matvec(bag, v)

  def loss(output, label, sample_weight=None):
    del sample_weight  # Unused.
    return tf.reduce_mean(tf.square(output - label))

  return tff.learning.models.FunctionalModel(
      initial_weights=(tuple(initial), ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      metrics_fns=dense_models.mean_metric_fns(with_accuracy=False),
      input_spec=(tf.TensorSpec([None, 2], tf.int32),
                  tf.TensorSpec([None], tf.float32)))


def _bag_selection():
  return embedding_select.EmbeddingSelection(
      table_index=0, num_rows=_BAG_ROWS, keys_per_client=_BAG_KEYS,
      local_model=_bag_model(_BAG_KEYS), ids_fn=lambda batch: batch[0],
      remap_fn=lambda batch, lookup: (lookup(batch[0]), batch[1]))


def _bag_gradient(table, v, ids, y):
  """numpy gradient of mean((bag . v - y)^2) in (table, v)."""
  mask = ids >= 0
  bag = (table[np.maximum(ids, 0)] * mask[..., np.newaxis]).sum(axis=1)
  scale = 2.0 / len(y) * (bag @ v - y)
  g_table = np.zeros_like(table)
  for b, row in zip(*np.nonzero(mask)):
    g_table[ids[b, row]] += scale[b] * v
  return [g_table, scale @ bag]


class SelectedRowsRecoveryTest(absltest.TestCase):
  """Gradient transfer with clients that hold different rows, against numpy.

  The oracle is the broadcast round of Algorithm 1: every client takes its K
  steps on the whole table, applying `w_c g~_c` to every row, those it
  holds and those it does not (the server adds the latter); the table's
  update is the cohort's weighted mean of the client deltas; 2-way GT's g~_f
  is the gradient of the cohort's federated loss, the weighted mean over
  clients of their mean step gradient, zero on rows no client holds
  (arXiv:2205.13655, appendix A.2, eq. 10 with the clients' gradients zero
  on rows their loss does not touch).
  """

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    rng = np.random.default_rng(11)
    cls.x0 = [rng.normal(size=(_BAG_ROWS, _BAG_DIM)).astype(np.float32),
              np.array([0.8, -0.5], np.float32)]
    cls.model = _bag_model(_BAG_ROWS, cls.x0)
    cls.selection = _bag_selection()
    cls.labels = [rng.normal(size=len(ids)).astype(np.float32)
                  for ids in _BAG_IDS]
    cls.data = [
        tf.data.Dataset.from_tensor_slices((ids, y)).batch(b)
        for ids, y, b in zip(_BAG_IDS, cls.labels, _BAG_BATCH_SIZES)]
    table_target = rng.normal(size=(_BAG_ROWS, _BAG_DIM)).astype(np.float32)
    v_target = np.array([-0.3, 0.6], np.float32)
    cls.targets = [table_target, v_target]

    def pull_to_targets(model_weights, batch):
      # A gradient on every row, row 0 included: x - target.
      del batch  # Data-free.
      (table, v), _ = model_weights
      return (tf.reduce_sum(tf.square(table - table_target))
              + tf.reduce_sum(tf.square(v - v_target))) / 2

    cls.regularizer = tff_mixed.central_regularizer(pull_to_targets)
    cls.w_f, cls.w_c = 0.6, 0.4
    cls.lr, cls.lr_c, cls.lr_s, cls.lr_m, cls.k_c = 0.1, 0.2, 0.9, 0.8, 3

  def _central_gradient(self, x):
    return [xi - t for xi, t in zip(x, self.targets)]

  def _clients(self, x, augmenting, uniform=False):
    """(cohort mean update, cohort mean client gradient) of one round.

    `uniform`: every client (with data) weighs 1 instead of its examples.
    """
    updates, gradients, weights = [], [], []
    for ids, y, batch_size in zip(_BAG_IDS, self.labels, _BAG_BATCH_SIZES):
      batches = [(ids[i:i + batch_size], y[i:i + batch_size])
                 for i in range(0, len(y), batch_size)]
      current = [p.copy() for p in x]
      gradient_sum = [np.zeros_like(p) for p in x]
      examples = 0
      for step in range(_BAG_K):
        bx, by = batches[step % len(batches)]
        g = _bag_gradient(*current, bx, by)
        gradient_sum = [s + gi for s, gi in zip(gradient_sum, g)]
        current = [c - self.lr * (self.w_f * gi + self.w_c * ai)
                   for c, gi, ai in zip(current, g, augmenting)]
        examples += len(by)
      updates.append([p - c for p, c in zip(x, current)])
      gradients.append([s / _BAG_K for s in gradient_sum])
      weights.append(1 if uniform else examples)
    total = float(sum(weights))

    def mean(values):
      return [sum(w * v[i] for v, w in zip(values, weights)) / total
              for i in range(2)]

    return mean(updates), mean(gradients)

  def _build_two_way(self, option, **kwargs):
    if option is not None:
      kwargs['augmenting_central_gradient'] = option
    return tff_mixed.build_two_way_gradient_transfer(
        self.model, self.regularizer, _sgd(self.lr), _sgd(self.lr_c),
        _sgd(self.lr_s), _sgd(self.lr_m), central_batch_size=1,
        client_steps=_BAG_K, central_steps=self.k_c,
        federated_weight=self.w_f, central_weight=self.w_c,
        embedding_selection=self.selection, **kwargs)

  def _check_two_way(self, option, uniform=False, with_empty=False):
    process = self._build_two_way(option, **(dict(
        client_weighting=tff.learning.ClientWeighting.UNIFORM)
                                             if uniform else {}))
    fresh = option == 'fresh'
    data = self.data
    if with_empty:
      # A client without data: it takes no step, so it neither moves the
      # model nor applies w_c g~_c, and the oracle leaves it out.
      data = data + [self.data[0].unbatch().take(0).batch(2)]
    state = process.initialize()
    x = [p.copy() for p in self.x0]
    g_f = [np.zeros_like(p) for p in x]
    g_c = [np.zeros_like(p) for p in x]
    for round_num in range(2):
      state = process.next(state, data).state
      augmenting = self._central_gradient(x) if fresh else g_c
      mean_update, mean_gradient = self._clients(x, augmenting, uniform)
      x_f = [xi - self.lr_s * u for xi, u in zip(x, mean_update)]
      x_c, central_gradients = [p.copy() for p in x], []
      for _ in range(self.k_c):
        g = self._central_gradient(x_c)
        central_gradients.append(g)
        x_c = [c - self.lr_c * (self.w_c * gi + self.w_f * fi)
               for c, gi, fi in zip(x_c, g, g_f)]
      x = [xi + self.lr_m * (self.w_f * (f - xi) + self.w_c * (c - xi))
           for xi, f, c in zip(x, x_f, x_c)]
      g_f = mean_gradient
      g_c = [np.mean([g[i] for g in central_gradients], axis=0)
             for i in range(2)]
      for name, got, want in (
          ('model', _weights(process, state), x),
          ('g~_f', state.finalizer['federated_gradient'], g_f)):
        for i, (a, b) in enumerate(zip(got, want)):
          np.testing.assert_allclose(
              a, b, atol=1e-5,
              err_msg=f'{name}, weight {i}, after round {round_num}')
      if not fresh:
        carried = state.central_work['central_gradient']
        for i, (a, b) in enumerate(zip(carried, g_c)):
          np.testing.assert_allclose(
              a, b, atol=1e-5,
              err_msg=f'g~_c, weight {i}, after round {round_num}')
    # Rows no client holds: no federated gradient (up to the rounding of
    # adding the others' w_c g~_c steps and taking them out again).
    np.testing.assert_allclose(
        np.asarray(state.finalizer['federated_gradient'][0])[[0, 5, 7]], 0.0,
        atol=1e-6)

  def test_two_way_with_algorithm_1_augmenting_gradients(self):
    self._check_two_way(None)  # The default: 'previous_round_mean'.

  def test_two_way_with_fresh_augmenting_central_gradient(self):
    self._check_two_way('fresh')

  def test_two_way_uniform_weighting_leaves_an_empty_client_out(self):
    # Under uniform weighting an empty client counted with weight 1 in the
    # per-row and the other weights' means while the recovery of g~_f
    # treated the non-table weights as applied by the whole cohort.
    self._check_two_way(None, uniform=True, with_empty=True)

  def _build_one_way(self, **kwargs):
    return tff_mixed.build_one_way_gradient_transfer(
        self.model, self.regularizer, _sgd(self.lr), central_batch_size=1,
        client_steps=_BAG_K, federated_weight=self.w_f,
        central_weight=self.w_c, **kwargs)

  def test_one_way_round_equals_the_broadcast_round(self):
    # g~_c = grad f_c(x^(0)) is nonzero on every row. No client holds rows
    # 0, 5 or 7, and every client has padding slots: those rows must move
    # exactly as in the broadcast round (by the clients' w_c g~_c steps),
    # whatever the padding slots held.
    selected = self._build_one_way(embedding_selection=self.selection)
    broadcast = self._build_one_way()
    s1, s2 = selected.initialize(), broadcast.initialize()
    x = [p.copy() for p in self.x0]
    for round_num in range(2):
      s1 = selected.next(s1, self.data).state
      s2 = broadcast.next(s2, self.data).state
      mean_update, _ = self._clients(x, self._central_gradient(x))
      x = [xi - u for xi, u in zip(x, mean_update)]
      for i, (a, b, want) in enumerate(zip(_weights(selected, s1),
                                           _weights(broadcast, s2), x)):
        np.testing.assert_allclose(
            a, want, atol=1e-5,
            err_msg=f'weight {i} after round {round_num}')
        np.testing.assert_allclose(a, b, atol=1e-5)
    self.assertFalse(np.allclose(_weights(selected, s1)[0][[0, 5, 7]],
                                 self.x0[0][[0, 5, 7]]))

  def test_a_round_without_a_client_of_weight_leaves_the_table(self):
    process = self._build_one_way(embedding_selection=self.selection)
    empty = self.data[0].unbatch().take(0).batch(2)
    state = process.next(process.initialize(), [empty]).state
    for got, want in zip(_weights(process, state), self.x0):
      np.testing.assert_array_equal(got, want)

  def test_one_way_selection_needs_k_steps_of_plain_sgd(self):
    with self.assertRaisesRegex(ValueError, 'client_steps'):
      tff_mixed.build_one_way_gradient_transfer(
          self.model, self.regularizer, _sgd(self.lr), central_batch_size=1,
          embedding_selection=self.selection)
    with self.assertRaisesRegex(ValueError, 'plain SGD.*did not receive'):
      tff_mixed.build_one_way_gradient_transfer(
          self.model, self.regularizer,
          tff.learning.optimizers.build_sgdm(self.lr, momentum=0.9),
          central_batch_size=1, client_steps=_BAG_K,
          embedding_selection=self.selection)


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
