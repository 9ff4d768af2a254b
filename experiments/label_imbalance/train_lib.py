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
"""One resumable training run of one scenario on the digits task.

Where `label_imbalance_lib.run_comparison` compares every scenario in one go,
this trains a single one through the shared runner (`tff_mixed.run_training`):
checkpoints and automatic resume, CSV and TensorBoard metrics, periodic
evaluation, divergence detection, an optional differentially private
aggregator, and optional execution on remote TFF workers. By default the
cohort trains in client groups (`--clients_per_group`), with the same
results; DP runs in groups too (each group clips, and with
`tff.learning.dp_aggregator` zeroes, its members' updates).
"""

from typing import Optional, Sequence

import tensorflow_federated as tff

from experiments.common import comparison
from experiments.common import grouping
from experiments.common import scenarios as scenarios_lib
from experiments.label_imbalance import label_imbalance_lib
import tff_mixed
from tff_mixed.models import dense
from tff_mixed import remote as remote_lib
from tff_mixed.tasks import digits_label_imbalance
from tff_mixed.training import runner as runner_lib

task_lib = digits_label_imbalance


def build_dp_aggregator(noise_multiplier: float, clip_norm: float,
                        clients_per_round: int):
  """DP-FedAvg aggregation of client updates, or `None` when off.

  Args:
    noise_multiplier: Gaussian noise stddev / clip norm; 0 turns DP off.
    clip_norm: A fixed L2 clip of client updates; 0 uses TFF's adaptive
      clipping (`tff.learning.dp_aggregator`).
    clients_per_round: The cohort size, which scales the noise.

  Returns:
    An `UnweightedAggregationFactory` or `None`.
  """
  if noise_multiplier < 0 or clip_norm < 0:
    raise ValueError('`dp_noise_multiplier` and `dp_clip_norm` must be '
                     f'non-negative, got {noise_multiplier} and {clip_norm}.')
  if noise_multiplier == 0:
    if clip_norm > 0:
      raise ValueError('`dp_clip_norm` needs `dp_noise_multiplier` > 0.')
    return None
  if clip_norm > 0:
    return tff.aggregators.DifferentiallyPrivateFactory.gaussian_fixed(
        noise_multiplier=noise_multiplier, clients_per_round=clients_per_round,
        clip=clip_norm)
  return tff.learning.dp_aggregator(noise_multiplier=noise_multiplier,
                                    clients_per_round=clients_per_round)


def train(
    *,
    scenario: str,
    root_output_dir: str,
    experiment_name: str,
    total_rounds: int,
    clients_per_round: int = 10,
    client_steps: int = 10,
    client_batch_size: int = 8,
    client_lr: float = 0.25,
    num_clients: int = 60,
    seed: int = 0,
    rounds_per_checkpoint: int = 1,
    rounds_per_evaluation: int = 5,
    dp_noise_multiplier: float = 0.0,
    dp_clip_norm: float = 0.0,
    progress: Optional[bool] = None,
    round_end_fn=None,
    worker_addresses: Sequence[str] = (),
    clients_per_group: int = grouping.AUTO,
    rounds_per_call: int = 1,
) -> tff_mixed.RunResult:
  """Trains one scenario of the digits label-imbalance task, resumably.

  Every source of randomness derives from `seed`: the task split, the model
  initialization, client sampling (a function of the round), and the
  processes' central sampling (keyed on the round in their state).

  Args:
    scenario: One of `scenarios.SCENARIOS` (`experiments.common`).
    root_output_dir: Root of checkpoints/, results/ and logdir/.
    experiment_name: The run's name under those directories.
    total_rounds: Rounds to reach.
    clients_per_round: S; at most `num_clients`.
    client_steps: K local SGD steps.
    client_batch_size: |B_i|.
    client_lr: eta (= eta_c).
    num_clients: Federated clients of the task.
    seed: The one seed of the run.
    rounds_per_checkpoint: Checkpoint period.
    rounds_per_evaluation: Evaluation period.
    dp_noise_multiplier: DP-FedAvg noise multiplier (0: no DP).
    dp_clip_norm: DP fixed clip (0: adaptive clipping).
    progress: Progress bar (`None`: terminals only).
    round_end_fn: Optional per-round hook (tests).
    worker_addresses: `host:port` of TFF workers (`worker_binary`) to run on
      instead of the local runtime; a round's clients are split across them.
      Empty: the local runtime.
    clients_per_group: Clients per CLIENTS member (`--clients_per_group`;
      0: one group per core, 1: per client); adaptive DP trains per
      client.
    rounds_per_call: Rounds in one TFF call (`--rounds_per_call`,
      `tff_mixed.run_training`); the same numbers, and a run resumes with
      any value.

  Returns:
    A `tff_mixed.RunResult`.

  Raises:
    ValueError: For inconsistent or out-of-range arguments, or an output
      directory that is not writable (before the process is built).
    tff_mixed.CheckpointMismatchError: If the run's checkpoint directory
      belongs to another configuration (also before the build).
    ConnectionError: If a worker of `worker_addresses` does not answer.
    tff_mixed.DivergenceError: If training diverges.
  """
  if scenario not in scenarios_lib.SCENARIOS:
    raise ValueError(f'`scenario` must be one of '
                     f'{list(scenarios_lib.SCENARIOS)}, got '
                     f'{scenario!r}.')
  if clients_per_round > num_clients:
    raise ValueError(f'`clients_per_round` ({clients_per_round}) must be at '
                     f'most `num_clients` ({num_clients}).')
  aggregator = build_dp_aggregator(dp_noise_multiplier, dp_clip_norm,
                                   clients_per_round)
  task = task_lib.build_task(num_clients=num_clients,
                             client_batch_size=client_batch_size, seed=seed)
  hparams = _hparams(task, scenario=scenario,
                     clients_per_round=clients_per_round,
                     client_steps=client_steps,
                     client_batch_size=client_batch_size, client_lr=client_lr,
                     num_clients=num_clients, seed=seed,
                     dp_noise_multiplier=dp_noise_multiplier,
                     dp_clip_norm=dp_clip_norm,
                     clients_per_group=clients_per_group)
  batch_sizes = scenarios_lib.CentralBatchSizes(
      **hparams['central_batch_sizes'])
  examples_per_client = hparams['examples_per_client']
  # Before the process is built (and traced): a bad output directory, a
  # refused resume or an unreachable worker fails in seconds.
  runner_lib.prepare_run(root_output_dir, experiment_name, hparams)
  # Fails fast, naming the address, if a worker is malformed or down.
  with remote_lib.remote_execution(worker_addresses):
    model = dense.build_binary_classifier(
        task_lib.NUM_FEATURES, hidden_units=label_imbalance_lib.HIDDEN_UNITS,
        seed=seed)
    comparison_task = label_imbalance_lib.digits_comparison_task(task, model)
    process = comparison.scenario_process(
        scenario, comparison_task, model, client_steps=client_steps,
        seed=seed, clients_per_group=clients_per_group,
        clients_per_round=clients_per_round, client_lr=client_lr,
        central_batch_sizes=batch_sizes,
        examples_per_client=examples_per_client,
        client_batch_size=client_batch_size, model_aggregator=aggregator)
    client_data_fn, evaluation_fn = comparison.round_functions(
        scenario, comparison_task, clients_per_round=clients_per_round,
        client_steps=client_steps, seed=seed,
        clients_per_group=clients_per_group)
    return tff_mixed.run_training(
        process, client_data_fn=client_data_fn, total_rounds=total_rounds,
        root_output_dir=root_output_dir, experiment_name=experiment_name,
        hparams=hparams, rounds_per_checkpoint=rounds_per_checkpoint,
        evaluation_fn=evaluation_fn,
        rounds_per_evaluation=rounds_per_evaluation, progress=progress,
        round_end_fn=round_end_fn, rounds_per_call=rounds_per_call)


def _hparams(task, *, scenario: str, clients_per_round: int,
             client_steps: int, client_batch_size: int, client_lr: float,
             num_clients: int, seed: int, dp_noise_multiplier: float,
             dp_clip_norm: float, clients_per_group: int) -> dict:
  """The run's fingerprint (what a resumed run must share with it)."""
  num_central = len(task.central_indices)
  batch_sizes = scenarios_lib.paper_central_batch_sizes(
      clients_per_round, client_steps, client_batch_size, num_central)
  examples_per_client = min(num_central, max(1, round(
      sum(task.num_client_examples) / num_clients)))
  # `total_rounds` is left out: resuming with more rounds extends a run.
  return dict(
      scenario=scenario,
      clients_per_round=clients_per_round, client_steps=client_steps,
      client_batch_size=client_batch_size, client_lr=client_lr,
      num_clients=num_clients, seed=seed,
      central_batch_sizes=batch_sizes._asdict(),
      examples_per_client=examples_per_client,
      hidden_units=list(label_imbalance_lib.HIDDEN_UNITS),
      dp_noise_multiplier=dp_noise_multiplier, dp_clip_norm=dp_clip_norm,
      # Grouped FedAvg's state is not TFF's: a checkpoint resumes only in
      # the mode that wrote it.
      clients_per_group=clients_per_group)


def run_hparams(*, scenario: str, clients_per_round: int = 10,
                client_steps: int = 10, client_batch_size: int = 8,
                client_lr: float = 0.25, num_clients: int = 60, seed: int = 0,
                dp_noise_multiplier: float = 0.0,
                dp_clip_norm: float = 0.0,
                clients_per_group: int = grouping.AUTO) -> dict:
  """The hyperparameters `train` records for these arguments (its defaults).

  They are the run's `hparams.json` and the fingerprint a resumed run must
  match.
  """
  task = task_lib.build_task(num_clients=num_clients,
                             client_batch_size=client_batch_size, seed=seed)
  return _hparams(task, scenario=scenario,
                  clients_per_round=clients_per_round,
                  client_steps=client_steps,
                  client_batch_size=client_batch_size, client_lr=client_lr,
                  num_clients=num_clients, seed=seed,
                  dp_noise_multiplier=dp_noise_multiplier,
                  dp_clip_norm=dp_clip_norm,
                  clients_per_group=clients_per_group)
