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
"""The server methods of the hybrid experiment, built with their values.

The guided-model-merging paper's methods (Feddle, Zhu et al., section 5,
table 1), each on the same schedule, client data and initial model for a
seed and setting:

*   without server data: `fedavg` (synchronous: no delays, FedBuff with a
    buffer of S and server lr 1, weighted by the clients' example counts,
    i.e. weighted FedAvg),
    `loadaboost` (the same with LoAdaBoost's loss-driven local epochs, Huang
    et al.), `fedasync`, `fedbuff`, `ca2fl`;
*   with in-domain server data: `center` (server data only; no client
    trains), `fed_ft` (FedBuff, then fine-tuning on the server data after
    each merge), `hfcl` (the server trains a copy and joins the merge as one
    more participant), `feddf_id` (FedBuff, then ensemble distillation of
    the merged buffer's client models on the server images after each
    merge), `feddle_id`;
*   with out-of-domain server data: `feddf_ood`, `feddle_ood` (the
    surrogate loss over a new linear head).

`fedavg`, `loadaboost` and `center` do not depend on the delays: they run
once per seed and label skew and stand in every delay column.

`method_config` resolves a method's hyperparameters (FedBuff's for the
methods built on it), `build_method` builds its server strategy through the
asynchronous registry (`tff_mixed.async_registry`), and the counts here
turn epochs into the steps each trains.
"""

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from experiments.hybrid_async import hybrid_config
import tff_mixed
from tff_mixed import async_registry
from tff_mixed.asynchronous import hybrid_baselines
from tff_mixed.asynchronous import server_sgd
from tff_mixed.asynchronous import staleness
from tff_mixed.asynchronous import strategy
from tff_mixed.models import cnn


def method_config(config: hybrid_config.Config, method: str,
                  selected: Mapping[str, Mapping[str, Any]]
                  ) -> hybrid_config.Config:
  """`config` with `method`'s selected values, and FedBuff's for a method
  built on FedBuff (`hybrid_config.FEDBUFF_BASED`).

  The one place a method's hyperparameters are resolved: the runs, the
  tuning and the studies all call it.

  Args:
    config: The setting's configuration (the client stage applied).
    method: A name from `hybrid_config.METHODS`.
    selected: {method: {config field: value}}, the selection (FedBuff's
      entry is read for every method built on it).

  Raises:
    ValueError: If a FedBuff-based method's own values set a FedBuff field
      to another value than FedBuff's.
  """
  values = dict(selected.get(method, {}))
  if method in hybrid_config.FEDBUFF_BASED:
    fedbuff = {k: v for k, v in selected.get(hybrid_config.FEDBUFF,
                                             {}).items()
               if k in hybrid_config.FEDBUFF_FIELDS}
    clash = sorted(k for k in fedbuff if k in values
                   and values[k] != fedbuff[k])
    if clash:
      raise ValueError(f'{method} is built on FedBuff and takes its {clash}; '
                       'its own values differ from FedBuff\'s.')
    values.update(fedbuff)
  return config._replace(**values)


def server_steps(config: hybrid_config.Config, num_examples: int,
                 feddle_search: bool = False) -> int:
  """Server batches a round: epochs over `num_examples` server examples
  (`server_epochs` or `feddle_search_epochs`), else the configured count."""
  c = config
  epochs = c.feddle_search_epochs if feddle_search else c.server_epochs
  if not epochs:
    return c.feddle_search_steps if feddle_search else c.server_steps
  return epochs * server_sgd.steps_per_epoch(num_examples,
                                             c.server_batch_size)


def client_epochs(method: str, config: hybrid_config.Config) -> Optional[int]:
  """The local epochs of `method`'s clients, None if they train K steps."""
  if method == hybrid_config.LOADABOOST or config.client_steps:
    return None
  return config.client_epochs


def loadaboost_epoch_steps(config: hybrid_config.Config) -> int:
  """Batches in one LoAdaBoost epoch: E epochs make FedAvg's K steps.

  Clients here hold a handful of examples each (Dirichlet splits of a few
  thousand images), so a pass over a client's data is not a meaningful
  unit; an epoch is K / E batches of the same stream FedAvg's clients see,
  and LoAdaBoost clients train between K/2 and 3K/2 steps. K is
  `client_steps` in the K-step protocol, else `loadaboost_steps`.
  """
  steps = config.client_steps or config.loadaboost_steps
  return max(1, steps // config.loadaboost_epochs)


def hfcl_training(config: hybrid_config.Config, num_examples: int
                  ) -> 'hybrid_baselines.ServerTraining':
  """HFCL's server training: as a client's, on the server's examples.

  The paper gives HFCL no hyperparameters of its own: its server "trains a
  network the same as the clients do" (appendix D). So the clients' batch
  size, learning rate and optimizer, for their epochs over the server's
  `num_examples` (or their K steps). One difference stays: the server's
  Adam anneals its rate over the round (`server_sgd.run_sgd`), TFF's
  client Adam does not.
  """
  c = config
  epochs = client_epochs(hybrid_config.HFCL, c)
  steps = epochs * server_sgd.steps_per_epoch(
      num_examples, c.client_batch_size) if epochs else c.client_steps
  return hybrid_baselines.ServerTraining(
      steps=steps, batch_size=c.client_batch_size,
      learning_rate=c.client_lr, optimizer=c.client_optimizer)


class EveryRoundCenter(tff_mixed.AsyncStrategy):
  """Center training its server epochs every round (`center_once=False`).

  The library's Center (`async_registry.build('center', ...)`) trains
  once, the paper's one centrally trained model; tables made before
  2026-11-26 read the server epochs as a round's, and this keeps them
  reproducible.
  """

  uses_client_updates = False  # No client trains for Center.

  def __init__(self, center: 'hybrid_baselines.CenterMethod'):
    self._center = center

  def initial_state(self) -> int:
    return strategy.NO_ROUNDS_YET

  def apply(self, state: int, weights, updates, on_merge=None):
    del updates  # Center trains no client.
    trained = self._center.train(weights, state)
    strategy.report_merge(on_merge, state, weights, trained, ())
    return state + 1, trained


def _registry_call(method: str, data: hybrid_config.Data,
                   config: hybrid_config.Config, seed: int
                   ) -> tuple[str, Any, dict[str, Any]]:
  """`method`'s registry name, central data and hyperparameters."""
  c = config
  split = data.split
  fedbuff = dict(server_lr=c.server_lr, buffer_size=c.buffer_size,
                 staleness_exponent=c.fedbuff_staleness_exponent)
  if method in (hybrid_config.FEDAVG, hybrid_config.FEDAVG_DELAYED,
                hybrid_config.LOADABOOST):
    # Weighted FedAvg: the round's clients' updates, weighted by the
    # examples each trained on (McMahan et al. 2017).
    return async_registry.FEDBUFF, None, dict(
        server_lr=1.0, buffer_size=c.clients_per_round,
        weighting='num_examples')
  if method == hybrid_config.FEDASYNC:
    return async_registry.FEDASYNC, None, dict(
        alpha=c.fedasync_alpha,
        staleness_fn=staleness.polynomial_staleness(c.fedasync_a),
        staleness_unit=c.fedasync_staleness_unit)
  if method == hybrid_config.FEDBUFF:
    return async_registry.FEDBUFF, None, fedbuff
  if method == hybrid_config.CA2FL:
    return async_registry.CA2FL, None, dict(
        server_lr=c.server_lr, buffer_size=c.buffer_size,
        num_clients=c.num_clients)
  ood = method in hybrid_config.OOD_METHODS
  central = (data.ood_x, data.ood_y) if ood else (split.server_x,
                                                  split.server_y)
  training = dict(central_steps=server_steps(c, len(central[0])),
                  central_batch_size=c.server_batch_size,
                  central_lr=c.server_sgd_lr,
                  central_optimizer=c.server_optimizer, seed=seed)
  if method == hybrid_config.CENTER:
    return async_registry.CENTER, central, training
  if method == hybrid_config.FED_FT:
    return async_registry.FED_FT, central, {**fedbuff, **training}
  if method == hybrid_config.HFCL:
    t = hfcl_training(c, len(split.server_y))
    return async_registry.HFCL, central, dict(
        central_steps=t.steps, central_batch_size=t.batch_size,
        central_lr=t.learning_rate, central_optimizer=t.optimizer,
        seed=seed, client_epochs=client_epochs(method, c),
        client_examples=float(np.mean(
            [len(i) for i in split.client_indices])))
  if method in (hybrid_config.FEDDF_ID, hybrid_config.FEDDF_OOD):
    return async_registry.FEDDF, central, dict(
        **fedbuff, **training, temperature=c.distill_temperature)
  if method in hybrid_config.FEDDLE_METHODS:
    return async_registry.FEDDLE, central, dict(
        max_anchors=hybrid_config.feddle_atlas_size(c),
        buffer_size=c.buffer_size,
        server_lr=c.server_lr, search_lr=c.feddle_search_lr,
        search_steps=server_steps(c, len(central[0]), feddle_search=True),
        search_optimizer=c.feddle_search_optimizer,
        fallback_lambda=c.feddle_ood_lambda if ood else 0.0,
        out_of_domain=ood, head_size=cnn.HEAD_SIZE,
        num_ood_classes=int(data.ood_y.max()) + 1 if ood else 2,
        features_fn=cnn.features if ood else None,
        # The in-domain probe only measures the alignment of the
        # surrogate's coefficient gradient with the task's (paper, eq. 7
        # and Fig. 9).
        id_probe=(split.server_x[:c.id_probe_size],
                  split.server_y[:c.id_probe_size]) if ood else None,
        central_batch_size=c.server_batch_size, seed=seed)
  raise ValueError(f'`method` must be one of {hybrid_config.METHODS}, got '
                   f'{method!r}.')


def build_method(method: str, model, data: hybrid_config.Data,
                 config: hybrid_config.Config, seed: int
                 ) -> tff_mixed.AsyncStrategy:
  """The server method of `method` for `run_async`: `async_registry.build`
  with the configuration's values (the registry is the one name-to-algorithm
  table; `method` names the experiment's variants of its algorithms)."""
  name, central, hyperparameters = _registry_call(method, data, config, seed)
  built = async_registry.build(name, model, central, **hyperparameters)
  if method == hybrid_config.CENTER and not config.center_once:
    return EveryRoundCenter(built)
  return built
