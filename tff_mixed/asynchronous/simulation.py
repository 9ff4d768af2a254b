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

Each round k (the guided-model-merging paper's asynchronous setting, seed
003, appendix):

1.  the schedule samples idle clients (`AsyncSchedule.sample`);
2.  they train now, in one call of the TFF federated computation
    (`client_training.build_client_training`), from the round-k model; an
    update that can never arrive within the run is not trained;
3.  each update is held in Python until its arrival round;
4.  the server method applies the updates that arrive in round k.

A server method is any object with `initial_state()` and
`apply(state, weights, updates) -> (state, weights)`, where `updates` are
`server_strategies.ClientUpdate`s in arrival order (none, and no client
trains, if it sets `uses_client_updates = False`): FedAsync, FedBuff and
CA2FL (`server_strategies`), and `FeddleMethod` here (Feddle behind a
FedBuff-style buffer, so that zero search steps give FedBuff).
"""

from collections.abc import Callable, Sequence
import time
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import server_strategies

Weights = Sequence[np.ndarray]


class FeddleState(NamedTuple):
  """Feddle's server state: the atlas and the not yet merged updates."""

  atlas: feddle.Atlas
  buffer: tuple[server_strategies.ClientUpdate, ...]
  num_merges: int


class FeddleMethod:
  """Feddle (Zhu et al., guided model merging, Algorithm 1) as a server method of `run_async`.

  Arrived updates are buffered; every `buffer_size` of them trigger one
  `feddle.feddle_step` (atlas update, coefficient search on the server data
  from FedBuff's coefficients). `last_diagnostics` keeps the diagnostics of
  the latest merge (share of negative coefficients, coefficient gradients;
  out-of-domain with an `id_probe`, the in-domain/out-of-domain gradient
  cosine similarities).
  """

  def __init__(self, model: tff.learning.models.FunctionalModel,
               config: feddle.FeddleConfig, server_data: Any,
               buffer_size: int,
               features_fn: Optional[Callable[..., Any]] = None,
               id_probe: Any = None):
    feddle.validate_config(config)
    if isinstance(buffer_size, bool) or not isinstance(
        buffer_size, int) or buffer_size < 1:
      raise ValueError(f'`buffer_size` must be an int >= 1, got '
                       f'{buffer_size!r}.')
    if buffer_size > config.max_anchors:
      raise ValueError(f'`buffer_size` ({buffer_size}) must be at most the '
                       f'atlas size `max_anchors` ({config.max_anchors}).')
    self._model = model
    self._config = config
    self._server_data = server_data
    self._buffer_size = buffer_size
    self._features_fn = features_fn
    # Out-of-domain only: an in-domain batch for the gradient-alignment
    # diagnostics (never used for the update).
    if id_probe is not None:
      if not config.out_of_domain:
        raise ValueError('`id_probe` is a diagnostic of out-of-domain Feddle; '
                         'in-domain Feddle searches on the probe\'s kind of '
                         'data already.')
      feddle.check_server_data(id_probe, model.input_spec)
    self._id_probe = id_probe
    self.last_diagnostics: Optional[feddle.FeddleDiagnostics] = None

  def initial_state(self) -> FeddleState:
    return FeddleState(feddle.empty_atlas(), (), 0)

  def apply(self, state: FeddleState, weights: Weights,
            updates: Sequence[server_strategies.ClientUpdate]
           ) -> tuple[FeddleState, list[np.ndarray]]:
    buffer = list(state.buffer) + list(updates)
    atlas, merges = state.atlas, state.num_merges
    weights = [np.asarray(w) for w in weights]
    while len(buffer) >= self._buffer_size:
      batch, buffer = (buffer[:self._buffer_size],
                       buffer[self._buffer_size:])
      new_weights, atlas, self.last_diagnostics = feddle.feddle_step(
          self._model, weights, atlas, [u.delta for u in batch],
          self._server_data, self._config, features_fn=self._features_fn,
          id_probe=self._id_probe)
      weights = [np.asarray(w, dtype=old.dtype)
                 for w, old in zip(new_weights, weights)]
      merges += 1
    return FeddleState(atlas, tuple(buffer), merges), weights


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
) -> AsyncRunResult:
  """Runs `schedule.num_rounds` asynchronous rounds.

  Args:
    method: The server method (`initial_state`, `apply`).
    schedule: A fresh `AsyncSchedule` (it is advanced here).
    client_training: From `client_training.build_client_training`.
    dataset_fn: `dataset_fn(client, round_num)`: a client's dataset for
      the round it is sampled in.
    initial_weights: The initial global trainable weights.
    evaluate_fn: Metrics of global weights, e.g. accuracy on the test set.
    eval_every: Evaluate every this many rounds (and after round 0 and the
      last round).
    round_end_fn: Optional `round_end_fn(round_num, weights)` after each
      round (e.g. diagnostics).

  Returns:
    An `AsyncRunResult`.

  Raises:
    ValueError: For a bad `eval_every`, or (from the schedule) a round with
      too few idle clients.
  """
  if isinstance(eval_every, bool) or not isinstance(
      eval_every, int) or eval_every < 1:
    raise ValueError(f'`eval_every` must be an int >= 1, got {eval_every!r}.')
  weights = [np.asarray(w) for w in initial_weights]
  state = method.initial_state()
  # A method that ignores client updates (Center) spares their training.
  uses_updates = getattr(method, 'uses_client_updates', True)
  pending: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
  rows = [dict(round=0, train_loss=float('nan'), seconds=0.0,
               **evaluate_fn(weights))]
  trained = applied = dropped = 0
  train_loss = float('nan')
  start = time.perf_counter()
  for round_num in range(1, schedule.num_rounds + 1):
    sampled = schedule.sample(round_num)
    never = {a.client for a in schedule.never_arriving()
             if a.sampled_round == round_num}
    to_train = [c for c in sampled if c not in never]
    dropped += len(sampled) - len(to_train)
    if not uses_updates:
      to_train = []
    if to_train:
      result = client_training(
          tff.learning.models.ModelWeights(trainable=tuple(weights),
                                           non_trainable=()),
          [dataset_fn(c, round_num) for c in to_train])
      for client, update in zip(to_train, result['update']):
        pending[client] = ([np.asarray(u) for u in update], weights)
      trained += len(to_train)
      train_loss = float(result['loss'])
    updates = []
    for arrival in schedule.arrivals(round_num):
      if arrival.client not in pending:
        continue  # Never trained: it could not arrive within the run.
      delta, base = pending.pop(arrival.client)
      updates.append(server_strategies.ClientUpdate(
          arrival.client, delta, arrival.staleness, base=base))
    applied += len(updates)
    state, weights = method.apply(state, weights, updates)
    weights = [np.asarray(w) for w in weights]
    if not all(np.all(np.isfinite(w)) for w in weights):
      raise FloatingPointError(
          f'The global model became non-finite at round {round_num}.')
    if round_end_fn is not None:
      round_end_fn(round_num, weights)
    if round_num % eval_every == 0 or round_num == schedule.num_rounds:
      rows.append(dict(round=round_num, train_loss=train_loss,
                       seconds=time.perf_counter() - start,
                       **evaluate_fn(weights)))
      logging.info('round %d/%d: %s', round_num, schedule.num_rounds,
                   {k: round(v, 4) for k, v in rows[-1].items()
                    if isinstance(v, float)})
  return AsyncRunResult(weights, rows, trained, applied, dropped)
