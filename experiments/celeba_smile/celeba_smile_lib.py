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
"""The CelebA smile classifier experiment (arXiv:2205.13655, section 4.1).

Federated clients hold only smiling faces, the datacenter only non-smiling
ones (`tff_mixed.tasks.celeba_smile`); the scenarios, the comparison loop, CSV,
plot and table are those of the digits label-imbalance job
(`experiments.common.comparison`), run on CelebA with the paper's model
and hyperparameters (appendix B.2.1, tables 5-6):

*   a fully connected network, one hidden layer of 64 ReLU units, binary
    cross-entropy;
*   S = 100 clients per round, client batch 5, K = 2, eta = 0.01, eta_s = 1,
    eta_c = eta, eta_m = 1, w_f = w_c = 0.5, SGD everywhere;
*   central batch 1000 (1-way GT) or 500 (PT, 2-way GT), which is the rule
    `paper_central_batch_sizes` applies (K S |B_i| and S |B_i|).

Also here: the (G, B)-BGD diagnostics of the paper's table 4 (max G~_t^2 and
B~_t^2 over rounds 10-100) and the two sweeps of appendix B.4 (central batch
size for 1-way and 2-way GT; eta traded against K).
"""

from collections.abc import Sequence
import inspect
import math
import os
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np

from experiments.common import advising
from experiments.common import bgd_diagnostics
from experiments.common import comparison as comparison_lib
from experiments.common import grouping
from experiments.common import plots
from experiments.common import records as records_lib
from experiments.common import results as results_lib
from experiments.common import scenarios as scenarios_lib
from experiments.common import tables
import tff_mixed
from tff_mixed.models import dense
from tff_mixed.tasks import celeba_smile as celeba
from tff_mixed.training import reports as reports_lib


SCENARIOS = scenarios_lib.SCENARIOS
HIDDEN_UNITS = (64,)
RESULTS_SECTION = 'celeba_smile'
SWEEP_RESULTS_SECTION = 'celeba_smile_sweeps'
# The paper's table 4 (`bgd_diagnostics`): maxima over rounds 10 to 100.
DIAGNOSTIC_ROUNDS = bgd_diagnostics.ROUNDS
Diagnostics = bgd_diagnostics.Diagnostics
format_diagnostics = bgd_diagnostics.format_diagnostics
# `standardize_inputs`: the model sees 2 x - 1, pixels in [-1, 1] instead of
# [0, 1]. A fixed shift and scale, not statistics of some split, so that no
# data choice (clients, server, evaluation) enters the model: what matters
# for the sign of the gradients' inner product (`bgd_inputs_lib`) is that
# the inputs take both signs, which centring on the middle of the pixel
# range gives.
STANDARDIZED_SHIFT = 0.5
STANDARDIZED_SCALE = 0.5
_DIAGNOSED = (scenarios_lib.PARALLEL_TRAINING,
              scenarios_lib.ONE_WAY_GT, scenarios_lib.TWO_WAY_GT)


class ExperimentResult(NamedTuple):
  """What `run_experiment` returns.

  Attributes:
    comparison: The `comparison_lib.ComparisonResult`.
    diagnostics: One `Diagnostics` per diagnosed scenario (empty without
      `with_diagnostics`).
    data_description: One sentence describing the data the run used.
  """

  comparison: comparison_lib.ComparisonResult
  diagnostics: list[Diagnostics]
  data_description: str


def comparison_task(
    task: 'celeba.CelebASmileTask',
    model) -> comparison_lib.ComparisonTask:
  """The CelebA smile task as a `comparison_lib.ComparisonTask`."""
  return comparison_lib.ComparisonTask(
      title=(f'CelebA {task.label}: clients hold only {task.label} faces, '
             'the datacenter only the others'),
      num_clients=task.num_clients,
      central_objective=tff_mixed.central_data_objective(
          task.central_store, name=f'not_{task.label}'),
      mean_client_examples=float(np.mean(task.num_client_examples)),
      client_datasets_fn=task.client_datasets,
      evaluate_fn=lambda weights: task.evaluate(model, weights),
      description=dict(
          label=task.label,
          num_clients=task.num_clients,
          num_client_examples=int(sum(task.num_client_examples)),
          num_oracle_client_examples=int(sum(
              task.num_oracle_client_examples)),
          num_central_examples=task.central_store.num_examples,
          num_eval_examples=len(task.eval_labels),
          eval_positive_fraction=float(np.mean(task.eval_labels))),
      dataset_computation_fn=task.dataset_computation,
      client_ids_fn=lambda ids, round_num: [
          task.client_id(i, round_num) for i in ids],
      client_groups_fn=task.client_groups)


def read_diagnostics(
    summaries: Sequence[records_lib.ScenarioSummary],
    rounds: tuple[int, int] = DIAGNOSTIC_ROUNDS) -> list[Diagnostics]:
  """Max G~^2 and B~^2 per mixed scenario over `rounds` (inclusive), read
  from the runner's per-round CSVs (`bgd_diagnostics.read_diagnostics`).

  Returns:
    One `Diagnostics` per scenario that reported them.
  """
  found = (bgd_diagnostics.read_diagnostics(s.scenario, s.metrics_path,
                                            rounds)
           for s in summaries
           if s.scenario in _DIAGNOSED and s.metrics_path)
  return [d for d in found if d is not None]


def run_experiment(
    *,
    cache_dir: Optional[str] = None,
    work_dir: Optional[str] = None,
    download: bool = False,
    label: str = 'smiling',
    scenarios: Sequence[str] = SCENARIOS,
    rounds: int = 100,
    clients_per_round: int = 100,
    client_steps: int = 2,
    client_batch_size: int = 5,
    client_lr: float = 0.01,
    central_batch_size: Optional[int] = None,
    examples_per_client: Optional[int] = None,
    raw_clients_per_client: int = 3,
    hidden_units: Sequence[int] = HIDDEN_UNITS,
    eval_every: int = 5,
    target_auc: float = 0.9,
    max_eval_examples: Optional[int] = None,
    with_diagnostics: bool = False,
    standardize_inputs: bool = False,
    seed: int = 0,
    output_dir: str,
    progress: Optional[bool] = None,
    clients_per_group: int = grouping.AUTO,
    rounds_per_call: int = 1,
) -> ExperimentResult:
  """Runs the CelebA smile scenarios; writes metrics, plot and tables.

  Args:
    cache_dir: Directory of TFF's `celeba.sqlite` (`None`: `~/.tff`).
    work_dir: Cache of the central store, label counts and eval arrays
      (`None`: next to the database).
    download: Let TFF download CelebA if it is missing.
    label: The attribute used as the label (`smiling` in the paper).
    scenarios: Names from `SCENARIOS`, run in this order.
    rounds: Training rounds per scenario.
    clients_per_round: S.
    client_steps: K, local steps per client per round.
    client_batch_size: |B_i|.
    client_lr: eta (= eta_c); server and merge learning rates are 1.
    central_batch_size: |B_c| for every mixed algorithm; `None`: the
      paper's 1000 (1-way GT) / 500 (PT, 2-way GT) rule.
    examples_per_client: Example Transfer's central examples per client and
      round; `None`: the mean federated client size.
    raw_clients_per_client: Celebrities per composite federated client.
    hidden_units: Hidden layer widths of the classifier.
    eval_every: Evaluate every this many rounds (and after the last).
    target_auc: The AUC whose first crossing the table reports.
    max_eval_examples: Evaluate on a seeded sample of this many images;
      `None`: all ~20,000.
    with_diagnostics: Report G~_t^2 / B~_t^2 (an extra client upload).
    standardize_inputs: The model sees pixels shifted and scaled to [-1, 1]
      (`STANDARDIZED_SHIFT`, `STANDARDIZED_SCALE`) instead of [0, 1].
    seed: Seeds the grouping, model initialization and all sampling.
    output_dir: Directory for the outputs.
    progress: Progress bars (`None`: on terminals only).
    clients_per_group: Clients per CLIENTS member (`--clients_per_group`;
      0: one group per core, 1: per client); the same results.
    rounds_per_call: Rounds in one TFF call (`--rounds_per_call`); the same
      results.

  Returns:
    An `ExperimentResult`.

  Raises:
    tff_mixed.tasks.celeba_smile.DataNotFoundError: If the data are missing.
    TypeError, ValueError: For bad arguments or data.
  """
  task, model = _task_and_model(
      cache_dir=cache_dir, work_dir=work_dir, download=download, label=label,
      raw_clients_per_client=raw_clients_per_client,
      client_batch_size=client_batch_size,
      max_eval_examples=max_eval_examples, seed=seed,
      hidden_units=hidden_units, standardize_inputs=standardize_inputs)
  comparison = comparison_lib.compare(
      comparison_task(task, model), model, scenarios=scenarios,
      rounds=rounds, clients_per_round=clients_per_round,
      client_steps=client_steps, client_batch_size=client_batch_size,
      client_lr=client_lr, central_batch_size=central_batch_size,
      examples_per_client=examples_per_client, eval_every=eval_every,
      target_auc=target_auc, seed=seed, output_dir=output_dir,
      progress=progress, with_diagnostics=with_diagnostics,
      clients_per_group=clients_per_group, rounds_per_call=rounds_per_call,
      extra_config=dict(
          hidden_units=list(hidden_units),
          raw_clients_per_client=raw_clients_per_client,
          database=celeba.database_path(cache_dir),
          **({'standardize_inputs': True} if standardize_inputs else {})))
  diagnostics = read_diagnostics(comparison.summaries)
  if diagnostics:
    path = os.path.join(output_dir, 'diagnostics.txt')
    reports_lib.atomic_write_text(path, format_diagnostics(
        diagnostics))
    comparison.files['diagnostics'] = path
  config = comparison.config
  description = (
      f'TFF CelebA database `{config["database"]}`: '
      f'{config["num_clients"]} federated clients (composites of '
      f'{raw_clients_per_client} celebrities) holding '
      f'{config["num_client_examples"]} {task.label} images; '
      f'{config["num_central_examples"]} non-{task.label} training images '
      f'at the server; evaluation on {config["num_eval_examples"]} images of '
      'the evaluation celebrities '
      f'({100 * config["eval_positive_fraction"]:.1f}% {task.label})')
  return ExperimentResult(comparison, diagnostics, description)


def _task_and_model(*, cache_dir, work_dir, download, label,
                    raw_clients_per_client, client_batch_size,
                    max_eval_examples, seed, hidden_units,
                    standardize_inputs=False):
  """The CelebA smile task and its classifier."""
  task = celeba.build_task(
      cache_dir, work_dir=work_dir, label=label, raw_clients_per_client=
      raw_clients_per_client, client_batch_size=client_batch_size,
      max_eval_examples=max_eval_examples, seed=seed, download=download)
  model = dense.build_binary_classifier(
      celeba.NUM_FEATURES, hidden_units=tuple(hidden_units), seed=seed,
      **(dict(input_shift=STANDARDIZED_SHIFT, input_scale=STANDARDIZED_SCALE)
         if standardize_inputs else {}))
  return task, model


def run_advice(advise_rounds: int, **experiment_kwargs):
  """The algorithm advisor on CelebA smiles (`--advise_rounds`).

  `advising.advise_comparison` on the task `run_experiment` would build
  from the same keyword arguments (those only the comparison reads, such
  as `scenarios` or `eval_every`, are ignored).

  Returns:
    `(advice, {kind: path})`.
  """
  kwargs = dict(_RUN_DEFAULTS, **experiment_kwargs)
  task, model = _task_and_model(**{k: kwargs[k] for k in _TASK_ARGS})
  return advising.advise_comparison(
      comparison_task(task, model), model, rounds=advise_rounds,
      **{k: kwargs[k] for k in _ADVICE_ARGS})


# `run_experiment`'s defaults and the arguments `run_advice` passes on.
_RUN_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(run_experiment).parameters.items()
    if parameter.default is not inspect.Parameter.empty}
_TASK_ARGS = ('cache_dir', 'work_dir', 'download', 'label',
              'raw_clients_per_client', 'client_batch_size',
              'max_eval_examples', 'seed', 'hidden_units',
              'standardize_inputs')
_ADVICE_ARGS = ('clients_per_round', 'client_steps', 'client_batch_size',
                'client_lr', 'central_batch_size', 'seed', 'output_dir',
                'progress', 'clients_per_group')


def results_markdown(result: ExperimentResult, command: str) -> str:
  """The RESULTS.md section of a run: data, machine, date, tables."""
  config = result.comparison.config
  lines = [
      '## CelebA smile classifier (arXiv:2205.13655, section 4.1)',
      '',
      f'Generated on {results_lib.utc_now()} by `{command}`.',
      '',
      f'* Machine: {results_lib.machine_description()}.',
      f'* Data: {result.data_description}.',
      f'* Training: {config["rounds"]} rounds, S = '
      f'{config["clients_per_round"]}, K = {config["client_steps"]}, batch '
      f'{config["client_batch_size"]}, eta = eta_c = {config["client_lr"]}, '
      'eta_s = eta_m = 1, w_f = w_c = 0.5, SGD, central batch sizes '
      f'{config["central_batch_sizes"]}, model 21168-'
      f'{"-".join(map(str, config["hidden_units"]))}-1, seed '
      f'{config["seed"]}.',
      '',
      '```',
      result.comparison.table.rstrip('\n'),
      '```',
      '',
      *results_lib.outcome_lines(result.comparison),
  ]
  if result.diagnostics:
    lines += [
        '',
        '(G, B)-BGD estimates (eq. 7; the paper\'s table 4 reports max G~^2 = '
        '49.04 and max B~^2 = 1.26 over rounds 10-100 with K = 1):',
        '',
        '```',
        format_diagnostics(result.diagnostics).rstrip('\n'),
        '```',
    ]
  return '\n'.join(lines)


class SweepPoint(NamedTuple):
  """One configuration of a sweep: a label and `run_experiment` overrides."""

  label: str
  scenario: str
  overrides: dict[str, Any]


def central_batch_sweep(
    batch_sizes: Sequence[int],
    scenarios: Sequence[str] = (scenarios_lib.ONE_WAY_GT,
                                scenarios_lib.TWO_WAY_GT),
) -> list[SweepPoint]:
  """The |B_c| sweep of the paper's figures 7-8 (appendix B.4.1)."""
  return [SweepPoint(f'{s} |B_c|={b}', s, dict(central_batch_size=int(b)))
          for s in scenarios for b in batch_sizes]


def lr_steps_sweep(
    lr_steps: Sequence[tuple[float, int]],
    scenarios: Sequence[str] = (scenarios_lib.PARALLEL_TRAINING,
                                scenarios_lib.ONE_WAY_GT,
                                scenarios_lib.TWO_WAY_GT),
) -> list[SweepPoint]:
  """The eta-for-K trade of the paper's figure 9 (appendix B.4.2).

  With `central_batch_size` left to the paper's rule, 1-way GT's central
  batch grows with K, as the paper prescribes for it.
  """
  return [SweepPoint(f'{s} eta={lr:g} K={k}', s,
                     dict(client_lr=float(lr), client_steps=int(k)))
          for s in scenarios for lr, k in lr_steps]


def parse_lr_steps(values: Sequence[str]) -> list[tuple[float, int]]:
  """Parses `['0.02:1', '0.01:2']` into `[(0.02, 1), (0.01, 2)]`."""
  pairs = []
  for value in values:
    try:
      lr, steps = value.split(':')
      pair = (float(lr), int(steps))
    except ValueError:
      raise ValueError(f'Each eta:K pair must look like 0.01:2, got '
                       f'{value!r}.') from None
    if not (math.isfinite(pair[0]) and pair[0] > 0 and pair[1] >= 1):
      raise ValueError(f'eta must be positive and K >= 1, got {value!r}.')
    pairs.append(pair)
  if not pairs:
    raise ValueError('Give at least one eta:K pair.')
  return pairs


def run_sweep(points: Sequence[SweepPoint], *, output_dir: str,
              **experiment_kwargs) -> tuple[str, str]:
  """Runs each sweep point and writes a combined table and AUC plot.

  Each point runs in `output_dir/<index>` (resumable); the combined table
  lists each point's final and tail AUC and rounds to the target.

  Args:
    points: The `SweepPoint`s.
    output_dir: Directory for the outputs.
    **experiment_kwargs: Passed to `run_experiment` for every point (the
      points' overrides win).

  Returns:
    `(table, plot_path)`.
  """
  if not points:
    raise ValueError('The sweep has no points.')
  rows, summaries = [], []
  for i, point in enumerate(points):
    logging.info('Sweep point %d/%d: %s', i + 1, len(points), point.label)
    kwargs = dict(experiment_kwargs, **point.overrides)
    result = run_experiment(scenarios=[point.scenario],
                            output_dir=os.path.join(output_dir, f'{i:02d}'),
                            **kwargs)
    rows += [r._replace(scenario=point.label) for r in result.comparison.rows]
    summaries += [s._replace(scenario=point.label)
                  for s in result.comparison.summaries]
  target_auc = experiment_kwargs.get('target_auc', 0.9)
  table = tables.format_table(summaries, target_auc)
  plot_path = os.path.join(output_dir, comparison_lib.PLOT_FILE)
  plots.plot_metrics(plot_path, rows, target_auc,
                                   title='CelebA smile sweep')
  tables.write_metrics_csv(
      os.path.join(output_dir, comparison_lib.METRICS_FILE), rows)
  reports_lib.atomic_write_text(
      os.path.join(output_dir, comparison_lib.TABLE_FILE), table)
  return table, plot_path

