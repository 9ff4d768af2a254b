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
classifier of Augenstein et al., arXiv:2205.13655, section 4.1. The scenarios
(FL only, the mixed FL algorithms, Example Transfer, the oracle) and the
comparison loop are the library's (`experiments.common`); this module holds
what is specific to the digits: the task as a `ComparisonTask`, its model,
`run_comparison` and its section of RESULTS.md.
"""

from collections.abc import Sequence
from typing import Optional

import numpy as np
import tensorflow_federated as tff

from experiments.common import advising
from experiments.common import comparison
from experiments.common import grouping
from experiments.common import results
from experiments.common import scenarios as scenarios_lib
import tff_mixed
from tff_mixed.models import dense
from tff_mixed.tasks import digits_label_imbalance

task_lib = digits_label_imbalance

HIDDEN_UNITS = (32,)


def digits_comparison_task(
    task: task_lib.LabelImbalanceTask,
    model: tff.learning.models.FunctionalModel) -> comparison.ComparisonTask:
  """The digits label-imbalance task as a `ComparisonTask`."""

  def client_datasets_fn(client_ids, oracle, round_num):
    del round_num  # The digits clients were shuffled once, at build time.
    datasets = (task.oracle_client_datasets if oracle
                else task.client_datasets)
    return [datasets[i] for i in client_ids]

  # Built once: each holds its clients' examples as one array per leaf.
  groups = {oracle: task.client_groups(oracle) for oracle in (False, True)}

  return comparison.ComparisonTask(
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
          positive_digits=list(task.positive_digits)),
      client_groups_fn=groups.__getitem__)


def run_comparison(
    *,
    scenarios: Sequence[str] = scenarios_lib.SCENARIOS,
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
    clients_per_group: int = grouping.AUTO,
    rounds_per_call: int = 1,
) -> comparison.ComparisonResult:
  """Runs the scenarios on the digits task; writes metrics, plot and table.

  Builds the digits task and its MLP, then runs `comparison.compare`, whose
  arguments these are (see there), except:

  Args:
    num_clients: Number of federated clients.
    seed: Seeds the task and the model initialization too.

  Returns:
    A `comparison.ComparisonResult`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If an argument is out of range.
  """
  comparison.check_int('num_clients', num_clients)
  comparison.check_int('client_batch_size', client_batch_size)
  comparison.check_int('seed', seed, minimum=0)
  if isinstance(clients_per_round, int) and clients_per_round > num_clients:
    raise ValueError(f'`clients_per_round` ({clients_per_round}) must be at '
                     f'most `num_clients` ({num_clients}).')
  scenarios_lib.check_scenarios(scenarios)
  task, model = _task_and_model(num_clients, client_batch_size, seed)
  return comparison.compare(
      task, model, scenarios=scenarios,
      rounds=rounds, clients_per_round=clients_per_round,
      client_steps=client_steps, client_batch_size=client_batch_size,
      client_lr=client_lr, central_batch_size=central_batch_size,
      examples_per_client=examples_per_client, eval_every=eval_every,
      target_auc=target_auc, seed=seed, output_dir=output_dir,
      progress=progress, clients_per_group=clients_per_group,
      rounds_per_call=rounds_per_call, extra_config=dict(
          num_clients=num_clients, hidden_units=list(HIDDEN_UNITS)))


def _task_and_model(num_clients, client_batch_size, seed):
  """The digits `ComparisonTask` and its MLP."""
  task = task_lib.build_task(num_clients=num_clients,
                             client_batch_size=client_batch_size, seed=seed)
  model = dense.build_binary_classifier(
      task_lib.NUM_FEATURES, hidden_units=HIDDEN_UNITS, seed=seed)
  return digits_comparison_task(task, model), model


def run_advice(*, rounds: int, clients_per_round: int, client_steps: int,
               client_batch_size: int, client_lr: float,
               central_batch_size: Optional[int] = None,
               num_clients: int = 60, seed: int = 0, output_dir: str,
               progress: Optional[bool] = None,
               clients_per_group: int = grouping.AUTO):
  """The algorithm advisor on the digits task (`--advise_rounds`).

  `advising.advise_comparison` with the digits task and model; arguments as
  in `run_comparison`.

  Returns:
    `(advice, {kind: path})`.
  """
  comparison.check_int('num_clients', num_clients)
  comparison.check_int('client_batch_size', client_batch_size)
  comparison.check_int('seed', seed, minimum=0)
  task, model = _task_and_model(num_clients, client_batch_size, seed)
  return advising.advise_comparison(
      task, model, rounds=rounds, clients_per_round=clients_per_round,
      client_steps=client_steps, client_batch_size=client_batch_size,
      client_lr=client_lr, central_batch_size=central_batch_size, seed=seed,
      output_dir=output_dir, progress=progress,
      clients_per_group=clients_per_group)


def write_results_markdown(path: str, result: comparison.ComparisonResult,
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
      f'Generated on {results.utc_now()} by `{command}`.',
      '',
      f'* Machine: {results.machine_description()}.',
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
      f'{config["seed"]}. FL-only and oracle are FedAvg (TFF\'s '
      '`build_weighted_fed_avg` per client; `tff_mixed.build_fedavg`, equal '
      'to it, in client groups: `--clients_per_group='
      f'{config["clients_per_group"]}`).',
      '',
      '```',
      result.table.rstrip('\n'),
      '```',
      '',
      *results.outcome_lines(result),
      '',
      f'Per-round metrics: `{result.files["metrics"]}`; plot: '
      f'`{result.files["plot"]}` (not committed: rerun to get them).',
  ]
  results.write_results_section(path, 'label_imbalance_digits',
                                '\n'.join(lines))
