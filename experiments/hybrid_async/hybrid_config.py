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
"""The hybrid experiment's settings, method names and hyperparameters.

The guided-model-merging paper (Feddle, Zhu et al., section 5, table 1):
clients hold a Dirichlet(alpha) split of an image set and report after
|N(0, sigma^2)| rounds; the server holds 1,000 in-domain examples (taken out
of the test set) or out-of-domain images. Table 1 crosses two label skews
(alpha 0.1, 0.3) with two delay levels (sigma 5, 20): the `Setting`s here.
Table 2 has real heterogeneity instead: on CelebA each client is one
identity (`tff_mixed.tasks.celeba_hybrid`), a setting's alpha is
`IDENTITIES` and its columns are delay levels only.

Here: the names of the methods (`hybrid_methods` builds them) and their
groups, the hyperparameters (`Config`), the data a run trains on (`Data`)
and `validate`, which refuses a bad configuration before any training.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from tff_mixed.asynchronous import loadaboost as loadaboost_lib
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import staleness


FEDAVG = 'fedavg'
# FedAvg under the setting's delays, as the paper runs it (its FedAvg rows
# change with the delay level, tables 2, 6 and 7): the weighted mean of the
# first `clients_per_round` updates to arrive, stale ones included (eq. 3);
# `fedavg` is the same without delays, a reference the paper does not have.
# The asynchronous-baselines study measured the difference
# (RESULTS.md, hybrid_async_study).
FEDAVG_DELAYED = 'fedavg_delayed'
LOADABOOST = 'loadaboost'
FEDASYNC = 'fedasync'
FEDBUFF = 'fedbuff'
CA2FL = 'ca2fl'
CENTER = 'center'
FED_FT = 'fed_ft'
HFCL = 'hfcl'
FEDDF_ID = 'feddf_id'
FEDDF_OOD = 'feddf_ood'
FEDDLE_ID = 'feddle_id'
FEDDLE_OOD = 'feddle_ood'
METHODS = (FEDAVG, FEDAVG_DELAYED, LOADABOOST, FEDASYNC, FEDBUFF, CA2FL,
           CENTER, FED_FT, HFCL, FEDDF_ID, FEDDLE_ID, FEDDF_OOD, FEDDLE_OOD)
OOD_METHODS = (FEDDF_OOD, FEDDLE_OOD)
# Methods that use in-domain server data (the paper's "ID" column).
ID_METHODS = (CENTER, FED_FT, HFCL, FEDDF_ID, FEDDLE_ID)
# Methods whose runs do not depend on the delays (synchronous, or no client).
DELAY_FREE = (FEDAVG, LOADABOOST, CENTER)
FEDDLE_METHODS = (FEDDLE_ID, FEDDLE_OOD)
# FedBuff's hyperparameters, and the methods built on FedBuff's merge: Feddle
# (its fallback c' is FedBuff's merge, and FedBuff's buffer triggers its
# search), Fed+FT (fine-tunes FedBuff's model) and FedDF (distills into it).
# One source of truth: each takes FedBuff's values of its setting
# (`hybrid_methods.method_config`), so that it is compared against the
# FedBuff it builds on. CA2FL, a method of its own, keeps its own tuned
# buffer (the paper tunes both per method).
FEDBUFF_FIELDS = ('buffer_size', 'server_lr', 'fedbuff_staleness_exponent')
FEDBUFF_BASED = (FED_FT, FEDDF_ID, FEDDF_OOD) + FEDDLE_METHODS
CLIENT_OPTIMIZERS = ('sgd', 'adam')
# The coefficient search's optimizers (`coefficient_search.OPTIMIZERS`).
SEARCH_OPTIMIZERS = ('sgd', 'scaled_sgd', 'adam')
# `Setting.alpha` of data whose clients are its identities (CelebA, the
# paper's table 2): no Dirichlet split.
IDENTITIES = None


class Config(NamedTuple):
  """Hyperparameters (defaults: the paper's setting where it gives one).

  `alpha` and `delay_std` are one setting's;
  `hybrid_async_lib.run_experiment` replaces them for each of its settings.

  Local training follows the paper's protocol (appendix D: clients train
  `client_epochs` epochs with Adam, lr and epochs tuned with FedAvg): a
  `client_steps` of 0. `client_steps` > 0 selects the earlier protocol of K
  fixed steps instead (`hybrid_images.client_dataset`). LoAdaBoost (not in
  the paper) keeps its own SGD schedule: K = `client_steps`, or
  `loadaboost_steps` in the epochs protocol, at `loadaboost_lr`.

  Server training is counted as in the paper's grids (appendix D) when
  `server_epochs` (Center, Fed+FT, HFCL, FedDF) or `feddle_search_epochs`
  (Feddle's coefficient search) is set: passes over the server set the
  method trains on, `server_epochs(...)`; 0 keeps the batch counts
  `server_steps` and `feddle_search_steps`. `fedasync_a` is the exponent a
  of FedAsync's polynomial staleness function (its "adaptive constant"),
  of a staleness counted in `fedasync_staleness_unit`: 'server_steps'
  (Xie et al.: server model updates since the client was sent the model,
  one per arrival) or 'rounds' (runs kept before 2026-11-26).
  `fedbuff_staleness_exponent` p weighs each update of FedBuff's merge (in
  `fedbuff`, `fed_ft` and `feddf_*`) by (1 + staleness in rounds)^(-p):
  0, the plain mean, is the guided-model-merging paper's FedBuff (its
  appendix A writes the merge as the mean of the buffered updates); 0.5 is
  the 1/sqrt(1 + staleness) of FedBuff's own paper (Nguyen et al. 2022).
  Center trains its server epochs once, at the first round, and then holds
  its model (`center_once`, the paper's one centrally trained model);
  `center_once=False` trains them every round, as tables made before
  2026-11-26 did. Feddle's atlas holds `feddle_atlas_size` anchors, 0:
  twice the clients per round (the paper's choice, its section F.7).
  `validation_size` held-out examples are set apart for hyperparameter
  search (`hybrid_images.build_hybrid_split`). The server trains (Center,
  Fed+FT, HFCL, FedDF) and Feddle searches with Adam by default: the
  paper's grids of their learning rates (1e-5 to 1e-3) are Adam's scale,
  where SGD would barely move the model (our reading: the paper names
  Adam for the clients only).
  """

  rounds: int = 200
  num_clients: int = 500
  clients_per_round: int = 10
  delay_std: float = 5.0
  alpha: Optional[float] = 0.1
  server_size: int = 1000
  eval_size: int = 2000
  client_steps: int = 0
  client_epochs: int = 1
  client_batch_size: int = 32
  client_optimizer: str = 'adam'
  client_lr: float = 1e-3
  server_lr: float = 1.0
  buffer_size: int = 10
  fedasync_alpha: float = 0.5
  fedasync_a: float = staleness.DEFAULT_FEDASYNC_EXPONENT
  fedasync_staleness_unit: str = staleness.SERVER_STEPS
  fedbuff_staleness_exponent: float = 0.0
  server_steps: int = 10
  server_epochs: int = 0
  center_once: bool = True
  server_batch_size: int = 32
  server_sgd_lr: float = 0.05
  server_optimizer: str = 'adam'
  feddle_search_steps: int = 10
  feddle_search_epochs: int = 0
  feddle_search_lr: float = 0.01
  feddle_search_optimizer: str = 'adam'
  feddle_ood_lambda: float = 0.01
  feddle_atlas_size: int = 0
  distill_temperature: float = 1.0
  loadaboost_epochs: int = 2
  loadaboost_steps: int = 10
  loadaboost_lr: float = 0.05
  id_probe_size: int = 256
  validation_size: int = 0
  conv_filters: tuple[int, ...] = (32, 64, 64)
  dense_units: int = 64
  eval_every: int = 10


class Setting(NamedTuple):
  """One column of the paper's tables 1 and 2: label skew and delay level.

  `alpha` is the Dirichlet concentration of the clients' label split, or
  `IDENTITIES` (None) where the clients are the data's identities (CelebA,
  table 2) and no alpha applies.
  """

  alpha: Optional[float]
  delay_std: float

  @property
  def label(self) -> str:
    return f'{split_name(self.alpha)}, N({self.delay_std:g})'


def split_name(alpha: Optional[float]) -> str:
  """How the clients' data is split: 'Dir(alpha)', or 'identities'."""
  return 'identities' if alpha is IDENTITIES else f'Dir({alpha:g})'


def delay_of(method: str, delay_std: float) -> float:
  """The delay level a method runs at: 0 for the delay-free methods."""
  return float(0 if method in DELAY_FREE else delay_std)


class Data(NamedTuple):
  split: Any  # hybrid_images.HybridSplit
  ood_x: Optional[np.ndarray]
  ood_y: Optional[np.ndarray]
  description: str
  # The CNN body every run starts from (pretrain_lib), its head drawn from
  # the run's seed; None: from scratch. `description` must say which.
  initial_body: Optional[tuple[np.ndarray, ...]] = None


def feddle_atlas_size(config: Config) -> int:
  """Feddle's atlas size M: `feddle_atlas_size`, else twice the clients a
  round (the paper's choice, its appendix F.7), and at least one buffer:
  FedBuff's merge, Feddle's fallback, must fit in it.

  Raises:
    ValueError: If a given atlas size cannot hold the buffer.
  """
  if config.feddle_atlas_size:
    if config.feddle_atlas_size < config.buffer_size:
      raise ValueError(f'`feddle_atlas_size` ({config.feddle_atlas_size}) '
                       f'cannot hold a buffer of {config.buffer_size} '
                       'updates (FedBuff\'s, the fallback).')
    return config.feddle_atlas_size
  return max(2 * config.clients_per_round, config.buffer_size)


def _check_idle_clients(config: Config, setting: Setting, seed: int) -> None:
  short = schedule_lib.first_round_with_shortage(
      config.num_clients, config.clients_per_round, setting.delay_std,
      config.rounds, seed)
  if short is not None:
    raise ValueError(
        f'With {config.num_clients} clients, {config.clients_per_round} per '
        f'round and delays of std {setting.delay_std:g}, round {short} (seed '
        f'{seed}) has fewer idle clients than clients per round: use more '
        'clients, fewer per round or shorter delays.')


def validate(config: Config, methods: Sequence[str],
             settings: Sequence[Setting] = (),
             seeds: Sequence[int] = ()) -> None:
  """Clear errors before any training."""
  if (not methods or len(set(methods)) != len(methods)
      or any(m not in METHODS for m in methods)):
    raise ValueError(f'`methods` must be distinct names from {METHODS}, got '
                     f'{list(methods)}.')
  for name in ('rounds', 'num_clients', 'clients_per_round', 'server_size',
               'eval_size', 'client_epochs', 'client_batch_size',
               'loadaboost_steps',
               'buffer_size', 'server_batch_size', 'dense_units',
               'eval_every', 'id_probe_size'):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  for name in ('client_steps', 'server_steps', 'feddle_search_steps',
               'server_epochs', 'feddle_search_epochs', 'validation_size',
               'feddle_atlas_size'):
    if getattr(config, name) < 0:
      raise ValueError(f'`{name}` must be >= 0, got '
                       f'{getattr(config, name)}.')
  for name, choices in (('client_optimizer', CLIENT_OPTIMIZERS),
                        ('server_optimizer', CLIENT_OPTIMIZERS),
                        ('feddle_search_optimizer', SEARCH_OPTIMIZERS)):
    if getattr(config, name) not in choices:
      raise ValueError(f'`{name}` must be one of {choices}, got '
                       f'{getattr(config, name)!r}.')
  if any(m in FEDDLE_METHODS for m in methods):
    feddle_atlas_size(config)  # Holds a buffer.
    if config.fedbuff_staleness_exponent:
      # Its fallback c' would no longer be FedBuff's merge.
      raise ValueError('Feddle\'s fallback is FedBuff without staleness '
                       'weights: `fedbuff_staleness_exponent` must be 0, got '
                       f'{config.fedbuff_staleness_exponent}.')
  if config.fedasync_staleness_unit not in staleness.UNITS:
    raise ValueError('`fedasync_staleness_unit` must be one of '
                     f'{staleness.UNITS}, got '
                     f'{config.fedasync_staleness_unit!r}.')
  staleness.check_finite_at_least('fedbuff_staleness_exponent',
                                  config.fedbuff_staleness_exponent, 0.0)
  if LOADABOOST in methods:
    loadaboost_lib.check_epochs(config.loadaboost_epochs)
  if config.clients_per_round > config.num_clients:
    raise ValueError(f'`clients_per_round` ({config.clients_per_round}) '
                     f'exceeds `num_clients` ({config.num_clients}).')
  settings = list(settings) or [Setting(config.alpha, config.delay_std)]
  if len(set(settings)) != len(settings):
    raise ValueError(f'Settings must be distinct, got {settings}.')
  for setting in settings:
    if setting.alpha is not IDENTITIES and not setting.alpha > 0:
      raise ValueError(f'Dirichlet alpha must be > 0, got {setting.alpha}.')
    schedule_lib.check_delays_arrive(setting.delay_std, config.rounds)
    for seed in seeds:
      _check_idle_clients(config, setting, seed)
