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
"""The algorithms by name: which builder, with which hyperparameters.

Experiments and benchmarks pick algorithms by name (`--scenarios`,
`--algorithms`, `--methods`); this is the one place that turns a name into
an algorithm, synchronous or asynchronous (`Algorithm.asynchronous`).

Synchronous (`SYNCHRONOUS_NAMES`): `build` returns a
`tff.learning.templates.LearningProcess`. Every one runs SGD with the
paper's learning-rate convention (Augenstein et al., arXiv:2205.13655,
section 4 and appendix B): the client learning rate eta also serves the
central steps (eta_c = eta), and the server and merge steps use eta_s =
eta_m = 1 unless a server optimizer is given (e.g. FedAdam's).

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

Asynchronous (`ASYNCHRONOUS_NAMES`; the guided-model-merging paper, Zhu et
al., "Guided Model Merging for Hybrid Data Learning"): `build` returns the
server side, a `tff_mixed.asynchronous.strategy.AsyncStrategy` (numpy, no
TFF); the clients train in a TFF computation of their own, and
`tff_mixed.run_async` runs both on an arrival schedule:

    strategy = registry.build('feddle', model, (server_x, server_y),
                              buffer_size=10, search_steps=10)
    training = client_training.build_client_training(model, optimizer)
    schedule = tff_mixed.AsyncSchedule(num_clients, 10, delay_std=5.0,
                                       num_rounds=200, seed=0)
    result = tff_mixed.run_async(strategy, schedule, training, dataset_fn,
                                 model.initial_weights[0],
                                 evaluate_fn=evaluate, observer=observer)

(`client_training` is `tff_mixed.asynchronous.client_training`;
`dataset_fn(client, round_num)` gives a client's data; an optional
`tff_mixed.AsyncObserver` sees every merge and round.) The model is the
clients' `tff.learning.models.FunctionalModel`. `central_objective` is the
central data the paper calls server data, for `center`, `fed_ft`, `hfcl`,
`feddf` and `feddle`: `central_data_objective((x, y))`, arrays `(x, y)` or
a finite `tf.data.Dataset` of examples (Feddle's is one of batches, used as
it is; FedDF uses x only, and the out-of-domain Feddle and FedDF take labels
of their own). The server's training on it takes `central_steps` a round,
batches of `central_batch_size`, step `central_lr` (default `client_lr`:
eta_c = eta) with `central_optimizer` 'sgd' or 'adam'; merges step with
`server_lr` (eta_g, default 1) over `buffer_size` updates.
`server_optimizer` is for the synchronous algorithms only. A hyperparameter
no algorithm takes is a `TypeError`, one a named algorithm needs and lacks
(e.g. `buffer_size` for `fedbuff`) a `TypeError` naming it.

*   `fedasync`, `fedbuff`, `ca2fl`: the asynchronous baselines
    (`server_strategies`); `fedbuff` with `weighting='num_examples'` and a
    buffer of a round's clients is weighted FedAvg.
*   `deadline_fedavg`: synchronous FedAvg that drops late updates.
*   `center`, `fed_ft`, `hfcl`, `feddf`: the hybrid baselines
    (`hybrid_baselines`): central data only (trained once), FedBuff then
    fine-tuning, the server as one more client, FedBuff then distillation.
*   `feddle`: guided model merging (`feddle.FeddleMethod`), in domain or,
    with `out_of_domain=True`, out of domain.
"""

from collections.abc import Callable, Mapping
import inspect
from typing import Any, NamedTuple, Optional

import tensorflow_federated as tff

from tff_mixed.algorithms import example_transfer
from tff_mixed.algorithms import fedavg
from tff_mixed.algorithms import gradient_transfer
from tff_mixed.algorithms import parallel_training
from tff_mixed.asynchronous import builders as async_builders
from tff_mixed.core import inputs

FEDAVG = 'fedavg'
PARALLEL_TRAINING = 'parallel_training'
ONE_WAY_GT = 'one_way_gt'
TWO_WAY_GT = 'two_way_gt'
EXAMPLE_TRANSFER = 'example_transfer'
FEDASYNC = 'fedasync'
FEDBUFF = 'fedbuff'
CA2FL = 'ca2fl'
DEADLINE_FEDAVG = 'deadline_fedavg'
CENTER = 'center'
FED_FT = 'fed_ft'
HFCL = 'hfcl'
FEDDF = 'feddf'
FEDDLE = 'feddle'

# What every mixed FL algorithm of Algorithm 1 takes besides its optimizers.
_MIXING = ('client_steps', 'central_batch_size', 'federated_weight',
           'central_weight', 'model_aggregator', 'central_clip_norm', 'seed',
           'with_diagnostics', 'embedding_selection', 'client_groups')


def _keywords(builder: Callable[..., Any]) -> tuple[str, ...]:
  """The keyword-only arguments of an asynchronous builder."""
  return tuple(
      p.name for p in inspect.signature(builder).parameters.values()
      if p.kind == inspect.Parameter.KEYWORD_ONLY)


class Algorithm(NamedTuple):
  """One algorithm of the registry.

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
    asynchronous: Whether it is an asynchronous algorithm: its builder
      returns a `strategy.AsyncStrategy` for `run_async`.
  """

  name: str
  label: str
  builder: Callable[..., Any]
  takes_central_objective: bool
  takes_central_optimizer: bool
  hyperparameters: tuple[str, ...]
  asynchronous: bool = False


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
    *(Algorithm(name, label, builder,
                takes_central_objective=central,
                takes_central_optimizer=False,
                hyperparameters=_keywords(builder), asynchronous=True)
      for name, label, builder, central in (
          (FEDASYNC, 'FedAsync', async_builders.build_fedasync, False),
          (FEDBUFF, 'FedBuff', async_builders.build_fedbuff, False),
          (CA2FL, 'CA2FL', async_builders.build_ca2fl, False),
          (DEADLINE_FEDAVG, 'FedAvg (deadline)',
           async_builders.build_deadline_fedavg, False),
          (CENTER, 'Center', async_builders.build_center, True),
          (FED_FT, 'Fed+FT', async_builders.build_fed_ft, True),
          (HFCL, 'HFCL', async_builders.build_hfcl, True),
          (FEDDF, 'FedDF', async_builders.build_feddf, True),
          (FEDDLE, 'Feddle', async_builders.build_feddle, True))),
)}
NAMES = tuple(ALGORITHMS)
SYNCHRONOUS_NAMES = tuple(n for n, a in ALGORITHMS.items()
                          if not a.asynchronous)
ASYNCHRONOUS_NAMES = tuple(n for n, a in ALGORITHMS.items() if a.asynchronous)
HYPERPARAMETERS = frozenset(
    h for a in ALGORITHMS.values() for h in a.hyperparameters)


def get(name: str) -> Algorithm:
  """The `Algorithm` called `name`.

  Raises:
    ValueError: If there is none, naming the ones there are.
  """
  if name not in ALGORITHMS:
    raise ValueError(f'Unknown algorithm {name!r}; the algorithms are '
                     f'{list(NAMES)}.')
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
) -> Any:
  """Builds algorithm `name`: a learning process, or an async strategy.

  One call serves every algorithm: a hyperparameter the algorithm does not
  take (see `Algorithm.hyperparameters`; e.g. `central_batch_size` for
  FedAvg, `buffer_size` for Parallel Training) is not passed to its
  builder, and one left out keeps the builder's default.

  Args:
    name: One of `NAMES`.
    model: The model to train: a `tff.learning.models.FunctionalModel` or a
      `model_fn` (see `tff_mixed.functional_model`); every synchronous
      algorithm, TFF's FedAvg included, gets its FunctionalModel. The
      asynchronous ones take the clients' FunctionalModel as it is.
    central_objective: The central loss f_c, or for the asynchronous
      algorithms the central data (module docstring); required by every
      algorithm with `takes_central_objective`, ignored by the others.
    client_lr: eta, the SGD learning rate of the clients and, for the mixed
      algorithms, of the central steps (eta_c = eta); required by the
      synchronous algorithms. The asynchronous ones' clients train in a
      computation of their own; their server training on central data
      takes it as `central_lr` unless that is given.
    server_optimizer: SERVEROPTIMIZER of the synchronous algorithms; `None`
      means SGD with learning rate 1.
    **hyperparameters: Keyword arguments of the builders, from
      `HYPERPARAMETERS`.

  Returns:
    A `tff.learning.templates.LearningProcess` (synchronous) or a
    `tff_mixed.asynchronous.strategy.AsyncStrategy` (asynchronous).

  Raises:
    ValueError: If `name` is unknown, an algorithm lacks its
      `central_objective` or `client_lr`, or an asynchronous one is given
      a `server_optimizer`.
    TypeError: If a hyperparameter is unknown to every algorithm, or one an
      asynchronous algorithm needs is missing.
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
  if algorithm.asynchronous:
    return _build_asynchronous(algorithm, model, central_objective,
                               client_lr, server_optimizer, kwargs)
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


def _build_asynchronous(algorithm: Algorithm, model: Any,
                        central_objective: Any, client_lr: Optional[float],
                        server_optimizer: Any, kwargs: dict[str, Any]) -> Any:
  """An asynchronous algorithm's strategy (`build`)."""
  if server_optimizer is not None:
    raise ValueError(
        f'{algorithm.name!r} is asynchronous: its server steps with '
        '`server_lr`, not a `server_optimizer`.')
  if ('central_lr' in algorithm.hyperparameters
      and kwargs.get('central_lr') is None and client_lr is not None):
    kwargs['central_lr'] = client_lr  # eta_c = eta, as in mixed FL.
  return algorithm.builder(model, central_objective, **kwargs)
