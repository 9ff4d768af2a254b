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
    share of the cohort's weight that did not hold the row, with which the
    finalizer adds the augmenting steps those clients would have taken.
    Its state and measurements are `()`.

An aggregator whose per-client step needs values from the server on the
clients (a clipping norm, a DP query's sample parameters) names them
(`Aggregator.client_parameters`); the process broadcasts them beside the
distribution. The fast simulation's group aggregators
(`tff_mixed.simulation`) are built that way.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow_federated as tff

from tff_mixed.core import embedding_select as select_lib


class AggregatorOutput(NamedTuple):
  """Server values of one aggregation.

  Attributes:
    state: The aggregator's new state.
    result: The mean update, like the trainable weights.
    measurements: The aggregator's measurements (metrics['aggregator']).
    unheld_fraction: float32[num_rows]@SERVER, per table row the share of
      the cohort's weight that did not hold it (scatter-back only), or
      `None`.
  """

  state: Any
  result: Any
  measurements: Any
  unheld_fraction: Any = None


class Aggregator(NamedTuple):
  """An aggregator (see the module docstring).

  Attributes:
    initialize: `( -> state@SERVER)`, a Python function of no arguments to
      call inside the process's federated `initialize`.
    aggregate: `(state@SERVER, ClientOutput@CLIENTS, keys@CLIENTS or None)
      -> AggregatorOutput`.
    client_parameters: `(state@SERVER -> P@SERVER)`, a Python function of
      federated values, or `None`: what the aggregator's per-client step
      needs from the server (e.g. a clipping norm). The process broadcasts
      it, and the client work takes it as its parameter after the
      distribution's values.
  """

  initialize: Callable[[], Any]
  aggregate: Callable[[Any, Any, Optional[Any]], AggregatorOutput]
  client_parameters: Optional[Callable[[Any], Any]] = None


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
    mean_update, unheld_fraction = sparse_mean(
        keys, client_outputs.update, client_outputs.update_weight)
    return AggregatorOutput(state, mean_update,
                            tff.federated_value((), tff.SERVER),
                            unheld_fraction)

  return Aggregator(initialize, aggregate)
