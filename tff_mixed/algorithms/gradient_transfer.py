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
"""1-way and 2-way Gradient Transfer.

Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning", arXiv:2205.13655: Algorithm 2 (1-way) and Algorithm 1
with its purple steps and appendix A.2 (2-way); first proposed in
arXiv:2111.12150, Algorithm 4.

Both weight the two gradients by the mixing weights: a client step uses
`w_f g_i + w_c g~_c`, the gradient of the mixed loss f = w_f f_f + w_c f_c
with the client batch standing in for f_f (the paper subsumes the weights into
the losses). With `w_c = 0` this is FedAvg, and with K = 1 1-way GT makes the
same step as Parallel Training.
"""

from collections.abc import Callable
from typing import Any, Optional

import tensorflow_federated as tff

from tff_mixed.algorithms import _common
from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import embedding_select
from tff_mixed.core import validation


def build_one_way_gradient_transfer(
    model: tff.learning.models.FunctionalModel,
    central_objective: central_lib.CentralObjective,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    central_batch_size: int,
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
) -> tff.learning.templates.LearningProcess:
  """Builds a 1-way Gradient Transfer `tff.learning.templates.LearningProcess`.

  The process has:

  *   `initialize: ( -> MixedFLState@SERVER)`
  *   `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
      <state=MixedFLState@SERVER, metrics=M@SERVER>)`
  *   `get_model_weights`, `set_model_weights`, `get_hparams`, `set_hparams`.

  Each round the server computes g~_c, the gradient of f_c at x^(t) on one
  central batch, and broadcasts it with x^(t). Every local step of every
  client uses `w_f g_i + w_c g~_c`. The server applies SERVEROPTIMIZER to the
  weighted mean client update, as FedAvg does. Clients download the model and
  one gradient, and upload exactly what FedAvg uploads.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    central_objective: The central loss f_c.
    client_optimizer: CLIENTOPTIMIZER (learning rate eta).
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1
      (`build_adam` here gives FedAdam).
    central_batch_size: Central examples in the batch g~_c is computed on.
    client_steps: K exact local steps, or `None` for one pass over the data.
    federated_weight: w_f in [0, 1].
    central_weight: w_c in [0, 1]; `w_f + w_c` must be 1.
    client_weighting: A `tff.learning.ClientWeighting`.
    model_aggregator: A `tff.aggregators.WeightedAggregationFactory` (or an
      unweighted one such as `tff.learning.dp_aggregator`); `None` means
      `tff.aggregators.MeanFactory()`.
    metrics_aggregator: `None` means `tff.learning.metrics.sum_then_finalize`.
    central_clip_norm: Optional global L2 norm to clip g~_c to.
    seed: Seeds the sampling of central batches.
    with_diagnostics: Report G~_t^2 and B~_t^2 (opt-in extra client upload).
    embedding_selection: Optional `tff_mixed.EmbeddingSelection`: send each
      client only its rows of the embedding table (and of g~_c) with
      `tff.federated_select`, and scatter its row updates back, instead of
      broadcasting the table (the movie task, arXiv:2205.13655 section 4.3).

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range or f_c does not fit the model.
  """
  return _common.assemble(
      model=model,
      central_objective=central_objective,
      client_optimizer=client_optimizer,
      server_optimizer=server_optimizer,
      federated_weight=federated_weight,
      central_weight=central_weight,
      central_batch_size=central_batch_size,
      client_steps=client_steps,
      client_weighting=client_weighting,
      model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator,
      central_clip_norm=central_clip_norm,
      seed=seed,
      with_diagnostics=with_diagnostics,
      embedding_selection=embedding_selection,
      send_central_gradient=True,
  )


def build_two_way_gradient_transfer(
    model: tff.learning.models.FunctionalModel,
    central_objective: central_lib.CentralObjective,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    central_batch_size: int,
    client_steps: int,
    central_steps: Optional[int] = None,
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
) -> tff.learning.templates.LearningProcess:
  """Builds a 2-way Gradient Transfer `tff.learning.templates.LearningProcess`.

  Type signatures as in `build_parallel_training`.

  Parallel Training in which both sides use the other side's gradient:

  *   clients step with `w_f g_i + w_c g~_c`, where g~_c is the gradient of f_c
      at x^(t) on the round's first central batch (as in 1-way GT);
  *   the K_c central steps use `w_c g_c + w_f g~_f`, where g~_f is the
      previous round's mean client gradient (zero in round 0);
  *   the deltas are merged with `w_f`, `w_c` and MERGEOPTIMIZER.

  g~_f is recovered at the server from the aggregated update clients already
  upload (appendix A.2, eq. 10): with SGD and K steps per client, the mean
  per-step gradient is `mean_update / (eta K)`; subtracting `w_c g~_c` and
  dividing by `w_f` leaves the aggregation-weighted mean client gradient
  (eq. 10's K_i-weighted mean when aggregation weights are equal per step,
  e.g. uniform weighting or equal-size client batches). So 2-way GT uploads
  exactly what FedAvg uploads. Adaptive clipping of client updates makes the
  recovered gradient approximate.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    central_objective: The central loss f_c.
    client_optimizer: CLIENTOPTIMIZER: must be momentum-free SGD
      (`tff.learning.optimizers.build_sgdm(learning_rate=eta)`).
    central_optimizer: CENTRALOPTIMIZER (learning rate eta_c).
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1.
    merge_optimizer: MERGEOPTIMIZER; `None` means SGD with learning rate 1.
    central_batch_size: Central examples per central batch.
    client_steps: K, the exact number of local steps of every client.
    central_steps: K_c; `None` means `client_steps`.
    federated_weight: w_f in (0, 1].
    central_weight: w_c in [0, 1); `w_f + w_c` must be 1.
    client_weighting: A `tff.learning.ClientWeighting`.
    model_aggregator: A `tff.aggregators.WeightedAggregationFactory`, or an
      unweighted one such as `tff.learning.dp_aggregator` (DP-FedAvg).
    metrics_aggregator: `None` means `tff.learning.metrics.sum_then_finalize`.
    central_clip_norm: Optional global L2 norm to clip central gradients to.
    seed: Seeds the sampling of central batches.
    with_diagnostics: Report G~_t^2 and B~_t^2 (opt-in extra client upload).
    embedding_selection: Optional `tff_mixed.EmbeddingSelection`: send each
      client only its rows of the embedding table (and of g~_c) with
      `tff.federated_select`, and scatter its row updates back, instead of
      broadcasting the table (the movie task, arXiv:2205.13655 section 4.3).

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range, f_c does not fit the model, or the
      client optimizer is not plain SGD.
  """
  validation.check_positive_int('client_steps', client_steps)
  if central_steps is None:
    central_steps = client_steps
  validation.check_positive_int('central_steps', central_steps)
  return _common.assemble(
      model=model,
      central_objective=central_objective,
      client_optimizer=client_optimizer,
      server_optimizer=server_optimizer,
      central_optimizer=central_optimizer,
      merge_optimizer=merge_optimizer,
      federated_weight=federated_weight,
      central_weight=central_weight,
      central_steps=central_steps,
      central_batch_size=central_batch_size,
      client_steps=client_steps,
      client_weighting=client_weighting,
      model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator,
      central_clip_norm=central_clip_norm,
      seed=seed,
      with_diagnostics=with_diagnostics,
      embedding_selection=embedding_selection,
      send_central_gradient=True,
      two_way=True,
  )
