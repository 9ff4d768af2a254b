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
"""TFF wiring shared by every mixed FL algorithm.

This module only moves data between placements with intrinsics; all math is in
`client_update.py` and `server_update.py`, wrapped here in
`tff.tensorflow.computation`s whose types are derived from traced
computations. Each round (arXiv:2205.13655, Algorithms 1-2):

```
  x^(t)@SERVER --(optional: g~_c = grad f_c(x^(t)), federated_map)---------+
      |           (2-way GT, Algorithm 1: g~_c^(t) from the state instead)  |
  federated_broadcast(<x^(t), [g~_c]>)                                      |
      |      [Example Transfer: each client's own central examples,         |
      |       federated_select(keys drawn on the client, central set)]      |
  federated_map(client_update) over {D*}@CLIENTS                            |
      |                                                                     |
  aggregator.next(update, update_weight)   metrics: sum_then_finalize       |
      |                                                                     |
  federated_map(server_update) at SERVER: SERVEROPT, central steps, merge <-+
```

Client-placed values reach the server only through the model aggregator, the
metrics aggregator and (opt-in diagnostics) one `federated_mean`; with
diagnostics off the clients upload exactly what FedAvg uploads.

With an `EmbeddingSelection` (the movie task), the embedding table is not
broadcast: each client's keys select its rows (and its rows of g~_c) with
`federated_select`, and its row updates come back through a scatter-back
`federated_aggregate` (`embedding_select.py`), together with each row's
share of the cohort's weight, which 2-way GT's recovery of g~_f needs
(clients apply g~_c only to the rows they hold).

Example Transfer and FedAvg with shared data send each client its own central
examples the same way: the client draws their indices (seeded by a
fingerprint of its data, the seed and the round) and `federated_select`
delivers just those examples (`transfer_select.py`).
"""

import collections
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import client_update as client_update_lib
from tff_mixed.core import embedding_select as select_lib
from tff_mixed.core import server_update as server_update_lib
from tff_mixed.core import transfer_select as transfer_lib


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


class ProcessConfig(NamedTuple):
  """Everything `build_mixed_process` needs beyond the model and optimizers.

  Attributes:
    objective: The `CentralObjective` f_c, or `None` (FedAvg-like).
    server: The `server_update.ServerUpdateConfig`.
    client_steps: K (exactly K local steps) or `None` (one pass over the data).
    client_weighting: A `tff.learning.ClientWeighting`.
    send_central_gradient: Broadcast g~_c and add `w_c g~_c` to every client
      step (gradient transfer). g~_c is computed at x^(t) before the
      broadcast, or, with `server.carry_central_gradient`, taken from the
      state.
    transfer_examples: Example Transfer: central examples sent to each client
      per round, drawn per client (0: none).
    resample_transfer_each_round: Fresh examples each round (Example
      Transfer) or each client's fixed portion (FedAvg with shared data).
    transfer_batch_size: Local batch size after merging transferred examples.
    initial_trainable_fn: Optional `tf.function` mapping the initial
      `(trainable, non_trainable)` to new trainable weights (warm-up).
    selection: Optional `embedding_select.EmbeddingSelection`: slice the
      embedding table per client instead of broadcasting it.
  """

  objective: Optional[central_lib.CentralObjective]
  server: server_update_lib.ServerUpdateConfig
  client_steps: Optional[int]
  client_weighting: tff.learning.ClientWeighting
  send_central_gradient: bool
  transfer_examples: int
  resample_transfer_each_round: bool
  transfer_batch_size: Optional[int]
  initial_trainable_fn: Optional[Callable[..., Any]]
  selection: Optional[select_lib.EmbeddingSelection] = None


def _weights_type(model):
  """The `ModelWeights` TFF type of a FunctionalModel's weights."""

  def spec(array):
    return tf.TensorSpec(array.shape, tf.dtypes.as_dtype(array.dtype))

  trainable, non_trainable = model.initial_weights
  return tff.types.tensorflow_to_type(
      tff.learning.models.ModelWeights(
          trainable=tuple(spec(w) for w in trainable),
          non_trainable=tuple(spec(w) for w in non_trainable)))


def _select_computations(selection, weights_type, data_type, config,
                         client_update_fn, client_optimizer):
  """The TF computations of the `federated_select` path.

  Returns `(keys_computation: ({B*} -> int32[M]), split_computation:
  (ModelWeights -> <table, ModelWeights without it>), split_gradient:
  (trainable -> <table rows, the rest>), select_fn: (<table, int32> -> row),
  client_computation: (<message, {B*}, int32[M], {row*}[, {row*}]> ->
  ClientOutput))`.
  """
  index = selection.table_index
  trainable_type = weights_type.trainable
  table_type = trainable_type[index]
  row_shape = table_type.shape[1:]
  num_keys = selection.keys_per_client

  @tff.tensorflow.computation(data_type)
  def keys_computation(dataset):
    return select_lib.select_keys(dataset, selection, config.client_steps)

  def without_table(trainable):
    return tuple(w for i, w in enumerate(trainable) if i != index)

  def with_rows(dense, rows):
    dense = list(dense)
    return tuple(dense[:index] + [rows] + dense[index:])

  @tff.tensorflow.computation(weights_type)
  def split_computation(weights):
    return (weights.trainable[index], tff.learning.models.ModelWeights(
        trainable=without_table(weights.trainable),
        non_trainable=tuple(weights.non_trainable)))

  @tff.tensorflow.computation(trainable_type)
  def split_gradient(gradient):
    return gradient[index], without_table(gradient)

  select_fn = select_lib.build_select_fn(table_type)
  dense_weights_type = split_computation.type_signature.result[1]
  rows_type = tff.SequenceType(tff.TensorType(table_type.dtype, row_shape))
  message_members = collections.OrderedDict(weights=dense_weights_type)
  parameter = [None, data_type, tff.TensorType(np.int32, [num_keys]),
               rows_type]
  if config.send_central_gradient:
    message_members['augmenting_gradient'] = (
        split_gradient.type_signature.result[1])
    parameter.append(rows_type)
  parameter[0] = tff.to_type(message_members)

  def client_fn(message, dataset, keys, rows, gradient_rows=None):
    weights = message['weights']
    trainable = with_rows(weights.trainable, select_lib.rows_from_sequence(
        rows, num_keys, row_shape))
    augmenting = ()
    if gradient_rows is not None:
      # Padding slots are no rows of the client's: no w_c g~_c for them.
      augmenting = with_rows(
          message['augmenting_gradient'],
          select_lib.rows_from_sequence(gradient_rows, num_keys, row_shape)
          * select_lib.padding_mask(keys, table_type.dtype))
    return client_update_fn(
        client_optimizer, (trainable, tuple(weights.non_trainable)),
        select_lib.local_dataset(dataset, keys, selection), augmenting, (), 0)

  # TFF computations take no varargs: one signature per algorithm family.
  if config.send_central_gradient:
    client_computation = tff.tensorflow.computation(
        lambda message, dataset, keys, rows, gradient_rows: client_fn(
            message, dataset, keys, rows, gradient_rows), *parameter)
  else:
    client_computation = tff.tensorflow.computation(
        lambda message, dataset, keys, rows: client_fn(
            message, dataset, keys, rows), *parameter)

  return (keys_computation, split_computation, split_gradient, select_fn,
          client_computation)


def build_mixed_process(
    model: tff.learning.models.FunctionalModel,
    config: ProcessConfig,
    *,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: tff.learning.optimizers.Optimizer,
    central_optimizer: Optional[tff.learning.optimizers.Optimizer],
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer],
    model_aggregator: tff.aggregators.WeightedAggregationFactory,
    metrics_aggregator: Optional[Callable[..., tff.Computation]],
) -> tff.learning.templates.LearningProcess:
  """Wires a mixed FL `tff.learning.templates.LearningProcess`.

  Arguments are validated by the public builders in `tff_mixed.algorithms`.
  The returned process has:

  *   `initialize: ( -> MixedFLState@SERVER)`
  *   `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
      <state=MixedFLState@SERVER, metrics=M@SERVER>)`
  *   `get_model_weights: (MixedFLState -> ModelWeights)`
  *   `set_model_weights: (<MixedFLState, ModelWeights> -> MixedFLState)`
  *   `get_hparams: (MixedFLState -> H)`, `set_hparams: (<MixedFLState, H> ->
      MixedFLState)` for the server-side optimizers.

  `M` is `OrderedDict(client_work=OrderedDict(train=<model metrics>),
  aggregator=<aggregator measurements>, central=OrderedDict(loss=f_c(x^(t))
  on the round's first central batch, [bgd_G2, bgd_B2]),
  finalizer=OrderedDict(update_non_finite=int32))`, so training metrics sit
  where `tff.learning.algorithms.build_weighted_fed_avg` puts them.
  """
  server_config = config.server
  objective = config.objective
  weights_type = _weights_type(model)
  trainable_type = weights_type.trainable
  data_type = tff.SequenceType(tff.types.tensorflow_to_type(model.input_spec))
  trainable_specs = tuple(
      tf.TensorSpec(w.shape, tf.dtypes.as_dtype(w.dtype))
      for w in model.initial_weights[0])
  uses_central_training = server_config.central_steps > 0
  uses_federated_gradient = server_config.augment_central_steps
  # Gradient transfer's g~_c: state (2-way GT, Algorithm 1) or computed at
  # x^(t) before the broadcast.
  carries_central_gradient = server_config.carry_central_gradient
  computes_central_gradient = (config.send_central_gradient
                               and not carries_central_gradient)

  @tff.tensorflow.computation
  def initial_model_weights_fn():
    trainable = tuple(tf.constant(w) for w in model.initial_weights[0])
    non_trainable = tuple(tf.constant(w) for w in model.initial_weights[1])
    if config.initial_trainable_fn is not None:
      trainable = tuple(config.initial_trainable_fn(trainable, non_trainable))
    return tff.learning.models.ModelWeights(trainable, non_trainable)

  @tff.tensorflow.computation
  def initial_server_parts_fn():
    return collections.OrderedDict(
        round_num=tf.constant(0, tf.int32),
        server_optimizer=server_optimizer.initialize(trainable_specs),
        central_optimizer=(central_optimizer.initialize(trainable_specs)
                           if uses_central_training else ()),
        merge_optimizer=(merge_optimizer.initialize(trainable_specs)
                         if uses_central_training else ()),
        federated_gradient=(tuple(tf.zeros(s.shape, s.dtype)
                                  for s in trainable_specs)
                            if uses_federated_gradient else ()),
        central_gradient=(tuple(tf.zeros(s.shape, s.dtype)
                                for s in trainable_specs)
                          if carries_central_gradient else ()),
    )

  selection = config.selection
  if selection is None:
    aggregation_process = model_aggregator.create(
        trainable_type, tff.TensorType(np.float32))
  else:
    sparse_mean = select_lib.build_sparse_mean(
        trainable_type, selection.table_index, selection.keys_per_client)
  round_type = tff.TensorType(np.int32)

  # --- Server computations feeding the broadcast. ---
  if computes_central_gradient:
    central_gradient_fn = server_update_lib.build_central_gradient_fn(
        model, objective, server_config.central_batch_size, server_config.seed,
        server_config.central_clip_norm)

    @tff.tensorflow.computation(weights_type, round_type)
    def central_gradient_computation(weights, round_num):
      loss, gradient = central_gradient_fn(
          weights.trainable, weights.non_trainable, round_num, 0)
      return loss, gradient

  if config.transfer_examples > 0:
    # Each client's own central examples (arXiv:2111.12150, Algorithm 3,
    # line 3), not one broadcast sample for all.
    transfer = transfer_lib.build_transfer_computations(
        objective, data_type, examples_per_client=config.transfer_examples,
        seed=server_config.seed,
        redraw_each_round=config.resample_transfer_each_round)
    transfer_draw_type = transfer.draw.type_signature.result

  broadcast_members = collections.OrderedDict(weights=weights_type)
  if config.send_central_gradient:
    broadcast_members['augmenting_gradient'] = trainable_type
  broadcast_type = tff.to_type(broadcast_members)

  # --- Client computation. ---
  client_update_fn = client_update_lib.build_client_update_fn(
      model if selection is None else selection.local_model,
      weighting=config.client_weighting,
      num_steps=config.client_steps,
      federated_weight=server_config.federated_weight,
      central_weight=server_config.central_weight,
      use_augmenting_gradient=config.send_central_gradient,
      transfer_batch_size=(config.transfer_batch_size
                           if config.transfer_examples > 0 else None),
      with_probe_gradient=server_config.with_diagnostics,
  )

  if selection is None and config.transfer_examples > 0:
    examples_type = tff.SequenceType(
        transfer.select_fn.type_signature.result)

    @tff.tensorflow.computation(broadcast_type, data_type, examples_type,
                                transfer_draw_type.shuffle_seed)
    def client_computation(message, dataset, examples, shuffle_seed):
      weights = message['weights']
      return client_update_fn(
          client_optimizer,
          (tuple(weights.trainable), tuple(weights.non_trainable)),
          dataset,
          message['augmenting_gradient'] if config.send_central_gradient
          else (),
          examples,
          shuffle_seed,
      )
  elif selection is None:

    @tff.tensorflow.computation(broadcast_type, data_type)
    def client_computation(message, dataset):
      weights = message['weights']
      return client_update_fn(
          client_optimizer,
          (tuple(weights.trainable), tuple(weights.non_trainable)),
          dataset,
          message['augmenting_gradient'] if config.send_central_gradient
          else (),
          (),
          0,
      )
  else:
    (keys_computation, split_computation, split_gradient_computation,
     select_fn, client_computation) = _select_computations(
         selection, weights_type, data_type, config, client_update_fn,
         client_optimizer)

  # --- Server update computation. ---
  server_update_fn = server_update_lib.build_server_update_fn(
      model, objective, server_config, server_optimizer, central_optimizer,
      merge_optimizer)
  server_state_types = initial_server_parts_fn.type_signature.result
  server_input_members = collections.OrderedDict(
      weights=weights_type,
      round_num=round_type,
      server_optimizer=server_state_types['server_optimizer'],
      central_optimizer=server_state_types['central_optimizer'],
      merge_optimizer=server_state_types['merge_optimizer'],
      federated_gradient=server_state_types['federated_gradient'],
      aggregated_update=trainable_type,
  )
  if config.send_central_gradient:
    server_input_members['central_gradient'] = trainable_type
  if computes_central_gradient:
    server_input_members['central_loss'] = tff.TensorType(np.float32)
  # 2-way GT with federated_select: which share of the cohort applied g~_c
  # to each table row.
  needs_row_coverage = (selection is not None
                        and server_config.recover_federated_gradient)
  if needs_row_coverage:
    server_input_members['row_weight_fraction'] = tff.TensorType(
        np.float32, [selection.num_rows])
  if server_config.with_diagnostics:
    server_input_members['mean_probe_gradient'] = trainable_type

  @tff.tensorflow.computation(tff.to_type(server_input_members))
  def server_computation(inputs):
    coverage = ()
    if needs_row_coverage:
      coverage = select_lib.augmenting_coverage(
          inputs['row_weight_fraction'], inputs['weights'].trainable,
          selection.table_index)
    return server_update_fn(
        inputs['weights'], inputs['round_num'], inputs['server_optimizer'],
        inputs['central_optimizer'], inputs['merge_optimizer'],
        inputs['federated_gradient'], inputs['aggregated_update'],
        inputs['central_gradient'] if config.send_central_gradient else (),
        inputs['mean_probe_gradient']
        if server_config.with_diagnostics else (),
        inputs['central_loss'] if computes_central_gradient else (),
        coverage)

  if metrics_aggregator is None:
    metrics_aggregator = tff.learning.metrics.sum_then_finalize
  metrics_aggregation_fn = metrics_aggregator(model.finalize_metrics)

  # --- Federated computations: intrinsics only. ---
  @tff.federated_computation
  def init_fn():
    parts = tff.federated_eval(initial_server_parts_fn, tff.SERVER)
    return tff.federated_zip(
        MixedFLState(
            global_model_weights=tff.federated_eval(initial_model_weights_fn,
                                                    tff.SERVER),
            round_num=parts.round_num,
            aggregator=(aggregation_process.initialize()
                        if selection is None
                        else tff.federated_value((), tff.SERVER)),
            server_optimizer=parts.server_optimizer,
            central_optimizer=parts.central_optimizer,
            merge_optimizer=parts.merge_optimizer,
            federated_gradient=parts.federated_gradient,
            central_gradient=parts.central_gradient,
        ))

  state_type = init_fn.type_signature.result

  @tff.federated_computation(state_type,
                             tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, client_data):
    weights = state.global_model_weights
    message = collections.OrderedDict(weights=weights)
    if computes_central_gradient:
      central_loss, central_gradient = tff.federated_map(
          central_gradient_computation, (weights, state.round_num))
    elif carries_central_gradient:
      central_gradient = state.central_gradient
    if config.send_central_gradient:
      message['augmenting_gradient'] = central_gradient
    if selection is None:
      message_at_clients = tff.federated_broadcast(tff.federated_zip(message))
      if config.transfer_examples > 0:
        # Each client draws the indices of its examples; federated_select
        # sends it only those.
        draws = tff.federated_map(
            transfer.draw,
            (tff.federated_broadcast(state.round_num), client_data))
        examples = tff.federated_select(
            draws.keys, tff.federated_value(transfer.max_key, tff.SERVER),
            tff.federated_eval(transfer.central_set, tff.SERVER),
            transfer.select_fn)
        client_outputs = tff.federated_map(
            client_computation,
            (message_at_clients, client_data, examples, draws.shuffle_seed))
      else:
        client_outputs = tff.federated_map(client_computation,
                                           (message_at_clients, client_data))
      aggregation_output = aggregation_process.next(
          state.aggregator, client_outputs.update,
          client_outputs.update_weight)
      aggregated_update = aggregation_output.result
      aggregator_state = aggregation_output.state
      aggregator_measurements = aggregation_output.measurements
    else:
      # The table travels only as each client's selected rows.
      keys = tff.federated_map(keys_computation, client_data)
      max_key = tff.federated_value(selection.num_rows - 1, tff.SERVER)
      table, dense_weights = tff.federated_map(split_computation,
                                               message['weights'])
      message['weights'] = dense_weights
      client_inputs = [keys, tff.federated_select(keys, max_key, table,
                                                  select_fn)]
      if config.send_central_gradient:
        gradient_table, dense_gradient = tff.federated_map(
            split_gradient_computation, message['augmenting_gradient'])
        message['augmenting_gradient'] = dense_gradient
        client_inputs.append(tff.federated_select(
            keys, max_key, gradient_table, select_fn))
      message_at_clients = tff.federated_broadcast(tff.federated_zip(message))
      client_outputs = tff.federated_map(
          client_computation,
          (message_at_clients, client_data, *client_inputs))
      aggregated_update, row_weight_fraction = sparse_mean(
          keys, client_outputs.update, client_outputs.update_weight)
      aggregator_state = state.aggregator
      aggregator_measurements = tff.federated_value((), tff.SERVER)
    train_metrics = metrics_aggregation_fn(client_outputs.metrics)

    server_inputs = collections.OrderedDict(
        weights=weights,
        round_num=state.round_num,
        server_optimizer=state.server_optimizer,
        central_optimizer=state.central_optimizer,
        merge_optimizer=state.merge_optimizer,
        federated_gradient=state.federated_gradient,
        aggregated_update=aggregated_update,
    )
    if config.send_central_gradient:
      server_inputs['central_gradient'] = central_gradient
    if computes_central_gradient:
      server_inputs['central_loss'] = central_loss
    if needs_row_coverage:
      server_inputs['row_weight_fraction'] = row_weight_fraction
    if server_config.with_diagnostics:
      # Opt-in diagnostic: an extra client upload beyond FedAvg's.
      server_inputs['mean_probe_gradient'] = tff.federated_mean(
          client_outputs.probe_gradient)
    (new_weights, new_round_num, new_server_state, new_central_state,
     new_merge_state, new_federated_gradient, new_central_gradient,
     central_metrics, finalizer_metrics) = tff.federated_map(
         server_computation, tff.federated_zip(server_inputs))

    new_state = tff.federated_zip(
        MixedFLState(
            global_model_weights=new_weights,
            round_num=new_round_num,
            aggregator=aggregator_state,
            server_optimizer=new_server_state,
            central_optimizer=new_central_state,
            merge_optimizer=new_merge_state,
            federated_gradient=new_federated_gradient,
            central_gradient=new_central_gradient,
        ))
    metrics = collections.OrderedDict(
        client_work=tff.federated_zip(
            collections.OrderedDict(train=train_metrics)),
        aggregator=aggregator_measurements,
        central=central_metrics,
        finalizer=finalizer_metrics,
    )
    return tff.learning.templates.LearningProcessOutput(
        new_state, tff.federated_zip(metrics))

  state_member_type = state_type.member

  @tff.tensorflow.computation(state_member_type)
  def get_model_weights(state):
    return state.global_model_weights

  @tff.tensorflow.computation(state_member_type, weights_type)
  def set_model_weights(state, weights):
    return state._replace(global_model_weights=weights)

  def _hparams(state):
    hparams = collections.OrderedDict(
        server_optimizer=server_optimizer.get_hparams(state.server_optimizer))
    if uses_central_training:
      hparams['central_optimizer'] = central_optimizer.get_hparams(
          state.central_optimizer)
      hparams['merge_optimizer'] = merge_optimizer.get_hparams(
          state.merge_optimizer)
    return hparams

  @tff.tensorflow.computation(state_member_type)
  def get_hparams_fn(state):
    return _hparams(state)

  @tff.tensorflow.computation(state_member_type,
                              get_hparams_fn.type_signature.result)
  def set_hparams_fn(state, hparams):
    updates = dict(server_optimizer=server_optimizer.set_hparams(
        state.server_optimizer, hparams['server_optimizer']))
    if uses_central_training:
      updates['central_optimizer'] = central_optimizer.set_hparams(
          state.central_optimizer, hparams['central_optimizer'])
      updates['merge_optimizer'] = merge_optimizer.set_hparams(
          state.merge_optimizer, hparams['merge_optimizer'])
    return state._replace(**updates)

  return tff.learning.templates.LearningProcess(
      init_fn,
      next_fn,
      get_model_weights,
      set_model_weights,
      get_hparams_fn=get_hparams_fn,
      set_hparams_fn=set_hparams_fn,
  )
