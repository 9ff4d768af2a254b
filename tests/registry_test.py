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
"""Tests of the synchronous algorithms' registry (`tff_mixed.registry`).

Each name's process equals its builder's; the asynchronous names are not
here, and asking for one says where they are (`tff_mixed.async_registry`,
tested in async_registry_test.py).
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.algorithms import registry
from tff_mixed.asynchronous import registry as async_registry
from tests import testing_utils as tu

_K = 2
_SEED = 3


def _objective():
  return tff_mixed.central_data_objective(tu.central_arrays())


# How each algorithm was built before the registry (the experiments' switch:
# SGD everywhere, eta_c = eta, eta_s = eta_m = 1 given explicitly).
_DIRECT = {
    # With client_steps, the composed FedAvg (TFF's has no K exact steps).
    registry.FEDAVG: lambda: tff_mixed.build_fedavg(
        tu.linear_model(), tu.sgd(0.1), tu.sgd(1.0), client_steps=_K),
    registry.PARALLEL_TRAINING: lambda: tff_mixed.build_parallel_training(
        tu.linear_model(), _objective(), tu.sgd(0.1), tu.sgd(0.1),
        tu.sgd(1.0), tu.sgd(1.0), central_batch_size=4, client_steps=_K,
        seed=_SEED),
    registry.ONE_WAY_GT: lambda: tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(), _objective(), tu.sgd(0.1), tu.sgd(1.0),
        central_batch_size=4, client_steps=_K, seed=_SEED),
    registry.TWO_WAY_GT: lambda: tff_mixed.build_two_way_gradient_transfer(
        tu.linear_model(), _objective(), tu.sgd(0.1), tu.sgd(0.1),
        tu.sgd(1.0), tu.sgd(1.0), central_batch_size=4, client_steps=_K,
        seed=_SEED),
    registry.EXAMPLE_TRANSFER: lambda: tff_mixed.build_example_transfer(
        tu.linear_model(), _objective(), tu.sgd(0.1), tu.sgd(1.0),
        examples_per_client=3, client_batch_size=2, client_steps=_K,
        seed=_SEED),
}


def _registered(name):
  # One call for every algorithm: what an algorithm does not take is dropped.
  return registry.build(
      name, tu.linear_model(), _objective(), client_lr=0.1,
      central_batch_size=4, client_steps=_K, seed=_SEED,
      examples_per_client=3, client_batch_size=2)


class RegistryTest(parameterized.TestCase):

  def test_names(self):
    self.assertEqual(registry.NAMES,
                     ('fedavg', 'parallel_training', 'one_way_gt',
                      'two_way_gt', 'example_transfer'))
    for name in registry.NAMES:
      algorithm = registry.get(name)
      self.assertEqual(algorithm.name, name)
      self.assertNotEmpty(algorithm.label)
      self.assertTrue(callable(algorithm.builder))
    self.assertCountEqual(_DIRECT, registry.NAMES)
    # The public name is this module.
    self.assertIs(tff_mixed.registry, registry)

  def test_no_asynchronous_name(self):
    self.assertEmpty(set(registry.NAMES) & set(async_registry.NAMES))
    self.assertEmpty(set(registry.ALGORITHMS) & set(async_registry.NAMES))

  def test_unknown_name_lists_the_names(self):
    with self.assertRaisesRegex(ValueError, 'fedprox.*parallel_training'):
      registry.get('fedprox')
    with self.assertRaisesRegex(ValueError, 'one_way_gt'):
      registry.build('fedprox', tu.linear_model(), client_lr=0.1)

  @parameterized.parameters(*async_registry.NAMES)
  def test_asynchronous_name_points_to_its_registry(self, name):
    # One ValueError, before anything is built, naming the registry that
    # builds it (which does build it: async_registry_test.py).
    with self.assertRaisesRegex(
        ValueError, f'{name!r}.*`tff_mixed.asynchronous.registry`'):
      registry.build(name, tu.linear_model(), _objective(), client_lr=0.1,
                     buffer_size=2)
    self.assertIsNotNone(async_registry.get(name))

  def test_unknown_hyperparameter_raises(self):
    with self.assertRaisesRegex(TypeError, 'central_batchsize'):
      registry.build(registry.ONE_WAY_GT, tu.linear_model(), _objective(),
                     client_lr=0.1, central_batchsize=4)

  def test_mixed_algorithm_needs_a_central_objective(self):
    with self.assertRaisesRegex(ValueError, 'central_objective'):
      registry.build(registry.PARALLEL_TRAINING, tu.linear_model(),
                     client_lr=0.1, central_batch_size=4, client_steps=_K)

  def test_needs_client_lr(self):
    with self.assertRaisesRegex(ValueError, 'client_lr'):
      registry.build(registry.FEDAVG, tu.linear_model())

  def test_unweighted_aggregator_builds_unweighted_fed_avg(self):
    process = registry.build(
        registry.FEDAVG, tu.linear_model(), client_lr=0.1,
        model_aggregator=tff.aggregators.UnweightedMeanFactory())
    expected = tff.learning.algorithms.build_unweighted_fed_avg(
        tu.linear_model(), client_optimizer_fn=tu.sgd(0.1),
        server_optimizer_fn=tu.sgd(1.0),
        model_aggregator=tff.aggregators.UnweightedMeanFactory())
    self.assertEqual(str(process.next.type_signature),
                     str(expected.next.type_signature))

  def test_fedavg_takes_client_steps_as_the_mixed_algorithms_do(self):
    # Clients of 2, 3 and 1 batches, K = 3: each takes exactly 3 steps,
    # cycling its batches (the numpy oracle), as 1-way GT's clients do with
    # the central part switched off (w_c = 0). One pass would be 2, 3, 1.
    k, lr = 3, 0.1
    arrays = tu.client_arrays()
    data = tu.to_datasets(arrays, batch_size=2)
    fedavg = registry.build(registry.FEDAVG, tu.linear_model(), client_lr=lr,
                            client_steps=k)
    weights = tu.trainable(fedavg, fedavg.next(fedavg.initialize(),
                                               data).state)
    updates, examples = [], []
    for x, y in arrays:
      update, n, _ = tu.client_update(
          list(tu.initial_weights()), tu.batches(x, y, 2, k), lr)
      updates.append(update)
      examples.append(n)
    expected = [p - u for p, u in zip(
        tu.initial_weights(), tu.weighted_mean(updates, examples))]
    for w, e in zip(weights, expected):
      np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-6)
    one_way = registry.build(
        registry.ONE_WAY_GT, tu.linear_model(), _objective(), client_lr=lr,
        client_steps=k, central_batch_size=4, federated_weight=1.0,
        central_weight=0.0)
    for w, e in zip(weights, tu.trainable(
        one_way, one_way.next(one_way.initialize(), data).state)):
      np.testing.assert_allclose(w, e, rtol=1e-6, atol=1e-7)

  @parameterized.parameters(*registry.NAMES)
  def test_builds_what_the_builder_builds(self, name):
    process, expected = _registered(name), _DIRECT[name]()
    for function in ('initialize', 'next'):
      self.assertEqual(
          str(getattr(process, function).type_signature),
          str(getattr(expected, function).type_signature))
    state, expected_state = process.initialize(), expected.initialize()
    if hasattr(process, 'get_hparams'):
      self.assertEqual(str(process.get_hparams(state)),
                       str(expected.get_hparams(expected_state)))
    data = tu.to_datasets(tu.client_arrays(), batch_size=2)
    weights = tu.trainable(process, process.next(state, data).state)
    expected_weights = tu.trainable(
        expected, expected.next(expected_state, data).state)
    # The same numbers: one round from the same state on the same data.
    for w, e in zip(weights, expected_weights):
      self.assertEqual(w.tolist(), e.tolist())


if __name__ == '__main__':
  absltest.main()
