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
"""Aggregators: how the clients' updates reach the server.

The third component of a mixed FL round (arXiv:2205.13655, Algorithms 1-2:
the weighted mean of the client deltas). Client values leave the clients
only here, through the model aggregator, and through the metrics aggregator
and the opt-in diagnostic mean that the process applies itself. Two
aggregators, both Python functions of federated values (intrinsics only):

*   `build_mean_aggregator`: a `tff.aggregators.WeightedAggregationFactory`'s
    process over the trainable type, `(<state@SERVER, update@CLIENTS,
    float32@CLIENTS> -> <state, mean_update, measurements>@SERVER)`; what
    TFF's FedAvg does, with the same clipping, DP or secure-sum options.
*   `build_scatter_back_aggregator`: with `federated_select`, the client
    uploads `<keys, row updates, other updates, weight>` and one
    `federated_aggregate` scatter-adds them
    (`embedding_select.build_sparse_mean`); it also returns each table row's
    share of the cohort's weight, which 2-way GT's recovery of g~_f needs.
    Its state and measurements are `()`.
*   `build_group_scatter_back_aggregator`: the same mean and row weight
    shares from groups of clients (`client_groups.py`), each of which has
    already scattered its members' rows into the table's shape.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import embedding_select as select_lib


class AggregatorOutput(NamedTuple):
  """Server values of one aggregation.

  Attributes:
    state: The aggregator's new state.
    result: The mean update, like the trainable weights.
    measurements: The aggregator's measurements (metrics['aggregator']).
    row_weight_fraction: float32[num_rows]@SERVER, per table row the share
      of the cohort's weight that trained it (scatter-back only), or `None`.
  """

  state: Any
  result: Any
  measurements: Any
  row_weight_fraction: Any = None


class Aggregator(NamedTuple):
  """An aggregator (see the module docstring).

  Attributes:
    initialize: `( -> state@SERVER)`, a Python function of no arguments to
      call inside the process's federated `initialize`.
    aggregate: `(state@SERVER, ClientOutput@CLIENTS, keys@CLIENTS or None)
      -> AggregatorOutput`.
  """

  initialize: Callable[[], Any]
  aggregate: Callable[[Any, Any, Optional[Any]], AggregatorOutput]


def build_mean_aggregator(
    factory: tff.aggregators.WeightedAggregationFactory,
    trainable_type: tff.Type) -> Aggregator:
  """The weighted mean of the updates by `factory`'s aggregation process."""
  process = factory.create(trainable_type, tff.TensorType(np.float32))

  def aggregate(state, client_outputs, keys):
    del keys  # Dense updates.
    output = process.next(state, client_outputs.update,
                          client_outputs.update_weight)
    return AggregatorOutput(output.state, output.result, output.measurements)

  return Aggregator(process.initialize, aggregate)


def build_scatter_back_aggregator(selection: select_lib.EmbeddingSelection,
                                  trainable_type: tff.Type) -> Aggregator:
  """The weighted mean of row updates scattered back into the table."""
  sparse_mean = select_lib.build_sparse_mean(
      trainable_type, selection.table_index, selection.keys_per_client)

  def initialize():
    return tff.federated_value((), tff.SERVER)

  def aggregate(state, client_outputs, keys):
    mean_update, row_weight_fraction = sparse_mean(
        keys, client_outputs.update, client_outputs.update_weight)
    return AggregatorOutput(state, mean_update,
                            tff.federated_value((), tff.SERVER),
                            row_weight_fraction)

  return Aggregator(initialize, aggregate)


def build_group_scatter_back_aggregator(
    selection: select_lib.EmbeddingSelection,
    trainable_type: tff.Type) -> Aggregator:
  """The scatter-back's results from `client_groups.GroupOutput`s.

  A group uploads its members' weighted mean update (table-shaped), their
  weight total and their per-row weight totals; one `federated_aggregate`
  sums `weight * mean`, the row totals and the weights, and divides as
  `embedding_select.build_sparse_mean` does, which makes the result the one
  of the per-client scatter-back.
  """
  num_rows = selection.num_rows
  specs = [tf.TensorSpec(t.shape, t.dtype) for t in trainable_type]

  @tff.tensorflow.computation
  def zero():
    return (tuple(tf.zeros(s.shape, s.dtype) for s in specs),
            tf.zeros([num_rows], tf.float32), tf.constant(0.0, tf.float32))

  accumulator_type = zero.type_signature.result

  @tff.tensorflow.computation(accumulator_type, accumulator_type)
  def merge(a, b):
    return (tuple(x + y for x, y in zip(a[0], b[0])), a[1] + b[1],
            a[2] + b[2])

  @tff.tensorflow.computation(accumulator_type)
  def report(accumulator):
    sums, row_weights, total = accumulator
    return (tuple(tf.math.divide_no_nan(s, total) for s in sums),
            tf.math.divide_no_nan(row_weights, total))

  @tff.tensorflow.computation(accumulator_type, accumulator_type)
  def accumulate(accumulator, group):
    mean, row_weights, weight = group
    return merge(accumulator, (tuple(weight * m for m in mean), row_weights,
                               weight))

  def initialize():
    return tff.federated_value((), tff.SERVER)

  def aggregate(state, client_outputs, keys):
    del keys  # Each group scattered its members' rows.
    mean_update, row_weight_fraction = tff.federated_aggregate(
        tff.federated_zip((client_outputs.update, client_outputs.row_weights,
                           client_outputs.update_weight)),
        zero(), accumulate, merge, report)
    return AggregatorOutput(state, mean_update,
                            tff.federated_value((), tff.SERVER),
                            row_weight_fraction)

  return Aggregator(initialize, aggregate)
