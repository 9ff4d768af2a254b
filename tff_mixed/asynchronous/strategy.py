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
"""The one interface of asynchronous algorithms, and what they report.

Every asynchronous algorithm of this package (FedAsync, FedBuff, CA2FL,
FedAvg with a deadline, Feddle and the hybrid baselines of the
guided-model-merging paper, Zhu et al., "Guided Model Merging for Hybrid
Data Learning") is an `AsyncStrategy`: pure Python over numpy weights, with

    state = strategy.initial_state()
    state, weights = strategy.apply(state, weights, updates, on_merge=None)

once per round, `updates` being the round's arrived `ClientUpdate`s in order
of arrival. A *merge* is one change of the global model by the strategy (a
FedAsync mixing, a full FedBuff / CA2FL / Feddle buffer, Center's server
training, ...); after each, `apply` calls `on_merge(MergeEvent)` if given.
`simulation.run_async(observer=...)` passes an `AsyncObserver` these
events, stamped with their round, and a `RoundEvent` at the end of every
round: diagnostics and probes (e.g. Feddle's coefficients, FedDF's
teachers) are observers, outside the algorithms, and cannot change a run.
"""

import abc
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

# Model weights: one array per variable, in a fixed order.
Weights = Sequence[Any]


class ClientUpdate(NamedTuple):
  """One client update as it reaches the server.

  Attributes:
    client: The client id (>= 0).
    delta: Client model minus `base`, one array per weight.
    staleness: Rounds between the broadcast the client trained from and the
      arrival (>= 0).
    base: The model the client started from; required by FedAsync only.
    num_examples: The examples the client trained on (its update's weight
      in weighted aggregation); required by `weighting='num_examples'`.
  """
  client: int
  delta: Weights
  staleness: int
  base: Optional[Weights] = None
  num_examples: Optional[float] = None


class MergeEvent(NamedTuple):
  """One merge of a strategy: the global model before and after it.

  Attributes:
    round_num: The round of the merge (set by `run_async`; None when
      `apply` is called directly).
    merge_index: The strategy's merges before this one in the run.
    before: The global weights before the merge.
    after: The global weights after it.
    updates: The client updates it merged (none for Center's training).
    diagnostics: What the algorithm reports of the merge, or None:
      Feddle's `feddle.FeddleMerge` (atlas, coefficients), Fed+FT's and
      FedDF's `hybrid_baselines.PostMerge` (FedBuff's merge, FedDF's
      teachers).
  """
  round_num: Optional[int]
  merge_index: int
  before: list[np.ndarray]
  after: list[np.ndarray]
  updates: tuple[ClientUpdate, ...]
  diagnostics: Any = None


class RoundEvent(NamedTuple):
  """The end of one round of `run_async`.

  Attributes:
    round_num: The round (from 1).
    weights: The global weights after the round.
    num_arrived: Client updates that arrived this round.
    num_merges: Merges the strategy made this round.
    method_state: The strategy's state after the round.
  """
  round_num: int
  weights: list[np.ndarray]
  num_arrived: int
  num_merges: int
  method_state: Any


OnMerge = Optional[Callable[[MergeEvent], None]]


class AsyncObserver:
  """Sees a run's merges and rounds (`run_async(observer=...)`).

  Give the callbacks, `AsyncObserver(on_merge=print)`, or subclass and
  override either method (unset, they do nothing). An observer only reads:
  the weights it gets are the run's own arrays, not to be modified. A
  subclass that keeps what it saw can define `snapshot()` (picklable) and
  `restore(snapshot)`: `run_async(checkpoint_path=...)` then saves it with
  each round's checkpoint and restores it when the run resumes.
  """

  def __init__(self, on_merge: OnMerge = None,
               on_round: Optional[Callable[[RoundEvent], None]] = None):
    self._on_merge = on_merge
    self._on_round = on_round

  def on_merge(self, event: MergeEvent) -> None:
    """Called after each merge, in order, with the merge's round."""
    if self._on_merge is not None:
      self._on_merge(event)

  def on_round(self, event: RoundEvent) -> None:
    """Called at the end of each round, after its merges."""
    if self._on_round is not None:
      self._on_round(event)


# The initial state of a strategy whose state counts its rounds or merges.
NO_ROUNDS_YET = 0


class AsyncStrategy(abc.ABC):
  """The interface every asynchronous algorithm implements.

  Attributes:
    uses_client_updates: False for an algorithm that ignores the clients
      (Center): `run_async` then trains no client.
  """

  uses_client_updates = True

  @abc.abstractmethod
  def initial_state(self) -> Any:
    """The server state before any update arrived."""

  @abc.abstractmethod
  def apply(self, state: Any, weights: Weights,
            updates: Sequence[ClientUpdate],
            on_merge: OnMerge = None) -> tuple[Any, list[np.ndarray]]:
    """Applies the updates that arrived this round, in order of arrival.

    Args:
      state: The strategy's state.
      weights: The current server model.
      updates: The arrived `ClientUpdate`s (possibly none).
      on_merge: Optional; called with a `MergeEvent` after each merge.

    Returns:
      (new state, new weights as a list of numpy arrays).

    Raises:
      ValueError: If an update is malformed or does not match the weights.
    """


def report_merge(on_merge: OnMerge, merge_index: int, before: Weights,
                 after: Weights, updates: Sequence[ClientUpdate],
                 diagnostics: Any = None) -> None:
  """Calls `on_merge` (if any) with the merge's event, round unknown."""
  if on_merge is not None:
    on_merge(MergeEvent(None, merge_index, [np.asarray(w) for w in before],
                        [np.asarray(w) for w in after], tuple(updates),
                        diagnostics))
