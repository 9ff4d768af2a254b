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
"""Example Transfer, and FedAvg with shared data.

Example Transfer: arXiv:2111.12150 ("Jointly Learning from Decentralized
(Federated) and Centralized Data to Mitigate Distribution Shift"),
Algorithm 3: every client of every round gets its own fresh sample of central
examples. FedAvg with shared data: Zhao et al., "Federated Learning with
Non-IID Data", arXiv:1806.00582 (warm-up on a shared set G, then each client
gets its own random alpha-portion of G, once; beta = |G| / |D|).

Both send each client only its own examples, by `tff.federated_select` with
indices the client draws from a fingerprint of its data, the seed and (Example
Transfer) the round: the transfer distributor
(`tff_mixed/core/distributors.py`, `build_transfer_distributor`, over
`transfer_select.py`), whose examples the client work merges into the local
data.

Both need the central examples themselves on clients, which real FL
deployments usually forbid; they are here as reference points.
"""

from collections.abc import Callable
from typing import Any, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.algorithms import arguments
from tff_mixed.algorithms import choices
from tff_mixed.algorithms import components
from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import inputs
from tff_mixed.core import model_types
from tff_mixed.core import transfer_select
from tff_mixed.core import validation
from tff_mixed.simulation import client_groups as client_groups_lib


def _build_transfer_process(
    model, central_objective, client_optimizer, server_optimizer, *,
    examples_per_client, redraw_each_round, client_batch_size, client_steps,
    client_weighting, model_aggregator, metrics_aggregator, seed,
    initial_trainable_fn=None, client_groups=None):
  """FedAvg whose clients also train on their own central examples.

  Components: the broadcast of x^(t) plus `federated_select` of each
  client's examples (`distributors.build_transfer_distributor`; for groups
  of clients `group_distribution.build_group_transfer_distributor`),
  client work on the merged data, the model aggregator's mean, no central
  work and SERVEROPTIMIZER alone in the finalizer (w_f = 1, w_c = 0).
  """
  args = arguments.check_builder_args(
      model=model, client_optimizer=client_optimizer,
      server_optimizer=server_optimizer, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator, seed=seed,
      client_groups=client_groups)
  validation.check_objective(central_objective, model, require_data=True,
                             seed=seed)
  transfer = transfer_select.build_transfer_computations(
      central_objective, model_types.data_type(model),
      examples_per_client=examples_per_client, seed=seed,
      redraw_each_round=redraw_each_round)
  return components.compose_mixed_process(
      model, choices.federated_only_components(
          args, transfer=transfer, transfer_batch_size=client_batch_size),
      metrics_aggregator=args.metrics_aggregator,
      initial_trainable_fn=initial_trainable_fn)


def build_example_transfer(
    model: inputs.ModelInput,
    central_objective: central_lib.CentralObjective,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    examples_per_client: int,
    client_batch_size: int,
    client_steps: Optional[int] = None,
    client_weighting: tff.learning.ClientWeighting = (
        tff.learning.ClientWeighting.NUM_EXAMPLES),
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
    metrics_aggregator: Optional[Callable[..., Any]] = None,
    seed: int = 0,
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds an Example Transfer `tff.learning.templates.LearningProcess`.

  The process has:

  *   `initialize: ( -> MixedFLState@SERVER)`
  *   `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
      <state=MixedFLState@SERVER, metrics=M@SERVER>)`
  *   `get_model_weights`, `set_model_weights`, `get_hparams`, `set_hparams`.

  Each round every client gets its own `examples_per_client` central examples,
  drawn without replacement afresh for that client and round (Algorithm 3,
  line 3). In a simulation clients have no id, so the draw is seeded by a
  fingerprint of the client's examples, `seed` and the round number (which the
  state holds, so a resumed run draws the same examples); two clients with
  identical data therefore get the same examples. The client sends the drawn
  indices to `tff.federated_select`, which delivers only those examples (the
  download is x^(t) plus `examples_per_client` examples). Each client
  unbatches its data, merges in its central examples, shuffles (seeded per
  client and round), re-batches with `client_batch_size` and trains as in
  FedAvg; the server applies SERVEROPTIMIZER to the weighted mean update.

  Args:
    model: A `tff.learning.models.FunctionalModel` or a `model_fn`, as in
      `build_parallel_training`.
    central_objective: f_c with central examples
      (`tff_mixed.central_data_objective`) in the model's input structure.
    client_optimizer: CLIENTOPTIMIZER.
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1.
    examples_per_client: Central examples sent to each client per round (all
      of them if the central set is smaller).
    client_batch_size: Local batch size of the merged data.
    client_steps: K exact local steps, or `None` for one pass over the merged
      data.
    client_weighting: A `tff.learning.ClientWeighting`.
    model_aggregator: A `tff.aggregators.WeightedAggregationFactory`, or an
      unweighted one such as `tff.learning.dp_aggregator` (DP-FedAvg).
    metrics_aggregator: `None` means `tff.learning.metrics.sum_then_finalize`.
    seed: Seeds each client's central sample and shuffle.
    client_groups: Optional `tff_mixed.ClientGroups`: each CLIENTS member
      of `next` is a group of client ids trained in one computation, each
      member drawing and reading its own central examples there
      (`simulation/client_groups.py`); `None`: one client per member.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range or the central data does not fit
      the model.
  """
  model = inputs.functional_model(model)
  validation.check_positive_int('examples_per_client', examples_per_client)
  validation.check_positive_int('client_batch_size', client_batch_size)
  return _build_transfer_process(
      model, central_objective, client_optimizer, server_optimizer,
      examples_per_client=examples_per_client, redraw_each_round=True,
      client_batch_size=client_batch_size, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator, seed=seed,
      client_groups=client_groups)

def build_fedavg_with_shared_data(
    model: inputs.ModelInput,
    central_objective: central_lib.CentralObjective,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    beta: float,
    alpha: float,
    num_client_examples: int,
    client_batch_size: int,
    warmup_steps: int,
    warmup_learning_rate: float,
    warmup_batch_size: int,
    client_steps: Optional[int] = None,
    client_weighting: tff.learning.ClientWeighting = (
        tff.learning.ClientWeighting.NUM_EXAMPLES),
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
    metrics_aggregator: Optional[Callable[..., Any]] = None,
    seed: int = 0,
    client_groups: Optional[client_groups_lib.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds FedAvg with shared data (Zhao et al. 2018) as a LearningProcess.

  Type signatures as in `build_example_transfer`.

  A shared set G of `round(beta * num_client_examples)` central examples is
  drawn once (seeded, `shared_set_indices`). The initial model is warmed up
  with `warmup_steps` SGD steps on G. Each client has its own random
  `max(1, round(alpha * |G|))` examples of G, fixed for the whole run: Zhao et
  al. (section 4, figure 6) distribute "a random alpha portion of G" to each
  client once, with the warm-up model. The portion is drawn, as in
  `build_example_transfer`, from a fingerprint of the client's data and
  `seed` (not the round), so the same client gets the same portion every
  round and after a resume, and two clients with identical data get the same
  portion. Simulated clients keep no state between rounds, so the portion is
  re-sent each round with `tff.federated_select` (only those examples), and
  merged into the client's data as in Example Transfer.

  Args:
    model: A `tff.learning.models.FunctionalModel` or a `model_fn`, as in
      `build_parallel_training`.
    central_objective: f_c with central examples, from which G is drawn.
    client_optimizer: CLIENTOPTIMIZER.
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate 1.
    beta: |G| / |D|, the size of the shared set relative to all client data.
    alpha: Fraction of G given to each client, in (0, 1].
    num_client_examples: |D|, the total number of client examples.
    client_batch_size: Local batch size of the merged data.
    warmup_steps: SGD steps on G for the initial model (0: no warm-up).
    warmup_learning_rate: Learning rate of the warm-up.
    warmup_batch_size: Batch size of the warm-up.
    client_steps: K exact local steps, or `None` for one pass.
    client_weighting: A `tff.learning.ClientWeighting`.
    model_aggregator: A `tff.aggregators.WeightedAggregationFactory`, or an
      unweighted one such as `tff.learning.dp_aggregator` (DP-FedAvg).
    metrics_aggregator: `None` means `tff.learning.metrics.sum_then_finalize`.
    seed: Seeds G, each client's portion, the warm-up batches and the
      shuffles.
    client_groups: Optional `tff_mixed.ClientGroups`: each CLIENTS member
      of `next` is a group of client ids trained in one computation, each
      member drawing and reading its own central examples there
      (`simulation/client_groups.py`); `None`: one client per member.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If a value is out of range, or G would be empty or larger than
      the central data.
  """
  model = inputs.functional_model(model)
  validation.check_objective(central_objective, model, require_data=True)
  validation.check_positive_float('beta', beta)
  validation.check_positive_float('alpha', alpha)
  if alpha > 1:
    raise ValueError(f'`alpha` must be in (0, 1], got {alpha}.')
  validation.check_positive_int('num_client_examples', num_client_examples)
  validation.check_positive_int('warmup_steps', warmup_steps, allow_zero=True)
  validation.check_positive_float('warmup_learning_rate', warmup_learning_rate)
  validation.check_positive_int('warmup_batch_size', warmup_batch_size)
  shared_size = int(round(beta * num_client_examples))
  available = central_objective.num_examples
  if not 1 <= shared_size <= available:
    raise ValueError(
        f'`beta` * `num_client_examples` = {beta} * {num_client_examples} = '
        f'{shared_size} shared examples, but it must be between 1 and the '
        f'{available} central examples available.')
  per_client = max(1, int(round(alpha * shared_size)))
  indices = shared_set_indices(available, shared_size, seed)
  shared = central_lib.central_data_objective(
      tf.nest.map_structure(lambda a: a[indices], central_objective.data),
      loss_fn=central_objective.loss_fn,
      name=f'{central_objective.name}_shared')
  loss_fn = shared.loss_fn or central_lib.model_loss_fn(model)

  def warmup(trainable, non_trainable):
    for step in range(warmup_steps):
      batch = central_lib.sample_batch(shared, warmup_batch_size, seed + 2,
                                       tf.constant(0), tf.constant(step))
      _, gradient = central_lib.loss_and_gradient(loss_fn, trainable,
                                                  non_trainable, batch)
      trainable = tuple(
          w - warmup_learning_rate * g for w, g in zip(trainable, gradient))
    return trainable

  return _build_transfer_process(
      model, shared, client_optimizer, server_optimizer,
      examples_per_client=per_client, redraw_each_round=False,
      client_batch_size=client_batch_size, client_steps=client_steps,
      client_weighting=client_weighting, model_aggregator=model_aggregator,
      metrics_aggregator=metrics_aggregator, seed=seed,
      initial_trainable_fn=warmup if warmup_steps > 0 else None,
      client_groups=client_groups)

def shared_set_indices(num_central: int, shared_size: int,
                       seed: int) -> np.ndarray:
  """The indices (into the central data) of the shared set G, sorted.

  A uniform sample without replacement of `shared_size` of `num_central`
  indices, from numpy's generator seeded by `seed`.
  """
  rng = np.random.default_rng(seed)
  return np.sort(rng.choice(num_central, size=shared_size, replace=False))
