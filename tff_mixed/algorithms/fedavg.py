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
"""FedAvg composed from this library's components.

The FL-only and oracle baselines of arXiv:2205.13655 (section 4) are FedAvg
(McMahan et al. 2017) on the federated data. `tff.learning.algorithms.
build_weighted_fed_avg` is the reference; this builder composes the same
algorithm from the mixed FL components (broadcast, the clients' local SGD,
the weighted mean, SERVEROPTIMIZER) so that it also runs in the fast
simulation mode of groups of clients (`tff_mixed.simulation`), which
TFF's FedAvg has no notion of. `tests/client_groups_test.py` checks that both give
the same model and metrics.
"""

from collections.abc import Callable
from typing import Any, Optional

import tensorflow_federated as tff

from tff_mixed.algorithms import arguments
from tff_mixed.algorithms import choices
from tff_mixed.algorithms import components
from tff_mixed.core import inputs
from tff_mixed.simulation import client_groups as client_groups_lib


def build_fedavg(
    model: inputs.ModelInput,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    client_steps: Optional[int] = None,
    client_weighting: tff.learning.ClientWeighting = (
        tff.learning.ClientWeighting.NUM_EXAMPLES),
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
    metrics_aggregator: Optional[Callable[..., Any]] = None,
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds FedAvg as a mixed FL process without central work.

  The process has:

  *   `initialize: ( -> MixedFLState@SERVER)`
  *   `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
      <state=MixedFLState@SERVER, metrics=M@SERVER>)`, or with
      `client_groups` `(<MixedFLState@SERVER, id[?]@CLIENTS> -> ...)`
  *   `get_model_weights`, `set_model_weights`, `get_hparams`, `set_hparams`.

  `M['client_work']['train']` holds the training metrics where
  `build_weighted_fed_avg` puts them.

  Args:
    model: A `tff.learning.models.FunctionalModel` or a `model_fn`, as in
      `build_parallel_training`.
    client_optimizer: CLIENTOPTIMIZER.
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1.
    client_steps: K exact local steps (cycling through the data), or `None`
      for one pass over the client's dataset, as TFF's FedAvg takes.
    client_weighting: A `tff.learning.ClientWeighting`.
    model_aggregator: A `tff.aggregators.WeightedAggregationFactory` or an
      unweighted one such as `tff.learning.dp_aggregator`; `None` means
      `tff.aggregators.MeanFactory()`.
    metrics_aggregator: `None` means `tff.learning.metrics.sum_then_finalize`.
    client_groups: Optional `tff_mixed.ClientGroups` (the fast simulation
      mode; see `build_parallel_training`).

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range, or an aggregator cannot run in
      groups.
  """
  model = inputs.functional_model(model)
  args = arguments.check_builder_args(
      model=model, client_optimizer=client_optimizer,
      server_optimizer=server_optimizer, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator, client_groups=client_groups)
  return components.compose_mixed_process(
      model, choices.federated_only_components(args),
      metrics_aggregator=args.metrics_aggregator)
