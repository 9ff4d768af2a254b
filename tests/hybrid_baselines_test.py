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
"""Tests for `tff_mixed.asynchronous.hybrid_baselines` (seed 003 baselines).

Oracles: hand-computed SGD steps on linear regression, the hand-computed
HFCL weighted mean, and closed-form binary KL values and gradients for
FedDF on logistic regression.
"""

import math

from absl.testing import absltest
import numpy as np

import tff_mixed
from tff_mixed.asynchronous import hybrid_baselines as hb

_SGD = dict(steps=1, batch_size=2, learning_rate=0.1, seed=0)


def _regression():
  """y = x w + b with w = [1, 2], b = 0.5, on two one-hot examples."""
  weights = [np.array([[1.0], [2.0]], np.float32),
             np.array([0.5], np.float32)]
  model = tff_mixed.build_linear_regression(2)
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


def _binary_kl(p, q):
  return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


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
    self.model = tff_mixed.build_binary_classifier(2, hidden_units=())
    self.x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [-1.0, 0.5]],
                      np.float32)

  def test_kl_is_the_closed_form_and_averages_probabilities(self):
    student = _logistic(0.0)
    kl = hb.distillation_kl(self.model, student, [_logistic(math.log(3.0))],
                            self.x)
    self.assertAlmostEqual(kl, _binary_kl(0.75, 0.5), places=5)
    # Teachers p = 0.75 and 0.5 average to 0.625 (averaged logits would
    # give sigmoid(log(3) / 2) ~ 0.634).
    kl = hb.distillation_kl(self.model, student,
                            [_logistic(math.log(3.0)), _logistic(0.0)],
                            self.x)
    self.assertAlmostEqual(kl, _binary_kl(0.625, 0.5), places=5)
    # Temperature 2 halves the teacher's logit.
    kl = hb.distillation_kl(self.model, student, [_logistic(math.log(9.0))],
                            self.x, temperature=2.0)
    self.assertAlmostEqual(kl, _binary_kl(0.75, 0.5), places=5)

  def test_one_step_is_the_hand_computed_gradient(self):
    got = hb.feddf_distill(self.model, _logistic(0.0),
                           [_logistic(math.log(3.0))], self.x, steps=1,
                           batch_size=4, learning_rate=1.0)
    # dKL/dz = p_S - p_T = -0.25 for every example (T = 1).
    np.testing.assert_allclose(got[1], [0.25], atol=1e-6)
    np.testing.assert_allclose(got[0][:, 0], 0.25 * self.x.mean(0),
                               atol=1e-6)

  def test_teacher_equal_to_student_leaves_it_unchanged(self):
    model = tff_mixed.build_binary_classifier(2, hidden_units=(4,), seed=1)
    student = [np.asarray(w) for w in model.initial_weights[0]]
    got = hb.feddf_distill(model, student, [student], self.x, steps=3,
                           batch_size=2, learning_rate=0.5, temperature=2.0)
    for g, w in zip(got, student):
      np.testing.assert_allclose(g, w, atol=1e-6)

  def test_distillation_moves_the_student_toward_the_teacher(self):
    model = tff_mixed.build_binary_classifier(2, hidden_units=(4,), seed=1)
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
    with self.assertRaisesRegex(ValueError, r'server_x.*\(4,\).*TensorSpec'):
      hb.feddf_distill(self.model, student, [student], np.ones(4), **args)


if __name__ == '__main__':
  absltest.main()
