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
"""Asynchronous runs in client groups equal the per-client runs."""

import functools

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import loadaboost
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import simulation
from tff_mixed.models import dense
from tff_mixed.simulation import client_groups

from tests import testing_utils as tu

_NUM_CLIENTS = 9
_DIM = tu.ASYNC_DIM
_client_arrays = functools.partial(tu.async_client_arrays, seed=200,
                                   min_examples=2, size_cycle=4)
_sgd = tu.sgd


def _batches(dataset, seed):
  # A reshuffle per round, as the experiments' clients do: the grouped
  # dataset_fn must reproduce the round's order inside the computation.
  return dataset.shuffle(8, seed=seed,
                         reshuffle_each_iteration=True).repeat(2).batch(3)


def _dataset(client, round_num):
  return _batches(
      tf.data.Dataset.from_tensor_slices(_client_arrays(client)),
      seed=7 * round_num + 1)


_ROWS = client_groups.array_dataset_fn(
    [_client_arrays(c) for c in range(_NUM_CLIENTS)], lambda d: d)


def _group_dataset(client_id, round_num):
  return _batches(_ROWS(client_id), seed=7 * round_num + 1)


def _loss(weights):
  return tu.mse_loss(weights, [_client_arrays(c) for c in range(_NUM_CLIENTS)])


def _method(name, model):
  if name == 'fedasync':
    return server_strategies.FedAsync(alpha=0.6)
  if name == 'fedbuff':
    return server_strategies.FedBuff(learning_rate=0.9, buffer_size=2)
  if name == 'ca2fl':
    return server_strategies.CA2FL(learning_rate=0.9, buffer_size=2,
                                   num_clients=_NUM_CLIENTS)
  return feddle.FeddleMethod(
      model, feddle.FeddleConfig(max_anchors=4, server_lr=0.9,
                                 search_steps=3, search_lr=0.01),
      _client_arrays(0), buffer_size=2)


class AsyncGroupsTest(parameterized.TestCase):

  def _run(self, name, clients_per_group, model, training, group_training):
    return simulation.run_async(
        _method(name, model),
        schedule_lib.AsyncSchedule(_NUM_CLIENTS, 4, 1.5, 5, seed=3,
                                   allow_fewer=True, check_delays=False),
        training, _dataset, model.initial_weights[0], evaluate_fn=_loss,
        eval_every=2, group_training=group_training,
        clients_per_group=clients_per_group)

  def _assert_same(self, got, want):
    for g, w in zip(got.weights, want.weights):
      np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    self.assertEqual([r['round'] for r in got.rows],
                     [r['round'] for r in want.rows])
    for g, w in zip(got.rows, want.rows):
      for key in ('loss', 'train_loss'):
        np.testing.assert_allclose(g[key], w[key], rtol=1e-5)
    self.assertEqual(
        (got.num_trained, got.num_applied, got.num_dropped),
        (want.num_trained, want.num_applied, want.num_dropped))

  @parameterized.parameters('fedasync', 'fedbuff', 'ca2fl', 'feddle')
  def test_groups_equal_per_client(self, name):
    model = dense.build_linear_regression(_DIM)
    training = client_training.build_client_training(model, _sgd(0.05))
    group_training = client_training.build_group_client_training(
        model, _sgd(0.05), _group_dataset)
    per_client = self._run(name, 1, model, training, group_training)
    self.assertGreater(per_client.num_applied, 0)
    for clients_per_group in (0, 2, 3):
      self._assert_same(
          self._run(name, clients_per_group, model, training,
                    group_training), per_client)

  def test_loadaboost_groups_equal_per_client(self):
    model = dense.build_linear_regression(_DIM)
    kwargs = dict(epochs=4, learning_rate=0.05)
    per_member = loadaboost.build_loadaboost_client_training(model, **kwargs)
    groups = loadaboost.build_loadaboost_group_training(
        model, dataset_fn=_group_dataset, **kwargs)
    runs, drivers = [], []
    for clients_per_group in (1, 3):
      drivers.append(loadaboost.LoAdaBoostTraining(per_member, 4,
                                                   group_training=groups))
      runs.append(self._run('fedbuff', clients_per_group, model, drivers[-1],
                            drivers[-1].train_groups))
    self._assert_same(runs[1], runs[0])
    self.assertEqual(drivers[1].client_epochs, drivers[0].client_epochs)
    self.assertAlmostEqual(drivers[1].threshold, drivers[0].threshold,
                           places=5)

  def test_bad_clients_per_group(self):
    model = dense.build_linear_regression(_DIM)
    with self.assertRaisesRegex(ValueError, '`clients_per_group`'):
      self._run('fedbuff', -1, model,
                client_training.build_client_training(model, _sgd(0.05)),
                None)


if __name__ == '__main__':
  absltest.main()
