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
"""The LM's central rounds (oracle, transfer) against hand computations."""

import collections

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.stackoverflow_wikipedia import central_training


def _linear_model() -> tff.learning.models.FunctionalModel:
  """y ~ x w + b with mean squared error: gradients by hand below."""

  @tf.function
  def predict_on_batch(model_weights, x, training=True):
    del training
    (w, b), _ = model_weights
    return tf.matmul(x, w) + b

  def loss(output, label, sample_weight=None):
    del sample_weight
    return tf.reduce_mean(tf.square(output - label))

  def initialize():
    return collections.OrderedDict()

  return tff.learning.models.FunctionalModel(
      initial_weights=((np.zeros([2, 1], np.float32),
                        np.zeros([1], np.float32)), ()),
      predict_on_batch_fn=predict_on_batch, loss_fn=loss,
      metrics_fns=(initialize, lambda s, *a, **k: s, lambda s: s),
      input_spec=(tf.TensorSpec([None, 2], tf.float32),
                  tf.TensorSpec([None, 1], tf.float32)))


def _hand_steps(w, b, inputs, targets, lr, clip):
  """K clipped SGD steps of the mean squared error, in numpy."""
  for x, y in zip(inputs, targets):
    residual = x @ w + b - y  # [n, 1]
    grad_w = 2.0 * x.T @ residual / len(x)
    grad_b = 2.0 * residual.sum(axis=0) / len(x)
    norm = np.sqrt(np.sum(grad_w**2) + np.sum(grad_b**2))
    scale = min(1.0, clip / norm)
    w, b = w - lr * scale * grad_w, b - lr * scale * grad_b
  return w, b


class ClippedSgdStepsTest(absltest.TestCase):

  def test_steps_equal_the_hand_computed_clipped_sgd(self):
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=[3, 4, 2]).astype(np.float32)
    targets = rng.normal(size=[3, 4, 1]).astype(np.float32) * 5
    w0 = rng.normal(size=[2, 1]).astype(np.float32)
    b0 = np.array([0.5], np.float32)
    # A large clip never bites; a small one bites in every step.
    for clip in (1e6, 0.05):
      steps = central_training.build_clipped_sgd_steps(
          _linear_model(), learning_rate=0.3, clip_norm=clip)
      w, b = steps([w0, b0], inputs, targets)
      expected_w, expected_b = _hand_steps(w0.astype(np.float64), b0,
                                           inputs, targets, 0.3, clip)
      np.testing.assert_allclose(w, expected_w, rtol=1e-5, atol=1e-6)
      np.testing.assert_allclose(b, expected_b, rtol=1e-5, atol=1e-6)
    # With the small clip each step moves the weights by exactly lr * clip.
    one = central_training.build_clipped_sgd_steps(
        _linear_model(), learning_rate=0.3, clip_norm=0.05)
    w, b = one([w0, b0], inputs[:1], targets[:1])
    moved = np.sqrt(np.sum((w - w0)**2) + np.sum((b - b0)**2))
    self.assertAlmostEqual(float(moved), 0.3 * 0.05, places=6)

  def test_bad_rates_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'positive'):
      central_training.build_clipped_sgd_steps(_linear_model(), 0.0, 1.0)
    with self.assertRaisesRegex(ValueError, 'positive'):
      central_training.build_clipped_sgd_steps(_linear_model(), 1.0, -1.0)


class OracleBatchesTest(absltest.TestCase):

  def test_tables_7_8_split_800_sequences_600_to_200(self):
    self.assertEqual(central_training.oracle_batch_split(100, 8, 0.75),
                     (600, 200))
    # Small cohorts keep one sequence of each corpus.
    self.assertEqual(central_training.oracle_batch_split(1, 2, 0.99), (1, 1))
    self.assertEqual(central_training.oracle_batch_split(10, 8, 0.75),
                     (60, 20))
    with self.assertRaisesRegex(ValueError, 'at least 2'):
      central_training.oracle_batch_split(1, 1, 0.75)
    with self.assertRaisesRegex(ValueError, r'\(0, 1\)'):
      central_training.oracle_batch_split(10, 8, 1.0)

  def test_pooled_batches_hold_f_federated_then_c_central_sequences(self):
    # Federated rows are [i, i+1000...], central rows [-i, ...]: each
    # sequence says where it came from.
    federated = (np.arange(50)[:, None] + np.zeros([1, 3], int),
                 np.arange(50)[:, None] + 1000 + np.zeros([1, 3], int))
    central = (-np.arange(1, 31)[:, None] + np.zeros([1, 3], int),
               -np.arange(1, 31)[:, None] - 1000 + np.zeros([1, 3], int))
    inputs, targets = central_training.pooled_batches(
        central_training.round_rng(7, 3), federated, central, steps=4,
        federated_per_batch=6, central_per_batch=2)
    self.assertEqual(inputs.shape, (4, 8, 3))
    for k in range(4):
      self.assertTrue(np.all(inputs[k, :6] >= 0))
      self.assertTrue(np.all(inputs[k, 6:] < 0))
      # Targets travel with their inputs; no repeat within a step.
      np.testing.assert_array_equal(
          targets[k], np.where(inputs[k] >= 0, inputs[k] + 1000,
                               inputs[k] - 1000))
      self.assertLen(set(inputs[k, :, 0]), 8)
    # The same (seed, round) draws the same batches; another round not.
    again, _ = central_training.pooled_batches(
        central_training.round_rng(7, 3), federated, central, steps=4,
        federated_per_batch=6, central_per_batch=2)
    np.testing.assert_array_equal(inputs, again)
    other, _ = central_training.pooled_batches(
        central_training.round_rng(7, 4), federated, central, steps=4,
        federated_per_batch=6, central_per_batch=2)
    self.assertFalse(np.array_equal(inputs, other))

  def test_a_corpus_smaller_than_a_batch_is_drawn_with_replacement(self):
    rows = central_training.sample_rows(np.random.default_rng(0), 3, 2, 5)
    self.assertEqual(rows.shape, (2, 5))
    self.assertTrue(np.all((rows >= 0) & (rows < 3)))


if __name__ == '__main__':
  absltest.main()
