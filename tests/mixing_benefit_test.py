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
"""Mixing central data fixes label imbalance that FL alone cannot.

The paper's motivating problem (arXiv:2205.13655, section 4.1) in miniature:
clients hold only positive examples, the server only negatives, evaluation
needs both. FedAvg alone never sees a negative; every mixed algorithm must do
clearly better on a balanced evaluation set.
"""

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tff_mixed.models import dense


def _blobs(rng, n, label):
  # The classes differ only in the second feature; the mean of the positives
  # alone points where the negatives also score positive, so a model trained
  # on positives only labels everything positive.
  center = np.array([1.5, -0.75 if label else 0.75])
  x = (center + 0.4 * rng.normal(size=(n, 2))).astype(np.float32)
  return x, np.full([n, 1], float(label), np.float32)


class MixingBeatsFederatedOnlyTest(absltest.TestCase):

  def test_every_mixed_algorithm_beats_fl_only(self):
    rng = np.random.default_rng(0)
    clients = [_blobs(rng, 12, 1) for _ in range(6)]
    central = _blobs(rng, 60, 0)
    eval_x = np.concatenate([_blobs(rng, 100, 1)[0], _blobs(rng, 100, 0)[0]])
    eval_y = np.concatenate([np.ones(100), np.zeros(100)])
    datasets = [tf.data.Dataset.from_tensor_slices(c).batch(4)
                for c in clients]
    model = dense.build_binary_classifier(2, hidden_units=(), seed=1)
    objective = tff_mixed.central_data_objective(central)

    def sgd():
      return tff.learning.optimizers.build_sgdm(learning_rate=0.5)

    processes = dict(
        fl_only=tff.learning.algorithms.build_weighted_fed_avg(
            model, client_optimizer_fn=sgd()),
        parallel_training=tff_mixed.build_parallel_training(
            model, objective, sgd(), sgd(), central_batch_size=24,
            client_steps=3),
        one_way=tff_mixed.build_one_way_gradient_transfer(
            model, objective, sgd(), central_batch_size=24, client_steps=3),
        two_way=tff_mixed.build_two_way_gradient_transfer(
            model, objective, sgd(), sgd(), central_batch_size=24,
            client_steps=3),
        example_transfer=tff_mixed.build_example_transfer(
            model, objective, sgd(), examples_per_client=12,
            client_batch_size=4, client_steps=3),
    )
    accuracy = {}
    for name, process in processes.items():
      state = process.initialize()
      for _ in range(8):
        state = process.next(state, datasets).state
      weights = process.get_model_weights(state)
      logits = model.predict_on_batch(
          (tuple(weights.trainable), tuple(weights.non_trainable)), eval_x,
          training=False)
      accuracy[name] = float(np.mean((np.ravel(logits) > 0) == eval_y))
    # FL alone predicts "positive" for everything.
    self.assertLess(accuracy['fl_only'], 0.6, accuracy)
    for name in ('parallel_training', 'one_way', 'two_way',
                 'example_transfer'):
      self.assertGreater(accuracy[name], 0.85, accuracy)  # FL-only: ~0.5
      self.assertGreater(accuracy[name], accuracy['fl_only'] + 0.25, accuracy)


if __name__ == '__main__':
  absltest.main()
