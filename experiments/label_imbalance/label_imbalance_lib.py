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
"""Compares mixed FL algorithms on the digits label-imbalance task.

The federated clients hold only positive digits and the datacenter only
negative ones (`tff_mixed.tasks.digits_label_imbalance`), as in the smile
classifier of Augenstein et al., arXiv:2205.13655, section 4.1. Every scenario
trains the same initial model on the same clients per round:

*   `fl_only`: FedAvg on the positive-only clients; it never sees a negative.
*   `parallel_training`, `one_way_gt`, `two_way_gt`: the mixed FL algorithms,
    with w_f = w_c = 0.5, SGD everywhere, eta_c = eta, eta_s = eta_m = 1, K
    local steps and the paper's central batch rule (appendix B.2).
*   `example_transfer`: negatives sent to the clients (a reference point that
    real deployments usually forbid).
*   `oracle`: FedAvg with the negatives left on the clients.

`run_comparison` writes a per-round metrics CSV, a plot of eval AUC and
accuracy against rounds and a results table.
"""

import collections
from collections.abc import Callable, Sequence
import csv
import datetime
import io
import json
import math
import os
import platform
import re
import time
from typing import Any, NamedTuple, Optional, Union

from absl import flags
from absl import logging
import matplotlib
matplotlib.use('Agg')  # Headless: no display on CI machines or laptops' ssh.
from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
import tqdm

import tff_mixed

task_lib = tff_mixed.digits_label_imbalance

FL_ONLY = 'fl_only'
PARALLEL_TRAINING = 'parallel_training'
ONE_WAY_GT = 'one_way_gt'
TWO_WAY_GT = 'two_way_gt'
EXAMPLE_TRANSFER = 'example_transfer'
ORACLE = 'oracle'
SCENARIOS = (FL_ONLY, PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT,
             EXAMPLE_TRANSFER, ORACLE)
_LABELS = {
    FL_ONLY: 'FL only',
    PARALLEL_TRAINING: 'Parallel Training',
    ONE_WAY_GT: '1-way GT',
    TWO_WAY_GT: '2-way GT',
    EXAMPLE_TRANSFER: 'Example Transfer',
    ORACLE: 'Oracle (all data on clients)',
}
HIDDEN_UNITS = (32,)

METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'auc_accuracy.png'
TABLE_FILE = 'results.txt'
CONFIG_FILE = 'config.json'
_EVAL_FIELDS = ('accuracy', 'auc', 'loss', 'positive_accuracy',
                'negative_accuracy')
CSV_COLUMNS = ('scenario', 'round', 'train_loss', 'eval_accuracy', 'eval_auc',
               'eval_loss', 'positive_accuracy', 'negative_accuracy',
               'seconds')


class MetricsRow(NamedTuple):
  """One evaluation of one scenario (a row of the metrics CSV).

  Attributes:
    scenario: The scenario name.
    round: Rounds completed (0: the initial model).
    train_loss: The round's mean client training loss (NaN at round 0).
    eval_accuracy: Accuracy on the eval set.
    eval_auc: AUC of ROC on the eval set.
    eval_loss: Loss on the eval set.
    positive_accuracy: Accuracy on positive eval examples.
    negative_accuracy: Accuracy on negative eval examples.
    seconds: Wall-clock seconds since the scenario started, building,
      tracing and evaluation included; NaN for rounds an earlier, interrupted
      invocation completed.
  """

  scenario: str
  round: int
  train_loss: float
  eval_accuracy: float
  eval_auc: float
  eval_loss: float
  positive_accuracy: float
  negative_accuracy: float
  seconds: float


class ScenarioSummary(NamedTuple):
  """The outcome of one scenario.

  Attributes:
    scenario: The scenario name.
    final: The `EvalMetrics` after the last round.
    rounds_to_target: The first evaluated round whose eval AUC reached the
      target, or `None`.
    tail_auc: Mean eval AUC over the evaluations in the last quarter of the
      rounds (the last one at least).
    tail_accuracy: Mean eval accuracy over the same evaluations. Less noisy
      than `final`: which clients a round samples moves the decision
      threshold.
    seconds: Wall-clock seconds of the whole scenario (as in `MetricsRow`).
    build_seconds: Of which building and initializing the process.
    metrics_path: The runner's per-round CSV (every training metric, e.g.
      the G~^2 / B~^2 diagnostics), or '' if unknown.
  """

  scenario: str
  final: task_lib.EvalMetrics
  rounds_to_target: Optional[int]
  tail_auc: float
  tail_accuracy: float
  seconds: float
  build_seconds: float
  metrics_path: str = ''


class ComparisonResult(NamedTuple):
  """What `run_comparison` returns.

  Attributes:
    rows: Every `MetricsRow`, scenario by scenario.
    summaries: One `ScenarioSummary` per scenario, in run order.
    table: The results table as text.
    files: Paths written, keyed by kind (`metrics`, `plot`, `table`,
      `config`).
    config: The run's configuration (also written to `config.json`).
  """

  rows: list[MetricsRow]
  summaries: list[ScenarioSummary]
  table: str
  files: dict[str, str]
  config: dict[str, Any]


class ComparisonTask(NamedTuple):
  """What the comparison needs of a label-imbalance task.

  The digits task (`digits_comparison_task`) and the CelebA smile task
  (`experiments/celeba_smile`) both reduce to this, so one comparison loop,
  CSV, plot and table serve both.

  Attributes:
    title: One line describing the task, for the plot.
    num_clients: Number of federated clients, sampled by index.
    central_objective: The `tff_mixed.CentralObjective` over the central
      (negative) examples.
    mean_client_examples: Mean examples per federated client (Example
      Transfer's default transfer size).
    client_datasets_fn: `fn(client_ids, oracle, round_num) -> datasets`: the
      batched datasets of the federated clients `client_ids` for round
      `round_num`; with `oracle=True` the clients also hold their negatives.
    evaluate_fn: `fn(model_weights) -> EvalMetrics` on the eval set.
    description: JSON-able facts about the data, written to `config.json`.
    dataset_computation_fn: Optional `fn(oracle, num_steps) -> (string ->
      {B*})` TFF computation that builds a client's dataset from its id
      string inside TFF's worker; with it, rounds pass `client_ids_fn`'s
      strings instead of datasets (`num_steps`: exactly that many batches,
      for FedAvg; `None` for the mixed algorithms).
    client_ids_fn: `fn(client_ids, round_num) -> list[str]`, with
      `dataset_computation_fn`.
  """

  title: str
  num_clients: int
  central_objective: tff_mixed.CentralObjective
  mean_client_examples: float
  client_datasets_fn: Callable[[Sequence[int], bool, int],
                               list[tf.data.Dataset]]
  evaluate_fn: Callable[[Any], task_lib.EvalMetrics]
  description: dict[str, Any]
  dataset_computation_fn: Optional[Callable[[bool, Optional[int]],
                                            tff.Computation]] = None
  client_ids_fn: Optional[Callable[[Sequence[int], int], list[str]]] = None


def digits_comparison_task(
    task: task_lib.LabelImbalanceTask,
    model: tff.learning.models.FunctionalModel) -> ComparisonTask:
  """The digits label-imbalance task as a `ComparisonTask`."""

  def client_datasets_fn(client_ids, oracle, round_num):
    del round_num  # The digits clients were shuffled once, at build time.
    datasets = (task.oracle_client_datasets if oracle
                else task.client_datasets)
    return [datasets[i] for i in client_ids]

  return ComparisonTask(
      title=('Digits label imbalance: clients hold only positives, the '
             'datacenter only negatives'),
      num_clients=task.num_clients,
      central_objective=tff_mixed.central_data_objective(
          task.central_data, name='negatives'),
      mean_client_examples=float(np.mean(task.num_client_examples)),
      client_datasets_fn=client_datasets_fn,
      evaluate_fn=lambda weights: task_lib.evaluate(model, weights,
                                                    task.eval_data),
      description=dict(
          num_client_examples=int(sum(task.num_client_examples)),
          num_central_examples=len(task.central_indices),
          num_eval_examples=len(task.eval_indices),
          positive_digits=list(task.positive_digits)))


class CentralBatchSizes(NamedTuple):
  """Central batch sizes per algorithm."""

  parallel_training: int
  one_way_gt: int
  two_way_gt: int


def paper_central_batch_sizes(
    clients_per_round: int, client_steps: int, client_batch_size: int,
    num_central_examples: int) -> CentralBatchSizes:
  """The central batch sizes of arXiv:2205.13655, appendix B.2.

  The rule gives client and central gradient noise the same weight in the
  convergence bounds: |B_c| = S |B_i| for Parallel Training and 2-way GT,
  whose central steps pair with the S client steps of a round, and
  |B_c| = K S |B_i| for 1-way GT, whose single central gradient is reused in
  all K local steps. All are capped at the central data size.

  Args:
    clients_per_round: S.
    client_steps: K.
    client_batch_size: |B_i|.
    num_central_examples: Number of central examples (the cap).

  Returns:
    A `CentralBatchSizes`.
  """
  per_step = min(clients_per_round * client_batch_size, num_central_examples)
  one_way = min(client_steps * clients_per_round * client_batch_size,
                num_central_examples)
  return CentralBatchSizes(parallel_training=per_step, one_way_gt=one_way,
                           two_way_gt=per_step)


def _sgd(learning_rate: float) -> tff.learning.optimizers.Optimizer:
  return tff.learning.optimizers.build_sgdm(learning_rate=learning_rate)


def build_process(
    scenario: str,
    model: tff.learning.models.FunctionalModel,
    central_data: Union[tuple[np.ndarray, np.ndarray],
                        tff_mixed.CentralObjective],
    *,
    client_lr: float,
    client_steps: int,
    central_batch_sizes: CentralBatchSizes,
    examples_per_client: int,
    client_batch_size: int,
    seed: int,
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
    with_diagnostics: bool = False,
    federated_weight: float = 0.5,
    central_weight: float = 0.5,
    central_clip_norm: Optional[float] = None,
) -> tff.learning.templates.LearningProcess:
  """Builds the learning process of one scenario.

  Args:
    scenario: One of `SCENARIOS`.
    model: The `tff.learning.models.FunctionalModel` to train.
    central_data: `(x, y)` numpy arrays of the central (negative) examples,
      or a `tff_mixed.CentralObjective` (e.g. over an `ExampleStore`).
    client_lr: eta, the client learning rate (and eta_c).
    client_steps: K, the local steps of the mixed algorithms.
    central_batch_sizes: Central batch sizes per algorithm.
    examples_per_client: Central examples Example Transfer sends each client.
    client_batch_size: Local batch size after Example Transfer's merge.
    seed: Seeds central sampling.
    model_aggregator: Aggregator of client updates (e.g. a DP one); `None`
      for the weighted mean.
    with_diagnostics: Report the (G, B)-BGD estimates G~_t^2 and B~_t^2
      (arXiv:2205.13655, eq. 7) from Parallel Training and gradient transfer.
    federated_weight: w_f of the mixed algorithms.
    central_weight: w_c of the mixed algorithms.
    central_clip_norm: Clip each central gradient to this L2 norm (`None`:
      no clipping).

  Returns:
    A `tff.learning.templates.LearningProcess`.

  Raises:
    ValueError: If `scenario` is unknown.
  """
  if scenario not in SCENARIOS:
    raise ValueError(
        f'`scenario` must be one of {SCENARIOS}, got {scenario!r}.')
  if scenario in (FL_ONLY, ORACLE):
    # The two baselines differ only in their client data.
    if isinstance(model_aggregator,
                  tff.aggregators.UnweightedAggregationFactory):
      return tff.learning.algorithms.build_unweighted_fed_avg(
          model, client_optimizer_fn=_sgd(client_lr),
          server_optimizer_fn=_sgd(1.0), model_aggregator=model_aggregator)
    return tff.learning.algorithms.build_weighted_fed_avg(
        model,
        client_optimizer_fn=_sgd(client_lr),
        server_optimizer_fn=_sgd(1.0),
        model_aggregator=model_aggregator)
  if isinstance(central_data, tff_mixed.CentralObjective):
    objective = central_data
  else:
    objective = tff_mixed.central_data_objective(central_data,
                                                 name='negatives')
  mixing = dict(client_steps=client_steps, federated_weight=federated_weight,
                central_weight=central_weight, seed=seed,
                model_aggregator=model_aggregator,
                central_clip_norm=central_clip_norm,
                with_diagnostics=with_diagnostics)
  if scenario == PARALLEL_TRAINING:
    return tff_mixed.build_parallel_training(
        model, objective, _sgd(client_lr), _sgd(client_lr), _sgd(1.0),
        _sgd(1.0),
        central_batch_size=central_batch_sizes.parallel_training, **mixing)
  if scenario == ONE_WAY_GT:
    return tff_mixed.build_one_way_gradient_transfer(
        model, objective, _sgd(client_lr), _sgd(1.0),
        central_batch_size=central_batch_sizes.one_way_gt, **mixing)
  if scenario == TWO_WAY_GT:
    return tff_mixed.build_two_way_gradient_transfer(
        model, objective, _sgd(client_lr), _sgd(client_lr), _sgd(1.0),
        _sgd(1.0),
        central_batch_size=central_batch_sizes.two_way_gt, **mixing)
  if scenario == EXAMPLE_TRANSFER:
    return tff_mixed.build_example_transfer(
        model, objective, _sgd(client_lr), _sgd(1.0),
        examples_per_client=examples_per_client,
        client_batch_size=client_batch_size, client_steps=client_steps,
        seed=seed, model_aggregator=model_aggregator)
  raise AssertionError(f'Unhandled scenario {scenario!r}.')


def _check_int(name: str, value: Any, minimum: int = 1) -> None:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'`{name}` must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'`{name}` must be >= {minimum}, got {value}.')


def _check_scenarios(scenarios: Sequence[str]) -> tuple[str, ...]:
  if isinstance(scenarios, str):
    raise TypeError('`scenarios` must be a sequence of names, got the string '
                    f'{scenarios!r}; wrap it in a list.')
  scenarios = tuple(scenarios)
  if not scenarios:
    raise ValueError(f'`scenarios` must name at least one of {SCENARIOS}.')
  unknown = [s for s in scenarios if s not in SCENARIOS]
  if unknown:
    raise ValueError(f'`scenarios` has unknown names {unknown}; choose from '
                     f'{SCENARIOS}.')
  if len(set(scenarios)) != len(scenarios):
    raise ValueError(f'`scenarios` has duplicates: {list(scenarios)}.')
  return scenarios


def client_data(scenario: str, task: ComparisonTask,
                client_ids: Sequence[int], client_steps: int,
                round_num: int) -> list[tf.data.Dataset]:
  """The client data of `client_ids` in round `round_num` for `scenario`.

  Datasets, or id strings when the task builds datasets in TFF's worker
  (`ComparisonTask.dataset_computation_fn`; see `_compose`).
  """
  if task.dataset_computation_fn is not None:
    return task.client_ids_fn(client_ids, round_num)
  if scenario in (FL_ONLY, ORACLE):
    datasets = task.client_datasets_fn(client_ids, scenario == ORACLE,
                                       round_num)
    # TFF's FedAvg takes one pass over the data it is given; repeating and
    # truncating gives it the same K steps the mixed algorithms take.
    return [d.repeat().take(client_steps) for d in datasets]
  return task.client_datasets_fn(client_ids, False, round_num)


def _first_round_reaching(rows: Sequence[MetricsRow],
                          target_auc: float) -> Optional[int]:
  for row in rows:
    if row.eval_auc >= target_auc:  # False for NaN.
      return row.round
  return None


def round_functions(
    scenario: str,
    task: ComparisonTask,
    *,
    clients_per_round: int,
    client_steps: int,
    seed: int,
):
  """The runner's `client_data_fn` and `evaluation_fn` for one scenario.

  Client sampling is a pure function of the round and `seed`, the same in
  every scenario (round r trains on the same clients in all) and in a
  resumed run.

  Returns:
    `(client_data_fn(round_num) -> datasets, evaluation_fn(weights) ->
    {name: float})`.
  """
  sample_clients = tff.simulation.build_uniform_sampling_fn(
      range(task.num_clients), random_seed=seed)

  def client_data_fn(round_num: int):
    ids = sample_clients(round_num - 1, clients_per_round)
    return client_data(scenario, task, ids, client_steps, round_num)

  def evaluation_fn(weights):
    metrics = task.evaluate_fn(weights)
    return {name: getattr(metrics, name) for name in _EVAL_FIELDS}

  return client_data_fn, evaluation_fn


def scenario_process(
    scenario: str,
    task: ComparisonTask,
    model: tff.learning.models.FunctionalModel,
    *,
    client_steps: int,
    seed: int,
    **process_kwargs,
) -> tff.learning.templates.LearningProcess:
  """`build_process` for a task; its `next` takes what `client_data` gives.

  With `task.dataset_computation_fn`, the process is composed with it, so
  that datasets are built from id strings inside TFF's worker; FedAvg takes
  one pass over its data, so its datasets then hold exactly K batches.
  """
  process = build_process(scenario, model, task.central_objective,
                          client_steps=client_steps, seed=seed,
                          **process_kwargs)
  if task.dataset_computation_fn is None:
    return process
  fedavg = scenario in (FL_ONLY, ORACLE)
  return tff.simulation.compose_dataset_computation_with_learning_process(
      task.dataset_computation_fn(scenario == ORACLE,
                                  client_steps if fedavg else None),
      process)


def _run_scenario(
    scenario: str,
    task: ComparisonTask,
    model: tff.learning.models.FunctionalModel,
    process_kwargs: dict[str, Any],
    *,
    rounds: int,
    clients_per_round: int,
    client_steps: int,
    eval_every: int,
    target_auc: float,
    seed: int,
    progress: Optional[bool],
    output_dir: str,
    hparams: dict[str, Any],
) -> tuple[list[MetricsRow], ScenarioSummary]:
  """Trains one scenario with the shared runner, evaluating periodically.

  The run lives under `output_dir/{checkpoints,results,logdir}/<scenario>`,
  so an interrupted comparison resumes where it stopped; rows are read back
  from the runner's metrics CSV, which then covers every round.
  """
  start = time.perf_counter()
  process = scenario_process(scenario, task, model, client_steps=client_steps,
                             seed=seed, **process_kwargs)
  initial = task.evaluate_fn(process.get_model_weights(process.initialize()))
  build_seconds = time.perf_counter() - start
  client_data_fn, evaluation_fn = round_functions(
      scenario, task, clients_per_round=clients_per_round,
      client_steps=client_steps, seed=seed)
  seconds = {0: 0.0}

  def round_end_fn(round_num: int) -> None:
    seconds[round_num] = time.perf_counter() - start

  result = tff_mixed.run_training(
      process, client_data_fn=client_data_fn, total_rounds=rounds,
      root_output_dir=output_dir, experiment_name=scenario,
      hparams=dict(hparams, scenario=scenario),
      rounds_per_checkpoint=max(1, rounds // 5), evaluation_fn=evaluation_fn,
      rounds_per_evaluation=eval_every, progress=progress,
      round_end_fn=round_end_fn)
  rows = [MetricsRow(scenario, 0, float('nan'), initial.accuracy, initial.auc,
                     initial.loss, initial.positive_accuracy,
                     initial.negative_accuracy, 0.0)]
  with open(result.metrics_path) as f:
    for record in csv.DictReader(f):
      if not record.get('eval/auc'):
        continue
      round_num = int(record[tff_mixed.RUN_ROUND_KEY])
      rows.append(MetricsRow(
          scenario, round_num,
          float(record['train/client_work/train/loss']),
          *(float(record[f'eval/{name}']) for name in (
              'accuracy', 'auc', 'loss', 'positive_accuracy',
              'negative_accuracy')),
          # Rounds done by an earlier, interrupted invocation have no time.
          seconds.get(round_num, float('nan'))))
  last = rows[-1]
  final = task_lib.EvalMetrics(
      accuracy=last.eval_accuracy, loss=last.eval_loss, auc=last.eval_auc,
      positive_accuracy=last.positive_accuracy,
      negative_accuracy=last.negative_accuracy,
      num_examples=initial.num_examples)
  tail = [r for r in rows if r.round > 0.75 * rounds] or rows[-1:]
  summary = ScenarioSummary(
      scenario=scenario, final=final,
      rounds_to_target=_first_round_reaching(rows, target_auc),
      tail_auc=float(np.mean([r.eval_auc for r in tail])),
      tail_accuracy=float(np.mean([r.eval_accuracy for r in tail])),
      seconds=time.perf_counter() - start, build_seconds=build_seconds,
      metrics_path=result.metrics_path)
  logging.info(
      '%s: %d rounds in %.1f s (build %.1f s): eval AUC %.3f, accuracy %.3f '
      '(positives %.3f, negatives %.3f)', scenario, rounds, summary.seconds,
      build_seconds, final.auc, final.accuracy, final.positive_accuracy,
      final.negative_accuracy)
  return rows, summary


def format_table(summaries: Sequence[ScenarioSummary],
                 target_auc: float) -> str:
  """Formats the summaries as a fixed-width text table.

  Columns: the final eval AUC, accuracy and per-label accuracies; the mean
  AUC and accuracy over the last quarter of rounds; the first evaluated round
  reaching `target_auc` ('-': never); the scenario's wall-clock seconds.

  Args:
    summaries: The `ScenarioSummary`s, one row each.
    target_auc: The AUC target the summaries were computed with.

  Returns:
    The table, one line per row, ending in a newline.
  """
  header = ('scenario', 'AUC', 'accuracy', 'pos. acc.', 'neg. acc.',
            'AUC last 1/4', 'acc. last 1/4', f'rounds to AUC>={target_auc:g}',
            'seconds')
  lines = []
  for s in summaries:
    lines.append((
        s.scenario, f'{s.final.auc:.3f}', f'{s.final.accuracy:.3f}',
        f'{s.final.positive_accuracy:.3f}',
        f'{s.final.negative_accuracy:.3f}', f'{s.tail_auc:.3f}',
        f'{s.tail_accuracy:.3f}',
        '-' if s.rounds_to_target is None else str(s.rounds_to_target),
        f'{s.seconds:.1f}'))
  widths = [max(len(r[i]) for r in [header, *lines])
            for i in range(len(header))]

  def fmt(cells):
    # Names left-aligned, numbers right-aligned.
    return '  '.join(
        c.ljust(w) if i == 0 else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths)))

  rule = '  '.join('-' * w for w in widths)
  return '\n'.join([fmt(header), rule, *(fmt(r) for r in lines)]) + '\n'


def write_metrics_csv(path: str, rows: Sequence[MetricsRow]) -> None:
  """Writes `rows` as CSV with the header `CSV_COLUMNS`."""
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator='\n')
  writer.writerow(CSV_COLUMNS)
  for row in rows:
    writer.writerow([
        f'{v:.6g}' if isinstance(v, float) else v for v in row
    ])
  tff_mixed.atomic_write(path, lambda f: f.write(buffer.getvalue()))


def plot_metrics(path: str, rows: Sequence[MetricsRow], target_auc: float,
                 title: str = '') -> None:
  """Plots eval AUC and accuracy against rounds, one line per scenario."""
  by_scenario = collections.defaultdict(list)
  for row in rows:
    by_scenario[row.scenario].append(row)
  fig, (ax_auc, ax_acc) = plt.subplots(1, 2, figsize=(11, 4.2))
  for scenario, scenario_rows in by_scenario.items():
    rounds = [r.round for r in scenario_rows]
    # The two FedAvg baselines dashed, so the mixed algorithms stand out.
    style = '--' if scenario in (FL_ONLY, ORACLE) else '-'
    label = _LABELS.get(scenario, scenario)
    ax_auc.plot(rounds, [r.eval_auc for r in scenario_rows], style,
                label=label)
    ax_acc.plot(rounds, [r.eval_accuracy for r in scenario_rows], style,
                label=label)
  ax_auc.axhline(target_auc, color='gray', linewidth=0.8, linestyle=':')
  ax_auc.set(xlabel='round', ylabel='eval AUC of ROC',
             title='Eval AUC (positives and negatives)')
  ax_acc.set(xlabel='round', ylabel='eval accuracy',
             title='Eval accuracy (positives and negatives)')
  for ax in (ax_auc, ax_acc):
    ax.grid(alpha=0.3)
  ax_acc.legend(loc='lower right', fontsize='small')
  if title:
    fig.suptitle(title, fontsize='medium')
  fig.tight_layout()
  try:
    tff_mixed.atomic_write(path,
                           lambda f: fig.savefig(f, format='png', dpi=110),
                  mode='wb')
  finally:
    plt.close(fig)


def run_comparison(
    *,
    scenarios: Sequence[str] = SCENARIOS,
    rounds: int,
    clients_per_round: int,
    client_steps: int,
    client_batch_size: int,
    client_lr: float,
    central_batch_size: Optional[int] = None,
    examples_per_client: Optional[int] = None,
    num_clients: int = 60,
    eval_every: int = 1,
    target_auc: float = 0.95,
    seed: int = 0,
    output_dir: str,
    progress: Optional[bool] = None,
) -> ComparisonResult:
  """Runs the scenarios on the digits task; writes metrics, plot and table.

  Args:
    scenarios: Names from `SCENARIOS`, run in this order.
    rounds: Training rounds per scenario.
    clients_per_round: S, clients sampled per round (the same in every
      scenario).
    client_steps: K, local SGD steps per client per round (clients cycle
      through their data).
    client_batch_size: |B_i|.
    client_lr: eta, the client learning rate; the central learning rate eta_c
      equals it, and server and merge learning rates are 1.
    central_batch_size: |B_c| for all mixed algorithms; `None` applies the
      paper's rule (`paper_central_batch_sizes`).
    examples_per_client: Central examples Example Transfer sends to each
      client per round; `None` means the mean client data size.
    num_clients: Number of federated clients.
    eval_every: Evaluate every this many rounds (and after the last one).
    target_auc: The eval AUC whose first crossing the table reports.
    seed: Seeds the task, the model initialization, client sampling and
      central sampling.
    output_dir: Directory for the output files (created if missing).
    progress: Show a progress bar per scenario: `True`, `False`, or `None`
      for only when stderr is a terminal.

  Returns:
    A `ComparisonResult`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If an argument is out of range.
  """
  _check_int('num_clients', num_clients)
  _check_int('client_batch_size', client_batch_size)
  _check_int('seed', seed, minimum=0)
  if isinstance(clients_per_round, int) and clients_per_round > num_clients:
    raise ValueError(f'`clients_per_round` ({clients_per_round}) must be at '
                     f'most `num_clients` ({num_clients}).')
  _check_scenarios(scenarios)
  task = task_lib.build_task(num_clients=num_clients,
                             client_batch_size=client_batch_size, seed=seed)
  model = tff_mixed.build_binary_classifier(
      task_lib.NUM_FEATURES, hidden_units=HIDDEN_UNITS, seed=seed)
  return compare(
      digits_comparison_task(task, model), model, scenarios=scenarios,
      rounds=rounds, clients_per_round=clients_per_round,
      client_steps=client_steps, client_batch_size=client_batch_size,
      client_lr=client_lr, central_batch_size=central_batch_size,
      examples_per_client=examples_per_client, eval_every=eval_every,
      target_auc=target_auc, seed=seed, output_dir=output_dir,
      progress=progress, extra_config=dict(
          num_clients=num_clients, hidden_units=list(HIDDEN_UNITS)))


def compare(
    task: ComparisonTask,
    model: tff.learning.models.FunctionalModel,
    *,
    scenarios: Sequence[str] = SCENARIOS,
    rounds: int,
    clients_per_round: int,
    client_steps: int,
    client_batch_size: int,
    client_lr: float,
    central_batch_size: Optional[int] = None,
    examples_per_client: Optional[int] = None,
    eval_every: int = 1,
    target_auc: float = 0.95,
    seed: int = 0,
    output_dir: str,
    progress: Optional[bool] = None,
    with_diagnostics: bool = False,
    extra_config: Optional[dict[str, Any]] = None,
) -> ComparisonResult:
  """Runs the scenarios on any `ComparisonTask`; writes metrics, plot, table.

  Every scenario trains `model` from the same initial weights, on the same
  clients per round. Arguments are as in `run_comparison`, plus:

  Args:
    task: The `ComparisonTask`.
    model: The `tff.learning.models.FunctionalModel` to train.
    with_diagnostics: Also report G~_t^2 and B~_t^2 (eq. 7) from Parallel
      Training and gradient transfer (an extra client upload per round).
    extra_config: More facts for `config.json` (e.g. the model).

  Returns:
    A `ComparisonResult`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If an argument is out of range.
  """
  scenarios = _check_scenarios(scenarios)
  for name, value in (('rounds', rounds),
                      ('clients_per_round', clients_per_round),
                      ('client_steps', client_steps),
                      ('client_batch_size', client_batch_size),
                      ('eval_every', eval_every)):
    _check_int(name, value)
  _check_int('seed', seed, minimum=0)
  if central_batch_size is not None:
    _check_int('central_batch_size', central_batch_size)
  if examples_per_client is not None:
    _check_int('examples_per_client', examples_per_client)
  if clients_per_round > task.num_clients:
    raise ValueError(f'`clients_per_round` ({clients_per_round}) must be at '
                     f'most the number of clients ({task.num_clients}).')
  if isinstance(client_lr, bool) or not isinstance(client_lr, (int, float)):
    raise ValueError(f'`client_lr` must be a number, got {client_lr!r}.')
  if not math.isfinite(client_lr):
    raise ValueError(f'`client_lr` must be finite, got {client_lr!r}.')
  if client_lr <= 0:
    raise ValueError(f'`client_lr` must be positive, got {client_lr!r}.')
  if (isinstance(target_auc, bool) or not isinstance(target_auc, (int, float))
      or not 0 < target_auc <= 1):
    raise ValueError(f'`target_auc` must be in (0, 1], got {target_auc!r}.')
  if not isinstance(output_dir, (str, os.PathLike)) or not str(output_dir):
    raise TypeError(f'`output_dir` must be a path, got {output_dir!r}.')
  output_dir = tff_mixed.make_directory(os.fspath(output_dir),
                                       '`output_dir`')

  num_central = task.central_objective.num_examples
  if central_batch_size is None:
    batch_sizes = paper_central_batch_sizes(
        clients_per_round, client_steps, client_batch_size, num_central)
  else:
    capped = min(central_batch_size, num_central)
    batch_sizes = CentralBatchSizes(capped, capped, capped)
  if examples_per_client is None:
    examples_per_client = max(1, round(task.mean_client_examples))
  examples_per_client = min(examples_per_client, num_central)

  config = collections.OrderedDict(
      scenarios=list(scenarios), rounds=rounds,
      clients_per_round=clients_per_round, client_steps=client_steps,
      client_batch_size=client_batch_size, client_lr=client_lr,
      central_batch_sizes=batch_sizes._asdict(),
      examples_per_client=examples_per_client,
      eval_every=eval_every, target_auc=target_auc, seed=seed,
      with_diagnostics=with_diagnostics,
      **(extra_config or {}), **task.description)
  logging.info('Label imbalance comparison: %s', json.dumps(config))

  rows, summaries = [], []
  process_kwargs = dict(
      client_lr=client_lr, central_batch_sizes=batch_sizes,
      examples_per_client=examples_per_client,
      client_batch_size=client_batch_size, with_diagnostics=with_diagnostics)
  for scenario in scenarios:
    scenario_rows, summary = _run_scenario(
        scenario, task, model, process_kwargs, rounds=rounds,
        clients_per_round=clients_per_round, client_steps=client_steps,
        eval_every=eval_every, target_auc=target_auc, seed=seed,
        progress=progress, output_dir=output_dir,
        # What a resumed scenario must share with its checkpoints; more
        # rounds, other scenarios or evaluation settings may differ.
        hparams={k: v for k, v in config.items()
                 if k not in ('scenarios', 'rounds', 'eval_every',
                              'target_auc', 'with_diagnostics')})
    rows.extend(scenario_rows)
    summaries.append(summary)

  table = format_table(summaries, target_auc)
  files = {
      'metrics': os.path.join(output_dir, METRICS_FILE),
      'plot': os.path.join(output_dir, PLOT_FILE),
      'table': os.path.join(output_dir, TABLE_FILE),
      'config': os.path.join(output_dir, CONFIG_FILE),
  }
  write_metrics_csv(files['metrics'], rows)
  plot_metrics(files['plot'], rows, target_auc, title=task.title)
  tff_mixed.atomic_write_text(files['table'], table)
  tff_mixed.atomic_write(files['config'],
                lambda f: f.write(json.dumps(config, indent=2) + '\n'))
  return ComparisonResult(rows=rows, summaries=summaries, table=table,
                          files=files, config=dict(config))


def machine_description() -> str:
  """CPU, cores, OS and library versions, for results files."""
  cpu = platform.processor() or platform.machine()
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          cpu = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  return (f'{cpu}, {os.cpu_count()} cores, {platform.system()} '
          f'{platform.release()}; Python {platform.python_version()}, '
          f'TensorFlow {tf.__version__}, TensorFlow Federated '
          f'{tff.__version__}')


def write_results_section(path: str, section: str, markdown: str,
                          note: str = '', after: Optional[str] = None) -> None:
  """Replaces (or appends) one generated section of RESULTS.md.

  Args:
    path: The Markdown file.
    section: The section's name (its BEGIN/END markers).
    markdown: The section's text; its first line is its heading.
    note: Optional paragraph placed under the heading, e.g. why a run of a
      few scenarios has a section of its own (`--results_note`).
    after: A new section goes right after this one (e.g. the experiment's
      main section), if present.
  """
  if note:
    heading, _, rest = markdown.partition('\n')
    markdown = f'{heading}\n\n{note.strip()}\n{rest}'
  tff_mixed.write_markdown_section(path, section, markdown, title='Results',
                                   after=after)


def define_results_section_flags(default_section: str):
  """`--results_section` and `--results_note` of an experiment binary.

  A run of some scenarios (say, those a fix changed) can then write a
  section of its own instead of replacing the whole experiment's section.
  Returns the two flag holders.
  """
  section = flags.DEFINE_string(
      'results_section', default_section, 'Name of the generated section '
      'of --results_markdown this run writes (one word).')
  note = flags.DEFINE_string(
      'results_note', '', 'Optional paragraph written under the section '
      'heading (e.g. which rows of another section this run supersedes).')
  flags.register_validator(
      'results_section', lambda name: re.fullmatch(r'\w+', name) is not None,
      message='--results_section must be one word (letters, digits, _).')
  return section, note


def outcome_lines(result: ComparisonResult) -> list[str]:
  """Sentences on FL-only's failure and the mixed algorithms vs the oracle."""
  by_name = {s.scenario: s for s in result.summaries}
  lines = []
  if FL_ONLY in by_name:
    fl_only = by_name[FL_ONLY].final
    lines.append(
        f'FL-only never sees a negative: its accuracy on negatives is '
        f'{fl_only.negative_accuracy:.3f} and its AUC {fl_only.auc:.3f}.')
  mixed = [n for n in (PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT,
                       EXAMPLE_TRANSFER) if n in by_name]
  if mixed and ORACLE in by_name:
    oracle_auc = by_name[ORACLE].tail_auc
    gaps = ', '.join(
        f'{n} {by_name[n].tail_auc:.3f}' for n in mixed)
    lines.append(
        f'Mean AUC over the last quarter of rounds: oracle {oracle_auc:.3f}; '
        f'{gaps}. The paper (arXiv:2205.13655, section 4.1 and Table 4) '
        'reports that the mixed algorithms recover the oracle on CelebA '
        'smiles and that Parallel Training converges slowest when the '
        'federated and central gradients are dissimilar; rows above that '
        'fall short of the oracle are reported as measured.')
  return lines


def utc_now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')


def write_results_markdown(path: str, result: ComparisonResult,
                           command: str) -> None:
  """Writes the digits section of RESULTS.md: table, data, machine, date.

  Generated by the binary (`--results_markdown`), never edited by hand, so
  the numbers in the repository are the numbers a run produced.

  Args:
    path: The results file (its other sections are kept).
    result: The `ComparisonResult` of `run_comparison`.
    command: The command line that produced it.
  """
  config = result.config
  lines = [
      '## Label imbalance on real handwritten digits (the main job)',
      '',
      f'Generated on {utc_now()} by `{command}`.',
      '',
      f'* Machine: {machine_description()}.',
      '* Data: scikit-learn\'s bundled handwritten digits (UCI Optical '
      'Recognition of Handwritten Digits), digits '
      f'{config["positive_digits"]} positive, the rest negative. '
      f'{config["num_clients"]} federated clients hold only positives '
      f'({config["num_client_examples"]} examples, non-IID by digit); the '
      f'server holds the {config["num_central_examples"]} negative training '
      f'examples; evaluation on {config["num_eval_examples"]} held-out '
      'examples of both labels.',
      f'* Training: {config["rounds"]} rounds, {config["clients_per_round"]} '
      f'clients per round, K = {config["client_steps"]} local SGD steps of '
      f'batch {config["client_batch_size"]}, eta = eta_c = '
      f'{config["client_lr"]}, eta_s = eta_m = 1, w_f = w_c = 0.5, central '
      f'batch sizes {config["central_batch_sizes"]}, Example Transfer sends '
      f'{config["examples_per_client"]} central examples per client, model '
      f'64-{"-".join(map(str, config["hidden_units"]))}-1 MLP, seed '
      f'{config["seed"]}. FL-only and oracle are TFF\'s '
      '`build_weighted_fed_avg`.',
      '',
      '```',
      result.table.rstrip('\n'),
      '```',
      '',
      *outcome_lines(result),
      '',
      f'Per-round metrics: `{result.files["metrics"]}`; plot: '
      f'`{result.files["plot"]}` (not committed: rerun to get them).',
  ]
  write_results_section(path, 'label_imbalance_digits', '\n'.join(lines))
