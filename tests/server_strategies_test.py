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
"""Tests for `tff_mixed.asynchronous.server_strategies` on hand-computed
updates of tiny weight vectors (expected numbers worked out in comments)."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from tff_mixed.asynchronous import server_strategies as strategies
from tff_mixed.asynchronous import staleness

ClientUpdate = strategies.ClientUpdate


def _w(*values):
  return [np.array(values, dtype=np.float64)]


class FedAsyncTest(absltest.TestCase):

  def test_one_then_two_updates_polynomial(self):
    # s(d) = (d + 1)^(-1/2), d the updates' staleness tags (in rounds).
    fedasync = strategies.FedAsync(alpha=0.5, staleness_unit='rounds')
    state = fedasync.initial_state()
    # staleness 3: alpha_t = 0.5 * 4^(-1/2) = 0.25; client model
    # base + delta = [0, 0] + [2, 4] = [2, 4];
    # x = 0.75 [1, 2] + 0.25 [2, 4] = [1.25, 2.5].
    state, x = fedasync.apply(
        state, _w(1.0, 2.0),
        [ClientUpdate(7, _w(2.0, 4.0), staleness=3, base=_w(0.0, 0.0))])
    np.testing.assert_allclose(x[0], [1.25, 2.5])
    self.assertEqual(state.num_updates, 1)
    # Two arrivals in one round, applied in order:
    # 1) staleness 0: alpha_t = 0.5, client [1, 1] + [1, -1] = [2, 0];
    #    x = 0.5 [1.25, 2.5] + 0.5 [2, 0] = [1.625, 1.25].
    # 2) staleness 8: alpha_t = 0.5 / 3, client [0, 0] + [3.625, 4.25];
    #    x = (5/6) [1.625, 1.25] + (1/6) [3.625, 4.25] = [1.958333.., 1.75].
    state, x = fedasync.apply(state, x, [
        ClientUpdate(1, _w(1.0, -1.0), staleness=0, base=_w(1.0, 1.0)),
        ClientUpdate(2, _w(3.625, 4.25), staleness=8, base=_w(0.0, 0.0)),
    ])
    np.testing.assert_allclose(x[0], [1.625 * 5 / 6 + 3.625 / 6, 1.75])
    self.assertEqual(state.num_updates, 3)

  def test_order_of_arrival_matters(self):
    fedasync = strategies.FedAsync(
        alpha=0.5, staleness_fn=staleness.constant_staleness())
    a = ClientUpdate(0, _w(4.0), staleness=0, base=_w(0.0))
    b = ClientUpdate(1, _w(0.0), staleness=0, base=_w(0.0))
    # a then b: 0.5 * 0 + 0.5 * 4 = 2, then 0.5 * 2 + 0 = 1.
    _, x = fedasync.apply(fedasync.initial_state(), _w(0.0), [a, b])
    np.testing.assert_allclose(x[0], [1.0])
    # b then a: 0, then 0.5 * 0 + 0.5 * 4 = 2.
    _, x = fedasync.apply(fedasync.initial_state(), _w(0.0), [b, a])
    np.testing.assert_allclose(x[0], [2.0])

  def test_staleness_functions(self):
    poly = staleness.polynomial_staleness(0.5)
    self.assertAlmostEqual(poly(0), 1.0)
    self.assertAlmostEqual(poly(3), 0.5)
    self.assertAlmostEqual(poly(8), 1.0 / 3.0)
    hinge = staleness.hinge_staleness(a=1.0, b=2.0)
    self.assertEqual(hinge(0), 1.0)
    self.assertEqual(hinge(2), 1.0)
    self.assertAlmostEqual(hinge(5), 1.0 / (1.0 * 3.0 + 1.0))
    self.assertEqual(staleness.constant_staleness()(100), 1.0)
    fedasync = strategies.FedAsync(alpha=0.8, staleness_fn=hinge)
    self.assertAlmostEqual(fedasync.mixing_weight(5), 0.2)

  def _three_rounds(self, staleness_unit):
    # Round 0: two clients sent at round 0; round 1: none arrive; round 2:
    # clients sent at rounds 0, 1 and 2 (staleness 2, 1, 0 rounds). Every
    # base is 0, so a client model is its delta.
    fedasync = strategies.FedAsync(alpha=0.5, staleness_unit=staleness_unit)
    rounds = [[(4.0, 0), (-2.0, 0)], [], [(8.0, 2), (1.0, 1), (-6.0, 0)]]
    state, x = fedasync.initial_state(), _w(1.0)
    for arrivals in rounds:
      state, x = fedasync.apply(state, x, [
          ClientUpdate(i, _w(v), tau, base=_w(0.0))
          for i, (v, tau) in enumerate(arrivals)])
    self.assertEqual(state.num_updates, 5)
    return x[0][0], [v for arrivals in rounds for v, _ in arrivals]

  def _mixed(self, alphas, values):
    x = 1.0
    for a, v in zip(alphas, values):
      x = (1 - a) * x + a * v
    return x

  def test_staleness_in_server_steps_counts_arrivals(self):
    # Xie et al.'s t - tau, every arrival one server step: round 0's
    # arrivals meet 0 and 1 earlier steps; in round 2 the server has made
    # 2 steps, the round-0 client left at step 0 (d = 2), the round-1
    # client at step 2 and arrives second (d = 1), the round-2 client at
    # step 2 and arrives third (d = 2). alpha_t = 0.5 (d + 1)^(-1/2).
    got, values = self._three_rounds('server_steps')
    d = [0, 1, 2, 1, 2]
    self.assertAlmostEqual(
        got, self._mixed([0.5 * (k + 1.0) ** -0.5 for k in d], values))
    default, _ = self._three_rounds(staleness.SERVER_STEPS)
    self.assertEqual(strategies.FedAsync(0.5).staleness_unit,
                     staleness.SERVER_STEPS)
    self.assertEqual(got, default)

  def test_staleness_in_rounds_is_the_update_tag(self):
    got, values = self._three_rounds('rounds')
    d = [0, 0, 2, 1, 0]
    self.assertAlmostEqual(
        got, self._mixed([0.5 * (k + 1.0) ** -0.5 for k in d], values))

  def test_server_steps_need_every_round_from_the_first(self):
    fedasync = strategies.FedAsync(alpha=0.5)
    with self.assertRaisesRegex(
        ValueError, r'updates\[0\].staleness=1 rounds reaches before the '
        r'first of the 1 rounds this state has seen'):
      fedasync.apply(fedasync.initial_state(), _w(0.0),
                     [ClientUpdate(0, _w(1.0), 1, base=_w(0.0))])
    with self.assertRaisesRegex(
        ValueError, r"staleness_unit must be one of \('server_steps', "
        r"'rounds'\), got 'arrivals'"):
      strategies.FedAsync(alpha=0.5, staleness_unit='arrivals')

  def test_no_updates_keeps_weights(self):
    fedasync = strategies.FedAsync(alpha=1.0)
    state, x = fedasync.apply(fedasync.initial_state(), _w(1.0, 2.0), [])
    np.testing.assert_array_equal(x[0], [1.0, 2.0])
    self.assertEqual(state.num_updates, 0)


class FedBuffTest(absltest.TestCase):

  def test_buffer_fills_across_rounds_and_keeps_leftovers(self):
    fedbuff = strategies.FedBuff(learning_rate=0.5, buffer_size=2)
    state = fedbuff.initial_state()
    x = _w(1.0, 1.0, 1.0)
    # Round 1: one update, the buffer is not full: x unchanged.
    state, x = fedbuff.apply(state, x,
                             [ClientUpdate(0, _w(2.0, 0.0, -2.0), 1)])
    np.testing.assert_array_equal(x[0], [1.0, 1.0, 1.0])
    self.assertLen(state.buffer, 1)
    self.assertEqual(state.num_updates, 0)
    # Round 2: the first update fills the buffer: mean of [2, 0, -2] and
    # [0, 4, 2] is [1, 2, 0]; x = [1, 1, 1] + 0.5 [1, 2, 0] = [1.5, 2, 1].
    # The second one stays buffered.
    state, x = fedbuff.apply(state, x, [
        ClientUpdate(1, _w(0.0, 4.0, 2.0), 0),
        ClientUpdate(2, _w(6.0, 6.0, 6.0), 3),
    ])
    np.testing.assert_allclose(x[0], [1.5, 2.0, 1.0])
    self.assertEqual([u.client for u in state.buffer], [2])
    self.assertEqual(state.num_updates, 1)
    # Round 3: buffer [6, 6, 6], [-2, 0, 4] -> mean [2, 3, 5];
    # x = [1.5, 2, 1] + 0.5 [2, 3, 5] = [2.5, 3.5, 3.5].
    state, x = fedbuff.apply(state, x,
                             [ClientUpdate(0, _w(-2.0, 0.0, 4.0), 0)])
    np.testing.assert_allclose(x[0], [2.5, 3.5, 3.5])
    self.assertEmpty(state.buffer)
    self.assertEqual(state.num_updates, 2)

  def test_weighted_by_example_counts(self):
    fedbuff = strategies.FedBuff(learning_rate=0.5, buffer_size=2,
                                 weighting='num_examples')
    x = _w(1.0, 1.0, 1.0)
    updates = [ClientUpdate(0, _w(2.0, 0.0, -2.0), 0, num_examples=3),
               ClientUpdate(1, _w(0.0, 4.0, 2.0), 0, num_examples=1)]
    _, got = fedbuff.apply(fedbuff.initial_state(), x, updates)
    # (3 [2, 0, -2] + 1 [0, 4, 2]) / 4 = [1.5, 1, -1]; x + 0.5 of that.
    np.testing.assert_allclose(got[0], [1.75, 1.5, 0.5])
    # Unweighted: the plain mean [1, 2, 0].
    _, plain = strategies.FedBuff(learning_rate=0.5, buffer_size=2).apply(
        fedbuff.initial_state(), x, updates)
    np.testing.assert_allclose(plain[0], [1.5, 2.0, 1.0])
    # The counts combine with the staleness weights: (3 * 1/2 [2, 0, -2] +
    # 1 * 1 [0, 4, 2]) / 4 = [0.75, 1, -0.25].
    stale = strategies.FedBuff(learning_rate=1.0, buffer_size=2,
                               staleness_exponent=1.0,
                               weighting='num_examples')
    _, got = stale.apply(stale.initial_state(), x, [
        updates[0]._replace(staleness=1), updates[1]])
    np.testing.assert_allclose(got[0], [1.75, 2.0, 0.75])
    for bad in (None, 0, -1.0, float('nan'), True):
      with self.assertRaisesRegex(ValueError, 'num_examples'):
        fedbuff.apply(fedbuff.initial_state(), x,
                      [updates[0]._replace(num_examples=bad)])
    with self.assertRaisesRegex(ValueError, 'weighting'):
      strategies.FedBuff(learning_rate=1.0, buffer_size=2, weighting='size')

  def test_several_steps_in_one_round(self):
    fedbuff = strategies.FedBuff(learning_rate=1.0, buffer_size=1)
    # Two steps: 0 + 1 + 2 = 3.
    state, x = fedbuff.apply(fedbuff.initial_state(), _w(0.0), [
        ClientUpdate(0, _w(1.0), 0), ClientUpdate(1, _w(2.0), 5)])
    np.testing.assert_allclose(x[0], [3.0])
    self.assertEqual(state.num_updates, 2)

  def test_staleness_exponent(self):
    fedbuff = strategies.FedBuff(learning_rate=0.5, buffer_size=2,
                                 staleness_exponent=1.0)
    # Weights 1 / (1 + tau): [2, 0, -2] / 2 = [1, 0, -1] and [0, 4, 2];
    # mean [0.5, 2, 0.5]; x = [1, 1, 1] + 0.5 [0.5, 2, 0.5].
    _, x = fedbuff.apply(fedbuff.initial_state(), _w(1.0, 1.0, 1.0), [
        ClientUpdate(0, _w(2.0, 0.0, -2.0), 1),
        ClientUpdate(1, _w(0.0, 4.0, 2.0), 0)])
    np.testing.assert_allclose(x[0], [1.25, 2.0, 1.25])

  def test_several_arrays_and_dtype_kept(self):
    fedbuff = strategies.FedBuff(learning_rate=1.0, buffer_size=1)
    weights = [np.zeros((2, 2), np.float32), np.ones(3, np.float32)]
    delta = [np.full((2, 2), 0.5, np.float32), np.full(3, -1.0, np.float32)]
    _, x = fedbuff.apply(fedbuff.initial_state(), weights,
                         [ClientUpdate(0, delta, 0)])
    self.assertEqual([w.dtype for w in x], [np.float32, np.float32])
    np.testing.assert_array_equal(x[0], np.full((2, 2), 0.5))
    np.testing.assert_array_equal(x[1], np.zeros(3))

  def test_inputs_not_modified_and_buffer_not_aliased(self):
    fedbuff = strategies.FedBuff(learning_rate=1.0, buffer_size=2)
    weights = _w(1.0, 2.0)
    delta = _w(3.0, 4.0)
    state, _ = fedbuff.apply(fedbuff.initial_state(), weights,
                             [ClientUpdate(0, delta, 0)])
    delta[0][:] = 100.0  # The caller reuses its array.
    np.testing.assert_array_equal(weights[0], [1.0, 2.0])
    np.testing.assert_array_equal(state.buffer[0].delta[0], [3.0, 4.0])


class CA2FLTest(parameterized.TestCase):

  def test_two_steps_with_calibration_and_leftover(self):
    ca2fl = strategies.CA2FL(learning_rate=0.5, buffer_size=2, num_clients=4)
    state = ca2fl.initial_state()
    # Round 1: buffer [c0: [4, 0], c1: [0, 8]] is full; the cache is empty,
    # h_bar = 0, v = 0 + ([4, 0] - 0 + [0, 8] - 0) / 2 = [2, 4];
    # x = [0, 0] + 0.5 [2, 4] = [1, 2]. Then c0's second update waits.
    state, x = ca2fl.apply(state, _w(0.0, 0.0), [
        ClientUpdate(0, _w(4.0, 0.0), 0),
        ClientUpdate(1, _w(0.0, 8.0), 2),
        ClientUpdate(0, _w(2.0, 2.0), 0),
    ])
    np.testing.assert_allclose(x[0], [1.0, 2.0])
    self.assertEqual(state.num_updates, 1)
    self.assertEqual([u.client for u in state.buffer], [0])
    self.assertCountEqual(state.cache, [0, 1])
    np.testing.assert_array_equal(state.cache[0][0], [4.0, 0.0])
    # Round 2: buffer [c0: [2, 2], c2: [6, -2]].
    # h_bar = ([4, 0] + [0, 8] + 0 + 0) / 4 = [1, 2];
    # calibration ([2, 2] - [4, 0] + [6, -2] - 0) / 2 = [4, 0] / 2 = [2, 0];
    # v = [3, 2]; x = [1, 2] + 0.5 [3, 2] = [2.5, 3].
    state, x = ca2fl.apply(state, x, [ClientUpdate(2, _w(6.0, -2.0), 1)])
    np.testing.assert_allclose(x[0], [2.5, 3.0])
    self.assertEqual(state.num_updates, 2)
    self.assertEmpty(state.buffer)
    np.testing.assert_array_equal(state.cache[0][0], [2.0, 2.0])
    np.testing.assert_array_equal(state.cache[1][0], [0.0, 8.0])
    np.testing.assert_array_equal(state.cache[2][0], [6.0, -2.0])

  def test_cached_clients_average(self):
    ca2fl = strategies.CA2FL(learning_rate=0.5, buffer_size=2,
                             cache_average='cached_clients')
    state, x = ca2fl.apply(ca2fl.initial_state(), _w(0.0, 0.0), [
        ClientUpdate(0, _w(4.0, 0.0), 0), ClientUpdate(1, _w(0.0, 8.0), 0)])
    np.testing.assert_allclose(x[0], [1.0, 2.0])
    # h_bar over the 2 cached clients = [2, 4]; calibration [2, 0] as in the
    # all-clients test; v = [4, 4]; x = [1, 2] + 0.5 [4, 4] = [3, 4].
    _, x = ca2fl.apply(state, x, [
        ClientUpdate(0, _w(2.0, 2.0), 0), ClientUpdate(2, _w(6.0, -2.0), 0)])
    np.testing.assert_allclose(x[0], [3.0, 4.0])

  def test_same_client_twice_in_one_buffer(self):
    ca2fl = strategies.CA2FL(learning_rate=1.0, buffer_size=2, num_clients=4)
    state, x = ca2fl.apply(ca2fl.initial_state(), _w(0.0, 0.0), [
        ClientUpdate(0, _w(4.0, 0.0), 0), ClientUpdate(1, _w(0.0, 8.0), 0)])
    np.testing.assert_allclose(x[0], [2.0, 4.0])
    # Both c0 updates are calibrated by c0's cache before this buffer,
    # [4, 0]: h_bar = [1, 2]; ([2, 2] - [4, 0] + [0, 4] - [4, 0]) / 2 =
    # [-3, 3]; v = [-2, 5]; x = [0, 9]; the later update is cached.
    state, x = ca2fl.apply(state, x, [
        ClientUpdate(0, _w(2.0, 2.0), 0), ClientUpdate(0, _w(0.0, 4.0), 0)])
    np.testing.assert_allclose(x[0], [0.0, 9.0])
    np.testing.assert_array_equal(state.cache[0][0], [0.0, 4.0])

  def test_first_step_equals_fedbuff(self):
    updates = [ClientUpdate(3, _w(1.0, -1.0, 2.0), 4),
               ClientUpdate(5, _w(3.0, 1.0, 0.0), 0)]
    _, x_ca2fl = strategies.CA2FL(0.7, 2, num_clients=10).apply(
        strategies.CA2FL(0.7, 2, num_clients=10).initial_state(),
        _w(1.0, 1.0, 1.0), updates)
    fedbuff = strategies.FedBuff(0.7, 2)
    _, x_fedbuff = fedbuff.apply(fedbuff.initial_state(), _w(1.0, 1.0, 1.0),
                                 updates)
    np.testing.assert_allclose(x_ca2fl[0], x_fedbuff[0])
    # 1 + 0.7 * [2, 0, 1].
    np.testing.assert_allclose(x_ca2fl[0], [2.4, 1.0, 1.7])


class FLSimEquivalenceTest(absltest.TestCase):
  """Equivalences stated by FLSim's FedBuff tests, on our strategies.

  Source: repository facebookresearch/FLSim, flsim/trainers/tests/
  test_fedbuff.py (`test_async_hybrid_same_sync_every_client`: FedBuff with
  buffer size 1 equals asynchronous SGD with the same server learning rate
  and weights; `test_sync_hybrid_same_sgd`: FedBuff whose clients all start
  from one model equals one synchronous FedAvg round when FedBuff's server
  learning rate is the synchronous one divided by the buffer size), with the
  server steps of flsim/optimizers/async_aggregators.py: its FedBuff
  (`HybridAggregator`) steps along the weighted SUM of the buffered deltas,
  its asynchronous aggregator along one delta times its weight, by default
  applied to the current model ('fed_buff_aggregation'), optionally as
  x - lr w (x - client model) ('fed_async_aggregation').

  Conventions here: our FedBuff steps along the MEAN,
  x + eta (1/M) sum_j w(tau_j) delta_j, as the FedBuff update is stated in
  the guided merging paper (Zhu et al., appendix, eta_g / M times the sum of
  the buffered updates), so FLSim's learning rate is ours / M. Our FedAsync
  is Xie et al. 2019, Algorithm 1: it mixes the client
  MODEL in, x <- (1 - alpha_t) x + alpha_t (base + delta), FLSim's
  'fed_async_aggregation' direction with lr w = alpha_t. It equals
  FedBuff(M = 1) with eta = alpha, s = w, only while each client's base is
  the server model its update meets; otherwise the two differ by exactly
  alpha_t (base - x). (FLSim also divides its staleness weight by its value
  at an `avg_staleness`, 1 by default; ours is not normalized.)
  """

  def _sequential_updates(self):
    # (delta, staleness) of four clients, 3 weights each.
    return [(np.array([1.0, -2.0, 0.5]), 0), (np.array([0.0, 3.0, -1.0]), 3),
            (np.array([-4.0, 1.0, 2.0]), 1), (np.array([2.0, 2.0, 2.0]), 8)]

  def test_fedbuff_of_one_is_fedasync_when_clients_start_from_the_server(
      self):
    eta, p = 0.4, 0.5
    fedbuff = strategies.FedBuff(learning_rate=eta, buffer_size=1,
                                 staleness_exponent=p)
    fedasync = strategies.FedAsync(
        alpha=eta, staleness_fn=staleness.polynomial_staleness(p),
        staleness_unit='rounds')
    x0 = np.array([0.5, -1.0, 2.0])
    buff_state, buff_x = fedbuff.initial_state(), [x0]
    async_state, async_x = fedasync.initial_state(), [x0]
    want = x0.copy()
    for i, (delta, tau) in enumerate(self._sequential_updates()):
      # Each client trained from the model its update meets (FLSim: training
      # rate >> training duration), here tagged with a staleness for the
      # weights' sake.
      update = ClientUpdate(i, [delta], tau, base=[async_x[0].copy()])
      buff_state, buff_x = fedbuff.apply(buff_state, buff_x, [update])
      async_state, async_x = fedasync.apply(async_state, async_x, [update])
      want = want + eta * (1.0 + tau) ** (-p) * delta
      np.testing.assert_allclose(buff_x[0], async_x[0], atol=1e-12)
    np.testing.assert_allclose(buff_x[0], want, atol=1e-12)
    self.assertEqual(buff_state.num_updates, async_state.num_updates)

  def test_fedasync_mixes_the_client_model_where_fedbuff_applies_delta(self):
    # A stale client: it trained from `base`, the server has since moved to
    # x. FLSim's default asynchronous step (and FedBuff, M = 1) gives
    # x + a delta; FedAsync (Xie et al.) gives (1 - a) x + a (base + delta).
    a = 0.5 * 4.0 ** -0.5  # alpha 0.5, staleness 3, s = (3 + 1)^(-1/2)
    x = np.array([1.0, 2.0])
    base = np.array([0.0, -2.0])
    delta = np.array([2.0, 4.0])
    update = ClientUpdate(0, [delta], 3, base=[base])
    fedasync = strategies.FedAsync(alpha=0.5, staleness_unit='rounds')
    fedbuff = strategies.FedBuff(learning_rate=0.5, buffer_size=1,
                                 staleness_exponent=0.5)
    _, mixed = fedasync.apply(fedasync.initial_state(), [x], [update])
    _, stepped = fedbuff.apply(fedbuff.initial_state(), [x], [update])
    np.testing.assert_allclose(stepped[0], x + a * delta)
    np.testing.assert_allclose(mixed[0], (1 - a) * x + a * (base + delta))
    np.testing.assert_allclose(mixed[0] - stepped[0], a * (base - x))
    self.assertGreater(np.abs(mixed[0] - stepped[0]).min(), 0.1)

  def test_fedbuff_of_clients_from_one_model_is_one_fedavg_round(self):
    # M = 4 clients all trained from x0 (no staleness) and arrive over two
    # rounds. FedAvg (McMahan et al., equal weights) with server learning
    # rate g: x0 + g mean_j delta_j; g = 1 is the mean of the client models.
    # FLSim's FedBuff reaches it with learning rate g / M on the sum.
    x0 = np.array([0.5, -1.0, 2.0])
    deltas = [d for d, _ in self._sequential_updates()]
    for g in (1.0, 0.3):
      fedbuff = strategies.FedBuff(learning_rate=g, buffer_size=4)
      state = fedbuff.initial_state()
      updates = [ClientUpdate(i, [d], 0) for i, d in enumerate(deltas)]
      state, x = fedbuff.apply(state, [x0], updates[:1])
      np.testing.assert_array_equal(x[0], x0)  # Buffered, no step yet.
      state, x = fedbuff.apply(state, x, updates[1:])
      fedavg = x0 + g * np.mean(deltas, axis=0)
      np.testing.assert_allclose(x[0], fedavg, atol=1e-12)
      flsim_convention = x0 + (g / len(deltas)) * np.sum(deltas, axis=0)
      np.testing.assert_allclose(x[0], flsim_convention, atol=1e-12)
      self.assertEqual(state.num_updates, 1)
      if g == 1.0:
        np.testing.assert_allclose(
            x[0], np.mean([x0 + d for d in deltas], axis=0), atol=1e-12)


class ValidationTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('zero', 0.0), ('negative', -0.1), ('above_one', 1.5),
      ('nan', float('nan')))
  def test_fedasync_alpha(self, alpha):
    with self.assertRaisesRegex(ValueError, r'alpha must be in \(0, 1\], '
                                f'got {alpha!r}'):
      strategies.FedAsync(alpha=alpha)

  @parameterized.named_parameters(
      ('fedbuff', strategies.FedBuff), ('ca2fl', strategies.CA2FL))
  def test_learning_rate_and_buffer_size(self, cls):
    kwargs = dict(num_clients=4) if cls is strategies.CA2FL else {}
    for lr in (0.0, -1.0):
      with self.assertRaisesRegex(
          ValueError, f'learning_rate must be a finite number > 0, got '
          f'{lr!r}'):
        cls(learning_rate=lr, buffer_size=2, **kwargs)
    for size in (0, -3, 1.5):
      with self.assertRaisesRegex(
          ValueError, rf'buffer_size \(M\) must be an integer >= 1, got '
          f'{size!r}'):
        cls(learning_rate=1.0, buffer_size=size, **kwargs)

  def test_staleness_parameters(self):
    with self.assertRaisesRegex(ValueError, r'a must be a finite number >= 0,'
                                r' got -0.5'):
      staleness.polynomial_staleness(-0.5)
    with self.assertRaisesRegex(ValueError, r'b must be a finite number >= 0,'
                                r' got -1'):
      staleness.hinge_staleness(1.0, -1)
    with self.assertRaisesRegex(ValueError, r'staleness_exponent must be a '
                                r'finite number >= 0, got -1.0'):
      strategies.FedBuff(1.0, 2, staleness_exponent=-1.0)

  def test_ca2fl_configuration(self):
    with self.assertRaisesRegex(ValueError, r"cache_average='all_clients' "
                                r'needs num_clients'):
      strategies.CA2FL(1.0, 2)
    with self.assertRaisesRegex(ValueError, r'num_clients must be an integer'
                                r' >= 1, got 0'):
      strategies.CA2FL(1.0, 2, num_clients=0)
    with self.assertRaisesRegex(ValueError, r"cache_average must be one of "
                                r".*, got 'mean'"):
      strategies.CA2FL(1.0, 2, num_clients=3, cache_average='mean')
    ca2fl = strategies.CA2FL(1.0, 2, num_clients=3)
    with self.assertRaisesRegex(ValueError, r'updates\[0\].client=3 is not in'
                                r' \[0, num_clients=3\)'):
      ca2fl.apply(ca2fl.initial_state(), _w(0.0),
                  [ClientUpdate(3, _w(1.0), 0)])

  def test_bad_updates(self):
    fedbuff = strategies.FedBuff(1.0, 2)
    state = fedbuff.initial_state()
    cases = [
        ([ClientUpdate(0, _w(1.0, 2.0), 0)],
         r'updates\[0\].delta\[0\] has shape \(2,\), the weights have '
         r'\(1,\)'),
        ([ClientUpdate(0, _w(1.0) * 2, 0)],
         r'updates\[0\].delta has 2 arrays, the weights have 1'),
        ([ClientUpdate(0, _w(1.0), -1)],
         r'updates\[0\].staleness must be an integer >= 0, got -1'),
        ([ClientUpdate(0, _w(1.0), 0), ClientUpdate(-2, _w(1.0), 0)],
         r'updates\[1\].client must be an integer >= 0, got -2'),
        ([(0, _w(1.0), 0)], r'updates\[0\] must be a ClientUpdate, got tuple'),
        ([ClientUpdate(0, np.ones(1), 0)],
         r'updates\[0\].delta must be a list or tuple of arrays, got ndarray'),
    ]
    for updates, message in cases:
      with self.assertRaisesRegex(ValueError, message):
        fedbuff.apply(state, _w(0.0), updates)

  def test_fedasync_needs_base(self):
    fedasync = strategies.FedAsync(0.5)
    with self.assertRaisesRegex(ValueError, r'updates\[0\].base is None: '
                                r'FedAsync mixes in the client model'):
      fedasync.apply(fedasync.initial_state(), _w(0.0),
                     [ClientUpdate(0, _w(1.0), 0)])
    with self.assertRaisesRegex(ValueError, r'updates\[0\].base\[0\] has '
                                r'shape \(2,\)'):
      fedasync.apply(fedasync.initial_state(), _w(0.0),
                     [ClientUpdate(0, _w(1.0), 0, base=_w(1.0, 2.0))])


if __name__ == '__main__':
  absltest.main()
