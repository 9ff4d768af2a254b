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
"""What groups of clients receive and return: adapters of the per-client
distributors and aggregators for the group simulation (`client_groups.py`).

A group is one CLIENTS member that trains several clients inside one
TensorFlow computation. What `federated_select` would deliver to each
client, per-client key or row by key, is here taken inside the group's
computation, so that its members train what the per-client process's
clients train, on the same numbers (tests/client_groups_test.py compares
them); the bytes per client are those of the per-client process.

*   `build_group_select_distributor`: the table broadcast whole to each
    group; each member takes its rows (and g~_c's) by its own keys.
*   `build_group_transfer_distributor`: the round number broadcast; each
    member draws and reads its central examples (Example Transfer); members
    held as tensors draw theirs all at once (a `GroupDistributor`).
*   `build_group_scatter_back_aggregator`: the scatter-back's mean and
    unheld shares from groups that scattered their members' rows.
"""

import collections
from collections.abc import Callable
from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import aggregators
from tff_mixed.core import distributors
from tff_mixed.core import embedding_select as select_lib
from tff_mixed.core import transfer_select as transfer_lib
from tff_mixed.simulation import merged_batches as merged_lib


class GroupDistributor(NamedTuple):
  """A distributor whose group members may also receive all at once.

  Attributes:
    distributor: The `distributors.Distributor` the process composes; its
      `receive` also takes a member's `fingerprint=` (from
      `ClientGroups.fingerprint_fn`) in place of a pass over its data.
    receive_members: `(received: sequence, batches) -> ClientInputs`, pure
      TF: what `distributor.receive` gives each member, for all of them at
      once, from their batches (every leaf `[members, n, B, ...]`, each
      member's whole data): `examples` stacked `[members, e, ...]` and
      `shuffle_seed` `[members]`, for members that train from tensors
      (`group_work.trains_from_batches`).
  """

  distributor: distributors.Distributor
  receive_members: Callable[..., distributors.ClientInputs]


def build_group_select_distributor(
    model: tff.learning.models.FunctionalModel,
    selection: select_lib.EmbeddingSelection,
    with_gradient: bool,
    client_steps: Optional[int],
) -> distributors.Distributor:
  """`distributors.build_select_distributor` for groups of clients.

  The message is broadcast whole to each group (one value per group, not per
  client), and each member computes its keys from its data and takes its
  rows of the table (and of g~_c) inside the group's computation: the rows
  `federated_select` would deliver, so the member trains the same local
  model on the same remapped batches. This is a simulation of the
  per-client process, whose bytes per client it leaves unchanged; TFF's
  runtime would otherwise call `select_fn` once per key and client.
  """
  broadcast = distributors.build_broadcast_distributor(model, with_gradient)
  index = selection.table_index

  def receive(received, dataset, key_dataset=None):
    (message,) = received
    keys = select_lib.select_keys(
        dataset if key_dataset is None else key_dataset, selection,
        client_steps)
    rows = [tf.gather(message['weights'].trainable[index], keys)]
    if with_gradient:
      rows.append(tf.gather(message['augmenting_gradient'][index], keys))
    weights = message['weights']
    message = collections.OrderedDict(
        weights=weights._replace(
            trainable=distributors.without(weights.trainable, index)),
        augmenting_gradient=(
            distributors.without(message['augmenting_gradient'], index)
            if with_gradient else ()))
    return distributors.local_inputs(message, keys, rows, dataset, selection)

  return distributors.Distributor(
      broadcast.client_types, broadcast.distribute, receive,
      selection.local_model, selection)


def build_group_transfer_distributor(
    base: distributors.Distributor,
    transfer: transfer_lib.TransferComputations) -> GroupDistributor:
  """`distributors.build_transfer_distributor` for groups of clients.

  The round number is broadcast with `base`'s values, and each member draws
  its keys and reads its central examples inside the group's computation
  (`transfer.draw_fn`, `transfer.read_fn`: what `federated_select` with
  `select_fn` delivers to a client), so that a group's members need no key
  of their own in the federated computation. A member whose fingerprint is
  given draws from it (`transfer.draw_fingerprint_fn`). Members held as
  tensors draw and read theirs all at once (`receive_members`,
  `transfer.draw_rows_fn`).
  """

  def distribute(message, round_num, client_data):
    distribution = base.distribute(message, round_num, client_data)
    return distribution._replace(values=(
        *distribution.values, tff.federated_broadcast(round_num)))

  def receive(received, dataset, key_dataset=None, fingerprint=None):
    *received, round_num = received
    # A member whose fingerprint the simulation knows draws without a pass
    # over its data (`ClientGroups.fingerprint_fn`).
    draw = (transfer.draw_fn(
        dataset if key_dataset is None else key_dataset, round_num)
            if fingerprint is None else
            transfer.draw_fingerprint_fn(fingerprint, round_num))
    examples = tf.data.Dataset.from_tensor_slices(transfer.read_fn(draw.keys))
    return base.receive(received, dataset, key_dataset)._replace(
        examples=examples, shuffle_seed=draw.shuffle_seed)

  def receive_members(received, batches):
    *received, round_num = received
    draw = transfer.draw_rows_fn(merged_lib.rows_of(batches), round_num)
    examples = tf.nest.map_structure(
        lambda t: tf.reshape(t, tf.concat(
            [tf.shape(draw.keys), tf.shape(t)[1:]], 0)),
        transfer.read_fn(tf.reshape(draw.keys, [-1])))
    return base.receive(received, None)._replace(
        examples=examples, shuffle_seed=draw.shuffle_seed)

  return GroupDistributor(
      distributors.Distributor(
          (*base.client_types, tff.TensorType(np.int32)), distribute, receive,
          base.client_model), receive_members)


def _group_sparse_mean(trainable_type, table_index: int):
  """`embedding_select.build_sparse_mean`'s results from groups of clients.

  Returns `aggregate(mean@CLIENTS, row_weights@CLIENTS, weight@CLIENTS) ->
  <mean_update, unheld_fraction>@SERVER`, where each group has already
  scattered its members' rows (`embedding_select.scatter_weighted`): `mean`
  is its members' table-shaped weighted mean, `row_weights` their per-row
  weight totals and `weight` theirs. The accumulator and its division are
  `build_sparse_mean`'s, so the result is the per-client scatter-back's.
  """
  zero, merge, report = select_lib.sparse_mean_computations(
      trainable_type, table_index)
  accumulator_type = zero.type_signature.result

  @tff.tensorflow.computation(accumulator_type, accumulator_type)
  def accumulate(accumulator, group):
    mean, row_weights, weight = group
    return merge(accumulator,
                 (tuple(weight * m for m in mean), row_weights, weight))

  def aggregate(mean, row_weights, weight):
    return tff.federated_aggregate(
        tff.federated_zip((mean, row_weights, weight)), zero(), accumulate,
        merge, report)

  return aggregate


def build_group_scatter_back_aggregator(
    selection: select_lib.EmbeddingSelection,
    trainable_type: tff.Type) -> aggregators.Aggregator:
  """`aggregators.build_scatter_back_aggregator` for groups of clients:
  its results from `group_work.GroupOutput`s.

  A group uploads its members' weighted mean update (table-shaped), their
  weight total and their per-row weight totals;
  `_group_sparse_mean` adds them up as the per-client scatter-back does.
  State and measurements are `()`.
  """
  group_sparse_mean = _group_sparse_mean(trainable_type,
                                         selection.table_index)

  def initialize():
    return tff.federated_value((), tff.SERVER)

  def aggregate(state, client_outputs, keys):
    del keys  # Each group scattered its members' rows.
    mean_update, unheld_fraction = group_sparse_mean(
        client_outputs.update, client_outputs.row_weights,
        client_outputs.update_weight)
    return aggregators.AggregatorOutput(
        state, mean_update, tff.federated_value((), tff.SERVER),
        unheld_fraction)

  return aggregators.Aggregator(initialize, aggregate)
