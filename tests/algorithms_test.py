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
"""Numeric proofs of correctness of the mixed FL algorithms.

Each test runs a real TFF process and compares its weights with an oracle:
a round replayed by hand in numpy, TFF's own `build_weighted_fed_avg`, or
another algorithm that the paper says must make the same progress
(arXiv:2205.13655, appendix A.3: with K = 1 the algorithms coincide).
"""

from unittest import mock

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tests import testing_utils as tu
from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import central_work

ATOL = 1e-5


class HandComputedRoundTest(absltest.TestCase):
  """One or two rounds of each algorithm equal a numpy replay."""

  def setUp(self):
    super().setUp()
    self.model = tu.linear_model()
    self.clients = tu.client_arrays()
    self.datasets = tu.to_datasets(self.clients, batch_size=2)
    self.central = tu.central_arrays()
    # A central batch as large as the central set is the full set, so the
    # oracle needs no copy of the sampler.
    self.objective = tff_mixed.central_data_objective(self.central)
    self.x0 = [w.copy() for w in tu.initial_weights()]
    self.lr, self.lr_c, self.lr_s, self.lr_m = 0.1, 0.05, 0.9, 0.8
    self.w_f, self.w_c = 0.7, 0.3
    self.k, self.k_c = 2, 3

  def _mean_client_update(self, params, augmenting=None):
    updates, weights = [], []
    for x, y in self.clients:
      u, n, _ = tu.client_update(params, tu.batches(x, y, 2, self.k), self.lr,
                                 augmenting, self.w_f, self.w_c)
      updates.append(u)
      weights.append(n)
    return tu.weighted_mean(updates, weights)

  def _central_steps(self, params, federated_gradient=None):
    x_c = [p.copy() for p in params]
    for _ in range(self.k_c):
      g = tu.mse_gradient(x_c, *self.central)
      if federated_gradient is not None:
        g = [self.w_c * gi + self.w_f * fi
             for gi, fi in zip(g, federated_gradient)]
      x_c = [c - self.lr_c * gi for c, gi in zip(x_c, g)]
    return x_c

  def _merge(self, x, x_f, x_c):
    return [xi + self.lr_m * (self.w_f * (f - xi) + self.w_c * (c - xi))
            for xi, f, c in zip(x, x_f, x_c)]

  def test_parallel_training(self):
    process = tff_mixed.build_parallel_training(
        self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_c),
        tu.sgd(self.lr_s), tu.sgd(self.lr_m),
        central_batch_size=tu.CENTRAL_EXAMPLES, central_steps=self.k_c,
        client_steps=self.k,
        federated_weight=self.w_f, central_weight=self.w_c)
    state = process.next(process.initialize(), self.datasets).state
    mean_update = self._mean_client_update(self.x0)
    x_f = [x - self.lr_s * u for x, u in zip(self.x0, mean_update)]
    expected = self._merge(self.x0, x_f, self._central_steps(self.x0))
    for got, want in zip(tu.trainable(process, state), expected):
      np.testing.assert_allclose(got, want, atol=ATOL)

  def test_one_way_gradient_transfer(self):
    process = tff_mixed.build_one_way_gradient_transfer(
        self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_s),
        central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=self.k,
        federated_weight=self.w_f, central_weight=self.w_c)
    output = process.next(process.initialize(), self.datasets)
    g_c = tu.mse_gradient(self.x0, *self.central)
    mean_update = self._mean_client_update(self.x0, augmenting=g_c)
    expected = [x - self.lr_s * u for x, u in zip(self.x0, mean_update)]
    for got, want in zip(tu.trainable(process, output.state), expected):
      np.testing.assert_allclose(got, want, atol=ATOL)
    w, b = self.x0
    central_loss = np.mean((self.central[0] @ w + b - self.central[1])**2)
    self.assertAlmostEqual(output.metrics['central']['loss'], central_loss,
                           places=5)

  def test_two_way_gradient_transfer_two_rounds(self):
    # Algorithm 1: round t's clients use g~_c^(t) and its central steps use
    # g~_f^(t), both zero in round 0; the round yields g~_f^(t+1) (eq. 10)
    # and g~_c^(t+1), the mean gradient of its K_c central steps.
    process = tff_mixed.build_two_way_gradient_transfer(
        self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_c),
        tu.sgd(self.lr_s), tu.sgd(self.lr_m),
        central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=self.k,
        central_steps=self.k_c, federated_weight=self.w_f,
        central_weight=self.w_c)
    state = process.initialize()
    x = self.x0
    federated_gradient = [np.zeros_like(p) for p in x]
    central_gradient = [np.zeros_like(p) for p in x]
    for _ in range(2):
      state = process.next(state, self.datasets).state
      mean_update = self._mean_client_update(x, augmenting=central_gradient)
      x_f = [xi - self.lr_s * u for xi, u in zip(x, mean_update)]
      x_c, central_gradients = [p.copy() for p in x], []
      for _ in range(self.k_c):
        g = tu.mse_gradient(x_c, *self.central)
        central_gradients.append(g)
        x_c = [c - self.lr_c * (self.w_c * gi + self.w_f * fi)
               for c, gi, fi in zip(x_c, g, federated_gradient)]
      x = self._merge(x, x_f, x_c)
      federated_gradient = [
          (u / (self.lr * self.k) - self.w_c * c) / self.w_f
          for u, c in zip(mean_update, central_gradient)]
      central_gradient = [np.mean([g[i] for g in central_gradients], axis=0)
                          for i in range(2)]
    for got, want in zip(tu.trainable(process, state), x):
      np.testing.assert_allclose(got, want, atol=ATOL)
    for got, want in zip(state.finalizer['federated_gradient'],
                         federated_gradient):
      np.testing.assert_allclose(got, want, atol=1e-4)
    for got, want in zip(state.central_work['central_gradient'],
                         central_gradient):
      np.testing.assert_allclose(got, want, atol=1e-5)

  def test_two_way_gradient_transfer_with_fresh_central_gradient(self):
    # The 'fresh' option: g~_c is grad f_c(x^(t)) on the round's first
    # central batch, as in 1-way GT; g~_f as in Algorithm 1.
    process = tff_mixed.build_two_way_gradient_transfer(
        self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_c),
        tu.sgd(self.lr_s), tu.sgd(self.lr_m),
        central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=self.k,
        central_steps=self.k_c, federated_weight=self.w_f,
        central_weight=self.w_c,
        augmenting_central_gradient='fresh')
    state = process.initialize()
    x = self.x0
    federated_gradient = [np.zeros_like(p) for p in x]
    for _ in range(2):
      state = process.next(state, self.datasets).state
      g_c = tu.mse_gradient(x, *self.central)
      mean_update = self._mean_client_update(x, augmenting=g_c)
      x_f = [xi - self.lr_s * u for xi, u in zip(x, mean_update)]
      x_c = self._central_steps(x, federated_gradient)
      x = self._merge(x, x_f, x_c)
      federated_gradient = [
          (u / (self.lr * self.k) - self.w_c * c) / self.w_f
          for u, c in zip(mean_update, g_c)]
    for got, want in zip(tu.trainable(process, state), x):
      np.testing.assert_allclose(got, want, atol=ATOL)
    for got, want in zip(state.finalizer['federated_gradient'],
                         federated_gradient):
      np.testing.assert_allclose(got, want, atol=1e-4)
    self.assertEqual(state.central_work['central_gradient'], ())

  def test_example_transfer(self):
    # One local batch holding all merged examples: the shuffle order cannot
    # change the step, so the oracle is exact.
    process = tff_mixed.build_example_transfer(
        self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_s),
        examples_per_client=100, client_batch_size=100)
    state = process.next(process.initialize(), self.datasets).state
    updates, weights = [], []
    for x, y in self.clients:
      merged = (np.concatenate([x, self.central[0]]),
                np.concatenate([y, self.central[1]]))
      u, n, _ = tu.client_update(self.x0, [merged], self.lr)
      updates.append(u)
      weights.append(n)
    mean_update = tu.weighted_mean(updates, weights)
    expected = [x - self.lr_s * u for x, u in zip(self.x0, mean_update)]
    for got, want in zip(tu.trainable(process, state), expected):
      np.testing.assert_allclose(got, want, atol=ATOL)

  def test_fedavg_with_shared_data_warmup_and_round(self):
    # beta * |D| = 8 = all central examples, alpha = 1: G is the central set.
    process = tff_mixed.build_fedavg_with_shared_data(
        self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_s),
        beta=8 / 12, alpha=1.0, num_client_examples=12,
        client_batch_size=100, warmup_steps=2, warmup_learning_rate=0.2,
        warmup_batch_size=100)
    state = process.initialize()
    x = [w.copy() for w in self.x0]
    for _ in range(2):
      g = tu.mse_gradient(x, *self.central)
      x = [xi - 0.2 * gi for xi, gi in zip(x, g)]
    for got, want in zip(tu.trainable(process, state), x):
      np.testing.assert_allclose(got, want, atol=ATOL)
    state = process.next(state, self.datasets).state
    updates, weights = [], []
    for cx, cy in self.clients:
      merged = (np.concatenate([cx, self.central[0]]),
                np.concatenate([cy, self.central[1]]))
      u, n, _ = tu.client_update(x, [merged], self.lr)
      updates.append(u)
      weights.append(n)
    mean_update = tu.weighted_mean(updates, weights)
    expected = [xi - self.lr_s * u for xi, u in zip(x, mean_update)]
    for got, want in zip(tu.trainable(process, state), expected):
      np.testing.assert_allclose(got, want, atol=ATOL)

  def test_diagnostics_match_equation_7(self):
    process = tff_mixed.build_one_way_gradient_transfer(
        self.model, self.objective, tu.sgd(self.lr),
        central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=self.k,
        federated_weight=self.w_f,
        central_weight=self.w_c, with_diagnostics=True)
    metrics = process.next(process.initialize(), self.datasets).metrics
    probes = [tu.mse_gradient(self.x0, x[:2], y[:2]) for x, y in self.clients]
    g_f = np.concatenate(
        [np.mean([p[i] for p in probes], axis=0).ravel() for i in range(2)])
    g_c = np.concatenate(
        [g.ravel() for g in tu.mse_gradient(self.x0, *self.central)])
    weighted = self.w_f * g_f @ g_f + self.w_c * g_c @ g_c
    total = self.w_f * g_f + self.w_c * g_c
    self.assertAlmostEqual(metrics['central']['bgd_G2'],
                           weighted - total @ total, places=4)
    self.assertAlmostEqual(metrics['central']['bgd_B2'],
                           weighted / (total @ total), places=4)
    # Sampled central batches, several rounds, unequal client weights and
    # Parallel Training: tests/central_oracle_test.py.


class TwoWayAugmentingGradientsTest(absltest.TestCase):
  """Two rounds of 2-way GT against numpy, central batches sampled.

  arXiv:2205.13655, Algorithm 1: the augmenting gradients g~_c^(t), g~_f^(t)
  are inputs of round t (zero at t = 0). With the default,
  g~_c^(t+1) is the mean of round t's K_c central gradients (the central
  analogue of eq. 10, appendix C.3's meta-SCAFFOLD); with 'fresh' it is the
  gradient at x^(t+1) on that round's first central batch. g~_f^(t+1) comes
  from round t's aggregated update (eq. 10) less the g~_c the clients used.
  The central set (11 examples) is not a multiple of the central batch (4),
  and CENTRALOPTIMIZER has momentum, so its state is checked too.
  """

  def setUp(self):
    super().setUp()
    self.model = tu.linear_model()
    self.clients = tu.client_arrays(seed=5, sizes=(4, 6, 3))
    self.datasets = tu.to_datasets(self.clients, batch_size=2)
    self.central = tu.central_arrays(seed=2, n=11)
    self.objective = tff_mixed.central_data_objective(self.central)
    self.batch_size, self.seed = 4, 7
    self.lr, self.lr_c, self.momentum = 0.1, 0.05, 0.9
    self.lr_s, self.lr_m = 0.9, 0.8
    self.w_f, self.w_c = 0.7, 0.3
    self.k, self.k_c = 2, 3

  def _central_batch(self, round_num, step):
    # The project's seeded sampler, run eagerly only to learn which rows
    # the server's batch holds; the math stays in numpy.
    batch = central_lib.sample_batch(self.objective, self.batch_size,
                                     self.seed, tf.constant(round_num),
                                     tf.constant(step))
    return tuple(np.asarray(t) for t in batch)

  def _replay(self, option, rounds):
    """Yields (x, g~_f, g~_c, central accumulator, loss) after each round."""
    x = [w.copy() for w in tu.initial_weights()]
    g_f = [np.zeros_like(p) for p in x]
    g_c = [np.zeros_like(p) for p in x]
    accumulator = [np.zeros_like(p) for p in x]
    for t in range(rounds):
      first_batch = self._central_batch(t, 0)
      loss = np.mean((first_batch[0] @ x[0] + x[1] - first_batch[1])**2)
      if option == 'fresh':
        g_c = tu.mse_gradient(x, *first_batch)
      updates, weights = [], []
      for cx, cy in self.clients:
        u, n, _ = tu.client_update(x, tu.batches(cx, cy, 2, self.k),
                                   self.lr, g_c, self.w_f, self.w_c)
        updates.append(u)
        weights.append(n)
      mean_update = tu.weighted_mean(updates, weights)
      x_f = [xi - self.lr_s * u for xi, u in zip(x, mean_update)]
      x_c, central_gradients = [p.copy() for p in x], []
      for step in range(self.k_c):
        g = tu.mse_gradient(x_c, *self._central_batch(t, step))
        central_gradients.append(g)
        mixed = [self.w_c * gi + self.w_f * fi for gi, fi in zip(g, g_f)]
        accumulator = [self.momentum * a + m
                       for a, m in zip(accumulator, mixed)]
        x_c = [c - self.lr_c * a for c, a in zip(x_c, accumulator)]
      x = [xi + self.lr_m * (self.w_f * (f - xi) + self.w_c * (c - xi))
           for xi, f, c in zip(x, x_f, x_c)]
      # Eq. 10, less the g~_c this round's clients used.
      g_f = [(u / (self.lr * self.k) - self.w_c * c) / self.w_f
             for u, c in zip(mean_update, g_c)]
      if option != 'fresh':
        g_c = [np.mean([g[i] for g in central_gradients], axis=0)
               for i in range(2)]
      yield x, g_f, g_c, accumulator, loss

  def _check(self, option):
    kwargs = {} if option is None else dict(augmenting_central_gradient=option)
    process = tff_mixed.build_two_way_gradient_transfer(
        self.model, self.objective, tu.sgd(self.lr),
        tff.learning.optimizers.build_sgdm(learning_rate=self.lr_c,
                                           momentum=self.momentum),
        tu.sgd(self.lr_s), tu.sgd(self.lr_m),
        central_batch_size=self.batch_size, client_steps=self.k,
        central_steps=self.k_c, federated_weight=self.w_f,
        central_weight=self.w_c, seed=self.seed, **kwargs)
    state = process.initialize()
    for t, (x, g_f, g_c, accumulator, loss) in enumerate(
        self._replay(option, rounds=2)):
      output = process.next(state, self.datasets)
      state = output.state
      checks = [('model', lambda: tu.trainable(process, state), x),
                ('g~_f', lambda: state.finalizer['federated_gradient'], g_f),
                ('central momentum',
                 lambda: state.central_work['central_optimizer']['accumulator'],
                 accumulator)]
      if option != 'fresh':
        checks.append(
            ('g~_c', lambda: state.central_work['central_gradient'], g_c))
      for name, got, want in checks:
        for i, (a, b) in enumerate(zip(got(), want)):
          np.testing.assert_allclose(a, b, atol=1e-6, rtol=1e-5,
                                     err_msg=f'{name} {i}, round {t}')
      # f_c(x^(t)) on the round's first central batch.
      self.assertAlmostEqual(output.metrics['central']['loss'], loss,
                             places=5)

  def test_default_is_algorithm_1(self):
    self._check(None)

  def test_fresh_central_gradient(self):
    self._check('fresh')

  def test_both_options_take_k_c_central_gradients_a_round(self):
    # Algorithm 1 sends g~_c from the state; 'fresh' sends f_c's gradient at
    # x^(t) on the round's first central batch, which is also the first
    # central step's: neither evaluates f_c beyond the K_c steps.
    build_gradient_fn = central_work.build_central_gradient_fn
    for option in ('previous_round_mean', 'fresh'):
      calls = []

      def counting_build(*args, **kwargs):
        gradient_fn = build_gradient_fn(*args, **kwargs)

        def counted(*inputs):
          step = inputs[-1]  # The central batch's number in the round.
          if isinstance(step, int):  # Traced in the process, not checks.
            calls.append(step)
          return gradient_fn(*inputs)

        return counted

      with self.subTest(option), mock.patch.object(
          central_work, 'build_central_gradient_fn', counting_build):
        tff_mixed.build_two_way_gradient_transfer(
            self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_c),
            central_batch_size=self.batch_size, client_steps=self.k,
            central_steps=self.k_c, augmenting_central_gradient=option)
        self.assertEqual(calls, list(range(self.k_c)))

  def test_bad_option_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'augmenting_central_gradient'):
      tff_mixed.build_two_way_gradient_transfer(
          self.model, self.objective, tu.sgd(self.lr), tu.sgd(self.lr_c),
          central_batch_size=self.batch_size, client_steps=self.k,
          augmenting_central_gradient='stale')


class TwoWayRecoveredGradientTest(absltest.TestCase):
  """Appendix A.2: g~_f recovered from uploads equals the true mean gradient.

  Checked in round 1, where the clients' g~_c is nonzero with either option
  (the default's g~_c^(0) is zero), so the recovery must remove exactly the
  g~_c the clients used.
  """

  def _check(self, weighting, sizes, batch_size, k, option=None):
    model = tu.linear_model()
    clients = tu.client_arrays(seed=3, sizes=sizes)
    central = tu.central_arrays()
    w_f, w_c, lr = 0.6, 0.4, 0.05
    kwargs = {} if option is None else dict(augmenting_central_gradient=option)
    process = tff_mixed.build_two_way_gradient_transfer(
        model, tff_mixed.central_data_objective(central), tu.sgd(lr),
        tu.sgd(lr), central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=k,
        federated_weight=w_f, central_weight=w_c, client_weighting=weighting,
        **kwargs)
    datasets = tu.to_datasets(clients, batch_size)
    state = process.next(process.initialize(), datasets).state
    # Round 1's inputs: x^(1) and the g~_c^(1) its clients use (the previous
    # round's mean central gradient, checked by HandComputedRoundTest).
    x1 = tu.trainable(process, state)
    if option == 'fresh':
      g_c = tu.mse_gradient(x1, *central)
    else:
      g_c = [np.asarray(g) for g in state.central_work['central_gradient']]
      self.assertGreater(max(np.abs(g).max() for g in g_c), 0.1)
    state = process.next(state, datasets).state
    # The true K_i-weighted mean of client gradients (eq. 10), computed
    # directly from every local step's gradient.
    all_step_grads = []
    for x, y in clients:
      _, _, grads = tu.client_update(x1, tu.batches(x, y, batch_size, k), lr,
                                     g_c, w_f, w_c)
      all_step_grads.extend(grads)
    expected = [np.mean([g[i] for g in all_step_grads], axis=0)
                for i in range(2)]
    for got, want in zip(state.finalizer['federated_gradient'], expected):
      np.testing.assert_allclose(got, want, atol=1e-4)

  def test_uniform_weighting_unequal_clients(self):
    self._check(tff.learning.ClientWeighting.UNIFORM, (4, 6, 2), 2, 3)

  def test_example_weighting_equal_batches(self):
    self._check(tff.learning.ClientWeighting.NUM_EXAMPLES, (4, 6, 8), 2, 3)

  def test_fresh_central_gradient(self):
    self._check(tff.learning.ClientWeighting.UNIFORM, (4, 6, 2), 2, 3,
                option='fresh')


class TwoWayClippedUpdatesTest(absltest.TestCase):
  """With clipped client updates g~_f is recovered from the clipped mean.

  Clipping (adaptive, DP or fixed) changes the aggregated update, so the
  recovered g~_f is eq. 10 applied to the clipped aggregate, a biased
  estimate of the mean client gradient; without clipping it is exact
  (TwoWayRecoveredGradientTest). The server must use one aggregate for both
  the model and g~_f.
  """

  def test_recovery_and_model_use_the_clipped_aggregate(self):
    model = tu.linear_model()
    clients = tu.client_arrays(seed=4, sizes=(4, 6, 2))
    central = tu.central_arrays()
    w_f, w_c, lr, lr_c, lr_s, lr_m, k, k_c = (
        0.6, 0.4, 0.1, 0.05, 0.9, 0.8, 3, 2)
    clip = 0.05
    process = tff_mixed.build_two_way_gradient_transfer(
        model, tff_mixed.central_data_objective(central), tu.sgd(lr),
        tu.sgd(lr_c), tu.sgd(lr_s), tu.sgd(lr_m),
        central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=k,
        central_steps=k_c, federated_weight=w_f,
        central_weight=w_c, augmenting_central_gradient='fresh',
        model_aggregator=tff.aggregators.clipping_factory(
            clip, tff.aggregators.MeanFactory()))
    state = process.next(process.initialize(),
                         tu.to_datasets(clients, 2)).state
    x = list(tu.initial_weights())
    g_c = tu.mse_gradient(x, *central)
    clipped, weights, step_grads = [], [], []
    for cx, cy in clients:
      u, n, grads = tu.client_update(x, tu.batches(cx, cy, 2, k), lr, g_c,
                                     w_f, w_c)
      norm = np.sqrt(sum(np.sum(ui**2) for ui in u))
      self.assertGreater(norm, clip)  # The clip binds on every client.
      clipped.append([ui * clip / norm for ui in u])
      weights.append(n)
      step_grads.extend((n / k, g) for g in grads)
    mean_update = tu.weighted_mean(clipped, weights)
    recovered = [(u / (lr * k) - w_c * c) / w_f
                 for u, c in zip(mean_update, g_c)]
    for got, want in zip(state.finalizer['federated_gradient'], recovered):
      np.testing.assert_allclose(got, want, atol=1e-5)
    x_f = [xi - lr_s * u for xi, u in zip(x, mean_update)]
    x_c = [p.copy() for p in x]
    for _ in range(k_c):
      x_c = [c - lr_c * w_c * g
             for c, g in zip(x_c, tu.mse_gradient(x_c, *central))]
    expected = [xi + lr_m * (w_f * (f - xi) + w_c * (c - xi))
                for xi, f, c in zip(x, x_f, x_c)]
    for got, want in zip(tu.trainable(process, state), expected):
      np.testing.assert_allclose(got, want, atol=1e-6)
    # ... and that aggregate is biased: the true mean client gradient
    # (unclipped) is far from what was recovered.
    total = sum(w for w, _ in step_grads)
    true_mean = [sum(w * g[i] for w, g in step_grads) / total
                 for i in range(2)]
    self.assertGreater(
        max(np.abs(a - b).max() for a, b in zip(true_mean, recovered)), 0.1)


def _linear_loss_model():
  """f_i(x) = -mean(label * output): its gradient does not depend on x."""

  @tf.function
  def predict_on_batch(model_weights, x, training=True):
    del training
    (w, b), _ = model_weights
    return tf.matmul(x, w) + b

  def loss(output, label, sample_weight=None):
    del sample_weight
    return -tf.reduce_mean(label * output)

  return tff.learning.models.FunctionalModel(
      initial_weights=(tu.initial_weights(), ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      input_spec=(tf.TensorSpec([None, 2], tf.float32),
                  tf.TensorSpec([None, 1], tf.float32)))


def _linear_loss_gradients():
  """(g_f, g_c) of -mean(label * output), flattened as (w, b): constants."""

  def gradient(x, y):
    return np.concatenate([-(x.T @ y).ravel() / len(y), [-y.mean()]])

  clients = tu.client_arrays()
  g_f = gradient(np.concatenate([x for x, _ in clients]),
                 np.concatenate([y for _, y in clients]))
  return g_f, gradient(*tu.central_arrays())


class KEqualsOneTest(absltest.TestCase):
  """Appendix A.3: with K = 1 the three algorithms make the same progress."""

  def _processes(self, model, objective=None, two_way_option=None, w_f=0.6,
                 w_c=0.4, lr=0.1):
    objective = objective or tff_mixed.central_data_objective(
        tu.central_arrays())
    common = dict(central_batch_size=tu.CENTRAL_EXAMPLES, federated_weight=w_f,
                  central_weight=w_c)
    two_way_kwargs = ({} if two_way_option is None
                      else dict(augmenting_central_gradient=two_way_option))
    return dict(
        parallel_training=tff_mixed.build_parallel_training(
            model, objective, tu.sgd(lr), tu.sgd(lr), central_steps=1,
            client_steps=1, **common),
        one_way=tff_mixed.build_one_way_gradient_transfer(
            model, objective, tu.sgd(lr), client_steps=1, **common),
        two_way=tff_mixed.build_two_way_gradient_transfer(
            model, objective, tu.sgd(lr), tu.sgd(lr), client_steps=1,
            central_steps=1, **common, **two_way_kwargs),
    )

  def _trajectories(self, processes, datasets, rounds):
    trajectories = {}
    for name, process in processes.items():
      state = process.initialize()
      points = [np.concatenate([w.ravel() for w in tu.trainable(process,
                                                                 state)])]
      for _ in range(rounds):
        state = process.next(state, datasets).state
        points.append(
            np.concatenate([w.ravel() for w in tu.trainable(process, state)]))
      trajectories[name] = np.array(points)
    return trajectories

  def test_parallel_training_equals_one_way_gradient_transfer(self):
    # Full local batches: K = 1 step on each client's whole data.
    datasets = tu.to_datasets(tu.client_arrays(), batch_size=100)
    processes = self._processes(tu.linear_model())
    del processes['two_way']
    t = self._trajectories(processes, datasets, rounds=4)
    np.testing.assert_allclose(t['parallel_training'], t['one_way'],
                               atol=ATOL)
    self.assertGreater(np.abs(t['one_way'][-1] - t['one_way'][0]).max(), 0.1)

  def test_two_way_makes_the_same_progress_once_g_f_is_current(self):
    # With a fresh g~_c, only 2-way GT's g~_f lags: it is the previous
    # round's federated gradient (zero in round 0). With a federated loss
    # whose gradient is constant, g~_f is exact from round 1 on, and every
    # later round's step must equal the other algorithms' step.
    datasets = tu.to_datasets(tu.client_arrays(), batch_size=100)
    t = self._trajectories(
        self._processes(_linear_loss_model(), two_way_option='fresh'),
        datasets, rounds=4)
    steps = {name: np.diff(points, axis=0) for name, points in t.items()}
    np.testing.assert_allclose(steps['parallel_training'], steps['one_way'],
                               atol=ATOL)
    np.testing.assert_allclose(steps['two_way'][1:], steps['one_way'][1:],
                               atol=ATOL)
    # Round 0 differs exactly by the missing eta * w_c * w_f * g_f term.
    g_f, _ = _linear_loss_gradients()
    np.testing.assert_allclose(steps['two_way'][0] - steps['one_way'][0],
                               0.1 * 0.6 * 0.4 * g_f, atol=ATOL)
    self.assertGreater(np.abs(g_f).max(), 0.1)

  def test_algorithm_1_makes_the_same_progress_once_both_are_current(self):
    # Algorithm 1 (the default): both augmenting gradients are the previous
    # round's (zero in round 0). With federated and central losses whose
    # gradients are constant, both are exact from round 1 on.
    datasets = tu.to_datasets(tu.client_arrays(), batch_size=100)
    objective = tff_mixed.central_data_objective(
        tu.central_arrays(),
        loss_fn=lambda weights, batch: -tf.reduce_mean(
            batch[1] * (tf.matmul(batch[0], weights[0][0]) + weights[0][1])))
    t = self._trajectories(
        self._processes(_linear_loss_model(), objective), datasets, rounds=4)
    steps = {name: np.diff(points, axis=0) for name, points in t.items()}
    np.testing.assert_allclose(steps['parallel_training'], steps['one_way'],
                               atol=ATOL)
    np.testing.assert_allclose(steps['two_way'][1:], steps['one_way'][1:],
                               atol=ATOL)
    # In round 0 clients lack w_c g~_c and the central step lacks w_f g~_f:
    # x - eta (w_f^2 g_f + w_c^2 g_c) against one-way's x - eta (w_f g_f +
    # w_c g_c), a difference of eta w_f w_c (g_f + g_c).
    g_f, g_c = _linear_loss_gradients()
    np.testing.assert_allclose(steps['two_way'][0] - steps['one_way'][0],
                               0.1 * 0.6 * 0.4 * (g_f + g_c), atol=ATOL)


class FedAvgEquivalenceTest(absltest.TestCase):
  """With w_c = 0 every mixed algorithm is TFF's build_weighted_fed_avg."""

  def test_all_algorithms_reproduce_fed_avg(self):
    model = tu.linear_model()
    k = 3
    arrays = tu.client_arrays(sizes=(4, 6, 3))
    datasets = tu.to_datasets(arrays, batch_size=2)
    fixed_step_datasets = [d.repeat().take(k) for d in datasets]
    objective = tff_mixed.central_data_objective(tu.central_arrays())

    def server():
      return tff.learning.optimizers.build_adam(learning_rate=0.05)

    no_central = dict(federated_weight=1.0, central_weight=0.0,
                      central_batch_size=4)
    candidates = dict(
        parallel_training=(tff_mixed.build_parallel_training(
            model, objective, tu.sgd(0.1), tu.sgd(0.1), server(),
            central_steps=2, **no_central), datasets),
        one_way=(tff_mixed.build_one_way_gradient_transfer(
            model, objective, tu.sgd(0.1), server(), **no_central), datasets),
        two_way=(tff_mixed.build_two_way_gradient_transfer(
            model, objective, tu.sgd(0.1), tu.sgd(0.1), server(),
            client_steps=k, **no_central), datasets),
        two_way_fresh=(tff_mixed.build_two_way_gradient_transfer(
            model, objective, tu.sgd(0.1), tu.sgd(0.1), server(),
            client_steps=k, augmenting_central_gradient='fresh',
            **no_central), datasets),
    )
    fed_avg = tff.learning.algorithms.build_weighted_fed_avg(
        model, client_optimizer_fn=tu.sgd(0.1), server_optimizer_fn=server())
    for name, (process, data) in candidates.items():
      with self.subTest(name):
        reference_data = (fixed_step_datasets if name.startswith('two_way')
                          else data)
        state, ref_state = process.initialize(), fed_avg.initialize()
        for _ in range(3):
          output = process.next(state, data)
          ref_output = fed_avg.next(ref_state, reference_data)
          state, ref_state = output.state, ref_output.state
        for got, want in zip(tu.trainable(process, state),
                             tu.trainable(fed_avg, ref_state)):
          np.testing.assert_allclose(got, want, atol=1e-6)
        self.assertAlmostEqual(
            output.metrics['client_work']['train']['loss'],
            ref_output.metrics['client_work']['train']['loss'], places=5)


if __name__ == '__main__':
  absltest.main()
