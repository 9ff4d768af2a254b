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
"""Compares scenarios on a label-imbalance task: one loop, files, table.

The federated clients hold only positives and the datacenter only negatives,
as in the smile classifier of Augenstein et al., arXiv:2205.13655, section
4.1; every scenario (`scenarios`) trains the same initial model on the same
clients per round, with the shared resumable runner. `compare` writes a
per-round metrics CSV, a plot of eval AUC and accuracy against rounds, the
results table and the run's configuration.
"""

import collections
from collections.abc import Callable, Sequence
import json
import math
import os
import time
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.common import grouping
from experiments.common import plots
from experiments.common import records
from experiments.common import run_loop
from experiments.common import scenarios as scenarios_lib
from experiments.common import tables
import tff_mixed
from tff_mixed.training import reports as reports_lib

METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'auc_accuracy.png'
TABLE_FILE = 'results.txt'
CONFIG_FILE = 'config.json'


class ComparisonResult(NamedTuple):
  """What `compare` returns.

  Attributes:
    rows: Every `MetricsRow`, scenario by scenario.
    summaries: One `ScenarioSummary` per scenario, in run order.
    table: The results table as text.
    files: Paths written, keyed by kind (`metrics`, `plot`, `table`,
      `config`).
    config: The run's configuration (also written to `config.json`).
  """

  rows: list[records.MetricsRow]
  summaries: list[records.ScenarioSummary]
  table: str
  files: dict[str, str]
  config: dict[str, Any]


class ComparisonTask(NamedTuple):
  """What the comparison needs of a label-imbalance task.

  The digits task (`experiments/label_imbalance`) and the CelebA smile task
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
      `dataset_computation_fn` (and the ids of client groups).
    client_groups_fn: Optional `fn(oracle) -> tff_mixed.ClientGroups`, for
      the fast simulation mode (`--clients_per_group`): its `dataset_fn`
      gives, inside the group's computation, the batched dataset of a client
      id (the index, or `client_ids_fn`'s string), the same batches
      `client_datasets_fn` gives; `None`: the task runs per client only.
  """

  title: str
  num_clients: int
  central_objective: tff_mixed.CentralObjective
  mean_client_examples: float
  client_datasets_fn: Callable[[Sequence[int], bool, int],
                               list[tf.data.Dataset]]
  evaluate_fn: Callable[[Any], records.EvalMetrics]
  description: dict[str, Any]
  dataset_computation_fn: Optional[Callable[[bool, Optional[int]],
                                            tff.Computation]] = None
  client_ids_fn: Optional[Callable[[Sequence[int], int], list[str]]] = None
  client_groups_fn: Optional[Callable[[bool],
                                      tff_mixed.ClientGroups]] = None


def check_int(name: str, value: Any, minimum: int = 1) -> None:
  """Raises unless `value` is an int (not a bool) of at least `minimum`."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'`{name}` must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'`{name}` must be >= {minimum}, got {value}.')


def uses_groups(task: ComparisonTask, clients_per_group: int,
                clients_per_round: int) -> bool:
  """Whether a cohort of the task runs in client groups.

  `clients_per_group` is the `--clients_per_group` value (0: one group per
  core, 1: per client); a task without `client_groups_fn` runs per client.
  """
  return (task.client_groups_fn is not None
          and grouping.is_grouped(clients_per_group, clients_per_round))


def client_data(scenario: str, task: ComparisonTask,
                client_ids: Sequence[int], client_steps: int,
                round_num: int, clients_per_group: int = 1):
  """The client data of `client_ids` in round `round_num` for `scenario`.

  Datasets, or id strings when the task builds datasets in TFF's worker
  (`ComparisonTask.dataset_computation_fn`; see `scenario_process`), or,
  in groups (`uses_groups`), the ids split into groups (one array each).
  """
  if uses_groups(task, clients_per_group, len(client_ids)):
    dtype = task.client_groups_fn(scenario == scenarios_lib.ORACLE).id_dtype
    ids = (client_ids if task.client_ids_fn is None
           else task.client_ids_fn(client_ids, round_num))
    return grouping.group_ids(ids, clients_per_group, dtype)
  if task.dataset_computation_fn is not None:
    return task.client_ids_fn(client_ids, round_num)
  if scenario in scenarios_lib.BASELINES:
    datasets = task.client_datasets_fn(
        client_ids, scenario == scenarios_lib.ORACLE, round_num)
    # FedAvg takes K steps itself (`registry.build`); K batches here keep
    # the data a baseline reads to what it trains on, as before.
    return [d.repeat().take(client_steps) for d in datasets]
  return task.client_datasets_fn(client_ids, False, round_num)


def round_functions(
    scenario: str,
    task: ComparisonTask,
    *,
    clients_per_round: int,
    client_steps: int,
    seed: int,
    clients_per_group: int = 1,
):
  """The runner's `client_data_fn` and `evaluation_fn` for one scenario.

  Client sampling is a pure function of the round and `seed`, the same in
  every scenario (round r trains on the same clients in all) and in a
  resumed run; `clients_per_group` as in `client_data` (the process must be
  `scenario_process`'s with the same value).

  Returns:
    `(client_data_fn(round_num) -> datasets, evaluation_fn(weights) ->
    {name: float})`.
  """
  sample_clients = tff.simulation.build_uniform_sampling_fn(
      range(task.num_clients), random_seed=seed)

  def client_data_fn(round_num: int):
    ids = sample_clients(round_num - 1, clients_per_round)
    return client_data(scenario, task, ids, client_steps, round_num,
                       clients_per_group)

  def evaluation_fn(weights):
    metrics = task.evaluate_fn(weights)
    return {name: getattr(metrics, name) for name in records.EVAL_FIELDS}

  return client_data_fn, evaluation_fn


def scenario_process(
    scenario: str,
    task: ComparisonTask,
    model: tff.learning.models.FunctionalModel,
    *,
    client_steps: int,
    seed: int,
    clients_per_group: int = 1,
    clients_per_round: Optional[int] = None,
    **process_kwargs,
) -> tff.learning.templates.LearningProcess:
  """`build_process` for a task; its `next` takes what `client_data` gives.

  In client groups (`uses_groups`; `clients_per_round` is the cohort whose
  size `clients_per_group=0` divides), the process takes groups of ids and
  reads the clients' data with `task.client_groups_fn`; FedAvg is the
  composed one, taking K steps (equal to TFF's). Per client, with
  `task.dataset_computation_fn`, the process is composed with it, so that
  datasets are built from id strings inside TFF's worker; FedAvg's then
  hold exactly K batches (the K steps it takes).
  """
  groups = None
  if clients_per_group != 1:
    check_int('clients_per_round', clients_per_round)
    if uses_groups(task, clients_per_group, clients_per_round):
      groups = task.client_groups_fn(scenario == scenarios_lib.ORACLE)
  process = scenarios_lib.build_process(
      scenario, model, task.central_objective, client_steps=client_steps,
      seed=seed, client_groups=groups, **process_kwargs)
  if groups is not None or task.dataset_computation_fn is None:
    return process
  fedavg = scenario in scenarios_lib.BASELINES
  return tff.simulation.compose_dataset_computation_with_learning_process(
      task.dataset_computation_fn(scenario == scenarios_lib.ORACLE,
                                  client_steps if fedavg else None),
      process)


def run_scenario(
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
    clients_per_group: int = 1,
    rounds_per_call: int = 1,
) -> tuple[list[records.MetricsRow], records.ScenarioSummary]:
  """Trains one scenario with the shared runner, evaluating periodically.

  `clients_per_group` as in `scenario_process` and `round_functions`;
  `rounds_per_call` as in `tff_mixed.run_training` (the same numbers).

  The run lives under `output_dir/{checkpoints,results,logdir}/<scenario>`,
  so an interrupted comparison resumes where it stopped; rows are read back
  from the runner's metrics CSV, which then covers every round.
  """
  start = time.perf_counter()
  if uses_groups(task, clients_per_group, clients_per_round):
    logging.info('%s: client groups of up to %d clients', scenario,
                 tff_mixed.simulation.clients_per_group_for(clients_per_group,
                                                            clients_per_round))
  process = scenario_process(
      scenario, task, model, client_steps=client_steps, seed=seed,
      clients_per_group=clients_per_group,
      clients_per_round=clients_per_round, **process_kwargs)
  initial = task.evaluate_fn(process.get_model_weights(process.initialize()))
  build_seconds = time.perf_counter() - start
  client_data_fn, evaluation_fn = round_functions(
      scenario, task, clients_per_round=clients_per_round,
      client_steps=client_steps, seed=seed,
      clients_per_group=clients_per_group)
  trained = run_loop.train_process(
      process, name=scenario, output_dir=output_dir,
      hparams=dict(hparams, scenario=scenario), rounds=rounds,
      eval_every=eval_every, client_data_fn=client_data_fn,
      evaluation_fn=evaluation_fn, rounds_per_checkpoint=max(1, rounds // 5),
      metric_names=records.EVAL_FIELDS,
      train_columns=(records.TRAIN_LOSS_COLUMN,),
      initial={name: getattr(initial, name) for name in records.EVAL_FIELDS},
      progress=progress, rounds_per_call=rounds_per_call)
  rows = records.metrics_rows(
      scenario, trained.rows,
      {r: end - start for r, end in trained.round_ends.items()})
  summary = records.summarize(
      rows, rounds=rounds, target_auc=target_auc,
      num_examples=initial.num_examples,
      seconds=time.perf_counter() - start, build_seconds=build_seconds,
      metrics_path=trained.metrics_path)
  final = summary.final
  logging.info(
      '%s: %d rounds in %.1f s (build %.1f s): eval AUC %.3f, accuracy %.3f '
      '(positives %.3f, negatives %.3f)', scenario, rounds, summary.seconds,
      build_seconds, final.auc, final.accuracy, final.positive_accuracy,
      final.negative_accuracy)
  return rows, summary


def central_batch_sizes(task: ComparisonTask,
                        central_batch_size: Optional[int],
                        clients_per_round: int, client_steps: int,
                        client_batch_size: int) -> scenarios_lib.CentralBatchSizes:
  """|B_c| per mixed algorithm: `central_batch_size` for all, or with `None`
  the paper's rule; either capped at the central data (a paper's batch size
  on a smaller data set: the whole set), which is logged."""
  num_central = task.central_objective.num_examples
  if central_batch_size is None:
    return scenarios_lib.paper_central_batch_sizes(
        clients_per_round, client_steps, client_batch_size, num_central)
  if central_batch_size > num_central:
    logging.warning('central_batch_size %d exceeds the %d central examples: '
                    'capped at %d (the whole set every step).',
                    central_batch_size, num_central, num_central)
  capped = min(central_batch_size, num_central)
  return scenarios_lib.CentralBatchSizes(capped, capped, capped)


def _check_compare_arguments(task: ComparisonTask, *, rounds,
                             clients_per_round, client_steps,
                             client_batch_size, client_lr,
                             central_batch_size, examples_per_client,
                             eval_every, target_auc, seed, output_dir,
                             clients_per_group, rounds_per_call) -> None:
  """Raises TypeError or ValueError for an argument `compare` cannot take."""
  for name, value in (('rounds', rounds),
                      ('clients_per_round', clients_per_round),
                      ('client_steps', client_steps),
                      ('client_batch_size', client_batch_size),
                      ('eval_every', eval_every),
                      ('rounds_per_call', rounds_per_call)):
    check_int(name, value)
  check_int('seed', seed, minimum=0)
  check_int('clients_per_group', clients_per_group, minimum=0)
  if central_batch_size is not None:
    check_int('central_batch_size', central_batch_size)
  if examples_per_client is not None:
    check_int('examples_per_client', examples_per_client)
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


def _write_outputs(output_dir: str, rows, summaries, target_auc: float,
                   title: str, config) -> tuple[str, dict[str, str]]:
  """Writes the metrics CSV, plot, table and config; returns table, paths."""
  table = tables.format_table(summaries, target_auc)
  files = {
      'metrics': os.path.join(output_dir, METRICS_FILE),
      'plot': os.path.join(output_dir, PLOT_FILE),
      'table': os.path.join(output_dir, TABLE_FILE),
      'config': os.path.join(output_dir, CONFIG_FILE),
  }
  tables.write_metrics_csv(files['metrics'], rows)
  plots.plot_metrics(files['plot'], rows, target_auc, title=title)
  reports_lib.atomic_write_text(files['table'], table)
  reports_lib.atomic_write(
      files['config'],
      lambda f: f.write(json.dumps(config, indent=2) + '\n'))
  return table, files


def compare(
    task: ComparisonTask,
    model: tff.learning.models.FunctionalModel,
    *,
    scenarios: Sequence[str] = scenarios_lib.SCENARIOS,
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
    clients_per_group: int = grouping.AUTO,
    rounds_per_call: int = 1,
) -> ComparisonResult:
  """Runs the scenarios on any `ComparisonTask`; writes metrics, plot, table.

  Every scenario trains `model` from the same initial weights, on the same
  clients per round.

  Args:
    task: The `ComparisonTask`.
    model: The `tff.learning.models.FunctionalModel` to train.
    scenarios: Names from `scenarios.SCENARIOS`, run in this order.
    rounds: Training rounds per scenario.
    clients_per_round: S, clients sampled per round (the same in every
      scenario).
    client_steps: K, local SGD steps per client per round (clients cycle
      through their data).
    client_batch_size: |B_i|.
    client_lr: eta, the client learning rate; the central learning rate eta_c
      equals it, and server and merge learning rates are 1.
    central_batch_size: |B_c| for all mixed algorithms; `None` applies the
      paper's rule (`scenarios.paper_central_batch_sizes`).
    examples_per_client: Central examples Example Transfer sends to each
      client per round; `None` means the mean client data size.
    eval_every: Evaluate every this many rounds (and after the last one).
    target_auc: The eval AUC whose first crossing the table reports.
    seed: Seeds client sampling and central sampling.
    output_dir: Directory for the output files (created if missing).
    progress: Show a progress bar per scenario: `True`, `False`, or `None`
      for only when stderr is a terminal.
    with_diagnostics: Also report G~_t^2 and B~_t^2 (eq. 7) from Parallel
      Training and gradient transfer (an extra client upload per round).
    extra_config: More facts for `config.json` (e.g. the model).
    clients_per_group: Clients per CLIENTS member (`--clients_per_group`):
      0 one group per core, 1 per client,
      more: groups of that size; the results are the same. A task without
      `client_groups_fn` runs per client.
    rounds_per_call: Rounds in one TFF call between evaluations and
      checkpoints (`--rounds_per_call`, `tff_mixed.run_training`): the same
      numbers, faster where TFF's cost per call is a large share of a round.
      Not part of a run's configuration: a run resumes with any value.

  Returns:
    A `ComparisonResult`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If an argument is out of range.
  """
  scenarios = scenarios_lib.check_scenarios(scenarios)
  _check_compare_arguments(
      task, rounds=rounds, clients_per_round=clients_per_round,
      client_steps=client_steps, client_batch_size=client_batch_size,
      client_lr=client_lr, central_batch_size=central_batch_size,
      examples_per_client=examples_per_client, eval_every=eval_every,
      target_auc=target_auc, seed=seed, output_dir=output_dir,
      clients_per_group=clients_per_group, rounds_per_call=rounds_per_call)
  # Held to the end: a second comparison here, even of other scenarios,
  # would overwrite this one's table, metrics, config and plot.
  with run_loop.claimed_output_directory(os.fspath(output_dir),
                                        '`output_dir`') as output_dir:
    num_central = task.central_objective.num_examples
    batch_sizes = central_batch_sizes(task, central_batch_size,
                                      clients_per_round, client_steps,
                                      client_batch_size)
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
        with_diagnostics=with_diagnostics, clients_per_group=clients_per_group,
        **(extra_config or {}), **task.description)
    logging.info('Label imbalance comparison: %s', json.dumps(config))

    rows, summaries = [], []
    process_kwargs = dict(
        client_lr=client_lr, central_batch_sizes=batch_sizes,
        examples_per_client=examples_per_client,
        client_batch_size=client_batch_size, with_diagnostics=with_diagnostics)
    for scenario in scenarios:
      scenario_rows, summary = run_scenario(
          scenario, task, model, process_kwargs, rounds=rounds,
          clients_per_round=clients_per_round, client_steps=client_steps,
          eval_every=eval_every, target_auc=target_auc, seed=seed,
          progress=progress, output_dir=output_dir,
          clients_per_group=clients_per_group, rounds_per_call=rounds_per_call,
          # What a resumed scenario must share with its checkpoints; more
          # rounds, other scenarios or evaluation settings may differ.
          hparams={k: v for k, v in config.items()
                   if k not in ('scenarios', 'rounds', 'eval_every',
                                'target_auc', 'with_diagnostics')})
      rows.extend(scenario_rows)
      summaries.append(summary)

    table, files = _write_outputs(output_dir, rows, summaries, target_auc,
                                  task.title, config)
    return ComparisonResult(rows=rows, summaries=summaries, table=table,
                            files=files, config=dict(config))
