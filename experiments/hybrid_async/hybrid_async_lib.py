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

The guided-model-merging paper (Feddle, seed 003, section 5, table 1):
clients hold a Dirichlet(alpha) split of an image set and report after
|N(0, sigma^2)| rounds; the server holds 1,000 in-domain examples (taken out
of the test set) or out-of-domain images. Methods, each on the same
schedule, client data and initial model for a seed:

*   without server data: `fedavg` (synchronous: no delays, FedBuff with a
    buffer of S and server lr 1, i.e. the unweighted FedAvg mean),
    `fedasync`, `fedbuff`, `ca2fl`;
*   with in-domain server data: `center` (server data only), `fed_ft`
    (FedBuff, then fine-tuning on the server data each round), `hfcl` (the
    server trains a copy and joins the merge as one more participant),
    `feddf_id` (FedBuff, then ensemble distillation of the arrived client
    models on the server images), `feddle_id`;
*   with out-of-domain server data: `feddf_ood`, `feddle_ood` (the
    surrogate loss over a new linear head).

Reported as the paper does: evaluate every `eval_every` rounds; a run's
final metric is the best of its last 5 evaluations; mean and standard
deviation over seeds.
"""

import collections
from collections.abc import Sequence
import json
import os
from typing import Any, NamedTuple, Optional

from absl import logging
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed

cnn = tff_mixed.cnn
hybrid_images = tff_mixed.hybrid_images
hybrid_baselines = tff_mixed.hybrid_baselines

FEDAVG = 'fedavg'
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
METHODS = (FEDAVG, FEDASYNC, FEDBUFF, CA2FL, CENTER, FED_FT, HFCL, FEDDF_ID,
           FEDDLE_ID, FEDDF_OOD, FEDDLE_OOD)
OOD_METHODS = (FEDDF_OOD, FEDDLE_OOD)
METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'accuracy.png'
TABLE_FILE = 'results.txt'
DIAGNOSTICS_FILE = 'feddle_diagnostics.csv'
CONFIG_FILE = 'config.json'
TAIL_EVALUATIONS = 5


class Config(NamedTuple):
  """Hyperparameters (defaults: the paper's setting where it gives one)."""

  rounds: int = 200
  num_clients: int = 500
  clients_per_round: int = 10
  delay_std: float = 5.0
  alpha: float = 0.1
  server_size: int = 1000
  eval_size: int = 2000
  client_steps: int = 10
  client_batch_size: int = 32
  client_lr: float = 0.05
  server_lr: float = 1.0
  buffer_size: int = 10
  fedasync_alpha: float = 0.5
  server_steps: int = 10
  server_batch_size: int = 32
  server_sgd_lr: float = 0.05
  feddle_search_steps: int = 10
  feddle_search_lr: float = 0.01
  feddle_ood_lambda: float = 0.01
  distill_temperature: float = 1.0
  conv_filters: tuple[int, ...] = (32, 64, 64)
  dense_units: int = 64
  eval_every: int = 10


class CenterMethod:
  """Center: server data only, `server_steps` SGD steps a round."""

  def __init__(self, model, server_x, server_y, config: Config, seed: int):
    self._args = (model, server_x, server_y)
    self._config = config
    self._seed = seed

  def initial_state(self):
    return 0

  def apply(self, state, weights, updates):
    del updates  # Client updates are ignored.
    return state + 1, self.train(weights, state)

  def train(self, weights, step: int):
    model, x, y = self._args
    c = self._config
    return hybrid_baselines.server_sgd(
        model, weights, x, y, steps=c.server_steps,
        batch_size=c.server_batch_size, learning_rate=c.server_sgd_lr,
        seed=self._seed * 100003 + step)


def _flushed(before, after, updates) -> bool:
  """Whether a FedBuff-style state merged its buffer in this call."""
  return len(after.buffer) < len(before.buffer) + len(updates)


class FineTuneMethod:
  """Fed+FT: FedBuff's merge, then fine-tuning on the server data."""

  def __init__(self, fedbuff, center: CenterMethod):
    self._fedbuff = fedbuff
    self._center = center
    self._merges = 0

  def initial_state(self):
    return self._fedbuff.initial_state()

  def apply(self, state, weights, updates):
    new_state, weights = self._fedbuff.apply(state, weights, updates)
    if _flushed(state, new_state, updates):
      weights = self._center.train(weights, self._merges)
      self._merges += 1
    return new_state, weights


class HFCLMethod:
  """HFCL: the server trains a copy on its data and joins each merge as one
  more participant weighted by its data size (clients: their mean size)."""

  def __init__(self, model, server_x, server_y, config: Config, seed: int,
               client_examples: float):
    self._args = (model, server_x, server_y)
    self._config = config
    self._seed = seed
    self._client_examples = client_examples

  def initial_state(self):
    return 0

  def apply(self, state, weights, updates):
    if not updates:
      return state, weights
    model, x, y = self._args
    c = self._config
    return state + 1, hybrid_baselines.hfcl_round(
        model, weights, [u.delta for u in updates],
        [self._client_examples] * len(updates), x, y,
        steps=c.server_steps, batch_size=c.server_batch_size,
        learning_rate=c.server_sgd_lr, seed=self._seed * 100003 + state)


class FedDFMethod:
  """FedDF: FedBuff's merge, then distillation of the merged client models
  (each `base + delta`) into it on the server images (labels unused)."""

  def __init__(self, fedbuff, model, server_x, config: Config, seed: int):
    self._fedbuff = fedbuff
    self._model = model
    self._x = server_x
    self._config = config
    self._seed = seed
    self._teachers = []
    self._merges = 0

  def initial_state(self):
    return self._fedbuff.initial_state()

  def apply(self, state, weights, updates):
    self._teachers.extend(
        [np.asarray(b) + np.asarray(d) for b, d in zip(u.base, u.delta)]
        for u in updates)
    new_state, weights = self._fedbuff.apply(state, weights, updates)
    if _flushed(state, new_state, updates) and self._teachers:
      c = self._config
      weights = hybrid_baselines.feddf_distill(
          self._model, weights, self._teachers, self._x,
          steps=c.server_steps, batch_size=c.server_batch_size,
          learning_rate=c.server_sgd_lr, temperature=c.distill_temperature,
          seed=self._seed * 100003 + self._merges)
      self._teachers = []
      self._merges += 1
    return new_state, weights


class Data(NamedTuple):
  split: Any  # hybrid_images.HybridSplit
  ood_x: Optional[np.ndarray]
  ood_y: Optional[np.ndarray]
  description: str


def build_method(method: str, model, data: Data, config: Config, seed: int):
  """The server method object of `method` for `run_async`."""
  c = config
  split = data.split
  fedbuff = tff_mixed.FedBuff(learning_rate=c.server_lr,
                              buffer_size=c.buffer_size)
  if method == FEDAVG:
    return tff_mixed.FedBuff(learning_rate=1.0,
                             buffer_size=c.clients_per_round)
  if method == FEDASYNC:
    return tff_mixed.FedAsync(alpha=c.fedasync_alpha)
  if method == FEDBUFF:
    return fedbuff
  if method == CA2FL:
    return tff_mixed.CA2FL(learning_rate=c.server_lr,
                           buffer_size=c.buffer_size,
                           num_clients=c.num_clients)
  center = CenterMethod(model, split.server_x, split.server_y, c, seed)
  if method == CENTER:
    return center
  if method == FED_FT:
    return FineTuneMethod(fedbuff, center)
  if method == HFCL:
    sizes = [len(i) for i in split.client_indices]
    return HFCLMethod(model, split.server_x, split.server_y, c, seed,
                      float(np.mean(sizes)))
  if method in (FEDDF_ID, FEDDF_OOD):
    x = split.server_x if method == FEDDF_ID else data.ood_x
    return FedDFMethod(fedbuff, model, x, c, seed)
  if method in (FEDDLE_ID, FEDDLE_OOD):
    ood = method == FEDDLE_OOD
    config = tff_mixed.feddle.FeddleConfig(
        max_anchors=2 * c.clients_per_round, server_lr=c.server_lr,
        search_lr=c.feddle_search_lr, search_steps=c.feddle_search_steps,
        fallback_lambda=c.feddle_ood_lambda if ood else 0.0,
        out_of_domain=ood, head_size=cnn.HEAD_SIZE,
        num_ood_classes=int(data.ood_y.max()) + 1 if ood else 2)
    if ood:
      server_data = _batches(data.ood_x, data.ood_y, c.server_batch_size,
                             seed)
    else:
      server_data = _batches(split.server_x, split.server_y,
                             c.server_batch_size, seed)
    return tff_mixed.FeddleMethod(
        model, config, server_data, buffer_size=min(c.buffer_size,
                                                    config.max_anchors),
        features_fn=cnn.features if ood else None)
  raise ValueError(f'`method` must be one of {METHODS}, got {method!r}.')


def _batches(x, y, batch_size, seed):
  """A fixed shuffled list of server batches (Feddle cycles through them)."""
  order = np.random.default_rng(seed).permutation(len(x))
  return [(x[order[i:i + batch_size]], y[order[i:i + batch_size]])
          for i in range(0, len(x) - batch_size + 1, batch_size)] or [(x, y)]


def _evaluate_fn(eval_x, eval_y):
  @tf.function
  def correct_and_loss(weights, x, y):
    logits = cnn.logits(weights, x)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                            logits=logits)
    correct = tf.reduce_sum(tf.cast(tf.equal(
        tf.argmax(logits, axis=-1, output_type=tf.int32), y), tf.float32))
    return correct, tf.reduce_sum(losses)

  def evaluate(weights):
    weights = [tf.constant(w) for w in weights]
    correct = loss = 0.0
    for start in range(0, len(eval_x), 512):
      c, l = correct_and_loss(weights, eval_x[start:start + 512],
                              eval_y[start:start + 512])
      correct += float(c)
      loss += float(l)
    return {'accuracy': correct / len(eval_x), 'loss': loss / len(eval_x)}

  return evaluate


class RunRow(NamedTuple):
  method: str
  seed: int
  round: int
  accuracy: float
  loss: float
  seconds: float


def run_method(method: str, data: Data, config: Config, seed: int,
               diagnostics: Optional[list] = None) -> list[RunRow]:
  """One method, one seed: `run_async` on the seed's schedule."""
  c = config
  split = data.split
  model = tff_mixed.build_cnn(
      input_shape=split.images.shape[1:], num_classes=int(
          split.labels.max()) + 1, conv_filters=c.conv_filters,
      dense_units=c.dense_units, seed=seed)
  delay_std = 0.0 if method == FEDAVG else c.delay_std
  short = tff_mixed.first_round_with_shortage(
      c.num_clients, c.clients_per_round, delay_std, c.rounds, seed)
  if short is not None:
    raise ValueError(
        f'With {c.num_clients} clients, {c.clients_per_round} per round and '
        f'delays of std {delay_std}, round {short} (seed {seed}) has fewer '
        'idle clients than clients per round: use more clients, fewer per '
        'round or shorter delays.')
  schedule = tff_mixed.AsyncSchedule(
      c.num_clients, c.clients_per_round, delay_std, c.rounds, seed=seed)
  training = tff_mixed.build_client_training(
      model, tff.learning.optimizers.build_sgdm(learning_rate=c.client_lr))
  server_method = build_method(method, model, data, c, seed)

  def dataset_fn(client, round_num):
    return hybrid_images.client_dataset(
        split, client, c.client_batch_size, c.client_steps,
        seed=seed * 1000003 + round_num)

  def round_end(round_num, weights):
    del weights
    last = getattr(server_method, 'last_diagnostics', None)
    if diagnostics is not None and last is not None:
      diagnostics.append(dict(
          method=method, seed=seed, round=round_num,
          negative_share=float(last.negative_share)))
      server_method.last_diagnostics = None

  result = tff_mixed.run_async(
      server_method, schedule, training, dataset_fn,
      model.initial_weights[0],
      evaluate_fn=_evaluate_fn(split.eval_x, split.eval_y),
      eval_every=c.eval_every, round_end_fn=round_end)
  return [RunRow(method, seed, int(r['round']), r['accuracy'], r['loss'],
                 r['seconds']) for r in result.rows]


def final_metric(rows: Sequence[RunRow]) -> float:
  """The paper's final metric: best accuracy of the last 5 evaluations."""
  return max(r.accuracy for r in rows[-TAIL_EVALUATIONS:])


def format_table(rows: Sequence[RunRow], methods: Sequence[str]) -> str:
  lines = ['method       final accuracy (mean +- std over seeds)  seeds  '
           's/run',
           '-----------  ---------------------------------------  -----  '
           '-----']
  for method in methods:
    per_seed = collections.defaultdict(list)
    for r in rows:
      if r.method == method:
        per_seed[r.seed].append(r)
    finals = [final_metric(sorted(v, key=lambda r: r.round))
              for v in per_seed.values()]
    seconds = [max(r.seconds for r in v) for v in per_seed.values()]
    lines.append(f'{method:<11}  {100 * np.mean(finals):>27.1f} +- '
                 f'{100 * np.std(finals):<9.1f}  {len(finals):>5}  '
                 f'{np.mean(seconds):>5.0f}')
  return '\n'.join(lines) + '\n'


def plot(path: str, rows: Sequence[RunRow], methods: Sequence[str],
         title: str) -> None:
  fig, ax = plt.subplots(figsize=(8, 4.5))
  for method in methods:
    by_round = collections.defaultdict(list)
    for r in rows:
      if r.method == method:
        by_round[r.round].append(r.accuracy)
    rounds = sorted(by_round)
    ax.plot(rounds, [np.mean(by_round[k]) for k in rounds], label=method)
  ax.set_xlabel('round')
  ax.set_ylabel('test accuracy (mean over seeds)')
  ax.legend(fontsize=7, ncol=2)
  ax.set_title(title, fontsize=8)
  fig.tight_layout()
  try:
    tff_mixed.atomic_write(
        path, lambda f: fig.savefig(f, format='png', dpi=110), mode='wb')
  finally:
    plt.close(fig)


class ExperimentResult(NamedTuple):
  rows: list[RunRow]
  table: str
  files: dict[str, str]
  config: Config
  description: str
  seeds: tuple[int, ...]


def validate(config: Config, methods: Sequence[str]) -> None:
  """Clear errors before any training."""
  if (not methods or len(set(methods)) != len(methods)
      or any(m not in METHODS for m in methods)):
    raise ValueError(f'`methods` must be distinct names from {METHODS}, got '
                     f'{list(methods)}.')
  for name in ('rounds', 'num_clients', 'clients_per_round', 'server_size',
               'eval_size', 'client_steps', 'client_batch_size',
               'buffer_size', 'server_batch_size', 'dense_units',
               'eval_every'):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  for name in ('server_steps', 'feddle_search_steps'):
    if getattr(config, name) < 0:
      raise ValueError(f'`{name}` must be >= 0, got '
                       f'{getattr(config, name)}.')
  if config.clients_per_round > config.num_clients:
    raise ValueError(f'`clients_per_round` ({config.clients_per_round}) '
                     f'exceeds `num_clients` ({config.num_clients}).')
  tff_mixed.check_delays_arrive(config.delay_std, config.rounds)


def run_experiment(data_fn, config: Config, *, methods: Sequence[str],
                   seeds: Sequence[int], output_dir: str
                  ) -> ExperimentResult:
  """Every method for every seed; CSVs, plot, table, config.

  Args:
    data_fn: `data_fn(seed) -> Data`: the seed also draws the split, as in
      the paper (network initialization, sampling, delays and partition).
    config: The hyperparameters.
    methods: Names from `METHODS`.
    seeds: The seeds.
    output_dir: Where the files go.

  Returns:
    An `ExperimentResult`.

  Raises:
    ValueError: For bad settings, before any training.
  """
  validate(config, methods)
  if not seeds or len(set(seeds)) != len(seeds):
    raise ValueError(f'`seeds` must be distinct, got {list(seeds)}.')
  os.makedirs(output_dir, exist_ok=True)
  rows, diagnostics = [], []
  descriptions = []
  for seed in seeds:
    data = data_fn(seed)
    descriptions.append(data.description)
    for method in methods:
      logging.info('%s, seed %d', method, seed)
      rows.extend(run_method(method, data, config, seed, diagnostics))
  files = {k: os.path.join(output_dir, v) for k, v in (
      ('metrics', METRICS_FILE), ('plot', PLOT_FILE), ('table', TABLE_FILE),
      ('diagnostics', DIAGNOSTICS_FILE), ('config', CONFIG_FILE))}
  lines = [','.join(RunRow._fields)] + [
      f'{r.method},{r.seed},{r.round},{r.accuracy:.6g},{r.loss:.6g},'
      f'{r.seconds:.1f}' for r in rows]
  tff_mixed.atomic_write_text(files['metrics'], '\n'.join(lines) + '\n')
  diag_lines = ['method,seed,round,negative_share'] + [
      f'{d["method"]},{d["seed"]},{d["round"]},{d["negative_share"]:.4f}'
      for d in diagnostics]
  tff_mixed.atomic_write_text(files['diagnostics'],
                              '\n'.join(diag_lines) + '\n')
  table = format_table(rows, methods)
  tff_mixed.atomic_write_text(files['table'], table)
  plot(files['plot'], rows, methods, descriptions[0])
  tff_mixed.atomic_write_text(files['config'], json.dumps(
      dict(config._asdict(), methods=list(methods), seeds=list(seeds),
           data=descriptions), indent=2) + '\n')
  return ExperimentResult(rows, table, files, config, descriptions[0],
                          tuple(seeds))


def results_markdown(result: ExperimentResult, command: str, machine: str,
                     date: str) -> str:
  """The RESULTS.md section of a run."""
  c = result.config
  return '\n'.join([
      '## Hybrid data under asynchrony: Feddle and baselines (guided model '
      'merging, seed 003, table 1)',
      '',
      f'Generated on {date} by `{command}`.',
      '',
      f'* Machine: {machine}.',
      f'* Data (seed {result.seeds[0]}): {result.description}.',
      f'* Setting: {c.num_clients} clients, {c.clients_per_round} per round, '
      f'delays |N(0, {c.delay_std}^2)| rounds (FedAvg: none), Dirichlet '
      f'alpha {c.alpha}, {c.rounds} rounds, K = {c.client_steps} local SGD '
      f'steps of batch {c.client_batch_size} at lr {c.client_lr}; server lr '
      f'{c.server_lr}, buffer M = {c.buffer_size}, FedAsync alpha '
      f'{c.fedasync_alpha}; server SGD {c.server_steps} steps; Feddle atlas '
      f'{2 * c.clients_per_round}, {c.feddle_search_steps} search steps at '
      f'lr {c.feddle_search_lr}, lambda 0 (in-domain) / '
      f'{c.feddle_ood_lambda} (out-of-domain); CNN filters '
      f'{list(c.conv_filters)}, dense {c.dense_units}; seeds '
      f'{list(result.seeds)}.',
      '',
      'Final accuracy: best of the last 5 evaluations (every '
      f'{c.eval_every} rounds), mean +- std over seeds, as in the paper.',
      '',
      '```',
      result.table.rstrip('\n'),
      '```',
  ])
