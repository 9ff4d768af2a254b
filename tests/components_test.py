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
"""The core components compose into processes, and have their documented types.

A new algorithm is a new choice of components (arXiv:2205.13655,
Algorithms 1-2 share the central work -> distributor -> client work ->
aggregator -> finalizer shape): composed from the broadcast distributor,
plain client work, the mean aggregator, central work without steps and a
finalizer with SERVEROPTIMIZER alone, a process is FedAvg, checked against
TFF's `build_weighted_fed_avg`. Each component is also checked alone, against
numpy where it computes.
"""

import collections
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

from tests import testing_utils as tu
from tff_mixed.core import aggregators
from tff_mixed.core import central_objective
from tff_mixed.core import central_work
from tff_mixed.core import client_work
from tff_mixed.core import distributors
from tff_mixed.core import finalizer
from tff_mixed.core import mixed_process
from tff_mixed.core import model_types


def _fed_avg_components(model, client_lr, server_lr):
  distributor = distributors.build_broadcast_distributor(model, False)
  central = central_work.build_central_work(
      model, None, None, central_work.CentralConfig(
          central_steps=0, batch_size=1, seed=0, clip_norm=None,
          federated_weight=1.0, central_weight=0.0))
  return mixed_process.Components(
      distributor=distributor,
      client_work=client_work.build_client_work(
          model, distributor, client_work.ClientWorkConfig(
              weighting=tff.learning.ClientWeighting.NUM_EXAMPLES,
              num_steps=None), tu.sgd(client_lr)),
      aggregator=aggregators.build_mean_aggregator(
          tff.aggregators.MeanFactory(),
          model_types.weights_type(model).trainable),
      central_work=central,
      finalizer=finalizer.build_finalizer(
          model, finalizer.FinalizerConfig(1.0, 0.0), central,
          tu.sgd(server_lr), None))


class ComponentsTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model = tu.linear_model()
    cls.components = _fed_avg_components(cls.model, 0.1, 0.7)

  def test_composed_fed_avg_equals_tff_fed_avg(self):
    composed = mixed_process.build_mixed_process(self.model, self.components)
    reference = tff.learning.algorithms.build_weighted_fed_avg(
        self.model, client_optimizer_fn=tu.sgd(0.1),
        server_optimizer_fn=tu.sgd(0.7))
    data = tu.to_datasets(tu.client_arrays(), batch_size=2)
    state, reference_state = composed.initialize(), reference.initialize()
    for _ in range(2):
      output = composed.next(state, data)
      reference_output = reference.next(reference_state, data)
      state, reference_state = output.state, reference_output.state
    for a, b in zip(tu.trainable(composed, state),
                    reference.get_model_weights(reference_state).trainable):
      np.testing.assert_allclose(a, b, rtol=1e-6)
    self.assertAlmostEqual(
        output.metrics['client_work']['train']['loss'],
        reference_output.metrics['client_work']['train']['loss'], places=6)
    self.assertEqual(dict(output.metrics['central']), {})
    self.assertEqual(int(state.round_num), 2)

  def test_client_work_takes_what_the_distributor_sends(self):
    signature = self.components.client_work.type_signature
    message, data = signature.parameter
    self.assertEqual(
        message, distributors.message_type(
            model_types.weights_type(self.model), with_gradient=False))
    self.assertEqual(data, model_types.data_type(self.model))
    self.assertEqual(
        list(signature.result.python_container._fields),
        ['update', 'update_weight', 'metrics', 'probe_gradient',
         'probe_norm_squared', 'clients', 'probe_weight'])
    # Without diagnostics, no probe values and no weight for them.
    self.assertEmpty(signature.result.probe_weight)
    self.assertEqual(
        str(signature.result.clients),
        '<count=int32,non_finite=int32,without_data=int32>')

  def test_server_components_own_one_state_slot_each(self):
    central = self.components.central_work
    final = self.components.finalizer
    self.assertEqual(
        tff.structure.name_list(final.process.initialize.type_signature.result),
        ['server_optimizer', 'merge_optimizer', 'federated_gradient'])
    self.assertEqual(
        tff.structure.name_list(
            central.process.initialize.type_signature.result),
        ['central_optimizer', 'central_gradient'])
    # Each is a measured process: it takes its own slot and returns its new
    # one, a result and measurements.
    for component, result in ((central, central_work.CentralResult),
                              (final, finalizer.FinalizerResult)):
      self.assertIsInstance(component.process, tff.templates.MeasuredProcess)
      signature = component.process.next.type_signature
      self.assertEqual(signature.parameter[0],
                       component.process.initialize.type_signature.result)
      self.assertEqual(signature.result.state,
                       component.process.initialize.type_signature.result)
      self.assertEqual(tff.structure.name_list(signature.result),
                       ['state', 'result', 'measurements'])
      self.assertEqual(tff.structure.name_list(signature.result.result),
                       list(result._fields))
    process = mixed_process.build_mixed_process(self.model, self.components)
    state_type = process.initialize.type_signature.result.member
    self.assertEqual(tff.structure.name_list(state_type),
                     list(mixed_process.MixedFLState._fields))
    self.assertEqual(state_type.central_work,
                     central.process.initialize.type_signature.result)
    self.assertEqual(state_type.finalizer,
                     final.process.initialize.type_signature.result)

  def _central_work(self, augmenting_gradient, step_rule, steps):
    central = tu.central_arrays()
    work = central_work.build_central_work(
        self.model, central_objective.central_data_objective(central),
        tu.sgd(0.1),
        central_work.CentralConfig(
            central_steps=steps, batch_size=tu.CENTRAL_EXAMPLES, seed=0,
            clip_norm=None, federated_weight=0.6, central_weight=0.4,
            step_rule=step_rule, augmenting_gradient=augmenting_gradient))
    return work, central

  def test_central_work_alone_against_numpy(self):
    # Alone, from x^(t) and its own state: two full-batch SGD steps on
    # `w_c g_c + w_f g~_f` (2-way GT's purple steps), g~_c as each rule
    # gives it, and the carried mean for the next round.
    x = [w.copy() for w in tu.initial_weights()]
    g_f = [np.full_like(w, 0.5) for w in x]
    carried = [np.full_like(w, -3.0) for w in x]
    rule = central_work.MixedCentralSteps(0.4, 0.6)
    for source in (central_work.GradientAtModel(),
                   central_work.PreviousRoundMean()):
      with self.subTest(type(source).__name__):
        work, (cx, cy) = self._central_work(source, rule, steps=2)
        state = work.process.initialize()
        if source.carried_in_state:
          state['central_gradient'] = tuple(carried)
        output = work.process.next(state, collections.OrderedDict(
            weights=tff.learning.models.ModelWeights(tuple(x), ()),
            round_num=np.int32(3), federated_gradient=tuple(g_f)))
        want_x, gradients = x, []
        for _ in range(2):
          g_c = tu.mse_gradient(want_x, cx, cy)
          gradients.append(g_c)
          want_x = [p - 0.1 * (0.4 * g + 0.6 * f)
                    for p, g, f in zip(want_x, g_c, g_f)]
        want_augmenting = (gradients[0] if source.evaluated_at_model
                           else carried)
        for got, want in ((output.result.model, want_x),
                          (output.result.augmenting_gradient,
                           want_augmenting)):
          for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        want_carried = ([(a + b) / 2 for a, b in zip(*gradients)]
                        if source.carried_in_state else [])
        got_carried = output.state['central_gradient']
        self.assertLen(got_carried, len(want_carried))
        for a, b in zip(got_carried, want_carried):
          np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        self.assertAlmostEqual(
            float(output.measurements['loss']),
            tu.mse_loss(x, [(cx, cy)])['loss'], places=5)

  def test_client_work_alone_against_numpy(self):
    # One client's K SGD steps from the received model, alone: the update
    # x^(t) - x_i, its weight (examples) and its loss metric.
    x, y = tu.client_arrays()[1]
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    weights = tff.learning.models.ModelWeights(
        tuple(tu.initial_weights()), ())
    output = self.components.client_work(
        collections.OrderedDict(weights=weights), dataset)
    update, examples, _ = tu.client_update(
        list(tu.initial_weights()), tu.batches(x, y, 4), 0.1)
    for got, want in zip(output.update, update):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    self.assertEqual(float(output.update_weight), examples)
    self.assertEqual(int(output.clients['count']), 1)

  def test_distributor_and_aggregator_alone(self):
    # The broadcast distributor gives every client the server's message;
    # the mean aggregator returns the updates' weighted mean.
    distributor = self.components.distributor
    aggregator = self.components.aggregator
    weights_type = model_types.weights_type(self.model)
    trainable = weights_type.trainable

    @tff.federated_computation(
        tff.FederatedType(weights_type, tff.SERVER),
        tff.FederatedType(tff.TensorType(np.int32), tff.SERVER),
        tff.FederatedType(model_types.data_type(self.model), tff.CLIENTS))
    def distribute(weights, round_num, data):
      distribution = distributor.distribute(
          collections.OrderedDict(weights=weights), round_num, data)
      (message,) = distribution.values
      return message

    # One value for every client: a broadcast.
    self.assertTrue(distribute.type_signature.result.all_equal)
    data = tu.to_datasets(tu.client_arrays(), batch_size=2)
    x = tuple(tu.initial_weights())
    message = distribute(tff.learning.models.ModelWeights(x, ()),
                         np.int32(0), data)
    for got, want in zip(message['weights'].trainable, x):
      np.testing.assert_array_equal(got, want)

    class Outputs(NamedTuple):
      update: Any
      update_weight: Any

    @tff.federated_computation(
        tff.FederatedType(trainable, tff.CLIENTS),
        tff.FederatedType(tff.TensorType(np.float32), tff.CLIENTS))
    def aggregate(updates, update_weights):
      output = aggregator.aggregate(aggregator.initialize(),
                                    Outputs(updates, update_weights), None)
      return output.result

    rng = np.random.default_rng(3)
    updates = [tuple(rng.normal(size=w.shape).astype(np.float32) for w in x)
               for _ in range(3)]
    update_weights = [1.0, 3.0, 0.5]
    want = tu.weighted_mean([list(u) for u in updates], update_weights)
    for got, w in zip(aggregate(updates, update_weights), want):
      np.testing.assert_allclose(got, w, rtol=1e-5)

  def test_gradient_transfer_broadcasts_g_c_with_the_model(self):
    with_gradient = distributors.build_broadcast_distributor(self.model, True)
    (message,) = with_gradient.client_types
    self.assertEqual(tff.structure.name_list(message),
                     ['weights', 'augmenting_gradient'])
    self.assertEqual(message.augmenting_gradient,
                     model_types.weights_type(self.model).trainable)

  def _row_completion_finalizer(self, lr, steps, w_f, w_c):
    central = central_work.build_central_work(
        self.model, None, None, central_work.CentralConfig(
            central_steps=0, batch_size=1, seed=0, clip_norm=None,
            federated_weight=w_f, central_weight=w_c))
    # The linear model's kernel, [2, 1], stands for a two-row table.
    return finalizer.build_finalizer(
        self.model, finalizer.FinalizerConfig(
            w_f, w_c, row_completion=finalizer.RowCompletion(
                table_index=0, num_rows=2, client_learning_rate=lr,
                client_steps=steps)),
        central, tu.sgd(1.0), None)

  def test_finalizer_completes_the_rows_clients_did_not_hold(self):
    # federated_select: a client applied w_c g~_c only to the rows it held;
    # the finalizer adds eta K w_c g~_c times each row's unheld share
    # before SERVEROPTIMIZER (SGD at 1: the model moves by the update).
    lr, steps, w_f, w_c = 0.1, 3, 0.6, 0.4
    final = self._row_completion_finalizer(lr, steps, w_f, w_c)
    self.assertTrue(final.needs_augmenting_gradient)
    self.assertTrue(final.needs_unheld_fraction)
    x = tuple(np.asarray(w) for w in self.model.initial_weights[0])
    update = (np.array([[0.5], [0.0]], np.float32),
              np.array([0.2], np.float32))
    g_c = (np.array([[1.0], [-2.0]], np.float32),
           np.array([3.0], np.float32))
    parts = final.process.initialize()

    def finalize(unheld):
      return final.process.next(parts, collections.OrderedDict(
          weights=tff.learning.models.ModelWeights(trainable=x,
                                                   non_trainable=()),
          aggregated_update=update, augmenting_gradient=g_c,
          unheld_fraction=np.asarray(unheld, np.float32),
          central_model=()))

    unheld = np.array([0.25, 1.0], np.float32)
    output = finalize(unheld)
    table, bias = (np.asarray(w)
                   for w in output.result.model_weights.trainable)
    np.testing.assert_allclose(
        table, x[0] - (update[0] + lr * steps * w_c * unheld[:, None] *
                       g_c[0]), rtol=1e-6)
    # Only the table's rows: every client trained the other weights.
    np.testing.assert_allclose(bias, x[1] - update[1], rtol=1e-6)
    # Every row held (or no client of weight: the scatter-back's 0): the
    # update alone.
    output = finalize([0.0, 0.0])
    for got, want, u in zip(output.result.model_weights.trainable, x,
                            update):
      np.testing.assert_allclose(got, want - u, rtol=1e-6)


if __name__ == '__main__':
  absltest.main()
