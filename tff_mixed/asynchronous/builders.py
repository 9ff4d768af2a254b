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
"""The asynchronous algorithms' builders, for the asynchronous registry.

Each `build_<algorithm>(model, central_data, **hyperparameters)` returns the
algorithm's `strategy.AsyncStrategy` from flat keyword hyperparameters, the
form `registry.build` (`tff_mixed.async_registry.build`) passes (the
guided-model-merging paper's algorithms, Zhu et al., "Guided Model Merging
for Hybrid Data Learning", section 5 and appendix D). Shared names mean one thing everywhere:
`server_lr` (eta_g of the server's merge), `buffer_size` (M, updates a
merge), `central_steps`, `central_batch_size`, `central_lr`,
`central_optimizer` ('sgd' or 'adam') and `seed` (the server's own training
on the central data, the paper's "server data": batches a round, examples a
batch, step size, optimizer, batch order).

The central data is what `central_arrays` accepts: a `CentralObjective`
from `central_data_objective` (the model's own loss), `(x, y)` arrays or a
finite `tf.data.Dataset` of examples (read into arrays once,
`inputs.central_data`); Feddle takes a `tf.data.Dataset` or a list as its
server batches as they are.
"""

from collections.abc import Callable, Mapping
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import deadline_fedavg
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import hybrid_baselines
from tff_mixed.asynchronous import server_data as server_data_lib
from tff_mixed.asynchronous import server_sgd
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import staleness as staleness_lib
from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import inputs

# The server's training of Center, Fed+FT, HFCL and FedDF.
CENTRAL_TRAINING = ('central_steps', 'central_batch_size', 'central_lr',
                    'central_optimizer', 'seed')
# FedBuff's merge, also under Fed+FT and FedDF.
FEDBUFF_MERGE = ('server_lr', 'buffer_size', 'staleness_exponent')
_FEDDLE_DEFAULTS = feddle.FeddleConfig._field_defaults  # pylint: disable=protected-access


def central_arrays(name: str, central_data: Any) -> tuple[Any, Any]:
  """The central examples `(x, y)` of `central_data`, for `name`.

  Raises:
    ValueError: If there are none, or a `CentralObjective` has a loss of its
      own (the baselines train on the model's loss).
    TypeError: If `central_data` is not arrays `(x, y)`, a mapping with
      'x' and 'y', a dataset of them or a `CentralObjective` holding them.
  """
  data = inputs.central_data(central_data)
  if isinstance(central_data, central_lib.CentralObjective):
    if central_data.loss_fn is not None:
      raise ValueError(f'{name!r} trains on the model\'s own loss; its '
                       'central objective must have no loss_fn.')
    data = central_data.data
  if data is None:
    raise ValueError(f'{name!r} needs central data (the paper\'s server '
                     'data): `central_data_objective((x, y))` or `(x, y)`.')
  if isinstance(data, Mapping) and set(data) == {'x', 'y'}:
    return data['x'], data['y']
  if isinstance(data, tuple) and len(data) == 2:
    return data
  raise TypeError(f'{name!r} takes its central data as arrays (x, y), a '
                  "mapping with 'x' and 'y' or a CentralObjective holding "
                  f'them; got {type(data).__name__}.')


def _training(central_steps: int, central_batch_size: int,
              central_lr: Optional[float], central_optimizer: str
              ) -> hybrid_baselines.ServerTraining:
  if central_lr is None:
    raise ValueError('The server trains on the central data: give '
                     '`central_lr` (or `client_lr`, eta_c = eta).')
  server_sgd.check_sgd_args(central_steps, central_batch_size, central_lr, 0)
  server_sgd.check_optimizer(central_optimizer)
  return hybrid_baselines.ServerTraining(
      steps=central_steps, batch_size=central_batch_size,
      learning_rate=central_lr, optimizer=central_optimizer)


def build_fedasync(model: Any, central_data: Any = None, *,
                   alpha: float = 0.5,
                   staleness_fn: Optional[Callable[[int], float]] = None,
                   staleness_unit: str = staleness_lib.SERVER_STEPS
                   ) -> server_strategies.FedAsync:
  """FedAsync (Xie et al. 2019); `server_strategies.FedAsync`."""
  del model, central_data  # FedAsync mixes client models only.
  return server_strategies.FedAsync(alpha, staleness_fn, staleness_unit)


def build_fedbuff(model: Any, central_data: Any = None, *,
                  buffer_size: int, server_lr: float = 1.0,
                  staleness_exponent: float = 0.0,
                  weighting: str = server_strategies.WEIGHTING_UNIFORM
                  ) -> server_strategies.FedBuff:
  """FedBuff (Nguyen et al. 2022); `server_strategies.FedBuff`.

  With `buffer_size` = the clients a round, `weighting='num_examples'` and
  no delays, weighted FedAvg.
  """
  del model, central_data  # The mean of the buffered updates only.
  return server_strategies.FedBuff(server_lr, buffer_size,
                                   staleness_exponent, weighting)


def build_ca2fl(model: Any, central_data: Any = None, *,
                buffer_size: int, server_lr: float = 1.0,
                num_clients: Optional[int] = None,
                cache_average: str = server_strategies.CACHE_AVERAGE_ALL_CLIENTS
                ) -> server_strategies.CA2FL:
  """CA2FL (Wang et al. 2024); `server_strategies.CA2FL`."""
  del model, central_data  # Cached client updates only.
  return server_strategies.CA2FL(server_lr, buffer_size, num_clients,
                                 cache_average)


def build_deadline_fedavg(
    model: Any, central_data: Any = None, *, server_lr: float = 1.0,
    deadline: int = 0,
    weighting: str = server_strategies.WEIGHTING_NUM_EXAMPLES
) -> deadline_fedavg.DeadlineFedAvg:
  """Synchronous FedAvg dropping late updates (Zhu et al., eq. 2)."""
  del model, central_data  # The on-time updates only.
  return deadline_fedavg.DeadlineFedAvg(server_lr, deadline, weighting)


def build_center(model: Any, central_data: Any, *, central_steps: int,
                 central_batch_size: int = 32,
                 central_lr: Optional[float] = None,
                 central_optimizer: str = server_sgd.SGD,
                 seed: int = 0) -> hybrid_baselines.CenterMethod:
  """Center: `central_steps` of server training at the first round."""
  x, y = central_arrays('center', central_data)
  return hybrid_baselines.CenterMethod(
      model, x, y, _training(central_steps, central_batch_size, central_lr,
                             central_optimizer), seed)


def build_fed_ft(model: Any, central_data: Any, *, buffer_size: int,
                 central_steps: int, server_lr: float = 1.0,
                 staleness_exponent: float = 0.0,
                 central_batch_size: int = 32,
                 central_lr: Optional[float] = None,
                 central_optimizer: str = server_sgd.SGD,
                 seed: int = 0) -> hybrid_baselines.FineTuneMethod:
  """Fed+FT: FedBuff's merge, then `central_steps` of fine-tuning."""
  center = build_center(model, central_data, central_steps=central_steps,
                        central_batch_size=central_batch_size,
                        central_lr=central_lr,
                        central_optimizer=central_optimizer, seed=seed)
  return hybrid_baselines.FineTuneMethod(
      build_fedbuff(model, buffer_size=buffer_size, server_lr=server_lr,
                    staleness_exponent=staleness_exponent), center)


def build_hfcl(model: Any, central_data: Any, *, central_steps: int,
               client_examples: float,
               client_epochs: Optional[int] = None,
               central_batch_size: int = 32,
               central_lr: Optional[float] = None,
               central_optimizer: str = server_sgd.SGD,
               seed: int = 0) -> hybrid_baselines.HFCLMethod:
  """HFCL (Elbir et al. 2021): the server joins each merge as a client.

  `client_examples` weighs a client trained K steps; with `client_epochs`
  each weighs its own example count over E (`HFCLMethod`).
  """
  x, y = central_arrays('hfcl', central_data)
  return hybrid_baselines.HFCLMethod(
      model, x, y, _training(central_steps, central_batch_size, central_lr,
                             central_optimizer), seed,
      float(client_examples), client_epochs)


def build_feddf(model: Any, central_data: Any, *, buffer_size: int,
                central_steps: int, server_lr: float = 1.0,
                staleness_exponent: float = 0.0,
                temperature: float = 1.0, central_batch_size: int = 32,
                central_lr: Optional[float] = None,
                central_optimizer: str = server_sgd.SGD,
                seed: int = 0) -> hybrid_baselines.FedDFMethod:
  """FedDF (Lin et al. 2020) after each FedBuff merge; the central labels
  are not used (they may be out of domain)."""
  x, _ = central_arrays('feddf', central_data)
  return hybrid_baselines.FedDFMethod(
      build_fedbuff(model, buffer_size=buffer_size, server_lr=server_lr,
                    staleness_exponent=staleness_exponent),
      model, x, _training(central_steps, central_batch_size, central_lr,
                          central_optimizer), seed, temperature=temperature)


def _feddle_batches(central_data: Any, batch_size: int, seed: int) -> Any:
  """Feddle's server batches: given, or cut from arrays (x, y)."""
  if isinstance(central_data, (tf.data.Dataset, list)):
    return central_data
  x, y = central_arrays('feddle', central_data)
  return server_data_lib.shuffled_batches(np.asarray(x), np.asarray(y),
                                          batch_size, seed)


def build_feddle(
    model: Any, central_data: Any, *, buffer_size: int,
    max_anchors: Optional[int] = None, server_lr: float = 1.0,
    search_lr: float = _FEDDLE_DEFAULTS['search_lr'],
    search_steps: int = _FEDDLE_DEFAULTS['search_steps'],
    search_optimizer: str = _FEDDLE_DEFAULTS['optimizer'],
    fallback_lambda: float = _FEDDLE_DEFAULTS['fallback_lambda'],
    out_of_domain: bool = False,
    head_size: int = _FEDDLE_DEFAULTS['head_size'],
    num_ood_classes: int = _FEDDLE_DEFAULTS['num_ood_classes'],
    head_steps: int = _FEDDLE_DEFAULTS['head_steps'],
    head_lr: float = _FEDDLE_DEFAULTS['head_lr'],
    ood_head_rule: str = _FEDDLE_DEFAULTS['ood_head_rule'],
    features_fn: Optional[Callable[..., Any]] = None, id_probe: Any = None,
    central_batch_size: int = 32, seed: int = 0) -> feddle.FeddleMethod:
  """Feddle (Zhu et al., Algorithm 1); `feddle.FeddleMethod`.

  The atlas holds `max_anchors` (default: 2 `buffer_size`, the paper's
  twice the clients a round); the search runs on batches of
  `central_batch_size` of the central data, shuffled once with `seed`.
  Out of domain (`out_of_domain=True`, the central labels are
  `num_ood_classes` classes of their own) it needs `features_fn`; see
  `feddle.FeddleConfig` for the other fields.
  """
  config = feddle.FeddleConfig(
      max_anchors=2 * buffer_size if max_anchors is None else max_anchors,
      server_lr=server_lr, search_lr=search_lr, search_steps=search_steps,
      fallback_lambda=fallback_lambda, out_of_domain=out_of_domain,
      head_size=head_size, num_ood_classes=num_ood_classes,
      head_steps=head_steps, head_lr=head_lr, optimizer=search_optimizer,
      ood_head_rule=ood_head_rule)
  return feddle.FeddleMethod(
      model, config, _feddle_batches(central_data, central_batch_size, seed),
      buffer_size, features_fn=features_fn, id_probe=id_probe)

