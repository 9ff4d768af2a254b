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
"""One method's run of the hybrid experiment, for one seed and setting.

`run_method` runs a method (`hybrid_methods.build_method`) through
`tff_mixed.run_async` on the setting's schedule of delays: the clients'
local training (traced once per model shape and kind, and reused by every
seed), their client groups, the evaluation every `eval_every` rounds and
Feddle's diagnostics per merge (`FeddleDiagnostics`). A run gives one
`RunRow` per evaluation (`MethodRun`).
"""

from collections.abc import Callable, Mapping
import os
import tempfile
from typing import Any, NamedTuple, Optional

import tensorflow as tf
import tensorflow_federated as tff

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
import tff_mixed
from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import loadaboost as loadaboost_lib
from tff_mixed.models import cnn
from tff_mixed.tasks import hybrid_client_store
from tff_mixed.tasks import hybrid_images


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


def client_optimizer(config: hybrid_config.Config):
  """The clients' optimizer of `config` (LoAdaBoost's clients excepted)."""
  if config.client_optimizer == 'adam':
    return tff.learning.optimizers.build_adam(learning_rate=config.client_lr)
  return tff.learning.optimizers.build_sgdm(learning_rate=config.client_lr)


def _client_training(method: str, model, config: hybrid_config.Config,
                     cache: dict):
  """The method's client training; traced once per model shape and kind.

  The computations depend on the model's functions, not on its initial
  weights, so every seed reuses them.
  """
  c = config
  kind = ('loadaboost', c.loadaboost_epochs, c.loadaboost_lr) if (
      method == hybrid_config.LOADABOOST) else (c.client_optimizer, c.client_lr)
  key = (tuple(model.input_spec[0].shape), c.conv_filters, c.dense_units,
         int(model.initial_weights[0][-1].shape[0])) + kind
  if key not in cache:
    if method == hybrid_config.LOADABOOST:
      cache[key] = loadaboost_lib.build_loadaboost_client_training(
          model, epochs=c.loadaboost_epochs, learning_rate=c.loadaboost_lr)
    else:
      cache[key] = client_training.build_client_training(model,
                                                         client_optimizer(c))
  if method == hybrid_config.LOADABOOST:
    # A fresh driver per run: the loss threshold starts at +inf.
    return loadaboost_lib.LoAdaBoostTraining(cache[key], c.loadaboost_epochs)
  return cache[key]


def _group_training(method: str, model, data: hybrid_config.Data,
                    config: hybrid_config.Config, seed: int, steps: int,
                    cache: dict):
  """The group computation of `run_async`'s client groups, or None.

  Each member reads the stream of `hybrid_images.client_dataset` (the same
  seed per round) from the split's client store (`_client_store`), so the
  computation is built once per split and seed, and every method run on
  them reuses it.
  """
  c = config
  if method == hybrid_config.CENTER:
    return None  # No client trains.
  if method == hybrid_config.LOADABOOST:
    # Per client: its group computation is exact (tests/async_groups_test)
    # but slower here, as tf.data rewrites each member's stream on every
    # pass, and without the rewrites a reshuffled stream's later passes
    # differ from the per-client path's.
    return None
  split = data.split
  epochs = hybrid_methods.client_epochs(method, c)
  key = ('groups', id(split), seed, steps, epochs, c.client_optimizer,
         c.client_lr, c.client_batch_size)
  if key not in cache:
    store = _client_store(split, cache)

    def dataset_fn(client_id, round_num):
      return store.client_dataset(
          client_id, c.client_batch_size, stream_seed(seed, round_num),
          num_steps=None if epochs is not None else steps, epochs=epochs)

    computation = client_training.build_group_client_training(
        model, client_optimizer(c), dataset_fn)
    # The split stays referenced, so its id is not reused while cached.
    cache[key] = (split, computation)
  return cache[key][1]


def _client_store(split: hybrid_images.HybridSplit, cache: dict
                  ) -> hybrid_client_store.ClientStore:
  """The split's clients' examples in a store, written once per split.

  Group computations read their members' examples from it rather than
  holding every client's images as constants (614 MB for CIFAR-10 as
  float32), which TFF would send to its worker with every call. It lives
  in a temporary directory that goes with `cache`'s entry, or at exit.
  """
  key = ('client_store', id(split))
  if key not in cache:
    directory = tempfile.TemporaryDirectory(prefix='tff_mixed_clients.')
    store = hybrid_client_store.write_client_store(
        split, os.path.join(directory.name, 'store'))
    # The split stays referenced, so its id is not reused while cached.
    cache[key] = (split, directory, store)
  return cache[key][2]


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


def stream_seed(seed: int, round_num):
  """The shuffle seed of a client's stream in `round_num` of the run of
  `seed` (an int or an int tensor `round_num`)."""
  return seed * 1000003 + round_num


def client_steps(method: str, config: hybrid_config.Config) -> int:
  """The local steps of `method`'s clients (where it trains by steps)."""
  if method == hybrid_config.LOADABOOST:
    return hybrid_methods.loadaboost_epoch_steps(config)
  return config.client_steps


def client_dataset(method: str, data: hybrid_config.Data,
                   config: hybrid_config.Config, seed: int, client: int,
                   round_num: int) -> tf.data.Dataset:
  """Client `client`'s stream in round `round_num` of `method`'s run of
  `seed`, as `run_method` trains it per client."""
  epochs = hybrid_methods.client_epochs(method, config)
  return hybrid_images.client_dataset(
      data.split, client, config.client_batch_size,
      None if epochs else client_steps(method, config),
      seed=stream_seed(seed, round_num), epochs=epochs)


def _model(data: hybrid_config.Data, config: hybrid_config.Config, seed: int,
           cache: dict):
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


def run_method(method: str, data: hybrid_config.Data,
               config: hybrid_config.Config, seed: int,
               cache: Optional[dict] = None,
               clients_per_group: int = tff_mixed.simulation.AUTO,
               delay_std: Optional[float] = None,
               server_fn: Optional[Callable[[Any], Any]] = None,
               observer_fn: Optional[Callable[[Any], Any]] = None,
               checkpoint_path: Optional[str] = None
               ) -> MethodRun:
  """One method, one seed, the setting in `config`: `run_async`.

  `clients_per_group`: 0 (default) trains a round's clients in one group
  per core, 1 one client per CLIENTS member (the same results), else
  groups of this size (`run_async`). `delay_std` overrides the method's
  delay level (`hybrid_config.delay_of`), and `server_fn(model)` its
  server method (`hybrid_methods.build_method`): the clients' data and
  training stay `method`'s, e.g. FedAvg's clients under the setting's
  delays (experiments/hybrid_async/async_study_lib.py). `observer_fn(model)`
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
    delay_std = hybrid_config.delay_of(method, c.delay_std)
  schedule = tff_mixed.AsyncSchedule(
      c.num_clients, c.clients_per_round, delay_std, c.rounds, seed=seed)
  server_method = (server_fn(model) if server_fn is not None
                   else hybrid_methods.build_method(method, model, data, c,
                                                    seed))
  steps = client_steps(method, c)
  group_training = None if clients_per_group == 1 else _group_training(
      method, model, data, c, seed, steps, cache)
  training = _client_training(method, model, c, cache)

  def dataset_fn(client, round_num):
    return client_dataset(method, data, c, seed, client, round_num)

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
  if method == hybrid_config.LOADABOOST:
    notes['mean_client_epochs'] = training.mean_epochs
    notes['epochs'] = float(c.loadaboost_epochs)
  alpha = c.alpha if c.alpha is hybrid_config.IDENTITIES else float(c.alpha)
  rows = [RunRow(method, alpha, float(delay_std), seed,
                 int(r['round']), r['accuracy'], r['loss'], r['seconds'])
          for r in result.rows]
  return MethodRun(rows, observer.rows, notes)
