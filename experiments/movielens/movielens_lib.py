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
validation users). The earlier forms stay available by name
(`movielens_config.Config`). Reported per evaluation: recall@10 over all
movies and the client loss on the test users (the column `hinge_loss`:
whichever hinge the run trains with); per scenario the bytes each client
receives and sends (read off the compiled computation) and its training
FLOPs per round (TF's profiler on one local step), beside the paper's
formulas (appendix B.3, table 11).

This module runs the scenarios and writes their tables; the settings live
in `movielens_config`, each scenario's process, client data and evaluation
in `movielens_process`.

Rounds run in the fast simulation mode by default (`clients_per_group`,
`tff_mixed.simulation`): the cohort is split into groups of clients, each
trained in one TF computation that reads its members' datasets from
their ids (`movielens_process.client_dataset_fn`, the same function the
per-client path traces), with the same model and metrics;
`clients_per_group=1` is one client per CLIENTS member. Costs are always
measured on the per-client process: what one client of a deployment
receives and sends.
"""

from collections.abc import Mapping, Sequence
import json
import math
import os
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff

from experiments.common import bgd_diagnostics
from experiments.common import grouping
from experiments.common import plots
from experiments.common import results as results_lib
from experiments.common import run_loop
from experiments.movielens import movielens_config as config_lib
from experiments.movielens import movielens_process as process_lib
from experiments.movielens import movielens_records as records_lib
from tff_mixed.models import dual_encoder
from tff_mixed.tasks import movielens
from tff_mixed.training import reports as reports_lib


METRICS_FILE = 'metrics.csv'
# `process_lib.evaluate`'s metrics, in a record's column order.
EVAL_METRICS = records_lib.METRICS_COLUMNS[1:]
PLOT_FILE = 'recall.png'
TABLE_FILE = 'results.txt'
COST_FILE = 'costs.txt'
CONFIG_FILE = 'config.json'
RESULTS_SECTION = 'movielens'


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
  costs: config_lib.Costs
  round_seconds: float
  mean_keys: float
  seconds: float = float('nan')
  resumed_from: int = 0
  diagnostics: Optional[bgd_diagnostics.Diagnostics] = None


def run_scenario(scenario: str, data, config: config_lib.Config,
                 output_dir: str, progress: Optional[bool],
                 with_diagnostics: bool, mean_keys: float,
                 rounds_per_call: int = 1) -> ScenarioResult:
  """Trains one scenario with the shared resumable runner.

  `mean_keys`: the paper's n (`process_lib.mean_distinct_keys`).
  `rounds_per_call`: as in `tff_mixed.run_training` (the same numbers).
  `with_diagnostics` (a mixed scenario): report table 4's G~^2 and B~^2,
  broadcasting the whole table (see `build_process`).
  """
  groups = process_lib.client_groups_for(scenario, data, config)
  inner = process_lib.build_process(
      scenario, data, config, select=not with_diagnostics,
      client_groups=groups, with_diagnostics=with_diagnostics)
  process = inner if groups is not None else (
      tff.simulation.compose_dataset_computation_with_learning_process(
          process_lib.dataset_computation(
              data, config, fedavg=scenario == config_lib.BASELINE), inner))
  sample = tff.simulation.build_uniform_sampling_fn(
      process_lib.train_user_names(data), random_seed=config.seed)
  contexts, labels = process_lib.evaluation_arrays(data, config)

  def client_data_fn(round_num):
    users = sample(round_num - 1, config.clients_per_round)
    ids = [f'{round_num}|{u}' for u in users]
    if groups is None:
      return ids
    return grouping.group_ids(ids, config.clients_per_group, np.str_)

  def evaluation_fn(weights):
    return process_lib.evaluate(weights, contexts, labels, config)

  trained = run_loop.train_process(
      process, name=scenario, output_dir=output_dir,
      hparams=run_loop.fingerprint(config._asdict(), scenario),
      rounds=config.rounds, eval_every=config.eval_every,
      client_data_fn=client_data_fn, evaluation_fn=evaluation_fn,
      # At most 50 rounds apart: an interrupted baseline round costs ~19 s
      # at S = 100, and a long run should lose minutes, not hours.
      rounds_per_checkpoint=max(1, min(config.rounds // 5, 50)),
      metric_names=EVAL_METRICS, progress=progress,
      rounds_per_call=rounds_per_call)
  rows = trained.rows
  # What one client moves: the per-client process's types (a group
  # uploads its members' rows scattered into the whole table).
  per_client = inner if groups is None else process_lib.build_process(
      scenario, data, config, select=not with_diagnostics,
      with_diagnostics=with_diagnostics)
  costs = process_lib.measure_costs(scenario, per_client, data, config,
                                    mean_keys)
  logging.info('%s: recall@10 %.4f after %d rounds; per client %.1f KB down, '
               '%.1f KB up, %.3f Mflop', scenario, rows[-1]['recall_at_10'],
               config.rounds, costs.down_bytes / 1e3, costs.up_bytes / 1e3,
               costs.flops / 1e6)
  diagnostics = (bgd_diagnostics.read_diagnostics(scenario,
                                                 trained.metrics_path)
                 if with_diagnostics else None)
  # Seconds per round trained in this run (evaluation included).
  return ScenarioResult(scenario, rows, costs, trained.seconds_per_round,
                        mean_keys, trained.seconds, trained.resumed_from,
                        diagnostics)


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
  base = next((r.costs for r in results if r.scenario == config_lib.BASELINE),
              None)
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
              if reference and c.scenario != config_lib.BASELINE else '-')

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
    style = '--' if r.scenario == config_lib.BASELINE else '-'
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
  config: config_lib.Config


def record_settings(config: config_lib.Config,
                    description: str) -> dict[str, Any]:
  """What a scenario's record must share with a request to stand for it:
  the settings that change its numbers (`config` but its rounds and client
  grouping, which gives the same numbers; the model's forms and lambda
  included) and the data. The margin is the one the loss uses (the form's
  own where `config.margin` is None), so a record says what it trained."""
  settings = config._asdict()
  del settings['rounds'], settings['clients_per_group']
  # The budget the clients get, however it was asked for.
  settings['keys_per_client'] = config_lib.key_budget(config)
  settings['margin'] = (dual_encoder.MARGINS[config.client_loss]
                        if config.margin is None else config.margin)
  return dict(settings, data=description)


def load_data(ratings_file: str, config: config_lib.Config,
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


def _record(result: ScenarioResult, config: config_lib.Config,
            settings: dict[str, Any],
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


def remeasured(record: records_lib.ScenarioRecord, mean_keys: float,
               num_movies: int) -> records_lib.ScenarioRecord:
  """`record` with n = `mean_keys` and the paper's communication term
  recomputed from it; its measured bytes, FLOPs and rows unchanged."""
  costs = dict(record.costs, paper_comm_bytes=config_lib.paper_comm_bytes(
      record.scenario, mean_keys, num_movies,
      record.settings['embedding_dim']))
  return record._replace(mean_keys=mean_keys, costs=costs)


def result_from_record(record: records_lib.ScenarioRecord) -> ScenarioResult:
  """A finished scenario read back (no round trained in this invocation)."""
  return ScenarioResult(
      record.scenario, record.rows, config_lib.Costs(**record.costs),
      float('nan'), record.mean_keys, 0.0, record.rounds, record.diagnostics and
      bgd_diagnostics.Diagnostics(**record.diagnostics))


def run_experiment(ratings_file: str, *,
                   scenarios: Sequence[str] = config_lib.SCENARIOS,
                   config: config_lib.Config = config_lib.Config(),
                   output_dir: str, skip_malformed: bool = False,
                   progress: Optional[bool] = None,
                   scenario_rounds: Optional[Mapping[str, int]] = None,
                   records_dir: Optional[str] = None,
                   command: str = '',
                   with_diagnostics: bool = False,
                   rounds_per_call: int = 1) -> ExperimentResult:
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
    rounds_per_call: Rounds in one TFF call between evaluations and
      checkpoints (`--rounds_per_call`, `tff_mixed.run_training`): the same
      numbers; neither a record's settings nor a checkpoint's fingerprint.

  Raises:
    FileNotFoundError, ValueError: For a missing or malformed ratings file
      or bad settings (messages name the file, line or argument).
  """
  unknown = [s for s in scenarios if s not in config_lib.SCENARIOS]
  if unknown or not scenarios or len(set(scenarios)) != len(scenarios):
    raise ValueError(
        f'`scenarios` must be distinct names from {config_lib.SCENARIOS}, '
        f'got {list(scenarios)}.')
  if with_diagnostics and config_lib.BASELINE in scenarios:
    raise ValueError('The baseline has no (G, B)-BGD diagnostics: it mixes '
                     'nothing at the server.')
  scenario_rounds = dict(scenario_rounds or {})
  for scenario, rounds in scenario_rounds.items():
    if scenario not in config_lib.SCENARIOS or isinstance(rounds, bool) or not (
        isinstance(rounds, int) and rounds >= 1):
      raise ValueError('`scenario_rounds` must map names from '
                       f'{config_lib.SCENARIOS} to positive ints, got '
                       f'{scenario!r}: {rounds!r}.')
  for name in ('rounds', 'clients_per_round', 'client_batch_size',
               'client_steps', 'embedding_dim', 'context_length',
               'keys_per_client', 'eval_every'):
    value = getattr(config, name)
    if name == 'keys_per_client' and value is None:
      continue  # `config_lib.key_budget`'s default.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  grouping.check(config.clients_per_group)
  for name in ('client_lr', 'parallel_training_lr'):
    value = getattr(config, name)
    if not math.isfinite(value):
      raise ValueError(f'`{name}` must be finite, got {value}.')
    if value <= 0:
      raise ValueError(f'`{name}` must be positive, got {value}.')
  config_lib.check_forms(config)
  # Before the data: a bad directory should not cost the load. Held to the
  # end: a second run here, even of other scenarios, would overwrite this
  # one's tables, metrics and config.
  with run_loop.claimed_output_directory(output_dir, '`output_dir`'):
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
    # n depends on the data and the settings, not on training (every
    # scenario and horizon has the same).
    mean_keys = process_lib.mean_distinct_keys(data, config)
    if records_dir is not None:
      records_lib.check_settings(records_dir, settings)
      # Records that counted n otherwise take this count, so that one
      # section compares every row on the same n.
      for record in records_lib.read_records(records_dir):
        if record.mean_keys != mean_keys:
          records_lib.write_record(records_dir, remeasured(
              record, mean_keys, data.num_movies))
    results = []
    for scenario in scenarios:
      scenario_config = config._replace(
          rounds=scenario_rounds.get(scenario, config.rounds))
      previous = (records_lib.read_record(records_dir, scenario)
                  if records_dir is not None else None)
      if (previous is not None
          and records_lib.same_settings(previous, settings)
          and previous.rounds == scenario_config.rounds):
        logging.info('%s: finished earlier (%d rounds), read from %s',
                     scenario, previous.rounds, records_dir)
        results.append(result_from_record(previous))
        continue
      result = run_scenario(scenario, data, scenario_config, output_dir,
                            progress, with_diagnostics, mean_keys,
                            rounds_per_call=rounds_per_call)
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
      f'{c.client_batch_size}, K = {c.client_steps}, eta = {c.client_lr} '
      f'(Parallel Training: {c.parallel_training_lr}), '
      f'eta_s = eta_m = 1, w_f = {c.federated_weight}, w_c = '
      f'{c.central_weight}, d = {c.embedding_dim}, context {c.context_length}'
      f', {config_lib.key_budget(c)} keys per client, FedAdam server lr '
      f'{c.fedadam_lr}, seed {c.seed}. The paper trains 2,000 rounds on '
      'MovieLens 1M and reports recall@10 ~0.1 for every algorithm.',
      f'* Model: {config_lib.forms_text(c._asdict())}.',
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
