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
"""The scenarios of a comparison, and the algorithm each runs.

A comparison (Augenstein et al., arXiv:2205.13655, section 4.1) trains the
same initial model on the same clients per round in every scenario:

*   `fl_only`: FedAvg on the federated clients alone.
*   `parallel_training`, `one_way_gt`, `two_way_gt`: the mixed FL algorithms,
    with w_f = w_c = 0.5, SGD everywhere, eta_c = eta, eta_s = eta_m = 1, K
    local steps and the paper's central batch rule (appendix B.2).
*   `example_transfer`: central examples sent to the clients (a reference
    point that real deployments usually forbid).
*   `oracle`: FedAvg with the central data left on the clients.
"""

from collections.abc import Sequence
from typing import NamedTuple, Optional, Union

import numpy as np
import tensorflow_federated as tff

import tff_mixed
from tff_mixed import registry

FL_ONLY = 'fl_only'
PARALLEL_TRAINING = registry.PARALLEL_TRAINING
ONE_WAY_GT = registry.ONE_WAY_GT
TWO_WAY_GT = registry.TWO_WAY_GT
EXAMPLE_TRANSFER = registry.EXAMPLE_TRANSFER
ORACLE = 'oracle'
SCENARIOS = (FL_ONLY, PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT,
             EXAMPLE_TRANSFER, ORACLE)
# The two FedAvg baselines differ only in their client data.
BASELINES = (FL_ONLY, ORACLE)
ALGORITHM_OF = {
    FL_ONLY: registry.FEDAVG,
    ORACLE: registry.FEDAVG,
    **{name: name for name in (PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT,
                               EXAMPLE_TRANSFER)},
}
LABELS = {
    FL_ONLY: 'FL only',
    PARALLEL_TRAINING: 'Parallel Training',
    ONE_WAY_GT: '1-way GT',
    TWO_WAY_GT: '2-way GT',
    EXAMPLE_TRANSFER: 'Example Transfer',
    ORACLE: 'Oracle (all data on clients)',
}


class CentralBatchSizes(NamedTuple):
  """Central batch sizes per algorithm."""

  parallel_training: int
  one_way_gt: int
  two_way_gt: int


def paper_central_batch_sizes(
    clients_per_round: int, client_steps: int, client_batch_size: int,
    num_central_examples: int) -> CentralBatchSizes:
  """The central batch sizes of arXiv:2205.13655, appendix B.2.

  The rule gives client and central gradient noise the same weight in the
  convergence bounds: |B_c| = S |B_i| for Parallel Training and 2-way GT,
  whose central steps pair with the S client steps of a round, and
  |B_c| = K S |B_i| for 1-way GT, whose single central gradient is reused in
  all K local steps. All are capped at the central data size.

  Args:
    clients_per_round: S.
    client_steps: K.
    client_batch_size: |B_i|.
    num_central_examples: Number of central examples (the cap).

  Returns:
    A `CentralBatchSizes`.
  """
  per_step = min(clients_per_round * client_batch_size, num_central_examples)
  one_way = min(client_steps * clients_per_round * client_batch_size,
                num_central_examples)
  return CentralBatchSizes(parallel_training=per_step, one_way_gt=one_way,
                           two_way_gt=per_step)


def build_process(
    scenario: str,
    model: tff.learning.models.FunctionalModel,
    central_data: Union[tuple[np.ndarray, np.ndarray],
                        tff_mixed.CentralObjective],
    *,
    client_lr: float,
    client_steps: int,
    central_batch_sizes: CentralBatchSizes,
    examples_per_client: int,
    client_batch_size: int,
    seed: int,
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
    with_diagnostics: bool = False,
    federated_weight: float = 0.5,
    central_weight: float = 0.5,
    central_clip_norm: Optional[float] = None,
    client_groups: Optional[tff_mixed.ClientGroups] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds the learning process of one scenario (`registry.build`).

  Per client, `next` takes `{B*}@CLIENTS`; with `client_groups`,
  `id[?]@CLIENTS`, groups of client ids. Every algorithm's clients, FedAvg's
  included (the composed one, `registry.build`), take `client_steps` steps.

  Args:
    scenario: One of `SCENARIOS`.
    model: The `tff.learning.models.FunctionalModel` to train.
    central_data: `(x, y)` numpy arrays of the central (negative) examples,
      or a `tff_mixed.CentralObjective` (e.g. over an `ExampleStore`).
    client_lr: eta, the client learning rate (and eta_c).
    client_steps: K, the local steps of every algorithm's clients.
    central_batch_sizes: Central batch sizes per algorithm.
    examples_per_client: Central examples Example Transfer sends each client.
    client_batch_size: Local batch size after Example Transfer's merge.
    seed: Seeds central sampling.
    model_aggregator: Aggregator of client updates (e.g. a DP one); `None`
      for the weighted mean.
    with_diagnostics: Report the (G, B)-BGD estimates G~_t^2 and B~_t^2
      (arXiv:2205.13655, eq. 7) from Parallel Training and gradient transfer.
    federated_weight: w_f of the mixed algorithms.
    central_weight: w_c of the mixed algorithms.
    central_clip_norm: Clip each central gradient to this L2 norm (`None`:
      no clipping).
    client_groups: Optional `tff_mixed.ClientGroups`: the fast simulation
      mode (`tff_mixed.simulation.client_groups`), same results.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    ValueError: If `scenario` is unknown.
  """
  if scenario not in SCENARIOS:
    raise ValueError(
        f'`scenario` must be one of {SCENARIOS}, got {scenario!r}.')
  algorithm = ALGORITHM_OF[scenario]
  objective = None
  if scenario not in BASELINES:
    if isinstance(central_data, tff_mixed.CentralObjective):
      objective = central_data
    else:
      objective = tff_mixed.central_data_objective(central_data,
                                                   name='negatives')
  return registry.build(
      algorithm, model, objective, client_lr=client_lr,
      client_steps=client_steps,
      central_batch_size=getattr(central_batch_sizes, algorithm, None),
      examples_per_client=examples_per_client,
      client_batch_size=client_batch_size, seed=seed,
      model_aggregator=model_aggregator, with_diagnostics=with_diagnostics,
      federated_weight=federated_weight, central_weight=central_weight,
      central_clip_norm=central_clip_norm, client_groups=client_groups)


def check_scenarios(scenarios: Sequence[str]) -> tuple[str, ...]:
  """`scenarios` as a tuple, if they are distinct names from `SCENARIOS`.

  Raises:
    TypeError: If `scenarios` is a string.
    ValueError: If it is empty, or has unknown names or repeats.
  """
  if isinstance(scenarios, str):
    raise TypeError('`scenarios` must be a sequence of names, got the string '
                    f'{scenarios!r}; wrap it in a list.')
  scenarios = tuple(scenarios)
  if not scenarios:
    raise ValueError(f'`scenarios` must name at least one of {SCENARIOS}.')
  unknown = [s for s in scenarios if s not in SCENARIOS]
  if unknown:
    raise ValueError(f'`scenarios` has unknown names {unknown}; choose from '
                     f'{SCENARIOS}.')
  if len(set(scenarios)) != len(scenarios):
    raise ValueError(f'`scenarios` has duplicates: {list(scenarios)}.')
  return scenarios
