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
in its own module; an algorithm (`tff_mixed/algorithms/`) only chooses them:

```
  x^(t)@SERVER --[central_work.gradient_at_x: g~_c(x^(t)), 1-way GT]------+
      |          (2-way GT, Algorithm 1: g~_c^(t) from the state instead)  |
  distributor.distribute: broadcast / federated_select of <x^(t), [g~_c]>  |
      |          [+ each client's central examples, Example Transfer]      |
  federated_map(client_work) over {B*}@CLIENTS                             |
      |                                                                    |
  aggregator.aggregate(update, update_weight); metrics: sum_then_finalize  |
      |                                                                    |
  federated_map(central_work.next): K_c central steps, metrics['central'] <+
      |
  federated_map(finalizer.next): SERVEROPT, merge, g~_f, g~_c, guard
```

`next` holds only intrinsics; all math is in the components' TF
computations. Client-placed values reach the server only through the
aggregator, the metrics aggregator (the model's metrics and the clients'
counts, `client_work.client_counts`: the cohort size and how many clients
carried no update) and (opt-in diagnostics) two `federated_mean`s and a
`federated_sum` of the cohort size; with diagnostics off the clients upload
what FedAvg uploads and those three counts. DESIGN.md says why the
composition is written out here rather than
through TFF's `compose_learning_process` (g~_c is used by the distributor,
the central work and the finalizer of one round).
"""

import collections
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import aggregators as aggregators_lib
from tff_mixed.core import central_work as central_lib
from tff_mixed.core import client_work as client_work_lib
from tff_mixed.core import distributors as distributors_lib
from tff_mixed.core import finalizer as finalizer_lib
from tff_mixed.core import model_types


class MixedFLState(NamedTuple):
  """Server state of every mixed FL process.

  Fields an algorithm does not use hold `()`.

  Attributes:
    global_model_weights: The global model x^(t), a
      `tff.learning.models.ModelWeights`.
    round_num: The round t (int32); seeds the round's central sampling.
    aggregator: State of the model update aggregator.
    server_optimizer: State of SERVEROPTIMIZER.
    central_optimizer: State of CENTRALOPTIMIZER (Parallel Training, 2-way GT).
    merge_optimizer: State of MERGEOPTIMIZER (Parallel Training, 2-way GT).
    federated_gradient: 2-way GT's augmenting federated gradient g~_f,
      recovered from the previous round's aggregated update (zero at t=0).
    central_gradient: 2-way GT's augmenting central gradient g~_c as in
      Algorithm 1: the mean gradient of the previous round's K_c central
      steps (zero at t=0), which this round's clients use. `()` for the
      other algorithms and 2-way GT's 'fresh' option, where g~_c is
      computed at x^(t) each round.
  """

  global_model_weights: Any
  round_num: Any
  aggregator: Any
  server_optimizer: Any
  central_optimizer: Any
  merge_optimizer: Any
  federated_gradient: Any
  central_gradient: Any = ()


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
    parts = tff.federated_eval(components.finalizer.initialize, tff.SERVER)
    return tff.federated_zip(MixedFLState(
        global_model_weights=tff.federated_eval(initial_model_weights,
                                                tff.SERVER),
        round_num=parts.round_num,
        aggregator=components.aggregator.initialize(),
        server_optimizer=parts.server_optimizer,
        central_optimizer=tff.federated_eval(
            components.central_work.initialize, tff.SERVER),
        merge_optimizer=parts.merge_optimizer,
        federated_gradient=parts.federated_gradient,
        central_gradient=parts.central_gradient))

  return initialize


def _augmenting_gradient(components, state):
  """`(g~_c@SERVER or None, f_c(x^(t)) and g~_c@SERVER or ())`.

  The central work's augmenting gradient source
  (`central_work.GradientAtModel`, `PreviousRoundMean`, or one of its own)
  says where g~_c comes from; without one the clients get none.
  """
  central = components.central_work
  source = central.config.augmenting_gradient
  if source is None:
    return None, tff.federated_value((), tff.SERVER)
  return source.before_distribution(central, state)


def _finalize(components, state, augmenting, aggregated, central):
  """federated_map of the finalizer over this round's server values."""
  empty = tff.federated_value((), tff.SERVER)
  needs_augmenting = components.finalizer.needs_augmenting_gradient
  has_steps = components.central_work.config.central_steps > 0
  return tff.federated_map(components.finalizer.next, tff.federated_zip(
      collections.OrderedDict(
          weights=state.global_model_weights,
          round_num=state.round_num,
          server_state=state.server_optimizer,
          merge_state=state.merge_optimizer,
          federated_gradient=state.federated_gradient,
          augmenting_gradient=augmenting if needs_augmenting else empty,
          aggregated_update=aggregated.result,
          unheld_fraction=(
              aggregated.unheld_fraction
              if components.finalizer.needs_unheld_fraction else empty),
          central_state=state.central_optimizer,
          central_model=central.model if has_steps else empty,
          new_central_state=central.state,
          new_central_gradient=central.gradient)))


def _counts_aggregation(metrics_aggregator):
  """The aggregation of the clients' `client_work.client_counts`.

  They leave the clients as the model's metrics do: by the same metrics
  aggregator (so securely, with a secure one), each count a metric of its
  own, finalized as summed. They tell a user how many clients the round had
  and how many carried no update, rather than leaving it to a guess.
  """
  return metrics_aggregator(collections.OrderedDict(
      (name, tf.identity) for name in client_work_lib.CLIENT_COUNT_NAMES))


def _build_next(model, components, metrics_aggregation_fn,
                counts_aggregation_fn, state_type):
  """`(<MixedFLState@SERVER, {B*}@CLIENTS> -> <state, metrics>@SERVER)`."""
  central = components.central_work

  # The client work's last parameter, as traced: `{B*}` per client, or
  # whatever a client work of the fast simulation takes (a group's ids).
  parameter = components.client_work.type_signature.parameter
  data_type = parameter[len(parameter) - 1]

  @tff.federated_computation(state_type, tff.FederatedType(data_type,
                                                           tff.CLIENTS))
  def next_fn(state, client_data):
    augmenting, at_x = _augmenting_gradient(components, state)
    message = collections.OrderedDict(weights=state.global_model_weights)
    if augmenting is not None:
      message['augmenting_gradient'] = augmenting
    distribution = components.distributor.distribute(
        message, state.round_num, client_data)
    client_parameters = components.aggregator.client_parameters
    if client_parameters is not None:
      # The aggregator's per-client step (clipping, weighting) runs in the
      # client work, with what the server sends for it.
      distribution = distribution._replace(values=(
          *distribution.values,
          tff.federated_broadcast(client_parameters(state.aggregator))))
    client_outputs = tff.federated_map(
        components.client_work, (*distribution.values, client_data))
    aggregated = components.aggregator.aggregate(
        state.aggregator, client_outputs, distribution.keys)
    empty = tff.federated_value((), tff.SERVER)
    mean_probe_gradient = mean_probe_norm_squared = num_probe_clients = empty
    if central.config.with_diagnostics:
      # Opt-in diagnostics: extra client uploads beyond FedAvg's, each an
      # aggregate. Each output's probe values weigh the clients it stands
      # for (1 per client), whose sum is the cohort's S.
      weight = client_outputs.probe_weight
      mean_probe_gradient = tff.federated_mean(
          client_outputs.probe_gradient, weight)
      mean_probe_norm_squared = tff.federated_mean(
          client_outputs.probe_norm_squared, weight)
      num_probe_clients = tff.federated_sum(weight)
    central_output = tff.federated_map(central.next, tff.federated_zip(
        collections.OrderedDict(
            weights=state.global_model_weights, round_num=state.round_num,
            state=state.central_optimizer,
            federated_gradient=state.federated_gradient, gradient_at_x=at_x,
            mean_probe_gradient=mean_probe_gradient,
            mean_probe_norm_squared=mean_probe_norm_squared,
            num_probe_clients=num_probe_clients)))
    final = _finalize(components, state, augmenting, aggregated,
                      central_output)
    new_state = tff.federated_zip(MixedFLState(
        global_model_weights=final.model_weights, round_num=final.round_num,
        aggregator=aggregated.state, server_optimizer=final.server_optimizer,
        central_optimizer=final.central_optimizer,
        merge_optimizer=final.merge_optimizer,
        federated_gradient=final.federated_gradient,
        central_gradient=final.central_gradient))
    metrics = collections.OrderedDict(
        client_work=tff.federated_zip(collections.OrderedDict(
            train=metrics_aggregation_fn(client_outputs.metrics),
            clients=counts_aggregation_fn(client_outputs.clients))),
        aggregator=aggregated.measurements,
        central=central_output.metrics,
        finalizer=final.metrics)
    return tff.learning.templates.LearningProcessOutput(
        new_state, tff.federated_zip(metrics))

  return next_fn


def _optimizers(components):
  """The server-side optimizers with hparams, by state field, in order."""
  optimizers = collections.OrderedDict(
      server_optimizer=components.finalizer.server_optimizer)
  if components.central_work.optimizer is not None:
    optimizers['central_optimizer'] = components.central_work.optimizer
    optimizers['merge_optimizer'] = components.finalizer.merge_optimizer
  return optimizers


def _build_hparams(optimizers, state_member_type):
  """`get_hparams: (MixedFLState -> H)`, `set_hparams: (<MixedFLState, H> ->
  MixedFLState)` over the optimizers' hparams."""

  @tff.tensorflow.computation(state_member_type)
  def get_hparams(state):
    return collections.OrderedDict(
        (name, optimizer.get_hparams(getattr(state, name)))
        for name, optimizer in optimizers.items())

  @tff.tensorflow.computation(state_member_type,
                              get_hparams.type_signature.result)
  def set_hparams(state, hparams):
    return state._replace(**{
        name: optimizer.set_hparams(getattr(state, name), hparams[name])
        for name, optimizer in optimizers.items()})

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
  the round's first central batch]) (`central_work.py`),
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
