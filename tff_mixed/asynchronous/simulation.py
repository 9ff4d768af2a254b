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
4.  the server method applies the updates that arrive in round k.

The server method is a `strategy.AsyncStrategy` (`initial_state()`,
`apply(state, weights, updates, on_merge) -> (state, weights)`, where
`updates` are `strategy.ClientUpdate`s in arrival order; none, and no client
trains, if it sets `uses_client_updates = False`): FedAsync, FedBuff and
CA2FL (`server_strategies`), `deadline_fedavg.DeadlineFedAvg`,
`feddle.FeddleMethod` (Feddle behind a FedBuff-style buffer, so that zero
search steps give FedBuff) and the hybrid baselines of `hybrid_baselines`;
`tff_mixed.registry.build` makes each by name. Any object with
`initial_state()` and `apply(state, weights, updates)` also runs, without
merge events. An `observer` (`strategy.AsyncObserver`) sees every merge,
with its round, and the end of every round.

`AsyncProcess` is one round as `initialize()` / `next(state, round_num)`,
like a `tff.templates.IterativeProcess`; `run_async` drives it with the round
loop every training run shares (`training.runner.run_rounds`: divergence
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
from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import strategy as strategy_lib
from tff_mixed.core import client_groups
from tff_mixed.training import checkpoints
from tff_mixed.training import reports
from tff_mixed.training import runner

Weights = Sequence[np.ndarray]

# `clients_per_group` that gives one group per core.
AUTO = client_groups.AUTO


class AsyncState(NamedTuple):
  """The simulation's state between rounds.

  Attributes:
    weights: The global trainable weights.
    method_state: The server method's state.
    pending: Per client, its trained update, the weights it started from and
      its example count, held until the update arrives.
    train_loss: The last trained round's mean client loss (NaN before).
    num_trained: Client updates computed.
    num_applied: Client updates that arrived and were given to the method.
    num_dropped: Updates not trained because they could never arrive.
  """

  weights: list[np.ndarray]
  method_state: Any
  pending: dict[int, tuple[list[np.ndarray], list[np.ndarray], float]]
  train_loss: float
  num_trained: int
  num_applied: int
  num_dropped: int


class AsyncProcess:
  """One asynchronous round as `initialize()` / `next(state, round_num)`."""

  def __init__(self, method: Any, schedule: schedule_lib.AsyncSchedule,
               client_training: Callable[..., Any],
               dataset_fn: Callable[[int, int], tf.data.Dataset],
               initial_weights: Weights,
               group_training: Optional[Callable[..., Any]] = None,
               clients_per_group: int = AUTO,
               observer: Optional[strategy_lib.AsyncObserver] = None):
    """See `run_async` for the arguments; `schedule` must be fresh."""
    if observer is not None and not isinstance(method,
                                               strategy_lib.AsyncStrategy):
      raise TypeError(
          'An observer needs a method that reports its merges, a '
          f'strategy.AsyncStrategy; got {type(method).__name__}.')
    self._observer = observer
    self._method = method
    self._schedule = schedule
    self._client_training = client_training
    self._dataset_fn = dataset_fn
    self._initial_weights = initial_weights
    self._group_training = group_training
    self._clients_per_group = client_groups.check_clients_per_group(
        clients_per_group)
    # A method that ignores client updates (Center) spares their training.
    self._uses_updates = getattr(method, 'uses_client_updates', True)

  def _train(self, weights: list[np.ndarray], round_num: int,
             clients: list[int]
             ) -> tuple[list[list[np.ndarray]], list[float], float]:
    """Each client's update (`trained - weights`) and example count (the
    examples it trained on, its weight in weighted aggregation), and the
    mean loss."""
    model_weights = tff.learning.models.ModelWeights(
        trainable=tuple(weights), non_trainable=())
    size = client_groups.clients_per_group_for(self._clients_per_group,
                                               len(clients))
    if self._group_training is None or size == 1:
      result = self._client_training(
          model_weights, [self._dataset_fn(c, round_num) for c in clients])
      updates = [[np.asarray(u) for u in update]
                 for update in result['update']]
      counts = [float(n) for n in result['num_examples']]
    else:
      groups = client_groups.split_cohort(clients, size)
      result = self._group_training(
          model_weights, np.int64(round_num),
          [np.asarray(g, client_training.GROUP_ID_DTYPE) for g in groups])
      # Per group, its members' updates stacked in the order of `clients`.
      updates = [[np.asarray(u)[m] for u in stacked]
                 for stacked, g in zip(result['update'], groups)
                 for m in range(len(g))]
      counts = [float(n) for stacked in result['num_examples']
                for n in np.asarray(stacked)]
    return updates, counts, float(result['loss'])

  def _apply(self, state: AsyncState, updates: list[Any], round_num: int
             ) -> tuple[Any, list[np.ndarray]]:
    """The method's `apply`, its merges and the round shown the observer."""
    observer = self._observer
    if observer is None:
      return self._method.apply(state.method_state, state.weights, updates)
    merges = []

    def on_merge(event):
      merges.append(event.merge_index)
      observer.on_merge(event._replace(round_num=round_num))

    method_state, weights = self._method.apply(
        state.method_state, state.weights, updates, on_merge=on_merge)
    observer.on_round(strategy_lib.RoundEvent(
        round_num, [np.asarray(w) for w in weights], len(updates),
        len(merges), method_state))
    return method_state, weights

  def initialize(self) -> AsyncState:
    return AsyncState([np.asarray(w) for w in self._initial_weights],
                      self._method.initial_state(), {}, float('nan'), 0, 0, 0)

  def next(self, state: AsyncState, round_num: int) -> AsyncState:
    """Round `round_num`: sample, train, deliver the arrivals, apply them."""
    schedule = self._schedule
    sampled = schedule.sample(round_num)
    never = {a.client for a in schedule.never_arriving()
             if a.sampled_round == round_num}
    to_train = [c for c in sampled if c not in never]
    dropped = state.num_dropped + len(sampled) - len(to_train)
    if not self._uses_updates:
      to_train = []
    pending = dict(state.pending)
    trained, train_loss = state.num_trained, state.train_loss
    if to_train:
      client_updates, counts, train_loss = self._train(
          state.weights, round_num, to_train)
      for client, update, count in zip(to_train, client_updates, counts):
        pending[client] = (update, state.weights, count)
      trained += len(to_train)
    updates = []
    for arrival in schedule.arrivals(round_num):
      if arrival.client not in pending:
        continue  # Never trained: it could not arrive within the run.
      delta, base, count = pending.pop(arrival.client)
      updates.append(server_strategies.ClientUpdate(
          arrival.client, delta, arrival.staleness, base=base,
          num_examples=count))
    method_state, weights = self._apply(state, updates, round_num)
    return AsyncState([np.asarray(w) for w in weights], method_state, pending,
                      train_loss, trained, state.num_applied + len(updates),
                      dropped)


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
  with open(path, 'rb') as f:
    saved = pickle.load(f)
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
  """

  weights: list[np.ndarray]
  rows: list[dict[str, float]]
  num_trained: int
  num_applied: int
  num_dropped: int


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
      `tff_mixed.registry.build('fedbuff', model, buffer_size=10)`).
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
      saved = _Checkpoint(fingerprint, round_num, state, schedule.snapshot(),
                          _snapshot(client_training), rows, seconds,
                          _snapshot(observer))
      reports.atomic_write(checkpoint_path,
                           lambda f: pickle.dump(saved, f), mode='wb')

  state, _ = runner.run_rounds(
      next_fn, state, first_round=first_round,
      total_rounds=schedule.num_rounds,
      name='async', diverged=diverged, finish_round_fn=finish_round,
      evaluation_fn=evaluate_fn, rounds_per_evaluation=eval_every,
      check_metrics=False, progress=False)
  return AsyncRunResult(state.weights, rows, state.num_trained,
                        state.num_applied, state.num_dropped)
