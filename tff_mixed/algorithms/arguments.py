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
"""The one check of a built-in builder's arguments.

Every public builder (`fedavg.py`, `parallel_training.py`,
`gradient_transfer.py`, `example_transfer.py`) calls `check_builder_args`
once, before it builds anything: each argument the builders share is checked
there, in the order of the builders' signatures, with an error that names
it. What is left to a builder is only what it alone takes (`central_steps`,
`augmenting_central_gradient`, `examples_per_client`). The result,
`BuilderArgs`, holds the arguments with their defaults filled in and the
central work's base configuration, so that no component re-reads or
re-checks a raw argument.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import tensorflow_federated as tff

from tff_mixed.core import central_work
from tff_mixed.core import embedding_select
from tff_mixed.core import validation
from tff_mixed.simulation import client_groups as client_groups_lib
from tff_mixed.simulation import group_aggregation

# SERVEROPTIMIZER's and MERGEOPTIMIZER's default: SGD with learning rate 1
# applies the mean update (and the merge) as it is, as in the papers.
DEFAULT_SERVER_LEARNING_RATE = 1.0
DEFAULT_MERGE_LEARNING_RATE = 1.0


class BuilderArgs(NamedTuple):
  """A builder's checked arguments, defaults filled in.

  Attributes as the builders' arguments, except:
    client_learning_rate: eta of a plain SGD client optimizer, where a
      builder needs it (`client_sgd_needed_for`, `two_way`), else `None`.
    server_optimizer: SGD with learning rate 1 where `None` was given.
    merge_optimizer: The same default `with_central_steps`, else `None`.
    model_aggregator: The weighted factory the process aggregates with (an
      unweighted one wrapped); with `client_groups` and a factory other than
      the plain mean, the factory as given (its groups run it on each member).
    federated_weight, central_weight: Python floats.
    central: The central work's configuration (K_c `central_steps`
      `with_central_steps`, else 0) without its rule or g~_c source; a builder
      `_replace`s what it chooses. For a process without f_c, FedAvg's (batch
      size 1, `w_f = 1`).
  """

  model: tff.learning.models.FunctionalModel
  client_optimizer: tff.learning.optimizers.Optimizer
  client_learning_rate: Optional[float]
  server_optimizer: tff.learning.optimizers.Optimizer
  merge_optimizer: Optional[tff.learning.optimizers.Optimizer]
  model_aggregator: tff.aggregators.AggregationFactory
  metrics_aggregator: Optional[Callable[..., Any]]
  federated_weight: float
  central_weight: float
  client_steps: Optional[int]
  client_weighting: tff.learning.ClientWeighting
  seed: int
  with_diagnostics: bool
  embedding_selection: Optional[embedding_select.EmbeddingSelection]
  client_groups: Optional[client_groups_lib.ClientGroups]
  central: central_work.CentralConfig


def _aggregation_factory(model_aggregator: Any, metrics_aggregator: Any,
                         client_groups: Any):
  """The model aggregator the process uses, and the metrics one checked."""
  if client_groups is not None:
    group_aggregation.check_aggregators(model_aggregator, metrics_aggregator)
  if metrics_aggregator is not None and not callable(metrics_aggregator):
    raise TypeError('`metrics_aggregator` must be callable (e.g. '
                    '`tff.learning.metrics.sum_then_finalize`), got '
                    f'{type(metrics_aggregator).__name__}.')
  factory = (tff.aggregators.MeanFactory() if model_aggregator is None
             else model_aggregator)
  if client_groups is None or group_aggregation.is_plain_mean(factory):
    return validation.weighted_aggregator(factory)
  # In groups, a factory other than the plain mean stays as it is: its
  # groups run its per-client step on each member
  # (group_aggregation.build_group_aggregator), weighted if it is.
  return factory


def check_builder_args(
    *,
    model: tff.learning.models.FunctionalModel,
    client_optimizer: Any,
    server_optimizer: Any = None,
    central_objective: Any = None,
    central_optimizer: Any = None,
    merge_optimizer: Any = None,
    central_batch_size: Any = None,
    central_steps: Any = None,
    with_central_steps: bool = False,
    federated_weight: Any = 1.0,
    central_weight: Any = 0.0,
    client_steps: Any = None,
    client_weighting: Any = tff.learning.ClientWeighting.NUM_EXAMPLES,
    model_aggregator: Any = None,
    metrics_aggregator: Any = None,
    central_clip_norm: Any = None,
    seed: Any = 0,
    with_diagnostics: Any = False,
    embedding_selection: Any = None,
    client_groups: Any = None,
    require_client_steps: bool = False,
    two_way: bool = False,
    client_sgd_needed_for: Optional[str] = None,
) -> BuilderArgs:
  """Checks every argument the built-in builders share, once each.

  f_c, its batch size and `central_clip_norm` are checked where a
  `central_objective` is given (PT, 1-way and 2-way GT; Example Transfer
  checks its examples itself); `with_central_steps` (PT, 2-way GT), the
  central and merge optimizers and K_c = `central_steps`, which defaults to
  K = `client_steps`. `two_way` requires `w_f > 0` (g~_f
  is recovered by dividing by it) and `require_client_steps` an int K.
  `two_way`, or a reason in `client_sgd_needed_for` (a computation that
  stands in for the clients' steps), requires a plain SGD client optimizer
  and reads its learning rate eta into `client_learning_rate`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range, f_c does not fit the model, or an
      aggregator cannot run with the selection or in groups.
  """
  validation.check_model(model)
  validation.check_optimizer('client_optimizer', client_optimizer)
  validation.check_learning_rate('client_optimizer', client_optimizer, model)
  server_optimizer = validation.optimizer_or_sgd(
      'server_optimizer', server_optimizer, model,
      DEFAULT_SERVER_LEARNING_RATE)
  validation.check_mixing_weights(federated_weight, central_weight,
                                  require_positive_federated=two_way)
  validation.check_positive_int('client_steps', client_steps,
                                allow_none=not require_client_steps)
  validation.check_client_weighting(client_weighting)
  client_groups_lib.check_client_groups(client_groups)
  factory = _aggregation_factory(model_aggregator, metrics_aggregator,
                                 client_groups)
  validation.optional_clip('central_clip_norm', central_clip_norm)
  if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
    raise ValueError(f'`seed` must be a non-negative int, got {seed!r}.')
  if not isinstance(with_diagnostics, bool):
    raise TypeError(
        f'`with_diagnostics` must be a bool, got {with_diagnostics!r}.')
  if central_objective is not None:
    validation.check_objective(central_objective, model, seed=seed)
    validation.check_central_batch_size(central_batch_size, central_objective)
  if with_central_steps:
    merge_optimizer, central_steps = validation.check_central_steps(
        model, central_optimizer, merge_optimizer, central_steps,
        client_steps, DEFAULT_MERGE_LEARNING_RATE)
  else:
    merge_optimizer, central_steps = None, 0
  if embedding_selection is not None:
    validation.check_selection(embedding_selection, model, model_aggregator,
                               with_diagnostics)
  client_learning_rate = None
  if two_way or client_sgd_needed_for is not None:
    client_learning_rate = validation.plain_sgd_learning_rate(
        'client_optimizer', client_optimizer, model, client_sgd_needed_for)
  w_f, w_c = float(federated_weight), float(central_weight)
  return BuilderArgs(
      model=model, client_optimizer=client_optimizer,
      client_learning_rate=client_learning_rate,
      server_optimizer=server_optimizer,
      merge_optimizer=merge_optimizer,
      model_aggregator=factory, metrics_aggregator=metrics_aggregator,
      federated_weight=w_f, central_weight=w_c, client_steps=client_steps,
      client_weighting=client_weighting, seed=seed,
      with_diagnostics=with_diagnostics,
      embedding_selection=embedding_selection, client_groups=client_groups,
      central=central_work.CentralConfig(
          central_steps=central_steps,
          batch_size=(1 if central_objective is None
                      else central_batch_size),
          seed=seed, clip_norm=central_clip_norm, federated_weight=w_f,
          central_weight=w_c, with_diagnostics=with_diagnostics))
