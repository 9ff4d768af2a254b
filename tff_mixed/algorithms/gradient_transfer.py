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

Components: a distributor of x^(t) and g~_c, client work adding `w_c g~_c`
to each step, the model aggregator's mean (or the scatter-back). 1-way GT's
central work computes g~_c at x^(t) and its finalizer applies only
SERVEROPTIMIZER; 2-way GT's central work takes K_c steps with `w_f g~_f` (and
computes g~_c at x^(t) only with the 'fresh' option) and its finalizer
merges, recovers g~_f and keeps g~_c.
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
from tff_mixed.core import finalizer
from tff_mixed.core import inputs
from tff_mixed.simulation import client_groups as client_groups_lib

# 2-way GT's augmenting central gradient g~_c (`augmenting_central_gradient`).
PREVIOUS_ROUND_MEAN = 'previous_round_mean'
FRESH = 'fresh'
AUGMENTING_CENTRAL_GRADIENTS = (PREVIOUS_ROUND_MEAN, FRESH)


def build_one_way_gradient_transfer(
    model: inputs.ModelInput,
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
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
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
  one gradient, and upload what FedAvg uploads (and, as every process here,
  their counts of `metrics['client_work']['clients']`).

  Args:
    model: A `tff.learning.models.FunctionalModel` or a `model_fn`, as in
      `build_parallel_training`.
    central_objective: The central loss f_c.
    client_optimizer: CLIENTOPTIMIZER (learning rate eta).
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1
      (`build_adam` here gives FedAdam).
    central_batch_size: Central examples in the batch g~_c is computed on;
      the paper uses `K S |B_i|` (S clients per round, client batches B_i;
      appendix B.2), as g~_c stands in for the K S client batches it augments.
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
      A client applies `w_c g~_c` only to the rows it holds; the server adds
      the `eta K w_c g~_c` that each client would have applied to the other
      rows (`finalizer.RowCompletion`), so the round equals the broadcast
      one. That needs `client_steps` and a plain SGD `client_optimizer`.
      This argument chooses the process's distributor
      (`core/distributors.py`, `build_select_distributor`), its
      scatter-back aggregator and that completion.
    client_groups: Optional `tff_mixed.ClientGroups`, the fast simulation
      mode (each CLIENTS member of `next` a group of client ids), as in
      `build_parallel_training`.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range or f_c does not fit the model,
      or `embedding_selection` comes without `client_steps` or with a
      client optimizer other than plain SGD.
  """
  model = inputs.functional_model(model)
  why = None
  if embedding_selection is not None:
    why = ('for 1-way gradient transfer with `embedding_selection`: the '
           'server adds the eta * K * w_c * g~_c that each client would have '
           'applied to the rows it did not receive')
  args = arguments.check_builder_args(
      model=model, client_optimizer=client_optimizer,
      server_optimizer=server_optimizer, central_objective=central_objective,
      central_batch_size=central_batch_size, federated_weight=federated_weight,
      central_weight=central_weight, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator,
      central_clip_norm=central_clip_norm, seed=seed,
      with_diagnostics=with_diagnostics,
      embedding_selection=embedding_selection, client_groups=client_groups,
      client_sgd_needed_for=why)
  row_completion = None
  if embedding_selection is not None:
    if client_steps is None:
      raise ValueError(f'`client_steps` (K) is required {why}.')
    row_completion = finalizer.RowCompletion(
        embedding_selection.table_index, embedding_selection.num_rows,
        args.client_learning_rate, client_steps)
  # Server: g~_c(x^(t)) before the broadcast, no central steps.
  central = central_work.build_central_work(
      model, central_objective, None,
      args.central._replace(
          augmenting_gradient=central_work.GradientAtModel()))
  return components.compose_mixed_process(
      model, choices.mixed_components(
          args, central=central, send_central_gradient=True,
          finalizer_config=finalizer.FinalizerConfig(
              args.federated_weight, args.central_weight,
              row_completion=row_completion)),
      metrics_aggregator=args.metrics_aggregator)


def build_two_way_gradient_transfer(
    model: inputs.ModelInput,
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
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
    augmenting_central_gradient: str = PREVIOUS_ROUND_MEAN,
) -> tff.learning.templates.LearningProcess:
  """Builds a 2-way Gradient Transfer `tff.learning.templates.LearningProcess`.

  Type signatures as in `build_parallel_training`; the state's
  `federated_gradient` holds g~_f and, by default, its `central_gradient`
  holds g~_c.

  Parallel Training in which both sides use the other side's gradient
  (arXiv:2205.13655, Algorithm 1, whose inputs include both augmenting
  gradients g~_c^(0), g~_f^(0), zeroed). In round t:

  *   clients step with `w_f g_i + w_c g~_c^(t)`;
  *   the K_c central steps use `w_c g_c + w_f g~_f^(t)`;
  *   the deltas are merged with `w_f`, `w_c` and MERGEOPTIMIZER;
  *   the round yields g~_f^(t+1), the mean client gradient of round t, and
      g~_c^(t+1) for the next round.

  g~_c depends on `augmenting_central_gradient`:

  *   `'previous_round_mean'` (the default, Algorithm 1 as written): g~_c is
      state like g~_f, symmetrically: g~_c^(t+1) is the mean of round t's
      K_c central gradients g_c (clipped when `central_clip_norm` is set,
      without the `w_f g~_f` term), the central analogue of eq. 10 and the
      'meta-SCAFFOLD' view of appendix C.3; g~_c^(0) = 0. No central
      gradient is computed before the broadcast.
  *   `'fresh'`: g~_c^(t) is the gradient of f_c at x^(t) on the round's
      first central batch, computed before the broadcast as in 1-way GT
      (Algorithm 2): current rather than a round old, at the cost of one more
      f_c evaluation per round.

  The paper sets batch sizes so that client and central gradient noise weigh
  alike: `|B_c| = S |B_i|` for Parallel Training and 2-way GT, `K S |B_i|`
  for 1-way GT, with S clients per round and client batches B_i (appendix
  B.2, "General Notes on Comparing Algorithms").

  g~_f is recovered at the server from the aggregated update clients already
  upload (appendix A.2, eq. 10): with SGD and K steps per client, the mean
  per-step gradient is `mean_update / (eta K)`; subtracting the `w_c g~_c^(t)`
  the clients used and dividing by `w_f` leaves the aggregation-weighted
  mean client gradient (eq. 10's K_i-weighted mean when aggregation weights
  are equal per step, e.g. uniform weighting or equal-size client batches).
  So 2-way GT uploads what FedAvg uploads (and the clients' counts of
  `metrics['client_work']['clients']`, as every process here). The
  recovery uses the update the server applies: with a `model_aggregator`
  that clips client updates (`tff.learning.robust_aggregator`,
  `tff.learning.dp_aggregator`, `tff.aggregators.clipping_factory`) or adds
  noise, g~_f is eq. 10 of the clipped (noised) mean, a biased estimate of
  the mean client gradient;
  it is exact only without clipping and noise.

  With `embedding_selection`, a client applies `w_c g~_c` only to the table
  rows it holds; the server adds the `eta K w_c g~_c` each client would
  have applied to the other rows (`finalizer.RowCompletion`), so the round
  equals the broadcast one, and g~_f is the gradient of the cohort's
  federated loss (zero on rows nobody held).

  Args:
    model: A `tff.learning.models.FunctionalModel` or a `model_fn`, as in
      `build_parallel_training`.
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
      This argument only chooses the process's distributor
      (`core/distributors.py`, `build_select_distributor`) and its
      scatter-back aggregator.
    augmenting_central_gradient: `'previous_round_mean'` (Algorithm 1) or
      `'fresh'`, as described above.
    client_groups: Optional `tff_mixed.ClientGroups`, the fast simulation
      mode (each CLIENTS member of `next` a group of client ids), as in
      `build_parallel_training`.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range, f_c does not fit the model, the
      client optimizer is not plain SGD, or `augmenting_central_gradient` is
      not one of the two options.
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
      embedding_selection=embedding_selection, client_groups=client_groups,
      central_steps=central_steps, with_central_steps=True,
      require_client_steps=True, two_way=True)
  if augmenting_central_gradient not in AUGMENTING_CENTRAL_GRADIENTS:
    raise ValueError('`augmenting_central_gradient` must be one of '
                     f'{AUGMENTING_CENTRAL_GRADIENTS}, got '
                     f'{augmenting_central_gradient!r}.')
  carry = augmenting_central_gradient == PREVIOUS_ROUND_MEAN
  # g~_f is recovered as -delta / (eta K): plain SGD with a known eta.
  recovery = finalizer.Recovery(args.client_learning_rate, client_steps)
  central = central_work.build_central_work(
      model, central_objective, central_optimizer, args.central._replace(
          step_rule=central_work.MixedCentralSteps(args.central_weight,
                                                   args.federated_weight),
          augmenting_gradient=(central_work.PreviousRoundMean() if carry
                               else central_work.GradientAtModel())))
  row_completion = None
  if embedding_selection is not None:
    row_completion = finalizer.RowCompletion(
        embedding_selection.table_index, embedding_selection.num_rows,
        *recovery)
  return components.compose_mixed_process(
      model, choices.mixed_components(
          args, central=central, send_central_gradient=True,
          finalizer_config=finalizer.FinalizerConfig(
              args.federated_weight, args.central_weight, recovery=recovery,
              row_completion=row_completion)),
      metrics_aggregator=args.metrics_aggregator)
