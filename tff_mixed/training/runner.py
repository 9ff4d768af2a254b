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
"""The training loop every experiment binary shares.

`run_training` drives any `tff.learning.templates.LearningProcess` (ours or
TFF's FedAvg) round by round, in the research-repo layout:

```
<root_output_dir>/checkpoints/<experiment_name>/   FileProgramStateManager
<root_output_dir>/results/<experiment_name>/       metrics.csv, hparams.json
<root_output_dir>/logdir/<experiment_name>/        TensorBoard
```

One process at a time runs an experiment (`run_lock`): a second one on the
same directories is refused before it writes anything. It resumes from the
newest readable checkpoint (refusing one written by another configuration,
clearing the unfinished save of a killed run), releases each round's
metrics to CSV (one row per round, rows past a resumed checkpoint
replaced), TensorBoard and the log, shows a progress bar with rounds/s and
ETA on terminals, evaluates every few rounds, and stops on divergence
naming the round and the last good checkpoint, which stays intact. Client
selection must be a pure function of the round number (e.g.
`tff.simulation.build_uniform_sampling_fn` with a seed) and our processes
key all server-side sampling on the round in their state, so a run killed
and resumed ends exactly where an uninterrupted run ends.

With a process built with `client_groups` (the fast simulation mode), the
runner splits each round's flat list of client ids into groups, one per core
by default (`clients_per_group`).

The round loop itself (divergence checks, evaluation, progress) is
`run_rounds`, which the asynchronous simulation
(`asynchronous.simulation.run_async`) shares.
"""

import collections
from collections.abc import Callable, Mapping
import json
import math
import os
import time
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff
import tqdm

from tff_mixed import runtime
from tff_mixed.core import client_groups
from tff_mixed.core import multi_round
from tff_mixed.training import checkpoints as checkpoints_lib
from tff_mixed.training import reports

METRICS_FILE = 'metrics.csv'
HPARAMS_FILE = 'hparams.json'
ROUND_KEY = 'round_num'


class DivergenceError(RuntimeError):
  """Training produced a non-finite loss or model."""


class RunInterrupted(KeyboardInterrupt):
  """Ctrl-C (SIGINT) stopped `run_training`, which saved its newest state.

  Its message, the one line a binary prints instead of a traceback, says
  which round the run got to and that the same command resumes it.
  """


def interrupted_message(name: str, last_round: int,
                        checkpoint: Optional[int]) -> str:
  """The line for run `name` stopped after `last_round` (0: none ended).

  `checkpoint` is its last saved round (None: none yet), where a rerun
  resumes.
  """
  if checkpoint is None:
    return (f'interrupted in round {last_round + 1} of {name}, before its '
            'first checkpoint; run the same command to start it again')
  if checkpoint == last_round:
    return (f'interrupted after round {last_round} of {name}; run the same '
            'command to resume')
  return (f'interrupted after round {last_round} of {name} (last checkpoint: '
          f'round {checkpoint}); run the same command to resume from it')


class RunResult(NamedTuple):
  """What `run_training` returns.

  Attributes:
    state: The final server state.
    history: Per round run in this call, the flat metrics released.
    resumed_from: The checkpoint round the run resumed from (0: fresh).
    metrics_path: The CSV path.
    checkpoint_dir: The checkpoint directory.
  """

  state: Any
  history: list[dict[str, float]]
  resumed_from: int
  metrics_path: str
  checkpoint_dir: str


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = '') -> dict:
  """Flattens nested metrics to `{'a/b/c': float}`, keeping scalars only."""
  flat = collections.OrderedDict()
  for key, value in metrics.items():
    name = f'{prefix}{key}'
    if isinstance(value, Mapping):
      flat.update(flatten_metrics(value, name + '/'))
    elif np.ndim(value) == 0 and not isinstance(value, (str, bytes, tuple)):
      flat[name] = float(value)
  return flat


def output_dirs(root_output_dir: str, experiment_name: str) -> dict[str, str]:
  return {
      kind: os.path.join(root_output_dir, kind, experiment_name)
      for kind in ('checkpoints', 'results', 'logdir')
  }


def _write_probe(path: str) -> None:
  os.makedirs(path, exist_ok=True)
  probe = os.path.join(path, '.write_probe')
  with open(probe, 'w') as f:
    f.write('')
  os.remove(probe)


def _check_writable(path: str,
                    probe: Optional[Callable[[str], None]] = None) -> None:
  """Creates directory `path` and checks it takes files (`probe(path)`).

  Raises:
    ValueError: If it cannot be created or written.
  """
  blocker = reports.file_in_the_way(path)
  if blocker is not None:
    raise ValueError(f'Output directory {path} is not writable: {blocker} is '
                     'a file, not a directory.')
  try:
    (probe or _write_probe)(path)
  except OSError as e:
    raise ValueError(f'Output directory {path} is not writable: '
                     f'{e.strerror or e}.') from e


def _check_positive_int(name, value):
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or (
      value <= 0):
    raise ValueError(f'`{name}` must be a positive int, got {value!r}.')


def _non_finite(flat: Mapping[str, float]) -> list[str]:
  return [k for k, v in flat.items() if not math.isfinite(v)]


def prepare_run(root_output_dir: str, experiment_name: str,
                hparams: Mapping[str, Any]) -> dict[str, str]:
  """Checks a run's output directories and claims them; `run_training`'s start.

  Idempotent, and needs no process: a binary calls it before building (and
  tracing) its process, so that a bad directory or a refused resume fails in
  seconds, not after the build. `run_training` calls it again.

  Claiming takes the run's lock (`run_lock`, on its checkpoint directory)
  before anything is written, held until this process ends: a second
  process on the same run is refused, naming the first one's PID. The
  process that owns the run also gets its TFF workers ended with it
  (`runtime.register_worker_cleanup`, which importing tff_mixed does not
  call).

  Args:
    root_output_dir: Root of the output layout (see the module docstring).
    experiment_name: Subdirectory name of the run.
    hparams: The run's hyperparameters (see `run_training`).

  Returns:
    The run's directories: `output_dirs(root_output_dir, experiment_name)`.

  Raises:
    ValueError: For a bad `experiment_name` or an output directory that is
      not writable.
    checkpoints_lib.CheckpointMismatchError: If the checkpoint directory
      belongs to a run with other `hparams`.
    run_lock.DirectoryInUseError: If another process is running this run.
  """
  runtime.register_worker_cleanup()
  if not experiment_name or os.sep in experiment_name:
    raise ValueError('`experiment_name` must be a non-empty name without '
                     f'{os.sep!r}, got {experiment_name!r}.')
  dirs = output_dirs(root_output_dir, experiment_name)
  # The run's lock comes first: a second process on the run writes nothing,
  # not even a write probe. Creating the lock file probes the directory.
  _check_writable(dirs['checkpoints'], checkpoints_lib.claim_directory)
  for kind in ('results', 'logdir'):
    _check_writable(dirs[kind])
  checkpoints_lib.Checkpointer(
      dirs['checkpoints'], fingerprint=hparams).check_or_write_fingerprint()
  hparams_path = os.path.join(dirs['results'], HPARAMS_FILE)
  if not os.path.exists(hparams_path):
    with open(hparams_path + '.tmp', 'w') as f:
      json.dump(dict(hparams), f, indent=2, sort_keys=True, default=str)
    os.replace(hparams_path + '.tmp', hparams_path)
  return dirs


def _check_run_args(process: Any, clients_per_group: int,
                    **counts: int) -> None:
  """Raises TypeError / ValueError for `run_training`'s bad arguments."""
  if not isinstance(process, tff.learning.templates.LearningProcess):
    raise TypeError('`process` must be a '
                    '`tff.learning.templates.LearningProcess`, got '
                    f'{type(process).__name__}.')
  for name, value in counts.items():
    _check_positive_int(name, value)
  client_groups.check_clients_per_group(clients_per_group)


def run_training(
    process: tff.learning.templates.LearningProcess,
    *,
    client_data_fn: Callable[[int], Any],
    total_rounds: int,
    root_output_dir: str,
    experiment_name: str,
    hparams: Mapping[str, Any],
    rounds_per_checkpoint: int = 1,
    evaluation_fn: Optional[Callable[[Any], Mapping[str, float]]] = None,
    rounds_per_evaluation: int = 1,
    progress: Optional[bool] = None,
    keep_checkpoints: int = 3,
    round_end_fn: Optional[Callable[[int], None]] = None,
    clients_per_group: int = 0,
    rounds_per_call: int = 1,
) -> RunResult:
  """Trains `process` for `total_rounds`, resuming from its checkpoints.

  Args:
    process: A `tff.learning.templates.LearningProcess`.
    client_data_fn: `fn(round_num) -> client data` for rounds 1, 2, ...; must
      depend only on the round number for runs to be resumable exactly.
    total_rounds: Rounds to reach (a resumed run does only the rest).
    root_output_dir: Root of the output layout (see the module docstring).
    experiment_name: Subdirectory name of this run.
    hparams: The run's hyperparameters: written to `hparams.json` once, and
      the fingerprint that a resumed run must match.
    rounds_per_checkpoint: Save the state every this many rounds (and after
      the last round).
    evaluation_fn: Optional `fn(model_weights) -> {name: float}`, run every
      `rounds_per_evaluation` rounds and after the last; released with the
      `eval/` prefix.
    rounds_per_evaluation: See `evaluation_fn`.
    progress: Progress bar: `True`, `False`, or `None` for terminals only.
    keep_checkpoints: How many checkpoints to keep.
    round_end_fn: Optional hook called with the round number after the
      round's metrics and checkpoint are written (tests use it to kill runs).
    clients_per_group: For a process built with `client_groups` (its `next`
      takes `id[?]@CLIENTS`) whose `client_data_fn` returns the round's
      client ids as a flat list: the size of the groups the runner splits
      them into (`client_groups.split_cohort`); 0, the default, makes one
      group per core. Ignored for other processes and for data already
      grouped.
    rounds_per_call: Rounds run in one TFF call
      (`multi_round.build_multi_round_next`), where nothing happens between
      them: a call stops at a round that is checkpointed or evaluated, so
      those see the state as before. Each round's metrics are released as
      before; the model's finiteness is checked at the end of a call. The
      same numbers as one round a call, faster where TFF's cost per call is
      a large share of a round (small models in client groups). Rounds with
      different numbers of CLIENTS members run one a call.

  Returns:
    A `RunResult`.

  Raises:
    ValueError: For bad arguments or an output directory that is not
      writable.
    checkpoints_lib.CheckpointMismatchError: If the checkpoints belong to
      another configuration or model.
    DivergenceError: On a non-finite training metric, evaluation metric or
      model weight; the last good checkpoint is left intact.
    RunInterrupted: On Ctrl-C (KeyboardInterrupt) during the rounds, after
      saving the newest state (`checkpoints.RoundSaver.save_newest`).
  """
  _check_run_args(process, clients_per_group, total_rounds=total_rounds,
                  rounds_per_checkpoint=rounds_per_checkpoint,
                  rounds_per_evaluation=rounds_per_evaluation,
                  keep_checkpoints=keep_checkpoints,
                  rounds_per_call=rounds_per_call)
  dirs = prepare_run(root_output_dir, experiment_name, hparams)
  checkpointer = checkpoints_lib.Checkpointer(
      dirs['checkpoints'], fingerprint=hparams, keep_total=keep_checkpoints)

  state, start_round = checkpointer.restore(process.initialize())
  if start_round:
    logging.info('%s: resuming after round %d from %s', experiment_name,
                 start_round, dirs['checkpoints'])
  metrics_path = os.path.join(dirs['results'], METRICS_FILE)
  managers = tff.program.GroupingReleaseManager([
      tff.program.CSVFileReleaseManager(
          metrics_path, save_mode=tff.program.CSVSaveMode.APPEND,
          key_fieldname=ROUND_KEY),
      tff.program.TensorBoardReleaseManager(dirs['logdir']),
  ])
  saver = checkpoints_lib.RoundSaver(checkpointer, rounds_per_checkpoint,
                                     total_rounds, start_round)
  last_round = [start_round]

  # A call stops at a round whose state is needed.
  state_every = [rounds_per_checkpoint] + (
      [] if evaluation_fn is None else [rounds_per_evaluation])
  next_fn = _chained_next_fn(process, client_data_fn, clients_per_group, (
      lambda r: multi_round.last_round_of_call(r, rounds_per_call,
                                               total_rounds, state_every)))

  def diverged(round_num, bad):
    where = (f'checkpoint {saver.last_saved} in {dirs["checkpoints"]}'
             if saver.last_saved else 'none (no checkpoint was saved yet)')
    return DivergenceError(
        f'{experiment_name} diverged at round {round_num}: non-finite '
        f'{", ".join(bad)}. Last good checkpoint: {where}, left intact.')

  def finish_round(round_num, state, flat):
    checkpoints_lib.run_sync(managers.release(flat, key=round_num))
    saver.round_ended(round_num, state)
    last_round[0] = round_num
    if round_end_fn is not None:
      round_end_fn(round_num)

  try:
    state, history = run_rounds(
        next_fn, state, first_round=start_round, total_rounds=total_rounds,
        name=experiment_name, diverged=diverged, finish_round_fn=finish_round,
        evaluation_fn=None if evaluation_fn is None else (
            lambda w: flatten_metrics(evaluation_fn(w), 'eval/')),
        rounds_per_evaluation=rounds_per_evaluation, progress=progress)
  except KeyboardInterrupt as e:
    if isinstance(e, RunInterrupted):
      raise
    # A save cut off by a second Ctrl-C is a temp dir the next run clears.
    saver.save_newest(experiment_name)
    raise RunInterrupted(interrupted_message(
        experiment_name, last_round[0], saver.last_saved)) from e
  return RunResult(state=state, history=history, resumed_from=start_round,
                   metrics_path=metrics_path,
                   checkpoint_dir=dirs['checkpoints'])


def _chained_next_fn(process, client_data_fn: Callable[[int], Any],
                     clients_per_group: int,
                     call_end: Callable[[int], int]):
  """`run_rounds`' `next_fn`, running rounds `r..call_end(r)` a TFF call.

  It hands them out one by one: the rounds before the last get their
  metrics, no state (`None`: `call_end` stops at checkpoints) and no
  weights to check; the last gets the state and the weights.
  """
  pending, chained, prepared = {}, {}, {}

  def next_fn(state, round_num):
    if round_num in pending:
      return pending.pop(round_num)
    rounds = range(round_num, call_end(round_num) + 1)
    for r in rounds:  # Kept for the next call if this one runs fewer.
      if r not in prepared:
        prepared[r] = _grouped(process, client_data_fn(r), clients_per_group)
    data = [prepared[r] for r in rounds]
    if len(rounds) == 1 or len({len(d) for d in data}) > 1:
      # One round a call (also when cohorts differ in CLIENTS members,
      # which one TFF call cannot take).
      output = process.next(state, data[0])
      rounds, final, metrics = rounds[:1], output.state, [output.metrics]
    else:
      if len(rounds) not in chained:
        chained[len(rounds)] = multi_round.build_multi_round_next(
            process.next, len(rounds))
      output = chained[len(rounds)](state, data)
      final, metrics = output['state'], output['metrics']
    for r, round_metrics in zip(rounds, metrics):
      del prepared[r]
      last = r == rounds[-1]
      pending[r] = (final if last else None,
                    flatten_metrics(round_metrics, 'train/'),
                    process.get_model_weights(final) if last else ())
    return pending.pop(round_num)

  return next_fn


def _grouped(process, client_data: Any, clients_per_group: int) -> Any:
  """`client_data` split into groups, if `process` takes groups of ids.

  A process built with `client_groups` takes one id vector per CLIENTS
  member; a flat list of scalar ids becomes `split_cohort` groups of
  `clients_per_group` (0: one group per core). Anything else is passed on.
  """
  member = process.next.type_signature.parameter[1].member
  takes_groups = (isinstance(member, tff.TensorType)
                  and member.shape is not None and len(member.shape) == 1)
  if not takes_groups or not all(np.ndim(c) == 0 for c in client_data):
    return client_data
  size = client_groups.clients_per_group_for(clients_per_group,
                                             len(client_data))
  return [np.asarray(g, member.dtype)
          for g in client_groups.split_cohort(client_data, size)]


def _trainable(weights: Any) -> Any:
  return getattr(weights, 'trainable', weights)


def run_rounds(
    next_fn: Callable[[Any, int], tuple[Any, Mapping[str, float], Any]],
    state: Any,
    *,
    first_round: int,
    total_rounds: int,
    name: str,
    diverged: Callable[[int, list[str]], Exception],
    finish_round_fn: Optional[Callable[[int, Any, dict], None]] = None,
    evaluation_fn: Optional[Callable[[Any], Mapping[str, float]]] = None,
    rounds_per_evaluation: int = 1,
    check_metrics: bool = True,
    progress: Optional[bool] = None,
) -> tuple[Any, list[dict[str, float]]]:
  """The round loop of synchronous and asynchronous training.

  Runs rounds `first_round + 1, ..., total_rounds`. Each round
  `next_fn(state, round_num)` returns `(new_state, metrics, weights)`; the
  model weights (their `trainable` part for a `tff.learning.models.
  ModelWeights`) must be finite, and so must the metrics with
  `check_metrics`. Every `rounds_per_evaluation` rounds and after the last,
  `evaluation_fn(weights)` adds its metrics (checked likewise). A bad round
  raises `diverged(round_num, what_was_bad)` and keeps the previous state;
  a good one becomes the state, then `finish_round_fn(round_num, state,
  metrics)` releases it (metrics files, checkpoints, hooks). A progress bar
  (`progress`: True, False, or None for terminals only) or, without one, a
  log line every tenth of the run shows rounds/s and the ETA.

  `run_training` drives a `tff.learning.templates.LearningProcess` with it,
  `asynchronous.simulation.run_async` an `AsyncProcess`.

  Returns:
    `(final_state, history)`, history holding per round its metrics and
    `ROUND_KEY`.

  Raises:
    The exception `diverged` returns, on a non-finite value.
  """
  history = []
  bar = tqdm.tqdm(total=total_rounds, initial=first_round, unit='round',
                  desc=name, disable=None if progress is None else not progress)
  log_every = max(1, total_rounds // 10)
  started = time.perf_counter()
  with bar:
    for round_num in range(first_round + 1, total_rounds + 1):
      new_state, metrics, weights = next_fn(state, round_num)
      flat = dict(metrics)
      bad = _non_finite(flat) if check_metrics else []
      if not all(np.all(np.isfinite(w)) for w in _trainable(weights)):
        bad.append('model weights')
      if (evaluation_fn is not None and not bad and
          (round_num % rounds_per_evaluation == 0
           or round_num == total_rounds)):
        eval_metrics = dict(evaluation_fn(weights))
        if check_metrics:
          bad += _non_finite(eval_metrics)
        flat.update(eval_metrics)
      if bad:
        raise diverged(round_num, bad)
      state = new_state
      if finish_round_fn is not None:
        finish_round_fn(round_num, state, flat)
      history.append(dict(flat, **{ROUND_KEY: round_num}))
      bar.update(1)
      if bar.disable and (round_num % log_every == 0
                          or round_num == total_rounds):
        elapsed = time.perf_counter() - started
        rate = (round_num - first_round) / elapsed if elapsed > 0 else float(
            'inf')
        logging.info('%s: round %d/%d, %.2f rounds/s, ETA %.0f s', name,
                     round_num, total_rounds, rate,
                     (total_rounds - round_num) / rate if rate else 0.0)
  return state, history
