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
"""A client group's members trained in lockstep, from tensors.

`group_work.py` trains a group's members one after another, each from a
dataset. For clients of equal shape, whose batches a `ClientGroups.batches_fn`
gives as tensors (`array_batches_fn` for in-memory arrays,
`store_batches_fn` for an `ExampleStore`), this module
trains several members at once (or, with `members_at_once=1`, one after
another from tensors): `tf.vectorized_map` turns the per-client
steps (`client_work.build_batches_update_fn`) into batched ones, so that a
small model's many tiny matrix products become a few large ones, and no
member needs a dataset or an iterator. The arithmetic per member is the
per-client process's; only the order of the group's sums changes
(tests/client_groups_test.py, `BatchesEqualPerClientTest`). Clients of
unequal size join in when padded to one shape (`padded_batches_fn`,
`PaddedBatches`), for a model whose loss ignores the padding rows: the
character LM, whose many clients each run a 100-step recurrence.
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf


def array_batches_fn(
    client_arrays: Sequence[Any],
    batch_size: int) -> Callable[[tf.Tensor], Any]:
  """A `ClientGroups.batches_fn` over in-memory clients of equal shape.

  The tensor twin of `array_dataset_fn(client_arrays, lambda d:
  d.batch(batch_size))`: every client holds the same number of examples, a
  multiple of `batch_size`, so each is `n` full batches, and the group
  computation gathers its members' batches from one constant per leaf.

  Args:
    client_arrays: Per client, a structure of numpy arrays with one row per
      example (the same structure and shapes for every client).
    batch_size: Examples per batch.

  Returns:
    `batches_fn(ids)` for int32 or int64 ids: each leaf `[len(ids), n,
    batch_size, ...]`.

  Raises:
    ValueError: If clients differ in size or a size is not a positive
      multiple of `batch_size`.
  """
  if not client_arrays:
    raise ValueError('`client_arrays` must hold at least one client.')
  sizes = {len(tf.nest.flatten(a)[0]) for a in client_arrays}
  size = sizes.pop()
  if sizes or size == 0 or size % batch_size:
    raise ValueError('Clients held as batches must all hold the same '
                     'number of examples, a positive multiple of the batch '
                     f'size {batch_size}; got sizes {sorted(sizes | {size})}.')
  stacked = tf.nest.map_structure(
      lambda *leaves: np.stack([
          leaf.reshape((size // batch_size, batch_size) + leaf.shape[1:])
          for leaf in leaves]), *client_arrays)

  def batches_fn(ids):
    ids = tf.cast(ids, tf.int64)
    return tf.nest.map_structure(lambda a: tf.gather(tf.constant(a), ids),
                                 stacked)

  return batches_fn


def store_batches_fn(store: Any, client_rows: Any,
                     batch_size: int) -> Callable[[tf.Tensor], Any]:
  """A `ClientGroups.batches_fn` over clients of equal size in a store.

  The tensor twin of a `dataset_fn` that reads client `i`'s examples
  `client_rows[i]` from an `example_store.ExampleStore` in batches of
  `batch_size`: a group reads all its members' examples in one
  `store.read`, with no dataset or iterator per member. For a large model
  (e.g. CelebA's 21,168 inputs) give `members_at_once=1`: members then
  train one after another from these tensors.

  Args:
    store: An `example_store.ExampleStore` (anything with its `read`).
    client_rows: int array `[num_clients, n]`: per client, the indices of
      its `n` examples in the store, in training order; `n` a positive
      multiple of `batch_size`.
    batch_size: Examples per batch.

  Returns:
    `batches_fn(ids)` for int32 or int64 ids: each leaf `[len(ids),
    n // batch_size, batch_size, ...]`.

  Raises:
    ValueError: If `client_rows` is not such an array.
  """
  rows = np.asarray(client_rows)
  if (rows.ndim != 2 or not np.issubdtype(rows.dtype, np.integer)
      or rows.size == 0 or rows.shape[1] % batch_size):
    raise ValueError('`client_rows` must be a non-empty int array [clients, '
                     'n] with n a multiple of the batch size '
                     f'{batch_size}; got shape {rows.shape}, dtype '
                     f'{rows.dtype}.')
  num_batches = rows.shape[1] // batch_size

  def batches_fn(ids):
    indices = tf.gather(tf.constant(rows, tf.int64), tf.cast(ids, tf.int64))
    return tf.nest.map_structure(
        lambda t: tf.reshape(t, [-1, num_batches, batch_size, *t.shape[1:]]),
        store.read(tf.reshape(indices, [-1])))

  return batches_fn


class PaddedBatches(NamedTuple):
  """Batches of clients of unequal size, padded to one shape.

  What a `ClientGroups.batches_fn` may return instead of bare batches when
  its clients hold different numbers of examples (`padded_batches_fn`).

  Attributes:
    batches: Every leaf `[members, n, B, ...]` (`[n, B, ...]` for one
      member): each batch's real rows first, then rows of zeros.
    num_rows: int32 `[members, n]`, the real rows of each batch. They are
      each batch's example count (the client's weight and its metrics'
      `num_examples`); the zero rows must carry no loss and no metric in
      the model, as the character LM's padding targets
      (`char_vocabulary.PAD_ID`) do.
  """

  batches: Any
  num_rows: Any


def padded_batches_fn(
    dataset_fn: Callable[[tf.Tensor], tf.data.Dataset], num_batches: int,
    batch_size: int) -> Callable[[tf.Tensor], PaddedBatches]:
  """A `ClientGroups.batches_fn` from a `dataset_fn`, for unequal clients.

  Each member's first `num_batches` batches of `dataset_fn(id).repeat()`
  (the batches a client taking `num_batches` local steps trains on, in its
  order, a reshuffling dataset reshuffled as `repeat` reshuffles it), each
  padded with rows of zeros to `batch_size`; a member without data gets
  `num_batches` batches of zeros with no real row, and takes no step. The
  datasets are still built one member at a time, but only to be read:
  training then runs members in lockstep. Only for models whose loss and
  metrics ignore rows of zeros (see `PaddedBatches`).

  Args:
    dataset_fn: `ClientGroups.dataset_fn`: `fn(id) -> tf.data.Dataset` of
      batches of at most `batch_size` rows, every leaf's shape static but
      for its rows.
    num_batches: Batches per member, the local steps K.
    batch_size: Rows of a full batch, B.

  Returns:
    `batches_fn(ids) -> PaddedBatches`.
  """
  for name, value in (('num_batches', num_batches),
                      ('batch_size', batch_size)):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  options = tf.data.Options()
  options.experimental_optimization.apply_default_optimizations = False
  options.autotune.enabled = False

  def batches_fn(ids):
    # One batch's spec with B rows, from a trace of `dataset_fn` apart: the
    # members' traces inside `tf.map_fn` need it before they run.
    specs = tf.nest.map_structure(
        lambda s: tf.TensorSpec([batch_size, *s.shape[1:]], s.dtype),
        tf.function(dataset_fn).get_concrete_function(
            tf.TensorSpec([], ids.dtype)).structured_outputs.element_spec)
    zeros = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), specs)

    def pad(*element):
      element = element[0] if len(element) == 1 else element
      rows = tf.shape(tf.nest.flatten(element)[0])[0]
      padded = tf.nest.map_structure(
          lambda t, s: tf.ensure_shape(
              tf.pad(t, [[0, batch_size - rows]] + [[0, 0]] *
                     (s.shape.rank - 1)), s.shape), element, specs)
      return padded, tf.cast(rows, tf.int32)

    def member(client_id):
      # A member without data yields no batch: zero batches fill its steps.
      filler = tf.data.Dataset.from_tensors(
          (zeros, tf.constant(0, tf.int32))).repeat(num_batches)
      batches, rows = dataset_fn(client_id).repeat().take(num_batches).map(
          pad).concatenate(filler).take(num_batches).batch(
              num_batches).with_options(options).get_single_element()
      return PaddedBatches(batches, rows)

    return tf.map_fn(member, ids, fn_output_signature=PaddedBatches(
        tf.nest.map_structure(
            lambda s: tf.TensorSpec([num_batches, *s.shape], s.dtype), specs),
        tf.TensorSpec([num_batches], tf.int32)))

  return batches_fn


def _stacked(value, like, count):
  """`value` with a leading axis of `count` members, `like` one member's.

  `tf.vectorized_map` returns a value that is the same for every member
  (e.g. the example count of equal clients) unstacked; it is repeated.
  """
  if value.shape.rank == like.shape.rank + 1:
    return value
  return tf.broadcast_to(value, tf.concat([[count], tf.shape(value)], 0))


def _add_members(sums, outputs, records, count):
  """`sums` plus `count` members' `ClientOutput`s stacked by `vectorized_map`.

  What `client_groups`' member loop adds one member at a time, taken over
  the stack at once: `sums` is the group's `GroupOutput` of sums (its update
  unnormalized), without `federated_select`'s rows.
  """

  def stacked(value, like):
    return _stacked(value, like, count)

  weights = stacked(outputs.update_weight, sums.update_weight)

  def total(value, like):
    return like + tf.reduce_sum(stacked(value, like), axis=0)

  def weighted_total(value, like):
    value = stacked(value, like)
    shape = tf.concat([[count], tf.ones([like.shape.rank], tf.int32)], 0)
    return like + tf.reduce_sum(tf.reshape(weights, shape) * value, axis=0)

  probe, probe_norm_squared = (), ()
  if sums.probe_gradient:
    probe = tuple(total(p, s) for s, p in zip(sums.probe_gradient,
                                              outputs.probe_gradient))
    probe_norm_squared = total(outputs.probe_norm_squared,
                               sums.probe_norm_squared)
  return sums._replace(
      update=tuple(weighted_total(u, s)
                   for s, u in zip(sums.update, outputs.update)),
      update_weight=total(weights, sums.update_weight),
      metrics=tf.nest.map_structure(lambda s, m: total(m, s), sums.metrics,
                                    outputs.metrics),
      probe_gradient=probe,
      probe_weight=sums.probe_weight + tf.cast(count, tf.float32),
      records=(() if records is None else tf.nest.map_structure(
          lambda s, r: total(r, s), sums.records, records)),
      probe_norm_squared=probe_norm_squared,
      clients=tf.nest.map_structure(lambda s, c: total(c, s), sums.clients,
                                    outputs.clients))


def train_members(batches_update: Callable[..., Any], optimizer: Any,
                  received: Any, batches: Any, members_at_once: int,
                  record: Optional[Callable[[Any, Any], Any]],
                  zero: Any, check_finite: Optional[tf.Tensor] = None) -> Any:
  """The group's sums after training its members in lockstep.

  Args:
    batches_update: `client_work.build_batches_update_fn`'s function.
    optimizer: CLIENTOPTIMIZER.
    received: The `distributors.ClientInputs` every member trains from (its
      weights and augmenting gradient; the same for all members).
    batches: The members' batches, each leaf `[members, n, B, ...]`.
    members_at_once: Members per `tf.vectorized_map` (0: all; 1: one
      member at a time, without `tf.vectorized_map`).
    record: `fn(update, weight) -> record` of an aggregator that acts on
      each client's update, or `None`.
    zero: The group's zero sums (`client_groups.GroupOutput`), with a zero
      record when `record` is given.
    check_finite: `batches_update`'s: whether each member's update is
      checked for non-finite values (by default, yes).

  Returns:
    `zero` plus every member's output, as `client_groups`' member loop sums
    them.
  """
  num_members = tf.shape(tf.nest.flatten(batches)[0])[0]
  chunk = (tf.maximum(num_members, 1) if members_at_once == 0 else
           tf.constant(members_at_once, tf.int32))

  def train(member_batches):
    num_rows = None
    if isinstance(member_batches, PaddedBatches):
      member_batches, num_rows = member_batches
    return batches_update(optimizer, received.weights, member_batches,
                          received.augmenting_gradient, check_finite,
                          num_rows)

  def records_of(outputs, count):
    if record is None:
      return None
    # One member at a time: the aggregators' records (norms, quantile
    # counts) come out of `tf.vectorized_map` with wrong static shapes.
    updates = tuple(_stacked(u, like, count)
                    for u, like in zip(outputs.update, zero.update))
    weights = _stacked(outputs.update_weight, zero.update_weight, count)
    return tf.map_fn(
        lambda uw: record(uw[0], uw[1]), (updates, weights),
        fn_output_signature=tf.nest.map_structure(tf.TensorSpec.from_tensor,
                                                  zero.records))

  def body(start, sums):
    stop = tf.minimum(start + chunk, num_members)
    if members_at_once == 1:
      # One member: its steps as written, stacked as a chunk of one; pfor's
      # batched form of the steps would only add work.
      outputs = tf.nest.map_structure(
          lambda t: t[tf.newaxis],
          train(tf.nest.map_structure(lambda b: b[start], batches)))
    else:
      outputs = tf.vectorized_map(
          train, tf.nest.map_structure(lambda b: b[start:stop], batches))
    return stop, _add_members(sums, outputs,
                              records_of(outputs, stop - start),
                              stop - start)

  _, sums = tf.while_loop(lambda i, _: i < num_members, body,
                          (tf.constant(0), zero))
  return sums
