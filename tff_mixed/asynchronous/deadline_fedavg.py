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
"""FedAvg with a deadline: synchronous FL that discards late updates.

The guided-model-merging paper (Zhu et al., section 3, eq. 2) contrasts
asynchronous aggregation with the common synchronous mechanism: the server
aggregates, each round, the updates that reach it in time and discards the
ones that arrive late. Under the simulated delays of `schedule` that is:
at the end of round k, the updates with staleness <= `deadline` (by default
0: computed and delivered within round k) are averaged, weighted by their
example counts (McMahan et al. 2017), and applied with step `eta_g`,

    x <- x + eta_g * sum_j n_j delta_j / sum_j n_j   (j on time),

and every later update is dropped on arrival. A round where nothing arrives
in time leaves the model unchanged. With no delays every update is on time,
and this is one weighted FedAvg round (equal to `FedBuff` with M = the
round's clients and `weighting='num_examples'`,
tests/deadline_fedavg_test.py).

It is here because the paper's FedAvg rows change with the delay level
(its tables 2 and 7), so its FedAvg sees the delays, while this project's
`fedavg` baseline trains without them; the asynchronous-baselines study
(experiments/hybrid_async/async_study_main.py) measures both readings.
"""

from collections.abc import Sequence
import numbers
from typing import NamedTuple

import numpy as np

from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import strategy


class DeadlineFedAvgState(NamedTuple):
  """Server state.

  Attributes:
    num_updates: Server steps applied so far (rounds with an on-time
      update).
    num_discarded: Updates dropped for arriving after the deadline.
  """
  num_updates: int
  num_discarded: int


class DeadlineFedAvg(server_strategies.AsyncStrategy):
  """Weighted FedAvg of each round's on-time updates; late ones dropped."""

  def __init__(self, learning_rate: float = 1.0, deadline: int = 0,
               weighting: str = server_strategies.WEIGHTING_NUM_EXAMPLES):
    """Configures the strategy.

    Args:
      learning_rate: eta_g, > 0 (FedAvg: 1).
      deadline: The largest staleness, in rounds, still aggregated (>= 0;
        0: only updates delivered in the round they were computed).
      weighting: 'num_examples' (default, FedAvg's weighting) or 'uniform'.

    Raises:
      ValueError: If an argument is out of range.
    """
    if (isinstance(deadline, bool) or not isinstance(deadline, numbers.Integral)
        or deadline < 0):
      raise ValueError(f'deadline must be an integer >= 0, got {deadline!r}.')
    # FedBuff checks the learning rate and weighting; each round's merge is
    # one of its flushes (see `apply`).
    server_strategies.FedBuff(learning_rate, 1, weighting=weighting)
    self.learning_rate = float(learning_rate)
    self.deadline = int(deadline)
    self.weighting = weighting

  def initial_state(self) -> DeadlineFedAvgState:
    return DeadlineFedAvgState(num_updates=0, num_discarded=0)

  def apply(self, state: DeadlineFedAvgState, weights: server_strategies.Weights,
            updates: Sequence[server_strategies.ClientUpdate],
            on_merge: strategy.OnMerge = None
            ) -> tuple[DeadlineFedAvgState, list[np.ndarray]]:
    """See `AsyncStrategy.apply`; a round's merge is its on-time updates."""
    on_time = [u for u in updates
               if not isinstance(u, server_strategies.ClientUpdate)
               or u.staleness <= self.deadline]
    discarded = len(updates) - len(on_time)
    if not on_time:
      return (state._replace(num_discarded=state.num_discarded + discarded),
              [np.array(w) for w in weights])
    # The round's on-time updates fill exactly one FedBuff buffer, so its
    # flush is their (weighted) mean step; it also validates every update.
    merge = server_strategies.FedBuff(self.learning_rate, len(on_time),
                                      weighting=self.weighting)
    _, new_weights = merge.apply(merge.initial_state(), weights, on_time)
    strategy.report_merge(on_merge, state.num_updates, weights, new_weights,
                          on_time)
    return DeadlineFedAvgState(num_updates=state.num_updates + 1,
                               num_discarded=state.num_discarded + discarded
                               ), new_weights
