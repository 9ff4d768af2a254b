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


