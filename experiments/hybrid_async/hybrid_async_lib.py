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
"""Hybrid data under asynchrony: Feddle against the asynchronous baselines.

The guided-model-merging paper (Feddle, Zhu et al., section 5, table 1):
clients hold a Dirichlet(alpha) split of an image set and report after
|N(0, sigma^2)| rounds; the server holds 1,000 in-domain examples (taken out
of the test set) or out-of-domain images. Table 1 crosses two label skews
(alpha 0.1, 0.3) with two delay levels (sigma 5, 20): the `settings` here.
Table 2 has real heterogeneity instead: on CelebA each client is one
identity (`tff_mixed.tasks.celeba_hybrid`), a setting's alpha is
`IDENTITIES` and its columns are delay levels only.
Methods, each on the same schedule, client data and initial model for a
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

Reported as the paper does: evaluate every `eval_every` rounds; a run's
final metric is the best of its last 5 evaluations; mean and standard
deviation over seeds. Each finished run is kept in `output_dir/runs/`, so an
interrupted experiment resumes where it stopped and a report can be rebuilt
from the runs without training.
"""

import collections
from collections.abc import Callable, Mapping, Sequence
import hashlib
import json
import math
import os
import textwrap
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.common import plots
from experiments.hybrid_async import paper_comparison
from experiments.hybrid_async import paper_tables
import tff_mixed
from tff_mixed import registry
from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import hybrid_baselines
from tff_mixed.asynchronous import loadaboost as loadaboost_lib
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import server_sgd
from tff_mixed.asynchronous import simulation
from tff_mixed.asynchronous import staleness
from tff_mixed.asynchronous import strategy
from tff_mixed.core import client_groups
from tff_mixed.models import cnn
from tff_mixed.tasks import client_streams
from tff_mixed.tasks import hybrid_images
from tff_mixed.training import reports as reports_lib
from tff_mixed.training import run_lock


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
# (`method_config`), so that it is compared against the FedBuff it builds
# on. CA2FL, a method of its own, keeps its own tuned buffer (the paper
# tunes both per method).
FEDBUFF_FIELDS = ('buffer_size', 'server_lr', 'fedbuff_staleness_exponent')
FEDBUFF_BASED = (FED_FT, FEDDF_ID, FEDDF_OOD) + FEDDLE_METHODS
CLIENT_OPTIMIZERS = ('sgd', 'adam')
# The coefficient search's optimizers (`coefficient_search.OPTIMIZERS`).
SEARCH_OPTIMIZERS = ('sgd', 'scaled_sgd', 'adam')
METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'accuracy.png'
TABLE_FILE = 'results.md'
DIAGNOSTICS_FILE = 'feddle_diagnostics.csv'
DIAGNOSTICS_PLOT_FILE = 'feddle_diagnostics.png'
CONFIG_FILE = 'config.json'
RUNS_DIR = 'runs'
# Under --output_dir: the per-round state of runs not finished yet
# (`kept_run`), never committed.
CHECKPOINTS_DIR = 'checkpoints'
TAIL_EVALUATIONS = 5


# The paper's numbers (its tables 7 and 2), shown beside ours.
PAPER_TABLE7_CIFAR10_CNN = paper_tables.TABLE7_CIFAR10_CNN.values
paper_table = paper_tables.paper_table
# `Setting.alpha` of data whose clients are its identities (CelebA, the
# paper's table 2): no Dirichlet split.
IDENTITIES = None


class Config(NamedTuple):
  """Hyperparameters (defaults: the paper's setting where it gives one).

  `alpha` and `delay_std` are one setting's; `run_experiment` replaces them
  for each of its settings.

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
  return 0.0 if method in DELAY_FREE else float(delay_std)


class Data(NamedTuple):
  split: Any  # hybrid_images.HybridSplit
  ood_x: Optional[np.ndarray]
  ood_y: Optional[np.ndarray]
  description: str
  # The CNN body every run starts from (pretrain_lib), its head drawn from
  # the run's seed; None: from scratch. `description` must say which.
  initial_body: Optional[tuple[np.ndarray, ...]] = None


def server_steps(config: Config, num_examples: int,
                 feddle_search: bool = False) -> int:
  """Server batches a round: epochs over `num_examples` server examples
  (`server_epochs` or `feddle_search_epochs`), else the configured count."""
  c = config
  epochs = c.feddle_search_epochs if feddle_search else c.server_epochs
  if not epochs:
    return c.feddle_search_steps if feddle_search else c.server_steps
  return epochs * server_sgd.steps_per_epoch(num_examples,
                                             c.server_batch_size)


def hfcl_training(config: Config, num_examples: int
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
  epochs = client_epochs(HFCL, c)
  steps = epochs * server_sgd.steps_per_epoch(
      num_examples, c.client_batch_size) if epochs else c.client_steps
  return hybrid_baselines.ServerTraining(
      steps=steps, batch_size=c.client_batch_size,
      learning_rate=c.client_lr, optimizer=c.client_optimizer)


class EveryRoundCenter(tff_mixed.AsyncStrategy):
  """Center training its server epochs every round (`center_once=False`).

  The library's Center (`registry.build('center', ...)`) trains once, the
  paper's one centrally trained model; tables made before 2026-11-26 read
  the server epochs as a round's, and this keeps them reproducible.
  """

  uses_client_updates = False  # No client trains for Center.

  def __init__(self, center: 'hybrid_baselines.CenterMethod'):
    self._center = center

  def initial_state(self) -> int:
    return 0

  def apply(self, state: int, weights, updates, on_merge=None):
    del updates  # Center trains no client.
    trained = self._center.train(weights, state)
    strategy.report_merge(on_merge, state, weights, trained, ())
    return state + 1, trained


def _registry_call(method: str, data: Data, config: Config, seed: int
                   ) -> tuple[str, Any, dict[str, Any]]:
  """`method`'s registry name, central data and hyperparameters."""
  c = config
  split = data.split
  fedbuff = dict(server_lr=c.server_lr, buffer_size=c.buffer_size,
                 staleness_exponent=c.fedbuff_staleness_exponent)
  if method in (FEDAVG, FEDAVG_DELAYED, LOADABOOST):
    # Weighted FedAvg: the round's clients' updates, weighted by the
    # examples each trained on (McMahan et al. 2017).
    return registry.FEDBUFF, None, dict(
        server_lr=1.0, buffer_size=c.clients_per_round,
        weighting='num_examples')
  if method == FEDASYNC:
    return registry.FEDASYNC, None, dict(
        alpha=c.fedasync_alpha,
        staleness_fn=staleness.polynomial_staleness(c.fedasync_a),
        staleness_unit=c.fedasync_staleness_unit)
  if method == FEDBUFF:
    return registry.FEDBUFF, None, fedbuff
  if method == CA2FL:
    return registry.CA2FL, None, dict(
        server_lr=c.server_lr, buffer_size=c.buffer_size,
        num_clients=c.num_clients)
  ood = method in OOD_METHODS
  central = (data.ood_x, data.ood_y) if ood else (split.server_x,
                                                  split.server_y)
  training = dict(central_steps=server_steps(c, len(central[0])),
                  central_batch_size=c.server_batch_size,
                  central_lr=c.server_sgd_lr,
                  central_optimizer=c.server_optimizer, seed=seed)
  if method == CENTER:
    return registry.CENTER, central, training
  if method == FED_FT:
    return registry.FED_FT, central, {**fedbuff, **training}
  if method == HFCL:
    t = hfcl_training(c, len(split.server_y))
    return registry.HFCL, central, dict(
        central_steps=t.steps, central_batch_size=t.batch_size,
        central_lr=t.learning_rate, central_optimizer=t.optimizer,
        seed=seed, client_epochs=client_epochs(method, c),
        client_examples=float(np.mean(
            [len(i) for i in split.client_indices])))
  if method in (FEDDF_ID, FEDDF_OOD):
    return registry.FEDDF, central, dict(
        **fedbuff, **training, temperature=c.distill_temperature)
  if method in FEDDLE_METHODS:
    return registry.FEDDLE, central, dict(
        max_anchors=feddle_atlas_size(c), buffer_size=c.buffer_size,
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
  raise ValueError(f'`method` must be one of {METHODS}, got {method!r}.')


def method_config(config: Config, method: str,
                  selected: Mapping[str, Mapping[str, Any]]) -> Config:
  """`config` with `method`'s selected values, and FedBuff's for a method
  built on FedBuff (`FEDBUFF_BASED`).

  The one place a method's hyperparameters are resolved: the runs, the
  tuning and the studies all call it.

  Args:
    config: The setting's configuration (the client stage applied).
    method: A name from `METHODS`.
    selected: {method: {config field: value}}, the selection (FedBuff's
      entry is read for every method built on it).

  Raises:
    ValueError: If a FedBuff-based method's own values set a FedBuff field
      to another value than FedBuff's.
  """
  values = dict(selected.get(method, {}))
  if method in FEDBUFF_BASED:
    fedbuff = {k: v for k, v in selected.get(FEDBUFF, {}).items()
               if k in FEDBUFF_FIELDS}
    clash = sorted(k for k in fedbuff if k in values
                   and values[k] != fedbuff[k])
    if clash:
      raise ValueError(f'{method} is built on FedBuff and takes its {clash}; '
                       'its own values differ from FedBuff\'s.')
    values.update(fedbuff)
  return config._replace(**values)


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


def build_method(method: str, model, data: Data, config: Config, seed: int
                 ) -> tff_mixed.AsyncStrategy:
  """The server method of `method` for `run_async`: `registry.build` with
  the configuration's values (the registry is the one name-to-algorithm
  table; `method` names the experiment's variants of its algorithms)."""
  name, central, hyperparameters = _registry_call(method, data, config, seed)
  built = registry.build(name, model, central, **hyperparameters)
  if method == CENTER and not config.center_once:
    return EveryRoundCenter(built)
  return built


@tf.function(reduce_retracing=True)
def _correct_and_loss(weights, x, y):
  # Module level so that every run and seed reuses one trace.
  logits = cnn.logits(weights, x)
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                          logits=logits)
  correct = tf.reduce_sum(tf.cast(tf.equal(
      tf.argmax(logits, axis=-1, output_type=tf.int32), y), tf.float32))
  return correct, tf.reduce_sum(losses)


def evaluate_fn(eval_x, eval_y):
  """`evaluate(weights) -> {'accuracy', 'loss'}`: means over `eval_x`."""

  def evaluate(weights):
    weights = [tf.constant(w) for w in weights]
    correct = loss = 0.0
    for start in range(0, len(eval_x), 500):
      c, l = _correct_and_loss(weights, eval_x[start:start + 500],
                               eval_y[start:start + 500])
      correct += float(c)
      loss += float(l)
    return {'accuracy': correct / len(eval_x), 'loss': loss / len(eval_x)}

  return evaluate


class RunRow(NamedTuple):
  method: str
  alpha: Optional[float]  # IDENTITIES (None): no Dirichlet split.
  delay_std: float  # 0 for the delay-free methods.
  seed: int
  round: int
  accuracy: float
  loss: float
  seconds: float


class MethodRun(NamedTuple):
  """One method's run for one seed and setting.

  Attributes:
    rows: One `RunRow` per evaluation.
    diagnostics: Feddle only: one dict per round with merges (its last
      merge's negative share and out-of-domain gradient cosine
      similarities; every merge's `MERGE_DIAGNOSTICS`).
    notes: Method-specific numbers, e.g. LoAdaBoost's mean client epochs.
  """
  rows: list[RunRow]
  diagnostics: list[dict[str, float]]
  notes: dict[str, float]


def _client_optimizer(config: Config):
  if config.client_optimizer == 'adam':
    return tff.learning.optimizers.build_adam(learning_rate=config.client_lr)
  return tff.learning.optimizers.build_sgdm(learning_rate=config.client_lr)


def _client_training(method: str, model, config: Config, cache: dict,
                     group_training=None):
  """The method's client training; traced once per model shape and kind.

  The computations depend on the model's functions, not on its initial
  weights, so every seed reuses them. LoAdaBoost's driver also holds its
  `group_training` computation, if any.
  """
  c = config
  kind = ('loadaboost', c.loadaboost_epochs, c.loadaboost_lr) if (
      method == LOADABOOST) else (c.client_optimizer, c.client_lr)
  key = (tuple(model.input_spec[0].shape), c.conv_filters, c.dense_units,
         int(model.initial_weights[0][-1].shape[0])) + kind
  if key not in cache:
    if method == LOADABOOST:
      cache[key] = loadaboost_lib.build_loadaboost_client_training(
          model, epochs=c.loadaboost_epochs, learning_rate=c.loadaboost_lr)
    else:
      cache[key] = client_training.build_client_training(model,
                                                         _client_optimizer(c))
  if method == LOADABOOST:
    # A fresh driver per run: the loss threshold starts at +inf.
    return loadaboost_lib.LoAdaBoostTraining(cache[key], c.loadaboost_epochs,
                                             group_training=group_training)
  return cache[key]


def loadaboost_epoch_steps(config: Config) -> int:
  """Batches in one LoAdaBoost epoch: E epochs make FedAvg's K steps.

  Clients here hold a handful of examples each (Dirichlet splits of a few
  thousand images), so a pass over a client's data is not a meaningful
  unit; an epoch is K / E batches of the same stream FedAvg's clients see,
  and LoAdaBoost clients train between K/2 and 3K/2 steps. K is
  `client_steps` in the K-step protocol, else `loadaboost_steps`.
  """
  steps = config.client_steps or config.loadaboost_steps
  return max(1, steps // config.loadaboost_epochs)


def client_epochs(method: str, config: Config) -> Optional[int]:
  """The local epochs of `method`'s clients, None if they train K steps."""
  if method == LOADABOOST or config.client_steps:
    return None
  return config.client_epochs


def _group_training(method: str, model, data: Data, config: Config,
                    seed: int, steps: int, cache: dict):
  """The group computation of `run_async`'s client groups, or None.

  Each member reads the stream of `hybrid_images.client_dataset` (the same
  seed per round) from the split's arrays held in the computation, so it
  is built once per split and seed, and every method run on them reuses it.
  """
  c = config
  if method == CENTER:
    return None  # No client trains.
  if method == LOADABOOST:
    # Per client: its group computation is exact (tests/async_groups_test)
    # but slower here, as tf.data rewrites each member's stream on every
    # pass, and without the rewrites a reshuffled stream's later passes
    # differ from the per-client path's.
    return None
  split = data.split
  epochs = client_epochs(method, c)
  key = ('groups', id(split), seed, steps, epochs, method == LOADABOOST,
         c.client_optimizer, c.client_lr, c.client_batch_size,
         c.loadaboost_epochs, c.loadaboost_lr)
  if key not in cache:
    rows = client_groups.array_dataset_fn(
        [(x.astype(np.float32), y.astype(np.int32)) for x, y in (
            split.client_arrays(i)
            for i in range(len(split.client_indices)))], lambda d: d)

    def dataset_fn(client_id, round_num):
      examples = rows(client_id)
      if epochs is not None:
        return client_streams.epochs_stream(
            examples, examples.cardinality(), c.client_batch_size, epochs,
            seed * 1000003 + round_num)
      return client_streams.steps_stream(
          examples, examples.cardinality(), c.client_batch_size, steps,
          seed * 1000003 + round_num)

    if method == LOADABOOST:
      computation = loadaboost_lib.build_loadaboost_group_training(
          model, epochs=c.loadaboost_epochs, learning_rate=c.loadaboost_lr,
          dataset_fn=dataset_fn)
    else:
      computation = client_training.build_group_client_training(
          model, _client_optimizer(c), dataset_fn)
    # The split stays referenced, so its id is not reused while cached.
    cache[key] = (split, computation)
  return cache[key][1]


# What `FeddleDiagnostics` keeps of every merge (`feddle.FeddleDiagnostics`'s
# fields), as lists per round.
MERGE_DIAGNOSTICS = ('coefficient_move', 'prior_loss', 'final_loss')


class FeddleDiagnostics(tff_mixed.AsyncObserver):
  """Feddle's diagnostics a round (`MethodRun.diagnostics`), and another
  observer's events passed on.

  A round with Feddle merges gives one row: of its last merge, the share of
  negative coefficients and, out of domain, the gradient cosines; of every
  merge, how far the search moved the coefficients (`coefficient_move`,
  ||c - c'|| / ||c'||) and the search loss over the server data at c'
  (FedBuff's merge, `prior_loss`) and at the searched c (`final_loss`), as
  lists in merge order.
  """

  def __init__(self, then: Optional[tff_mixed.AsyncObserver] = None):
    super().__init__()
    self.rows = []
    self._then = then
    self._merges = []

  def on_merge(self, event) -> None:
    if isinstance(event.diagnostics, feddle.FeddleMerge):
      self._merges.append(event.diagnostics.diagnostics)
    if self._then is not None:
      self._then.on_merge(event)

  def on_round(self, event) -> None:
    merges, self._merges = self._merges, []
    if merges:
      last = merges[-1]
      self.rows.append(dict(
          round=event.round_num, negative_share=float(last.negative_share),
          id_ood_cosine=float(last.id_ood_cosine),
          id_ood_cosine_at_zero=float(last.id_ood_cosine_at_zero),
          **{name: [float(getattr(m, name)) for m in merges]
             for name in MERGE_DIAGNOSTICS}))
    if self._then is not None:
      self._then.on_round(event)

  # Saved with `run_async`'s checkpoints, so a resumed run's diagnostics
  # hold the rounds before the interruption too. At a round's end nothing
  # is pending (`on_round` took the round's merges).
  def snapshot(self) -> dict[str, Any]:
    then = getattr(self._then, 'snapshot', None)
    return dict(rows=[dict(r) for r in self.rows],
                then=None if then is None else then())

  def restore(self, snapshot: Mapping[str, Any]) -> None:
    self.rows = [dict(r) for r in snapshot['rows']]
    if snapshot['then'] is not None:
      self._then.restore(snapshot['then'])


def _model(data: Data, config: Config, seed: int, cache: dict):
  """The seed's CNN, one object for every method run on the same data.

  The server steps keep their traced functions per model object
  (`tff_mixed.core.traced_cache`), so methods sharing it trace them once.
  """
  split = data.split
  key = ('model', id(split), id(data.initial_body), config.conv_filters,
         config.dense_units, seed)
  if key not in cache:
    model = cnn.build_cnn(
        input_shape=split.images.shape[1:], num_classes=int(
            split.labels.max()) + 1, conv_filters=config.conv_filters,
        dense_units=config.dense_units, seed=seed,
        body_weights=data.initial_body)
    # What the ids name stays referenced, so they are not reused meanwhile.
    cache[key] = (split, data.initial_body, model)
  return cache[key][2]


def run_method(method: str, data: Data, config: Config, seed: int,
               cache: Optional[dict] = None,
               clients_per_group: int = simulation.AUTO,
               delay_std: Optional[float] = None,
               server_fn: Optional[Callable[[Any], Any]] = None,
               observer_fn: Optional[Callable[[Any], Any]] = None,
               checkpoint_path: Optional[str] = None
               ) -> MethodRun:
  """One method, one seed, the setting in `config`: `run_async`.

  `clients_per_group`: 0 (default) trains a round's clients in one group
  per core, 1 one client per CLIENTS member (the same results), else
  groups of this size (`run_async`). `delay_std` overrides the method's
  delay level (`delay_of`), and `server_fn(model)` its server method
  (`build_method`): the clients' data and training stay `method`'s, e.g.
  FedAvg's clients under the setting's delays
  (experiments/hybrid_async/async_study_lib.py). `observer_fn(model)`
  gives a `tff_mixed.AsyncObserver` that sees the run's merges and rounds
  too (a study's probes); it cannot change the run. `checkpoint_path`:
  `run_async`'s, saved after every round; a run that finds it resumes after
  its round and ends as the uninterrupted run (its diagnostics included).
  """
  c = config
  cache = {} if cache is None else cache
  split = data.split
  model = _model(data, c, seed, cache)
  if delay_std is None:
    delay_std = delay_of(method, c.delay_std)
  schedule = tff_mixed.AsyncSchedule(
      c.num_clients, c.clients_per_round, delay_std, c.rounds, seed=seed)
  server_method = (server_fn(model) if server_fn is not None
                   else build_method(method, model, data, c, seed))
  steps = loadaboost_epoch_steps(c) if method == LOADABOOST else (
      c.client_steps)
  epochs = client_epochs(method, c)
  group_training = None if clients_per_group == 1 else _group_training(
      method, model, data, c, seed, steps, cache)
  training = _client_training(method, model, c, cache, group_training)
  if method == LOADABOOST and group_training is not None:
    group_training = training.train_groups  # It updates the threshold.

  def dataset_fn(client, round_num):
    return hybrid_images.client_dataset(
        split, client, c.client_batch_size, None if epochs else steps,
        seed=seed * 1000003 + round_num, epochs=epochs)

  observer = FeddleDiagnostics(
      None if observer_fn is None else observer_fn(model))
  result = tff_mixed.run_async(
      server_method, schedule, training, dataset_fn,
      model.initial_weights[0],
      evaluate_fn=evaluate_fn(split.eval_x, split.eval_y),
      eval_every=c.eval_every, group_training=group_training,
      clients_per_group=clients_per_group, observer=observer,
      checkpoint_path=checkpoint_path)
  notes = {}
  if method == LOADABOOST:
    notes['mean_client_epochs'] = training.mean_epochs
    notes['epochs'] = float(c.loadaboost_epochs)
  alpha = c.alpha if c.alpha is IDENTITIES else float(c.alpha)
  rows = [RunRow(method, alpha, float(delay_std), seed,
                 int(r['round']), r['accuracy'], r['loss'], r['seconds'])
          for r in result.rows]
  return MethodRun(rows, observer.rows, notes)


# Fields of a run's record that say how a method behaves, each added when
# that behaviour changed, with the behaviour a record made before (without
# the field) stands for. A kept run that differs from the one wanted only
# there was made by older code: it is outdated, and run again.
#   fedasync_staleness_unit: FedAsync counted staleness in rounds.
#   feddf_teachers: FedDF distilled every arrival since its last
#     distillation, once a round, where it now distills each merge's buffer.
FEDDF_TEACHERS = 'merged_buffer'
_BEHAVIOUR_BEFORE = {
    'fedasync_staleness_unit': staleness.ROUNDS,
    'feddf_teachers': 'arrivals_since_distillation',
}
MATCHES, OUTDATED, DIFFERS = 'matches', 'outdated', 'differs'


def method_fields(fields: dict[str, Any], method: str) -> dict[str, Any]:
  """A config's `fields` as `method`'s runs record them: the behaviour
  fields only where they change the run (FedAsync's staleness unit when a
  staleness discount a > 0 applies; FedDF's teacher set), so that the other
  methods' kept runs stay valid."""
  fields = dict(fields)
  if method != FEDASYNC or not fields['fedasync_a']:
    del fields['fedasync_staleness_unit']
  if method in (FEDDF_ID, FEDDF_OOD):
    fields['feddf_teachers'] = FEDDF_TEACHERS
  return fields


def config_record(config: Config, method: str) -> dict[str, Any]:
  """`config` as a JSON-able dict, as the studies' records of `method`'s
  runs keep it."""
  return method_fields({k: list(v) if isinstance(v, tuple) else v
                        for k, v in config._asdict().items()}, method)


def kept_config_status(kept: dict[str, Any], want: dict[str, Any],
                       every_field: bool = False) -> str:
  """MATCHES, OUTDATED or DIFFERS: a kept record's config against `want`.

  A behaviour field `want` has and the record lacks is read as the
  behaviour before it (`_BEHAVIOUR_BEFORE`); a record that differs there
  is OUTDATED, whatever else differs (e.g. values a new search selected):
  older code made it, so it is run again. Compared on the fields the record
  knows (fields added to `Config` later keep the earlier behaviour by
  default), or, with `every_field`, on the fields of either.
  """
  differing = differing_fields(kept, want, every_field)
  if not differing:
    return MATCHES
  predated = set(_BEHAVIOUR_BEFORE) & set(want) - set(kept)
  return OUTDATED if differing & predated else DIFFERS


def differing_fields(kept: dict[str, Any], want: dict[str, Any],
                     every_field: bool = False) -> set[str]:
  """The fields where a kept record's config, its behaviour fields read
  as in `kept_config_status`, differs from `want`."""
  filled = dict(kept, **{k: v for k, v in _BEHAVIOUR_BEFORE.items()
                         if k in want and k not in kept})
  keys = set(filled) | set(want) if every_field else set(filled)
  return {k for k in keys if filled.get(k) != want.get(k)}


def kept_config_matches(kept: dict[str, Any], want: dict[str, Any]) -> bool:
  """Whether a kept record's config is `want` (`kept_config_status`)."""
  return kept_config_status(kept, want) == MATCHES


def read_records(records_dir: str, record_type: Callable[..., Any],
                 kind: str) -> list[Any]:
  """Every `*.json` record in `records_dir` as `record_type(**fields)`,
  by file name (none if the directory does not exist); a ValueError names
  a file that is not a `kind` record."""
  if not os.path.isdir(records_dir):
    return []
  records = []
  for name in sorted(os.listdir(records_dir)):
    if name.endswith('.json'):
      with open(os.path.join(records_dir, name)) as f:
        try:
          records.append(record_type(**json.load(f)))
        except (ValueError, TypeError) as e:
          raise ValueError(f'{name} in {records_dir} is not a {kind} '
                           f'record: {e}') from None
  return records


def final_metric(rows: Sequence[RunRow]) -> float:
  """The paper's final metric: best accuracy of the last 5 evaluations."""
  rows = sorted(rows, key=lambda r: r.round)
  return max(r.accuracy for r in rows[-TAIL_EVALUATIONS:])


def late_mean_metric(rows: Sequence[RunRow]) -> float:
  """The mean accuracy over the last half of the evaluations after round 0.

  Less exposed to one lucky evaluation than the paper's best of the last
  5, which a jump in the last rounds decides.
  """
  rows = sorted((r for r in rows if r.round > 0), key=lambda r: r.round)
  return float(np.mean([r.accuracy for r in rows[len(rows) // 2:]]))


# The two final metrics every table gives: (name, function, what it is).
METRICS = (
    ('best of the last 5', final_metric, 'best of the last 5 evaluations, '
     'as in the paper'),
    ('mean of the last half', late_mean_metric, 'mean over the last half '
     'of the evaluations'),
)


# ----------------------------------------------------------------------------
# Runs kept on disk: resuming and rebuilding reports.


def run_key(method: str, setting: Setting, seed: int) -> str:
  delay = 'none' if method in DELAY_FREE else f'{setting.delay_std:g}'
  split = ('identities' if setting.alpha is IDENTITIES
           else f'alpha{setting.alpha:g}')
  return f'{method}_{split}_delay{delay}_seed{seed}'


def _fingerprint(config: Config, description: str,
                 method: str) -> dict[str, Any]:
  """What a kept run must match to be reused (the setting is in its name).

  `center_once` only for Center, the one method it changes, and
  `feddle_atlas_size` and `fedbuff_staleness_exponent` only away from their
  defaults: runs kept before either existed stay valid. The behaviour
  fields as `method_fields` gives them: FedAsync's and FedDF's runs kept
  before their behaviour changed are outdated (`kept_config_status`).
  """
  fields = method_fields(config._asdict(), method)
  del fields['alpha'], fields['delay_std']
  if method != CENTER:
    del fields['center_once']
  for name in ('feddle_atlas_size', 'fedbuff_staleness_exponent'):
    if not fields[name]:
      del fields[name]
  fields['conv_filters'] = list(fields['conv_filters'])
  return dict(fields, data=description)


def key_digest(key: Mapping[str, Any]) -> str:
  """16 hex digits of a JSON-able key's SHA-256: a file name that changes
  whenever the key does (kept checkpoints, pretrained backbones)."""
  return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()
                        ).hexdigest()[:16]


def kept_run(path: str, method: str, data: Data, config: Config, seed: int,
             cache: dict, clients_per_group: int = simulation.AUTO,
             checkpoint_dir: Optional[str] = None) -> MethodRun:
  """`run_method`'s run, kept at `path`: read back if it is there (made
  with the same config and data), else run and saved.

  With `checkpoint_dir`, a run not kept yet saves its state there after
  every round, in a file named after the run and a digest of its
  configuration (another configuration starts afresh, never from it), and
  resumes from it: a run longer than a sitting survives an interruption.
  The file is removed once the run is kept.

  Raises:
    ValueError: If `path` holds a run made with another configuration, or
      is unreadable.
  """
  fingerprint = _fingerprint(config, data.description, method)
  label = Setting(config.alpha, config.delay_std).label
  run = _load_run(path, fingerprint)
  if run is None:
    logging.info('%s: %s, seed %d', label, method, seed)
    checkpoint = None
    if checkpoint_dir:
      checkpoint = os.path.join(
          reports_lib.make_directory(checkpoint_dir, 'checkpoint directory'),
          f'{os.path.splitext(os.path.basename(path))[0]}-'
          f'{key_digest(fingerprint)}.pkl')
    run = run_method(method, data, config, seed, cache, clients_per_group,
                     checkpoint_path=checkpoint)
    _save_run(path, fingerprint, run)
    if checkpoint and os.path.exists(checkpoint):
      os.remove(checkpoint)
  else:
    logging.info('%s: %s, seed %d: kept run', label, method, seed)
  return run


def _save_run(path: str, fingerprint: dict[str, Any], run: MethodRun
              ) -> None:
  reports_lib.atomic_write_text(path, json.dumps(dict(
      fingerprint=fingerprint, rows=[r._asdict() for r in run.rows],
      diagnostics=run.diagnostics, notes=run.notes)) + '\n')


def _load_run(path: str, fingerprint: dict[str, Any]) -> Optional[MethodRun]:
  """A kept run, None if there is none or it is outdated (made before its
  method's behaviour changed: `kept_config_status`); an error if its config
  differs."""
  if not os.path.exists(path):
    return None
  try:
    with open(path) as f:
      kept = json.load(f)
    rows = [RunRow(**r) for r in kept['rows']]
  except (ValueError, KeyError, TypeError) as e:
    raise ValueError(f'Kept run {path!r} is unreadable ({e}); remove it to '
                     'run it again.') from e
  status = kept_config_status(kept['fingerprint'], fingerprint,
                              every_field=True)
  if status == OUTDATED:
    logging.info('%s was made before its method changed: run again.', path)
    return None
  if status == DIFFERS:
    differing = sorted(differing_fields(kept['fingerprint'], fingerprint,
                                        every_field=True))
    raise ValueError(
        f'{path!r} was run with other settings ({", ".join(differing)}); '
        'use a new --output_dir, or remove its runs/ to start over.')
  return MethodRun(rows, kept['diagnostics'], kept['notes'])


# ----------------------------------------------------------------------------
# Reports.


def _cell(values: Sequence[float]) -> str:
  return f'{100 * np.mean(values):.1f} ± {100 * np.std(values):.1f}'


def final_metrics(rows: Sequence[RunRow], methods: Sequence[str],
                  settings: Sequence[Setting],
                  metric: Callable[[Sequence[RunRow]], float] = final_metric
                 ) -> dict[tuple[str, Setting], list[float]]:
  """Per method and setting, `metric` (the paper's by default) of each
  seed."""
  by_run = collections.defaultdict(list)
  for r in rows:
    by_run[(r.method, r.alpha, r.delay_std, r.seed)].append(r)
  finals = {}
  for method in methods:
    for setting in settings:
      delay = delay_of(method, setting.delay_std)
      finals[(method, setting)] = [
          metric(v) for (m, a, d, _), v in sorted(by_run.items())
          if m == method and a == setting.alpha and d == delay]
  return finals


def mean_finals(rows: Sequence[RunRow], methods: Sequence[str],
                settings: Sequence[Setting]) -> dict[str, dict[tuple, float]]:
  """{method: {(alpha, delay sigma): mean final accuracy in %}} over the
  seeds run (the keys of `paper_tables`); cells without runs left out."""
  finals = final_metrics(rows, methods, settings)
  return {m: {(s.alpha, s.delay_std): 100 * float(np.mean(finals[(m, s)]))
              for s in settings if finals[(m, s)]} for m in methods}


def format_table(rows: Sequence[RunRow], methods: Sequence[str],
                 settings: Sequence[Setting],
                 metric: Callable[[Sequence[RunRow]], float] = final_metric
                 ) -> str:
  """A Markdown table like the paper's table 1 of `metric` (the paper's by
  default), mean ± std over seeds, the best per column in bold."""
  finals = final_metrics(rows, methods, settings, metric)
  means = {k: np.mean(v) if v else -1.0 for k, v in finals.items()}
  lines = ['| method | server data | ' + ' | '.join(
      s.label for s in settings) + ' |',
           '| --- | --- |' + ' --- |' * len(settings)]
  for method in methods:
    server = ('in-domain' if method in ID_METHODS else
              'out-of-domain' if method in OOD_METHODS else 'none')
    cells = []
    for setting in settings:
      values = finals[(method, setting)]
      if not values:
        cells.append('n/a')
        continue
      best = max(means[(m, setting)] for m in methods)
      cell = _cell(values)
      if len(values) != max(len(finals[(m, setting)]) for m in methods):
        cell += f' (n = {len(values)})'
      cells.append(f'**{cell}**' if means[(method, setting)] == best
                   else cell)
    name = method + (' *' if method in DELAY_FREE else '')
    lines.append(f'| {name} | {server} | ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines) + '\n'


def _duration(seconds: float) -> str:
  if seconds < 60:
    return f'{seconds:.0f} s'
  if seconds < 3600:
    return f'{seconds / 60:.1f} min'
  return f'{seconds / 3600:.2f} h'


def wall_time_line(rows: Sequence[RunRow], methods: Sequence[str]) -> str:
  """Each method's wall time per run, and the methods without a kept run.

  A run's time is its last row's `seconds`: its own rounds and evaluations,
  counted across a resumed run's parts (`run_async` keeps the clock in its
  checkpoint); data loading is not counted. Over seeds and settings, the
  mean; the total sums every run, so a reader can price the missing ones.
  A further seed is priced at each kept (method, setting)'s mean over its
  seeds, summed: what a section states where 3 seeds do not fit.
  """
  last = {}
  for r in rows:
    key = (r.method, r.alpha, r.delay_std, r.seed)
    if key not in last or r.round > last[key].round:
      last[key] = r
  # method -> (alpha, delay_std) -> each seed's seconds: one grouping
  # serves both the per-run mean and the further seed's price.
  by_method = collections.defaultdict(lambda: collections.defaultdict(list))
  for (method, alpha, delay_std, _), r in last.items():
    by_method[method][(alpha, delay_std)].append(r.seconds)
  parts, missing, total, per_seed = [], [], 0.0, 0.0
  for method in methods:
    settings = by_method.get(method, {})
    times = [s for seeds in settings.values() for s in seeds]
    if not times:
      missing.append(method)
      continue
    total += sum(times)
    per_seed += sum(float(np.mean(seeds)) for seeds in settings.values())
    runs = f' ({len(times)} runs, mean)' if len(times) > 1 else ''
    parts.append(f'{method} {_duration(float(np.mean(times)))}{runs}')
  line = ('Wall time per run (training and evaluation, from each run\'s '
          'last round; resumed runs count every part): '
          + (', '.join(parts) if parts else 'none kept')
          + f'; {_duration(total)} in all.')
  if parts:
    line += (' A further seed of the methods kept: about '
             f'{_duration(per_seed)}.')
  if missing:
    line += ' Not run yet: ' + ', '.join(missing) + '.'
  return line


def _lead(values: dict[str, list[float]], first: str, second: str) -> str:
  """`first`'s lead over `second` in points, and whether it exceeds the
  spread: the sum of the two standard deviations over seeds (their
  mean +- std intervals do not overlap)."""
  gap = np.mean(values[first]) - np.mean(values[second])
  spread = np.std(values[first]) + np.std(values[second])
  beyond = ('beyond' if abs(gap) > spread else 'within')
  return (f'{100 * gap:+.1f} points vs {second}, {beyond} the spread '
          f'({100 * spread:.1f})')


def ranking_summary(rows: Sequence[RunRow], methods: Sequence[str],
                    settings: Sequence[Setting]) -> list[str]:
  """Per setting, where Feddle ranks by both metrics (`METRICS`), on the
  means over seeds: the paper has Feddle (in domain) first in every column
  of its tables 1 and 7, out of domain mostly above the baselines.

  "Reproduced" needs Feddle first by the paper's metric; each comparison
  says whether the difference exceeds the spread over seeds (`_lead`).
  """
  lines = []
  for setting in settings:
    parts, verdict = [], None
    for name, metric, _ in METRICS:
      finals = final_metrics(rows, methods, settings, metric)
      values = {m: finals[(m, setting)] for m in methods
                if finals[(m, setting)]}
      if not values:
        continue
      means = {m: np.mean(v) for m, v in values.items()}
      order = sorted(means, key=lambda m: -means[m])
      text = f'{name}: best {order[0]} ({100 * means[order[0]]:.1f}%)'
      for m in FEDDLE_METHODS:
        if m in means:
          text += f', {m} ranks {order.index(m) + 1} of {len(order)}'
          # FedBuff is Feddle's fallback: the search's own contribution.
          if FEDBUFF in means:
            text += f' ({_lead(values, m, FEDBUFF)})'
          if order[0] == m and len(order) > 1 and order[1] != FEDBUFF:
            text += f' ({_lead(values, m, order[1])})'
      if CENTER in means and metric is final_metric:
        above = [m for m in order if means[m] > means[CENTER]]
        text += '; above Center: ' + (', '.join(above) or 'none')
      parts.append(text)
      if metric is final_metric:
        if not any(m in means for m in FEDDLE_METHODS):
          # A table still being run (or one without Feddle) cannot say.
          verdict = 'undecided (no Feddle run kept)'
        else:
          verdict = ('reproduced' if order[0] in FEDDLE_METHODS
                     else 'NOT reproduced')
    if not parts:
      continue
    if verdict is not None:
      parts.append('paper\'s ranking (Feddle first, by the mean over seeds) '
                   + verdict)
    lines.append(f'{setting.label}: ' + '; '.join(parts) + '.')
  return lines


def _diagnostics_of(diagnostics, method: str, setting: Setting):
  return [d for d in diagnostics if d['method'] == method
          and d['alpha'] == setting.alpha
          and d['delay_std'] == setting.delay_std]


def diagnostics_summary(diagnostics: Sequence[dict[str, Any]],
                        settings: Sequence[Setting]) -> list[str]:
  """Feddle's diagnostics per setting, averaged over merges and seeds."""
  lines = []
  for setting in settings:
    parts = []
    for method in FEDDLE_METHODS:
      ds = _diagnostics_of(diagnostics, method, setting)
      if not ds:
        continue
      text = (f'{method}: {100 * np.mean([d["negative_share"] for d in ds]):.0f}% '
              f'negative coefficients')
      with_fallback = [d['id_ood_cosine'] for d in ds
                       if math.isfinite(d['id_ood_cosine'])]
      without = [d['id_ood_cosine_at_zero'] for d in ds
                 if math.isfinite(d['id_ood_cosine_at_zero'])]
      if with_fallback:
        text += (f', ID/OOD coefficient-gradient cosine '
                 f'{np.mean(with_fallback):.2f} at the fallback start vs '
                 f'{np.mean(without):.2f} at c = 0')
      text += search_move_text(ds)
      parts.append(text)
    if parts:
      lines.append(f'{setting.label}: ' + '; '.join(parts) + '.')
  return lines


def merge_values(diagnostics: Sequence[dict[str, Any]],
                 name: str) -> np.ndarray:
  """One of `MERGE_DIAGNOSTICS` over every merge of `diagnostics`' rows
  (none for rows kept before it was recorded)."""
  return np.array([v for d in diagnostics for v in d.get(name, ())],
                  np.float64)


def search_move_text(diagnostics: Sequence[dict[str, Any]]) -> str:
  """How far the searches of `diagnostics`' merges moved, in words ('' for
  rows kept before it was recorded): the median of ||c - c'|| / ||c'||,
  and the search loss at c against c' (FedBuff's merge)."""
  moves = merge_values(diagnostics, 'coefficient_move')
  moves = moves[np.isfinite(moves)]
  if not moves.size:
    return ''
  change = (merge_values(diagnostics, 'final_loss')
            - merge_values(diagnostics, 'prior_loss'))
  change = change[np.isfinite(change)]
  return (f'; the search moved c by a median {100 * np.median(moves):.3g}% '
          f'of |c\'| ({moves.size} merges), its server loss '
          f'{np.mean(change):+.3g} on average from c\' (lower in '
          f'{100 * np.mean(change < 0):.0f}% of merges)')


def _count(epochs: int, steps: int) -> str:
  return f'{epochs} epochs' if epochs else f'{steps} steps'


def local_training(config: Config) -> str:
  """The clients' local training, in words, for reports."""
  c = config
  if c.client_steps:
    what = f'K = {c.client_steps} local steps'
  else:
    what = f'E = {c.client_epochs} local epochs'
  return (f'{what} of {c.client_optimizer} with batch {c.client_batch_size} '
          f'at lr {c.client_lr:g}')


def _values(values: Mapping[str, Any]) -> str:
  return ', '.join(f'{k} = {v:g}' if isinstance(v, float) else f'{k} = {v}'
                   for k, v in sorted(values.items()))


def selected_lines(overrides: Mapping[str, Mapping[str, Any]],
                   searched: Optional[Mapping[str, Any]] = None
                   ) -> list[str]:
  """Report lines: each method's own hyperparameters and, from a search
  (`tune_lib.Selected.searched`), which part of its grid was searched."""
  searched = searched or {}
  if not overrides and not searched:
    return []
  lines = ['Hyperparameters per method (selected on the validation split; '
           'other values as above; the clients\' values, searched on '
           'fedavg, hold for every method):', '',
           '| method | selected | searched |', '| --- | --- | --- |']
  for method in METHODS:
    if not overrides.get(method) and method not in searched:
      continue
    axes = searched.get(method, {})
    parts = []
    for name, axis in sorted(axes.items()):
      of = ('the whole grid' if axis['values'] == axis['grid'] else
            f'{axis["values"]} of the grid {axis["grid"]}')
      mark = ', our choice' if axis['source'] == 'ours' else ''
      parts.append(f'{name}: {of}{mark}')
    lines.append(f'| {method} | {_values(overrides.get(method, {}))} | '
                 + ('; '.join(parts) or 'not searched') + ' |')
  return lines + ['']


def _setting_rows(rows, setting: Setting):
  return [r for r in rows if r.alpha == setting.alpha
          and r.delay_std == delay_of(r.method, setting.delay_std)]


# One color per method in every panel (tab10 has 10; METHODS has 12).
_METHOD_COLORS = [f'tab:{c}' for c in (
    'blue', 'orange', 'green', 'red', 'purple', 'brown', 'pink', 'gray',
    'olive', 'cyan')] + ['black', 'gold']


def plot(path: str, rows: Sequence[RunRow], methods: Sequence[str],
         settings: Sequence[Setting], title: str) -> None:
  """Accuracy against rounds, mean over seeds, one panel per setting."""
  columns = min(2, len(settings))
  panels = math.ceil(len(settings) / columns)
  fig, axes = plots.subplots(panels, columns, figsize=(6 * columns,
                                                     3.8 * panels),
                           squeeze=False)
  for ax, setting in zip(axes.flat, settings):
    selected = _setting_rows(rows, setting)
    for method in methods:
      by_round = collections.defaultdict(list)
      for r in selected:
        if r.method == method:
          by_round[r.round].append(r.accuracy)
      rounds = sorted(by_round)
      ax.plot(rounds, [np.mean(by_round[k]) for k in rounds], label=method,
              color=_METHOD_COLORS[METHODS.index(method) % len(
                  _METHOD_COLORS)],
              linestyle='--' if method in DELAY_FREE else '-')
    ax.set_title(setting.label, fontsize=9)
    ax.set_xlabel('round')
    ax.set_ylabel('test accuracy (mean over seeds)')
  for ax in list(axes.flat)[len(settings):]:
    ax.axis('off')
  axes.flat[0].legend(fontsize=6, ncol=2)
  fig.suptitle(textwrap.fill(title, 75 * columns), fontsize=8)
  fig.tight_layout()
  plots.save_figure(fig, path)


def plot_diagnostics(path: str, diagnostics: Sequence[dict[str, Any]],
                     settings: Sequence[Setting]) -> None:
  """Feddle's share of negative coefficients and, out-of-domain, the cosine
  similarity of the in- and out-of-domain coefficient gradients (paper,
  Figs. 7-9), per merge round, mean over seeds."""
  fig, (left, right) = plots.subplots(1, 2, figsize=(12, 4))
  for setting in settings:
    for method in FEDDLE_METHODS:
      by_round = collections.defaultdict(list)
      cos = collections.defaultdict(list)
      cos_zero = collections.defaultdict(list)
      for d in _diagnostics_of(diagnostics, method, setting):
        by_round[d['round']].append(d['negative_share'])
        if math.isfinite(d['id_ood_cosine']):
          cos[d['round']].append(d['id_ood_cosine'])
          cos_zero[d['round']].append(d['id_ood_cosine_at_zero'])
      if by_round:
        rounds = sorted(by_round)
        left.plot(rounds, [np.mean(by_round[k]) for k in rounds],
                  label=f'{method}, {setting.label}')
      if cos:
        rounds = sorted(cos)
        line, = right.plot(rounds, [np.mean(cos[k]) for k in rounds],
                           label=f'fallback start, {setting.label}')
        right.plot(rounds, [np.nanmean(cos_zero[k]) for k in rounds],
                   linestyle=':', color=line.get_color(),
                   label=f'c = 0, {setting.label}')
  left.set_title('share of negative merging coefficients', fontsize=9)
  left.set_xlabel('round')
  right.set_title('cosine(ID, OOD coefficient gradients), feddle_ood',
                  fontsize=9)
  right.set_xlabel('round')
  right.set_ylim(-1.05, 1.05)
  for ax in (left, right):
    if ax.get_legend_handles_labels()[0]:
      ax.legend(fontsize=6)
  fig.tight_layout()
  plots.save_figure(fig, path)


# ----------------------------------------------------------------------------
# The experiment.


class ExperimentResult(NamedTuple):
  rows: list[RunRow]
  diagnostics: list[dict[str, Any]]
  notes: dict[str, float]
  table: str
  files: dict[str, str]
  config: Config
  settings: tuple[Setting, ...]
  description: str
  seeds: tuple[int, ...]
  overrides: dict[str, dict[str, Any]]
  # Every method asked for, in the table's order, kept or not.
  methods: tuple[str, ...]


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


def _csv(value, float_format: str = '.4g') -> str:
  """A CSV cell: alpha `IDENTITIES` as 'identities', floats formatted."""
  if value is IDENTITIES:
    return 'identities'
  return format(value, float_format) if isinstance(value, float) else str(
      value)


def run_experiment(data_fn: Callable[[int, float], Data], config: Config, *,
                   methods: Sequence[str], seeds: Sequence[int],
                   output_dir: str,
                   settings: Sequence[Setting] = (),
                   clients_per_group: int = simulation.AUTO,
                   overrides: Optional[Mapping[str, Mapping[str, Any]]] = None,
                   runs_dir: Optional[str] = None,
                   report_only: bool = False) -> ExperimentResult:
  """Every method for every setting and seed; CSVs, plots, table, config.

  Seeds are the outer loop, so an experiment stopped early has whole seeds
  for every setting. Each finished run is kept in `output_dir/runs/` and
  reused when the experiment is run again with the same configuration; the
  run under way resumes from its last round (`output_dir/checkpoints/`,
  `kept_run`).

  Args:
    data_fn: `data_fn(seed, alpha) -> Data`: the seed also draws the split,
      as in the paper (network initialization, sampling, delays and
      partition).
    config: The hyperparameters (`alpha` and `delay_std` are replaced by each
      setting's).
    methods: Names from `METHODS`.
    seeds: The seeds.
    output_dir: Where the files go.
    settings: `Setting`s (label skew, delay level); default: the config's.
    clients_per_group: Client groups of `run_method` (the same results, so
      kept runs are reused whatever it is).
    overrides: Optional {method: {config field: value}}: a method's own
      hyperparameters (e.g. those a search selected, `tune_lib`), replacing
      the config's for its runs only.
    runs_dir: Where the finished runs are kept (small JSON files); default
      `output_dir/runs`. A directory in the repository (docs/results/...)
      keeps them beyond the machine, so a run resumes anywhere.
    report_only: Run nothing: report the kept runs only (a run not kept is
      left out, and the table says how many seeds each cell has).

  Returns:
    An `ExperimentResult`.

  Raises:
    ValueError: For bad settings, before any training; for kept runs made
      with another configuration; or, `report_only`, if none is kept.
  """
  if not seeds or len(set(seeds)) != len(seeds):
    raise ValueError(f'`seeds` must be distinct, got {list(seeds)}.')
  settings = tuple(settings) or (Setting(config.alpha, config.delay_std),)
  overrides = {m: dict(v) for m, v in (overrides or {}).items()}
  validate(config, methods, settings, seeds)
  built_on_fedbuff = any(m in FEDBUFF_BASED for m in methods)
  for method, values in overrides.items():
    unknown = sorted(set(values) - set(Config._fields))
    used = method in methods or (method == FEDBUFF and built_on_fedbuff)
    if not used or unknown:
      raise ValueError(f'Overrides for {method!r} name no method run or '
                       f'unknown fields {unknown}.')
  for method in methods:
    validate(method_config(config, method, overrides), [method], settings,
             seeds)
  # Held to the end: a second experiment here, even of other methods, would
  # overwrite this one's tables, plots and config (the kept runs and the
  # checkpoints are per run).
  with run_lock.claimed_output_directory(output_dir, '`output_dir`'):
    runs_dir = reports_lib.make_directory(
        runs_dir or os.path.join(output_dir, RUNS_DIR), 'runs directory')
    rows, diagnostics, notes = [], [], collections.defaultdict(list)
    descriptions = []
    cache = {}
    done = set()
    for seed in seeds:
      data_of_alpha = {}  # The split depends on the seed and alpha only.
      for setting in settings:
        c = config._replace(alpha=setting.alpha, delay_std=setting.delay_std)
        if setting.alpha not in data_of_alpha:
          data_of_alpha[setting.alpha] = data_fn(seed, setting.alpha)
        data = data_of_alpha[setting.alpha]
        descriptions.append(data.description)
        for method in methods:
          key = run_key(method, setting, seed)
          if key in done:
            continue  # A delay-free method, run for an earlier delay.
          done.add(key)
          path = os.path.join(runs_dir, key + '.json')
          run_config = method_config(c, method, overrides)
          if report_only:
            run = _load_run(path, _fingerprint(run_config, data.description,
                                               method))
            if run is None:
              continue
          else:
            run = kept_run(path, method, data, run_config, seed, cache,
                           clients_per_group,
                           os.path.join(output_dir, CHECKPOINTS_DIR))
          rows.extend(run.rows)
          diagnostics.extend(dict(d, method=method, alpha=setting.alpha,
                                  delay_std=setting.delay_std, seed=seed)
                             for d in run.diagnostics)
          for name, value in run.notes.items():
            notes[f'{method}.{name}'].append(value)
    if not rows:
      raise ValueError(f'No kept run in {runs_dir!r} to report.')
    notes = {k: float(np.mean(v)) for k, v in notes.items()}
    files = {k: os.path.join(output_dir, v) for k, v in (
        ('metrics', METRICS_FILE), ('plot', PLOT_FILE), ('table', TABLE_FILE),
        ('diagnostics', DIAGNOSTICS_FILE),
        ('diagnostics_plot', DIAGNOSTICS_PLOT_FILE), ('config', CONFIG_FILE))}
    lines = [','.join(RunRow._fields)] + [
        f'{r.method},{_csv(r.alpha, "g")},{r.delay_std:g},{r.seed},{r.round},'
        f'{r.accuracy:.6g},{r.loss:.6g},{r.seconds:.1f}' for r in rows]
    reports_lib.atomic_write_text(files['metrics'], '\n'.join(lines) + '\n')
    diag_fields = ('method', 'alpha', 'delay_std', 'seed', 'round',
                   'negative_share', 'id_ood_cosine', 'id_ood_cosine_at_zero')
    # Per merge in the runs, their round's mean here; '' for runs kept
    # before they were recorded.
    diag_lines = [','.join(diag_fields + MERGE_DIAGNOSTICS)] + [
        ','.join([_csv(d[k]) for k in diag_fields]
                 + [_csv(float(np.mean(d[k]))) if d.get(k) else ''
                    for k in MERGE_DIAGNOSTICS])
        for d in diagnostics]
    reports_lib.atomic_write_text(files['diagnostics'],
                                  '\n'.join(diag_lines) + '\n')
    table = format_table(rows, methods, settings)
    late = format_table(rows, methods, settings, late_mean_metric)
    reports_lib.atomic_write_text(files['table'], table + '\n' + late + '\n'
                                  + '\n'.join(
        ranking_summary(rows, methods, settings)
        + diagnostics_summary(diagnostics, settings)) + '\n')
    plot(files['plot'], rows, methods, settings, descriptions[0])
    plot_diagnostics(files['diagnostics_plot'], diagnostics, settings)
    reports_lib.atomic_write_text(files['config'], json.dumps(
        dict(config._asdict(), methods=list(methods), seeds=list(seeds),
             settings=[s._asdict() for s in settings], data=descriptions,
             overrides=overrides),
        indent=2) + '\n')
    return ExperimentResult(rows, diagnostics, notes, table, files, config,
                            settings, descriptions[0], tuple(seeds), overrides,
                            tuple(methods))


def _paper_table_name(settings: Sequence[Setting], reference) -> str:
  """The paper's table these runs answer: the one whose numbers stand
  beside them (`paper_tables.reference`), else 2 (identities) or 1."""
  if reference:
    return reference[0].name
  return 'table 2' if all(s.alpha is IDENTITIES for s in settings) else (
      'table 1')


# What `save_earlier_runs` keeps of a method's records before they are run
# again under a changed protocol: the values that changed.
EARLIER_FIELDS = ('buffer_size', 'server_lr', 'feddle_search_optimizer',
                  'feddle_search_lr', 'feddle_search_epochs',
                  'feddle_atlas_size', 'server_sgd_lr', 'server_epochs')


def method_of_record(name: str,
                     methods: Sequence[str] = METHODS) -> Optional[str]:
  """The method of `methods` whose run a kept record's file `name`
  (`run_key`) holds, None for another file. The longest name matches first
  (fedavg_delayed before fedavg)."""
  return next((m for m in sorted(methods, key=len, reverse=True)
               if name.startswith((m + '_alpha', m + '_identities'))), None)


def save_earlier_runs(runs_dir: str, methods: Sequence[str],
                      path: str) -> int:
  """Keeps at `path` the rows of `methods`' records in `runs_dir` (and
  each method's `EARLIER_FIELDS`), before the records are replaced.

  The records' fingerprints are not checked: they belong to the earlier
  protocol. `earlier_protocol_lines` compares them with the new runs.

  Returns:
    How many records were kept.
  """
  rows, fields, count = [], {}, 0
  for name in sorted(os.listdir(runs_dir)):
    method = method_of_record(name, methods)
    if method is None or not name.endswith('.json'):
      continue
    with open(os.path.join(runs_dir, name)) as f:
      kept = json.load(f)
    rows += kept['rows']
    fields.setdefault(method, {k: kept['fingerprint'].get(k)
                               for k in EARLIER_FIELDS})
    count += 1
  reports_lib.atomic_write_text(path, json.dumps(
      dict(rows=rows, fields=fields), indent=1, sort_keys=True) + '\n')
  return count


def _values_text(values: Mapping[str, Any]) -> str:
  return ', '.join(f'{k} {v:g}' if isinstance(v, float) else f'{k} {v}'
                   for k, v in values.items() if v not in (None, 0))


def earlier_protocol_lines(earlier: Mapping[str, Any],
                           result: ExperimentResult,
                           settings: Sequence[Setting]) -> list[str]:
  """Per method of `earlier` (`save_earlier_runs`), its values then and now
  and both metrics' mean over the settings and seeds, then and now."""
  earlier_rows = [RunRow(**r) for r in earlier['rows']]
  lines = []
  for method in [m for m in METHODS if m in earlier['fields']]:
    now_values = method_config(result.config, method, result.overrides)
    then_values = earlier['fields'][method]
    changed = {k: then_values[k] for k in EARLIER_FIELDS
               if k in then_values
               and getattr(now_values, k) != then_values[k]}
    parts = []
    for name, metric, _ in METRICS:
      then = final_metrics(earlier_rows, [method], settings, metric)
      now = final_metrics(result.rows, [method], settings, metric)
      then = [v for s in settings for v in then[(method, s)]]
      now = [v for s in settings for v in now[(method, s)]]
      if then and now:
        parts.append(f'{name} {100 * np.mean(then):.1f}% -> '
                     f'{100 * np.mean(now):.1f}% '
                     f'({100 * (np.mean(now) - np.mean(then)):+.1f} points)')
      elif then:  # Not run again yet: the earlier number, said as such.
        parts.append(f'{name} {100 * np.mean(then):.1f}% then, not run '
                     'again yet')
    if not parts:
      continue
    values = (f'then {_values_text(changed)}, now ' + _values_text(
        {k: getattr(now_values, k) for k in changed}) if changed
              else 'values unchanged')
    lines.append(f'{method} ({values}): ' + '; '.join(parts) + '.')
  return lines


def results_markdown(result: ExperimentResult, command: str, machine: str,
                     date: str,
                     searched: Optional[Mapping[str, Any]] = None,
                     earlier: Optional[Mapping[str, Any]] = None) -> str:
  """The RESULTS.md section of a run (`searched`: as `selected_lines`;
  `earlier`: runs of an earlier protocol, `save_earlier_runs`)."""
  c = result.config
  settings = result.settings
  methods = [m for m in METHODS if any(r.method == m for r in result.rows)]
  reference = paper_tables.reference(methods, settings, result.description)
  # Feddle's values as its runs had them (FedBuff's, then its own).
  feddle = method_config(c, FEDDLE_ID, result.overrides)
  lines = [
      '## Hybrid data under asynchrony: Feddle and baselines (guided model '
      f'merging, Zhu et al., {_paper_table_name(settings, reference)})',
      '',
      f'Generated on {date} by `{command}`.',
      '',
      f'* Machine: {machine}.',
      f'* Data (seed {result.seeds[0]}, first setting): '
      f'{result.description}.',
      f'* Settings (the columns): '
      + ', '.join(s.label for s in settings) + '; seeds '
      f'{list(result.seeds)} (each draws the split, the initial model, the '
      'sampling and the delays).',
      f'* {c.num_clients} clients, {c.clients_per_round} per round, '
      f'{c.rounds} rounds; {local_training(c)}; server lr '
      f'{c.server_lr}, buffer M = {c.buffer_size}, FedAsync alpha '
      f'{c.fedasync_alpha} and a {c.fedasync_a}; server '
      f'{c.server_optimizer} {_count(c.server_epochs, c.server_steps)} at '
      f'lr {c.server_sgd_lr} (Center: '
      f'{"once, then held" if c.center_once else "every round"}); Feddle '
      f'atlas {feddle_atlas_size(feddle)}, buffer {feddle.buffer_size} and '
      f'server lr {feddle.server_lr} (FedBuff\'s: every method built on '
      f'FedBuff takes its values), {feddle.feddle_search_optimizer} search '
      f'{_count(feddle.feddle_search_epochs, feddle.feddle_search_steps)} '
      f'at lr {feddle.feddle_search_lr}, lambda 0 (in-domain) / '
      f'{c.feddle_ood_lambda} (out-of-domain); LoAdaBoost E = '
      f'{c.loadaboost_epochs} (SGD at lr '
      f'{c.loadaboost_lr}); CNN filters '
      f'{list(c.conv_filters)}, dense {c.dense_units}.',
      '',
  ] + selected_lines(result.overrides, searched) + [
      'Final accuracy (%): best of the last 5 evaluations (every '
      f'{c.eval_every} rounds), mean ± std over seeds, as in the paper; best '
      'of each column in bold; (n = k): only k seeds finished. * no delays '
      '(synchronous, or no client trains): the same runs stand in every '
      'delay column.',
      '',
      result.table.rstrip('\n'),
      '',
      'Mean accuracy (%) over the last half of the evaluations, mean ± std '
      'over seeds: less exposed to one lucky evaluation than the paper\'s '
      'metric.',
      '',
      format_table(result.rows, result.methods, settings,
                   late_mean_metric).rstrip('\n'),
      '',
  ]
  if reference:
    table, text = reference
    lines += [f'For reference, the paper\'s {table.name} ({table.caption}):',
              '', text.rstrip('\n'), '']
    comparison = paper_comparison.comparison_lines(
        mean_finals(result.rows, methods, settings), table, [(s.alpha, s.delay_std) for s in settings],
        [s.label for s in settings])
    lines += comparison + ([''] if comparison else [])
  if LOADABOOST + '.mean_client_epochs' in result.notes:
    lines += [
        f'LoAdaBoost clients trained {result.notes[LOADABOOST + ".mean_client_epochs"]:.2f} '
        f'epochs on average (FedAvg: E = {c.loadaboost_epochs}; one epoch '
        f'= {loadaboost_epoch_steps(c)} batches).', '']
  lines += [f'* {wall_time_line(result.rows, result.methods)}', '']
  lines += ['Against the paper (in its tables 1, 2 and 7 Feddle in domain '
            'is first in every column):',
            '']
  lines += [f'* {line}' for line in ranking_summary(result.rows, methods,
                                                   settings)]
  if earlier:
    lines += ['', 'What changed from the earlier protocol, where every '
              'method built on FedBuff now takes FedBuff\'s selected buffer '
              'and server lr and Feddle searches at the paper\'s scaled rate '
              '(the values that differ, and both metrics\' mean over the '
              'settings and seeds, then and now):', '']
    lines += [f'* {line}' for line in earlier_protocol_lines(
        earlier, result, settings)]
  diagnostics = diagnostics_summary(result.diagnostics, settings)
  if diagnostics:
    lines += ['', 'Feddle diagnostics (mean over merges and seeds; plots in '
              f'`{DIAGNOSTICS_PLOT_FILE}`):', '']
    lines += [f'* {line}' for line in diagnostics]
  return '\n'.join(lines)
