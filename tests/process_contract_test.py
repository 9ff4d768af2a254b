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
"""The processes honour TFF's contracts and handle bad client data like FedAvg.

They are `tff.learning.templates.LearningProcess`es that run under
`tff.simulation.run_training_process`, expose model weights and
hyperparameters, accept TFF aggregators and optimizers, take a data-free
regularizer as f_c, and treat empty or non-finite clients as TFF's FedAvg
does (zero weight, no NaN in the model).
"""

import asyncio
import collections
import shutil
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tests import testing_utils as tu


def _all_processes(model=None, objective=None, **kwargs):
  model = model or tu.linear_model()
  objective = objective or tff_mixed.central_data_objective(
      tu.central_arrays())
  return collections.OrderedDict(
      parallel_training=tff_mixed.build_parallel_training(
          model, objective, tu.sgd(0.1), tu.sgd(0.1), central_batch_size=4,
          client_steps=2, **kwargs),
      one_way=tff_mixed.build_one_way_gradient_transfer(
          model, objective, tu.sgd(0.1), central_batch_size=4, **kwargs),
      two_way=tff_mixed.build_two_way_gradient_transfer(
          model, objective, tu.sgd(0.1), tu.sgd(0.1), central_batch_size=4,
          client_steps=2, **kwargs),
  )


class ContractTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.processes = _all_processes()
    cls.processes['example_transfer'] = tff_mixed.build_example_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        examples_per_client=2, client_batch_size=2)
    cls.datasets = tu.to_datasets(tu.client_arrays(), batch_size=2)

  def test_is_learning_process_with_fed_avg_metric_layout(self):
    for name, process in self.processes.items():
      with self.subTest(name):
        self.assertIsInstance(process, tff.learning.templates.LearningProcess)
        state_type = process.initialize.type_signature.result
        self.assertIs(state_type.member.python_container,
                      tff_mixed.MixedFLState)
        metrics_type = process.next.type_signature.result.metrics.member
        self.assertLen(metrics_type, 4)
        self.assertContainsSubset(
            ['client_work', 'aggregator', 'central', 'finalizer'],
            dir(metrics_type))

  def test_runs_under_run_training_process(self):
    process = self.processes['two_way']
    manager = tff.program.MemoryReleaseManager()
    final_state = tff.simulation.run_training_process(
        process,
        training_selection_fn=lambda round_num: self.datasets,
        total_rounds=2,
        metrics_managers=[manager])
    released = manager.values()
    self.assertEqual(sorted(released), [1, 2])
    self.assertIn('client_work', released[2])
    self.assertEqual(int(final_state.round_num), 2)

  def test_get_and_set_model_weights(self):
    for name, process in self.processes.items():
      with self.subTest(name):
        state = process.initialize()
        weights = process.get_model_weights(state)
        new_weights = tff.learning.models.ModelWeights(
            trainable=tuple(np.full_like(w, 7.0) for w in weights.trainable),
            non_trainable=weights.non_trainable)
        state = process.set_model_weights(state, new_weights)
        for w in process.get_model_weights(state).trainable:
          np.testing.assert_array_equal(w, np.full_like(w, 7.0))

  def test_hparams_round_trip(self):
    process = self.processes['parallel_training']
    state = process.initialize()
    hparams = process.get_hparams(state)
    self.assertEqual(list(hparams),
                     ['server_optimizer', 'central_optimizer',
                      'merge_optimizer'])
    hparams['central_optimizer']['learning_rate'] = np.float32(0.25)
    state = process.set_hparams(state, hparams)
    self.assertAlmostEqual(
        process.get_hparams(state)['central_optimizer']['learning_rate'], 0.25)

  def test_checkpoint_round_trip(self):
    process = self.processes['two_way']
    state = process.next(process.initialize(), self.datasets).state
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root)
    manager = tff.program.FileProgramStateManager(root)
    # TFF's training loop uses the thread's current event loop, so keep one
    # set rather than using asyncio.run, which clears it.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(manager.save(state, 1))
    loaded, version = loop.run_until_complete(
        manager.load_latest(process.initialize()))
    self.assertEqual(version, 1)
    a = process.next(state, self.datasets).state
    b = process.next(loaded, self.datasets).state
    for x, y in zip(tu.trainable(process, a), tu.trainable(process, b)):
      np.testing.assert_array_equal(x, y)


class ComponentsTest(absltest.TestCase):

  def test_regularizer_central_objective(self):
    # A data-free f_c pulling the weights to zero: with w_c = 1 Parallel
    # Training must shrink the weights by exactly (1 - lr_c)^K_c per round.
    regularizer = tff_mixed.central_regularizer(
        lambda weights, batch: 0.5 * tf.add_n(
            [tf.reduce_sum(tf.square(w)) for w in weights[0]]))
    process = tff_mixed.build_parallel_training(
        tu.linear_model(), regularizer, tu.sgd(0.1), tu.sgd(0.5),
        central_batch_size=1, central_steps=2, client_steps=1,
        federated_weight=0.0, central_weight=1.0)
    state = process.next(process.initialize(),
                         tu.to_datasets(tu.client_arrays(), 2)).state
    for got, initial in zip(tu.trainable(process, state),
                            tu.initial_weights()):
      np.testing.assert_allclose(got, initial * 0.25, atol=1e-6)

  def test_adaptive_clipping_aggregator_and_fedadam(self):
    aggregator = tff.aggregators.clipping_factory(
        tff.aggregators.PrivateQuantileEstimationProcess.no_noise(
            initial_estimate=1.0, target_quantile=0.8, learning_rate=0.2),
        tff.aggregators.MeanFactory())
    processes = _all_processes(
        model_aggregator=aggregator, central_clip_norm=0.5)
    datasets = tu.to_datasets(tu.client_arrays(), 2)
    for name, process in processes.items():
      with self.subTest(name):
        output = process.next(process.initialize(), datasets)
        self.assertIn('clipping_norm', output.metrics['aggregator'])
        self.assertTrue(all(np.all(np.isfinite(w))
                            for w in tu.trainable(process, output.state)))
    fed_adam = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        tff.learning.optimizers.build_adam(learning_rate=0.01),
        central_batch_size=4)
    state = fed_adam.next(fed_adam.initialize(), datasets).state
    # Adam's first step moves every weight by about its learning rate.
    moved = [np.abs(a - b) for a, b in zip(tu.trainable(fed_adam, state),
                                           tu.initial_weights())]
    for m in moved:
      np.testing.assert_allclose(m, 0.01, rtol=1e-3)

  def test_central_batches_are_seeded(self):
    objective = tff_mixed.central_data_objective(tu.central_arrays(n=64))
    datasets = tu.to_datasets(tu.client_arrays(), 2)

    def run(seed):
      process = tff_mixed.build_one_way_gradient_transfer(
          tu.linear_model(), objective, tu.sgd(0.1), central_batch_size=4,
          seed=seed)
      state = process.initialize()
      for _ in range(2):
        state = process.next(state, datasets).state
      return np.concatenate([w.ravel() for w in tu.trainable(process, state)])

    np.testing.assert_array_equal(run(3), run(3))
    self.assertGreater(np.abs(run(3) - run(4)).max(), 1e-6)


class BadClientDataTest(absltest.TestCase):

  def test_empty_client_gets_zero_weight(self):
    arrays = tu.client_arrays()
    empty = (np.zeros([0, 2], np.float32), np.zeros([0, 1], np.float32))
    with_empty = tu.to_datasets(arrays + [empty], 2)
    without = tu.to_datasets(arrays, 2)
    for name, process in _all_processes().items():
      with self.subTest(name):
        output = process.next(process.initialize(), with_empty)
        a = output.state
        b = process.next(process.initialize(), without).state
        for x, y in zip(tu.trainable(process, a), tu.trainable(process, b)):
          np.testing.assert_allclose(x, y, atol=1e-6)
        # Said, not only weighed 0.
        self.assertEqual(
            dict(output.metrics['client_work']['clients']),
            dict(count=len(arrays) + 1, non_finite=0, without_data=1))

  def test_non_finite_client_is_dropped(self):
    arrays = tu.client_arrays()
    x, y = arrays[0]
    poisoned = (x, np.full_like(y, np.nan))
    bad = tu.to_datasets([poisoned] + arrays[1:], 2)
    good = tu.to_datasets(arrays[1:], 2)
    for name, process in _all_processes().items():
      with self.subTest(name):
        a = process.next(process.initialize(), bad)
        b = process.next(process.initialize(), good)
        for u, v in zip(tu.trainable(process, a.state),
                        tu.trainable(process, b.state)):
          self.assertTrue(np.all(np.isfinite(u)))
          np.testing.assert_allclose(u, v, atol=1e-6)
        self.assertEqual(a.metrics['finalizer']['update_non_finite'], 0)
        self.assertEqual(a.metrics['client_work']['clients']['non_finite'], 1)

  def test_all_clients_non_finite_keeps_the_model(self):
    x, y = tu.client_arrays()[0]
    bad = tu.to_datasets([(x, np.full_like(y, np.inf))], 2)
    for name, process in _all_processes().items():
      with self.subTest(name):
        state = process.initialize()
        output = process.next(state, bad)
        # Skipped, because no client had a finite update to average.
        self.assertEqual(
            dict(output.metrics['finalizer']),
            dict(update_non_finite=1, aggregate_non_finite=1,
                 central_non_finite=0))
        self.assertEqual(output.metrics['client_work']['clients']['non_finite'],
                         1)
        for u, v in zip(tu.trainable(process, output.state),
                        tu.trainable(process, state)):
          np.testing.assert_array_equal(u, v)


if __name__ == '__main__':
  absltest.main()
