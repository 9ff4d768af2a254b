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
"""Shared assembly of the public builders: validation, defaults, wiring."""

from collections.abc import Callable
from typing import Any, Optional

import tensorflow_federated as tff

from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import embedding_select
from tff_mixed.core import mixed_process
from tff_mixed.core import server_update
from tff_mixed.core import validation

DEFAULT_SERVER_LEARNING_RATE = 1.0
DEFAULT_MERGE_LEARNING_RATE = 1.0

# 2-way GT's augmenting central gradient g~_c (`augmenting_central_gradient`).
PREVIOUS_ROUND_MEAN = 'previous_round_mean'
FRESH = 'fresh'
AUGMENTING_CENTRAL_GRADIENTS = (PREVIOUS_ROUND_MEAN, FRESH)


def assemble(
    *,
    model: tff.learning.models.FunctionalModel,
    central_objective: Optional[central_lib.CentralObjective],
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer],
    central_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    federated_weight: float,
    central_weight: float,
    central_steps: int = 0,
    central_batch_size: Optional[int] = None,
    client_steps: Optional[int],
    client_weighting: tff.learning.ClientWeighting,
    model_aggregator: Optional[tff.aggregators.AggregationFactory],
    metrics_aggregator: Optional[Callable[..., Any]],
    central_clip_norm: Optional[float] = None,
    seed: int,
    with_diagnostics: bool = False,
    send_central_gradient: bool = False,
    two_way: bool = False,
    augmenting_central_gradient: str = FRESH,
    transfer_examples: int = 0,
    resample_transfer_each_round: bool = True,
    transfer_batch_size: Optional[int] = None,
    initial_trainable_fn: Optional[Callable[..., Any]] = None,
    embedding_selection: Optional[
        embedding_select.EmbeddingSelection] = None,
) -> tff.learning.templates.LearningProcess:
  """Validates the arguments common to all algorithms and wires the process."""
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
  requested_aggregator = model_aggregator
  if model_aggregator is None:
    model_aggregator = tff.aggregators.MeanFactory()
  model_aggregator = validation.weighted_aggregator(model_aggregator)
  if metrics_aggregator is not None and not callable(metrics_aggregator):
    raise TypeError('`metrics_aggregator` must be callable (e.g. '
                    '`tff.learning.metrics.sum_then_finalize`), got '
                    f'{type(metrics_aggregator).__name__}.')
  validation.optional_clip('central_clip_norm', central_clip_norm)
  if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
    raise ValueError(f'`seed` must be a non-negative int, got {seed!r}.')
  if not isinstance(with_diagnostics, bool):
    raise TypeError(f'`with_diagnostics` must be a bool, got {with_diagnostics!r}.')

  uses_objective = (central_steps > 0 or send_central_gradient
                    or transfer_examples > 0)
  if uses_objective or with_diagnostics:
    validation.check_objective(central_objective, model,
                               require_data=transfer_examples > 0, seed=seed)
  if central_steps > 0 or send_central_gradient or with_diagnostics:
    validation.check_positive_int('central_batch_size', central_batch_size)
  if central_steps > 0:
    validation.check_optimizer('central_optimizer', central_optimizer)
    validation.check_learning_rate('central_optimizer', central_optimizer,
                                   model)
    if merge_optimizer is None:
      merge_optimizer = tff.learning.optimizers.build_sgdm(
          learning_rate=DEFAULT_MERGE_LEARNING_RATE)
    validation.check_optimizer('merge_optimizer', merge_optimizer)
    validation.check_learning_rate('merge_optimizer', merge_optimizer, model)

  if embedding_selection is not None:
    validation.check_embedding_selection(embedding_selection, model)
    if with_diagnostics or transfer_examples > 0:
      raise ValueError('`embedding_selection` does not support '
                       '`with_diagnostics` or transferred examples.')
    validation.check_no_selection_aggregator(requested_aggregator)

  if augmenting_central_gradient not in AUGMENTING_CENTRAL_GRADIENTS:
    raise ValueError('`augmenting_central_gradient` must be one of '
                     f'{AUGMENTING_CENTRAL_GRADIENTS}, got '
                     f'{augmenting_central_gradient!r}.')
  carry_central_gradient = augmenting_central_gradient == PREVIOUS_ROUND_MEAN
  if carry_central_gradient and not (two_way and send_central_gradient):
    raise ValueError(
        f'`augmenting_central_gradient={PREVIOUS_ROUND_MEAN!r}` needs 2-way '
        'gradient transfer: g~_c is the mean of its central gradients.')

  client_learning_rate = None
  if two_way:
    client_learning_rate = validation.plain_sgd_learning_rate(
        'client_optimizer', client_optimizer, model)
    if client_steps is None:
      raise ValueError(
          '`client_steps` must be set for 2-way gradient transfer: the '
          'federated gradient is recovered as -delta / (eta * K), so every '
          'client must take the same known number of steps K.')

  config = mixed_process.ProcessConfig(
      objective=central_objective if (uses_objective or with_diagnostics)
      else None,
      server=server_update.ServerUpdateConfig(
          central_steps=central_steps,
          central_batch_size=central_batch_size or 1,
          federated_weight=float(federated_weight),
          central_weight=float(central_weight),
          central_clip_norm=central_clip_norm,
          augment_central_steps=two_way,
          recover_federated_gradient=two_way,
          client_learning_rate=client_learning_rate,
          client_steps=client_steps,
          seed=seed,
          with_diagnostics=with_diagnostics,
          # Else f_c(x^(t)) comes with the g~_c computed before the
          # broadcast.
          report_central_loss=(carry_central_gradient
                               or not send_central_gradient),
          carry_central_gradient=carry_central_gradient,
      ),
      client_steps=client_steps,
      client_weighting=client_weighting,
      send_central_gradient=send_central_gradient,
      transfer_examples=transfer_examples,
      resample_transfer_each_round=resample_transfer_each_round,
      transfer_batch_size=transfer_batch_size,
      initial_trainable_fn=initial_trainable_fn,
      selection=embedding_selection,
  )
  return mixed_process.build_mixed_process(
      model,
      config,
      client_optimizer=client_optimizer,
      server_optimizer=server_optimizer,
      central_optimizer=central_optimizer if central_steps > 0 else None,
      merge_optimizer=merge_optimizer if central_steps > 0 else None,
      model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator,
  )
