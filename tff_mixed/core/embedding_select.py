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
"""Embedding slices by `tff.federated_select`, and their sparse scatter-back.

In the movie task of mixed FL (arXiv:2205.13655, section 4.3, appendix B.3)
the server computes the spreadout regularizer over the whole embedding
table, so a client needs only the rows of the movies in its own data:
`tff.federated_select` sends exactly those rows (and, for gradient transfer,
the same rows of the augmenting gradient), and the client sends back only
their updates. The full table is never broadcast.

Per round and client:

1.  Keys (client): the distinct ids its round's batches use, most frequent
    first when there are more than the budget of `keys_per_client` (ties: the
    smaller id), sorted ascending, padded with row 0 (the padding row) to a
    fixed count, since `federated_select` needs one static key count. Ids
    left out (over budget) are treated as absent by the client: as context
    they are ignored, as a label the example carries no loss.
2.  Rows (select): `federated_select(keys, num_rows - 1, table, gather)`.
3.  Local training (client): the model's local twin, whose table has
    `keys_per_client` rows, on batches remapped to local row indices. Its
    padding slots get no augmenting gradient `w_c g~_c`.
4.  Scatter-back (aggregation): the client uploads `<keys, row updates,
    other updates, weight>`; `federated_aggregate` scatter-adds the weighted
    row updates into a table-shaped accumulator, and each row's weight
    total beside it, and divides the sums by the cohort's total weight.
    Padding slots add nothing, neither to the sums nor to the row totals.

What the round means. The table's update is the cohort's weighted mean of
what the clients did, a client adding zero to a row it did not receive:
`sum_{i holds r} p_i Delta_i[r] / sum_i p_i`. Without gradient transfer a
client leaves the rows it does not hold unchanged in dense FedAvg too (its
loss does not touch them), so with enough keys the round equals dense
FedAvg's (`tests/embedding_select_test.py`). With gradient transfer a
client that received the whole table would also move every row it does not
hold, by `eta K w_c g~_c` (K plain SGD steps on `w_f g_i + w_c g~_c`, where
`g_i` is zero on those rows): steps that do not depend on its data. The
scatter-back therefore also returns, per row, the share of the cohort's
weight that did not hold it, `1 - sum_{i holds r} p_i / sum_i p_i`, and the
finalizer adds those clients' steps (`finalizer.py`): the round is the
broadcast round of Algorithm 1 while each client still receives and sends
only its rows. Averaging over a row's holders only (`/ sum_{i holds r}
p_i`) would instead give rarely held rows larger steps than FedAvg; it is
not done.

The key selection and remapping are pure TF; the TFF computations here are
the select function and the aggregation's four computations. The
distributor that uses them is `distributors.build_select_distributor`, the
aggregator `aggregators.build_scatter_back_aggregator`.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import model_types


class EmbeddingSelection(NamedTuple):
  """How a model's embedding table is sliced per client.

  Attributes:
    table_index: Index of the embedding table in the trainable weights.
    num_rows: Rows of the full table (row 0: padding, never selected as an
      id).
    keys_per_client: Rows each client receives (the static key count).
    local_model: The model's twin whose table has `keys_per_client` rows,
      trained on remapped batches; same other weights.
    ids_fn: `fn(batch) -> int tensor` of the global ids a batch uses (0:
      none).
    remap_fn: `fn(batch, lookup) -> batch` rewriting a batch's global ids to
      local row indices, where `lookup(ids)` maps global ids to local rows
      (-1: not received).
  """

  table_index: int
  num_rows: int
  keys_per_client: int
  local_model: Any
  ids_fn: Callable[[Any], tf.Tensor]
  remap_fn: Callable[[Any, Callable[[tf.Tensor], tf.Tensor]], Any]


def select_keys(dataset: tf.data.Dataset, selection: EmbeddingSelection,
                num_steps=None) -> tf.Tensor:
  """The client's keys for a round: int32 `[keys_per_client]` (step 1 above).

  Args:
    dataset: The client's batched dataset.
    selection: The `EmbeddingSelection`.
    num_steps: K when clients take exactly K steps: only the first K batches
      (cycled if fewer) are trained on, so only they count.
  """
  if num_steps is not None:
    dataset = dataset.repeat().take(num_steps)
  num_rows = selection.num_rows

  def count(counts, batch):
    ids = tf.reshape(tf.cast(selection.ids_fn(batch), tf.int32), [-1])
    ids = tf.boolean_mask(ids, (ids > 0) & (ids < num_rows))
    return counts + tf.math.bincount(ids, minlength=num_rows,
                                     maxlength=num_rows, dtype=tf.int32)

  counts = model_types.reduce_dataset(
      dataset, tf.zeros([num_rows], tf.int32), count)
  # Most frequent first, ties to the smaller id: one integer score, in
  # int64: counts * num_rows passes 2^31 for a table of a million rows and
  # an id used 2,148 times, and int32 would wrap it negative.
  ids = tf.range(num_rows, dtype=tf.int64)
  score = tf.cast(counts, tf.int64) * num_rows + (num_rows - 1 - ids)
  top = tf.math.top_k(score, k=min(selection.keys_per_client, num_rows))
  chosen = tf.where(tf.gather(counts, top.indices) > 0, top.indices,
                    num_rows)  # Sentinel past every id: sorts last.
  keys = tf.sort(chosen)
  # tf.equal, not ==: TFF traces in graph mode, where == compares identity.
  keys = tf.where(tf.equal(keys, num_rows), 0, keys)
  pad = selection.keys_per_client - min(selection.keys_per_client, num_rows)
  return tf.pad(keys, [[0, pad]])


def local_lookup(keys: tf.Tensor, num_rows: int):
  """`lookup(ids)`: global id -> its position in `keys`, -1 if absent."""
  valid = keys > 0
  table = tf.tensor_scatter_nd_update(
      tf.fill([num_rows], -1),
      tf.boolean_mask(keys, valid)[:, tf.newaxis],
      tf.boolean_mask(tf.range(tf.size(keys), dtype=tf.int32), valid))

  def lookup(ids):
    ids = tf.cast(ids, tf.int32)
    inside = (ids > 0) & (ids < num_rows)
    return tf.where(inside, tf.gather(table, tf.clip_by_value(
        ids, 0, num_rows - 1)), -1)

  return lookup


def local_dataset(dataset: tf.data.Dataset, keys: tf.Tensor,
                  selection: EmbeddingSelection) -> tf.data.Dataset:
  """The client's batches with ids rewritten to local rows (step 3)."""
  lookup = local_lookup(keys, selection.num_rows)
  return dataset.map(lambda *batch: selection.remap_fn(
      batch[0] if len(batch) == 1 else batch, lookup))


def build_select_fn(table_type: tff.TensorType) -> tff.Computation:
  """`(<table, int32> -> row)`: the `select_fn` of `federated_select`."""

  @tff.tensorflow.computation(table_type, np.int32)
  def select_row(table, key):
    return tf.gather(table, key)

  return select_row


def rows_from_sequence(rows: tf.data.Dataset, keys_per_client: int,
                       row_shape) -> tf.Tensor:
  """The selected rows as one `[keys_per_client, d]` tensor (client side)."""
  stacked = rows.batch(keys_per_client).get_single_element()
  return tf.reshape(stacked, [keys_per_client, *row_shape])


def padding_mask(keys: tf.Tensor, dtype=tf.float32) -> tf.Tensor:
  """`[keys_per_client, 1]`: 1 for a selected row, 0 for a padding slot.

  Multiplies the `[keys_per_client, d]` rows of a client's local table.
  """
  return tf.cast(keys > 0, dtype)[:, tf.newaxis]


def scatter_weighted(sums, row_weights, keys: tf.Tensor, update,
                     weight: tf.Tensor, table_index: int):
  """Adds one client's weighted update into table-shaped sums (pure TF).

  Args:
    sums: A tuple like the trainable weights (the full table).
    row_weights: float32 `[num_rows]`, per row the weight that trained it.
    keys: The client's int32 `[keys_per_client]` keys.
    update: The client's update, whose table has `keys_per_client` rows.
    weight: The client's weight p_i.
    table_index: Index of the table in the trainable weights.

  Returns:
    `(sums + p_i Delta_i scattered to the keys, row_weights + p_i at the
    keys)`; padding slots add nothing.
  """
  # Under gradient transfer a padding slot may hold a nonzero update;
  # it is no row of the client's, so it must not reach row 0.
  mask = padding_mask(keys)
  new_sums = []
  for i, (s, u) in enumerate(zip(sums, update)):
    if i == table_index:
      new_sums.append(tf.tensor_scatter_nd_add(
          s, keys[:, tf.newaxis], weight * u * mask))
    else:
      new_sums.append(s + weight * u)
  new_row_weights = tf.tensor_scatter_nd_add(
      row_weights, keys[:, tf.newaxis], weight * mask[:, 0])
  return tuple(new_sums), new_row_weights


def build_sparse_mean(trainable_type, table_index: int, keys_per_client: int):
  """The scatter-back aggregation (step 4).

  Returns `aggregate(keys@CLIENTS, update@CLIENTS, weight@CLIENTS) ->
  <mean_update, unheld_fraction>@SERVER`, a Python function of federated
  values (call it inside a `tff.federated_computation`). The client values
  are the local update (a tuple like the trainable weights whose table has
  `keys_per_client` rows), its keys and its weight p_i. The results:

  *   `mean_update` (the full trainable type): `sum_i p_i Delta_i / sum_i
      p_i`, where a client's Delta_i is zero on the table rows it did not
      select;
  *   `unheld_fraction` (float32 `[num_rows]`): for each table row,
      `1 - sum_{i selected r} p_i / sum_i p_i`, the share of the cohort's
      weight that did not hold the row (1 for a row nobody selected, 0 for a
      row everybody did, and 0 for every row when no client has weight:
      then nobody trained).

  Padding slots (key 0) add nothing to either. Built on
  `tff.federated_aggregate`, whose accumulator is the dense table-shaped
  weighted sum, the per-row weight totals and the total weight.
  """
  zero, merge, report = sparse_mean_computations(trainable_type,
                                                 table_index)
  accumulator_type = zero.type_signature.result
  local_type = tff.StructWithPythonType(
      [tff.TensorType(t.dtype, [keys_per_client, *t.shape[1:]])
       if i == table_index else t for i, t in enumerate(trainable_type)],
      tuple)
  value_type = tff.StructWithPythonType(
      [tff.TensorType(np.int32, [keys_per_client]), local_type,
       tff.TensorType(np.float32)], tuple)

  @tff.tensorflow.computation(accumulator_type, value_type)
  def accumulate(accumulator, value):
    sums, row_weights, total = accumulator
    keys, update, weight = value
    new_sums, new_row_weights = scatter_weighted(sums, row_weights, keys,
                                                 update, weight, table_index)
    return new_sums, new_row_weights, total + weight

  def aggregate(keys, update, weight):
    return tff.federated_aggregate(
        tff.federated_zip((keys, update, weight)), zero(), accumulate, merge,
        report)

  return aggregate


def sparse_mean_computations(trainable_type, table_index: int):
  """`(zero, merge, report)` over the scatter-back's accumulator.

  The accumulator is `<table-shaped weighted sums, float32[num_rows] row
  weight totals, float32 total weight>`; `report` divides the sums by the
  total and gives each row's unheld share.
  """
  full_specs = [tf.TensorSpec(t.shape, t.dtype) for t in trainable_type]
  num_rows = full_specs[table_index].shape[0]

  @tff.tensorflow.computation
  def zero():
    return (model_types.zeros_of(full_specs),
            tf.zeros([num_rows], tf.float32), tf.constant(0.0, tf.float32))

  accumulator_type = zero.type_signature.result

  @tff.tensorflow.computation(accumulator_type, accumulator_type)
  def merge(a, b):
    return (tuple(x + y for x, y in zip(a[0], b[0])), a[1] + b[1],
            a[2] + b[2])

  @tff.tensorflow.computation(accumulator_type)
  def report(accumulator):
    sums, row_weights, total = accumulator
    held = tf.math.divide_no_nan(row_weights, total)
    # Without a client of weight nobody trained: no row is left to complete.
    unheld = tf.where(total > 0, 1.0 - held, tf.zeros_like(held))
    return (tuple(tf.math.divide_no_nan(s, total) for s in sums), unheld)

  return zero, merge, report
