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
"""Client groups: the fast simulation mode, many clients per CLIENTS member.

TFF's simulation runtime pays a fixed cost for every CLIENTS-placed member of
a round: a dispatch of the client computation, a dataset built and
serialized in Python, a value moved to the worker and back. With a few
local SGD steps per client that cost is most of the round (BENCHMARKS.md).
In this mode each CLIENTS member is a *group* of clients: its value is the
group's client ids (`int32[?]`, `int64[?]` or `string[?]`), and one
`tff.tensorflow.computation` trains every member in turn (a `tf.while_loop`),
reading the member's dataset from `ClientGroups.dataset_fn` inside the
computation, restarting from what the server sent, exactly as the per-client
client work does (`client_work.build_client_update_fn`, the same function).
Clients of equal shape can instead give their batches as tensors
(`ClientGroups.batches_fn`): then `members_at_once` members train in
lockstep under `tf.vectorized_map` (`lockstep.py`; the same steps on
tensors), which turns a small model's many tiny steps
into a few batched ones; Example Transfer's members too, their transferred
examples merged into their batches as tensors (`merged_batches.py`).
The group returns what aggregation needs (`GroupOutput`):

*   the weighted mean of its members' updates and their weight total, so
    that the weighted mean over groups is the weighted mean over clients;
*   the sums of its members' unfinalized metrics and of their counts;
*   the mean of its members' probe gradients and their count (diagnostics);
*   with `federated_select` (the embedding table of arXiv:2205.13655, section
    4.3): the members' row updates scattered into the table's shape and the
    per-row weight totals, as the scatter-back accumulates them.

The TFF processes stay the semantics: a group simulates its members; what a
deployment sends and uploads is the per-client process's. Aggregation that
acts on each client's update runs in the group when it is a sum of
per-member records (`group_aggregation.py`: DP, TFF's adaptive clipping and
zeroing of `tff.learning.robust_aggregator`): the server sends the group the
norm it would send each client, and the group uploads the sum of its
members' records (`GroupOutput.records`). Noise added or secure sums on
each client cannot be reproduced by a group, and the builders refuse them
(`group_aggregation.check_aggregators`).
"""

from collections.abc import Callable, Sequence
import math
import os
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import aggregators
from tff_mixed.core import client_work as client_work_lib
from tff_mixed.core import distributors
from tff_mixed.core import embedding_select as select_lib
from tff_mixed.core import lockstep
from tff_mixed.core import merged_batches as merged_lib
from tff_mixed.core import model_types

_ID_DTYPES = (np.int32, np.int64, np.str_)

# The `clients_per_group` that asks for one group per core.
AUTO = 0


class ClientGroups(NamedTuple):
  """How a group's members find their data.

  Attributes:
    dataset_fn: `fn(client_id) -> tf.data.Dataset` of the client's batches
      (in the model's input structure), pure TF: it is traced into the group
      computation and called with a scalar id tensor there, so the data is
      read where the group trains (from constants, files or TFF's SQL client
      data) and never built per client in Python.
    id_dtype: The numpy dtype of client ids: `np.int32`, `np.int64` or
      `np.str_`.
    batches_fn: Optional, for clients of equal shape: `fn(ids) -> batches`,
      the batches of a group's members at once as tensors, each leaf
      `[members, n, B, ...]` (every member `n` batches of `B` examples, the
      batches `dataset_fn` gives, in its order), pure TF like `dataset_fn`.
      With it, members train from tensors, `members_at_once` of them in
      lockstep (`tf.vectorized_map`), with no dataset per member: the same
      steps and numbers up to float summation order (tests/
      client_groups_test.py; `lockstep.py`, whose `array_batches_fn`
      builds one from arrays). Not with `federated_select`, whose members
      read `dataset_fn`; with Example Transfer, each member's batches (its
      whole data) merge with its transferred examples as tensors, unless
      its K steps would reach a partial merged batch (`merged_batches.
      can_merge`). Clients of unequal size may be padded to one shape:
      `batches_fn` then returns a `lockstep.PaddedBatches` (built by
      `lockstep.padded_batches_fn` from `dataset_fn`), for a model whose
      loss and metrics ignore rows of zeros.
    members_at_once: With `batches_fn`, how many members train in lockstep
      (0: the whole group). Small models gain most (a group's many small
      steps become one batched step); a large model's members each stream
      its weights, so give 1: they then train one after another from the
      tensors, with no dataset each (BENCHMARKS.md, round_time).
  """

  dataset_fn: Callable[[tf.Tensor], tf.data.Dataset]
  id_dtype: Any = np.int32
  batches_fn: Optional[Callable[[tf.Tensor], Any]] = None
  members_at_once: int = 0

  @property
  def group_type(self) -> tff.TensorType:
    """`id[?]`: the TFF type of one group's value, its members' ids."""
    return tff.TensorType(self.id_dtype, [None])


def check_client_groups(client_groups: Any) -> None:
  """Raises `TypeError` unless `client_groups` is `None` or valid."""
  if client_groups is None:
    return
  if not isinstance(client_groups, ClientGroups):
    raise TypeError('`client_groups` must be a `ClientGroups` or `None`, got '
                    f'{type(client_groups).__name__}.')
  if not callable(client_groups.dataset_fn):
    raise TypeError('`ClientGroups.dataset_fn` must be callable, got '
                    f'{type(client_groups.dataset_fn).__name__}.')
  if np.dtype(client_groups.id_dtype).type not in _ID_DTYPES:
    raise TypeError('`ClientGroups.id_dtype` must be np.int32, np.int64 or '
                    f'np.str_, got {client_groups.id_dtype!r}.')
  if client_groups.batches_fn is not None and not callable(
      client_groups.batches_fn):
    raise TypeError('`ClientGroups.batches_fn` must be callable or None, got '
                    f'{type(client_groups.batches_fn).__name__}.')
  members_at_once = client_groups.members_at_once
  if isinstance(members_at_once, bool) or not isinstance(
      members_at_once, (int, np.integer)) or members_at_once < 0:
    raise ValueError('`ClientGroups.members_at_once` must be an int >= 0 '
                     f'(0: the whole group), got {members_at_once!r}.')


def default_clients_per_group(cohort_size: int,
                              num_groups: Optional[int] = None) -> int:
  """Clients per group for one group per core (or `num_groups` groups)."""
  if num_groups is None:
    num_groups = len(os.sched_getaffinity(0)) if hasattr(
        os, 'sched_getaffinity') else (os.cpu_count() or 1)
  return max(1, math.ceil(cohort_size / max(1, num_groups)))


def check_clients_per_group(clients_per_group: Any) -> int:
  """`clients_per_group` as an int; `ValueError` unless an int >= 0."""
  if isinstance(clients_per_group, bool) or not isinstance(
      clients_per_group, (int, np.integer)) or clients_per_group < 0:
    raise ValueError('`clients_per_group` must be an int >= 0 (0: one group '
                     f'per core), got {clients_per_group!r}.')
  return int(clients_per_group)


def clients_per_group_for(clients_per_group: int, cohort_size: int) -> int:
  """The group size a `clients_per_group` setting gives a cohort.

  The one reading of the `clients_per_group` setting (the binaries'
  `--clients_per_group`, `runner.run_training`'s and `run_async`'s
  argument): `AUTO` (0) splits the cohort into one group per core
  (`default_clients_per_group`), a positive int is the group size itself
  (1: the per-client path).

  Args:
    clients_per_group: `AUTO` (0) or the clients per group.
    cohort_size: The number of clients in the round.

  Returns:
    The clients per group, >= 1 (for `split_cohort`).

  Raises:
    ValueError: If `clients_per_group` is not an int >= 0.
  """
  clients_per_group = check_clients_per_group(clients_per_group)
  if clients_per_group == AUTO:
    return default_clients_per_group(cohort_size)
  return clients_per_group


def split_cohort(client_ids: Sequence[Any],
                 clients_per_group: int) -> list[np.ndarray]:
  """A round's cohort as groups of at most `clients_per_group` clients.

  `ceil(n / clients_per_group)` groups of consecutive clients, whose sizes
  differ by at most one (`np.array_split`); the order of the clients is kept,
  so the groups hold the cohort exactly once.
  """
  if isinstance(clients_per_group, bool) or not isinstance(
      clients_per_group, (int, np.integer)) or clients_per_group < 1:
    raise ValueError('`clients_per_group` must be a positive integer, got '
                     f'{clients_per_group!r}.')
  ids = np.asarray(client_ids)
  if ids.ndim != 1 or ids.size == 0:
    raise ValueError('`client_ids` must be a non-empty sequence of ids.')
  return list(np.array_split(ids, math.ceil(ids.size / clients_per_group)))


def array_dataset_fn(
    client_arrays: Sequence[Any],
    to_batches: Callable[[tf.data.Dataset], tf.data.Dataset],
) -> Callable[[tf.Tensor], tf.data.Dataset]:
  """A `ClientGroups.dataset_fn` over in-memory clients, ids 0, 1, ...

  The clients' examples are concatenated into one array per leaf, which the
  group computation holds as constants (once per group and round, not a
  dataset per client), and client `i` slices its rows out.

  Args:
    client_arrays: Per client, a structure of numpy arrays with one row per
      example (the same structure and trailing shapes for every client).
    to_batches: `fn(dataset of single examples) -> dataset of batches` (e.g.
      `lambda d: d.batch(5)`), applied to each client's slice.

  Returns:
    `dataset_fn(client_id)` for int32 or int64 ids.
  """
  if not client_arrays:
    raise ValueError('`client_arrays` must hold at least one client.')
  sizes = [len(tf.nest.flatten(a)[0]) for a in client_arrays]
  offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
  stacked = tf.nest.map_structure(lambda *leaves: np.concatenate(leaves),
                                  *client_arrays)

  def dataset_fn(client_id):
    bounds = tf.constant(offsets)
    client_id = tf.cast(client_id, tf.int64)
    start, stop = bounds[client_id], bounds[client_id + 1]
    rows = tf.nest.map_structure(lambda a: tf.constant(a)[start:stop],
                                 stacked)
    return to_batches(tf.data.Dataset.from_tensor_slices(rows))

  return dataset_fn


class GroupOutput(NamedTuple):
  """What one group of clients computes in a round.

  Attributes:
    update: `sum_i p_i Delta_i / sum_i p_i` over the members, like the
      trainable weights (the whole table with `federated_select`, each
      member's rows scattered to their keys); zero if the weight is zero.
    update_weight: `sum_i p_i` (float32).
    metrics: The sum of the members' unfinalized metrics.
    probe_gradient: The mean of the members' probe gradients, or `()`.
    num_clients: The number of members (float32): the weight of
      `probe_gradient` and `probe_norm_squared` in the means over groups.
    row_weights: With `federated_select`, float32 `[num_rows]`, per table row
      the members' weight that trained it; else `()`.
    records: With an aggregator that acts on each client's update, the sum
      of the members' records (`aggregators.MemberRecords`: e.g. their
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
  num_clients: Any
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
      num_clients=tf.constant(0.0, tf.float32),
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
      num_clients=sums.num_clients + 1.0,
      row_weights=row_weights,
      records=(() if record is None else
               tf.nest.map_structure(tf.add, sums.records, record)),
      probe_norm_squared=probe_norm_squared,
      clients=tf.nest.map_structure(tf.add, sums.clients, output.clients))


def trains_from_batches(client_groups: ClientGroups,
                        config: client_work_lib.ClientWorkConfig,
                        distributor: distributors.Distributor) -> bool:
  """Whether a group's members may train from `client_groups.batches_fn`.

  On their own data, or (Example Transfer) merged with central examples
  that the distributor gives all members at once (`receive_members`); not
  with `federated_select`, whose rows each member remaps.
  """
  return (client_groups.batches_fn is not None
          and distributor.selection is None
          and (isinstance(config.local_data, client_work_lib.OwnData)
               or distributor.receive_members is not None))


def _members_from_batches(distributor, config, received, batches):
  """`(inputs, batches)` the members train on at once, or `None`.

  `inputs` are the weights and augmenting gradient every member receives;
  with Example Transfer's merge, `batches` are each member's local and
  transferred examples shuffled and batched as its dataset would be
  (`merged_batches.py`). `None` where that merge would leave a partial
  batch to train on, or `batches` hold only each member's first K batches
  (`lockstep.PaddedBatches`), not its whole data: members then read
  datasets.
  """
  if distributor.receive_members is None:
    return distributor.receive(received, None), batches
  if isinstance(batches, lockstep.PaddedBatches):
    return None
  inputs = distributor.receive_members(received, batches)
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
    distributor: distributors.Distributor,
    config: client_work_lib.ClientWorkConfig,
    optimizer: tff.learning.optimizers.Optimizer,
    client_groups: ClientGroups,
    member_records: Optional[aggregators.MemberRecords] = None,
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
  `client_groups.members_at_once` at a time in lockstep.

  Args:
    model: The global model.
    distributor: A distributor whose `receive` needs nothing per client but
      the dataset (broadcast, `build_group_select_distributor`,
      `build_group_transfer_distributor`).
    config: A `client_work.ClientWorkConfig`.
    optimizer: CLIENTOPTIMIZER.
    client_groups: The `ClientGroups`.
    member_records: The aggregator's `aggregators.MemberRecords`, or `None`.
  """
  client_update = client_work_lib.build_client_update_fn(
      distributor.client_model, config)
  selection = distributor.selection
  from_batches = trains_from_batches(client_groups, config, distributor)
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
        # Two copies: keys (or transferred examples) are chosen from the
        # first pass of one, training takes the first pass of the other, as
        # the per-client process's computations each take a fresh copy.
        member = distributor.receive(received,
                                     client_groups.dataset_fn(ids[i]),
                                     client_groups.dataset_fn(ids[i]))
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
    members = (_members_from_batches(distributor, config, received,
                                     client_groups.batches_fn(ids))
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
        probe_gradient=tuple(tf.math.divide_no_nan(p, sums.num_clients)
                             for p in sums.probe_gradient),
        probe_norm_squared=(
            tf.math.divide_no_nan(sums.probe_norm_squared, sums.num_clients)
            if sums.probe_gradient else ()))

  return group_work


def is_group_work(client_work: tff.Computation) -> bool:
  """Whether a client work computation is a group's (`build_group_work`)."""
  result = client_work.type_signature.result
  return isinstance(result, tff.StructType) and hasattr(result, 'num_clients')
