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
"""One round of asynchronous FL: `AsyncProcess` and its `AsyncState`.

`AsyncProcess` is one round as `initialize()` / `next(state, round_num)`,
like a `tff.templates.IterativeProcess`: the schedule samples idle clients,
they train now from the round's model (per client, or in client groups),
their updates wait in the state until their arrival rounds, and the server
method applies those that arrive (`simulation.py`'s module docstring has
the whole loop; `simulation.run_async` drives it). Its state holds Python
objects (pending updates, the method's state) and the schedule advances in
place, so rounds must run in order, once each.
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import strategy as strategy_lib
from tff_mixed.simulation import client_groups

Weights = Sequence[np.ndarray]


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
    num_discarded: Updates that arrived with no examples behind them (a
      client that trained on none, or whose update was non-finite and so
      zeroed with weight 0) and were not given to the method. Defaulted, so
      that checkpoints saved before it was counted still load.
  """

  weights: list[np.ndarray]
  method_state: Any
  pending: dict[int, tuple[list[np.ndarray], list[np.ndarray], float]]
  train_loss: float
  num_trained: int
  num_applied: int
  num_dropped: int
  num_discarded: int = 0


class AsyncProcess:
  """One asynchronous round as `initialize()` / `next(state, round_num)`."""

  def __init__(self, method: Any, schedule: schedule_lib.AsyncSchedule,
               client_training: Callable[..., Any],
               dataset_fn: Callable[[int, int], tf.data.Dataset],
               initial_weights: Weights,
               group_training: Optional[Callable[..., Any]] = None,
               clients_per_group: int = client_groups.AUTO,
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
    # Updates of weight 0 are warned of once a run, then only counted.
    self._warned_of_discards = False

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
    updates, discarded = [], 0
    for arrival in schedule.arrivals(round_num):
      if arrival.client not in pending:
        continue  # Never trained: it could not arrive within the run.
      delta, base, count = pending.pop(arrival.client)
      if count == 0:
        # Weight 0: the client trained on no examples, or its update was
        # non-finite and zeroed (the client training's guard). Its delta
        # is zeros and carries nothing, but a method would count it (a
        # zero in a uniform mean, in CA2FL's cache) or refuse it (FedBuff
        # by examples), so it is counted here instead.
        discarded += 1
        continue
      updates.append(server_strategies.ClientUpdate(
          arrival.client, delta, arrival.staleness, base=base,
          num_examples=count))
    if discarded and not self._warned_of_discards:
      self._warned_of_discards = True
      logging.warning(
          'round %d: %d arriving client update(s) had weight 0 (the client '
          'trained on no examples, or its update was non-finite) and were '
          'not given to the method; later ones in this run are only '
          'counted (AsyncRunResult.num_discarded).', round_num, discarded)
    method_state, weights = self._apply(state, updates, round_num)
    return AsyncState([np.asarray(w) for w in weights], method_state, pending,
                      train_loss, trained, state.num_applied + len(updates),
                      dropped, state.num_discarded + discarded)
