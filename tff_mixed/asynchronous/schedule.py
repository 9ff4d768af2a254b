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
"""Simulated asynchronous arrivals of client updates, driven from Python.

The asynchronous setup of the guided-model-merging paper (Feddle, "Guided
Model Merging for Hybrid Data Learning", appendix on communication delay),
which follows the half-normal delays observed by FedBuff (Nguyen et al.,
"Federated Learning with Buffered Asynchronous Aggregation", AISTATS 2022):

* every round the server samples `clients_per_round` clients uniformly among
  the idle ones; a client that was sampled and whose update has not arrived
  yet is busy and is not sampled again until its update arrives;
* each sampled client's delay is `round(|z|)` rounds with
  `z ~ N(0, delay_std^2)`;
* the update a client computes from the model of round k arrives at round
  `k + delay`, with staleness `delay`.

The schedule is independent of training, so it is plain numpy, reproducible
from one seed, and the TFF driver only asks it who trains and whose update
lands in each round.

Conventions (one round k = 1, ..., num_rounds):

1. `sample(k)`: the server broadcasts the model of round k to the sampled
   clients, who become busy. Each one's delay is drawn right after the
   sampling, from the same numpy Generator, in the order the clients are
   returned.
2. The driver trains the sampled clients (from the model of round k).
3. `arrivals(k)`: the updates whose arrival round is k, those sampled at
   round k with delay 0 included, are delivered; their clients are idle again
   and can be sampled from round k + 1 on. The server applies them to form
   the model of round k + 1.

Delay rounding: `numpy.rint(|z|)`, i.e. to the nearest integer (halves to
even, which has probability zero for a continuous z). Delay 0 (|z| < 0.5)
means the update arrives at the end of the round it was computed in, like
synchronous FL. Within one round, arrivals come in order of their unrounded
arrival time `k + |z|` (the order in which they would reach a real server),
which is the order FedAsync applies them in.

Updates whose arrival round exceeds `num_rounds` never arrive within the run
(`never_arriving`); the driver can skip training them. `check_delays_arrive`
rejects delay distributions too wide for the run.
"""

import copy
from typing import Any, NamedTuple, Optional

import numpy as np

# `check_delays_arrive` requires num_rounds > this many standard deviations:
# a half-normal delay exceeds 3 sigma with probability 0.27%.
DEFAULT_NUM_STDS = 3.0


class Arrival(NamedTuple):
  """One client update in flight or delivered.

  Attributes:
    client: The client id, in [0, num_clients).
    sampled_round: The round k whose model the client trained from.
    arrival_round: The round at whose end the update reaches the server,
      `sampled_round + delay`.
    staleness: `arrival_round - sampled_round` (the delay, in rounds).
  """
  client: int
  sampled_round: int
  arrival_round: int
  staleness: int


class IdleClientShortageError(ValueError):
  """A round has fewer idle clients than `clients_per_round`.

  Attributes:
    round_num: The round.
    num_idle: Idle clients at that round.
    num_busy: Busy clients at that round.
  """

  def __init__(self, round_num: int, num_idle: int, num_busy: int,
               clients_per_round: int):
    self.round_num = round_num
    self.num_idle = num_idle
    self.num_busy = num_busy
    super().__init__(
        f'Round {round_num}: only {num_idle} idle clients, fewer than '
        f'clients_per_round={clients_per_round} ({num_busy} of '
        f'{num_idle + num_busy} clients are busy waiting for their update '
        'to arrive). Use more clients, fewer clients per round, a smaller '
        'delay_std, or allow_fewer=True.')


class RoundEvents(NamedTuple):
  """What happens in one round of a simulated schedule.

  Attributes:
    round_num: The 1-based round.
    sampled: The clients sampled (and broadcast the model of this round to),
      in sampling order.
    arrivals: The updates delivered at the end of this round, in order of
      arrival.
  """
  round_num: int
  sampled: tuple[int, ...]
  arrivals: tuple[Arrival, ...]


def check_delays_arrive(delay_std: float, num_rounds: int,
                        num_stds: float = DEFAULT_NUM_STDS) -> None:
  """Rejects delays that would often never arrive within the run.

  Rule: raises if `num_stds * delay_std >= num_rounds`. With the default 3
  standard deviations, an update sampled at round 1 then fails to arrive
  within the run with probability at least 0.27% (P(|z| > 3 sigma)), and the
  typical delay (mean sigma * sqrt(2 / pi) ~ 0.8 sigma) is a sizeable part of
  the run, so most of the late rounds' work would be lost.

  Args:
    delay_std: sigma of the delays, >= 0.
    num_rounds: Rounds of the run, >= 1.
    num_stds: How many standard deviations must fit in the run, > 0.

  Raises:
    ValueError: If an argument is out of range or the delays do not fit.
  """
  _check_delay_std(delay_std)
  _check_num_rounds(num_rounds)
  if not num_stds > 0:
    raise ValueError(f'num_stds must be > 0, got {num_stds!r}.')
  if num_stds * delay_std >= num_rounds:
    raise ValueError(
        f'Delays with delay_std={delay_std!r} would often never arrive within '
        f'num_rounds={num_rounds!r}: {num_stds:g} * delay_std = '
        f'{num_stds * delay_std:g} >= num_rounds. Use more rounds or a '
        'smaller delay_std (or pass check_delays=False).')


def _check_delay_std(delay_std: float) -> None:
  if not (isinstance(delay_std, (int, float, np.integer, np.floating))
          and np.isfinite(delay_std) and delay_std >= 0):
    raise ValueError(
        f'delay_std must be a finite number >= 0, got {delay_std!r}.')


def _check_num_rounds(num_rounds: int) -> None:
  if not isinstance(num_rounds, (int, np.integer)) or num_rounds < 1:
    raise ValueError(f'num_rounds must be an integer >= 1, got '
                     f'{num_rounds!r}.')


class AsyncSchedule:
  """Seeded simulation of who trains and whose update arrives each round.

  Call, for k = 1, 2, ..., num_rounds in turn, `sample(k)` and then
  `arrivals(k)` (see the module docstring for the order of events).

  Example:

    schedule = AsyncSchedule(num_clients=500, clients_per_round=10,
                             delay_std=5.0, num_rounds=200, seed=0)
    for k in range(1, 201):
      clients = schedule.sample(k)   # train these from the model of round k
      for arrival in schedule.arrivals(k):
        ...  # apply the update of arrival.client (staleness arrival.staleness)
  """

  def __init__(self,
               num_clients: int,
               clients_per_round: int,
               delay_std: float,
               num_rounds: int,
               seed: int,
               allow_fewer: bool = False,
               check_delays: bool = True):
    """Validates the setup and creates an empty schedule.

    Args:
      num_clients: Number of clients, >= 1; ids are 0, ..., num_clients - 1.
      clients_per_round: Clients sampled per round, in [1, num_clients].
      delay_std: sigma of the half-normal delays, >= 0 (0: synchronous).
      num_rounds: Rounds of the run, >= 1.
      seed: Seed (integer >= 0) of the numpy Generator that draws the samples
        and the delays.
      allow_fewer: If a round has fewer idle clients than
        `clients_per_round`, sample all idle ones (possibly none) instead of
        raising.
      check_delays: Call `check_delays_arrive(delay_std, num_rounds)`.

    Raises:
      ValueError: If an argument is out of range.
    """
    if not isinstance(num_clients, (int, np.integer)) or num_clients < 1:
      raise ValueError(f'num_clients must be an integer >= 1, got '
                       f'{num_clients!r}.')
    if (not isinstance(clients_per_round, (int, np.integer))
        or not 1 <= clients_per_round <= num_clients):
      raise ValueError(
          f'clients_per_round must be an integer in [1, num_clients='
          f'{num_clients}], got {clients_per_round!r}.')
    _check_delay_std(delay_std)
    _check_num_rounds(num_rounds)
    # A None seed would make numpy draw fresh entropy: not reproducible.
    if (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
        or seed < 0):
      raise ValueError(f'seed must be an integer >= 0, got {seed!r}.')
    if check_delays:
      check_delays_arrive(delay_std, num_rounds)
    self._num_clients = int(num_clients)
    self._clients_per_round = int(clients_per_round)
    self._delay_std = float(delay_std)
    self._num_rounds = int(num_rounds)
    self._allow_fewer = allow_fewer
    self._rng = np.random.default_rng(seed)
    # Updates in flight: client -> (unrounded arrival time, sampling order,
    # Arrival). A client is busy exactly while it is a key here.
    self._in_flight: dict[int, tuple[float, int, Arrival]] = {}
    self._num_sampled = 0
    self._last_sampled_round = 0
    self._last_delivered_round = 0

  @property
  def num_clients(self) -> int:
    return self._num_clients

  @property
  def clients_per_round(self) -> int:
    return self._clients_per_round

  @property
  def delay_std(self) -> float:
    return self._delay_std

  @property
  def num_rounds(self) -> int:
    return self._num_rounds

  def snapshot(self) -> dict[str, Any]:
    """What changes as rounds pass: the generator, the updates in flight.

    With `restore` a checkpointed run continues the same draws.
    """
    return dict(rng=copy.deepcopy(self._rng.bit_generator.state),
                in_flight=dict(self._in_flight),
                num_sampled=self._num_sampled,
                last_sampled_round=self._last_sampled_round,
                last_delivered_round=self._last_delivered_round)

  def restore(self, snapshot: dict[str, Any]) -> None:
    """Puts back what `snapshot` took (of a schedule built the same way)."""
    self._rng.bit_generator.state = copy.deepcopy(snapshot['rng'])
    self._in_flight = dict(snapshot['in_flight'])
    self._num_sampled = snapshot['num_sampled']
    self._last_sampled_round = snapshot['last_sampled_round']
    self._last_delivered_round = snapshot['last_delivered_round']

  def busy_clients(self) -> list[int]:
    """The clients whose update has not arrived yet, sorted."""
    return sorted(self._in_flight)

  def idle_clients(self) -> list[int]:
    """The clients that can be sampled, sorted."""
    return [c for c in range(self._num_clients) if c not in self._in_flight]

  def pending(self) -> list[Arrival]:
    """The updates in flight, by arrival time."""
    return [a for _, _, a in sorted(self._in_flight.values())]

  def never_arriving(self) -> list[Arrival]:
    """The updates in flight that arrive after `num_rounds`, by arrival time.

    Their arrival round is fixed when they are sampled, so right after
    `sample(k)` the driver knows which of the new clients' updates will never
    reach the server within the run (and may skip training them).
    """
    return [a for a in self.pending() if a.arrival_round > self._num_rounds]

  def sample(self, round_num: int) -> list[int]:
    """Samples this round's clients among the idle ones; they become busy.

    Args:
      round_num: The round, which must be the one after the last round
        delivered (1 for the first call).

    Returns:
      The sampled client ids, in sampling order (the order their delays were
      drawn in).

    Raises:
      ValueError: If `round_num` is out of order or outside
        [1, num_rounds].
      IdleClientShortageError: (a ValueError) Without `allow_fewer`, if
        fewer than `clients_per_round` clients are idle.
    """
    expected = self._last_delivered_round + 1
    if round_num != expected or self._last_sampled_round == expected:
      raise ValueError(
          f'sample({round_num!r}) called out of order: the next call must be '
          + (f'sample({expected})' if self._last_sampled_round < expected
             else f'arrivals({expected})') + '.')
    if round_num > self._num_rounds:
      raise ValueError(f'round_num={round_num} is past num_rounds='
                       f'{self._num_rounds}.')
    idle = np.array(self.idle_clients(), dtype=np.int64)
    count = self._clients_per_round
    if idle.size < count:
      if not self._allow_fewer:
        raise IdleClientShortageError(round_num, int(idle.size),
                                      len(self._in_flight), count)
      count = idle.size
    self._last_sampled_round = round_num
    if count == 0:
      return []
    clients = self._rng.choice(idle, size=count, replace=False)
    raw_delays = np.abs(self._rng.normal(0.0, self._delay_std, size=count))
    for client, raw in zip(clients.tolist(), raw_delays.tolist()):
      delay = int(np.rint(raw))
      arrival = Arrival(client=client, sampled_round=round_num,
                        arrival_round=round_num + delay, staleness=delay)
      self._in_flight[client] = (round_num + raw, self._num_sampled, arrival)
      self._num_sampled += 1
    return clients.tolist()

  def arrivals(self, round_num: int) -> list[Arrival]:
    """Delivers the updates arriving at the end of this round.

    Their clients become idle and can be sampled from round `round_num + 1`.

    Args:
      round_num: The round just sampled.

    Returns:
      The arrivals with `arrival_round == round_num`, in order of their
      unrounded arrival time.

    Raises:
      ValueError: If `round_num` is not the round last passed to `sample`, or
        its arrivals were already delivered.
    """
    if (round_num != self._last_sampled_round
        or self._last_delivered_round == round_num):
      raise ValueError(
          f'arrivals({round_num!r}) called out of order: the next call must '
          f'be sample({self._last_delivered_round + 1}).'
          if self._last_sampled_round == self._last_delivered_round else
          f'arrivals({round_num!r}) called out of order: the next call must '
          f'be arrivals({self._last_sampled_round}).')
    self._last_delivered_round = round_num
    due = sorted(entry for entry in self._in_flight.values()
                 if entry[2].arrival_round == round_num)
    for _, _, arrival in due:
      del self._in_flight[arrival.client]
    return [arrival for _, _, arrival in due]


def simulate(num_clients: int,
             clients_per_round: int,
             delay_std: float,
             num_rounds: int,
             seed: int,
             allow_fewer: bool = False,
             check_delays: bool = True) -> list[RoundEvents]:
  """Runs an `AsyncSchedule` through all rounds; same arguments.

  Returns:
    One `RoundEvents` per round, rounds 1 to num_rounds. Updates that never
    arrive appear only in `sampled`.

  Raises:
    ValueError: As `AsyncSchedule` and `AsyncSchedule.sample`.
  """
  schedule = AsyncSchedule(num_clients, clients_per_round, delay_std,
                           num_rounds, seed, allow_fewer=allow_fewer,
                           check_delays=check_delays)
  events = []
  for k in range(1, num_rounds + 1):
    sampled = schedule.sample(k)
    events.append(RoundEvents(k, tuple(sampled), tuple(schedule.arrivals(k))))
  return events


def first_round_with_shortage(num_clients: int, clients_per_round: int,
                              delay_std: float, num_rounds: int,
                              seed: int) -> Optional[int]:
  """The first round that would lack idle clients, or None.

  Lets a driver validate a whole setup (with the run's seed) before any
  training starts; the schedule does not depend on training.

  Raises:
    ValueError: As `AsyncSchedule` (the delay check is not applied).
  """
  try:
    simulate(num_clients, clients_per_round, delay_std, num_rounds, seed,
             check_delays=False)
  except IdleClientShortageError as e:
    return e.round_num
  return None
