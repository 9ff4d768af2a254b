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
"""Numpy oracles with central data spanning several batches.

`algorithms_test.py` replays rounds whose central batch is the whole central
set. Here the central set (11 examples) is sampled in batches of 4, Parallel
Training takes K_c = 3 central steps a round, the clients hold different
numbers of examples that are not multiples of their batch size (partial last
batches, one client smaller than a batch) and every process runs 2 rounds.
All math is numpy in float64; the process's sampler is called eagerly only
to learn which rows each central batch holds.

What "shuffling" means in this code, and so what the oracles replay:

* Central data: every central step of every round draws its own batch with
  `central_objective.sample_batch` from `(seed, round, step)`: a uniformly
  random set of `central_batch_size` distinct rows (without replacement
  within the batch; batches of different steps and rounds are independent,
  so they may share rows). There are no epochs over the central set, hence
  no partial last central batch: every batch has exactly
  `central_batch_size` rows, also when the set size is not a multiple of it.
* Client data: the process never reorders a client's dataset (Example
  Transfer aside, which shuffles the merged examples); it trains on the
  batches in the order the dataset yields them, cycling them when
  `client_steps` is set. A user who shuffles client data does so in the
  dataset; the last test feeds a seeded shuffle and replays its order.

The (G, B)-BGD diagnostics are checked against arXiv:2205.13655, eq. 7,
written as the paper writes it: with the mixing weights subsumed into the
losses, grad f_f = w_f * mean_i g_i and grad f_c = w_c * g_c, where g_i is
client i's loss gradient at x^(t) on its first batch, the mean over the
cohort is unweighted ((1/S) sum_i), and g_c is the gradient on the round's
first central batch.
"""

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

from experiments.common import scenarios as scenarios_lib
from tests import testing_utils as tu
import tff_mixed
from tff_mixed.core import central_objective as central_lib

ATOL = 1e-6
ROUNDS = 2
SEED = 5
NUM_CENTRAL = 11
CENTRAL_BATCH = 4
CLIENT_SIZES = (5, 7, 2)
CLIENT_BATCH = 3
W_F, W_C = 0.7, 0.3
LR, LR_C, LR_S, LR_M = 0.1, 0.05, 0.9, 0.8


def central_rows(round_num, step, batch_size=CENTRAL_BATCH, seed=SEED):
  """The rows of central batch `step` of round `round_num`, sorted.

  Calls the process's own seeded sampler on a set of row ids: the oracle
  learns which rows a batch holds, and does all arithmetic itself.
  """
  row_ids = tff_mixed.central_data_objective(
      (np.arange(NUM_CENTRAL, dtype=np.int32),))
  (rows,) = central_lib.sample_batch(row_ids, batch_size, seed,
                                     tf.constant(round_num, tf.int32),
                                     tf.constant(step, tf.int32))
  return np.sort(rows.numpy())


def _f64(params):
  return [np.asarray(p, np.float64) for p in params]


def _flat(params):
  return np.concatenate([np.ravel(p) for p in params])


def mse_loss(params, x, y):
  w, b = params
  return float(np.mean((x @ w + b - y)**2))


def equation_7(probes, central_gradient, w_f, w_c):
  """(G~_t^2, B~_t^2) of arXiv:2205.13655, eq. 7, from raw gradients.

  The paper's losses include the mixing weights (its footnote 2), so its
  grad f_f is w_f times the unweighted cohort mean of the client gradients
  and its grad f_c is w_c times the central gradient.
  """
  grad_f = w_f * np.mean([_flat(p) for p in probes], axis=0)
  grad_c = w_c * _flat(central_gradient)
  grad = grad_f + grad_c
  mixed = grad_f @ grad_f / w_f + grad_c @ grad_c / w_c
  return mixed - grad @ grad, mixed / (grad @ grad)


class _OracleBase(absltest.TestCase):
  """Shared data and the numpy pieces of a round."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.clients = tu.client_arrays(seed=7, sizes=CLIENT_SIZES)
    cls.central = tu.central_arrays(n=NUM_CENTRAL)
    cls.objective = tff_mixed.central_data_objective(cls.central)
    cls.datasets = tu.to_datasets(cls.clients, batch_size=CLIENT_BATCH)
    cls.x0 = _f64(tu.initial_weights())

  def central_gradient(self, params, rows):
    return tu.mse_gradient(params, self.central[0][rows],
                           self.central[1][rows])

  def probes(self, params):
    """g_i(x^(t)) on each client's first batch (a partial one for 2 rows)."""
    return [tu.mse_gradient(params, x[:CLIENT_BATCH], y[:CLIENT_BATCH])
            for x, y in self.clients]

  def assert_weights(self, got, want, atol=ATOL):
    for g, w in zip(got, want):
      np.testing.assert_allclose(g, w, atol=atol, rtol=0)


class ParallelTrainingOracleTest(_OracleBase):
  """PT: K = 3 client steps and K_c = 3 central steps on sampled batches."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.client_steps, cls.central_steps = 3, 3
    process = tff_mixed.build_parallel_training(
        tu.linear_model(), cls.objective, tu.sgd(LR), tu.sgd(LR_C),
        tu.sgd(LR_S), tu.sgd(LR_M), central_batch_size=CENTRAL_BATCH,
        central_steps=cls.central_steps, client_steps=cls.client_steps,
        federated_weight=W_F, central_weight=W_C, seed=SEED,
        with_diagnostics=True)
    state = process.initialize()
    cls.weights, cls.metrics = [], []
    for _ in range(ROUNDS):
      output = process.next(state, cls.datasets)
      state = output.state
      cls.weights.append(tu.trainable(process, state))
      cls.metrics.append(output.metrics['central'])

  def oracle_round(self, x, round_num, central_rows_fn=central_rows):
    updates, weights = [], []
    for cx, cy in self.clients:
      # Cycling batches of 3: the 2-row client trains on [2, 2, 2] rows,
      # the 5-row one on [3, 2, 3]; example weights are the rows trained on.
      u, n, _ = tu.client_update(
          x, tu.batches(cx, cy, CLIENT_BATCH, self.client_steps), LR)
      updates.append(u)
      weights.append(n)
    mean_update = tu.weighted_mean(updates, weights)
    x_f = [xi - LR_S * u for xi, u in zip(x, mean_update)]
    x_c = [xi.copy() for xi in x]
    for step in range(self.central_steps):
      g = self.central_gradient(x_c, central_rows_fn(round_num, step))
      x_c = [c - LR_C * gi for c, gi in zip(x_c, g)]
    return [xi + LR_M * (W_F * (f - xi) + W_C * (c - xi))
            for xi, f, c in zip(x, x_f, x_c)]

  def oracle_trajectory(self, central_rows_fn=central_rows):
    points, x = [], self.x0
    for t in range(ROUNDS):
      x = self.oracle_round(x, t, central_rows_fn)
      points.append(x)
    return points

  def test_batches_differ_between_steps_and_rounds(self):
    batches = [tuple(central_rows(t, k)) for t in range(ROUNDS)
               for k in range(self.central_steps)]
    self.assertTrue(all(len(b) == CENTRAL_BATCH for b in batches))
    self.assertLen(set(batches), len(batches))

  def test_model_matches_oracle_over_two_rounds(self):
    expected = self.oracle_trajectory()
    for t in range(ROUNDS):
      with self.subTest(round=t):
        self.assert_weights(self.weights[t], expected[t])
    # The check can tell the sampled batches apart: the same replay on the
    # whole central set, or with step 0's batch at every step, is far off.
    for name, rows_fn in (
        ('full_set', lambda t, k: np.arange(NUM_CENTRAL)),
        ('one_batch_per_round', lambda t, k: central_rows(t, 0))):
      wrong = self.oracle_trajectory(rows_fn)
      self.assertGreater(
          np.abs(_flat(wrong[-1]) - _flat(expected[-1])).max(), 100 * ATOL,
          name)

  def test_central_loss_is_the_first_batch_loss_at_x_t(self):
    x = self.x0
    for t in range(ROUNDS):
      rows = central_rows(t, 0)
      self.assertAlmostEqual(
          float(self.metrics[t]['loss']),
          mse_loss(x, self.central[0][rows], self.central[1][rows]),
          places=5)
      x = self.oracle_round(x, t)

  def test_diagnostics_match_equation_7(self):
    x = self.x0
    for t in range(ROUNDS):
      g2, b2 = equation_7(self.probes(x),
                          self.central_gradient(x, central_rows(t, 0)),
                          W_F, W_C)
      with self.subTest(round=t):
        np.testing.assert_allclose(
            [self.metrics[t]['bgd_G2'], self.metrics[t]['bgd_B2']],
            [g2, b2], rtol=1e-4)
      x = self.oracle_round(x, t)


class OneWayGradientTransferOracleTest(_OracleBase):
  """1-way GT: one pass over partial batches, g~_c on a sampled batch."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(), cls.objective, tu.sgd(LR), tu.sgd(LR_S),
        central_batch_size=CENTRAL_BATCH, client_steps=None,
        federated_weight=W_F, central_weight=W_C,
        client_weighting=tff.learning.ClientWeighting.UNIFORM, seed=SEED,
        with_diagnostics=True)
    state = process.initialize()
    cls.weights, cls.metrics = [], []
    for _ in range(ROUNDS):
      output = process.next(state, cls.datasets)
      state = output.state
      cls.weights.append(tu.trainable(process, state))
      cls.metrics.append(output.metrics['central'])

  def oracle_round(self, x, round_num, central_rows_fn=central_rows):
    g_c = self.central_gradient(x, central_rows_fn(round_num, 0))
    updates = []
    for cx, cy in self.clients:
      # One pass: batches of [3, 2], [3, 3, 1] and [2] rows.
      u, _, _ = tu.client_update(x, tu.batches(cx, cy, CLIENT_BATCH), LR,
                                 g_c, W_F, W_C)
      updates.append(u)
    mean_update = tu.weighted_mean(updates, [1.0] * len(updates))
    return [xi - LR_S * u for xi, u in zip(x, mean_update)]

  def test_model_matches_oracle_over_two_rounds(self):
    x = self.x0
    for t in range(ROUNDS):
      x = self.oracle_round(x, t)
      with self.subTest(round=t):
        self.assert_weights(self.weights[t], x)
    # Round 1 must use its own central batch, not round 0's.
    x1 = self.oracle_round(self.x0, 0)
    stale = self.oracle_round(x1, 1, lambda t, k: central_rows(0, 0))
    self.assertGreater(np.abs(_flat(stale) - _flat(x)).max(), 100 * ATOL)

  def test_central_loss_is_the_sampled_batch_loss_at_x_t(self):
    x = self.x0
    for t in range(ROUNDS):
      rows = central_rows(t, 0)
      self.assertAlmostEqual(
          float(self.metrics[t]['loss']),
          mse_loss(x, self.central[0][rows], self.central[1][rows]),
          places=5)
      x = self.oracle_round(x, t)

  def test_diagnostics_match_equation_7(self):
    x = self.x0
    for t in range(ROUNDS):
      probes = self.probes(x)
      g_c = self.central_gradient(x, central_rows(t, 0))
      g2, b2 = equation_7(probes, g_c, W_F, W_C)
      with self.subTest(round=t):
        np.testing.assert_allclose(
            [self.metrics[t]['bgd_G2'], self.metrics[t]['bgd_B2']],
            [g2, b2], rtol=1e-4)
      x = self.oracle_round(x, t)
    # The cohort mean is unweighted, as in eq. 7: an example-weighted mean
    # of the probes gives other values, so the check tells them apart.
    sizes = np.array(CLIENT_SIZES, np.float64)
    weighted = [sum(s * p[i] for s, p in zip(sizes, probes)) / sizes.sum()
                for i in range(2)]
    g2_weighted, _ = equation_7([weighted], g_c, W_F, W_C)
    self.assertGreater(abs(g2_weighted - g2), 1e-3 * abs(g2))


class UserShuffledClientDataTest(_OracleBase):
  """Clients train on their dataset in the order it yields, shuffled or not."""

  def test_seeded_shuffle_is_replayed_in_its_own_order(self):
    # `reshuffle_each_iteration=False`: one fixed order, which the process
    # sees as the oracle does. (A reshuffling dataset gives every pass over
    # it, including the process's own passes, its own order.)
    datasets, shuffled = [], []
    for i, (x, y) in enumerate(self.clients):
      dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(
          len(x), seed=10 + i, reshuffle_each_iteration=False)
      order = [(a, b) for a, b in dataset.as_numpy_iterator()]
      shuffled.append((np.stack([a for a, _ in order]),
                       np.stack([b for _, b in order])))
      datasets.append(dataset.batch(CLIENT_BATCH))
    self.assertFalse(all(np.array_equal(s[0], c[0])
                         for s, c in zip(shuffled, self.clients)))
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(), self.objective, tu.sgd(LR), tu.sgd(LR_S),
        central_batch_size=CENTRAL_BATCH, client_steps=2,
        federated_weight=W_F, central_weight=W_C, seed=SEED)
    state = process.next(process.initialize(), datasets).state
    g_c = self.central_gradient(self.x0, central_rows(0, 0))
    updates, weights = [], []
    for x, y in shuffled:
      u, n, _ = tu.client_update(
          self.x0, tu.batches(x, y, CLIENT_BATCH, 2), LR, g_c, W_F, W_C)
      updates.append(u)
      weights.append(n)
    mean_update = tu.weighted_mean(updates, weights)
    self.assert_weights(
        tu.trainable(process, state),
        [xi - LR_S * u for xi, u in zip(self.x0, mean_update)])


  def test_diagnostics_do_not_change_what_a_reshuffling_dataset_trains(self):
    # `shuffle(seed=...)` reshuffles by default: every pass over the dataset
    # within one computation has its own order. The probe gradient of eq. 7
    # must come from the pass that trains (it is the first step's gradient,
    # at x^(t)), so that turning diagnostics on cannot change the model.
    datasets = [
        tf.data.Dataset.from_tensor_slices((x, y)).shuffle(
            len(x), seed=20 + i).batch(CLIENT_BATCH)
        for i, (x, y) in enumerate(self.clients)]
    weights = []
    for with_diagnostics in (False, True):
      process = tff_mixed.build_one_way_gradient_transfer(
          tu.linear_model(), self.objective, tu.sgd(LR), tu.sgd(LR_S),
          central_batch_size=CENTRAL_BATCH, client_steps=2,
          federated_weight=W_F, central_weight=W_C, seed=SEED,
          with_diagnostics=with_diagnostics)
      state = process.next(process.initialize(), datasets).state
      weights.append(tu.trainable(process, state))
    self.assert_weights(weights[1], weights[0], atol=1e-7)


class ExperimentDiagnosticsTest(_OracleBase):
  """The experiments' processes (label_imbalance, celeba_smile) report eq. 7.

  `scenarios_lib.build_process` is what both experiments' diagnostics
  runs use: w_f = w_c = 0.5, the per-algorithm central batch size and seed.
  """

  def test_parallel_training_and_one_way_gt(self):
    sizes = scenarios_lib.CentralBatchSizes(
        parallel_training=CENTRAL_BATCH, one_way_gt=CENTRAL_BATCH + 1,
        two_way_gt=CENTRAL_BATCH)
    for scenario, batch_size in (
        (scenarios_lib.PARALLEL_TRAINING, sizes.parallel_training),
        (scenarios_lib.ONE_WAY_GT, sizes.one_way_gt)):
      with self.subTest(scenario):
        process = scenarios_lib.build_process(
            scenario, tu.linear_model(), self.central, client_lr=LR,
            client_steps=2, central_batch_sizes=sizes, examples_per_client=1,
            client_batch_size=CLIENT_BATCH, seed=SEED, with_diagnostics=True)
        metrics = process.next(process.initialize(),
                               self.datasets).metrics['central']
        g_c = self.central_gradient(
            self.x0, central_rows(0, 0, batch_size=batch_size))
        np.testing.assert_allclose(
            [metrics['bgd_G2'], metrics['bgd_B2']],
            equation_7(self.probes(self.x0), g_c, 0.5, 0.5), rtol=1e-4)


if __name__ == '__main__':
  absltest.main()
