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
"""Asynchronous server aggregation: FedAsync, FedBuff and CA2FL.

The asynchronous baselines of the guided-model-merging paper (Feddle,
"Guided Model Merging for Hybrid Data Learning"), as pure functions of the
server state and the model weights (a sequence of numpy arrays; anything
`numpy.asarray` accepts, e.g. eager tf tensors). They know nothing of TFF:
a driver trains clients with a TFF computation, learns from
`schedule.AsyncSchedule` whose updates arrive, and calls once per round

    state, weights = strategy.apply(state, weights, updates)

with the round's arrived `ClientUpdate`s in order of arrival (possibly none):
the `strategy.AsyncStrategy` interface, whose optional `on_merge` sees each
merge (each FedAsync mixing, each full FedBuff or CA2FL buffer).
`apply` never modifies its arguments and returns the weights as a new list of
numpy arrays with the dtypes of the input weights (arithmetic is done in
float64).

A client update is `delta = client model - model the client started from`
(so a descent step has the sign of `-gradient`), and `staleness` is the
number of rounds between the broadcast the client trained from and its
arrival (`schedule.Arrival.staleness`).

* FedAsync (Xie et al., "Asynchronous Federated Optimization", 2019,
  Algorithm 1 with adaptive mixing): each update, in order of arrival, mixes
  the client's model into the server model,

      alpha_t = alpha * s(staleness),
      x <- (1 - alpha_t) x + alpha_t x_client,  x_client = base + delta,

  where `base` is the model the client started from. Staleness functions
  `s(d)`: polynomial `(d + 1)^(-a)` (default, a = 0.5), hinge (1 if d <= b,
  else 1 / (a (d - b) + 1)), or constant 1. d counts `staleness_unit`:
  server steps (default, Xie et al.'s t - tau; one per arrival) or rounds
  (`staleness.staleness_in`).
* FedBuff (Nguyen et al., "Federated Learning with Buffered Asynchronous
  Aggregation", AISTATS 2022): updates are appended to a buffer; whenever it
  holds M updates the server applies

      x <- x + eta_g * (1/M) sum_{j in buffer} w(tau_j) delta_j

  and empties it, w(tau) = (1 + tau)^(-p) (p = `staleness_exponent`,
  default 0: the plain mean). With `weighting='num_examples'` the mean is
  weighted by the clients' example counts n_j (`ClientUpdate.num_examples`),

      x <- x + eta_g * sum_j n_j w(tau_j) delta_j / sum_j n_j,

  so that M updates from one model with eta_g = 1 make a round of weighted
  FedAvg (McMahan et al. 2017, the `fedavg` baseline of the guided merging
  paper). The step is along the mean, as the guided
  merging paper states FedBuff (Zhu et al., appendix: eta_g / M times the sum
  of the buffered updates); FLSim's FedBuff steps along the sum, so its
  server learning rate is eta_g / M. With M = 1 and every client starting
  from the current model, FedBuff is FedAsync with alpha = eta_g and
  s = w; with M clients from one model it is one FedAvg round with server
  learning rate eta_g (tests/server_strategies_test.py, FLSim equivalences).
* CA2FL (Wang et al., "Tackling the Data Heterogeneity in Asynchronous
  Federated Learning with Cached Update Calibration", ICLR 2024, Algorithm
  1): the server caches the latest update h_i of every client (h_i = 0 before
  client i's first arrival). Whenever the buffer holds M updates,

      h_bar = (1/N) sum_{i=1..N} h_i                ('all_clients', paper)
           or mean of h_i over clients with a cache ('cached_clients'),
      v = h_bar + (1/M) sum_{j in buffer} (delta_j - h_j),
      x <- x + eta_g * v,

  with h_bar and h_j the cache as it was before this buffer (as in the
  paper, where the calibration uses h_t^j and the cache refreshed during a
  server round only counts from the next one); then h_j <- delta_j for every
  buffered update (the later one wins if a client appears twice).

In FedBuff and CA2FL several flushes can happen in one `apply` (if more than
M updates arrive), and the leftovers stay buffered across rounds.
"""

from collections.abc import Mapping, Sequence
import numbers
from typing import Any, NamedTuple, Optional

import numpy as np

from tff_mixed.asynchronous import staleness as staleness_lib
from tff_mixed.asynchronous import strategy

# The interface and its update, importable from here as before.
AsyncStrategy = strategy.AsyncStrategy
ClientUpdate = strategy.ClientUpdate
Weights = strategy.Weights

# How FedBuff averages a full buffer: the plain mean (FedBuff's paper) or
# weighted by the clients' example counts (FedAvg's weighting).
WEIGHTING_UNIFORM = 'uniform'
WEIGHTING_NUM_EXAMPLES = 'num_examples'
WEIGHTINGS = (WEIGHTING_UNIFORM, WEIGHTING_NUM_EXAMPLES)

CACHE_AVERAGE_ALL_CLIENTS = 'all_clients'
CACHE_AVERAGE_CACHED_CLIENTS = 'cached_clients'
_CACHE_AVERAGES = (CACHE_AVERAGE_ALL_CLIENTS, CACHE_AVERAGE_CACHED_CLIENTS)


class BufferedUpdate(NamedTuple):
  """An update waiting in a FedBuff / CA2FL buffer.

  Attributes:
    client: The client id.
    delta: The update, a tuple of float64 arrays.
    staleness: Its staleness when it arrived.
    num_examples: Its example count (1 when the aggregation is unweighted).
  """
  client: int
  delta: tuple[np.ndarray, ...]
  staleness: int
  num_examples: float = 1.0


class FedAsyncState(NamedTuple):
  """FedAsync server state.

  Attributes:
    num_updates: Server model updates applied so far (one per arrival).
    round_starts: `num_updates` at the start of each round so far: when
      each round's clients were sent the model (one integer a round).
  """
  num_updates: int
  round_starts: tuple[int, ...] = ()


class FedBuffState(NamedTuple):
  """FedBuff server state.

  Attributes:
    buffer: Updates received since the last server step (fewer than M).
    num_updates: Server steps applied so far (one per full buffer).
  """
  buffer: tuple[BufferedUpdate, ...]
  num_updates: int


class CA2FLState(NamedTuple):
  """CA2FL server state.

  Attributes:
    buffer: Updates received since the last server step (fewer than M).
    cache: Client id -> its latest update h_i as of the last server step (a
      tuple of float64 arrays); clients never seen are absent (h_i = 0).
      Never modified in place.
    num_updates: Server steps applied so far (one per full buffer).
  """
  buffer: tuple[BufferedUpdate, ...]
  cache: Mapping[int, tuple[np.ndarray, ...]]
  num_updates: int


def _check_learning_rate(learning_rate: Any) -> None:
  if (not isinstance(learning_rate, numbers.Real)
      or not np.isfinite(learning_rate) or learning_rate <= 0):
    raise ValueError(
        f'learning_rate must be a finite number > 0, got {learning_rate!r}.')


def _check_buffer_size(buffer_size: Any) -> None:
  if (isinstance(buffer_size, bool)
      or not isinstance(buffer_size, numbers.Integral) or buffer_size < 1):
    raise ValueError(
        f'buffer_size (M) must be an integer >= 1, got {buffer_size!r}.')


def _as_float64(weights: Weights, name: str) -> tuple[np.ndarray, ...]:
  if isinstance(weights, np.ndarray) or not isinstance(weights, Sequence):
    raise ValueError(f'{name} must be a list or tuple of arrays, got '
                     f'{type(weights).__name__}.')
  # Copies, so that buffers and caches never alias the caller's arrays.
  return tuple(np.array(w, dtype=np.float64) for w in weights)


def _check_like(reference: Sequence[np.ndarray], other: Sequence[np.ndarray],
                name: str) -> None:
  if len(other) != len(reference):
    raise ValueError(f'{name} has {len(other)} arrays, the weights have '
                     f'{len(reference)}.')
  for i, (r, o) in enumerate(zip(reference, other)):
    if r.shape != o.shape:
      raise ValueError(f'{name}[{i}] has shape {o.shape}, the weights have '
                       f'{r.shape}.')


def _check_update(update: Any, weights: Sequence[np.ndarray],
                  position: int) -> tuple[np.ndarray, ...]:
  """Validates one update; returns its delta as float64 arrays."""
  if not isinstance(update, ClientUpdate):
    raise ValueError(f'updates[{position}] must be a ClientUpdate, got '
                     f'{type(update).__name__}.')
  if (isinstance(update.client, bool)
      or not isinstance(update.client, numbers.Integral) or update.client < 0):
    raise ValueError(f'updates[{position}].client must be an integer >= 0, '
                     f'got {update.client!r}.')
  if (isinstance(update.staleness, bool)
      or not isinstance(update.staleness, numbers.Integral)
      or update.staleness < 0):
    raise ValueError(f'updates[{position}].staleness must be an integer >= 0,'
                     f' got {update.staleness!r}.')
  delta = _as_float64(update.delta, f'updates[{position}].delta')
  _check_like(weights, delta, f'updates[{position}].delta')
  return delta


def _update_weight(update: ClientUpdate, position: int) -> float:
  """The example count of an update, checked: a finite number > 0.

  A count of 0 is refused, not taken: such an update carries nothing but
  would fill a place in the buffer. `simulation.AsyncProcess` never hands
  one over (it discards and counts them); a caller of `apply` gets this.
  """
  n = update.num_examples
  if (isinstance(n, bool) or not isinstance(n, numbers.Real)
      or not np.isfinite(n) or n <= 0):
    raise ValueError(f'updates[{position}].num_examples must be a finite '
                     f'number > 0 for weighted aggregation, got {n!r}.')
  return float(n)


def _merged(state: Any, updates: Sequence[ClientUpdate], position: int,
            size: int) -> list[Any]:
  """The `size` updates of a buffer that fills at `updates[position]`.

  Each flush takes the last `size` updates received, so this holds for
  every flush of one `apply`. Updates buffered in an earlier round are
  given as the buffer kept them (float64 deltas, no `base`).
  """
  earlier = [ClientUpdate(e.client, e.delta, e.staleness,
                          num_examples=e.num_examples) for e in state.buffer]
  return (earlier + list(updates[:position + 1]))[-size:]


def _cast_like(values: Sequence[np.ndarray], like: Weights) -> list[np.ndarray]:
  """Returns `values` with the dtypes of the caller's weights."""
  return [np.asarray(v).astype(np.asarray(w).dtype, copy=False)
          for v, w in zip(values, like)]


class FedAsync(AsyncStrategy):
  """FedAsync (Xie et al. 2019): mix each arrived model into the server's.

  For each update, in order of arrival:
  `x <- (1 - alpha_t) x + alpha_t (base + delta)`,
  `alpha_t = alpha * s(d)`, d the update's staleness in `staleness_unit`
  (with 'server_steps', `apply` must run every round from the first).
  """

  def __init__(self, alpha: float,
               staleness_fn: Optional[staleness_lib.StalenessFn] = None,
               staleness_unit: str = staleness_lib.SERVER_STEPS):
    """Configures FedAsync.

    Args:
      alpha: The mixing weight, in (0, 1].
      staleness_fn: s(d); None: `polynomial_staleness(0.5)`.
      staleness_unit: What d counts: 'server_steps' (default, Xie et al.)
        or 'rounds' (`ClientUpdate.staleness`).

    Raises:
      ValueError: If `alpha` is not in (0, 1] or `staleness_unit` unknown.
    """
    if (not isinstance(alpha, numbers.Real) or not np.isfinite(alpha)
        or not 0 < alpha <= 1):
      raise ValueError(f'alpha must be in (0, 1], got {alpha!r}.')
    self.staleness_unit = staleness_lib.check_unit(staleness_unit)
    self.alpha = float(alpha)
    self.staleness_fn = (staleness_fn if staleness_fn is not None
                         else staleness_lib.polynomial_staleness())

  def mixing_weight(self, staleness: int) -> float:
    """alpha_t = alpha * s(staleness)."""
    return self.alpha * float(self.staleness_fn(staleness))

  def initial_state(self) -> FedAsyncState:
    return FedAsyncState(num_updates=0)

  def apply(self, state: FedAsyncState, weights: Weights,
            updates: Sequence[ClientUpdate],
            on_merge: strategy.OnMerge = None
            ) -> tuple[FedAsyncState, list[np.ndarray]]:
    """See `AsyncStrategy.apply`; every update needs its `base`."""
    x = _as_float64(weights, 'weights')
    for i, update in enumerate(updates):
      delta = _check_update(update, x, i)
      if update.base is None:
        raise ValueError(
            f'updates[{i}].base is None: FedAsync mixes in the client model '
            'base + delta and needs the model the client started from.')
      base = _as_float64(update.base, f'updates[{i}].base')
      _check_like(x, base, f'updates[{i}].base')
      alpha_t = self.mixing_weight(staleness_lib.staleness_in(
          self.staleness_unit, state.round_starts, state.num_updates,
          update.staleness, i))
      before = x
      x = tuple((1.0 - alpha_t) * xi + alpha_t * (bi + di)
                for xi, bi, di in zip(x, base, delta))
      if on_merge is not None:
        strategy.report_merge(on_merge, state.num_updates + i,
                              _cast_like(before, weights),
                              _cast_like(x, weights), [update])
    new_state = FedAsyncState(
        num_updates=state.num_updates + len(updates),
        round_starts=state.round_starts + (state.num_updates,))
    return new_state, _cast_like(x, weights)


class FedBuff(AsyncStrategy):
  """FedBuff (Nguyen et al. 2022): average every M buffered updates.

  When the buffer holds M updates:
  `x <- x + eta_g * (1/M) sum_j (1 + tau_j)^(-p) delta_j` (or the mean
  weighted by example counts, `weighting='num_examples'`); leftovers stay
  buffered.
  """

  def __init__(self, learning_rate: float, buffer_size: int,
               staleness_exponent: float = 0.0,
               weighting: str = WEIGHTING_UNIFORM):
    """Configures FedBuff.

    Args:
      learning_rate: eta_g, > 0.
      buffer_size: M, >= 1.
      staleness_exponent: p >= 0 of the update weights (1 + tau)^(-p); 0
        (default) gives the plain mean.
      weighting: 'uniform' (default: each buffered update counts 1/M) or
        'num_examples' (each counts n_j / sum n, n_j its
        `ClientUpdate.num_examples`: weighted FedAvg; `apply` refuses an
        update with n_j <= 0 with a ValueError, and `run_async` gives it
        none: it discards and counts updates of weight 0).

    Raises:
      ValueError: If an argument is out of range.
    """
    _check_learning_rate(learning_rate)
    _check_buffer_size(buffer_size)
    staleness_lib.check_finite_at_least('staleness_exponent',
                                        staleness_exponent, 0.0)
    if weighting not in WEIGHTINGS:
      raise ValueError(f'weighting must be one of {WEIGHTINGS}, got '
                       f'{weighting!r}.')
    self.weighting = weighting
    self.learning_rate = float(learning_rate)
    self.buffer_size = int(buffer_size)
    self.staleness_exponent = float(staleness_exponent)

  def initial_state(self) -> FedBuffState:
    return FedBuffState(buffer=(), num_updates=0)

  def apply(self, state: FedBuffState, weights: Weights,
            updates: Sequence[ClientUpdate],
            on_merge: strategy.OnMerge = None
            ) -> tuple[FedBuffState, list[np.ndarray]]:
    """See `AsyncStrategy.apply`."""
    x = _as_float64(weights, 'weights')
    buffer = list(state.buffer)
    num_updates = state.num_updates
    weighted = self.weighting == WEIGHTING_NUM_EXAMPLES
    for i, update in enumerate(updates):
      delta = _check_update(update, x, i)
      buffer.append(BufferedUpdate(
          update.client, delta, update.staleness,
          _update_weight(update, i) if weighted else 1.0))
      if len(buffer) == self.buffer_size:
        step = [np.zeros_like(xi) for xi in x]
        for entry in buffer:
          scale = entry.num_examples * (1.0 + entry.staleness) ** (
              -self.staleness_exponent)
          for s, d in zip(step, entry.delta):
            s += scale * d
        # Uniform weights are all 1, so the total is M: the plain mean.
        total = sum(entry.num_examples for entry in buffer)
        before = x
        x = tuple(xi + self.learning_rate * s / total
                  for xi, s in zip(x, step))
        if on_merge is not None:
          strategy.report_merge(on_merge, num_updates,
                                _cast_like(before, weights),
                                _cast_like(x, weights),
                                _merged(state, updates, i, len(buffer)))
        buffer = []
        num_updates += 1
    return (FedBuffState(buffer=tuple(buffer), num_updates=num_updates),
            _cast_like(x, weights))


class CA2FL(AsyncStrategy):
  """CA2FL (Wang et al. 2023): FedBuff calibrated by cached client updates.

  When the buffer holds M updates:
  `v = h_bar + (1/M) sum_j (delta_j - h_j)`, `x <- x + eta_g v`, then
  `h_j <- delta_j`; see the module docstring for h_bar.
  """

  def __init__(self, learning_rate: float, buffer_size: int,
               num_clients: Optional[int] = None,
               cache_average: str = CACHE_AVERAGE_ALL_CLIENTS):
    """Configures CA2FL.

    Args:
      learning_rate: eta_g, > 0.
      buffer_size: M, >= 1.
      num_clients: N, the number of clients (ids in [0, N)); required by
        `cache_average='all_clients'`, else optional (then it only bounds
        the ids).
      cache_average: How h_bar averages the cache: 'all_clients' (the paper:
        (1/N) sum over all N clients, never-seen clients count as 0) or
        'cached_clients' (mean over the clients that have a cache; 0 while
        the cache is empty).

    Raises:
      ValueError: If an argument is out of range.
    """
    _check_learning_rate(learning_rate)
    _check_buffer_size(buffer_size)
    if cache_average not in _CACHE_AVERAGES:
      raise ValueError(f'cache_average must be one of {_CACHE_AVERAGES}, got '
                       f'{cache_average!r}.')
    if num_clients is None:
      if cache_average == CACHE_AVERAGE_ALL_CLIENTS:
        raise ValueError("cache_average='all_clients' needs num_clients.")
    elif (isinstance(num_clients, bool)
          or not isinstance(num_clients, numbers.Integral) or num_clients < 1):
      raise ValueError(
          f'num_clients must be an integer >= 1, got {num_clients!r}.')
    self.learning_rate = float(learning_rate)
    self.buffer_size = int(buffer_size)
    self.num_clients = None if num_clients is None else int(num_clients)
    self.cache_average = cache_average

  def initial_state(self) -> CA2FLState:
    return CA2FLState(buffer=(), cache={}, num_updates=0)

  def cache_mean(self, cache: Mapping[int, Sequence[np.ndarray]],
                 like: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """h_bar of a cache (arrays shaped like `like`)."""
    total = [np.zeros_like(w, dtype=np.float64) for w in like]
    for h in cache.values():
      for t, hi in zip(total, h):
        t += hi
    if self.cache_average == CACHE_AVERAGE_ALL_CLIENTS:
      count = self.num_clients
    else:
      count = max(len(cache), 1)
    return tuple(t / count for t in total)

  def apply(self, state: CA2FLState, weights: Weights,
            updates: Sequence[ClientUpdate],
            on_merge: strategy.OnMerge = None
            ) -> tuple[CA2FLState, list[np.ndarray]]:
    """See `AsyncStrategy.apply`."""
    x = _as_float64(weights, 'weights')
    buffer = list(state.buffer)
    cache = state.cache
    num_updates = state.num_updates
    for i, update in enumerate(updates):
      delta = _check_update(update, x, i)
      if self.num_clients is not None and update.client >= self.num_clients:
        raise ValueError(f'updates[{i}].client={update.client} is not in '
                         f'[0, num_clients={self.num_clients}).')
      buffer.append(BufferedUpdate(update.client, delta, update.staleness))
      if len(buffer) < self.buffer_size:
        continue
      v = list(self.cache_mean(cache, x))
      for entry in buffer:
        old = cache.get(entry.client)
        for j, d in enumerate(entry.delta):
          correction = d if old is None else d - old[j]
          v[j] = v[j] + correction / self.buffer_size
      before = x
      x = tuple(xi + self.learning_rate * vi for xi, vi in zip(x, v))
      if on_merge is not None:
        strategy.report_merge(on_merge, num_updates,
                              _cast_like(before, weights),
                              _cast_like(x, weights),
                              _merged(state, updates, i, len(buffer)))
      cache = dict(cache)
      for entry in buffer:
        cache[entry.client] = entry.delta
      buffer = []
      num_updates += 1
    return (CA2FLState(buffer=tuple(buffer), cache=cache,
                       num_updates=num_updates),
            _cast_like(x, weights))
