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
"""The studies' one run loop: a composed process trained by
`tff_mixed.run_training`, its evaluations read back as rows; any other
round in the library's round loop.

Every synchronous study (the digits comparison and CelebA through
`comparison`, MovieLens, the LM's FL-only and mixed scenarios) trains a
scenario the same way: the runner's resumable loop under
`<output_dir>/{checkpoints,results,logdir}/<scenario>` (an interrupted run
resumes from its last checkpoint; the checkpoint's fingerprint is the run's
settings but `rounds`, so a finished run can be extended), the initial
model evaluated as round 0, and the evaluated rounds read back from the
runner's metrics CSV, which covers every round of the run, those of earlier
invocations included. `train_process` is that loop; each study turns its
rows into its own record. A study whose round is not a process's (the LM's
oracle and transfer baselines: central steps, or a FedAvg round, by round)
runs it with `train_steps`: checkpoints and rows kept as `train_process`
keeps them, the rounds in `run_rounds`, the round loop of
`tff_mixed.run_training` and of `tff_mixed.run_async` (the asynchronous
studies' loop): the same divergence checks, evaluation schedule and
progress.
"""

from collections.abc import Callable, Mapping, Sequence
import csv
import json
import os
import time
from typing import Any, NamedTuple, Optional

from absl import logging

import tff_mixed
from tff_mixed.training import checkpoints
from tff_mixed.training import reports as reports_lib
from tff_mixed.training import round_loop
from tff_mixed.training import run_lock
from tff_mixed.training import runner as runner_lib

# The runner's CSV names an evaluation metric `eval/<name>`, and a round
# `ROUND_KEY`; a row of ours names it `round`.
EVAL_PREFIX = 'eval/'
ROUND_KEY = runner_lib.ROUND_KEY
ROUND = 'round'

# For everything one invocation writes under an output directory: creates it
# and holds its lock (another invocation on it fails at once, naming it).
claimed_output_directory = run_lock.claimed_output_directory


class Trained(NamedTuple):
  """One scenario trained by `train_process` (or `train_steps`).

  Attributes:
    rows: The evaluations, round 0 (the initial model) first: `round` and
      each metric (and each training column asked for; absent at round 0).
    metrics_path: The runner's per-round CSV (`train_steps`: the file of
      its evaluations).
    resumed_from: The checkpoint round this invocation resumed from (0:
      it ran every round).
    seconds: Wall-clock seconds of this invocation's rounds (evaluations
      included).
    seconds_per_round: `seconds` per round this invocation trained (NaN if
      it trained none).
    round_ends: `time.perf_counter()` when each round this invocation ran
      ended (`train_steps`: none).
  """

  rows: list[dict[str, Any]]
  metrics_path: str
  resumed_from: int
  seconds: float
  seconds_per_round: float
  round_ends: dict[int, float]


def fingerprint(settings: Mapping[str, Any], scenario: str,
                **extra: Any) -> dict[str, Any]:
  """What a checkpoint must share with the run resuming it: the run's
  `settings` but `rounds` (a finished run can be extended), with its
  `scenario` (and `extra`)."""
  hparams = dict(settings, scenario=scenario, **extra)
  hparams.pop('rounds', None)
  return hparams


def metrics_path(output_dir: str, name: str) -> str:
  """The runner's per-round CSV of the run `name` under `output_dir`."""
  return os.path.join(runner_lib.output_dirs(output_dir, name)['results'],
                      runner_lib.METRICS_FILE)


def eval_rows(metrics_path: str, metric_names: Sequence[str],
              train_columns: Sequence[str] = ()) -> list[dict[str, Any]]:
  """The evaluated rounds of the runner's CSV at `metrics_path`: per round
  with an evaluation, `round`, each of `metric_names` (as floats) and each
  of `train_columns` (the CSV's own column names)."""
  rows = []
  with open(metrics_path) as f:
    for record in csv.DictReader(f):
      if not record.get(EVAL_PREFIX + metric_names[0]):
        continue
      rows.append({
          ROUND: int(record[ROUND_KEY]),
          **{name: float(record[EVAL_PREFIX + name])
             for name in metric_names},
          **{column: float(record[column]) for column in train_columns}})
  return rows


def train_process(process: Any, *, name: str,
                  output_dir: str, hparams: Mapping[str, Any], rounds: int,
                  eval_every: int, client_data_fn: Callable[[int], Any],
                  evaluation_fn: Callable[[Any], Mapping[str, Any]],
                  rounds_per_checkpoint: int, metric_names: Sequence[str],
                  train_columns: Sequence[str] = (),
                  initial: Optional[Mapping[str, Any]] = None,
                  progress: Optional[bool] = None,
                  rounds_per_call: int = 1) -> Trained:
  """Trains `process` for `rounds` with the resumable runner.

  Args:
    process: The composed `tff.learning` process (on what
      `client_data_fn` returns).
    name: The run's name (its directories' name): the scenario.
    output_dir: The runner's root directory.
    hparams: The checkpoint's fingerprint (`fingerprint`).
    rounds: The rounds the run has once this invocation ends.
    eval_every: Rounds between evaluations (the last is always evaluated).
    client_data_fn: `round_num -> ` a round's client data.
    evaluation_fn: `model weights -> {metric: value}`.
    rounds_per_checkpoint: Rounds between checkpoints.
    metric_names: The evaluation's metrics a row keeps.
    train_columns: Training columns of the CSV a row keeps.
    initial: The initial model's evaluation (round 0), if the caller has
      it; else `evaluation_fn` of `process.initialize()`'s weights.
    progress: As in `tff_mixed.run_training`.
    rounds_per_call: As in `tff_mixed.run_training` (the same numbers).

  Returns:
    The `Trained` run.
  """
  round_ends = {}

  def round_end_fn(round_num: int) -> None:
    round_ends[round_num] = time.perf_counter()

  start = time.perf_counter()
  result = tff_mixed.run_training(
      process, client_data_fn=client_data_fn, total_rounds=rounds,
      root_output_dir=output_dir, experiment_name=name, hparams=dict(hparams),
      rounds_per_checkpoint=rounds_per_checkpoint,
      evaluation_fn=evaluation_fn, rounds_per_evaluation=eval_every,
      progress=progress, round_end_fn=round_end_fn,
      rounds_per_call=rounds_per_call)
  seconds = time.perf_counter() - start
  trained = rounds - result.resumed_from
  if initial is None:
    initial = evaluation_fn(process.get_model_weights(process.initialize()))
  rows = [{ROUND: 0, **{k: initial[k] for k in metric_names}}]
  rows += eval_rows(result.metrics_path, metric_names, train_columns)
  return Trained(rows, result.metrics_path, result.resumed_from, seconds,
                 seconds / trained if trained else float('nan'), round_ends)


def run_rounds(next_fn: Callable[[Any, int], tuple[Any, Mapping[str, float],
                                                   Any]],
               state: Any, *, first_round: int, rounds: int, name: str,
               eval_every: int,
               evaluation_fn: Callable[[Any], Mapping[str, float]],
               finish_round_fn: Callable[[int, Any, dict], None],
               diverged: Callable[[int, list[str]], Exception]) -> Any:
  """Rounds `first_round + 1, ..., rounds` of a study whose round is not a
  process's (the LM's oracle and transfer baselines), in the library's
  round loop, that of `tff_mixed.run_training` and `tff_mixed.run_async`.

  `next_fn(state, round_num)` returns `(state, metrics, weights)`; the
  weights must be finite, else `diverged(round_num, what)` is raised.
  Every `eval_every` rounds and after the last, `evaluation_fn(weights)`'s
  metrics join the round's; then `finish_round_fn(round_num, state,
  metrics)` keeps the round (its rows, its checkpoints). A progress bar, or
  a log line every tenth of the run, shows rounds/s and the ETA. Returns the
  final state.
  """
  return round_loop.run_rounds(
      next_fn, state, first_round=first_round, total_rounds=rounds,
      name=name, diverged=diverged, finish_round_fn=finish_round_fn,
      evaluation_fn=evaluation_fn, rounds_per_evaluation=eval_every,
      check_metrics=False)[0]


# Where `train_steps` keeps a run's evaluations, beside its checkpoints.
EVALUATIONS_FILE = 'evaluations.json'


def train_steps(next_fn: Callable[[Any, int], tuple[Any, Mapping[str, float],
                                                    Any]],
                initial_state: Any, *, name: str, run_dir: str,
                hparams: Mapping[str, Any], rounds: int, eval_every: int,
                evaluation_fn: Callable[[Any], Mapping[str, float]],
                metric_names: Sequence[str], rounds_per_checkpoint: int,
                weights_of: Callable[[Any], Any],
                describe_round: Callable[[int], str] = lambda r: '',
                diverged: Callable[[int, list[str]], Exception]) -> Trained:
  """`run_rounds` of `next_fn`, resumable: for a study whose round is not a
  process's (the LM's oracle and transfer baselines).

  The state is checkpointed under `<run_dir>/checkpoints` (fingerprint
  `hparams`) every `rounds_per_checkpoint` rounds and after the last, and
  the evaluations so far are kept in `<run_dir>/evaluations.json` just
  before; a rerun resumes from the last checkpoint with the rows up to it.

  Args:
    next_fn: As in `run_rounds`.
    initial_state: The state before round 1 (a checkpoint's replaces it).
    name: The run's name, for logs.
    run_dir: The run's directory.
    hparams: What a checkpoint must share with the run resuming it.
    rounds: The rounds the run has once this invocation ends.
    eval_every: Rounds between evaluations (the last is always evaluated).
    evaluation_fn: `model weights -> {metric: value}`.
    metric_names: The metrics a row keeps.
    rounds_per_checkpoint: Rounds between checkpoints.
    weights_of: The model weights of a state (for round 0's evaluation).
    describe_round: `round_num -> ` a word on the round, for its log line.
    diverged: As in `run_rounds`.

  Returns:
    The `Trained` run.

  Raises:
    CheckpointMismatchError: If `run_dir` holds another run's checkpoints.
  """
  checkpointer = checkpoints.Checkpointer(
      os.path.join(run_dir, 'checkpoints'), dict(hparams))
  checkpointer.check_or_write_fingerprint()
  state, resumed_from = checkpointer.restore(initial_state)
  rows_path = os.path.join(run_dir, EVALUATIONS_FILE)
  if resumed_from:
    with open(rows_path) as f:
      rows = [r for r in json.load(f) if r[ROUND] <= resumed_from]
    logging.info('%s: resumed from round %d', name, resumed_from)
  else:
    initial = evaluation_fn(weights_of(state))
    rows = [{ROUND: 0, **{k: initial[k] for k in metric_names}}]

  def finish_round_fn(round_num, state, metrics):
    if metric_names[0] in metrics:
      rows.append({ROUND: round_num, **{k: metrics[k] for k in metric_names}})
      logging.info('%s: round %d/%d%s, %s %.4f', name, round_num, rounds,
                   describe_round(round_num), metric_names[0],
                   metrics[metric_names[0]])
    if round_num % rounds_per_checkpoint == 0 or round_num == rounds:
      # The evaluations first: a kill between the two writes leaves rows
      # past the checkpoint, which a resume drops.
      reports_lib.atomic_write_text(rows_path, json.dumps(rows))
      checkpointer.save(state, round_num)

  start = time.perf_counter()
  run_rounds(next_fn, state, first_round=resumed_from, rounds=rounds,
             name=name, eval_every=eval_every, evaluation_fn=evaluation_fn,
             finish_round_fn=finish_round_fn, diverged=diverged)
  seconds = time.perf_counter() - start
  trained = rounds - resumed_from
  return Trained(rows, rows_path, resumed_from, seconds,
                 seconds / trained if trained else float('nan'), {})
