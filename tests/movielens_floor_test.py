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
"""The MovieLens floor (`benchmarks/movielens_floor.py`) does a round's work.

Two floor rounds give the weights of two rounds of the broadcast process
movielens_main's scenario builds (`movielens_process.build_process(...,
select=False)`), from the same initial weights on the same client batches
(the ones `movielens_floor.client_batches` reads from the binary's
datasets); and the central part bites: the baseline's client spreadout and
the mixed algorithms' server spreadout move the weights.
"""

import os

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from benchmarks import movielens_floor
from experiments.movielens import movielens_config as config_lib
from experiments.movielens import movielens_process
from tests import movielens_testing
from tests import temp_dirs
from tff_mixed.tasks import movielens

_ROUNDS = 2


def _tiny(test):
  ratings = movielens_testing.write_ratings(
      os.path.join(temp_dirs.temp_dir(test), 'u.data'), num_users=12,
      num_movies=20)
  # A lambda large enough that the spreadout moves the tiny table.
  config = config_lib.Config(
      clients_per_round=3, client_steps=2, client_batch_size=3,
      embedding_dim=4, context_length=3, spreadout_lambda=0.5,
      client_lr=0.1, parallel_training_lr=0.1)
  data = movielens.load_movielens(ratings,
                                  context_length=config.context_length)
  users = movielens_process.train_user_names(data)[:config.clients_per_round]
  return data, config, [f'1|{u}' for u in users]


def _datasets(x, batch_size):
  """One dataset per client of exactly its K batches."""
  (context, label), _ = x
  return [tf.data.Dataset.from_tensor_slices(
      ((context[c].reshape(-1, context.shape[-1]), label[c].reshape(-1)),
       label[c].reshape(-1))).batch(batch_size)
          for c in range(context.shape[0])]


def _floor_weights(scenario, data, config, batches, lambda_=None):
  if lambda_ is not None:
    config = config._replace(spreadout_lambda=lambda_)
  runner = movielens_floor.build_floor_runner(scenario, data.num_movies + 1,
                                              config)
  runner.set_clients(*batches,
                     central=movielens_floor.central_inputs(scenario, config))
  for _ in range(_ROUNDS):
    runner.run_round()
  return runner.trainable


class MovieLensFloorTest(parameterized.TestCase):

  @parameterized.named_parameters(
      (scenario, scenario) for scenario in movielens_floor.ALGORITHMS)
  def test_floor_rounds_give_the_broadcast_process_weights(self, scenario):
    data, config, client_ids = _tiny(self)
    batches = movielens_floor.client_batches(data, config, client_ids)
    (context, label), y = batches
    self.assertEqual(context.shape, (3, config.client_steps,
                                     config.client_batch_size,
                                     config.context_length))
    np.testing.assert_array_equal(label, y)
    process = movielens_process.build_process(scenario, data, config,
                                              select=False)
    datasets = _datasets(batches, config.client_batch_size)
    state = process.initialize()
    for _ in range(_ROUNDS):
      state = process.next(state, datasets).state
    want = process.get_model_weights(state).trainable

    got = _floor_weights(scenario, data, config, batches)
    for w, g in zip(want, got, strict=True):
      np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # The spreadout (on the clients for the baseline, at the server for the
    # others) is part of the round: without it the weights end elsewhere.
    without = _floor_weights(scenario, data, config, batches, lambda_=0.0)
    self.assertGreater(max(np.abs(a - b).max()
                           for a, b in zip(without, want)), 1e-4)

  def test_client_batches_are_the_binary_datasets(self):
    data, config, client_ids = _tiny(self)
    (context, label), _ = movielens_floor.client_batches(data, config,
                                                         client_ids)
    dataset_fn = movielens_process.client_dataset_fn(data, config,
                                                     fedavg=True)
    for c, client_id in enumerate(client_ids):
      for k, ((want_context, want_label), _) in enumerate(
          dataset_fn(client_id).as_numpy_iterator()):
        rows = len(want_label)
        np.testing.assert_array_equal(context[c, k, :rows], want_context)
        np.testing.assert_array_equal(label[c, k, :rows], want_label)

  def test_a_scenario_without_a_floor_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'one_way_gt_fedadam'):
      movielens_floor.build_floor_runner(config_lib.ONE_WAY_GT_FEDADAM, 10,
                                         config_lib.Config())


if __name__ == '__main__':
  absltest.main()
