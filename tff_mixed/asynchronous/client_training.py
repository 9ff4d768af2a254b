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
"""Client training for asynchronous FL, as a TFF federated computation.

In asynchronous FL (FedAsync, FedBuff, CA2FL, Feddle: guided model merging
paper, section 3 and appendix) the server acts on each client's update as it
arrives, possibly rounds after the model it was computed from. The
simulation therefore splits a round in two: the sampled clients train now,
on the current global model (this computation), and Python holds each
update until its simulated arrival round (`schedule.AsyncSchedule`).

Unlike the synchronous processes, this computation returns the updates
placed at CLIENTS, one per client: every asynchronous server strategy
consumes individual client updates (a buffer, a per-client cache, or an
atlas of anchors). Only model updates leave a client, never its examples.

Type signature:
`(<weights=ModelWeights@SERVER, data={B*}@CLIENTS> ->
  <update=ModelDelta@CLIENTS, num_examples=float32@CLIENTS,
   loss=float32@SERVER>)`, with `update = trained - initial` weights
(TFF's client work reports the opposite sign; it is flipped here so the
strategies add updates).

Client groups (`build_group_client_training`, the fast simulation mode of
`tff_mixed.simulation.client_groups` for asynchronous runs): every client sampled
in a round trains from the same model, the round's global weights, even
though their updates arrive in different rounds. So one TF computation can
train a group of them in a `tf.while_loop`, reading each member's data from
a pure-TF `dataset_fn(client_id, round_num)` inside the computation, and
return each member's update, stacked, rather than a sum: the strategies
(FedAsync's staleness-weighted mixing, the FedBuff and Feddle buffers,
CA2FL's per-client cache) consume every update on its own, in its arrival
round, and get exactly the updates of the per-client computation.
"""

import collections
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import client_work as client_work_lib
from tff_mixed.core import model_types

# Client ids of the asynchronous schedule (0 .. num_clients - 1).
GROUP_ID_DTYPE = np.int32


def build_client_training(
    model: tff.learning.models.FunctionalModel,
    client_optimizer: tff.learning.optimizers.Optimizer,
) -> tff.Computation:
  """Local training of the sampled clients from the server's weights.

  Args:
    model: The `FunctionalModel` clients train.
    client_optimizer: The local optimizer (a pass over each client dataset;
      give datasets their number of steps, e.g. `repeat().take(K)`).

  Returns:
    The federated computation described in the module docstring.

  Raises:
    TypeError: If `model` is not a `FunctionalModel`.
  """
  _check_functional(model)
  client_work = tff.learning.templates.build_functional_model_delta_client_work(
      model=model, optimizer=client_optimizer,
      client_weighting=tff.learning.ClientWeighting.NUM_EXAMPLES)
  # Types derived from TFF's own traced client work.
  next_type = client_work.next.type_signature.parameter
  weights_type = next_type[1].member
  data_type = next_type[2]

  @tff.tensorflow.computation(weights_type.trainable)
  def negate(update):
    return tf.nest.map_structure(tf.negative, update)

  @tff.federated_computation(
      tff.FederatedType(weights_type, tff.SERVER), data_type)
  def train(weights, data):
    output = client_work.next(client_work.initialize(),
                              tff.federated_broadcast(weights), data)
    return collections.OrderedDict(
        update=tff.federated_map(negate, output.result.update),
        num_examples=output.result.update_weight,
        loss=output.measurements.train.loss)

  return train


def _check_functional(model: Any) -> None:
  if not isinstance(model, tff.learning.models.FunctionalModel):
    raise TypeError('`model` must be a tff.learning.models.FunctionalModel, '
                    f'got {type(model).__name__}.')


def build_group_loop(member_fn: Callable[..., Any],
                     output_specs: Any) -> Callable[..., Any]:
  """Stacks `member_fn` over a group's members (pure TF).

  Args:
    member_fn: `member_fn(client_id, *shared) -> outputs`, a structure of
      tensors matching `output_specs`, for one member.
    output_specs: The structure of `tf.TensorSpec`s of one member's outputs.

  Returns:
    `loop(ids, *shared)`: the outputs of every member of `ids` (a 1-D
    tensor), each leaf stacked along a new leading axis in the order of
    `ids`.
  """
  flat_specs = tf.nest.flatten(output_specs)

  def loop(ids, *shared):
    def body(i, arrays):
      outputs = tf.nest.flatten(member_fn(ids[i], *shared))
      return i + 1, tuple(a.write(i, o) for a, o in zip(arrays, outputs))

    arrays = tuple(
        tf.TensorArray(s.dtype, size=tf.size(ids), element_shape=s.shape)
        for s in flat_specs)
    _, arrays = tf.while_loop(lambda i, _: i < tf.size(ids), body,
                              (tf.constant(0), arrays))
    return tf.nest.pack_sequence_as(output_specs,
                                    [a.stack() for a in arrays])

  return loop


def build_group_client_training(
    model: tff.learning.models.FunctionalModel,
    client_optimizer: tff.learning.optimizers.Optimizer,
    dataset_fn: Callable[[tf.Tensor, tf.Tensor], tf.data.Dataset],
) -> tff.Computation:
  """`build_client_training` for groups of clients (module docstring).

  Each member trains as in `build_client_training` (the local loop of
  `core.client_work`, step for step TFF's functional FedAvg client update)
  and the loss is the same `sum_then_finalize` of the members' metrics.

  Type signature:
  `(<weights=ModelWeights@SERVER, round_num=int64@SERVER,
     ids=int32[?]@CLIENTS> ->
    <update=<float32[?, ...], ...>@CLIENTS, num_examples=float32[?]@CLIENTS,
     loss=float32@SERVER>)`: per group, its members' updates
  (`trained - initial`) and example counts stacked in the order of `ids`.

  Args:
    model: The `FunctionalModel` clients train.
    client_optimizer: The local optimizer (a pass over each dataset).
    dataset_fn: `dataset_fn(client_id, round_num)`, pure TF (traced into the
      computation, called with scalar int32 and int64 tensors): the client's
      dataset for the round it is sampled in, the batches the per-client
      path's dataset holds.

  Returns:
    The federated computation.

  Raises:
    TypeError: If `model` is not a `FunctionalModel`.
  """
  _check_functional(model)
  config = client_work_lib.ClientWorkConfig(
      weighting=tff.learning.ClientWeighting.NUM_EXAMPLES, num_steps=None)
  client_update = client_work_lib.build_client_update_fn(model, config)
  weights_type = model_types.weights_type(model)
  trainable = model_types.trainable_specs(model)
  metrics_specs = tf.nest.map_structure(
      tf.TensorSpec.from_tensor, model.initialize_metrics_state())

  def member(client_id, weights, round_num):
    output = client_update(
        client_optimizer, (tuple(weights.trainable),
                           tuple(weights.non_trainable)),
        dataset_fn(client_id, round_num), (), (), tf.constant(0, tf.int64))
    return (tuple(tf.negative(u) for u in output.update),
            output.update_weight, output.metrics)

  loop = build_group_loop(member, (trainable, tf.TensorSpec([], tf.float32),
                                   metrics_specs))

  @tff.tensorflow.computation(weights_type, np.int64,
                              tff.TensorType(GROUP_ID_DTYPE, [None]))
  def group_update(weights, round_num, ids):
    update, num_examples, metrics = loop(ids, weights, round_num)
    return collections.OrderedDict(
        update=update, num_examples=num_examples,
        metrics=tf.nest.map_structure(
            lambda m: tf.reduce_sum(m, axis=0), metrics))

  aggregate_metrics = tff.learning.metrics.sum_then_finalize(
      model.finalize_metrics)

  @tff.federated_computation(
      tff.FederatedType(weights_type, tff.SERVER),
      tff.FederatedType(np.int64, tff.SERVER),
      tff.FederatedType(tff.TensorType(GROUP_ID_DTYPE, [None]), tff.CLIENTS))
  def train(weights, round_num, ids):
    output = tff.federated_map(group_update, (
        tff.federated_broadcast(weights), tff.federated_broadcast(round_num),
        ids))
    return collections.OrderedDict(
        update=output.update, num_examples=output.num_examples,
        loss=aggregate_metrics(output.metrics).loss)

  return train
