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
"""The asynchronous algorithms by name: which builder, which hyperparameters.

The asynchronous algorithms of the guided-model-merging paper (Zhu et al.,
"Guided Model Merging for Hybrid Data Learning") and its baselines, as
`tff_mixed.async_registry`; the synchronous ones have a registry of their
own (`tff_mixed.registry`, `tff_mixed.algorithms.registry`). `build`
returns the server side, a `strategy.AsyncStrategy` (numpy, no TFF); the
clients train in a TFF computation of their own, and `tff_mixed.run_async`
runs both on an arrival schedule:

    strategy = async_registry.build('feddle', model, (server_x, server_y),
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
eta_c = eta, as in mixed FL) with `central_optimizer` 'sgd' or 'adam';
merges step with `server_lr` (eta_g, default 1) over `buffer_size` updates.
A hyperparameter no asynchronous algorithm takes is a `TypeError`, one a
named algorithm needs and lacks (e.g. `buffer_size` for `fedbuff`) a
`TypeError` naming it.

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

from tff_mixed.asynchronous import builders
from tff_mixed.asynchronous import strategy
from tff_mixed.core import validation

# The registry's public names.
__all__ = [
    'ALGORITHMS',
    'Algorithm',
    'CA2FL',
    'CENTER',
    'DEADLINE_FEDAVG',
    'FEDASYNC',
    'FEDBUFF',
    'FEDDF',
    'FEDDLE',
    'FED_FT',
    'HFCL',
    'HYPERPARAMETERS',
    'NAMES',
    'build',
    'get',
]

FEDASYNC = 'fedasync'
FEDBUFF = 'fedbuff'
CA2FL = 'ca2fl'
DEADLINE_FEDAVG = 'deadline_fedavg'
CENTER = 'center'
FED_FT = 'fed_ft'
HFCL = 'hfcl'
FEDDF = 'feddf'
FEDDLE = 'feddle'

# Where the names of the other kind live, for the error of an unknown name.
_SYNCHRONOUS_REGISTRY = 'tff_mixed.registry'


def _keywords(builder: Callable[..., Any], required: bool = False
              ) -> tuple[str, ...]:
  """The keyword-only arguments of a builder (its hyperparameters), or
  with `required` those of them without a default."""
  return tuple(
      p.name for p in inspect.signature(builder).parameters.values()
      if p.kind == inspect.Parameter.KEYWORD_ONLY
      and not (required and p.default is not inspect.Parameter.empty))


class Algorithm(NamedTuple):
  """One asynchronous algorithm of the registry.

  Attributes:
    name: The name binaries and results use.
    label: A human-readable name, for plots and tables.
    builder: Its builder in `builders`, `builder(model, central_data,
      **hyperparameters)`.
    takes_central_objective: Whether it trains on central data (the
      paper's server data).
    hyperparameters: The keyword arguments of `build` it takes besides
      `client_lr` (its builder's keyword-only arguments).
  """

  name: str
  label: str
  builder: Callable[..., strategy.AsyncStrategy]
  takes_central_objective: bool
  hyperparameters: tuple[str, ...]


ALGORITHMS: Mapping[str, Algorithm] = {
    name: Algorithm(name, label, builder, central, _keywords(builder))
    for name, label, builder, central in (
        (FEDASYNC, 'FedAsync', builders.build_fedasync, False),
        (FEDBUFF, 'FedBuff', builders.build_fedbuff, False),
        (CA2FL, 'CA2FL', builders.build_ca2fl, False),
        (DEADLINE_FEDAVG, 'FedAvg (deadline)',
         builders.build_deadline_fedavg, False),
        (CENTER, 'Center', builders.build_center, True),
        (FED_FT, 'Fed+FT', builders.build_fed_ft, True),
        (HFCL, 'HFCL', builders.build_hfcl, True),
        (FEDDF, 'FedDF', builders.build_feddf, True),
        (FEDDLE, 'Feddle', builders.build_feddle, True))
}
NAMES = tuple(ALGORITHMS)
HYPERPARAMETERS = frozenset(
    h for a in ALGORITHMS.values() for h in a.hyperparameters)


def get(name: str) -> Algorithm:
  """The asynchronous `Algorithm` called `name`.

  Raises:
    ValueError: If there is none, naming the ones there are and the
      registry of the synchronous algorithms.
  """
  validation.check_algorithm_name(name, NAMES, 'asynchronous', 'synchronous',
                                  _SYNCHRONOUS_REGISTRY)
  return ALGORITHMS[name]


def build(name: str, model: Any, central_objective: Optional[Any] = None, *,
          client_lr: Optional[float] = None,
          **hyperparameters: Any) -> strategy.AsyncStrategy:
  """Builds asynchronous algorithm `name`: its server strategy.

  One call serves every asynchronous algorithm: a hyperparameter the
  algorithm does not take (see `Algorithm.hyperparameters`; e.g.
  `buffer_size` for Center) is not passed to its builder, and one left out
  keeps the builder's default.

  Args:
    name: One of `NAMES`.
    model: The clients' `tff.learning.models.FunctionalModel`, as it is.
    central_objective: The central data (module docstring); required by
      every algorithm with `takes_central_objective`, ignored by the
      others.
    client_lr: eta, the clients' learning rate. The clients train in a
      computation of their own; the server's training on central data takes
      it as `central_lr` unless that is given (eta_c = eta).
    **hyperparameters: Keyword arguments of the builders, from
      `HYPERPARAMETERS`.

  Returns:
    A `strategy.AsyncStrategy` for `tff_mixed.run_async`.

  Raises:
    ValueError: If `name` is unknown (naming the synchronous registry), or
      an algorithm lacks its `central_objective`.
    TypeError: If a hyperparameter is unknown to every asynchronous
      algorithm, or one the algorithm needs is missing.
  """
  algorithm = get(name)
  unknown = sorted(set(hyperparameters) - HYPERPARAMETERS)
  if unknown:
    # `server_optimizer` belongs to the synchronous algorithms' server.
    hint = (' The asynchronous server steps with `server_lr`, not a '
            '`server_optimizer`.' if 'server_optimizer' in unknown else '')
    raise TypeError(f'Unknown hyperparameters {unknown}; the asynchronous '
                    f'algorithms take {sorted(HYPERPARAMETERS)}.{hint}')
  if algorithm.takes_central_objective and central_objective is None:
    raise ValueError(f'{name!r} needs a `central_objective`, its central '
                     'data.')
  kwargs = {k: v for k, v in hyperparameters.items()
            if k in algorithm.hyperparameters}
  missing = [h for h in _keywords(algorithm.builder, required=True)
             if h not in kwargs]
  if missing:
    raise TypeError(f'{name!r} needs the hyperparameters {missing}.')
  if ('central_lr' in algorithm.hyperparameters
      and kwargs.get('central_lr') is None and client_lr is not None):
    kwargs['central_lr'] = client_lr  # eta_c = eta, as in mixed FL.
  return algorithm.builder(model, central_objective, **kwargs)
