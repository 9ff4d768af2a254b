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
"""Tests of the algorithm registry (`tff_mixed.algorithms.registry`).

Synchronous names: the process equals its builder's. Asynchronous names:
each runs 2 rounds of `run_async`, its merges seen by an observer; FedBuff
is checked against the (weighted) mean of its updates in numpy.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.algorithms import registry
from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import server_strategies
from tff_mixed.models import dense
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
    self.assertEqual(registry.SYNCHRONOUS_NAMES,
                     ('fedavg', 'parallel_training', 'one_way_gt',
                      'two_way_gt', 'example_transfer'))
    self.assertEqual(registry.ASYNCHRONOUS_NAMES,
                     ('fedasync', 'fedbuff', 'ca2fl', 'deadline_fedavg',
                      'center', 'fed_ft', 'hfcl', 'feddf', 'feddle'))
    self.assertEqual(registry.NAMES, registry.SYNCHRONOUS_NAMES
                     + registry.ASYNCHRONOUS_NAMES)
    for name in registry.NAMES:
      algorithm = registry.get(name)
      self.assertEqual(algorithm.name, name)
      self.assertNotEmpty(algorithm.label)
      self.assertTrue(callable(algorithm.builder))
      self.assertEqual(algorithm.asynchronous,
                       name in registry.ASYNCHRONOUS_NAMES)
    self.assertCountEqual(_DIRECT, registry.SYNCHRONOUS_NAMES)

  def test_unknown_name_lists_the_names(self):
    with self.assertRaisesRegex(ValueError, 'fedprox.*parallel_training'):
      registry.get('fedprox')
    with self.assertRaisesRegex(ValueError, 'one_way_gt'):
      registry.build('fedprox', tu.linear_model(), client_lr=0.1)

  def test_unknown_hyperparameter_raises(self):
    with self.assertRaisesRegex(TypeError, 'central_batchsize'):
      registry.build(registry.ONE_WAY_GT, tu.linear_model(), _objective(),
                     client_lr=0.1, central_batchsize=4)

  def test_mixed_algorithm_needs_a_central_objective(self):
    with self.assertRaisesRegex(ValueError, 'central_objective'):
      registry.build(registry.PARALLEL_TRAINING, tu.linear_model(),
                     client_lr=0.1, central_batch_size=4, client_steps=_K)

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

  @parameterized.parameters(*registry.SYNCHRONOUS_NAMES)
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


# The asynchronous side: 8 clients of 4 to 6 examples, 2 a round.
_CLIENTS = 8


def _client_arrays(client):
  return tu.async_client_arrays(client, seed=100, min_examples=4,
                                size_cycle=3)


def _dataset(client, round_num):
  del round_num  # The same data every round.
  return tf.data.Dataset.from_tensor_slices(_client_arrays(client)).batch(3)


def _async_model():
  return dense.build_linear_regression(tu.ASYNC_DIM)


def _central_data():
  """The central (the paper's server) data: client 0's arrays."""
  return _client_arrays(0)


# One call for every asynchronous algorithm: what one does not take is
# dropped, as for the synchronous ones.
_ASYNC_HYPERPARAMETERS = dict(
    client_lr=0.05, buffer_size=2, num_clients=_CLIENTS, central_steps=2,
    central_batch_size=2, client_examples=5.0, search_steps=2,
    search_lr=0.01, seed=1)


class AsyncRegistryTest(parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # One client training for every run: it depends on the model's
    # functions only.
    cls.training = client_training.build_client_training(_async_model(),
                                                         tu.sgd(0.05))

  @parameterized.parameters(*registry.ASYNCHRONOUS_NAMES)
  def test_runs_two_rounds_and_reports_each_merge(self, name):
    model = _async_model()
    strategy = registry.build(name, model, _central_data(),
                              **_ASYNC_HYPERPARAMETERS)
    self.assertIsInstance(strategy, tff_mixed.AsyncStrategy)
    merges, rounds = [], []
    result = tff_mixed.run_async(
        strategy, tff_mixed.AsyncSchedule(_CLIENTS, 2, 0.0, 2, seed=0),
        self.training, _dataset, model.initial_weights[0],
        evaluate_fn=lambda w: {}, eval_every=1,
        observer=tff_mixed.AsyncObserver(merges.append, rounds.append))
    initial = [np.asarray(w) for w in model.initial_weights[0]]
    self.assertGreater(max(np.abs(w - i).max() for w, i in zip(
        result.weights, initial)), 1e-4)
    self.assertEqual([r.round_num for r in rounds], [1, 2])
    self.assertEqual(sum(r.num_merges for r in rounds), len(merges))
    self.assertNotEmpty(merges)
    self.assertEqual([m.merge_index for m in merges],
                     list(range(len(merges))))
    # The merges chain: the first starts from the initial model, each from
    # where the one before ended, and the last ends at the run's result.
    for got, want in zip(merges[0].before, initial):
      np.testing.assert_array_equal(got, want)
    for earlier, later in zip(merges, merges[1:]):
      for a, b in zip(earlier.after, later.before):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    for got, want in zip(merges[-1].after, result.weights):
      np.testing.assert_array_equal(got, want)
    self.assertIn(merges[-1].round_num, (1, 2))
    # Center trains no client and merges once; the others merge updates.
    self.assertEqual(result.num_trained == 0, name == registry.CENTER)

  # The methods that run the model at the server, outside TFF: a Keras
  # model there takes the same steps as the FunctionalModel it equals.
  @parameterized.parameters(registry.FEDDLE, registry.FEDDF, registry.FED_FT,
                            registry.CENTER, registry.HFCL)
  def test_keras_model_runs_as_its_functional_twin(self, name):
    keras_model = tf.keras.Sequential([tf.keras.layers.Dense(
        1, input_shape=(tu.ASYNC_DIM,), kernel_initializer='zeros',
        bias_initializer='zeros')])
    keras_fm = tff_mixed.functional_model(
        keras_model, loss=tf.keras.losses.MeanSquaredError(),
        input_spec=_async_model().input_spec)
    results = []
    for model, training in (
        (_async_model(), self.training),
        (keras_fm, tff_mixed.build_async_client_training(
            keras_fm, tu.sgd(0.05)))):
      strategy = registry.build(name, model, _central_data(),
                                **_ASYNC_HYPERPARAMETERS)
      results.append(tff_mixed.run_async(
          strategy, tff_mixed.AsyncSchedule(_CLIENTS, 2, 0.0, 2, seed=0),
          training, _dataset, model.initial_weights[0],
          evaluate_fn=lambda w: {}, eval_every=2).weights)
    functional, keras = results
    self.assertGreater(np.abs(functional[0]).max(), 1e-4)  # It moved.
    for got, want in zip(keras, functional):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

  def test_fedbuff_merge_is_the_mean_of_the_updates(self):
    rng = np.random.default_rng(0)
    x = [rng.normal(size=[3, 1]), rng.normal(size=[1])]
    updates = [server_strategies.ClientUpdate(
        i, [rng.normal(size=[3, 1]), rng.normal(size=[1])], 0,
        num_examples=float(n)) for i, n in enumerate((1, 2, 5))]
    for weighting, weights in (('uniform', [1, 1, 1]),
                               ('num_examples', [1, 2, 5])):
      fedbuff = registry.build(registry.FEDBUFF, _async_model(),
                               buffer_size=3, weighting=weighting)
      state, got = fedbuff.apply(fedbuff.initial_state(), x, updates)
      for j, w in enumerate(x):
        want = w + np.average([u.delta[j] for u in updates], axis=0,
                              weights=weights)
        np.testing.assert_allclose(got[j], want, rtol=1e-12)
      self.assertEqual(state.num_updates, 1)

  def test_central_data_and_learning_rates(self):
    model, x = _async_model(), [np.asarray(w) for w in
                                _async_model().initial_weights[0]]

    def center(central, **hyperparameters):
      built = registry.build(registry.CENTER, model, central,
                             central_steps=2, central_batch_size=2,
                             **hyperparameters)
      return built.apply(built.initial_state(), x, [])[1]

    want = center(_central_data(), central_lr=0.1)
    # eta_c = eta, and the data as a CentralObjective or a dataset.
    for got in (center(_central_data(), client_lr=0.1),
                center(tff_mixed.central_data_objective(_central_data()),
                       central_lr=0.1),
                center(tf.data.Dataset.from_tensor_slices(_central_data()),
                       central_lr=0.1)):
      for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    with self.assertRaisesRegex(ValueError, 'central_lr'):
      center(_central_data())
    with self.assertRaisesRegex(ValueError, 'central_objective'):
      registry.build(registry.FEDDLE, model, buffer_size=2)
    with self.assertRaisesRegex(ValueError, 'server_lr'):
      registry.build(registry.FEDBUFF, model, buffer_size=2,
                     server_optimizer=tu.sgd(1.0))
    with self.assertRaisesRegex(TypeError, 'bufer_size'):
      registry.build(registry.FEDBUFF, model, bufer_size=2)
    with self.assertRaisesRegex(TypeError, 'buffer_size'):
      registry.build(registry.FEDBUFF, model)
    with self.assertRaisesRegex(ValueError, 'client_lr'):
      registry.build(registry.FEDAVG, tu.linear_model())


if __name__ == '__main__':
  absltest.main()
