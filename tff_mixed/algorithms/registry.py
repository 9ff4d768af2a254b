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
"""The synchronous algorithms by name: which builder, which hyperparameters.

Experiments and benchmarks pick algorithms by name (`--scenarios`,
`--algorithms`); this is the one place that turns a name into a
synchronous algorithm: `build` returns a
`tff.learning.templates.LearningProcess`. The asynchronous algorithms (the
guided-model-merging paper, Zhu et al.), whose `build` returns an
`AsyncStrategy` for `run_async`, have a registry of their own,
`tff_mixed.asynchronous.registry` (`tff_mixed.async_registry`).

Every algorithm here runs SGD with the paper's learning-rate convention
(Augenstein et al., arXiv:2205.13655, section 4 and appendix B): the client
learning rate eta also serves the central steps (eta_c = eta), and the
server and merge steps use eta_s = eta_m = 1 unless a server optimizer is
given (e.g. FedAdam's).

*   `fedavg`: FedAvg on the federated data alone (the FL-only and oracle
    baselines). With `client_steps` or `client_groups`, the algorithm
    composed from this library's components (`fedavg.build_fedavg`), whose
    clients take exactly K = `client_steps` local steps, cycling through
    their data, as the mixed algorithms' do: built with the same arguments,
    FedAvg and a mixed algorithm do the same local work. Without either,
    TFF's FedAvg (the unweighted variant when the model aggregator is
    unweighted, e.g. DP-FedAvg's), which takes one pass over its data.
*   `parallel_training`, `one_way_gt`, `two_way_gt`: the mixed FL algorithms
    of arXiv:2205.13655, Algorithm 1.
*   `example_transfer`: central examples sent to the clients (section 3).
"""

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Optional

import tensorflow_federated as tff

from tff_mixed.algorithms import example_transfer
from tff_mixed.algorithms import fedavg
from tff_mixed.algorithms import gradient_transfer
from tff_mixed.algorithms import parallel_training
from tff_mixed.core import inputs
from tff_mixed.core import validation

# The registry's public names.
__all__ = [
    'ALGORITHMS',
    'Algorithm',
    'EXAMPLE_TRANSFER',
    'FEDAVG',
    'HYPERPARAMETERS',
    'NAMES',
    'ONE_WAY_GT',
    'PARALLEL_TRAINING',
    'TWO_WAY_GT',
    'build',
    'get',
]

FEDAVG = 'fedavg'
PARALLEL_TRAINING = 'parallel_training'
ONE_WAY_GT = 'one_way_gt'
TWO_WAY_GT = 'two_way_gt'
EXAMPLE_TRANSFER = 'example_transfer'

# Where the asynchronous algorithms' names live, for the error of an unknown
# name (this layer does not import it: the two registries sit side by side).
_ASYNCHRONOUS_REGISTRY = 'tff_mixed.asynchronous.registry'

# What every mixed FL algorithm of Algorithm 1 takes besides its optimizers.
_MIXING = ('client_steps', 'central_batch_size', 'federated_weight',
           'central_weight', 'model_aggregator', 'central_clip_norm', 'seed',
           'with_diagnostics', 'embedding_selection', 'client_groups')


class Algorithm(NamedTuple):
  """One synchronous algorithm of the registry.

  Attributes:
    name: The name binaries and results use.
    label: A human-readable name, for plots and tables.
    builder: The public builder (for `fedavg`, TFF's
      `build_weighted_fed_avg`; `build` switches to
      `build_unweighted_fed_avg` for an unweighted model aggregator).
    takes_central_objective: Whether it trains on a central loss f_c.
    takes_central_optimizer: Whether the server takes central steps of its
      own (CENTRALOPTIMIZER, and MERGEOPTIMIZER to merge them).
    hyperparameters: The keyword arguments of `build` it takes besides the
      learning rate and the server optimizer.
  """

  name: str
  label: str
  builder: Callable[..., Any]
  takes_central_objective: bool
  takes_central_optimizer: bool
  hyperparameters: tuple[str, ...]


ALGORITHMS: Mapping[str, Algorithm] = {a.name: a for a in (
    Algorithm(FEDAVG, 'FedAvg',
              tff.learning.algorithms.build_weighted_fed_avg,
              takes_central_objective=False, takes_central_optimizer=False,
              hyperparameters=('model_aggregator', 'client_steps',
                               'client_groups')),
    Algorithm(PARALLEL_TRAINING, 'Parallel Training',
              parallel_training.build_parallel_training,
              takes_central_objective=True, takes_central_optimizer=True,
              hyperparameters=(*_MIXING, 'central_steps')),
    Algorithm(ONE_WAY_GT, '1-way GT',
              gradient_transfer.build_one_way_gradient_transfer,
              takes_central_objective=True, takes_central_optimizer=False,
              hyperparameters=_MIXING),
    Algorithm(TWO_WAY_GT, '2-way GT',
              gradient_transfer.build_two_way_gradient_transfer,
              takes_central_objective=True, takes_central_optimizer=True,
              hyperparameters=(*_MIXING, 'central_steps',
                               'augmenting_central_gradient')),
    Algorithm(EXAMPLE_TRANSFER, 'Example Transfer',
              example_transfer.build_example_transfer,
              takes_central_objective=True, takes_central_optimizer=False,
              hyperparameters=('examples_per_client', 'client_batch_size',
                               'client_steps', 'model_aggregator', 'seed',
                               'client_groups')),
)}
NAMES = tuple(ALGORITHMS)
HYPERPARAMETERS = frozenset(
    h for a in ALGORITHMS.values() for h in a.hyperparameters)


def get(name: str) -> Algorithm:
  """The synchronous `Algorithm` called `name`.

  Raises:
    ValueError: If there is none, naming the ones there are and the
      registry of the asynchronous algorithms.
  """
  validation.check_algorithm_name(name, NAMES, 'synchronous', 'asynchronous',
                                  _ASYNCHRONOUS_REGISTRY)
  return ALGORITHMS[name]


def _sgd(learning_rate: float) -> tff.learning.optimizers.Optimizer:
  return tff.learning.optimizers.build_sgdm(learning_rate=learning_rate)


def build(
    name: str,
    model: inputs.ModelInput,
    central_objective: Optional[Any] = None,
    *,
    client_lr: Optional[float] = None,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    **hyperparameters: Any,
) -> tff.learning.templates.LearningProcess:
  """Builds synchronous algorithm `name`: its learning process.

  One call serves every algorithm: a hyperparameter the algorithm does not
  take (see `Algorithm.hyperparameters`; e.g. `central_batch_size` for
  FedAvg, `central_steps` for 1-way GT) is not passed to its builder, and
  one left out keeps the builder's default.

  Args:
    name: One of `NAMES`.
    model: The model to train: a `tff.learning.models.FunctionalModel` or a
      `model_fn` (see `tff_mixed.functional_model`); every algorithm, TFF's
      FedAvg included, gets its FunctionalModel.
    central_objective: The central loss f_c; required by every algorithm
      with `takes_central_objective`, ignored by the others.
    client_lr: eta, the SGD learning rate of the clients and, for the mixed
      algorithms, of the central steps (eta_c = eta); required.
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with learning rate
      1.
    **hyperparameters: Keyword arguments of the builders, from
      `HYPERPARAMETERS`.

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    ValueError: If `name` is unknown (an asynchronous name among them: the
      error names `tff_mixed.asynchronous.registry`), or an algorithm lacks
      its `central_objective` or `client_lr`.
    TypeError: If a hyperparameter is unknown to every algorithm.
  """
  algorithm = get(name)
  unknown = sorted(set(hyperparameters) - HYPERPARAMETERS)
  if unknown:
    raise TypeError(f'Unknown hyperparameters {unknown}; the algorithms take '
                    f'{sorted(HYPERPARAMETERS)}.')
  kwargs = {k: v for k, v in hyperparameters.items()
            if k in algorithm.hyperparameters}
  if algorithm.takes_central_objective and central_objective is None:
    raise ValueError(f'{name!r} needs a `central_objective`.')
  if client_lr is None:
    raise ValueError(f'{name!r} needs `client_lr`, the clients\' learning '
                     'rate.')
  model = inputs.functional_model(model)
  if not algorithm.takes_central_objective:
    server = _sgd(1.0) if server_optimizer is None else server_optimizer
    if (kwargs.get('client_groups') is not None
        or kwargs.get('client_steps') is not None):
      # TFF's FedAvg has neither groups of clients nor K exact steps (it
      # takes one pass over its data); the composed FedAvg equals it on K
      # batches (tests/client_groups_test.py) and has both.
      return fedavg.build_fedavg(model, _sgd(client_lr), server, **kwargs)
    kwargs.pop('client_groups', None)
    kwargs.pop('client_steps', None)
    builder = algorithm.builder
    if isinstance(kwargs.get('model_aggregator'),
                  tff.aggregators.UnweightedAggregationFactory):
      builder = tff.learning.algorithms.build_unweighted_fed_avg
    return builder(model, client_optimizer_fn=_sgd(client_lr),
                   server_optimizer_fn=server, **kwargs)
  if algorithm.takes_central_optimizer:
    # MERGEOPTIMIZER is left to the builder's default, SGD at eta_m = 1.
    kwargs['central_optimizer'] = _sgd(client_lr)
  return algorithm.builder(model, central_objective,
                           client_optimizer=_sgd(client_lr),
                           server_optimizer=server_optimizer, **kwargs)

