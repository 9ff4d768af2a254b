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
naming the round and the last good checkpoint, which stays intact. Ctrl-C
(SIGINT) and SIGTERM stop it after saving its newest round, a full disk
with one error naming what was kept (`stop_signals`, `checkpoints`). Client
selection must be a pure function of the round number (e.g.
`tff.simulation.build_uniform_sampling_fn` with a seed) and our processes
key all server-side sampling on the round in their state, so a run killed
and resumed ends exactly where an uninterrupted run ends.

With a process built with `client_groups` (the fast simulation mode), the
runner splits each round's flat list of client ids into groups, one per core
by default (`clients_per_group`).

The round loop itself (divergence checks, evaluation, progress, the
rounds a TFF call runs) is `round_loop`, which the asynchronous simulation
(`asynchronous.simulation.run_async`) shares.
"""

from collections.abc import Callable, Mapping
import json
import os
import signal
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff

from tff_mixed import runtime
from tff_mixed.simulation import client_groups
from tff_mixed.simulation import multi_round
from tff_mixed.training import checkpoints as checkpoints_lib
from tff_mixed.training import reports
from tff_mixed.training import round_loop
from tff_mixed.training import run_lock
from tff_mixed.training import stop_signals

METRICS_FILE = 'metrics.csv'
HPARAMS_FILE = 'hparams.json'
# A round's key in the metrics CSV and in `RunResult.history`.
ROUND_KEY = round_loop.ROUND_KEY


class DivergenceError(RuntimeError):
  """Training produced a non-finite loss or model."""


class RunInterrupted(KeyboardInterrupt):
  """Ctrl-C (SIGINT) or SIGTERM stopped `run_training`, which saved its
  newest state.

  Its message, the one line a binary prints instead of a traceback, says
  which round the run got to and that the same command resumes it.

  Attributes:
    signum: The signal that stopped the run (`signal.SIGINT` or
      `signal.SIGTERM`): a binary exits with status 128 + signum.
  """

  def __init__(self, message: str, signum: int = signal.SIGINT):
    super().__init__(message)
    self.signum = signum


def interrupted_message(name: str, last_round: int,
                        checkpoint: Optional[int],
                        signum: int = signal.SIGINT) -> str:
  """The line for run `name` stopped after `last_round` (0: none ended).

  `checkpoint` is its last saved round (None: none yet), where a rerun
  resumes; `signum` the signal that stopped it.
  """
  how = ('interrupted' if signum == signal.SIGINT else
         f'stopped by {signal.Signals(signum).name}')
  if checkpoint is None:
    return (f'{how} in round {last_round + 1} of {name}, before its first '
            'checkpoint; run the same command to start it again')
  if checkpoint == last_round:
    return (f'{how} after round {last_round} of {name}; run the same command '
            'to resume')
  return (f'{how} after round {last_round} of {name} (last checkpoint: '
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


def check_experiment_name(name: Any) -> None:
  """Raises ValueError unless `name` names one directory of its own.

  '.' and '..' are refused too: they would put the run's checkpoints,
  metrics and lock straight into (or above) the output root, beside other
  runs.
  """
  separators = {os.sep, os.altsep} - {None}
  if (not isinstance(name, str) or name in ('', os.curdir, os.pardir)
      or any(s in name for s in separators) or '\0' in name):
    raise ValueError(
        '`experiment_name` must name one directory (not empty, "." or "..", '
        f'without {" or ".join(map(repr, sorted(separators)))}), got '
        f'{name!r}.')


def prepare_run(root_output_dir: str, experiment_name: str,
                hparams: Mapping[str, Any]) -> dict[str, str]:
  """Checks a run's output directories and claims them; `run_training`'s start.

  Idempotent, and needs no process: a binary calls it before building (and
  tracing) its process, so that a bad directory or a refused resume fails in
  seconds, not after the build. `run_training` calls it again.

  Claiming takes the run's lock (`run_lock`, on its checkpoint directory)
  before anything is written, held until this process ends or its
  `run_training` does: a second process on the same run is refused, naming
  the first one's PID. The
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
  check_experiment_name(experiment_name)
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
    ValueError: For bad arguments, an output directory that is not
      writable, or a resumed run whose metrics.csv lacks rounds its
      checkpoints hold (`check_metrics_cover`).
    checkpoints_lib.CheckpointMismatchError: If the checkpoints belong to
      another configuration or model, or their fingerprint is damaged.
    DivergenceError: On a non-finite training metric, evaluation metric or
      model weight; the last good checkpoint is left intact.
    RunInterrupted: On Ctrl-C (KeyboardInterrupt: SIGINT, even in a process
      started with SIGINT ignored) or SIGTERM during the rounds, after
      saving the newest state (`checkpoints.RoundSaver.save_newest`). A
      signal that lands while a round's metrics and checkpoint are written
      takes effect once they are (`stop_signals`).
    checkpoints_lib.DiskFullError: (An OSError.) If the disk fills up; the
      checkpoints before the round are left intact, and the same call
      resumes once there is space.
  """
  _check_run_args(process, clients_per_group, total_rounds=total_rounds,
                  rounds_per_checkpoint=rounds_per_checkpoint,
                  rounds_per_evaluation=rounds_per_evaluation,
                  keep_checkpoints=keep_checkpoints,
                  rounds_per_call=rounds_per_call)
  dirs = prepare_run(root_output_dir, experiment_name, hparams)
  # The run's lock is released when the run ends, however it ends: the
  # process may go on (a notebook, several runs), and another one may then
  # take the run up (`scripts/carry_run.py`, a resume elsewhere).
  try:
    checkpointer = checkpoints_lib.Checkpointer(
        dirs['checkpoints'], fingerprint=hparams, keep_total=keep_checkpoints)
    state, start_round = checkpointer.restore(process.initialize())
    metrics_path = os.path.join(dirs['results'], METRICS_FILE)
    if start_round:
      checkpoints_lib.check_metrics_cover(metrics_path, start_round,
                                          dirs['checkpoints'], ROUND_KEY)
      logging.info('%s: resuming after round %d from %s', experiment_name,
                   start_round, dirs['checkpoints'])
    writer = _RoundWriter(
        experiment_name, root_output_dir, metrics_path, dirs['logdir'],
        checkpoints_lib.RoundSaver(checkpointer, rounds_per_checkpoint,
                                   total_rounds, start_round),
        round_end_fn)
    # A call stops at a round whose state is needed.
    state_every = [rounds_per_checkpoint] + (
        [] if evaluation_fn is None else [rounds_per_evaluation])
    next_fn = round_loop.chained_next_fn(
        process, client_data_fn, clients_per_group,
        lambda r: multi_round.last_round_of_call(r, rounds_per_call,
                                                 total_rounds, state_every))

    def diverged(round_num, bad):
      last_saved = writer.saver.last_saved
      where = (f'checkpoint {last_saved} in {dirs["checkpoints"]}'
               if last_saved else 'none (no checkpoint was saved yet)')
      return DivergenceError(
          f'{experiment_name} diverged at round {round_num}: non-finite '
          f'{", ".join(bad)}. Last good checkpoint: {where}, left intact.')

    # SIGINT (even where the process started with it ignored) and SIGTERM
    # stop the run as Ctrl-C does, saving its newest round.
    with stop_signals.stop_on_signals():
      try:
        state, history = round_loop.run_rounds(
            next_fn, state, first_round=start_round, total_rounds=total_rounds,
            name=experiment_name, diverged=diverged, finish_round_fn=writer,
            evaluation_fn=None if evaluation_fn is None else (
                lambda w: round_loop.flatten_metrics(evaluation_fn(w),
                                                     'eval/')),
            rounds_per_evaluation=rounds_per_evaluation, progress=progress)
      except RunInterrupted:
        raise
      except KeyboardInterrupt as e:
        raise writer.stopped(e) from e
    return RunResult(state=state, history=history, resumed_from=start_round,
                     metrics_path=metrics_path,
                     checkpoint_dir=dirs['checkpoints'])
  finally:
    run_lock.unlock_run_directory(dirs['checkpoints'])


class _RoundWriter:
  """What `run_training` writes at the end of each round, and on a stop.

  Called as `run_rounds`' `finish_round_fn`: releases the round's metrics
  (CSV, TensorBoard), saves its checkpoint on schedule (`saver`), then calls
  `round_end_fn`. A stop signal that arrives meanwhile waits for the writes
  (`stop_signals.deferred`): cut off, they would leave a save half-written
  and a round saved but not counted.

  Attributes:
    saver: The run's `checkpoints.RoundSaver`.
    last_round: The last round written (the start round before any).
  """

  def __init__(self, name: str, root_output_dir: str, metrics_path: str,
               logdir: str, saver: checkpoints_lib.RoundSaver,
               round_end_fn: Optional[Callable[[int], None]]):
    self._name, self._root = name, root_output_dir
    self._managers = tff.program.GroupingReleaseManager([
        tff.program.CSVFileReleaseManager(
            metrics_path, save_mode=tff.program.CSVSaveMode.APPEND,
            key_fieldname=ROUND_KEY),
        tff.program.TensorBoardReleaseManager(logdir),
    ])
    self.saver = saver
    self._round_end_fn = round_end_fn
    self.last_round = saver.last_saved or 0

  def __call__(self, round_num: int, state: Any,
               flat: Mapping[str, float]) -> None:
    def disk_full() -> str:
      kept = (f'checkpoints up to round {self.saver.last_saved} are intact'
              if self.saver.last_saved else 'no checkpoint was saved yet')
      return (f'No space left on device to write round {round_num} of '
              f'{self._name} (under {self._root}); {kept}: free some space '
              'and run the same command to resume')

    with stop_signals.deferred(), checkpoints_lib.disk_full_as(disk_full):
      checkpoints_lib.run_sync(self._managers.release(flat, key=round_num))
      self.saver.round_ended(round_num, state)
      self.last_round = round_num
    if self._round_end_fn is not None:
      self._round_end_fn(round_num)

  def stopped(self, error: KeyboardInterrupt) -> 'RunInterrupted':
    """Saves the newest round after a stop by `error`; the error to raise.

    A second signal waits for the save.
    """
    with stop_signals.deferred():
      self.saver.save_newest(self._name)
    signum = stop_signals.signal_number(error)
    return RunInterrupted(interrupted_message(
        self._name, self.last_round, self.saver.last_saved, signum), signum)
