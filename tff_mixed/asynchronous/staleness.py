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
"""FedAsync's staleness functions s(d): the weight of an update d steps stale.

FedAsync (Xie et al., "Asynchronous Federated Optimization"; the
guided-model-merging paper's baseline) mixes a client's model into the
server's with weight alpha * s(d), where d counts the server steps since the
client's model was sent (`server_strategies.FedAsync`'s default
`staleness_unit`; it can count rounds instead). Pure Python:
`server_strategies` applies them.
"""

from collections.abc import Callable
import numbers
from typing import Any

import numpy as np

StalenessFn = Callable[[int], float]

# FedAsync's default staleness exponent (polynomial s(d) = (d + 1)^(-a)); one
# of the values the guided-model-merging paper tunes over ({0.1, 0.5, 0.9}).
DEFAULT_FEDASYNC_EXPONENT = 0.5

# What FedAsync's staleness d counts: server model updates since the
# client's model was sent (Xie et al.'s t - tau; every arrival is one), or
# the rounds between its broadcast and its arrival (the delay; about
# arrivals-per-round times smaller).
SERVER_STEPS = 'server_steps'
ROUNDS = 'rounds'
UNITS = (SERVER_STEPS, ROUNDS)


def check_unit(unit: Any) -> str:
  """Returns `unit` if it is one of `UNITS`, else raises ValueError."""
  if unit not in UNITS:
    raise ValueError(f'staleness_unit must be one of {UNITS}, got {unit!r}.')
  return unit


def staleness_in(unit: str, round_starts: tuple[int, ...], num_updates: int,
                 rounds: int, position: int) -> int:
  """An update's staleness in `unit`: rounds, or server steps since its
  client was sent the model.

  Args:
    unit: One of `UNITS`.
    round_starts: The server step count at the start of each earlier round,
      oldest first (this round is number `len(round_starts)`).
    num_updates: Server steps made before this round's first arrival.
    rounds: The update's staleness in rounds: its client was sent the model
      at the start of round `len(round_starts) - rounds`.
    position: Its place among this round's arrivals (0: first), each one
      server step after the one before.

  Returns:
    `rounds`, or num_updates + position - (the step count when the model
    was sent).

  Raises:
    ValueError: If, in server steps, `rounds` reaches before the first
      round recorded.
  """
  if check_unit(unit) == ROUNDS:
    return rounds
  this_round = len(round_starts)
  if rounds > this_round:
    raise ValueError(
        f'updates[{position}].staleness={rounds} rounds reaches before the '
        f'first of the {this_round + 1} rounds this state has seen: '
        "staleness_unit='server_steps' needs apply called every round from "
        "the first (or use staleness_unit='rounds').")
  sent_at = (round_starts + (num_updates,))[this_round - rounds]
  return num_updates + position - sent_at


def polynomial_staleness(a: float = DEFAULT_FEDASYNC_EXPONENT) -> StalenessFn:
  """FedAsync's polynomial staleness function s(d) = (d + 1)^(-a).

  Args:
    a: The exponent, >= 0 (0: no staleness discount).

  Returns:
    s, a function of the staleness d >= 0.

  Raises:
    ValueError: If `a` is negative or not finite.
  """
  check_finite_at_least('a', a, 0.0)
  return lambda d: float((d + 1.0) ** (-a))


def hinge_staleness(a: float, b: float) -> StalenessFn:
  """FedAsync's hinge staleness function.

  s(d) = 1 if d <= b, else 1 / (a (d - b) + 1).

  Args:
    a: Slope, >= 0.
    b: Staleness tolerated without discount, >= 0.

  Returns:
    s, a function of the staleness d >= 0.

  Raises:
    ValueError: If `a` or `b` is negative or not finite.
  """
  check_finite_at_least('a', a, 0.0)
  check_finite_at_least('b', b, 0.0)
  return lambda d: 1.0 if d <= b else float(1.0 / (a * (d - b) + 1.0))


def constant_staleness() -> StalenessFn:
  """s(d) = 1: FedAsync with a fixed mixing weight alpha."""
  return lambda d: 1.0


def check_finite_at_least(name: str, value: Any, minimum: float) -> None:
  """Raises ValueError unless `value` is a finite real >= `minimum`."""
  if (not isinstance(value, numbers.Real) or not np.isfinite(value)
      or value < minimum):
    raise ValueError(
        f'{name} must be a finite number >= {minimum:g}, got {value!r}.')


