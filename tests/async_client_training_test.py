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
from tff_mixed.tasks import client_streams


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

  def test_epochs_of_adam_are_hand_computed_adam_steps(self):
    # E = 2 epochs of batch 2 over 5 examples (3 batches an epoch, the last
    # of 1 example), Adam as TFF states it: m, v moving averages and the
    # bias corrections folded into the step size.
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 2)).astype(np.float32)
    y = rng.normal(size=(5, 1)).astype(np.float32)
    w0 = (np.array([[0.3], [-0.2]], np.float32), np.array([0.1], np.float32))
    model = dense.build_linear_regression(2, w0)
    lr, beta1, beta2, eps = 0.05, 0.9, 0.999, 1e-7
    train = client_training.build_client_training(
        model, tff.learning.optimizers.build_adam(lr))

    def stream():
      return client_streams.epochs_stream(
          tf.data.Dataset.from_tensor_slices((x, y)), 5, 2, 2, seed=7)

    batches = list(stream().as_numpy_iterator())
    self.assertEqual([len(b[1]) for b in batches], [2, 2, 1, 2, 2, 1])
    params = [w.astype(np.float64) for w in w0]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t, (bx, by) in enumerate(batches, start=1):
      residual = bx @ params[0] + params[1] - by
      grads = [2.0 / len(by) * bx.T @ residual,
               2.0 / len(by) * residual.sum(axis=0)]
      rate = lr * np.sqrt(1 - beta2**t) / (1 - beta1**t)
      for i, g in enumerate(grads):
        m[i] = beta1 * m[i] + (1 - beta1) * g
        v[i] = beta2 * v[i] + (1 - beta2) * g * g
        params[i] = params[i] - rate * m[i] / (np.sqrt(v[i]) + eps)
    weights = tff.learning.models.ModelWeights(trainable=w0,
                                               non_trainable=())
    result = train(weights, [stream()])
    for got, p, start in zip(result['update'][0], params, w0):
      np.testing.assert_allclose(got, p - start, rtol=1e-4, atol=1e-6)
    # Every example counts once per epoch.
    self.assertEqual(list(result['num_examples']), [10.0])

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
