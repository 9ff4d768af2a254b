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
"""The MovieLens dual encoder experiment (arXiv:2205.13655, section 4.3).

Clients compute only the client loss (a hinge) of their own next-movie
examples; the spreadout regularizer of the whole embedding table is the
centralized loss, computed at the server; each client receives and returns
only the rows of the movies in its data (`tff.federated_select`). Scenarios:

*   `baseline`: everything on the clients (TFF's FedAvg; each client's loss
    is w_f client loss + w_c spreadout over the full, broadcast table).
*   `parallel_training`, `one_way_gt`, `two_way_gt`: mixed FL with embedding
    slices; `one_way_gt_fedadam`: 1-way GT with server Adam (appendix B.4.4).

Defaults are the paper's tables 9-10: S = 100, client batch 16, K = 10,
eta = 0.5, eta_s = 1, eta_c = eta, eta_m = 1, w_f = w_c = 0.5, SGD; FedAdam
uses server Adam with learning rate 0.01. The model takes the forms of the
code the paper cites (Ning et al. 2021; `dual_encoder`): a ReLU context
layer, the squared hinge at margin 0.9 on clients, the Frobenius spreadout
at the server, whose lambda the paper does not state (default 0.001, the
cited README's example; `movielens_reference` selects one on the
validation users). The earlier forms stay available by name (`Config`).
Reported per evaluation: recall@10 over all movies and the client loss on
the test users (the column `hinge_loss`: whichever hinge the run trains
with); per scenario the
bytes each client receives and sends (read off the compiled computation) and
its training FLOPs per round (TF's profiler on one local step), beside the
paper's formulas (appendix B.3, table 11).

Rounds run in the fast simulation mode by default (`clients_per_group`,
`tff_mixed.core.client_groups`): the cohort is split into groups of clients,
each trained in one TF computation that reads its members' datasets from
their ids (`client_dataset_fn`, the same function the per-client path
traces), with the same model and metrics; `clients_per_group=1` is one
client per CLIENTS member. Costs are always measured on the per-client
process: what one client of a deployment receives and sends.
"""

import collections
from collections.abc import Mapping, Sequence
import csv
import json
import math
import os
import time
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.common import bgd_diagnostics
from experiments.common import grouping
from experiments.common import plots
from experiments.common import results as results_lib
from experiments.movielens import movielens_records as records_lib
import tff_mixed
from tff_mixed.algorithms import registry
from tff_mixed.core import communication as communication_lib
from tff_mixed.core import flops as flops_lib
from tff_mixed.models import dual_encoder
from tff_mixed.tasks import movielens
from tff_mixed.training import reports as reports_lib
from tff_mixed.training import run_lock
from tff_mixed.training import runner as runner_lib


BASELINE = 'baseline'
PARALLEL_TRAINING = 'parallel_training'
ONE_WAY_GT = 'one_way_gt'
TWO_WAY_GT = 'two_way_gt'
ONE_WAY_GT_FEDADAM = 'one_way_gt_fedadam'
SCENARIOS = (BASELINE, PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT,
             ONE_WAY_GT_FEDADAM)
METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'recall.png'
TABLE_FILE = 'results.txt'
COST_FILE = 'costs.txt'
CONFIG_FILE = 'config.json'
RESULTS_SECTION = 'movielens'
# The |B_c| the mixed processes are built with. f_c, the spreadout, is a
# data-free regularizer of the table: no central batch is ever drawn.
CENTRAL_BATCH_SIZE = 1


class Config(NamedTuple):
  """The hyperparameters of a run (see the module docstring)."""

  rounds: int = 200
  clients_per_round: int = 100
  client_batch_size: int = 16
  client_steps: int = 10
  client_lr: float = 0.5
  fedadam_lr: float = 0.01
  federated_weight: float = 0.5
  central_weight: float = 0.5
  embedding_dim: int = 16
  context_length: int = 10
  keys_per_client: int = 160
  # The model's forms (`dual_encoder`'s constants), the cited model's by
  # default: its context layer, client loss and spreadout.
  context_layer: str = dual_encoder.RELU_DENSE
  client_loss: str = dual_encoder.SQUARED_HINGE
  # The client loss's margin; None: the form's own (`dual_encoder.MARGINS`).
  margin: Optional[float] = None
  spreadout_form: str = dual_encoder.FROBENIUS
  # lambda of the spreadout. The paper states none and the cited code
  # defaults to 0; 0.001 is its README's example, kept until a search on the
  # validation users (`movielens_reference.select_lambda`) selects one.
  spreadout_lambda: float = 0.001
  eval_every: int = 10
  max_eval_examples: Optional[int] = None
  seed: int = 0
  # Clients per CLIENTS member (`experiments.common.grouping`): 0 = one
  # group per core, 1 = the per-client path; the same results either way.
  clients_per_group: int = grouping.AUTO


class Costs(NamedTuple):
  """Per client and round: measured bytes and FLOPs, and the paper's terms.

  Attributes:
    scenario: The scenario.
    down_bytes: Bytes received (measured on the compiled computation).
    up_bytes: Bytes sent (measured; training metrics included).
    flops: Client training FLOPs per round: K times one local step measured
      by TF's profiler (`tff_mixed.core.flops.local_step_flops`).
    paper_comm_bytes: The paper's communication term: 2 N d (baseline),
      2 n d (PT), 3 n d (GT), in float32 bytes.
    paper_flops: The paper's computation term: K N^2 d / 2 (baseline),
      N^2 d / 2 (mixed FL, at the server).
  """

  scenario: str
  down_bytes: int
  up_bytes: int
  flops: float
  paper_comm_bytes: float
  paper_flops: float


def model_forms(config: Config) -> dict[str, Any]:
  """The config's forms as the keyword arguments that every builder of the
  model takes (`dual_encoder.build_dual_encoder`,
  `build_embedding_selection`): its context layer, client loss and margin.
  """
  return dict(context_layer=config.context_layer,
              client_loss_form=config.client_loss, margin=config.margin)


def model_kwargs(config: Config) -> dict[str, Any]:
  """`build_dual_encoder`'s keyword arguments for `config`'s model: its
  sizes, seed, forms, and the spreadout's form and lambda (weighted by the
  caller: 0 on mixed FL's clients, w_c on the baseline's)."""
  return dict(model_forms(config), embedding_dim=config.embedding_dim,
              context_length=config.context_length, seed=config.seed,
              spreadout_form=config.spreadout_form,
              spreadout_lambda=config.spreadout_lambda)


def check_forms(config: Config) -> None:
  """Raises ValueError for a form, margin or lambda the model cannot take
  (the message names it)."""
  dual_encoder.check_forms(config.context_layer, config.client_loss,
                           config.spreadout_form)
  if config.margin is not None and not math.isfinite(config.margin):
    raise ValueError(f'`margin` must be finite, got {config.margin}.')
  if not (math.isfinite(config.spreadout_lambda)
          and config.spreadout_lambda >= 0):
    raise ValueError('`spreadout_lambda` must be finite and >= 0, got '
                     f'{config.spreadout_lambda}.')


# How the sections name each form: the cited model's (Ning et al. 2021,
# google-research/federated `dual_encoder/`) or the earlier one.
_FORM_TEXT = {
    dual_encoder.RELU_DENSE: 'mean of the context movies, then Dense(d) '
                             'with ReLU (cited)',
    dual_encoder.IDENTITY_LINEAR: 'mean of the context movies, then an '
                                  'identity-initialized linear layer '
                                  '(earlier form)',
    dual_encoder.SQUARED_HINGE: 'squared hinge max(0, m - cos)^2 (cited)',
    dual_encoder.HINGE: 'hinge max(0, m - cos) (earlier form)',
    dual_encoder.FROBENIUS: 'lambda times the Frobenius norm of the '
                            'off-diagonal cosines of the rows (cited)',
    dual_encoder.MEAN_SQUARED: 'lambda times the mean of the squared '
                               'off-diagonal cosines of the rows (earlier '
                               'form)',
}


def forms_text(settings: Mapping[str, Any]) -> str:
  """The model's forms in words, from a record's settings or a `Config`'s
  `_asdict()`: context layer, client loss and margin, spreadout and
  lambda, each marked the cited model's or the earlier one."""
  margin = settings['margin']
  if margin is None:
    margin = dual_encoder.MARGINS[settings['client_loss']]
  return (f'context layer: {_FORM_TEXT[settings["context_layer"]]}; client '
          f'loss: {_FORM_TEXT[settings["client_loss"]]}, m = {margin:g}; '
          f'spreadout (f_c): {_FORM_TEXT[settings["spreadout_form"]]}, '
          f'lambda = {settings["spreadout_lambda"]:g}')


def build_process(scenario: str, data: 'movielens.MovieLensData',
                  config: Config, select: bool = True,
                  client_groups: Optional[tff_mixed.ClientGroups] = None,
                  with_diagnostics: bool = False):
  """The learning process of one scenario.

  `select=False` broadcasts the whole table to the mixed algorithms too (for
  benchmarks, and for `with_diagnostics`, table 4's G~^2 and B~^2, which
  the federated_select processes do not support); the baseline always
  does. With `client_groups` the process
  takes groups of client ids (`client_groups_for`); the baseline is then
  the composed FedAvg, equal to TFF's, and the mixed algorithms' members
  take their rows of the table inside the group.
  """
  num_rows = data.num_movies + 1
  if scenario == BASELINE:
    # All on the client: w_f client loss + w_c spreadout over the broadcast
    # table.
    return registry.build(registry.FEDAVG,
                          client_model(BASELINE, data, config),
                          client_lr=config.client_lr,
                          client_groups=client_groups)
  if scenario not in SCENARIOS:
    raise ValueError(f'`scenario` must be one of {SCENARIOS}, got '
                     f'{scenario!r}.')
  model = dual_encoder.build_dual_encoder(num_rows, **model_kwargs(config))
  selection = dual_encoder.build_embedding_selection(
      num_rows, min(config.keys_per_client, num_rows),
      config.embedding_dim, config.context_length, **model_forms(config))
  spreadout = tff_mixed.central_regularizer(
      dual_encoder.build_spreadout_loss_fn(config.spreadout_form,
                                           config.spreadout_lambda),
      name='spreadout')
  # FedAdam is 1-way GT with Adam as SERVEROPTIMIZER; the others take SGD.
  server = (tff.learning.optimizers.build_adam(config.fedadam_lr)
            if scenario == ONE_WAY_GT_FEDADAM else None)
  return registry.build(
      ONE_WAY_GT if scenario == ONE_WAY_GT_FEDADAM else scenario, model,
      spreadout, client_lr=config.client_lr, server_optimizer=server,
      client_steps=config.client_steps, central_steps=config.client_steps,
      federated_weight=config.federated_weight,
      central_weight=config.central_weight,
      central_batch_size=CENTRAL_BATCH_SIZE,
      seed=config.seed, embedding_selection=selection if select else None,
      client_groups=client_groups, with_diagnostics=with_diagnostics)


def client_dataset_fn(data: 'movielens.MovieLensData', config: Config,
                      fedavg: bool, fresh_shuffle: bool = False):
  """`fn(id) -> {B*}`: a client's round dataset, pure TF.

  Clients are named `'<round>|<user>'`; the round varies the shuffle (a hash
  of the name and seed: the same order in a rerun or a resumed run, and in
  either simulation mode). The user's rows are sliced out of constants
  (`movielens_examples.build_client_data`), so the function traces into a
  TFF computation (`dataset_computation`) or a group's loop
  (`client_groups_for`). With `fresh_shuffle` every iterator of the dataset
  starts the shuffle over (see `client_groups_for`).
  """

  def batches(examples, seed):
    dataset = examples.shuffle(1000, seed=seed).map(
        dual_encoder.model_batch).batch(config.client_batch_size)
    if fedavg:
      # TFF's FedAvg takes one pass: give it the same K steps.
      dataset = dataset.repeat().take(config.client_steps)
    return dataset

  def make(client_id):
    user = tf.strings.split(client_id, '|')[1]
    seed = tf.strings.to_hash_bucket_fast(
        tf.strings.join([client_id, str(config.seed)], '#'), 2**31 - 1)
    examples = data.train.serializable_dataset_fn(user)
    if not fresh_shuffle:
      return batches(examples, seed)
    # The shuffle is built in `flat_map`'s function, once per iterator; the
    # user's rows are sliced outside it, so that function stays small.
    return tf.data.Dataset.from_tensors(seed).flat_map(
        lambda s: batches(examples, s))

  return make


def dataset_computation(data: 'movielens.MovieLensData', config: Config,
                        fedavg: bool) -> tff.Computation:
  """`(string -> {B*})`: a client's round dataset, built in TFF's worker.

  `client_dataset_fn` as a TFF computation, for the per-client path.
  Building ~100 datasets in Python and serializing them every round cost
  several seconds per round.
  """
  return tff.tensorflow.computation(client_dataset_fn(data, config, fedavg),
                                    np.str_)


def client_groups_for(scenario: str, data: 'movielens.MovieLensData',
                      config: Config) -> Optional[tff_mixed.ClientGroups]:
  """The scenario's `ClientGroups`, or `None` for one client per member.

  A member's dataset is its first K batches (`client_dataset_fn` with
  `fedavg=True`): what every scenario trains on, and what the mixed
  algorithms choose their `federated_select` keys from. The per-client
  process hands each of its computations (the keys', the training's) a
  fresh copy of the dataset, whose shuffle starts over; a group's member
  iterates one dataset object twice, and a second iterator of a shuffle
  continues its seed generator (another order). `fresh_shuffle` gives every
  iterator a new shuffle: the same K batches each time, the per-client
  order.
  """
  del scenario  # Every scenario trains on the same K batches.
  if not grouping.is_grouped(config.clients_per_group,
                             config.clients_per_round):
    return None
  return tff_mixed.ClientGroups(
      client_dataset_fn(data, config, fedavg=True, fresh_shuffle=True),
      np.str_)


def user_arrays(data: 'movielens.MovieLensData',
                user_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
  """`(contexts, labels)`: the examples of `user_ids`, concatenated."""
  parts = [data.examples[int(u)] for u in user_ids
           if int(u) in data.examples]
  if not parts:
    raise ValueError('None of the users has an example.')
  return (np.concatenate([p[0] for p in parts]),
          np.concatenate([p[1] for p in parts]))


def evaluation_arrays(data: 'movielens.MovieLensData', config: Config,
                      user_ids: Optional[Sequence[int]] = None):
  """`(contexts, labels)` of `user_ids` (default: the test users), a seeded
  sample if `config.max_eval_examples` caps them."""
  contexts, labels = user_arrays(
      data, data.test_user_ids if user_ids is None else user_ids)
  if config.max_eval_examples and config.max_eval_examples < len(labels):
    keep = np.sort(np.random.default_rng(config.seed).choice(
        len(labels), config.max_eval_examples, replace=False))
    contexts, labels = contexts[keep], labels[keep]
  return contexts, labels


def evaluate(weights, contexts: np.ndarray, labels: np.ndarray,
             config: Config) -> dict[str, float]:
  """Recall@10 over all movies, and the client loss, on test examples.

  The model is `config`'s (its context layer scores, its client loss form
  and margin give the loss). The loss keeps the key `hinge_loss` that the
  records and metrics have always had; it is the client loss the run
  trains with (the squared hinge by default).
  """
  trainable = tuple(weights.trainable) if hasattr(
      weights, 'trainable') else tuple(weights[0])
  context = tf.where(contexts > 0, contexts, -1)
  recalls, losses = [], []
  for start in range(0, len(labels), 4096):
    c = context[start:start + 4096]
    y = labels[start:start + 4096]
    recalls.append(dual_encoder.recall_at_k(
        trainable, c, y, k=10, context_layer=config.context_layer) * len(y))
    scores, valid = dual_encoder.pair_scores(trainable, c, y,
                                             config.context_layer)
    losses.append(float(dual_encoder.client_loss(
        scores, valid, config.client_loss, config.margin)) * len(y))
  return collections.OrderedDict(
      recall_at_10=sum(recalls) / len(labels),
      hinge_loss=sum(losses) / len(labels))


def client_model(scenario: str, data: 'movielens.MovieLensData',
                 config: Config) -> tff.learning.models.FunctionalModel:
  """The model a client trains: the whole table for the baseline (w_f
  client loss + w_c lambda spreadout, the forms of `config`), its selected
  slice for the mixed algorithms (the client loss only)."""
  num_rows = data.num_movies + 1
  if scenario == BASELINE:
    return dual_encoder.build_dual_encoder(
        num_rows, hinge_weight=config.federated_weight,
        spreadout_weight=config.central_weight, **model_kwargs(config))
  return dual_encoder.build_dual_encoder(
      min(config.keys_per_client, num_rows), **model_kwargs(config))


def measure_costs(scenario: str, process, data: 'movielens.MovieLensData',
                  config: Config, mean_keys: float) -> Costs:
  """Bytes from the compiled process; FLOPs from TF's profiler."""
  cost = communication_lib.per_client_communication(process)
  flops = config.client_steps * flops_lib.local_step_flops(
      client_model(scenario, data, config), config.client_batch_size)
  n, big_n, d = mean_keys, data.num_movies, config.embedding_dim
  paper_comm = {BASELINE: 2 * big_n * d}.get(
      scenario, (2 if scenario == PARALLEL_TRAINING else 3) * n * d) * 4
  paper_flops = (config.client_steps if scenario == BASELINE else 1) * (
      big_n**2 * d / 2)
  return Costs(scenario, cost.down_bytes, cost.up_bytes, flops, paper_comm,
               paper_flops)


class ScenarioResult(NamedTuple):
  """One scenario's outcome.

  Attributes:
    scenario: The scenario.
    rows: Evaluations (`round`, `recall_at_10`, `hinge_loss`: the client
      loss, `evaluate`), round 0 first.
    costs: Its `Costs`.
    round_seconds: Seconds per round trained in this invocation (NaN if it
      trained none).
    mean_keys: The paper's n (`measure_costs`).
    seconds: Wall-clock seconds of the rounds this invocation trained.
    resumed_from: The checkpoint round it resumed from (0: fresh).
    diagnostics: Table 4's estimates of a run `with_diagnostics`.
  """

  scenario: str
  rows: list[dict[str, float]]
  costs: Costs
  round_seconds: float
  mean_keys: float
  seconds: float = float('nan')
  resumed_from: int = 0
  diagnostics: Optional[bgd_diagnostics.Diagnostics] = None


def run_scenario(scenario: str, data, config: Config, output_dir: str,
                 progress: Optional[bool] = None,
                 with_diagnostics: bool = False) -> ScenarioResult:
  """Trains one scenario with the shared resumable runner.

  `with_diagnostics` (a mixed scenario): report table 4's G~^2 and B~^2,
  broadcasting the whole table (see `build_process`).
  """
  groups = client_groups_for(scenario, data, config)
  inner = build_process(scenario, data, config, select=not with_diagnostics,
                        client_groups=groups,
                        with_diagnostics=with_diagnostics)
  process = inner if groups is not None else (
      tff.simulation.compose_dataset_computation_with_learning_process(
          dataset_computation(data, config, fedavg=scenario == BASELINE),
          inner))
  train_ids = [str(u) for u in data.train_user_ids
               if int(u) in data.examples]
  sample = tff.simulation.build_uniform_sampling_fn(
      train_ids, random_seed=config.seed)
  contexts, labels = evaluation_arrays(data, config)
  # The paper's n: the mean number of distinct movies a client trains on,
  # over the clients of the first rounds (the same in a resumed run).
  key_counts = []
  for round_index in range(3):
    for u in sample(round_index, config.clients_per_round)[:20]:
      c, y = data.examples[int(u)]
      steps = config.client_steps * config.client_batch_size
      ids = np.unique(np.concatenate([c[:steps].ravel(), y[:steps]]))
      key_counts.append(int(np.sum(ids > 0)))

  def client_data_fn(round_num):
    users = sample(round_num - 1, config.clients_per_round)
    ids = [f'{round_num}|{u}' for u in users]
    if groups is None:
      return ids
    return grouping.group_ids(ids, config.clients_per_group, np.str_)

  def evaluation_fn(weights):
    return evaluate(weights, contexts, labels, config)

  # `rounds` is left out of the fingerprint so that a finished run can be
  # extended: rerun with more `--rounds` and it resumes.
  hparams = dict(config._asdict(), scenario=scenario)
  del hparams['rounds']
  train_start = time.perf_counter()
  result = tff_mixed.run_training(
      process, client_data_fn=client_data_fn, total_rounds=config.rounds,
      root_output_dir=output_dir, experiment_name=scenario, hparams=hparams,
      # At most 50 rounds apart: an interrupted baseline round costs ~19 s
      # at S = 100, and a long run should lose minutes, not hours.
      rounds_per_checkpoint=max(1, min(config.rounds // 5, 50)),
      evaluation_fn=evaluation_fn, rounds_per_evaluation=config.eval_every,
      progress=progress)
  trained = config.rounds - result.resumed_from
  # Seconds per round trained in this run (evaluation included).
  train_seconds = time.perf_counter() - train_start
  round_seconds = train_seconds / trained if trained else float('nan')
  initial = evaluate(process.get_model_weights(process.initialize()),
                     contexts, labels, config)
  rows = [dict(round=0, **initial)]
  with open(result.metrics_path) as f:
    for record in csv.DictReader(f):
      if record.get('eval/recall_at_10'):
        rows.append(dict(round=int(record[runner_lib.ROUND_KEY]),
                         recall_at_10=float(record['eval/recall_at_10']),
                         hinge_loss=float(record['eval/hinge_loss'])))
  mean_keys = float(np.mean(key_counts))
  # What one client moves: the per-client process's types (a group
  # uploads its members' rows scattered into the whole table).
  per_client = inner if groups is None else build_process(
      scenario, data, config, select=not with_diagnostics,
      with_diagnostics=with_diagnostics)
  costs = measure_costs(scenario, per_client, data, config, mean_keys)
  logging.info('%s: recall@10 %.4f after %d rounds; per client %.1f KB down, '
               '%.1f KB up, %.3f Mflop', scenario, rows[-1]['recall_at_10'],
               config.rounds, costs.down_bytes / 1e3, costs.up_bytes / 1e3,
               costs.flops / 1e6)
  diagnostics = (bgd_diagnostics.read_diagnostics(scenario,
                                                 result.metrics_path)
                 if with_diagnostics else None)
  return ScenarioResult(scenario, rows, costs, round_seconds, mean_keys,
                        train_seconds, result.resumed_from, diagnostics)


def format_tables(results: Sequence[ScenarioResult]) -> tuple[str, str]:
  """The results table and the cost table (like the paper's table 2)."""
  lines = ['scenario             rounds  recall@10  client loss  '
           'best recall@10  s/round',
           '-------------------  ------  ---------  -----------  '
           '--------------  -------']
  for r in results:
    last = r.rows[-1]
    best = max(row['recall_at_10'] for row in r.rows)
    lines.append(f'{r.scenario:<19}  {last["round"]:>6}  '
                 f'{last["recall_at_10"]:>9.4f}  '
                 f'{last["hinge_loss"]:>11.4f}  {best:>14.4f}  '
                 f'{r.round_seconds:>7.2f}')
  base = next((r.costs for r in results if r.scenario == BASELINE), None)
  cost_lines = [
      'scenario             down KB   up KB  comm. vs baseline  '
      'client Mflop  comp. vs baseline  paper comm. KB  paper Mflop',
      '-------------------  -------  ------  -----------------  '
      '------------  -----------------  --------------  -----------']
  for r in results:
    c = r.costs
    comm = c.down_bytes + c.up_bytes

    def saving(value, reference):
      return (f'{100 * (1 - value / reference):.2f}% less'
              if reference and c.scenario != BASELINE else '-')

    cost_lines.append(
        f'{c.scenario:<19}  {c.down_bytes / 1e3:>7.1f}  '
        f'{c.up_bytes / 1e3:>6.1f}  '
        f'{saving(comm, base.down_bytes + base.up_bytes if base else 0):>17}'
        f'  {c.flops / 1e6:>12.3f}  '
        f'{saving(c.flops, base.flops if base else 0):>17}  '
        f'{c.paper_comm_bytes / 1e3:>14.1f}  {c.paper_flops / 1e6:>11.2f}')
  return '\n'.join(lines) + '\n', '\n'.join(cost_lines) + '\n'


def plot(path: str, results: Sequence[ScenarioResult], title: str) -> None:
  fig, (ax_recall, ax_loss) = plots.subplots(1, 2, figsize=(11, 4.2))
  for r in results:
    rounds = [row['round'] for row in r.rows]
    style = '--' if r.scenario == BASELINE else '-'
    ax_recall.plot(rounds, [row['recall_at_10'] for row in r.rows], style,
                   label=r.scenario)
    ax_loss.plot(rounds, [row['hinge_loss'] for row in r.rows], style,
                 label=r.scenario)
  ax_recall.set(xlabel='round', ylabel='recall@10', title='Test recall@10')
  ax_loss.set(xlabel='round', ylabel='client loss',
              title='Test client loss')
  for ax in (ax_recall, ax_loss):
    ax.grid(alpha=0.3)
  ax_recall.legend(fontsize='small')
  fig.suptitle(title, fontsize='medium')
  fig.tight_layout()
  plots.save_figure(fig, path)


class ExperimentResult(NamedTuple):
  results: list[ScenarioResult]
  table: str
  cost_table: str
  files: dict[str, str]
  description: str
  config: Config


def record_settings(config: Config, description: str) -> dict[str, Any]:
  """What a scenario's record must share with a request to stand for it:
  the settings that change its numbers (`config` but its rounds and client
  grouping, which gives the same numbers; the model's forms and lambda
  included) and the data. The margin is the one the loss uses (the form's
  own where `config.margin` is None), so a record says what it trained."""
  settings = config._asdict()
  del settings['rounds'], settings['clients_per_group']
  settings['margin'] = (dual_encoder.MARGINS[config.client_loss]
                        if config.margin is None else config.margin)
  return dict(settings, data=description)


def load_data(ratings_file: str, config: Config,
              skip_malformed: bool = False) -> 'movielens.MovieLensData':
  """The ratings file as the experiment's data (`config`'s context length
  and seed)."""
  return movielens.load_movielens(
      ratings_file, context_length=config.context_length,
      skip_malformed=skip_malformed, seed=config.seed)


def data_description(ratings_file: str,
                     data: 'movielens.MovieLensData') -> str:
  """The data as the records' settings and the sections name it."""
  return (
      f'`{os.path.basename(ratings_file)}`: {data.num_ratings} ratings, '
      f'{data.num_movies} movies, {len(data.train_user_ids)} train / '
      f'{len(data.validation_user_ids)} validation / '
      f'{len(data.test_user_ids)} test users after '
      f'{len(data.datacenter_user_ids)} held aside (the paper\'s 20%)')


def _record(result: ScenarioResult, config: Config, settings: dict[str, Any],
            previous: Optional[records_lib.ScenarioRecord],
            command: str) -> records_lib.ScenarioRecord:
  """The record of a scenario this invocation finished."""
  seconds, complete = records_lib.accumulated_seconds(
      previous, settings, result.resumed_from, result.seconds)
  return records_lib.ScenarioRecord(
      scenario=result.scenario, rounds=config.rounds, rows=result.rows,
      settings=settings, costs=result.costs._asdict(),
      mean_keys=result.mean_keys, seconds=seconds,
      seconds_complete=complete, seconds_per_round=result.round_seconds,
      machine=results_lib.machine_description(), date=results_lib.utc_now(),
      command=command, diagnostics=result.diagnostics and
      result.diagnostics._asdict())


def result_from_record(record: records_lib.ScenarioRecord) -> ScenarioResult:
  """A finished scenario read back (no round trained in this invocation)."""
  return ScenarioResult(
      record.scenario, record.rows, Costs(**record.costs), float('nan'),
      record.mean_keys, 0.0, record.rounds,
      record.diagnostics and bgd_diagnostics.Diagnostics(
          **record.diagnostics))


def run_experiment(ratings_file: str, *, scenarios: Sequence[str] = SCENARIOS,
                   config: Config = Config(), output_dir: str,
                   skip_malformed: bool = False,
                   progress: Optional[bool] = None,
                   scenario_rounds: Optional[Mapping[str, int]] = None,
                   records_dir: Optional[str] = None,
                   command: str = '',
                   with_diagnostics: bool = False) -> ExperimentResult:
  """Loads MovieLens, runs the scenarios, writes CSV, plot and tables.

  Args:
    ratings_file: MovieLens `ratings.dat` or `u.data`.
    scenarios: Names from `SCENARIOS`.
    config: The settings; `config.rounds` is every scenario's horizon
      unless `scenario_rounds` names another.
    output_dir: Outputs and checkpoints (`<output_dir>/checkpoints/<scenario>`:
      an interrupted scenario resumes).
    skip_malformed: Skip malformed rating lines instead of failing.
    progress: Progress bars (None: on terminals).
    scenario_rounds: Rounds of some scenarios instead of `config.rounds`
      (e.g. a shorter baseline, which costs ~15 times a mixed round).
    records_dir: If set, each scenario writes its `movielens_records`
      record there when it finishes, and a scenario whose record there has
      the same settings and rounds is read back instead of trained.
    command: The command line, for the records.
    with_diagnostics: Table 4's runs: report G~^2 and B~^2 (mixed
      scenarios only; they broadcast the whole table, `build_process`).

  Raises:
    FileNotFoundError, ValueError: For a missing or malformed ratings file
      or bad settings (messages name the file, line or argument).
  """
  unknown = [s for s in scenarios if s not in SCENARIOS]
  if unknown or not scenarios or len(set(scenarios)) != len(scenarios):
    raise ValueError(f'`scenarios` must be distinct names from {SCENARIOS}, '
                     f'got {list(scenarios)}.')
  if with_diagnostics and BASELINE in scenarios:
    raise ValueError('The baseline has no (G, B)-BGD diagnostics: it mixes '
                     'nothing at the server.')
  scenario_rounds = dict(scenario_rounds or {})
  for scenario, rounds in scenario_rounds.items():
    if scenario not in SCENARIOS or isinstance(rounds, bool) or not (
        isinstance(rounds, int) and rounds >= 1):
      raise ValueError('`scenario_rounds` must map names from '
                       f'{SCENARIOS} to positive ints, got '
                       f'{scenario!r}: {rounds!r}.')
  for name in ('rounds', 'clients_per_round', 'client_batch_size',
               'client_steps', 'embedding_dim', 'context_length',
               'keys_per_client', 'eval_every'):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  grouping.check(config.clients_per_group)
  if not math.isfinite(config.client_lr):
    raise ValueError(f'`client_lr` must be finite, got {config.client_lr}.')
  if config.client_lr <= 0:
    raise ValueError(f'`client_lr` must be positive, got {config.client_lr}.')
  check_forms(config)
  # Before the data: a bad directory should not cost the load. Held to the
  # end: a second run here, even of other scenarios, would overwrite this
  # one's tables, metrics and config.
  with run_lock.claimed_output_directory(output_dir, '`output_dir`'):
    if records_dir is not None:
      reports_lib.make_directory(records_dir, '`records_dir`')
    data = load_data(ratings_file, config, skip_malformed)
    num_train = sum(1 for u in data.train_user_ids if int(u) in data.examples)
    if config.clients_per_round > num_train:
      raise ValueError(f'`clients_per_round` ({config.clients_per_round}) must '
                       f'be at most the {num_train} training users.')
    description = data_description(ratings_file, data)
    settings = dict(record_settings(config, description),
                    **({'with_diagnostics': True} if with_diagnostics else {}))
    if records_dir is not None:
      records_lib.check_settings(records_dir, settings)
    results = []
    for scenario in scenarios:
      scenario_config = config._replace(
          rounds=scenario_rounds.get(scenario, config.rounds))
      previous = (records_lib.read_record(records_dir, scenario)
                  if records_dir is not None else None)
      if (previous is not None and previous.settings == settings
          and previous.rounds == scenario_config.rounds):
        logging.info('%s: finished earlier (%d rounds), read from %s',
                     scenario, previous.rounds, records_dir)
        results.append(result_from_record(previous))
        continue
      result = run_scenario(scenario, data, scenario_config, output_dir,
                            progress, with_diagnostics)
      if records_dir is not None:
        records_lib.write_record(records_dir, _record(
            result, scenario_config, settings, previous, command))
      results.append(result)
    table, cost_table = format_tables(results)
    files = {k: os.path.join(output_dir, v) for k, v in (
        ('metrics', METRICS_FILE), ('plot', PLOT_FILE), ('table', TABLE_FILE),
        ('costs', COST_FILE), ('config', CONFIG_FILE))}
    metrics_lines = ['scenario,round,recall_at_10,hinge_loss']
    for r in results:
      metrics_lines += [f'{r.scenario},{row["round"]},'
                        f'{row["recall_at_10"]:.6g},{row["hinge_loss"]:.6g}'
                        for row in r.rows]
    reports_lib.atomic_write_text(files['metrics'], '\n'.join(metrics_lines)
                                  + '\n')
    plot(files['plot'], results, f'MovieLens dual encoder ({description})')
    reports_lib.atomic_write_text(files['table'], table)
    reports_lib.atomic_write_text(files['costs'], cost_table)
    reports_lib.atomic_write_text(files['config'], json.dumps(
        dict(config._asdict(), scenarios=list(scenarios),
             ratings_file=os.path.abspath(ratings_file),
             scenario_rounds=scenario_rounds,
             mean_keys={r.scenario: r.mean_keys for r in results}), indent=2)
                                + '\n')
    return ExperimentResult(results, table, cost_table, files, description,
                            config)


def results_markdown(result: ExperimentResult, command: str,
                     machine: str, date: str) -> str:
  """The RESULTS.md section of a run."""
  c = result.config
  return '\n'.join([
      '## MovieLens dual encoder (arXiv:2205.13655, section 4.3)',
      '',
      f'Generated on {date} by `{command}`.',
      '',
      f'* Machine: {machine}.',
      f'* Data: {result.description}.',
      f'* Training: {c.rounds} rounds, S = {c.clients_per_round}, batch '
      f'{c.client_batch_size}, K = {c.client_steps}, eta = {c.client_lr}, '
      f'eta_s = eta_m = 1, w_f = {c.federated_weight}, w_c = '
      f'{c.central_weight}, d = {c.embedding_dim}, context {c.context_length}'
      f', {c.keys_per_client} keys per client, FedAdam server lr '
      f'{c.fedadam_lr}, seed {c.seed}. The paper trains 2,000 rounds on '
      'MovieLens 1M and reports recall@10 ~0.1 for every algorithm.',
      f'* Model: {forms_text(c._asdict())}.',
      '',
      '```',
      result.table.rstrip('\n'),
      '```',
      '',
      'Per client and round (bytes measured on the compiled TFF '
      'computation; client FLOPs: K local steps, one step measured by TF\'s '
      'profiler (`tff_mixed.core.flops.local_step_flops`); s/round: seconds '
      'per round '
      'trained in the last invocation; paper: the formulas of appendix B.3 with N movies and n = the mean distinct movies a '
      'client trains on):',
      '',
      '```',
      result.cost_table.rstrip('\n'),
      '```',
  ])
