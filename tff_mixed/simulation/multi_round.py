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
"""Several rounds of a process in one TFF call.

Every call of a TFF computation from Python pays a fixed cost on top of the
work: the state travels to TFF's worker and back, the call is dispatched,
the result is materialized in Python. With client groups (`client_groups.py`)
and a small model that cost is a large share of a round (BENCHMARKS.md,
round_time). When nothing happens in Python between rounds (no evaluation,
no checkpoint), `build_multi_round_next` chains `rounds` calls of a
process's `next` inside one federated computation: the state stays in the
worker from round to round, and each round gets its own clients, given up
front. The rounds, and so the state and each round's metrics, are those of
`rounds` calls of `next` with the same clients (tests/multi_round_test.py).
"""

import collections
from collections.abc import Sequence
import math

import tensorflow_federated as tff


def last_round_of_call(first_round: int, rounds_per_call: int,
                       total_rounds: int, state_every: Sequence[int]) -> int:
  """The last round of a call that starts at `first_round`.

  At most `rounds_per_call` rounds, not past `total_rounds`, and ending at
  the first round whose state is needed: a multiple of any of
  `state_every` (e.g. the checkpoint and evaluation intervals).
  """
  end = min(total_rounds, first_round + rounds_per_call - 1)
  return min([end] + [math.ceil(first_round / n) * n for n in state_every])


def check_round(next_fn: tff.Computation) -> tff.FunctionType:
  """`next_fn`'s type if it is a round, else a `TypeError`.

  A round takes (state, client data) and returns <state=..., metrics=...>,
  as a `tff.learning.templates.LearningProcess`'s `next`.
  """
  signature = getattr(next_fn, 'type_signature', None)
  parameter = getattr(signature, 'parameter', None)
  result = getattr(signature, 'result', None)
  if (not isinstance(parameter, tff.StructType) or len(parameter) != 2
      or not isinstance(result, tff.StructType)
      or not hasattr(result, 'state') or not hasattr(result, 'metrics')):
    raise TypeError('`next_fn` must take (state, client data) and return '
                    f'<state=..., metrics=...>, got {signature}.')
  return signature


def build_multi_round_next(next_fn: tff.Computation,
                           rounds: int) -> tff.Computation:
  """`rounds` calls of `next_fn` as one federated computation.

  Args:
    next_fn: A process's `next`, `(<S@SERVER, D@CLIENTS> -> <state=S@SERVER,
      metrics=M@SERVER>)` (a `tff.learning.templates.LearningProcess`'s, or
      any computation of that shape).
    rounds: How many rounds one call runs, >= 1.

  Returns:
    A `tff.Computation` `(<S@SERVER, <D@CLIENTS, ...>> -> <state=S@SERVER,
    metrics=<M@SERVER, ...>>)`: the state after the last round, and each
    round's metrics in order; the second argument holds one client data
    value per round (every round the same number of CLIENTS members, as in
    any one TFF call).

  Raises:
    ValueError: If `rounds` is not an int >= 1.
    TypeError: If `next_fn` is not of that shape.
  """
  if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
    raise ValueError(f'`rounds` must be an int >= 1, got {rounds!r}.')
  state_type, data_type = check_round(next_fn).parameter

  @tff.federated_computation(state_type,
                             tff.StructType([data_type] * rounds))
  def multi_round_next(state, data):
    metrics = []
    for round_data in data:
      output = next_fn(state, round_data)
      state = output.state
      metrics.append(output.metrics)
    # Wiring only: each round's values stay where its `next` put them.
    return collections.OrderedDict(state=state, metrics=tuple(metrics))

  return multi_round_next
