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
"""Tests for the asynchronous client-training computation."""

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import client_training
from tff_mixed.models import dense


class ClientTrainingTest(absltest.TestCase):

  def test_updates_are_hand_computed_sgd_steps_per_client(self):
    # y = x w + b with w = [1, 2], b = 0.5 and mean squared error; lr 0.1.
    model = dense.build_linear_regression(
        2, (np.array([[1.0], [2.0]], np.float32),
            np.array([0.5], np.float32)))
    train = client_training.build_client_training(
        model, tff.learning.optimizers.build_sgdm(0.1))
    x = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    y = np.array([[0.0], [1.0]], np.float32)
    datasets = [
        tf.data.Dataset.from_tensor_slices((x, y)).batch(2),
        tf.data.Dataset.from_tensor_slices((x[:1], y[:1])).batch(1),
    ]
    weights = tff.learning.models.ModelWeights(
        trainable=model.initial_weights[0], non_trainable=())
    result = train(weights, datasets)
    # Client 1: both residuals are 1.5, so dL/dw = 2/2 * 1.5 * [1, 1] and
    # dL/db = 2/2 * (1.5 + 1.5); the update is -0.1 times that.
    # Client 2: residual 1.5 on x = [1, 0]: dL/dw = [3, 0], dL/db = 3.
    want = [([[-0.15], [-0.15]], [-0.3]), ([[-0.3], [0.0]], [-0.3])]
    self.assertLen(result['update'], 2)
    for got, (want_w, want_b) in zip(result['update'], want):
      np.testing.assert_allclose(got[0], want_w, atol=1e-6)
      np.testing.assert_allclose(got[1], want_b, atol=1e-6)
    self.assertEqual(list(result['num_examples']), [2.0, 1.0])
    # The mean training loss over the 3 examples, all with residual 1.5.
    self.assertAlmostEqual(float(result['loss']), 2.25, places=5)

  def test_only_updates_leave_the_clients(self):
    model = dense.build_linear_regression(3)
    train = client_training.build_client_training(
        model, tff.learning.optimizers.build_sgdm(0.1))
    parameter = train.type_signature.parameter
    self.assertEqual(parameter[0].placement, tff.SERVER)
    self.assertEqual(parameter[1].placement, tff.CLIENTS)
    result = train.type_signature.result
    # Per-client values are the update (shaped like the weights) and its
    # example count; the loss is aggregated at the server. No element of
    # the client data's type appears in the result.
    self.assertEqual(result.update.placement, tff.CLIENTS)
    self.assertEqual(
        [t.shape for t in result.update.member],
        [(3, 1), (1,)])
    self.assertEqual(result.num_examples.placement, tff.CLIENTS)
    self.assertEqual(result.loss.placement, tff.SERVER)

  def test_bad_model(self):
    with self.assertRaisesRegex(TypeError, 'FunctionalModel'):
      client_training.build_client_training(
          object(), tff.learning.optimizers.build_sgdm(0.1))


if __name__ == '__main__':
  absltest.main()
