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
"""Stack Overflow + Wikipedia character LM: mixed FL against FL and transfer.

The mixed FL paper's section 4.2 and appendix B.4.5 (arXiv:2205.13655):
FL alone learns the federated corpus (Stack Overflow) but not the central one
(Wikipedia); Parallel Training, 1-way and 2-way Gradient Transfer learn both;
sequential transfer learning (pretrain on one corpus, fine-tune on the other)
forgets the first corpus after the switch.

Scenarios:

*   `fl_only`: FedAvg on the clients (K local steps).
*   `parallel_training`, `one_way_gt`, `two_way_gt`: the mixed algorithms,
    with w_f, w_c weighting the two losses.
*   `oracle`: figure 1b's oracle, both corpora pooled and trained
    centrally: K clipped SGD steps per round, each on S |B_i| sequences
    drawn w_f : w_c from Stack Overflow and the central corpus
    (`central_training`).
*   `central_then_fl`: central SGD on the central corpus (K steps of a
    central batch per round) until `switch_round`, then FedAvg.
*   `fl_then_central`: FedAvg until `switch_round`, then central SGD.

Every scenario resumes after an interruption: FL-only and the mixed
algorithms through the shared runner's checkpoints, the oracle and the
transfer baselines through their own (`run_sequential`). With
`with_diagnostics` the mixed algorithms also report table 4's (G, B)-BGD
estimates G~_t^2 and B~_t^2 (eq. 7; the paper's runs take K = 1 for them).

Federated updates are clipped adaptively (TFF's `robust_aggregator`: a
no-noise quantile estimate of the update norms, Andrew et al. 2021) and
central gradients to a fixed norm, as in the paper. Defaults are the
paper's tables 7-8 (S = 100, batch 8, K = 16, eta = 2.0 (2-way GT: 1.0),
central batch 800 (PT, 2-way GT) or 6400 (1-way GT), w_f = 0.75,
w_c = 0.25, central clip 0.2, embedding 256, GRU 1024); smaller flags train
on a CPU. Every scenario is evaluated on the mixed, federated-only and
central-only evaluation sets.

Rounds can run in the fast simulation mode (`clients_per_group`,
`tff_mixed.core.client_groups`): groups of clients, each trained in one TF
computation that reads its members' posts from their ids
(`stackoverflow_wikipedia.client_dataset_fn`, the function the per-client
path traces), with the same results; adaptive clipping too: each group
clips its members' updates with the norm the server broadcasts and returns
what the norm's quantile estimate needs
(`tff_mixed.core.group_aggregation`). A group reads each member's K batches
from its dataset, pads them to the batch size with rows of padding (which
carry no loss) and trains `members_at_once` members at once in lockstep
(`tff_mixed.core.lockstep.padded_batches_fn`): one batched recurrence for
many clients instead of one per client.
"""

import collections
from collections.abc import Callable, Sequence
import csv
import json
import os
import textwrap
import time
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff

from experiments.common import grouping
from experiments.common import plots
from experiments.common import scenarios as scenarios_lib
from experiments.stackoverflow_wikipedia import central_training
import tff_mixed
from tff_mixed.models import char_lm
from tff_mixed.tasks import char_sequences
from tff_mixed.tasks import stackoverflow_wikipedia
from tff_mixed.training import checkpoints
from tff_mixed.training import reports as reports_lib
from tff_mixed.training import run_lock
from tff_mixed.training import runner as runner_lib

task_lib = stackoverflow_wikipedia

FL_ONLY = scenarios_lib.FL_ONLY
PARALLEL_TRAINING = scenarios_lib.PARALLEL_TRAINING
ONE_WAY_GT = scenarios_lib.ONE_WAY_GT
TWO_WAY_GT = scenarios_lib.TWO_WAY_GT
CENTRAL_THEN_FL = 'central_then_fl'
FL_THEN_CENTRAL = 'fl_then_central'
ORACLE = scenarios_lib.ORACLE
MIXED = (PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT)
TRANSFER = (CENTRAL_THEN_FL, FL_THEN_CENTRAL)
# Trained round by round here rather than by one TFF process.
SEQUENTIAL = (ORACLE, *TRANSFER)
SCENARIOS = (FL_ONLY, *MIXED, ORACLE, *TRANSFER)
EVAL_SETS = ('mixed', 'federated', 'central')
METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'accuracy.png'
TABLE_FILE = 'results.txt'
CONFIG_FILE = 'config.json'
CSV_COLUMNS = ('scenario', 'round', *(f'{s}_{m}' for s in EVAL_SETS
                                      for m in ('accuracy', 'loss')),
               'seconds')


class Config(NamedTuple):
  """Hyperparameters (defaults: the paper's tables 7-8)."""

  rounds: int = 500
  clients_per_round: int = 100
  client_batch_size: int = 8
  client_steps: int = 16
  client_lr: float = 2.0
  two_way_client_lr: float = 1.0
  central_batch_size: int = 800
  one_way_central_batch_size: int = 6400
  federated_weight: float = 0.75
  central_weight: float = 0.25
  central_clip_norm: float = 0.2
  adaptive_clipping: bool = True
  embedding_dim: int = 256
  gru_units: int = 1024
  sequence_length: int = char_sequences.DEFAULT_SEQUENCE_LENGTH
  switch_round: Optional[int] = None  # Transfer: rounds // 2 by default.
  eval_every: int = 10
  seed: int = 0
  # Clients per CLIENTS member (`experiments.common.grouping`): 0 = one
  # group per core, 1 = the per-client path; the same results either way.
  clients_per_group: int = grouping.AUTO
  # A group's members training at once in lockstep, from their batches
  # padded to one shape (0: the whole group); the same results.
  members_at_once: int = 0
  # The mixed algorithms also report G~_t^2 and B~_t^2 (table 4).
  with_diagnostics: bool = False

  def switch(self) -> int:
    return self.switch_round if self.switch_round else max(1,
                                                           self.rounds // 2)


class Data(NamedTuple):
  """The loaded task.

  Attributes:
    train: TFF's Stack Overflow training `ClientData`.
    train_client_ids: Its client ids.
    central: The central training `Sequences`.
    eval_sets: `{'mixed', 'federated', 'central'}` -> `(inputs, targets)`.
    description: One line naming the data.
  """

  train: tff.simulation.datasets.ClientData
  train_client_ids: list[str]
  central: char_sequences.Sequences
  eval_sets: dict[str, tuple[np.ndarray, np.ndarray]]
  description: str


def load_data(cache_dir: str, central_train_texts: Sequence[str],
              central_eval_texts: Sequence[str], *,
              sequence_length: int = char_sequences.DEFAULT_SEQUENCE_LENGTH,
              max_eval_clients: Optional[int] = None,
              max_eval_sequences: Optional[int] = None, seed: int = 0,
              central_name: str = 'central corpus') -> Data:
  """Stack Overflow from TFF's loader, the central texts, evaluation sets.

  Raises:
    task_lib.DataNotFoundError: If the Stack Overflow database is missing.
    ValueError: If a corpus yields no sequence.
  """
  train, _, test = task_lib.load_stackoverflow(cache_dir)
  train_ids = list(train.client_ids)
  if not train_ids:
    raise ValueError(f'The Stack Overflow database in {cache_dir} has no '
                     'training clients.')
  central = char_sequences.text_sequences(central_train_texts,
                                          sequence_length)
  task_lib.log_sequences(f'{central_name} (train)', central)
  if not len(central.inputs):
    raise ValueError(f'The {central_name} training texts give no sequence '
                     f'({central.num_texts} texts, {central.num_empty} '
                     'empty).')
  eval_ids = list(test.client_ids)
  if max_eval_clients is not None:
    eval_ids = list(np.random.default_rng(seed).permutation(eval_ids)[
        :max_eval_clients])
  federated_eval = task_lib.client_sequences(test, eval_ids, sequence_length,
                                             max_eval_sequences)
  task_lib.log_sequences('Stack Overflow (evaluation clients)',
                         federated_eval)
  central_eval = char_sequences.text_sequences(central_eval_texts,
                                               sequence_length)
  task_lib.log_sequences(f'{central_name} (evaluation)', central_eval)
  if max_eval_sequences is not None:
    central_eval = central_eval._replace(
        inputs=central_eval.inputs[:max_eval_sequences],
        targets=central_eval.targets[:max_eval_sequences])
  eval_sets = task_lib.evaluation_sets(federated_eval, central_eval,
                                       seed=seed)
  description = (
      f'Stack Overflow database in `{cache_dir}`: {len(train_ids)} training '
      f'clients, {len(eval_ids)} evaluation clients; {central_name}: '
      f'{central.num_texts} training texts ({len(central.inputs)} sequences),'
      f' {central_eval.num_texts} evaluation texts; evaluation sequences: '
      + ', '.join(f'{k} {len(v[0])}' for k, v in eval_sets.items()))
  return Data(train, train_ids, central, eval_sets, description)


def model_for(config: Config) -> tff.learning.models.FunctionalModel:
  return char_lm.build_char_lm(
      embedding_dim=config.embedding_dim, gru_units=config.gru_units,
      sequence_length=config.sequence_length, seed=config.seed)


def _aggregator(config: Config):
  if not config.adaptive_clipping:
    return None
  # Adaptive clipping without noise (Andrew et al. 2021), as in the paper.
  return tff.learning.robust_aggregator(zeroing=False, clipping=True,
                                        weighted=True)


def central_batch_sizes(data: Data, config: Config
                       ) -> scenarios_lib.CentralBatchSizes:
  """|B_c| of each mixed algorithm, capped at the central corpus's size."""
  num_central = len(data.central.inputs)
  batch = min(config.central_batch_size, num_central)
  return scenarios_lib.CentralBatchSizes(
      parallel_training=batch,
      one_way_gt=min(config.one_way_central_batch_size, num_central),
      two_way_gt=batch)


def build_process(scenario: str, data: Data, config: Config,
                  client_groups: Optional[tff_mixed.ClientGroups] = None
                 ) -> tff.learning.templates.LearningProcess:
  """The TFF process of a scenario (transfer: its FedAvg phase).

  With `client_groups` (`client_groups_for`) it takes groups of client ids.
  """
  if scenario not in SCENARIOS or scenario == ORACLE:
    raise ValueError('`scenario` must be one of '
                     f'{tuple(s for s in SCENARIOS if s != ORACLE)} (the '
                     f'oracle has no TFF process), got {scenario!r}.')
  algorithm = FL_ONLY if scenario in TRANSFER else scenario
  objective = tff_mixed.central_data_objective(
      (data.central.inputs, data.central.targets), name='central_corpus')
  return scenarios_lib.build_process(
      algorithm, model_for(config), objective,
      client_lr=(config.two_way_client_lr if scenario == TWO_WAY_GT
                 else config.client_lr),
      client_steps=config.client_steps,
      central_batch_sizes=central_batch_sizes(data, config),
      examples_per_client=0, client_batch_size=config.client_batch_size,
      seed=config.seed, model_aggregator=_aggregator(config),
      federated_weight=config.federated_weight,
      central_weight=config.central_weight,
      central_clip_norm=config.central_clip_norm,
      with_diagnostics=config.with_diagnostics and algorithm in MIXED,
      client_groups=client_groups)


def _dataset_fn(scenario: str, data: Data, config: Config):
  """A client's round dataset from its id (FedAvg: exactly K batches)."""
  fedavg = scenario == FL_ONLY or scenario in TRANSFER
  return task_lib.client_dataset_fn(
      data.train, batch_size=config.client_batch_size,
      num_steps=config.client_steps if fedavg else None,
      sequence_length=config.sequence_length, seed=config.seed)


def cohort_size(data: Data, config: Config) -> int:
  """S as run: `clients_per_round`, at most the training clients."""
  return min(config.clients_per_round, len(data.train_client_ids))


def client_groups_for(scenario: str, data: Data, config: Config
                     ) -> Optional[tff_mixed.ClientGroups]:
  """The scenario's `ClientGroups`, or `None` for one client per member."""
  if not grouping.is_grouped(config.clients_per_group,
                             cohort_size(data, config)):
    return None
  # Every member's K batches, its dataset's in their order, padded rows
  # carrying no loss (padding targets), so the group trains in lockstep.
  return grouping.padded_groups(
      _dataset_fn(scenario, data, config), np.str_,
      num_batches=config.client_steps,
      batch_size=config.client_batch_size,
      members_at_once=config.members_at_once)


def evaluate_all(weights, data: Data) -> dict[str, float]:
  """`{<set>_accuracy, <set>_loss}` on the three evaluation sets."""
  result = {}
  for name in EVAL_SETS:
    metrics = task_lib.evaluate(weights, *data.eval_sets[name])
    result[f'{name}_accuracy'] = metrics['accuracy']
    result[f'{name}_loss'] = metrics['loss']
  return result


class ScenarioResult(NamedTuple):
  """One scenario's evaluations.

  Attributes:
    scenario: The scenario.
    rows: One dict per evaluation (`round`, `<set>_accuracy`,
      `<set>_loss`), round 0 first.
    seconds_per_round: Wall-clock seconds per round trained by this call.
    seconds: Wall-clock seconds of this call.
    resumed_from: The round an earlier call had checkpointed (0: none).
    metrics_path: The runner's per-round CSV (every training metric, e.g.
      the diagnostics), or '' for the oracle and the transfer baselines.
  """

  scenario: str
  rows: list[dict[str, float]]
  seconds_per_round: float
  seconds: float = float('nan')
  resumed_from: int = 0
  metrics_path: str = ''


def _client_ids_fn(data: Data, config: Config, grouped: bool):
  """`fn(round_num)`: the round's ids (`'<round>|<client>'`), grouped or
  one per CLIENTS member."""
  sample = tff.simulation.build_uniform_sampling_fn(
      data.train_client_ids, random_seed=config.seed)

  def client_ids(round_num):
    ids = task_lib.round_client_ids(
        sample(round_num - 1, cohort_size(data, config)), round_num)
    if not grouped:
      return ids
    return grouping.group_ids(ids, config.clients_per_group, np.str_)

  return client_ids


def _composed(scenario: str, data: Data, config: Config,
              processes: Optional[dict[str, Any]] = None):
  """`(process on client ids, its client ids fn)`: groups or per client.

  With `processes` (a dict kept across the scenarios of one run on the same
  data and config), a process is built once: FL-only and both transfer
  baselines run the same FedAvg process, whose tracing and first call's
  compilation are most of a short run's time.
  """
  algorithm = FL_ONLY if scenario in TRANSFER else scenario
  if processes is None:
    processes = {}
  if algorithm not in processes:
    processes[algorithm] = _compose(algorithm, data, config)
  return processes[algorithm]


def _compose(scenario: str, data: Data, config: Config):
  groups = client_groups_for(scenario, data, config)
  process = build_process(scenario, data, config, client_groups=groups)
  if groups is None:
    process = (
        tff.simulation.compose_dataset_computation_with_learning_process(
            tff.tensorflow.computation(_dataset_fn(scenario, data, config),
                                       np.str_), process))
  return process, _client_ids_fn(data, config, grouped=groups is not None)


def run_mixed_or_fl(scenario: str, data: Data, config: Config,
                    output_dir: str, progress: Optional[bool] = None,
                    processes: Optional[dict[str, Any]] = None
                   ) -> ScenarioResult:
  """FL-only or a mixed algorithm, with the resumable runner.

  `processes`: the processes built by earlier scenarios of the same run
  (`run_experiment`), reused; `None`: built here.
  """
  process, client_ids = _composed(scenario, data, config, processes)
  hparams = _hparams(scenario, config)
  start = time.perf_counter()
  result = tff_mixed.run_training(
      process, client_data_fn=client_ids,
      total_rounds=config.rounds, root_output_dir=output_dir,
      experiment_name=scenario, hparams=hparams,
      rounds_per_checkpoint=max(1, config.rounds // 5),
      evaluation_fn=lambda weights: evaluate_all(weights.trainable, data),
      rounds_per_evaluation=config.eval_every, progress=progress)
  trained = config.rounds - result.resumed_from
  seconds = time.perf_counter() - start
  per_round = seconds / trained if trained else float('nan')
  rows = [dict(round=0, **evaluate_all(
      process.get_model_weights(process.initialize()).trainable, data))]
  with open(result.metrics_path) as f:
    for record in csv.DictReader(f):
      if record.get('eval/mixed_accuracy'):
        rows.append(dict(round=int(record[runner_lib.ROUND_KEY]), **{
            k: float(record[f'eval/{k}']) for k in CSV_COLUMNS[2:-1]}))
  return ScenarioResult(scenario, rows, per_round, seconds,
                        result.resumed_from, result.metrics_path)


def _hparams(scenario: str, config: Config) -> dict:
  """What a checkpoint directory must share with the run resuming it."""
  hparams = dict(config._asdict(), scenario=scenario)
  del hparams['rounds']  # A finished run can be extended.
  if scenario in TRANSFER:
    hparams['switch_round'] = config.switch()
  return hparams


def federated_pool(data: Data, config: Config) -> char_sequences.Sequences:
  """Every training client's Stack Overflow sequences, pooled (the
  oracle's federated half)."""
  pool = task_lib.client_sequences(data.train, data.train_client_ids,
                                   config.sequence_length)
  task_lib.log_sequences('Stack Overflow (training clients, pooled)', pool)
  if not len(pool.inputs):
    raise ValueError('The Stack Overflow training clients give no sequence '
                     'to pool for the oracle.')
  return pool


def _rows_path(run_dir: str) -> str:
  return os.path.join(run_dir, 'evaluations.json')


def run_sequential(scenario: str, data: Data, config: Config,
                   output_dir: str,
                   processes: Optional[dict[str, Any]] = None
                  ) -> ScenarioResult:
  """The oracle or a transfer baseline, round by round, resumably.

  The oracle takes K clipped SGD steps per round on pooled batches
  (`central_training.pooled_batches`); a transfer baseline takes K on central
  batches while it trains centrally and runs the FedAvg process's round
  otherwise. The state (the process's, adaptive clipping included, and the
  weights) is checkpointed under `output_dir/<scenario>` five times a run and
  at the end; a rerun resumes from the last checkpoint with the batches an
  uninterrupted run would draw (`central_training.round_rng`).
  `processes` is as in `run_mixed_or_fl`.
  """
  oracle = scenario == ORACLE
  model = model_for(config)
  steps_fn = central_training.build_clipped_sgd_steps(
      model, config.client_lr, config.central_clip_norm)
  central = (data.central.inputs, data.central.targets)
  if oracle:
    pool = federated_pool(data, config)
    split = central_training.oracle_batch_split(
        config.clients_per_round, config.client_batch_size,
        config.federated_weight)
    process = client_ids = None
    state = ([np.asarray(w) for w in model.initial_weights[0]],)
  else:
    process, client_ids = _composed(scenario, data, config, processes)
    initial = process.initialize()
    state = (initial, [np.asarray(w) for w in
                       process.get_model_weights(initial).trainable])
  run_dir = os.path.join(output_dir, scenario)
  checkpointer = checkpoints.Checkpointer(
      os.path.join(run_dir, 'checkpoints'), _hparams(scenario, config))
  checkpointer.check_or_write_fingerprint()
  state, resumed_from = checkpointer.restore(state)
  weights = [np.asarray(w) for w in state[-1]]
  if resumed_from:
    with open(_rows_path(run_dir)) as f:
      rows = [r for r in json.load(f) if r['round'] <= resumed_from]
    logging.info('%s: resumed from round %d', scenario, resumed_from)
  else:
    rows = [dict(round=0, **evaluate_all(weights, data))]
  batch = min(config.central_batch_size, len(central[0]))
  central_first = scenario == CENTRAL_THEN_FL
  every = max(1, config.rounds // 5)
  start = time.perf_counter()
  for round_num in range(resumed_from + 1, config.rounds + 1):
    rng = central_training.round_rng(config.seed, round_num)
    central_now = oracle or (round_num <= config.switch()) == central_first
    if central_now:
      if oracle:
        inputs, targets = central_training.pooled_batches(
            rng, (pool.inputs, pool.targets), central,
            steps=config.client_steps, federated_per_batch=split[0],
            central_per_batch=split[1])
      else:
        inputs, targets = central_training.central_batches(
            rng, central, steps=config.client_steps, batch_size=batch)
      weights = [w.numpy() for w in steps_fn(weights, inputs, targets)]
    else:
      process_state = process.set_model_weights(
          state[0], tff.learning.models.ModelWeights(tuple(weights), ()))
      process_state = process.next(process_state,
                                   client_ids(round_num)).state
      weights = [np.asarray(w) for w in
                 process.get_model_weights(process_state).trainable]
      state = (process_state,)
    if not all(np.all(np.isfinite(w)) for w in weights):
      raise tff_mixed.DivergenceError(
          f'{scenario} diverged at round {round_num}: non-finite weights.')
    state = (weights,) if oracle else (state[0], weights)
    if round_num % config.eval_every == 0 or round_num == config.rounds:
      rows.append(dict(round=round_num, **evaluate_all(weights, data)))
      logging.info('%s: round %d/%d (%s), mixed accuracy %.4f', scenario,
                   round_num, config.rounds,
                   'central' if central_now else 'federated',
                   rows[-1]['mixed_accuracy'])
    if round_num % every == 0 or round_num == config.rounds:
      # The evaluations first: a kill between the two writes leaves rows
      # past the checkpoint, which a resume drops.
      reports_lib.atomic_write_text(_rows_path(run_dir), json.dumps(rows))
      checkpointer.save(state, round_num)
  seconds = time.perf_counter() - start
  trained = config.rounds - resumed_from
  return ScenarioResult(scenario, rows,
                        seconds / trained if trained else float('nan'),
                        seconds, resumed_from)


def format_table(results: Sequence[ScenarioResult], config: Config) -> str:
  """Final accuracy per evaluation set; transfer: before and after the
  switch on the corpus it learned first."""
  lines = ['scenario           mixed acc.  Stack Overflow acc.  central acc.'
           '  first corpus at switch -> end  s/round',
           '-----------------  ----------  -------------------  ------------'
           '  -----------------------------  -------']
  for r in results:
    last = r.rows[-1]
    forgetting = ''
    if r.scenario in TRANSFER:
      first = 'central' if r.scenario == CENTRAL_THEN_FL else 'federated'
      at_switch = [row for row in r.rows if row['round'] <= config.switch()]
      if at_switch:
        forgetting = (f'{first} {at_switch[-1][f"{first}_accuracy"]:.4f} -> '
                      f'{last[f"{first}_accuracy"]:.4f}')
    lines.append(
        f'{r.scenario:<17}  {last["mixed_accuracy"]:>10.4f}  '
        f'{last["federated_accuracy"]:>19.4f}  '
        f'{last["central_accuracy"]:>12.4f}  {forgetting:>29}  '
        f'{r.seconds_per_round:>7.2f}')
  return '\n'.join(lines) + '\n'


def plot(path: str, results: Sequence[ScenarioResult], config: Config,
         title: str) -> None:
  fig, axes = plots.subplots(1, 3, figsize=(15, 4.2), sharey=True)
  names = {'mixed': 'mixed evaluation (75% / 25%)',
           'federated': 'Stack Overflow', 'central': 'central corpus'}
  for ax, name in zip(axes, EVAL_SETS):
    for r in results:
      ax.plot([row['round'] for row in r.rows],
              [row[f'{name}_accuracy'] for row in r.rows], label=r.scenario)
    if any(r.scenario in TRANSFER for r in results):
      ax.axvline(config.switch(), color='grey', linestyle=':')
    ax.set_title(names[name])
    ax.set_xlabel('round')
  axes[0].set_ylabel('next-character accuracy')
  axes[-1].legend(fontsize=8)
  # The data description is long: wrap it rather than cut it off.
  fig.suptitle(textwrap.fill(title, 180), fontsize=8)
  fig.tight_layout()
  plots.save_figure(fig, path)


class ExperimentResult(NamedTuple):
  results: list[ScenarioResult]
  table: str
  files: dict[str, str]
  config: Config
  description: str


def run_experiment(data: Data, config: Config, *,
                   scenarios: Sequence[str] = SCENARIOS, output_dir: str,
                   progress: Optional[bool] = None,
                   on_result: Optional[Callable[[ScenarioResult], None]] = None
                  ) -> ExperimentResult:
  """Runs the scenarios; writes the CSV, plot, table and config.

  `on_result`, if given, is called with each scenario's result as soon as it
  finishes (e.g. to record it before the next one starts).

  Raises:
    ValueError: For unknown scenarios or bad settings.
  """
  if (not scenarios or len(set(scenarios)) != len(scenarios)
      or any(s not in SCENARIOS for s in scenarios)):
    raise ValueError(f'`scenarios` must be distinct names from {SCENARIOS}, '
                     f'got {list(scenarios)}.')
  for name in ('rounds', 'clients_per_round', 'client_batch_size',
               'client_steps', 'central_batch_size',
               'one_way_central_batch_size', 'embedding_dim', 'gru_units',
               'sequence_length', 'eval_every'):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  grouping.check(config.clients_per_group)
  if isinstance(config.members_at_once, bool) or not isinstance(
      config.members_at_once, int) or config.members_at_once < 0:
    raise ValueError('`members_at_once` must be an int >= 0 (0: the whole '
                     f'group), got {config.members_at_once!r}.')
  for name in ('client_lr', 'two_way_client_lr', 'central_clip_norm'):
    value = getattr(config, name)
    if not np.isfinite(value):
      raise ValueError(f'`{name}` must be finite, got {value}.')
    if value <= 0:
      raise ValueError(f'`{name}` must be positive, got {value}.')
  if any(s in TRANSFER for s in scenarios) and not (
      1 <= config.switch() < config.rounds):
    raise ValueError(f'`switch_round` must be in [1, rounds), got '
                     f'{config.switch()} with {config.rounds} rounds.')
  if ORACLE in scenarios:
    central_training.oracle_batch_split(config.clients_per_round,
                                        config.client_batch_size,
                                        config.federated_weight)
  # Held to the end: a second run here, even of other scenarios, would
  # overwrite this one's CSV, plot, table and config.
  with run_lock.claimed_output_directory(output_dir, '`output_dir`'):
    results = []
    processes = {}  # FL-only's FedAvg serves both transfer baselines.
    for scenario in scenarios:
      logging.info('Scenario %s', scenario)
      if scenario in SEQUENTIAL:
        results.append(run_sequential(scenario, data, config, output_dir,
                                      processes))
      else:
        results.append(run_mixed_or_fl(scenario, data, config, output_dir,
                                       progress, processes))
      if on_result is not None:
        on_result(results[-1])
    table = format_table(results, config)
    files = {k: os.path.join(output_dir, v) for k, v in (
        ('metrics', METRICS_FILE), ('plot', PLOT_FILE), ('table', TABLE_FILE),
        ('config', CONFIG_FILE))}
    lines = [','.join(CSV_COLUMNS)]
    for r in results:
      for row in r.rows:
        lines.append(','.join(
            [r.scenario, str(row['round'])]
            + [f'{row[c]:.6g}' for c in CSV_COLUMNS[2:-1]]
            + [f'{r.seconds_per_round * row["round"]:.1f}']))
    reports_lib.atomic_write_text(files['metrics'], '\n'.join(lines) + '\n')
    plot(files['plot'], results, config, data.description)
    reports_lib.atomic_write_text(files['table'], table)
    reports_lib.atomic_write_text(files['config'], json.dumps(
        collections.OrderedDict(config._asdict(), scenarios=list(scenarios),
                                data=data.description), indent=2) + '\n')
    return ExperimentResult(results, table, files, config, data.description)


def results_markdown(result: ExperimentResult, command: str, machine: str,
                     date: str) -> str:
  """The RESULTS.md section of a run."""
  c = result.config
  return '\n'.join([
      '## Stack Overflow + Wikipedia character LM (arXiv:2205.13655, '
      'section 4.2, appendix B.4.5)',
      '',
      f'Generated on {date} by `{command}`.',
      '',
      f'* Machine: {machine}.',
      f'* Data: {result.description}.',
      f'* Training: {c.rounds} rounds, S = {c.clients_per_round}, batch '
      f'{c.client_batch_size}, K = {c.client_steps}, eta = {c.client_lr} '
      f'(2-way GT {c.two_way_client_lr}), central batch '
      f'{c.central_batch_size} (1-way GT {c.one_way_central_batch_size}), '
      f'w_f = {c.federated_weight}, w_c = {c.central_weight}, central clip '
      f'{c.central_clip_norm}, adaptive federated clipping '
      f'{"on" if c.adaptive_clipping else "off"}; model: embedding '
      f'{c.embedding_dim}, GRU {c.gru_units}, sequences of '
      f'{c.sequence_length}; transfer switch at round {c.switch()}; seed '
      f'{c.seed}. The paper (full Stack Overflow and Wikipedia, embedding '
      '256, GRU 1024) reports ~0.60 mixed accuracy for FL only and ~0.66 '
      'for all three mixed algorithms.',
      '',
      'Accuracy: next-character accuracy over non-padding targets, at the '
      'last round; transfer rows also show the accuracy on the corpus '
      'learned first, at the switch and at the end.',
      '',
      '```',
      result.table.rstrip('\n'),
      '```',
  ])
