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
"""Parallel Training: a FedAvg round and central steps, merged every round.

Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning", arXiv:2205.13655, Algorithm 1 (green steps); first
proposed as "synchronous parallel training" in arXiv:2111.12150, Algorithm 2.

Components: the broadcast (or `federated_select`) distributor of x^(t),
plain FedAvg client work, the model aggregator's mean (or the scatter-back),
central work with K_c steps, and a finalizer that merges x_f and x_c.
"""

from collections.abc import Callable
from typing import Any, Optional

import tensorflow_federated as tff

from tff_mixed.algorithms import arguments
from tff_mixed.algorithms import choices
from tff_mixed.algorithms import components
from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import central_work
from tff_mixed.core import embedding_select
from tff_mixed.core import inputs
from tff_mixed.simulation import client_groups as client_groups_lib


def build_parallel_training(
    model: inputs.ModelInput,
    central_objective: central_lib.CentralObjective,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    central_batch_size: int,
    central_steps: Optional[int] = None,
    client_steps: Optional[int] = None,
    federated_weight: float = 0.5,
    central_weight: float = 0.5,
    client_weighting: tff.learning.ClientWeighting = (
        tff.learning.ClientWeighting.NUM_EXAMPLES),
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
    metrics_aggregator: Optional[Callable[..., Any]] = None,
    central_clip_norm: Optional[float] = None,
    seed: int = 0,
    with_diagnostics: bool = False,
    embedding_selection: Optional[
        embedding_select.EmbeddingSelection] = None,
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds a Parallel Training `tff.learning.templates.LearningProcess`.

  The process has:

  *   `initialize: ( -> MixedFLState@SERVER)`
  *   `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
      <state=MixedFLState@SERVER, metrics=M@SERVER>)`
  *   `get_model_weights: (MixedFLState -> ModelWeights)`,
      `set_model_weights: (<MixedFLState, ModelWeights> -> MixedFLState)`
  *   `get_hparams` / `set_hparams` for the server, central and merge
      optimizers.

  Each round t, from the global model x^(t): clients run FedAvg local training
  on their own loss f_i and the server applies SERVEROPTIMIZER to their
  weighted mean update, giving x_f; in parallel the server takes K_c steps of
  CENTRALOPTIMIZER on f_c from x^(t), giving x_c. The deltas are merged,
  `Delta = w_f (x_f - x^(t)) + w_c (x_c - x^(t))`, and applied with
  MERGEOPTIMIZER: `x^(t+1) = MERGEOPTIMIZER(x^(t), -Delta)`. Clients upload
  what FedAvg uploads (and their counts of
  `metrics['client_work']['clients']`, as every process here).

  Args:
    model: A `tff.learning.models.FunctionalModel`, or a no-arg `model_fn`
      returning a VariableModel made by `tff.learning.models.from_keras_model`;
      `tff_mixed.functional_model` converts it (and a Keras model given with
      its loss and input spec) and says what it refuses.
    central_objective: The central loss f_c (`tff_mixed.central_data_objective`
      of numpy arrays, an `ExampleStore` or a `tf.data.Dataset`, or
      `tff_mixed.central_regularizer`).
    client_optimizer: CLIENTOPTIMIZER, a `tff.learning.optimizers.Optimizer`
      (learning rate eta).
    central_optimizer: CENTRALOPTIMIZER (learning rate eta_c; the paper uses
      eta_c = eta * eta_s).
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1.
    merge_optimizer: MERGEOPTIMIZER; `None` means SGD with learning rate 1.
    central_batch_size: Central examples per central step.
    central_steps: K_c; `None` means `client_steps`.
    client_steps: K, the exact number of local steps (clients cycle through
      their data); `None` means one pass over the client dataset as given.
    federated_weight: w_f in [0, 1].
    central_weight: w_c in [0, 1]; `w_f + w_c` must be 1.
    client_weighting: A `tff.learning.ClientWeighting` (default by examples).
    model_aggregator: A `tff.aggregators.WeightedAggregationFactory` for
      client updates; `None` means `tff.aggregators.MeanFactory()`. Use
      `tff.aggregators.clipping_factory` for adaptive clipping, or an
      unweighted factory such as `tff.learning.dp_aggregator` for DP-FedAvg.
    metrics_aggregator: As in `tff.learning.algorithms.build_weighted_fed_avg`;
      `None` means `tff.learning.metrics.sum_then_finalize`.
    central_clip_norm: Optional global L2 norm to clip central gradients to.
    seed: Seeds the sampling of central batches.
    with_diagnostics: Report the (G, B)-BGD estimates G~_t^2, B~_t^2 (eq. 7).
    embedding_selection: Optional `tff_mixed.EmbeddingSelection`: send each
      client only its rows of the embedding table (and of g~_c) with
      `tff.federated_select`, and scatter its row updates back, instead of
      broadcasting the table (the movie task, arXiv:2205.13655 section 4.3).
      The server then learns which rows each client needs (its
      `federated_select` keys); updates still arrive only aggregated. Not
      combinable with `with_diagnostics`. This argument only chooses the
      process's distributor (`core/distributors.py`,
      `build_select_distributor`) and its scatter-back aggregator.
    client_groups: Optional `tff_mixed.ClientGroups`: the fast simulation
      mode, in which each CLIENTS member of `next` is a group of client ids
      whose members train one after another in one computation
      (`simulation/client_groups.py`); results equal the per-client process's to
      float32 rounding. `None`: one client per member. With DP
      (`tff.aggregators.DifferentiallyPrivateFactory`,
      `tff.learning.dp_aggregator`) or adaptive clipping and zeroing
      (`tff.learning.robust_aggregator`) the groups clip each member's
      update (`simulation/group_aggregation.py`); aggregators that add noise or
      secure sums on each client are refused.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range or f_c does not fit the model.
  """
  model = inputs.functional_model(model)
  args = arguments.check_builder_args(
      model=model, client_optimizer=client_optimizer,
      server_optimizer=server_optimizer, central_objective=central_objective,
      central_optimizer=central_optimizer, merge_optimizer=merge_optimizer,
      central_batch_size=central_batch_size, federated_weight=federated_weight,
      central_weight=central_weight, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator,
      central_clip_norm=central_clip_norm, seed=seed,
      with_diagnostics=with_diagnostics,
      central_steps=central_steps, with_central_steps=True,
      embedding_selection=embedding_selection, client_groups=client_groups)
  # Server: K_c central steps from x^(t), merged with the FedAvg result.
  central = central_work.build_central_work(model, central_objective,
                                            central_optimizer, args.central)
  # Clients: plain FedAvg local training.
  return components.compose_mixed_process(
      model, choices.mixed_components(args, central=central,
                                      send_central_gradient=False),
      metrics_aggregator=args.metrics_aggregator)
