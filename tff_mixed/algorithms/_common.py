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
"""What every algorithm builder shares: argument checks and the composition.

The public builders (`parallel_training.py`, `gradient_transfer.py`,
`example_transfer.py`) each choose a process's components
(`tff_mixed/core/mixed_process.py`: a distributor, client work, an
aggregator, central work and a finalizer; arXiv:2205.13655, Algorithms 1-2).
This module holds the checks of the arguments they have in common, each
naming the argument it refuses, the choice of distributor and aggregator
(broadcast and the model aggregator, or `federated_select` and its
scatter-back), and `compose`, which builds the client work and the finalizer
and hands everything to the one composer users call too,
`components.compose_mixed_process` (its checks included).
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import tensorflow_federated as tff

from tff_mixed.algorithms import components as components_lib
from tff_mixed.core import aggregators
from tff_mixed.core import central_work
from tff_mixed.core import client_work
from tff_mixed.core import distributors
from tff_mixed.core import embedding_select
from tff_mixed.core import finalizer
from tff_mixed.core import model_types
from tff_mixed.core import validation
from tff_mixed.simulation import client_groups as client_groups_lib
from tff_mixed.simulation import group_aggregation
from tff_mixed.simulation import group_distribution
from tff_mixed.simulation import group_work

DEFAULT_SERVER_LEARNING_RATE = 1.0
DEFAULT_MERGE_LEARNING_RATE = 1.0


def check_process_args(
    *,
    model: Any,
    client_optimizer: Any,
    server_optimizer: Any,
    federated_weight: Any,
    central_weight: Any,
    client_steps: Any,
    client_weighting: Any,
    model_aggregator: Any,
    metrics_aggregator: Any,
    seed: Any,
    with_diagnostics: Any = False,
    central_clip_norm: Any = None,
    two_way: bool = False,
    client_groups: Any = None,
) -> tuple[tff.learning.optimizers.Optimizer,
           tff.aggregators.WeightedAggregationFactory]:
  """Checks the arguments every builder takes.

  Returns:
    `(server_optimizer, model_aggregator)` with their defaults (SGD with
    learning rate 1; `tff.aggregators.MeanFactory()`), the aggregator made
    weighted.
  """
  validation.check_model(model)
  validation.check_optimizer('client_optimizer', client_optimizer)
  validation.check_learning_rate('client_optimizer', client_optimizer, model)
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(
        learning_rate=DEFAULT_SERVER_LEARNING_RATE)
  validation.check_optimizer('server_optimizer', server_optimizer)
  validation.check_learning_rate('server_optimizer', server_optimizer, model)
  validation.check_mixing_weights(federated_weight, central_weight,
                                  require_positive_federated=two_way)
  validation.check_positive_int('client_steps', client_steps, allow_none=True)
  validation.check_client_weighting(client_weighting)
  client_groups_lib.check_client_groups(client_groups)
  if client_groups is not None:
    group_aggregation.check_aggregators(model_aggregator, metrics_aggregator)
  if model_aggregator is None:
    model_aggregator = tff.aggregators.MeanFactory()
  if client_groups is None or group_aggregation.is_plain_mean(
      model_aggregator):
    model_aggregator = validation.weighted_aggregator(model_aggregator)
  # Otherwise, in groups, the factory stays as it is: its groups run its
  # per-client step on each member (group_aggregation.build_group_aggregator),
  # with the members' weights if it is weighted.
  if metrics_aggregator is not None and not callable(metrics_aggregator):
    raise TypeError('`metrics_aggregator` must be callable (e.g. '
                    '`tff.learning.metrics.sum_then_finalize`), got '
                    f'{type(metrics_aggregator).__name__}.')
  validation.optional_clip('central_clip_norm', central_clip_norm)
  if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
    raise ValueError(f'`seed` must be a non-negative int, got {seed!r}.')
  if not isinstance(with_diagnostics, bool):
    raise TypeError(
        f'`with_diagnostics` must be a bool, got {with_diagnostics!r}.')
  return server_optimizer, model_aggregator


def check_central_args(
    model: tff.learning.models.FunctionalModel,
    central_objective: Any,
    *,
    seed: int,
    central_batch_size: Any,
    central_optimizer: Any = None,
    merge_optimizer: Any = None,
) -> Optional[tff.learning.optimizers.Optimizer]:
  """Checks f_c and its batch size, and the optimizers of central steps.

  The optimizers are checked only with a `central_optimizer` (Parallel
  Training, 2-way GT).

  Returns:
    MERGEOPTIMIZER with its default (SGD with learning rate 1) when there
    are central steps, else `None`.
  """
  validation.check_objective(central_objective, model, seed=seed)
  validation.check_central_batch_size(central_batch_size, central_objective)
  if central_optimizer is None:
    return None
  validation.check_optimizer('central_optimizer', central_optimizer)
  validation.check_learning_rate('central_optimizer', central_optimizer,
                                 model)
  if merge_optimizer is None:
    merge_optimizer = tff.learning.optimizers.build_sgdm(
        learning_rate=DEFAULT_MERGE_LEARNING_RATE)
  validation.check_optimizer('merge_optimizer', merge_optimizer)
  validation.check_learning_rate('merge_optimizer', merge_optimizer, model)
  return merge_optimizer


def check_selection(selection: Any, model, requested_aggregator: Any,
                    with_diagnostics: bool) -> None:
  """Checks `embedding_selection` (if given) and what it excludes."""
  if selection is None:
    return
  validation.check_embedding_selection(selection, model)
  if with_diagnostics:
    raise ValueError('`embedding_selection` does not support '
                     '`with_diagnostics` or transferred examples.')
  validation.check_no_selection_aggregator(requested_aggregator)


def model_distribution(
    model: tff.learning.models.FunctionalModel,
    selection: Optional[embedding_select.EmbeddingSelection],
    model_aggregator: tff.aggregators.WeightedAggregationFactory,
    *,
    client_steps: Optional[int],
    with_gradient: bool,
    client_groups: Optional[client_groups_lib.ClientGroups],
) -> tuple[Any, Any]:
  """The distributor of x^(t) (and g~_c) and the matching aggregator.

  `embedding_selection=None`: broadcast, and `model_aggregator`'s weighted
  mean. Otherwise the table (and g~_c's table part) by `federated_select`,
  and the scatter-back; with `client_groups`, their adapters for groups of
  clients (`group_work.build_group_components` composes them).
  `client_groups` has no default: with groups, an aggregator that acts on each client's update must run in the groups
  (`group_aggregation.build_group_aggregator`), not on their means.
  """
  trainable_type = model_types.weights_type(model).trainable
  if selection is None:
    if client_groups is not None and not group_aggregation.is_plain_mean(
        model_aggregator):
      aggregator = group_aggregation.build_group_aggregator(model_aggregator,
                                                            trainable_type)
    else:
      aggregator = aggregators.build_mean_aggregator(model_aggregator,
                                                     trainable_type)
    return (distributors.build_broadcast_distributor(model, with_gradient),
            aggregator)
  if client_groups is not None:
    return (group_distribution.build_group_select_distributor(
        model, selection, with_gradient, client_steps),
            group_distribution.build_group_scatter_back_aggregator(
                selection, trainable_type))
  return (distributors.build_select_distributor(model, selection,
                                                with_gradient, client_steps),
          aggregators.build_scatter_back_aggregator(selection,
                                                    trainable_type))


def compose(
    model: tff.learning.models.FunctionalModel,
    *,
    distribution: tuple[distributors.Distributor, aggregators.Aggregator],
    client_config: client_work.ClientWorkConfig,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central: central_work.CentralWork,
    finalizer_config: finalizer.FinalizerConfig,
    server_optimizer: tff.learning.optimizers.Optimizer,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    metrics_aggregator: Optional[Callable[..., Any]] = None,
    initial_trainable_fn: Optional[Callable[..., Any]] = None,
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds the client work and finalizer, and composes the process.

  With `client_groups`, the client work is a group's
  (`group_work.build_group_work`) and the process's `next` takes each
  group's client ids.
  """
  distributor, aggregator = distribution
  if client_groups is None:
    work = client_work.build_client_work(model, distributor, client_config,
                                         client_optimizer)
  else:
    distributor, work, aggregator = group_work.build_group_components(
        model, distributor, aggregator, client_config, client_optimizer,
        client_groups)
  components = components_lib.Components(
      distributor=distributor,
      client_work=work,
      aggregator=aggregator,
      central_work=central,
      finalizer=finalizer.build_finalizer(
          model, finalizer_config, central, server_optimizer,
          merge_optimizer),
  )
  return components_lib.compose_mixed_process(
      model, components, metrics_aggregator=metrics_aggregator,
      initial_trainable_fn=initial_trainable_fn)



class MixedArgs(NamedTuple):
  """The checked arguments of a builder that evaluates f_c (PT, GT).

  Attributes as the builders' arguments, with defaults filled in:
  `server_optimizer` and `merge_optimizer` (with central steps; else `None`)
  default to SGD with learning rate 1, `model_aggregator` is the weighted
  factory, and the mixing weights are Python floats.
  """

  model: tff.learning.models.FunctionalModel
  client_optimizer: tff.learning.optimizers.Optimizer
  server_optimizer: tff.learning.optimizers.Optimizer
  merge_optimizer: Optional[tff.learning.optimizers.Optimizer]
  model_aggregator: tff.aggregators.WeightedAggregationFactory
  metrics_aggregator: Optional[Callable[..., Any]]
  federated_weight: float
  central_weight: float
  client_steps: Optional[int]
  client_weighting: tff.learning.ClientWeighting
  central_batch_size: int
  central_clip_norm: Optional[float]
  seed: int
  with_diagnostics: bool
  embedding_selection: Optional[embedding_select.EmbeddingSelection]
  client_groups: Optional[client_groups_lib.ClientGroups] = None

  def central_config(self, **kwargs) -> central_work.CentralConfig:
    """A `CentralConfig` from these arguments, and `kwargs` for the rest."""
    return central_work.CentralConfig(
        batch_size=self.central_batch_size, seed=self.seed,
        clip_norm=self.central_clip_norm,
        federated_weight=self.federated_weight,
        central_weight=self.central_weight,
        with_diagnostics=self.with_diagnostics, **kwargs)


def check_mixed_args(*, model, central_objective, client_optimizer,
                     server_optimizer, central_optimizer=None,
                     merge_optimizer=None, central_batch_size,
                     federated_weight, central_weight, client_steps,
                     client_weighting, model_aggregator, metrics_aggregator,
                     central_clip_norm, seed, with_diagnostics,
                     embedding_selection, client_groups=None,
                     two_way=False) -> MixedArgs:
  """The checks of the builders that evaluate f_c (PT, 1-way and 2-way GT).

  In order: `check_process_args`, `check_central_args`, `check_selection`.
  """
  server_optimizer, aggregator_factory = check_process_args(
      model=model, client_optimizer=client_optimizer,
      server_optimizer=server_optimizer, federated_weight=federated_weight,
      central_weight=central_weight, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator, seed=seed,
      with_diagnostics=with_diagnostics, central_clip_norm=central_clip_norm,
      two_way=two_way, client_groups=client_groups)
  merge_optimizer = check_central_args(
      model, central_objective, seed=seed,
      central_batch_size=central_batch_size,
      central_optimizer=central_optimizer, merge_optimizer=merge_optimizer)
  check_selection(embedding_selection, model, model_aggregator,
                  with_diagnostics)
  return MixedArgs(
      model=model, client_optimizer=client_optimizer,
      server_optimizer=server_optimizer, merge_optimizer=merge_optimizer,
      model_aggregator=aggregator_factory,
      metrics_aggregator=metrics_aggregator,
      federated_weight=float(federated_weight),
      central_weight=float(central_weight), client_steps=client_steps,
      client_weighting=client_weighting,
      central_batch_size=central_batch_size,
      central_clip_norm=central_clip_norm, seed=seed,
      with_diagnostics=with_diagnostics,
      embedding_selection=embedding_selection, client_groups=client_groups)


def compose_mixed(
    args: MixedArgs,
    *,
    send_central_gradient: bool,
    central: central_work.CentralWork,
    finalizer_config: Optional[finalizer.FinalizerConfig] = None,
) -> tff.learning.templates.LearningProcess:
  """`compose` for PT and GT: x^(t) [and g~_c] to clients, K local steps.

  With `send_central_gradient` the distributor sends g~_c and every local
  step adds `w_c g~_c`. `finalizer_config` defaults to SERVEROPTIMIZER (and
  the merge, with central steps) without recovery of g~_f.
  """
  w_f, w_c = args.federated_weight, args.central_weight
  return compose(
      args.model,
      distribution=model_distribution(
          args.model, args.embedding_selection, args.model_aggregator,
          client_steps=args.client_steps, with_gradient=send_central_gradient,
          client_groups=args.client_groups),
      client_config=client_work.ClientWorkConfig(
          weighting=args.client_weighting, num_steps=args.client_steps,
          step_gradient=(client_work.MixedGradient(w_f, w_c)
                         if send_central_gradient else
                         client_work.PlainGradient()),
          with_probe_gradient=args.with_diagnostics),
      client_optimizer=args.client_optimizer,
      central=central,
      finalizer_config=(finalizer_config
                        or finalizer.FinalizerConfig(w_f, w_c)),
      server_optimizer=args.server_optimizer,
      merge_optimizer=args.merge_optimizer,
      metrics_aggregator=args.metrics_aggregator,
      client_groups=args.client_groups)


def compose_federated_only(
    model: tff.learning.models.FunctionalModel,
    distributor: distributors.Distributor,
    aggregator: aggregators.Aggregator,
    *,
    client_steps: Optional[int],
    client_weighting: tff.learning.ClientWeighting,
    transfer_batch_size: Optional[int],
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: tff.learning.optimizers.Optimizer,
    metrics_aggregator: Optional[Callable[..., Any]],
    seed: int,
    initial_trainable_fn: Optional[Callable[..., Any]] = None,
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """`compose` for a process without central work (w_f = 1, w_c = 0).

  FedAvg (`fedavg.py`) and Example Transfer: the clients' local training
  (on merged data with `transfer_batch_size`), the aggregator's mean, no
  central steps and SERVEROPTIMIZER alone in the finalizer.
  """
  central = central_work.build_central_work(
      model, None, None, central_work.CentralConfig(
          central_steps=0, batch_size=1, seed=seed, clip_norm=None,
          federated_weight=1.0, central_weight=0.0))
  return compose(
      model,
      distribution=(distributor, aggregator),
      client_config=client_work.ClientWorkConfig(
          weighting=client_weighting, num_steps=client_steps,
          local_data=(client_work.OwnData() if transfer_batch_size is None
                      else client_work.MergedData(transfer_batch_size))),
      client_optimizer=client_optimizer,
      central=central,
      finalizer_config=finalizer.FinalizerConfig(1.0, 0.0),
      server_optimizer=server_optimizer,
      metrics_aggregator=metrics_aggregator,
      initial_trainable_fn=initial_trainable_fn,
      client_groups=client_groups)
