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
"""Tests for `tff_mixed.asynchronous.loadaboost` (LoAdaBoost FedAvg).

Oracle: minibatch SGD on linear regression computed in numpy, epoch by
epoch, with the loss after every epoch; thresholds are placed between those
losses to force each stopping rule.
"""

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import loadaboost
from tff_mixed.models import dense

_LR = 0.05
_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
_Y = np.array([[1.0], [2.0], [3.5]], np.float32)


def _manual(epochs):
  """Weights and full-data MSE after each epoch (batches [0, 1], [2])."""
  w, b = np.zeros([2, 1]), np.zeros([1])
  history = []
  for _ in range(epochs):
    for rows in (slice(0, 2), slice(2, 3)):
      x, y = _X[rows], _Y[rows]
      r = x @ w + b - y
      w, b = w - _LR * 2.0 / len(x) * x.T @ r, b - _LR * 2.0 * r.mean(0)
    loss = float(np.mean((_X @ w + b - _Y) ** 2))
    history.append(((w, b), loss))
  return history


class ScheduleTest(absltest.TestCase):

  def test_check_epochs(self):
    self.assertEqual(loadaboost.check_epochs(6), (3, 5, 6, 7, 8, 9))
    self.assertEqual(loadaboost.check_epochs(10), (5, 9, 12, 14, 15))
    self.assertEqual(loadaboost.check_epochs(2), (1, 2, 3))
    self.assertEqual(loadaboost.check_epochs(4, 'epoch'), (2, 3, 4, 5, 6))

  def test_next_threshold_is_the_median(self):
    self.assertEqual(loadaboost.next_threshold([3.0, 1.0, 2.0]), 2.0)
    self.assertEqual(loadaboost.next_threshold([10.0, 1.0, 3.0, 2.0]), 2.5)

  def test_bad_arguments(self):
    for epochs in (0, 3, 2.0, True):
      with self.subTest(epochs=epochs):
        with self.assertRaisesRegex(ValueError, 'even int >= 2'):
          loadaboost.check_epochs(epochs)
    with self.assertRaisesRegex(ValueError, 'granularity'):
      loadaboost.check_epochs(4, 'batch')
    with self.assertRaisesRegex(ValueError, 'non-empty'):
      loadaboost.next_threshold([])
    with self.assertRaisesRegex(ValueError, 'NaN'):
      loadaboost.next_threshold([1.0, float('nan')])
    model = dense.build_linear_regression(2)
    with self.assertRaisesRegex(ValueError, 'learning_rate'):
      loadaboost.build_loadaboost_client_training(model, epochs=2,
                                                  learning_rate=0.0)
    with self.assertRaisesRegex(TypeError, 'FunctionalModel'):
      loadaboost.build_loadaboost_client_training(object(), epochs=2,
                                                  learning_rate=0.1)


class ClientTrainingTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model = dense.build_linear_regression(2)
    cls.weights = tff.learning.models.ModelWeights(
        trainable=cls.model.initial_weights[0], non_trainable=())
    cls.data = [tf.data.Dataset.from_tensor_slices((_X, _Y)).batch(2)]
    cls.history = _manual(9)
    # The test cases below need a strictly decreasing loss.
    losses = [loss for _, loss in cls.history]
    assert all(a > b for a, b in zip(losses, losses[1:])), losses
    cls.slides = loadaboost.build_loadaboost_client_training(
        cls.model, epochs=6, learning_rate=_LR)
    cls.per_epoch = loadaboost.build_loadaboost_client_training(
        cls.model, epochs=6, learning_rate=_LR, granularity='epoch')

  def assert_trained(self, result, epochs):
    (w, b), loss = self.history[epochs - 1]
    self.assertEqual(list(result['num_epochs']), [epochs])
    self.assertLen(result['update'], 1)
    # The initial weights are zero, so the update is the trained model.
    np.testing.assert_allclose(result['update'][0][0], w, atol=1e-5)
    np.testing.assert_allclose(result['update'][0][1], b, atol=1e-5)
    np.testing.assert_allclose(result['final_loss'], [loss], rtol=1e-5)
    self.assertEqual(list(result['num_examples']), [3.0])

  def test_first_round_trains_half_the_epochs(self):
    # Threshold +inf (round 1): every client stops after E/2 = 3 epochs.
    self.assert_trained(self.slides(self.weights, np.inf, self.data), 3)

  def test_unreachable_threshold_trains_up_to_the_cap(self):
    self.assert_trained(self.slides(self.weights, -np.inf, self.data), 9)
    self.assert_trained(self.per_epoch(self.weights, -np.inf, self.data), 9)

  def test_stops_at_the_first_check_below_the_threshold(self):
    losses = [loss for _, loss in self.history]
    # L(4) <= threshold < L(3): the loss is first low enough after epoch 4.
    threshold = 0.5 * (losses[2] + losses[3])
    self.assert_trained(self.per_epoch(self.weights, threshold, self.data),
                        4)
    # The slides' schedule checks after 3 and then 3 + (E/2 - 1) = 5.
    self.assert_trained(self.slides(self.weights, threshold, self.data), 5)
    # A threshold just above L(5) (float32 rounding aside) stops at 5.
    self.assert_trained(
        self.per_epoch(self.weights, losses[4] * (1 + 1e-6), self.data), 5)

  def test_clients_stop_independently(self):
    losses = [loss for _, loss in self.history]
    threshold = 0.5 * (losses[2] + losses[3])
    # A second client whose data the initial model already fits exactly.
    easy = tf.data.Dataset.from_tensor_slices(
        (_X, np.zeros_like(_Y))).batch(2)
    result = self.per_epoch(self.weights, threshold, self.data + [easy])
    self.assertEqual(list(result['num_epochs']), [4, 3])
    np.testing.assert_allclose(result['update'][1][0], 0.0)
    self.assertEqual(result['final_loss'][1], 0.0)

  def test_driver_carries_the_median_threshold(self):
    losses = [loss for _, loss in self.history]
    easy = tf.data.Dataset.from_tensor_slices(
        (_X, np.zeros_like(_Y))).batch(2)
    driver = loadaboost.LoAdaBoostTraining(self.per_epoch, epochs=6)
    self.assertTrue(np.isnan(driver.mean_epochs))
    # Round 1: threshold +inf, both clients stop after E/2 = 3 epochs.
    first = driver(self.weights, self.data + [easy])
    self.assertEqual(driver.client_epochs, [3, 3])
    self.assertAlmostEqual(first['loss'], losses[2] / 2, places=5)
    self.assertAlmostEqual(driver.threshold, losses[2] / 2, places=5)
    # Round 2 uses the median: the hard client trains until its loss is at
    # most L(3) / 2 (or to the 3E/2 cap), the easy one still stops at 3.
    expected = next((e for e in range(3, 10)
                     if losses[e - 1] <= driver.threshold), 9)
    self.assertGreater(expected, 3)
    driver(self.weights, self.data + [easy])
    self.assertEqual(driver.client_epochs, [3, 3, expected, 3])
    self.assertAlmostEqual(driver.mean_epochs, (9 + expected) / 4)
    with self.assertRaisesRegex(ValueError, 'even int'):
      loadaboost.LoAdaBoostTraining(self.per_epoch, epochs=3)

  def test_type_signature(self):
    signature = self.slides.type_signature
    parameter = signature.parameter
    self.assertEqual([p.placement for p in parameter],
                     [tff.SERVER, tff.SERVER, tff.CLIENTS])
    result = signature.result
    for name in ('update', 'num_examples', 'final_loss', 'num_epochs'):
      self.assertEqual(result[name].placement, tff.CLIENTS)
    self.assertEqual([t.shape for t in result.update.member], [(2, 1), (1,)])


if __name__ == '__main__':
  absltest.main()
