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
`tff.tensorflow.computation` (`group_work.py`) trains every member in turn (a `tf.while_loop`),
reading the member's dataset from `ClientGroups.dataset_fn` inside the
computation, restarting from what the server sent, exactly as the per-client
client work does (`client_work.build_client_update_fn`, the same function).
Clients of equal shape can instead give their batches as tensors
(`ClientGroups.batches_fn`): then `members_at_once` members train in
lockstep under `tf.vectorized_map` (`lockstep.py`; the same steps on
tensors), which turns a small model's many tiny steps
into a few batched ones; Example Transfer's members too, their transferred
examples merged into their batches as tensors (`merged_batches.py`).
The group returns what aggregation needs (`group_work.GroupOutput`):

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
members' records (`group_work.GroupOutput.records`). Noise added or secure sums on
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
    fingerprint_fn: Optional: `fn(client_id) -> int64 scalar`, the
      client's `transfer_select.data_fingerprint` of `dataset_fn(client_id)`
      (pure TF), for a simulation that knows each client's examples
      beforehand (e.g. the `fingerprint_of_hashes` of their
      `example_hashes`, computed once). With it, an Example Transfer member
      that reads a dataset draws its central examples from its id, with no
      pass over its data before its training pass; the same draw, so the
      same numbers.
  """

  dataset_fn: Callable[[tf.Tensor], tf.data.Dataset]
  id_dtype: Any = np.int32
  batches_fn: Optional[Callable[[tf.Tensor], Any]] = None
  members_at_once: int = 0
  fingerprint_fn: Optional[Callable[[tf.Tensor], tf.Tensor]] = None

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
  if client_groups.fingerprint_fn is not None and not callable(
      client_groups.fingerprint_fn):
    raise TypeError('`ClientGroups.fingerprint_fn` must be callable or None, '
                    f'got {type(client_groups.fingerprint_fn).__name__}.')
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
