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
"""Trains a mixed FL process with TFF's program layer, resumably.

    python -m examples.train_with_tff_program --root_dir=/tmp/program \
        --total_rounds=5
    python -m examples.train_with_tff_program --root_dir=/tmp/program \
        --total_rounds=10   # resumes after round 5

Parallel Training (Augenstein et al., arXiv:2205.13655, Algorithm 1) on a
synthetic linear regression: the clients see inputs around +1, the central
data inputs around -1, so neither alone covers the inputs the model meets.
The process is run by `tff.learning.programs.train_model` in a
`tff.program.NativeFederatedContext`, with

*   a `tff.program.FileProgramStateManager` under `<root_dir>/program_state`:
    the process state, the round and the data iterator after every round, so
    that a second run continues where the first stopped;
*   the round's training metrics logged and written to
    `<root_dir>/metrics.csv` (`tff.program.LoggingReleaseManager`,
    `tff.program.CSVFileReleaseManager`);
*   the final state written to `<root_dir>/model/` by a
    `tff.program.SavedModelFileReleaseManager`;
*   the clients' data as a `tff_mixed.ArrayDataSource` (TFF's
    `tff.program.DatasetDataSource` cannot be deep-copied by `train_model`
    on TF 2.14).

No evaluation runs (`evaluation_manager=None`); a
`tff.learning.programs.EvaluationManager` adds federated evaluation loops.
Flags are parsed with argparse, not absl, so that tests can import this
module beside the experiment binaries without their flag names colliding.
"""

import argparse
import asyncio
from collections.abc import Sequence
import os
from typing import Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.models import dense

NUM_CLIENTS = 6
_INPUT_DIM = 2
_EXAMPLES_PER_CLIENT = 8
_BATCH_SIZE = 4


def synthetic_task(seed: int = 0):
  """(clients' (x, y) arrays, central (x, y) arrays) of y = x w* + b* + noise.

  Clients draw x around +1, the central data around -1.
  """
  rng = np.random.default_rng(seed)
  w_true = np.array([[2.0], [-1.0]], np.float32)

  def examples(n, center):
    x = rng.normal(center, 1.0, size=(n, _INPUT_DIM)).astype(np.float32)
    noise = rng.normal(0.0, 0.1, size=(n, 1))
    return x, (x @ w_true + 0.5 + noise).astype(np.float32)

  clients = [examples(_EXAMPLES_PER_CLIENT, 1.0) for _ in range(NUM_CLIENTS)]
  return clients, examples(32, -1.0)


def build_process() -> tff.learning.templates.LearningProcess:
  """Parallel Training of a linear model on `synthetic_task()`."""
  _, central = synthetic_task()
  sgd = lambda lr: tff.learning.optimizers.build_sgdm(learning_rate=lr)
  return tff_mixed.build_parallel_training(
      dense.build_linear_regression(_INPUT_DIM),
      tff_mixed.central_data_objective(central),
      client_optimizer=sgd(0.05), central_optimizer=sgd(0.05),
      central_batch_size=8, client_steps=2)


def build_data_source() -> tff_mixed.ArrayDataSource:
  clients, _ = synthetic_task()
  return tff_mixed.ArrayDataSource(clients, batch_size=_BATCH_SIZE, seed=0)


def train(root_dir: str, total_rounds: int, clients_per_round: int = 3,
          metrics_managers: Sequence[tff.program.ReleaseManager] = ()) -> None:
  """Runs `train_model` until round `total_rounds`, resuming from `root_dir`.

  Args:
    root_dir: Where the program state, metrics and model are written.
    total_rounds: The round to stop after; rounds already saved under
      `root_dir` are not run again.
    clients_per_round: Clients selected per round.
    metrics_managers: More `tff.program.ReleaseManager`s for the training
      metrics, keyed by round.
  """
  metrics_manager = tff.program.GroupingReleaseManager([
      tff.program.LoggingReleaseManager(),
      tff.program.CSVFileReleaseManager(
          os.path.join(root_dir, 'metrics.csv'), key_fieldname='round_num'),
      *metrics_managers,
  ])
  # `train_model` is a coroutine that calls the process's computations
  # through a program-layer context over TFF's asynchronous local runtime.
  # It runs on a loop of its own: `asyncio.run` would leave the thread with
  # no current loop, which `tff.simulation.run_training_process` needs.
  context = tff.program.NativeFederatedContext(
      tff.backends.native.create_async_local_cpp_execution_context())
  loop = asyncio.new_event_loop()
  try:
    with tff.framework.get_context_stack().install(context):
      loop.run_until_complete(tff.learning.programs.train_model(
          train_process=build_process(),
          train_data_source=build_data_source(),
          train_per_round_clients=clients_per_round,
          train_total_rounds=total_rounds,
          program_state_manager=tff.program.FileProgramStateManager(
              os.path.join(root_dir, 'program_state')),
          model_output_manager=tff.program.SavedModelFileReleaseManager(
              os.path.join(root_dir, 'model')),
          train_metrics_manager=metrics_manager,
          evaluation_manager=None,
          evaluation_periodicity=1))
  finally:
    loop.close()


def main(argv: Optional[Sequence[str]] = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--root_dir', required=True,
                      help='Program state, metrics.csv and model/ go here.')
  parser.add_argument('--total_rounds', type=int, default=5,
                      help='The round to stop after (default 5).')
  parser.add_argument('--clients_per_round', type=int, default=3,
                      help=f'Clients per round, 1 to {NUM_CLIENTS}.')
  args = parser.parse_args(argv)
  if args.total_rounds < 1:
    parser.error('--total_rounds must be at least 1.')
  if not 1 <= args.clients_per_round <= NUM_CLIENTS:
    parser.error(f'--clients_per_round must be in [1, {NUM_CLIENTS}].')
  tff_mixed.register_worker_cleanup()  # TFF's workers end with this process.
  logging.set_verbosity(logging.INFO)  # The logged metrics and progress.
  train(args.root_dir, args.total_rounds, args.clients_per_round)


if __name__ == '__main__':
  main()
