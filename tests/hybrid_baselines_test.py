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
"""Tests for `tff_mixed.asynchronous.hybrid_baselines` (the guided model merging paper's baselines).

Oracles: hand-computed SGD steps on linear regression, the hand-computed
HFCL weighted mean, closed-form binary KL values and gradients for FedDF on
logistic regression, and, for FedDF on 3-class softmax regression, the
teacher of Lin et al. 2020 (arXiv:2006.07242, eq. (1): softmax of the
clients' averaged logits) and Adam with cosine annealing, both in numpy.
"""

import math

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from experiments.hybrid_async import hybrid_methods
from tff_mixed.asynchronous import feddf as feddf_lib
from tff_mixed.asynchronous import hybrid_baselines as hb
from tff_mixed.asynchronous import server_sgd as server_sgd_lib
from tff_mixed.core import model_ops
from tff_mixed.core import traced_cache
from tff_mixed.models import dense

_SGD = dict(steps=1, batch_size=2, learning_rate=0.1, seed=0)


def _regression():
  """y = x w + b with w = [1, 2], b = 0.5, on two one-hot examples."""
  weights = [np.array([[1.0], [2.0]], np.float32),
             np.array([0.5], np.float32)]
  model = dense.build_linear_regression(2)
  x = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
  y = np.array([[0.0], [1.0]], np.float32)
  return model, weights, x, y


def _manual_sgd_step(weights, x, y, lr):
  """One full-batch SGD step of mean squared error, in numpy."""
  w, b = weights
  r = x @ w + b - y
  return [w - lr * 2.0 / len(x) * x.T @ r, b - lr * 2.0 * r.mean(0)]


def _logistic(bias=0.0, kernel=(0.0, 0.0)):
  """Logistic regression weights (one logit) for 2 inputs."""
  return [np.array(kernel, np.float32).reshape([2, 1]),
          np.array([bias], np.float32)]


def _distillations(seen):
  """An `on_merge` that appends FedDF's (merged, distilled, teachers)."""
  return lambda e: seen.append((e.diagnostics.merged, e.after,
                                e.diagnostics.teachers))


def _binary_kl(p, q):
  return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


class _SoftmaxRegression:
  """Multiclass logits x @ kernel + bias, with FunctionalModel's interface.

  The module duck-types its model argument; this one keeps the FedDF oracle
  a few lines of numpy (`_np_logits`).
  """

  def __init__(self, dim: int, classes: int):
    self.initial_weights = ((np.zeros([dim, classes], np.float32),
                             np.zeros([classes], np.float32)), ())
    self.input_spec = (tf.TensorSpec([None, dim], tf.float32),
                       tf.TensorSpec([None], tf.int32))

  def predict_on_batch(self, weights, x, training=True):
    del training  # No dropout or batch statistics.
    (kernel, bias), _ = weights
    return tf.matmul(x, kernel) + bias

  def loss(self, output, label, sample_weight=None):
    del sample_weight
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        label, output))


def _np_logits(weights, x):
  kernel, bias = weights
  return x.astype(np.float64) @ kernel.astype(np.float64) + bias


def _np_softmax(z):
  e = np.exp(z - z.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def _np_feddf_teacher(teachers, x, temperature):
  """Lin et al. 2020 (arXiv:2006.07242), eq. (1): softmax of mean logits."""
  mean_logits = np.mean([_np_logits(t, x) for t in teachers], axis=0)
  return _np_softmax(mean_logits / temperature)


class ServerSgdTest(absltest.TestCase):

  def test_one_step_is_the_hand_computed_sgd_step(self):
    model, weights, x, y = _regression()
    got = hb.server_sgd(model, weights, x, y, **_SGD)
    # Both residuals are 1.5: dL/dw = 2/2 * [1.5, 1.5], dL/db = 2 * 1.5.
    np.testing.assert_allclose(got[0], [[0.85], [1.85]], atol=1e-6)
    np.testing.assert_allclose(got[1], [0.2], atol=1e-6)
    np.testing.assert_allclose(got[0], _manual_sgd_step(weights, x, y,
                                                        0.1)[0], atol=1e-6)
    self.assertEqual(got[0].dtype, np.float32)
    # The input is not modified.
    np.testing.assert_array_equal(weights[0], [[1.0], [2.0]])

  def test_an_epoch_of_single_examples_is_two_manual_steps(self):
    model, weights, x, y = _regression()
    got = hb.server_sgd(model, weights, x, y, steps=2, batch_size=1,
                        learning_rate=0.1, seed=3)
    orders = []
    for order in ([0, 1], [1, 0]):
      w = [np.asarray(a, np.float64) for a in weights]
      for i in order:
        w = _manual_sgd_step(w, x[i:i + 1], y[i:i + 1], 0.1)
      orders.append(w)
    # The batch order is a seeded permutation: it is one of the two.
    matches = [np.allclose(got[0], w[0], atol=1e-6)
               and np.allclose(got[1], w[1], atol=1e-6) for w in orders]
    self.assertTrue(any(matches))
    again = hb.server_sgd(model, weights, x, y, steps=2, batch_size=1,
                          learning_rate=0.1, seed=3)
    np.testing.assert_array_equal(got[0], again[0])

  def test_adam_first_step_is_the_hand_computed_adam_step(self):
    # Adam's first step: bias-corrected m = g and v = g^2, so each weight
    # moves lr * g / (|g| + eps) (the cosine-annealed rate is lr at step 0).
    model, weights, x, y = _regression()
    got = hb.server_sgd(model, weights, x, y, steps=1, batch_size=2,
                        learning_rate=0.1, seed=0, optimizer='adam')
    sgd = _manual_sgd_step(weights, x, y, 1.0)
    for w, g_step, o in zip(weights, sgd, got):
      g = w - g_step  # The full-batch gradient.
      np.testing.assert_allclose(o, w - 0.1 * g / (np.abs(g) + 1e-8),
                                 atol=1e-6)
    # The baselines' server training passes its optimizer on.
    training = hb.ServerTraining(steps=1, batch_size=2, learning_rate=0.1,
                                 optimizer='adam')
    center = hb.CenterMethod(model, x, y, training, 0)
    for o, c in zip(got, center.apply(center.initial_state(), weights,
                                      [])[1]):
      np.testing.assert_allclose(c, o, atol=1e-7)
    with self.assertRaisesRegex(ValueError, 'optimizer'):
      hb.server_sgd(model, weights, x, y, steps=1, batch_size=2,
                    learning_rate=0.1, optimizer='rmsprop')

  def test_center_once_trains_at_its_first_round_then_holds(self):
    model, weights, x, y = _regression()
    training = hb.ServerTraining(steps=2, batch_size=1, learning_rate=0.1)
    trained = hb.server_sgd(model, weights, x, y, steps=2, batch_size=1,
                            learning_rate=0.1, seed=hb.round_seed(5, 0))
    once = hb.CenterMethod(model, x, y, training, 5)
    every = hybrid_methods.EveryRoundCenter(
        hb.CenterMethod(model, x, y, training, 5))
    state, first = once.apply(once.initial_state(), weights, [])
    for got, want in zip(first, trained):
      np.testing.assert_allclose(got, want, atol=1e-7)
    state, second = once.apply(state, first, [])
    self.assertEqual(state, 2)
    for got, want in zip(second, trained):
      np.testing.assert_array_equal(got, want)
    # Every round: the second round trains on from the first's model.
    _, again = every.apply(1, first, [])
    self.assertGreater(
        max(np.abs(a - b).max() for a, b in zip(again, first)), 1e-4)

  def test_zero_steps_and_wrappers(self):
    model, weights, x, y = _regression()
    unchanged = hb.server_sgd(model, weights, x, y, steps=0, batch_size=1,
                              learning_rate=0.1)
    np.testing.assert_array_equal(unchanged[0], weights[0])
    want = hb.server_sgd(model, weights, x, y, **_SGD)
    for fn in (hb.center_round, hb.fine_tune):
      got = fn(model, weights, x, y, **_SGD)
      np.testing.assert_array_equal(got[0], want[0])
      np.testing.assert_array_equal(got[1], want[1])
    self.assertEqual(hb.steps_per_epoch(1000, 64), 16)

  def test_bad_arguments(self):
    model, weights, x, y = _regression()
    bad = [
        (dict(steps=-1), '`steps`'),
        (dict(batch_size=0), '`batch_size`'),
        (dict(learning_rate=0.0), '`learning_rate`'),
        (dict(learning_rate=float('nan')), '`learning_rate`'),
    ]
    for override, message in bad:
      with self.subTest(message=message):
        with self.assertRaisesRegex(ValueError, message):
          hb.server_sgd(model, weights, x, y, **{**_SGD, **override})
    with self.assertRaisesRegex(ValueError, r'shapes \[\(2, 1\)\]'):
      hb.server_sgd(model, weights[:1], x, y, **_SGD)
    # Three features against the model's [None, 2]: names both.
    with self.assertRaisesRegex(ValueError, r'server_x.*\(2, 3\).*TensorSpec'):
      hb.server_sgd(model, weights, np.ones([2, 3]), y, **_SGD)
    with self.assertRaisesRegex(ValueError, 'server_y.*structure'):
      hb.server_sgd(model, weights, x, (y, y), **_SGD)
    with self.assertRaisesRegex(ValueError, r'sizes \[1, 2\]'):
      hb.server_sgd(model, weights, x, y[:1], **_SGD)
    with self.assertRaisesRegex(TypeError, 'FunctionalModel'):
      hb.server_sgd(object(), weights, x, y, **_SGD)


class TracedOnceTest(absltest.TestCase):
  """The server steps trace their TF loop once per model and settings."""

  def test_server_sgd_reuses_its_loop_with_the_same_numbers(self):
    model, weights, x, y = _regression()
    settings = dict(steps=2, batch_size=1, learning_rate=0.1)
    data, n = (x, y), len(x)
    runs = []
    for seed, start in enumerate((weights, [w + 1.0 for w in weights],
                                  weights)):
      kept = hb.server_sgd(model, start, x, y, seed=seed, **settings)
      # A loop traced for this call only (no key): the reference.
      fresh = server_sgd_lib.run_sgd(
          model_ops.trainable_loss_fn(model), tuple(start), data, n,
          seed=seed, **settings)
      for a, b in zip(kept, fresh):
        np.testing.assert_array_equal(a, b)
      runs.append(kept)
    loop = server_sgd_lib._LOOPS.get(  # pylint: disable=protected-access
        (('model_loss', model), False, 0.1, 2), lambda: None)
    self.assertIsNotNone(loop)  # Kept under the model and settings.
    self.assertEqual(loop.experimental_get_tracing_count(), 1)
    # The kept loop takes each call's inputs: another start, another result.
    self.assertFalse(np.array_equal(runs[0][0], runs[1][0]))

  def test_feddf_reuses_its_teacher_logits_and_loop(self):
    model = dense.build_binary_classifier(2, hidden_units=())
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], np.float32)
    first = None
    for bias in (0.5, 1.0, 0.5):
      got = hb.feddf_distill(model, _logistic(0.0), [_logistic(bias)], x,
                             steps=2, batch_size=2, learning_rate=0.5)
      first = got if first is None else first
    for a, b in zip(first, got):  # The same inputs, the same numbers.
      np.testing.assert_array_equal(a, b)
    logits = feddf_lib._LOGITS.get(  # pylint: disable=protected-access
        ('feddf_logits', model), lambda: None)
    self.assertEqual(logits.experimental_get_tracing_count(), 1)
    loop = server_sgd_lib._LOOPS.get(  # pylint: disable=protected-access
        (('feddf_distill', model, 1.0), False, 0.5, 2), lambda: None)
    self.assertEqual(loop.experimental_get_tracing_count(), 1)

  def test_cache_keeps_the_most_recent_and_skips_unhashable_keys(self):
    cache = traced_cache.TracedCache(max_size=2)
    made = []

    def make(name):
      return lambda: made.append(name) or name

    for key in ('a', 'b', 'a', 'c', 'b'):
      self.assertEqual(cache.get(key, make(key)), key)
    # 'a' was used before 'c' came, so 'b' was dropped, then made again.
    self.assertEqual(made, ['a', 'b', 'c', 'b'])
    self.assertLen(cache, 2)
    for key in (None, ['unhashable'], None):
      cache.get(key, make('x'))
    self.assertEqual(made[4:], ['x', 'x', 'x'])
    self.assertLen(cache, 2)


class HfclTest(absltest.TestCase):

  def test_merge_is_the_hand_computed_weighted_mean(self):
    got = hb.hfcl_merge(
        [np.array([1.0, 2.0], np.float32)],
        client_deltas=[[np.array([1.0, 0.0])], [np.array([0.0, 2.0])]],
        client_weights=[1.0, 3.0],
        server_delta=[np.array([4.0, 4.0])], server_weight=4.0)
    # (1 [1, 0] + 3 [0, 2] + 4 [4, 4]) / 8 = [17/8, 22/8].
    np.testing.assert_allclose(got[0], [3.125, 4.75], atol=1e-6)
    self.assertEqual(got[0].dtype, np.float32)
    # Without clients the server's update is applied as it is.
    alone = hb.hfcl_merge([np.zeros(2)], [], [], [np.ones(2)], 5.0)
    np.testing.assert_allclose(alone[0], [1.0, 1.0])

  def test_round_trains_the_server_and_weights_it_by_its_size(self):
    model, weights, x, y = _regression()
    client = [np.full([2, 1], 0.3, np.float32), np.full([1], -0.2,
                                                        np.float32)]
    got = hb.hfcl_round(model, weights, [client], [6.0], x, y, **_SGD)
    trained = hb.server_sgd(model, weights, x, y, **_SGD)
    # Server weight 2 (its examples) against the client's 6.
    for j in range(2):
      want = weights[j] + (6 * client[j] + 2 * (trained[j] - weights[j])) / 8
      np.testing.assert_allclose(got[j], want, atol=1e-6)

  def test_method_weighs_each_client_by_its_data_size(self):
    model, weights, x, y = _regression()
    deltas = [[np.full((2, 1), 0.3, np.float32), np.array([1.0], np.float32)],
              [np.full((2, 1), -0.1, np.float32), np.array([0.0], np.float32)]]
    updates = [hb.ClientUpdate(i, d, 0, num_examples=n)
               for i, (d, n) in enumerate(zip(deltas, (8.0, 2.0)))]
    training = hb.ServerTraining(steps=1, batch_size=2, learning_rate=0.1)
    trained = hb.server_sgd(model, weights, x, y, **_SGD)

    def merged(client_epochs, sizes):
      method = hb.HFCLMethod(model, x, y, training, 0, 7.0, client_epochs)
      _, got = method.apply(method.initial_state(), weights, updates)
      # The server's 2 examples weigh 2 against the clients' sizes.
      for j in range(2):
        step = (sum(n * d[j] for n, d in zip(sizes, deltas))
                + 2 * (trained[j] - weights[j])) / (sum(sizes) + 2)
        np.testing.assert_allclose(got[j], weights[j] + step, atol=1e-6)
      return got

    # Two epochs: 8 and 2 examples trained on are data sizes 4 and 1.
    by_size = merged(2, [4.0, 1.0])
    # K fixed steps: every client weighs the mean size given.
    by_mean = merged(None, [7.0, 7.0])
    self.assertGreater(np.max(np.abs(by_size[0] - by_mean[0])), 1e-3)
    method = hb.HFCLMethod(model, x, y, training, 0, 7.0, 2)
    with self.assertRaisesRegex(ValueError, 'num_examples'):
      method.apply(method.initial_state(), weights,
                   [updates[0]._replace(num_examples=None)])

  def test_bad_arguments(self):
    w = [np.zeros(2)]
    with self.assertRaisesRegex(ValueError, '1 client updates but 2'):
      hb.hfcl_merge(w, [w], [1.0, 1.0], w, 1.0)
    with self.assertRaisesRegex(ValueError, r'client_weights\[0\]'):
      hb.hfcl_merge(w, [w], [-1.0], w, 1.0)
    with self.assertRaisesRegex(ValueError, 'sum to 0'):
      hb.hfcl_merge(w, [w], [0.0], w, 0.0)
    with self.assertRaisesRegex(ValueError, r'server_delta.*\(3,\)'):
      hb.hfcl_merge(w, [], [], [np.zeros(3)], 1.0)


class FedDfTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model = dense.build_binary_classifier(2, hidden_units=())
    self.x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [-1.0, 0.5]],
                      np.float32)

  def test_kl_is_the_closed_form_and_averages_logits(self):
    student = _logistic(0.0)
    kl = hb.distillation_kl(self.model, student, [_logistic(math.log(3.0))],
                            self.x)
    self.assertAlmostEqual(kl, _binary_kl(0.75, 0.5), places=5)
    # FedDF's teacher (arXiv:2006.07242, eq. (1)) is the softmax of the
    # mean logit: logits log(3) and 0 give sigmoid(log(3) / 2) =
    # sqrt(3) / (1 + sqrt(3)) ~ 0.634, not the mean probability 0.625.
    kl = hb.distillation_kl(self.model, student,
                            [_logistic(math.log(3.0)), _logistic(0.0)],
                            self.x)
    p = math.sqrt(3.0) / (1.0 + math.sqrt(3.0))
    self.assertAlmostEqual(kl, _binary_kl(p, 0.5), places=5)
    # Temperature 2 halves the teacher's logit.
    kl = hb.distillation_kl(self.model, student, [_logistic(math.log(9.0))],
                            self.x, temperature=2.0)
    self.assertAlmostEqual(kl, _binary_kl(0.75, 0.5), places=5)

  def test_multiclass_teacher_is_the_softmax_of_the_mean_logits(self):
    # Three fixed 3-class teachers, a fixed student, three inputs, T = 2;
    # the oracle is eq. (1) of Lin et al. 2020 written out in numpy.
    model = _SoftmaxRegression(dim=2, classes=3)
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]], np.float32)
    teachers = [
        [np.array([[4.0, 0.0, -1.0], [0.0, 0.0, 3.0]], np.float32),
         np.array([0.0, 1.0, 0.0], np.float32)],
        [np.array([[-2.0, 5.0, 0.0], [1.0, -1.0, 0.0]], np.float32),
         np.array([0.5, 0.0, 0.0], np.float32)],
        [np.array([[0.0, 0.0, 6.0], [-3.0, 2.0, 0.0]], np.float32),
         np.array([0.0, 0.0, -0.5], np.float32)],
    ]
    student = [np.array([[0.5, -0.5, 0.0], [0.0, 1.0, -1.0]], np.float32),
               np.array([0.1, 0.0, -0.1], np.float32)]
    temperature = 2.0
    p_t = _np_feddf_teacher(teachers, x, temperature)
    p_s = _np_softmax(_np_logits(student, x) / temperature)
    want = float(np.mean(np.sum(p_t * (np.log(p_t) - np.log(p_s)), axis=1)))
    got = hb.distillation_kl(model, student, teachers, x,
                             temperature=temperature)
    self.assertAlmostEqual(got, want, places=5)
    # The fixed models are diverse enough that averaging probabilities
    # instead would be caught: that teacher's KL differs clearly.
    p_avg = np.mean([_np_softmax(_np_logits(t, x) / temperature)
                     for t in teachers], axis=0)
    other = float(np.mean(np.sum(p_avg * (np.log(p_avg) - np.log(p_s)),
                                 axis=1)))
    self.assertGreater(abs(other - want), 1e-2)
    # One full-batch SGD step: dKL/dz = (p_S - p_T) / T per example.
    got = hb.feddf_distill(model, student, teachers, x, steps=1,
                           batch_size=3, learning_rate=0.5,
                           temperature=temperature)
    g = (p_s - p_t) / temperature / len(x)
    np.testing.assert_allclose(got[0], student[0] - 0.5 * x.T @ g,
                               atol=1e-5)
    np.testing.assert_allclose(got[1], student[1] - 0.5 * g.sum(0),
                               atol=1e-5)

  def test_teacher_probs_is_the_softmax_of_the_mean_logits(self):
    model = _SoftmaxRegression(dim=2, classes=3)
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]], np.float32)
    teachers = [[np.array([[4.0, 0.0, -1.0], [0.0, 0.0, 3.0]], np.float32),
                 np.array([0.0, 1.0, 0.0], np.float32)],
                [np.array([[-2.0, 5.0, 0.0], [1.0, -1.0, 0.0]], np.float32),
                 np.array([0.5, 0.0, 0.0], np.float32)]]
    np.testing.assert_allclose(
        hb.feddf.teacher_probs(model, teachers, x, temperature=1.5),
        _np_feddf_teacher(teachers, x, 1.5), atol=1e-6)

  def test_method_probe_sees_the_merge_and_the_distilled_model(self):
    model = dense.build_binary_classifier(2, hidden_units=())
    fedbuff = hb.server_strategies.FedBuff(learning_rate=0.5, buffer_size=2)
    training = hb.ServerTraining(steps=2, batch_size=2, learning_rate=0.5,
                                 optimizer=hb.SGD)
    seen = []
    method = hb.FedDFMethod(fedbuff, model, self.x, training, seed=3)
    probe = _distillations(seen)
    start = _logistic(0.0)
    updates = [
        hb.server_strategies.ClientUpdate(
            0, [np.full([2, 1], 0.4, np.float32), np.array([1.0], np.float32)],
            staleness=0, base=start),
        hb.server_strategies.ClientUpdate(
            1, [np.full([2, 1], -0.2, np.float32),
                np.array([-0.5], np.float32)], staleness=1, base=start)]
    state, got = method.apply(method.initial_state(), start, updates[:1],
                              probe)
    self.assertEqual(seen, [])  # The buffer (M = 2) is not full yet.
    state, got = method.apply(state, got, updates[1:], probe)
    self.assertLen(seen, 1)
    merged, distilled, teachers = seen[0]
    # FedBuff's half mean step, then FedDF's distillation of it (towards
    # the teachers' mean logit, which is the full mean step here).
    np.testing.assert_allclose(merged[1], [0.125], atol=1e-6)
    for a, b in zip(distilled, got):
      np.testing.assert_allclose(a, b)
    self.assertLen(teachers, 2)
    self.assertGreater(np.abs(distilled[1] - merged[1]).max(), 1e-4)

  def test_teachers_are_each_merged_buffer_one_distillation_per_merge(self):
    # M = 10, 7 updates buffered, 15 arrive in one round: FedBuff merges
    # the 7 and the first 3 (merge 1), then the next 10 (merge 2), and
    # keeps the last 2. FedDF distills after each merge, exactly the client
    # models of that merge's buffer; the kept 2 teach at the next merge.
    model = self.model
    fedbuff = hb.server_strategies.FedBuff(learning_rate=0.5, buffer_size=10)
    training = hb.ServerTraining(steps=2, batch_size=2, learning_rate=0.5,
                                 optimizer=hb.SGD)
    seen = []
    method = hb.FedDFMethod(fedbuff, model, self.x, training, seed=3)
    probe = _distillations(seen)
    rng = np.random.default_rng(0)
    updates = [hb.server_strategies.ClientUpdate(
        i, [rng.normal(size=[2, 1]).astype(np.float32),
            rng.normal(size=[1]).astype(np.float32)], staleness=i % 3,
        base=_logistic(float(i) / 10, (0.1 * i, -0.05 * i)))
               for i in range(22)]
    start = _logistic(0.2)
    state, got = method.apply(method.initial_state(), start, updates[:7],
                              probe)
    self.assertEqual(seen, [])
    state, got = method.apply(state, got, updates[7:], probe)

    def client_model(u):
      return [b + d for b, d in zip(u.base, u.delta)]

    def direct_merge(x, buffer):
      return [w + 0.5 * np.mean([u.delta[i] for u in buffer], axis=0)
              for i, w in enumerate(x)]

    x, want_teachers = [np.asarray(w) for w in start], []
    for merge, buffer in enumerate((updates[:10], updates[10:20])):
      teachers = [client_model(u) for u in buffer]
      want_teachers.append(teachers)
      x = hb.feddf_distill(model, direct_merge(x, buffer), teachers, self.x,
                           steps=2, batch_size=2, learning_rate=0.5,
                           seed=hb.round_seed(3, merge), optimizer=hb.SGD)
    self.assertLen(seen, 2)
    for (_, _, teachers), want in zip(seen, want_teachers):
      self.assertLen(teachers, 10)
      for t, w in zip(teachers, want):
        for a, b in zip(t, w):
          np.testing.assert_allclose(a, b, atol=1e-6)
    for a, b in zip(got, x):
      np.testing.assert_allclose(a, b, atol=1e-5)
    # The leftovers are FedBuff's buffer and the next merge's teachers.
    self.assertEqual([u.client for u in state.fedbuff.buffer], [20, 21])
    self.assertLen(state.teachers, 2)
    for t, u in zip(state.teachers, updates[20:]):
      for a, b in zip(t, client_model(u)):
        np.testing.assert_allclose(a, b, atol=1e-6)
    self.assertEqual(state.merges, 2)

  def test_one_step_is_the_hand_computed_gradient(self):
    got = hb.feddf_distill(self.model, _logistic(0.0),
                           [_logistic(math.log(3.0))], self.x, steps=1,
                           batch_size=4, learning_rate=1.0)
    # dKL/dz = p_S - p_T = -0.25 for every example (T = 1).
    np.testing.assert_allclose(got[1], [0.25], atol=1e-6)
    np.testing.assert_allclose(got[0][:, 0], 0.25 * self.x.mean(0),
                               atol=1e-6)

  def test_adam_with_cosine_annealing_is_the_hand_computed_adam(self):
    # FedDF's server optimizer (arXiv:2006.07242, section 4.1): Adam with a
    # cosine-annealed learning rate lr_j = lr (1 + cos(pi j / N)) / 2. The
    # oracle replays N = 3 full-batch steps of textbook Adam in numpy.
    model = _SoftmaxRegression(dim=2, classes=3)
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]], np.float32)
    teachers = [
        [np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]], np.float32),
         np.array([0.0, 0.5, 0.0], np.float32)],
        [np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 2.0]], np.float32),
         np.array([0.0, 0.0, 0.5], np.float32)],
    ]
    student = [np.array([[0.5, -0.5, 0.0], [0.0, 1.0, -1.0]], np.float32),
               np.array([0.1, 0.0, -0.1], np.float32)]
    lr, steps, temperature = 0.1, 3, 1.5
    p_t = _np_feddf_teacher(teachers, x, temperature)
    w = [a.astype(np.float64) for a in student]
    m = [np.zeros_like(a) for a in w]
    v = [np.zeros_like(a) for a in w]
    for j in range(steps):
      g_z = (_np_softmax(_np_logits(w, x) / temperature) - p_t) / (
          temperature * len(x))
      grads = [x.T.astype(np.float64) @ g_z, g_z.sum(0)]
      rate = lr * (1.0 + math.cos(math.pi * j / steps)) / 2.0
      for i, g in enumerate(grads):
        m[i] = 0.9 * m[i] + 0.1 * g
        v[i] = 0.999 * v[i] + 0.001 * g * g
        m_hat = m[i] / (1.0 - 0.9 ** (j + 1))
        v_hat = v[i] / (1.0 - 0.999 ** (j + 1))
        w[i] = w[i] - rate * m_hat / (np.sqrt(v_hat) + 1e-8)
    got = hb.feddf_distill(model, student, teachers, x, steps=steps,
                           batch_size=3, learning_rate=lr,
                           temperature=temperature, optimizer='adam')
    np.testing.assert_allclose(got[0], w[0], atol=1e-5)
    np.testing.assert_allclose(got[1], w[1], atol=1e-5)
    # Adam's first step moves every weight with a gradient by lr (m / sqrt(v)
    # = sign(g)), unlike an SGD step of size lr * |g|.
    first = hb.feddf_distill(model, student, teachers, x, steps=1,
                             batch_size=3, learning_rate=lr,
                             temperature=temperature, optimizer='adam')
    np.testing.assert_allclose(np.abs(first[1] - student[1]), lr, rtol=1e-4)

  def test_teacher_equal_to_student_leaves_it_unchanged(self):
    model = dense.build_binary_classifier(2, hidden_units=(4,), seed=1)
    student = [np.asarray(w) for w in model.initial_weights[0]]
    got = hb.feddf_distill(model, student, [student], self.x, steps=3,
                           batch_size=2, learning_rate=0.5, temperature=2.0)
    for g, w in zip(got, student):
      np.testing.assert_allclose(g, w, atol=1e-6)

  def test_distillation_moves_the_student_toward_the_teacher(self):
    model = dense.build_binary_classifier(2, hidden_units=(4,), seed=1)
    student = [np.asarray(w) for w in model.initial_weights[0]]
    teachers = hb.models_from_deltas(
        student, [[np.full_like(w, 0.5) for w in student],
                  [np.full_like(w, -0.2) for w in student]])
    before = hb.distillation_kl(model, student, teachers, self.x)
    got = hb.feddf_distill(model, student, teachers, self.x, steps=20,
                           batch_size=2, learning_rate=0.5)
    after = hb.distillation_kl(model, got, teachers, self.x)
    self.assertGreater(before, 1e-3)
    self.assertLess(after, 0.5 * before)

  def test_bad_arguments(self):
    student = _logistic(0.0)
    args = dict(steps=1, batch_size=2, learning_rate=0.1)
    with self.assertRaisesRegex(ValueError, 'teacher_weight_lists` is empty'):
      hb.feddf_distill(self.model, student, [], self.x, **args)
    with self.assertRaisesRegex(ValueError, r'teacher_weight_lists\[1\]'):
      hb.feddf_distill(self.model, student, [student, student[:1]], self.x,
                       **args)
    with self.assertRaisesRegex(ValueError, '`temperature`'):
      hb.feddf_distill(self.model, student, [student], self.x,
                       temperature=0.0, **args)
    with self.assertRaisesRegex(ValueError, '`steps`'):
      hb.feddf_distill(self.model, student, [student], self.x,
                       **{**args, 'steps': -2})
    with self.assertRaisesRegex(ValueError, '`optimizer`.*momentum'):
      hb.feddf_distill(self.model, student, [student], self.x,
                       optimizer='momentum', **args)
    with self.assertRaisesRegex(ValueError, r'server_x.*\(4,\).*TensorSpec'):
      hb.feddf_distill(self.model, student, [student], np.ones(4), **args)


if __name__ == '__main__':
  absltest.main()
