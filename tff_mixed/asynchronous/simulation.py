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
"""The asynchronous FL loop: schedule, TFF client training, server method.

Each round k (the asynchronous setting of the guided-model-merging paper,
Zhu et al., "Guided Model Merging for Hybrid Data Learning", appendix):

1.  the schedule samples idle clients (`AsyncSchedule.sample`);
2.  they train now, in one call of the TFF federated computation
    (`client_training.build_client_training`, or in groups of clients,
    `build_group_client_training`), from the round-k model; an update that
    can never arrive within the run is not trained;
3.  each update is held in Python until its arrival round;
4.  the server method applies the updates that arrive in round k. An
    update of weight 0 (its client trained on no examples, or its update
    was non-finite, which the client training zeroes) is counted
    (`num_discarded`) instead, for every method: it carries nothing. The
    first one of a run is warned of, and `run_async` logs their total.

The server method is a `strategy.AsyncStrategy` (`initial_state()`,
`apply(state, weights, updates, on_merge) -> (state, weights)`, where
`updates` are `strategy.ClientUpdate`s in arrival order; none, and no client
trains, if it sets `uses_client_updates = False`): FedAsync, FedBuff and
CA2FL (`server_strategies`), `deadline_fedavg.DeadlineFedAvg`,
`feddle.FeddleMethod` (Feddle behind a FedBuff-style buffer, so that zero
search steps give FedBuff) and the hybrid baselines of `hybrid_baselines`;
`tff_mixed.async_registry.build` makes each by name. Any object with
`initial_state()` and `apply(state, weights, updates)` also runs, without
merge events. An `observer` (`strategy.AsyncObserver`) sees every merge,
with its round, and the end of every round.

`AsyncProcess` (`async_round.py`) is one round as `initialize()` /
`next(state, round_num)`, like a `tff.templates.IterativeProcess`;
`run_async` drives it with the round
loop every training run shares (`training.round_loop.run_rounds`: divergence
checks, evaluation, progress). Its state holds Python objects (pending
updates, the method's state) and the schedule advances in place, so rounds
must run in order, once each. With a `checkpoint_path`, `run_async` saves
after every round what a resumed run needs to continue exactly: the state,
the schedule's generator and updates in flight (`AsyncSchedule.snapshot`),
a stateful client training's state (LoAdaBoost's loss threshold) and the
rows so far; a killed run started again with the same arguments goes on
from its last finished round and ends as the uninterrupted run would.
"""

from collections.abc import Callable, Sequence
import os
import pickle
import time
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed import runtime
from tff_mixed.asynchronous import async_round
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import strategy as strategy_lib
from tff_mixed.simulation import client_groups
from tff_mixed.training import checkpoints
from tff_mixed.training import reports
from tff_mixed.training import round_loop
from tff_mixed.training import run_lock
from tff_mixed.training import runner
from tff_mixed.training import stop_signals

Weights = Sequence[np.ndarray]

# `clients_per_group` that gives one group per core.
AUTO = client_groups.AUTO
# One round of the loop, and the state between rounds (its own module; the
# names stay here, where the checkpoints saved so far pickled them).
AsyncProcess = async_round.AsyncProcess
AsyncState = async_round.AsyncState


class _Checkpoint(NamedTuple):
  """What `run_async` saves after each round (pickled, written atomically)."""

  fingerprint: dict[str, Any]
  round_num: int
  state: AsyncState
  schedule: dict[str, Any]
  client_training: Any
  rows: list[dict[str, float]]
  seconds: float
  # The observer's `snapshot()` (one that keeps what it saw), else None;
  # defaulted so checkpoints saved before observers were kept still load.
  observer: Any = None


def _fingerprint(method: Any, schedule: schedule_lib.AsyncSchedule,
                 initial_weights: Weights, eval_every: int) -> dict[str, Any]:
  """The run a checkpoint belongs to: resuming another run is an error."""
  return dict(method=type(method).__name__,
              num_clients=schedule.num_clients,
              clients_per_round=schedule.clients_per_round,
              delay_std=schedule.delay_std, num_rounds=schedule.num_rounds,
              eval_every=eval_every,
              weight_shapes=[list(np.shape(w)) for w in initial_weights])


def _load_checkpoint(path: Optional[str],
                     fingerprint: dict[str, Any]) -> Optional[_Checkpoint]:
  """The checkpoint at `path`, or None if there is none yet."""
  if not path or not os.path.exists(path):
    return None
  try:
    with open(path, 'rb') as f:
      saved = pickle.load(f)
  except (pickle.UnpicklingError, EOFError, AttributeError, ImportError,
          IndexError, TypeError, ValueError) as e:
    raise checkpoints.CheckpointMismatchError(
        f'{path} is damaged ({type(e).__name__}: {e}); remove it to start '
        'the run over, or choose another path.') from e
  if not isinstance(saved, _Checkpoint) or saved.fingerprint != fingerprint:
    raise checkpoints.CheckpointMismatchError(
        f'{path} holds another asynchronous run (saved: '
        f'{getattr(saved, "fingerprint", None)}; this run: {fingerprint}); '
        'remove it or choose another path.')
  return saved


def _snapshot(stateful: Any) -> Any:
  """The state of a stateful client training or observer (its
  `snapshot()`), else None."""
  snapshot = getattr(stateful, 'snapshot', None)
  return snapshot() if snapshot is not None else None


class AsyncRunResult(NamedTuple):
  """What `run_async` returns.

  Attributes:
    weights: The final global trainable weights.
    rows: One dict per evaluation: `round`, the evaluation metrics,
      `train_loss` (the last trained round's mean client loss), `seconds`.
    num_trained: Client updates computed.
    num_applied: Client updates that arrived and were given to the method.
    num_dropped: Updates not trained because they could never arrive.
    num_discarded: Updates that arrived with weight 0 (no examples trained
      on, or a non-finite update) and were not given to the method
      (`AsyncState.num_discarded`).
  """

  weights: list[np.ndarray]
  rows: list[dict[str, float]]
  num_trained: int
  num_applied: int
  num_dropped: int
  num_discarded: int = 0


def run_async(
    method: Any,
    schedule: schedule_lib.AsyncSchedule,
    client_training: tff.Computation,
    dataset_fn: Callable[[int, int], tf.data.Dataset],
    initial_weights: Weights,
    *,
    evaluate_fn: Callable[[list[np.ndarray]], dict[str, float]],
    eval_every: int = 10,
    round_end_fn: Optional[Callable[[int, list[np.ndarray]], None]] = None,
    checkpoint_path: Optional[str] = None,
    group_training: Optional[Callable[..., Any]] = None,
    clients_per_group: int = AUTO,
    observer: Optional[strategy_lib.AsyncObserver] = None,
) -> AsyncRunResult:
  """Runs `schedule.num_rounds` asynchronous rounds.

  Args:
    method: The server method, a `strategy.AsyncStrategy` (e.g.
      `tff_mixed.async_registry.build('fedbuff', model, buffer_size=10)`).
    schedule: A fresh `AsyncSchedule` (it is advanced here).
    client_training: From `client_training.build_client_training` (or a
      `loadaboost.LoAdaBoostTraining`).
    dataset_fn: `dataset_fn(client, round_num)`: a client's dataset for
      the round it is sampled in.
    initial_weights: The initial global trainable weights.
    evaluate_fn: Metrics of global weights, e.g. accuracy on the test set.
    eval_every: Evaluate every this many rounds (and after round 0 and the
      last round).
    round_end_fn: Optional `round_end_fn(round_num, weights)` after each
      round (e.g. diagnostics); on resumption it is called for the rounds
      run after the checkpoint only.
    checkpoint_path: Optional file: after every round the run is saved
      there (atomically), and a run that finds it resumes after its round.
      The schedule, method and client training must be built as for the
      saved run: the method's type, the schedule and the weights' shapes
      are checked, the method's hyperparameters are not (name the file
      after them, as experiments/hybrid_async does).
    group_training: Optional client groups, the fast simulation mode:
      `client_training.build_group_client_training` (or a LoAdaBoost
      driver's `train_groups`), called as `group_training(weights,
      round_num, groups)` with a round's clients split into groups of int32
      ids; it returns per group its members' updates, stacked, and `loss`.
      Every client of a round trains from the round's model, and the server
      method gets each client's own update as before, so results equal the
      per-client path's for every method (FedAsync, FedBuff, CA2FL, Feddle,
      the hybrid baselines). Without it, clients train one per CLIENTS
      member.
    clients_per_group: With `group_training`, the group size: 0 (default)
      one group per core, 1 the per-client path (`client_training` and
      `dataset_fn`).
    observer: Optional `strategy.AsyncObserver`: `on_merge` after each of
      the method's merges, `on_round` after each round (on resumption, for
      the rounds run after the checkpoint only). It cannot change the run.
      One that keeps what it saw and defines `snapshot()` and
      `restore(snapshot)` is saved with each checkpoint and restored on
      resumption, so it ends as after an uninterrupted run.

  Returns:
    An `AsyncRunResult`.

  Raises:
    ValueError: For a bad `eval_every` or `clients_per_group`, or (from the
      schedule) a round with too few idle clients.
    TypeError: For an `observer` with a method that is no `AsyncStrategy`.
    CheckpointMismatchError: If `checkpoint_path` holds another run.
    run_lock.DirectoryInUseError: If another process runs the run of
      `checkpoint_path`.
    runner.RunInterrupted: On Ctrl-C or SIGTERM, once the round being saved
      is (the checkpoint holds the last round run).
    checkpoints.DiskFullError: If the disk is full (the checkpoint keeps the
      round before).
  """
  # The TFF workers this run starts end with this process (an explicit call:
  # importing tff_mixed does not make it).
  runtime.register_worker_cleanup()
  if isinstance(eval_every, bool) or not isinstance(
      eval_every, int) or eval_every < 1:
    raise ValueError(f'`eval_every` must be an int >= 1, got {eval_every!r}.')
  process = AsyncProcess(method, schedule, client_training, dataset_fn,
                         initial_weights, group_training, clients_per_group,
                         observer)
  fingerprint = _fingerprint(method, schedule, initial_weights, eval_every)
  if not checkpoint_path:
    return _run(process, schedule, client_training, evaluate_fn, eval_every,
                round_end_fn, None, fingerprint, observer)
  # One process at a time runs it: two would write one checkpoint file.
  run_lock.lock_run_file(checkpoint_path)
  try:
    return _run(process, schedule, client_training, evaluate_fn, eval_every,
                round_end_fn, checkpoint_path, fingerprint, observer)
  finally:
    run_lock.unlock_run_file(checkpoint_path)


def _run(process: AsyncProcess, schedule: schedule_lib.AsyncSchedule,
         client_training: Any,
         evaluate_fn: Callable[[list[np.ndarray]], dict[str, float]],
         eval_every: int, round_end_fn: Any, checkpoint_path: Optional[str],
         fingerprint: dict[str, Any], observer: Any) -> AsyncRunResult:
  """`run_async`'s run, its arguments checked (and its checkpoint locked).

  Ctrl-C and SIGTERM stop it as they stop `runner.run_training`, the round
  being saved finished first (`stop_signals`): `runner.RunInterrupted`.
  """
  saved = _load_checkpoint(checkpoint_path, fingerprint)
  if saved is None:
    state, first_round, seconds_before = process.initialize(), 0, 0.0
    rows = [dict(round=0, train_loss=float('nan'), seconds=0.0,
                 **evaluate_fn(state.weights))]
  else:
    schedule.restore(saved.schedule)
    if saved.client_training is not None:
      client_training.restore(saved.client_training)
    if saved.observer is not None:
      observer.restore(saved.observer)
    state, first_round, seconds_before = (saved.state, saved.round_num,
                                          saved.seconds)
    rows = list(saved.rows)
    logging.info('Resuming the asynchronous run after round %d (%s).',
                 first_round, checkpoint_path)
  start = time.perf_counter()

  def next_fn(state, round_num):
    state = process.next(state, round_num)
    return state, {'train_loss': state.train_loss}, state.weights

  def diverged(round_num, bad):
    del bad  # Only the weights are checked.
    return FloatingPointError(
        f'The global model became non-finite at round {round_num}.')

  def finish_round(round_num, state, metrics):
    # A stop signal waits for the round to be saved.
    with stop_signals.deferred():
      if round_end_fn is not None:
        round_end_fn(round_num, state.weights)
      seconds = seconds_before + time.perf_counter() - start
      if round_num % eval_every == 0 or round_num == schedule.num_rounds:
        rows.append(dict(round=round_num, train_loss=state.train_loss,
                         seconds=seconds,
                         **{k: v for k, v in metrics.items()
                            if k != 'train_loss'}))
        logging.info('round %d/%d: %s', round_num, schedule.num_rounds,
                     {k: round(v, 4) for k, v in rows[-1].items()
                      if isinstance(v, float)})
      if checkpoint_path:
        saved = _Checkpoint(fingerprint, round_num, state,
                            schedule.snapshot(), _snapshot(client_training),
                            rows, seconds, _snapshot(observer))
        _save(checkpoint_path, saved, last['saved'])
        last['saved'] = round_num
      last['round'] = round_num

  # The last round run, and the last saved (None: none yet).
  last = dict(round=first_round, saved=first_round or None)
  with stop_signals.stop_on_signals():
    try:
      state, _ = round_loop.run_rounds(
          next_fn, state, first_round=first_round,
          total_rounds=schedule.num_rounds,
          name='async', diverged=diverged, finish_round_fn=finish_round,
          evaluation_fn=evaluate_fn, rounds_per_evaluation=eval_every,
          check_metrics=False, progress=False)
    except KeyboardInterrupt as e:
      signum = stop_signals.signal_number(e)
      name = os.path.basename(checkpoint_path or 'the asynchronous run')
      raise runner.RunInterrupted(runner.interrupted_message(
          name, last['round'], last['saved'], signum), signum) from e
  return _run_result(state, rows)


def _save(path: str, saved: _Checkpoint, last_saved: Optional[int]) -> None:
  """Writes `saved` to `path` atomically.

  Raises:
    checkpoints.DiskFullError: If the disk is full (the previous checkpoint
      stays).
  """
  with checkpoints.disk_full_as(lambda: (
      f'No space left on device to save round {saved.round_num} in {path}; '
      f'it holds {f"round {last_saved}" if last_saved else "nothing yet"}: '
      'free some space and run the same command to resume')):
    reports.atomic_write(path, lambda f: pickle.dump(saved, f), mode='wb')


def _run_result(state: AsyncState,
                rows: list[dict[str, float]]) -> AsyncRunResult:
  """The `AsyncRunResult` of a run that ended in `state`.

  Warns of the updates of weight 0 the run discarded, if any, in sum.
  """
  if state.num_discarded:
    logging.warning('%d arriving client update(s) of weight 0 were not '
                    'given to the method in this run (of %d trained).',
                    state.num_discarded, state.num_trained)
  return AsyncRunResult(state.weights, rows, state.num_trained,
                        state.num_applied, state.num_dropped,
                        state.num_discarded)
