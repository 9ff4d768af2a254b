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
"""The hybrid-data baselines as server methods of `simulation.run_async`.

The guided-model-merging paper (Feddle, "Guided Model Merging for Hybrid
Data Learning", Zhu et al., section 5 and appendix D) compares Feddle with
four ways of using the server's own data D_S next to the clients' updates.
Each is an asynchronous strategy here (`strategy.AsyncStrategy`), and
reports its merges to `apply`'s `on_merge`:

* `CenterMethod`: the server trains on its data alone, ignoring the clients
  (`server_sgd.center_round`), once; no client trains.
* `FineTuneMethod` (Fed+FT): after FedBuff's merge, the server fine-tunes the
  merged model on its data (`server_sgd.fine_tune`).
* `HFCLMethod` (Elbir et al. 2021): the server trains a copy on its data and
  joins each merge as one more participant weighted by its data size
  (`hfcl.hfcl_round`).
* `FedDFMethod` (Lin et al., arXiv:2006.07242): after each FedBuff merge,
  the client models of the merged buffer (each `base + delta`) are
  distilled into the merged model on the server's inputs
  (`feddf.feddf_distill`).

The functions they call live in `server_sgd.py`, `hfcl.py` and `feddf.py`
and are importable from here as before (`hybrid_baselines.server_sgd`, ...).
Every server training round k of a method draws its minibatch order from
`round_seed(seed, k)`.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from tff_mixed.asynchronous import feddf
from tff_mixed.asynchronous import hfcl
from tff_mixed.asynchronous import server_sgd as server_sgd_lib
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import strategy

# The baselines' functions, importable from here as before the split.
# pylint: disable=g-bad-import-order,unused-import
from tff_mixed.asynchronous.feddf import distillation_kl
from tff_mixed.asynchronous.feddf import feddf_distill
from tff_mixed.asynchronous.feddf import models_from_deltas
from tff_mixed.asynchronous.hfcl import hfcl_merge
from tff_mixed.asynchronous.hfcl import hfcl_round
from tff_mixed.asynchronous.server_sgd import ADAM
from tff_mixed.asynchronous.server_sgd import center_round
from tff_mixed.asynchronous.server_sgd import fine_tune
from tff_mixed.asynchronous.server_sgd import SGD
from tff_mixed.asynchronous.server_sgd import server_sgd
from tff_mixed.asynchronous.server_sgd import steps_per_epoch
# pylint: enable=g-bad-import-order,unused-import

ClientUpdate = server_strategies.ClientUpdate


class ServerTraining(NamedTuple):
  """The server's minibatch SGD in a baseline's round.

  Attributes:
    steps: SGD steps a round (see `server_sgd.steps_per_epoch`).
    batch_size: Examples per server batch.
    learning_rate: The server's SGD step size.
    optimizer: 'sgd' or 'adam' (`server_sgd.run_sgd`).
  """

  steps: int
  batch_size: int
  learning_rate: float
  optimizer: str = SGD


def round_seed(seed: int, round_index: int) -> int:
  """The batch-order seed of a method's `round_index`-th server training."""
  return seed * 100003 + round_index


class CenterMethod(strategy.AsyncStrategy):
  """Center: server data only.

  The paper's Center (Zhu et al., appendix D: server epochs M in {10, 20,
  50}) is one model trained on the server's data: it trains its
  `training.steps` at the first round (its one merge) and then holds them,
  so M epochs are M epochs in all. The state counts rounds.
  """

  # No client trains for Center (`run_async` skips their training).
  uses_client_updates = False

  def __init__(self, model: Any, server_x: Any, server_y: Any,
               training: ServerTraining, seed: int):
    self._args = (model, server_x, server_y)
    self._training = training
    self._seed = seed

  def initial_state(self) -> int:
    return strategy.NO_ROUNDS_YET

  def apply(self, state: int, weights, updates,
            on_merge: strategy.OnMerge = None):
    """See `AsyncStrategy.apply`; `updates` are ignored (none arrive)."""
    del updates  # Center trains no client.
    if state > 0:
      return state + 1, [np.asarray(w) for w in weights]
    trained = self.train(weights, state)
    strategy.report_merge(on_merge, 0, weights, trained, ())
    return state + 1, trained

  def train(self, weights, step: int) -> list[np.ndarray]:
    """One round of server SGD from `weights`, with batch seed of `step`."""
    model, x, y = self._args
    t = self._training
    return server_sgd_lib.server_sgd(
        model, weights, x, y, steps=t.steps, batch_size=t.batch_size,
        learning_rate=t.learning_rate, seed=round_seed(self._seed, step),
        optimizer=t.optimizer)


class MergeState(NamedTuple):
  """State of a baseline that post-processes FedBuff's merges.

  Attributes:
    fedbuff: FedBuff's state (its buffer).
    merges: Merges so far; seeds the server training after each.
    teachers: FedDF only: the client models (`base + delta`) of the updates
      in FedBuff's buffer, in order: the teachers of the next merge.
  """

  fedbuff: Any
  merges: int = 0
  teachers: tuple[Any, ...] = ()


class PostMerge(NamedTuple):
  """What Fed+FT and FedDF report of a merge (`MergeEvent.diagnostics`).

  Attributes:
    merged: FedBuff's merge, before the fine-tuning or distillation (the
      event's `after`).
    teachers: FedDF only: the client models (`base + delta`) distilled.
  """

  merged: list[np.ndarray]
  teachers: tuple[Any, ...] = ()


class FineTuneMethod(strategy.AsyncStrategy):
  """Fed+FT: FedBuff's merge, then fine-tuning on the server data."""

  def __init__(self, fedbuff: server_strategies.FedBuff,
               center: CenterMethod):
    self._fedbuff = fedbuff
    self._center = center

  def initial_state(self) -> MergeState:
    return MergeState(self._fedbuff.initial_state())

  def apply(self, state: MergeState, weights, updates,
            on_merge: strategy.OnMerge = None):
    """See `AsyncStrategy.apply`: FedBuff's merges of the round, then one
    fine-tuning; one merge event for both."""
    flushes = []
    fedbuff_state, merged = self._fedbuff.apply(state.fedbuff, weights,
                                                updates, flushes.append)
    merges, weights = state.merges, merged
    if flushes:
      weights = self._center.train(merged, merges)
      strategy.report_merge(
          on_merge, merges, flushes[0].before, weights,
          [u for f in flushes for u in f.updates], PostMerge(merged))
      merges += 1
    return MergeState(fedbuff_state, merges), weights


class HFCLMethod(strategy.AsyncStrategy):
  """HFCL: the server trains a copy on its data and joins each merge as one
  more participant weighted by its data size.

  With `client_epochs` (clients train E epochs), each client update is
  weighted by its own data size, `ClientUpdate.num_examples / E` (the count
  is of examples trained on, E per example): HFCL's size weighting. Without
  it (clients train K fixed steps, so the count says nothing of the data
  size), every client weighs `client_examples`.
  """

  def __init__(self, model: Any, server_x: Any, server_y: Any,
               training: ServerTraining, seed: int, client_examples: float,
               client_epochs: Optional[int] = None):
    self._args = (model, server_x, server_y)
    self._training = training
    self._seed = seed
    self._client_examples = client_examples
    self._client_epochs = client_epochs

  def client_weight(self, update: ClientUpdate) -> float:
    """An update's weight in the merge: its client's data size."""
    if self._client_epochs is None:
      return self._client_examples
    if update.num_examples is None:
      raise ValueError('HFCL weighs clients by data size: a ClientUpdate '
                       'needs its num_examples.')
    return update.num_examples / self._client_epochs

  def initial_state(self) -> int:
    return strategy.NO_ROUNDS_YET

  def apply(self, state: int, weights, updates,
            on_merge: strategy.OnMerge = None):
    """See `AsyncStrategy.apply`: one merge a round with arrivals; the
    state counts merges."""
    if not updates:
      return state, weights
    model, x, y = self._args
    t = self._training
    merged = hfcl.hfcl_round(
        model, weights, [u.delta for u in updates],
        [self.client_weight(u) for u in updates], x, y, steps=t.steps,
        batch_size=t.batch_size, learning_rate=t.learning_rate,
        seed=round_seed(self._seed, state), optimizer=t.optimizer)
    strategy.report_merge(on_merge, state, weights, merged, updates)
    return state + 1, merged


def _until_each_merge(buffered: int, buffer_size: int,
                      updates: Sequence[ClientUpdate]
                      ) -> list[Sequence[ClientUpdate]]:
  """`updates` cut after each update that fills FedBuff's buffer.

  With `buffered` updates already waiting, every part but possibly the last
  ends with a merge; the last part, if it does not fill the buffer, stays
  buffered. E.g. M = 10, 7 buffered, 15 arriving: parts of 3, 10 and 2.
  """
  parts, start = [], 0
  end = buffer_size - buffered
  while end <= len(updates):
    parts.append(updates[start:end])
    start, end = end, end + buffer_size
  if start < len(updates):
    parts.append(updates[start:])
  return parts


class FedDFMethod(strategy.AsyncStrategy):
  """FedDF: each FedBuff merge, then distillation of the merged buffer's
  client models (each `base + delta`) into it on the server inputs (labels
  unused).

  FedDF (Lin et al. 2020) fuses exactly the models being averaged, so the
  teachers of a merge are the M client models of the buffer FedBuff has just
  merged, not every arrival since the last distillation: updates that stay
  in the buffer teach at the merge that includes them. Two merges in one
  round are two distillations, the second starting from FedBuff's merge of
  its buffer into the first's distilled model (one merge at a time, as if
  the updates had arrived in separate rounds).

  Each distillation is a merge: `on_merge` gets FedBuff's merge and the
  teacher models as a `PostMerge` and the distilled weights as `after`,
  e.g. to measure what distillation does to the merge
  (experiments/hybrid_async/async_study_lib.py).
  """

  def __init__(self, fedbuff: server_strategies.FedBuff, model: Any,
               server_x: Any, training: ServerTraining, seed: int,
               temperature: float = 1.0):
    self._fedbuff = fedbuff
    self._model = model
    self._x = server_x
    self._training = training
    self._seed = seed
    self._temperature = temperature

  def initial_state(self) -> MergeState:
    return MergeState(self._fedbuff.initial_state())

  def apply(self, state: MergeState, weights, updates,
            on_merge: strategy.OnMerge = None):
    """See `AsyncStrategy.apply`."""
    fedbuff_state, merges, teachers = state
    weights = [np.asarray(w) for w in weights]
    for part in _until_each_merge(len(fedbuff_state.buffer),
                                  self._fedbuff.buffer_size, updates):
      teachers += tuple(
          [np.asarray(b) + np.asarray(d) for b, d in zip(u.base, u.delta)]
          for u in part)
      flushes, start = [], weights
      fedbuff_state, weights = self._fedbuff.apply(fedbuff_state, weights,
                                                   part, flushes.append)
      if flushes:
        merged = weights
        weights = self._distill(merged, list(teachers), merges)
        strategy.report_merge(on_merge, merges, start, weights,
                              flushes[0].updates,
                              PostMerge(merged, teachers))
        teachers = ()
        merges += 1
    return MergeState(fedbuff_state, merges, teachers), weights

  def _distill(self, merged, teachers, merges: int):
    """The `merges`-th distillation of `teachers` into FedBuff's merge."""
    t = self._training
    return feddf.feddf_distill(
        self._model, merged, teachers, self._x, steps=t.steps,
        batch_size=t.batch_size, learning_rate=t.learning_rate,
        temperature=self._temperature, seed=round_seed(self._seed, merges),
        optimizer=t.optimizer)
