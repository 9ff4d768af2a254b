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
"""Finalizer: the new global model and the augmenting-gradient state.

The last component of a mixed FL round (arXiv:2205.13655, Algorithms 1-2),
a `tff.templates.MeasuredProcess` at the server after aggregation, `next:
(<F, inputs> -> <state=F, result=FinalizerResult, measurements>)`:

*   with `federated_select` and gradient transfer, the augmenting steps of
    the clients that did not hold a table row, added to the aggregated
    update (`RowCompletion`): the round is the broadcast one;
*   SERVEROPTIMIZER on the aggregated client update, giving x_f;
*   with central steps (Parallel Training, 2-way GT), the merge
    `Delta = w_f (x_f - x^(t)) + w_c (x_c - x^(t))` applied with
    MERGEOPTIMIZER (Algorithm 1, green steps);
*   2-way GT's federated gradient g~_f^(t+1), recovered from the update
    clients already upload (appendix A.2, eq. 10), kept in its state for
    the next round's central steps;
*   the non-finite guard: a non-finite aggregated update or model is
    rejected as TFF's FedAvg finalizer does, leaving the model and its
    state as they were and returning `accepted=False`, on which the
    composer keeps the central work's state too (metrics['finalizer']
    `update_non_finite`, where TFF's FedAvg puts it), and metrics say why:
    `aggregate_non_finite` if the clients' aggregated update was
    non-finite (e.g. a mean over no client with weight: an empty cohort, or
    every client dropped), `central_non_finite` if it was finite but the
    server-side step made the model non-finite (the central steps, e.g. on
    non-finite central data, the merge, or SERVEROPTIMIZER). Both are int32,
    and exactly one is 1 in a skipped round.

`initialize: ( -> OrderedDict(server_optimizer, merge_optimizer,
federated_gradient))` gives the state it owns.
"""

import collections
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_work as central_lib
from tff_mixed.core import model_types
from tff_mixed.core.model_types import add, scale


class Recovery(NamedTuple):
  """What eq. 10 needs to recover g~_f: CLIENTOPTIMIZER's SGD rate eta, K."""

  client_learning_rate: float
  client_steps: int


class RowCompletion(NamedTuple):
  """How the server completes the table rows a client did not hold.

  With `federated_select` a client receives only its rows of x^(t) and g~_c.
  Given the whole table, it would have moved each other row by
  `eta K w_c g~_c`: K plain SGD steps on `w_f g_i + w_c g~_c`, `g_i` being
  zero on rows its data does not use. Those steps do not depend on its data,
  so the server adds them, weighted by the share of the cohort's weight that
  did not hold the row (the scatter-back's `unheld_fraction`), and the round
  equals the broadcast round of Algorithm 1 (arXiv:2205.13655).

  Attributes:
    table_index: The embedding table's position in the trainable weights.
    num_rows: Its rows.
    client_learning_rate: CLIENTOPTIMIZER's SGD rate eta.
    client_steps: K.
  """

  table_index: int
  num_rows: int
  client_learning_rate: float
  client_steps: int


class FinalizerConfig(NamedTuple):
  """Static configuration of the finalizer.

  Attributes:
    federated_weight: w_f.
    central_weight: w_c.
    recovery: 2-way GT: recover g~_f for the next round's central steps.
    row_completion: Gradient transfer with `federated_select`: complete the
      rows each client did not hold (`RowCompletion`).
  """

  federated_weight: float
  central_weight: float
  recovery: Optional[Recovery] = None
  row_completion: Optional[RowCompletion] = None


class FinalizerResult(NamedTuple):
  """The `result` of the finalizer's `next`.

  Attributes:
    model_weights: x^(t+1), x^(t) when the round is not accepted.
    accepted: A bool scalar: whether the round's update was finite and
      applied. The composer keeps every other server state when it is not.
  """

  model_weights: Any
  accepted: Any


class Finalizer(NamedTuple):
  """The finalizer: a `tff.templates.MeasuredProcess` and its optimizers.

  `process.next: (<F, <weights, aggregated_update, augmenting_gradient,
  unheld_fraction, central_model>> -> <state=F, result=FinalizerResult,
  measurements=OrderedDict(update_non_finite, aggregate_non_finite,
  central_non_finite)>)`, where `F` is `OrderedDict(server_optimizer,
  merge_optimizer, federated_gradient)` (the old one when the round is not
  accepted), inputs absent in this configuration are `()`,
  `augmenting_gradient` is the g~_c this round's clients used and
  `central_model` the central work's x_c; the measurements are int32 each
  (see the module docstring).
  """

  process: tff.templates.MeasuredProcess
  server_optimizer: tff.learning.optimizers.Optimizer
  merge_optimizer: Optional[tff.learning.optimizers.Optimizer]
  needs_augmenting_gradient: bool
  needs_unheld_fraction: bool


def _merge(config, optimizer, state, x, x_f, x_c):
  """MERGEOPTIMIZER on `w_f (x_f - x) + w_c (x_c - x)`."""
  delta_f = tuple(a - b for a, b in zip(x_f, x))
  delta_c = tuple(a - b for a, b in zip(x_c, x))
  merged_delta = add(scale(config.federated_weight, delta_f),
                     scale(config.central_weight, delta_c))
  # MERGEOPTIMIZER takes the merged delta as a negative gradient.
  state, new_x = optimizer.next(state, x, tuple(-d for d in merged_delta))
  return state, tuple(new_x)


def _complete_rows(config, aggregated_update, augmenting_gradient,
                   unheld_fraction):
  """The mean update as if every client had held every table row.

  Adds, as gradient (TFF's update convention, x^(t) minus the client's
  model), `eta K w_c g~_c` times each row's unheld share (`RowCompletion`).
  """
  completion = config.row_completion
  i = completion.table_index
  table_update = aggregated_update[i]
  unheld = tf.reshape(unheld_fraction,
                      [-1] + [1] * (table_update.shape.rank - 1))
  steps = (completion.client_learning_rate * completion.client_steps *
           config.central_weight)
  completed = list(aggregated_update)
  completed[i] = table_update + steps * unheld * augmenting_gradient[i]
  return tuple(completed)


def _recover_federated_gradient(config, aggregated_update, central_gradient):
  """g~_f from the mean update (appendix A.2, eq. 10).

  With SGD on clients and K steps each, the mean per-step total gradient is
  aggregated_update / (eta K); removing the augmenting term w_c g~_c (the one
  the clients used) and the weight w_f leaves the mean client gradient, used
  as g~_f in the next round's central steps. With federated_select the
  update is first completed (`_complete_rows`), so every row holds
  `w_c g~_c` in full; what remains is the gradient of the cohort's
  federated loss, zero on rows nobody held.
  """
  recovery = config.recovery
  mean_total_gradient = scale(
      1.0 / (recovery.client_learning_rate * recovery.client_steps),
      aggregated_update)
  return scale(
      1.0 / config.federated_weight,
      tuple(t - config.central_weight * c
            for t, c in zip(mean_total_gradient, central_gradient)))


def _guard_metrics(aggregate_finite, accept):
  """metrics['finalizer']: whether the round was skipped, and why."""
  skipped = tf.logical_not(accept)
  return collections.OrderedDict(
      update_non_finite=tf.cast(skipped, tf.int32),
      # Why: the clients' aggregate (e.g. no client with weight), or the
      # server-side step from a finite one (the central steps, e.g. on
      # non-finite central data, the merge, SERVEROPTIMIZER).
      aggregate_non_finite=tf.cast(tf.logical_not(aggregate_finite),
                                   tf.int32),
      central_non_finite=tf.cast(aggregate_finite & skipped, tf.int32))


def _input_type(weights_type, central, config, needs_augmenting):
  """The `OrderedDict` type of `Finalizer.next`'s second parameter."""
  empty = tff.to_type(())
  trainable = weights_type.trainable
  return tff.to_type(collections.OrderedDict(
      weights=weights_type,
      aggregated_update=trainable,
      augmenting_gradient=trainable if needs_augmenting else empty,
      unheld_fraction=(
          tff.TensorType(np.float32, [config.row_completion.num_rows])
          if config.row_completion else empty),
      # x_c as the central work returns it (`()` without central steps).
      central_model=central.process.next.type_signature.result.result.model,
  ))


def build_finalizer(
    model: tff.learning.models.FunctionalModel,
    config: FinalizerConfig,
    central: central_lib.CentralWork,
    server_optimizer: tff.learning.optimizers.Optimizer,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer],
) -> Finalizer:
  """Builds the finalizer of a process whose central work is `central`."""
  weights_type = model_types.weights_type(model)
  specs = model_types.trainable_specs(model)
  has_steps = central.config.central_steps > 0
  needs_augmenting = (config.recovery is not None
                      or config.row_completion is not None)

  @tff.tensorflow.computation
  def initialize():
    return collections.OrderedDict(
        server_optimizer=server_optimizer.initialize(specs),
        merge_optimizer=(merge_optimizer.initialize(specs) if has_steps
                         else ()),
        federated_gradient=(model_types.zeros_of(specs)
                            if config.recovery is not None else ()))

  @tff.tensorflow.computation(
      initialize.type_signature.result,
      _input_type(weights_type, central, config, needs_augmenting))
  def next_computation(state, inputs):
    x = tuple(inputs['weights'].trainable)
    non_trainable = tuple(inputs['weights'].non_trainable)
    aggregated_update = tuple(inputs['aggregated_update'])
    # Judged before completion: a non-finite g~_c is the server's doing.
    aggregate_finite = model_types.all_finite(aggregated_update)
    if config.row_completion is not None:
      aggregated_update = _complete_rows(
          config, aggregated_update, tuple(inputs['augmenting_gradient']),
          inputs['unheld_fraction'])
    server_state, x_f = server_optimizer.next(state['server_optimizer'], x,
                                              aggregated_update)
    new_x, merge_state = tuple(x_f), state['merge_optimizer']
    if has_steps:
      merge_state, new_x = _merge(config, merge_optimizer, merge_state, x,
                                  new_x, tuple(inputs['central_model']))
    federated_gradient = state['federated_gradient']
    if config.recovery is not None:
      federated_gradient = _recover_federated_gradient(
          config, aggregated_update, tuple(inputs['augmenting_gradient']))
    accepted = aggregate_finite & model_types.all_finite(new_x)
    new_state = collections.OrderedDict(
        server_optimizer=server_state, merge_optimizer=merge_state,
        federated_gradient=federated_gradient)
    model_weights = tff.learning.models.ModelWeights(
        trainable=model_types.keep_if(accepted, new_x, x),
        non_trainable=non_trainable)
    return tff.templates.MeasuredProcessOutput(
        state=model_types.keep_if(accepted, new_state, state),
        result=FinalizerResult(model_weights, accepted),
        measurements=_guard_metrics(aggregate_finite, accepted))

  return Finalizer(
      tff.templates.MeasuredProcess(initialize, next_computation),
      server_optimizer, merge_optimizer if has_steps else None,
      needs_augmenting, config.row_completion is not None)
