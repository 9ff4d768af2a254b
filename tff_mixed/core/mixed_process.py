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
"""The composer: a mixed FL `LearningProcess` from its components.

A round of every mixed FL algorithm (arXiv:2205.13655, Algorithms 1-2;
arXiv:2111.12150, Algorithms 2-4) is the same sequence of components, each
in its own module and each visited once; an algorithm
(`tff_mixed/algorithms/`) only chooses them:

```
  x^(t)@SERVER, state.central_work [, state.finalizer's g~_f]
      |
  federated_map(central_work.process.next): g~_c for the clients, K_c
      |          central steps from x^(t) (x_c), f_c(x^(t)); its new state
      |
  distributor.distribute: broadcast / federated_select of <x^(t), [g~_c]>
      |          [+ each client's central examples, Example Transfer]
  federated_map(client_work) over {B*}@CLIENTS
      |
  aggregator.aggregate(update, update_weight); metrics: sum_then_finalize
      |          [diagnostics: the probes' federated_means, federated_sum]
  federated_map(finalizer.process.next): SERVEROPT, merge with x_c, g~_f,
      |          the guard
      |
  [federated_map(round_estimates.build_cohort_diagnostics)]
  federated_map(advance): round t+1; the central work's new state kept
                          only if the finalizer accepted the round
```

The state has one slot per component (`MixedFLState`); each component
reads and returns its own slot. `next` holds only intrinsics; all math is
in the components' TF computations. Client-placed values reach the server
only through the aggregator, the metrics aggregator (the model's metrics
and the clients' counts, `client_work.client_counts`: the cohort size and
how many clients carried no update) and (opt-in diagnostics) two
`federated_mean`s and a `federated_sum` of the cohort size; with
diagnostics off the clients upload what FedAvg uploads and those three
counts. DESIGN.md says why the composition is written out here rather than
through TFF's `compose_learning_process` (the central work's g~_c and x_c
go to the distributor and the finalizer of one round).
"""

import collections
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import aggregators as aggregators_lib
from tff_mixed.core import central_work as central_lib
from tff_mixed.core import client_work as client_work_lib
from tff_mixed.core import distributors as distributors_lib
from tff_mixed.core import finalizer as finalizer_lib
from tff_mixed.core import model_types
from tff_mixed.core import round_estimates


class MixedFLState(NamedTuple):
  """Server state of every mixed FL process: one slot per component.

  As `tff.learning.templates.LearningAlgorithmState`, with the round number
  (it seeds the round's central batches and client draws) and a slot for
  the central work. A component without state holds `()`.

  Attributes:
    global_model_weights: The global model x^(t), a
      `tff.learning.models.ModelWeights`.
    round_num: The round t (int32).
    distributor: The distributor's state, `()`.
    client_work: The client work's state, `()`.
    aggregator: State of the model update aggregator.
    central_work: `OrderedDict(central_optimizer, central_gradient)`:
      CENTRALOPTIMIZER's state (Parallel Training, 2-way GT) and 2-way GT's
      augmenting central gradient g~_c as in Algorithm 1, the mean gradient
      of the previous round's K_c central steps (zero at t=0); `()` where
      unused (`central_work.py`).
    finalizer: `OrderedDict(server_optimizer, merge_optimizer,
      federated_gradient)`: SERVEROPTIMIZER's and MERGEOPTIMIZER's states,
      and 2-way GT's augmenting federated gradient g~_f recovered from the
      previous round's aggregated update (zero at t=0); `()` where unused
      (`finalizer.py`).
  """

  global_model_weights: Any
  round_num: Any
  distributor: Any
  client_work: Any
  aggregator: Any
  central_work: Any
  finalizer: Any


class Components(NamedTuple):
  """The components of a mixed FL process, as an algorithm chooses them.

  Attributes:
    distributor: A `distributors.Distributor`.
    client_work: The client work computation
      (`client_work.build_client_work`).
    aggregator: An `aggregators.Aggregator`.
    central_work: A `central_work.CentralWork`.
    finalizer: A `finalizer.Finalizer`.
  """

  distributor: distributors_lib.Distributor
  client_work: tff.Computation
  aggregator: aggregators_lib.Aggregator
  central_work: central_lib.CentralWork
  finalizer: finalizer_lib.Finalizer


def _build_initialize(model, components, initial_trainable_fn):
  """`( -> MixedFLState@SERVER)`."""

  @tff.tensorflow.computation
  def initial_model_weights():
    trainable = tuple(tf.constant(w) for w in model.initial_weights[0])
    non_trainable = tuple(tf.constant(w) for w in model.initial_weights[1])
    if initial_trainable_fn is not None:
      trainable = tuple(initial_trainable_fn(trainable, non_trainable))
    return tff.learning.models.ModelWeights(trainable, non_trainable)

  @tff.federated_computation
  def initialize():
    empty = tff.federated_value((), tff.SERVER)
    return tff.federated_zip(MixedFLState(
        global_model_weights=tff.federated_eval(initial_model_weights,
                                                tff.SERVER),
        round_num=tff.federated_value(np.int32(0), tff.SERVER),
        distributor=empty,
        client_work=empty,
        aggregator=components.aggregator.initialize(),
        central_work=tff.federated_eval(
            components.central_work.process.initialize, tff.SERVER),
        finalizer=tff.federated_eval(
            components.finalizer.process.initialize, tff.SERVER)))

  return initialize


def _build_advance(central_state_type):
  """`(<accepted, round_num, new, old> -> <round_num + 1, central state>)`.

  The end of a round: the next round's number, and the central work's new
  state where the finalizer accepted the round (its old one where the
  round was rejected as non-finite, as the finalizer keeps its own).
  """

  @tff.tensorflow.computation(tff.TensorType(np.bool_),
                              tff.TensorType(np.int32), central_state_type,
                              central_state_type)
  def advance(accepted, round_num, new_state, old_state):
    return collections.OrderedDict(
        round_num=round_num + 1,
        central_work=model_types.keep_if(accepted, new_state, old_state))

  return advance


def _counts_aggregation(metrics_aggregator):
  """The aggregation of the clients' `client_work.client_counts`.

  They leave the clients as the model's metrics do: by the same metrics
  aggregator (so securely, with a secure one), each count a metric of its
  own, finalized as summed. They tell a user how many clients the round had
  and how many carried no update, rather than leaving it to a guess.
  """
  return metrics_aggregator(collections.OrderedDict(
      (name, tf.identity) for name in client_work_lib.CLIENT_COUNT_NAMES))


def _build_diagnostics(central):
  """`round_estimates.build_cohort_diagnostics` for `central`, or `None`."""
  config = central.config
  if not config.with_diagnostics:
    return None
  central_output = central.process.next.type_signature.result
  return round_estimates.build_cohort_diagnostics(
      central_output.result.gradient_at_model, central_output.measurements,
      config.federated_weight, config.central_weight)


def _central_metrics(diagnostics, central_output, client_outputs):
  """metrics['central']: the central work's, completed with the cohort's
  diagnostics when on.

  Opt-in diagnostics are extra client uploads beyond FedAvg's, each an
  aggregate. Each output's probe values weigh the clients it stands for (1
  per client), whose sum is the cohort's S.
  """
  if diagnostics is None:
    return central_output.measurements
  weight = client_outputs.probe_weight
  return tff.federated_map(diagnostics, tff.federated_zip(
      collections.OrderedDict(
          gradient_at_model=central_output.result.gradient_at_model,
          central_metrics=central_output.measurements,
          mean_probe_gradient=tff.federated_mean(
              client_outputs.probe_gradient, weight),
          mean_probe_norm_squared=tff.federated_mean(
              client_outputs.probe_norm_squared, weight),
          num_probe_clients=tff.federated_sum(weight))))


def _distribute(components, state, central_output, client_data):
  """The distributor's values for the client work, with what the
  aggregator's per-client step needs."""
  message = collections.OrderedDict(weights=state.global_model_weights)
  if components.central_work.config.augmenting_gradient is not None:
    message['augmenting_gradient'] = central_output.result.augmenting_gradient
  distribution = components.distributor.distribute(
      message, state.round_num, client_data)
  client_parameters = components.aggregator.client_parameters
  if client_parameters is not None:
    # The aggregator's per-client step (clipping, weighting) runs in the
    # client work, with what the server sends for it.
    distribution = distribution._replace(values=(
        *distribution.values,
        tff.federated_broadcast(client_parameters(state.aggregator))))
  return distribution


def _build_next(model, components, metrics_aggregation_fn,
                counts_aggregation_fn, state_type):
  """`(<MixedFLState@SERVER, {B*}@CLIENTS> -> <state, metrics>@SERVER)`."""
  central, finalizer = components.central_work, components.finalizer
  advance = _build_advance(central.process.initialize.type_signature.result)
  diagnostics = _build_diagnostics(central)
  reads_federated_gradient = central.config.step_rule.uses_federated_gradient

  # The client work's last parameter, as traced: `{B*}` per client, or
  # whatever a client work of the fast simulation takes (a group's ids).
  parameter = components.client_work.type_signature.parameter
  data_type = parameter[len(parameter) - 1]

  @tff.federated_computation(state_type, tff.FederatedType(data_type,
                                                           tff.CLIENTS))
  def next_fn(state, client_data):
    empty = tff.federated_value((), tff.SERVER)
    # g~_f is recovered by the finalizer from the update it applies, and
    # kept in its slot for the next round's central steps.
    central_output = tff.federated_map(central.process.next, (
        state.central_work,
        tff.federated_zip(collections.OrderedDict(
            weights=state.global_model_weights, round_num=state.round_num,
            federated_gradient=(state.finalizer.federated_gradient
                                if reads_federated_gradient else empty)))))
    distribution = _distribute(components, state, central_output,
                               client_data)
    client_outputs = tff.federated_map(
        components.client_work, (*distribution.values, client_data))
    aggregated = components.aggregator.aggregate(
        state.aggregator, client_outputs, distribution.keys)
    final = tff.federated_map(finalizer.process.next, (
        state.finalizer,
        tff.federated_zip(collections.OrderedDict(
            weights=state.global_model_weights,
            aggregated_update=aggregated.result,
            augmenting_gradient=(central_output.result.augmenting_gradient
                                 if finalizer.needs_augmenting_gradient
                                 else empty),
            unheld_fraction=(aggregated.unheld_fraction
                             if finalizer.needs_unheld_fraction else empty),
            central_model=central_output.result.model))))
    advanced = tff.federated_map(advance, (
        final.result.accepted, state.round_num, central_output.state,
        state.central_work))
    new_state = tff.federated_zip(MixedFLState(
        global_model_weights=final.result.model_weights,
        round_num=advanced.round_num, distributor=state.distributor,
        client_work=state.client_work, aggregator=aggregated.state,
        central_work=advanced.central_work, finalizer=final.state))
    metrics = collections.OrderedDict(
        client_work=tff.federated_zip(collections.OrderedDict(
            train=metrics_aggregation_fn(client_outputs.metrics),
            clients=counts_aggregation_fn(client_outputs.clients))),
        aggregator=aggregated.measurements,
        central=_central_metrics(diagnostics, central_output,
                                 client_outputs),
        finalizer=final.measurements)
    return tff.learning.templates.LearningProcessOutput(
        new_state, tff.federated_zip(metrics))

  return next_fn


# The server-side optimizers with hparams: their names in `get_hparams`, and
# the state slot and key that hold each one's state.
_OPTIMIZER_SLOTS = collections.OrderedDict(
    server_optimizer='finalizer', central_optimizer='central_work',
    merge_optimizer='finalizer')


def _optimizers(components):
  """The server-side optimizers with hparams, by name, in order."""
  optimizers = collections.OrderedDict(
      server_optimizer=components.finalizer.server_optimizer)
  if components.central_work.optimizer is not None:
    optimizers['central_optimizer'] = components.central_work.optimizer
    optimizers['merge_optimizer'] = components.finalizer.merge_optimizer
  return optimizers


def _build_hparams(optimizers, state_member_type):
  """`get_hparams: (MixedFLState -> H)`, `set_hparams: (<MixedFLState, H> ->
  MixedFLState)` over the optimizers' hparams."""

  def slot(state, name):
    return getattr(state, _OPTIMIZER_SLOTS[name])

  @tff.tensorflow.computation(state_member_type)
  def get_hparams(state):
    return collections.OrderedDict(
        (name, optimizer.get_hparams(slot(state, name)[name]))
        for name, optimizer in optimizers.items())

  @tff.tensorflow.computation(state_member_type,
                              get_hparams.type_signature.result)
  def set_hparams(state, hparams):
    slots = {name: collections.OrderedDict(getattr(state, name))
             for name in set(_OPTIMIZER_SLOTS.values())}
    for name, optimizer in optimizers.items():
      parts = slots[_OPTIMIZER_SLOTS[name]]
      parts[name] = optimizer.set_hparams(parts[name], hparams[name])
    return state._replace(**slots)

  return get_hparams, set_hparams


def build_mixed_process(
    model: tff.learning.models.FunctionalModel,
    components: Components,
    *,
    metrics_aggregator: Optional[Callable[..., tff.Computation]] = None,
    initial_trainable_fn: Optional[Callable[..., Any]] = None,
) -> tff.learning.templates.LearningProcess:
  """Composes a mixed FL `tff.learning.templates.LearningProcess`.

  Arguments are validated by the public builders in `tff_mixed.algorithms`.
  The returned process has:

  *   `initialize: ( -> MixedFLState@SERVER)`
  *   `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
      <state=MixedFLState@SERVER, metrics=M@SERVER>)`, where `{B*}` is the
      client work's last parameter (with the fast simulation's group work,
      `tff_mixed.simulation`, each CLIENTS member is a group's client ids)
  *   `get_model_weights: (MixedFLState -> ModelWeights)`
  *   `set_model_weights: (<MixedFLState, ModelWeights> -> MixedFLState)`
  *   `get_hparams: (MixedFLState -> H)`, `set_hparams: (<MixedFLState, H> ->
      MixedFLState)` for the server-side optimizers.

  `M` is `OrderedDict(client_work=OrderedDict(train=<model metrics>,
  clients=OrderedDict(count=int32, non_finite=int32, without_data=int32)),
  aggregator=<aggregator measurements>, central=OrderedDict([bgd_G2,
  bgd_B2, sigma2, sigma_c2, beta, mixed_grad_norm2,] [loss=f_c(x^(t)) on
  the round's first central batch]) (`central_work.py`,
  `round_estimates.build_cohort_diagnostics`),
  finalizer=OrderedDict(update_non_finite=int32, aggregate_non_finite=int32,
  central_non_finite=int32))`, so training metrics sit where
  `tff.learning.algorithms.build_weighted_fed_avg` puts them. `clients`
  counts the round's clients, those whose update was dropped as non-finite
  (weight 0, metrics reset) and those that trained on no examples (weight
  0), summed over the cohort; `update_non_finite` is 1 when the round was
  skipped (model and states kept), `aggregate_non_finite` and
  `central_non_finite` say why (`finalizer.py`).

  Args:
    model: The `tff.learning.models.FunctionalModel` being trained.
    components: The process's `Components`.
    metrics_aggregator: As in `tff.learning.algorithms.build_weighted_fed_avg`;
      `None` means `tff.learning.metrics.sum_then_finalize`.
    initial_trainable_fn: Optional `tf.function` mapping the initial
      `(trainable, non_trainable)` to new trainable weights (warm-up).
  """
  initialize = _build_initialize(model, components, initial_trainable_fn)
  state_type = initialize.type_signature.result
  metrics_aggregator = (metrics_aggregator
                        or tff.learning.metrics.sum_then_finalize)
  next_fn = _build_next(model, components,
                        metrics_aggregator(model.finalize_metrics),
                        _counts_aggregation(metrics_aggregator), state_type)

  @tff.tensorflow.computation(state_type.member)
  def get_model_weights(state):
    return state.global_model_weights

  @tff.tensorflow.computation(state_type.member,
                              model_types.weights_type(model))
  def set_model_weights(state, weights):
    return state._replace(global_model_weights=weights)

  get_hparams, set_hparams = _build_hparams(_optimizers(components),
                                            state_type.member)
  return tff.learning.templates.LearningProcess(
      initialize, next_fn, get_model_weights, set_model_weights,
      get_hparams_fn=get_hparams, set_hparams_fn=set_hparams)
