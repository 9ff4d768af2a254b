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
"""The group client work: what one group of clients computes in a round.

A group (`client_groups.py`) is one CLIENTS member whose value is its
clients' ids; `build_group_work` trains every member in turn (a
`tf.while_loop`), reading the member's dataset from
`ClientGroups.dataset_fn` inside the computation and restarting from what
the server sent, exactly as the per-client client work does
(`client_work.build_client_update_fn`, the same function); or, for members
of equal shape given as tensors (`ClientGroups.batches_fn`),
`members_at_once` at a time in lockstep (`lockstep.py`), Example Transfer's
members with their transferred examples merged into their batches
(`merged_batches.py`). It returns what aggregation needs (`GroupOutput`).

`build_group_components` composes it with the group adapters of the
per-client distributor and aggregator (`group_distribution.py`,
`group_aggregation.py`): what the members need beyond the per-client
components is given to the group work, and the process composes the
per-client parts, which it calls the same way in both modes.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional, Union

import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import aggregators
from tff_mixed.core import client_work as client_work_lib
from tff_mixed.core import distributors
from tff_mixed.core import embedding_select as select_lib
from tff_mixed.core import model_types
from tff_mixed.simulation import client_groups as client_groups_lib
from tff_mixed.simulation import group_aggregation
from tff_mixed.simulation import group_distribution
from tff_mixed.simulation import lockstep
from tff_mixed.simulation import merged_batches as merged_lib


class GroupOutput(NamedTuple):
  """What one group of clients computes in a round.

  Attributes:
    update: `sum_i p_i Delta_i / sum_i p_i` over the members, like the
      trainable weights (the whole table with `federated_select`, each
      member's rows scattered to their keys); zero if the weight is zero.
    update_weight: `sum_i p_i` (float32).
    metrics: The sum of the members' unfinalized metrics.
    probe_gradient: The mean of the members' probe gradients, or `()`.
    probe_weight: The number of members (float32): the weight of
      `probe_gradient` and `probe_norm_squared` in the means over groups
      (a client's `ClientOutput.probe_weight` is 1).
    row_weights: With `federated_select`, float32 `[num_rows]`, per table row
      the members' weight that trained it; else `()`.
    records: With an aggregator that acts on each client's update, the sum
      of the members' records (`group_aggregation.MemberRecords`: e.g. their
      clipped updates); else `()`.
    probe_norm_squared: With probe gradients, the mean over the members of
      each one's own |g_i|^2 (not the norm of their mean: the server's
      sigma^2 estimate needs the spread between members too), else `()`.
    clients: The sum of the members' `client_work.client_counts`.
  """

  update: Any
  update_weight: Any
  metrics: Any
  probe_gradient: Any
  probe_weight: Any
  row_weights: Any = ()
  records: Any = ()
  probe_norm_squared: Any = ()
  clients: Any = ()


def _zero_sums(model, config, selection, records):
  """The loop's accumulator: GroupOutput of sums (update unnormalized)."""
  trainable = tuple(tf.zeros(s.shape, s.dtype)
                    for s in model_types.trainable_specs(model))
  if records is not None:
    records = tf.nest.map_structure(tf.zeros_like, records)
  return GroupOutput(
      update=trainable,
      update_weight=tf.constant(0.0, tf.float32),
      metrics=model.initialize_metrics_state(),
      probe_gradient=(trainable if config.with_probe_gradient else ()),
      probe_weight=tf.constant(0.0, tf.float32),
      row_weights=(() if selection is None else
                   tf.zeros([selection.num_rows], tf.float32)),
      records=() if records is None else records,
      probe_norm_squared=(tf.constant(0.0, tf.float32)
                          if config.with_probe_gradient else ()),
      clients=client_work_lib.zero_client_counts())


def _add_member(sums, output, keys, selection, record):
  """`sums` plus one member's `client_work.ClientOutput`."""
  weight = output.update_weight
  if selection is None:
    update = tuple(s + weight * u for s, u in zip(sums.update, output.update))
    row_weights = ()
  else:
    update, row_weights = select_lib.scatter_weighted(
        sums.update, sums.row_weights, keys, output.update, weight,
        selection.table_index)
  probe, probe_norm_squared = (), ()
  if sums.probe_gradient:
    probe = tuple(
        s + p for s, p in zip(sums.probe_gradient, output.probe_gradient))
    probe_norm_squared = sums.probe_norm_squared + output.probe_norm_squared
  return GroupOutput(
      update=update,
      update_weight=sums.update_weight + weight,
      metrics=tf.nest.map_structure(tf.add, sums.metrics, output.metrics),
      probe_gradient=probe,
      probe_weight=sums.probe_weight + 1.0,
      row_weights=row_weights,
      records=(() if record is None else
               tf.nest.map_structure(tf.add, sums.records, record)),
      probe_norm_squared=probe_norm_squared,
      clients=tf.nest.map_structure(tf.add, sums.clients, output.clients))


def _parts(distributor):
  """`(distributor, receive_members or None)` of a (group) distributor."""
  if isinstance(distributor, group_distribution.GroupDistributor):
    return distributor
  return distributor, None


def trains_from_batches(
    client_groups: client_groups_lib.ClientGroups,
    config: client_work_lib.ClientWorkConfig,
    distributor: Union[distributors.Distributor,
                       group_distribution.GroupDistributor]) -> bool:
  """Whether a group's members may train from `client_groups.batches_fn`.

  On their own data, or (Example Transfer) merged with central examples
  that a `GroupDistributor` gives all members at once (`receive_members`);
  not with `federated_select`, whose rows each member remaps.
  """
  distributor, receive_members = _parts(distributor)
  return (client_groups.batches_fn is not None
          and distributor.selection is None
          and (isinstance(config.local_data, client_work_lib.OwnData)
               or receive_members is not None))


def _members_from_batches(distributor, receive_members, config, received,
                          batches):
  """`(inputs, batches)` the members train on at once, or `None`.

  `inputs` are the weights and augmenting gradient every member receives;
  with Example Transfer's merge, `batches` are each member's local and
  transferred examples shuffled and batched as its dataset would be
  (`merged_batches.py`). `None` where that merge would leave a partial
  batch to train on, or `batches` hold only each member's first K batches
  (`lockstep.PaddedBatches`), not its whole data: members then read
  datasets.
  """
  if receive_members is None:
    return distributor.receive(received, None), batches
  if isinstance(batches, lockstep.PaddedBatches):
    return None
  inputs = receive_members(received, batches)
  if not isinstance(config.local_data, client_work_lib.MergedData):
    return inputs, batches
  local_shape = tf.nest.flatten(batches)[0].shape
  size = (local_shape[1] * local_shape[2]
          + tf.nest.flatten(inputs.examples)[0].shape[1])
  batch_size = config.local_data.batch_size
  if not merged_lib.can_merge(size, batch_size, config.num_steps):
    return None
  return inputs, merged_lib.merge_batches(
      batches, inputs.examples, inputs.shuffle_seed, batch_size,
      config.num_steps)


def _receive_member(distributor, received, client_groups, member_id,
                    transfer: bool):
  """What `distributor.receive` gives one member that reads its dataset.

  Two copies of the dataset: keys (or transferred examples) are chosen from
  the first pass of one, training takes the first pass of the other, as the
  per-client process's computations each take a fresh copy. An Example
  Transfer member (`transfer`) whose fingerprint the simulation knows
  (`ClientGroups.fingerprint_fn`) draws from it and reads one copy, to train.
  """
  dataset = client_groups.dataset_fn(member_id)
  if transfer and client_groups.fingerprint_fn is not None:
    return distributor.receive(
        received, dataset, fingerprint=client_groups.fingerprint_fn(member_id))
  return distributor.receive(received, dataset,
                             client_groups.dataset_fn(member_id))


def _checked_sums(member_pass: Callable[[tf.Tensor], GroupOutput],
                  zero: GroupOutput) -> GroupOutput:
  """The group's sums, its members' non-finite updates left out.

  `member_pass(check_finite)` trains every member and sums their outputs,
  checking each member's update for non-finite values where
  `check_finite` (a bool tensor) is true, as the per-client process does.
  The first pass adds the members' updates unchecked, and checks their
  weighted sum once: a member's non-finite update makes that sum
  non-finite (inf or nan; a zero weight or a padding mask times inf is
  nan), so a finite sum is the sum the per-member checks would give. Else a
  second pass retrains the members, checking each. It saves a pass over
  the model's size per member (about a tenth of a CelebA-size member's
  work) at the cost of training twice in a round that holds a non-finite
  update.
  """

  def passes(check_finite, unused_done, unused_sums):
    sums = member_pass(check_finite)
    done = tf.logical_or(check_finite, model_types.all_finite(sums.update))
    return tf.constant(True), done, sums

  _, _, sums = tf.while_loop(
      lambda unused_check, done, unused_sums: tf.logical_not(done), passes,
      (tf.constant(False), tf.constant(False), zero))
  return sums


def build_group_work(
    model: tff.learning.models.FunctionalModel,
    distributor: Union[distributors.Distributor,
                       group_distribution.GroupDistributor],
    config: client_work_lib.ClientWorkConfig,
    optimizer: tff.learning.optimizers.Optimizer,
    client_groups: client_groups_lib.ClientGroups,
    member_records: Optional[group_aggregation.MemberRecords] = None,
) -> tff.Computation:
  """The group's client work: `(<received..., [P,] id[?]> -> GroupOutput)`.

  `received` are the values of `distributor.client_types` (the same for
  every member); for each member id, `client_groups.dataset_fn` gives its
  dataset, `distributor.receive` its inputs and the per-client loop of
  `client_work.build_client_update_fn` its `ClientOutput`. With
  `member_records` (an aggregator that acts on each client's update,
  `group_aggregation.build_group_aggregator`), `P` are what the server sends
  for it (e.g. the clipping norm) and each member's update and weight also
  become a record (e.g. the clipped, weighted update) the group sums. With
  `client_groups.batches_fn` and members training on their own data
  (`trains_from_batches`), members read their batches at once and train
  `client_groups.members_at_once` at a time in lockstep. With
  `client_groups.fingerprint_fn`, Example Transfer's members that read
  datasets draw their central examples from their fingerprints, reading
  their data once instead of twice.

  Args:
    model: The global model.
    distributor: A distributor whose `receive` needs nothing per client but
      the dataset (broadcast, `build_group_select_distributor`), or a
      `group_distribution.GroupDistributor`
      (`build_group_transfer_distributor`).
    config: A `client_work.ClientWorkConfig`.
    optimizer: CLIENTOPTIMIZER.
    client_groups: The `ClientGroups`.
    member_records: The aggregator's `group_aggregation.MemberRecords`, or
      `None`.
  """
  from_batches = trains_from_batches(client_groups, config, distributor)
  distributor, receive_members = _parts(distributor)
  client_update = client_work_lib.build_client_update_fn(
      distributor.client_model, config)
  selection = distributor.selection
  # Merged batches arrive merged: members train on them as their own data.
  batches_update = (client_work_lib.build_batches_update_fn(
      distributor.client_model,
      config._replace(local_data=client_work_lib.OwnData()))
                    if from_batches else None)
  extra = [] if member_records is None else [member_records.parameters_type]
  parameter = tff.StructWithPythonType(
      [*distributor.client_types, *extra, client_groups.group_type], list)
  num_received = len(distributor.client_types)

  @tff.tensorflow.computation(parameter)
  def group_work(inputs):
    received, ids = inputs[:num_received], inputs[len(inputs) - 1]

    def record(update, weight):
      if member_records is None:
        return None
      return member_records.preprocess(inputs[num_received], update, weight)

    def member_pass(check_finite):
      def body(i, sums):
        member = _receive_member(distributor, received, client_groups,
                                 ids[i], transfer=receive_members is not None)
        output = client_update(optimizer, member.weights, member.dataset,
                               member.augmenting_gradient, member.examples,
                               member.shuffle_seed, check_finite)
        return i + 1, _add_member(sums, output, member.keys, selection,
                                  record(output.update, output.update_weight))

      return tf.while_loop(lambda i, _: i < tf.size(ids), body,
                           (tf.constant(0), zero))[1]

    zero_record = (None if member_records is None else record(tuple(
        tf.zeros(s.shape, s.dtype)
        for s in model_types.trainable_specs(model)), tf.constant(0.0)))
    zero = _zero_sums(model, config, selection, zero_record)
    members = (_members_from_batches(distributor, receive_members, config,
                                     received, client_groups.batches_fn(ids))
               if from_batches else None)
    if members is not None:
      # What the server sent is received once, for the whole group.
      sums = _checked_sums(lambda check_finite: lockstep.train_members(
          batches_update, optimizer, members[0], members[1],
          client_groups.members_at_once,
          None if member_records is None else record, zero, check_finite),
                           zero)
    else:
      sums = _checked_sums(member_pass, zero)
    return sums._replace(
        update=tuple(tf.math.divide_no_nan(u, sums.update_weight)
                     for u in sums.update),
        probe_gradient=tuple(tf.math.divide_no_nan(p, sums.probe_weight)
                             for p in sums.probe_gradient),
        probe_norm_squared=(
            tf.math.divide_no_nan(sums.probe_norm_squared, sums.probe_weight)
            if sums.probe_gradient else ()))

  return group_work


def build_group_components(
    model: tff.learning.models.FunctionalModel,
    distributor: Union[distributors.Distributor,
                       group_distribution.GroupDistributor],
    aggregator: Union[aggregators.Aggregator,
                      group_aggregation.GroupAggregator],
    config: client_work_lib.ClientWorkConfig,
    optimizer: tff.learning.optimizers.Optimizer,
    client_groups: client_groups_lib.ClientGroups,
) -> tuple[distributors.Distributor, tff.Computation, aggregators.Aggregator]:
  """The group's client work, and the distributor and aggregator to compose
  it with.

  The group adapters (`group_distribution.GroupDistributor`,
  `group_aggregation.GroupAggregator`) give the group work what its members
  need beyond the per-client components; the process composes their
  per-client parts, which it calls the same way in both modes.

  Returns:
    `(distributor, client_work, aggregator)`.
  """
  member_records = None
  if isinstance(aggregator, group_aggregation.GroupAggregator):
    aggregator, member_records = aggregator
  work = build_group_work(model, distributor, config, optimizer,
                          client_groups, member_records)
  return _parts(distributor)[0], work, aggregator
