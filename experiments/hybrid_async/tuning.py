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
"""The hyperparameter grids of the guided-model-merging paper, as data.

Feddle (Zhu et al., "Guided Model Merging for Hybrid Data Learning"),
appendix D, "the hyperparameters searched for each method": one grid per
method, searched on CIFAR-10 and applied everywhere. The clients' learning
rate and epochs are tuned first, with Adam, on FedAvg, and the selected
values are used by every other method. The paper does not list the client
grid; the one here is our choice and is marked so (`Axis.source`), in code
and in every report built from it.

An axis names the field of the hybrid experiment's configuration
(`hybrid_config.Config`) it sets, so a grid point is a `Config._replace`
argument. Server "epochs" are passes over the server data (`server_epochs`,
`feddle_search_epochs`; the experiment turns them into batches). Feddle's "server learning rate" is the coefficient
search's (eta_c), not FedBuff's fallback eta_g. HFCL has no grid (the paper:
its server trains as the clients do), nor has LoAdaBoost (not in the paper).

This module is pure data and pure Python: it knows nothing of TFF.
"""

from collections.abc import Mapping, Sequence
import itertools
from typing import Any, NamedTuple, Optional

PAPER = 'paper'
OURS = 'ours'

# Method names of the hybrid experiment (hybrid_config.METHODS).
FEDAVG = 'fedavg'
FEDASYNC = 'fedasync'
FEDBUFF = 'fedbuff'
CA2FL = 'ca2fl'
CENTER = 'center'
FED_FT = 'fed_ft'
FEDDF_ID = 'feddf_id'
FEDDF_OOD = 'feddf_ood'
FEDDLE_ID = 'feddle_id'
FEDDLE_OOD = 'feddle_ood'


class Axis(NamedTuple):
  """One searched hyperparameter.

  Attributes:
    name: The configuration field it sets.
    values: The values searched, in the paper's order.
    source: `PAPER` (appendix D lists it) or `OURS` (the paper tunes it but
      lists no grid: our choice).
  """

  name: str
  values: tuple[Any, ...]
  source: str = PAPER


class Grid(NamedTuple):
  """A method's search space: the product of its axes.

  Attributes:
    method: The method it tunes.
    axes: The axes, in the order points are enumerated (the last varies
      fastest).
  """

  method: str
  axes: tuple[Axis, ...]

  def points(self) -> list[dict[str, Any]]:
    """Every combination of the axes' values, as {field: value}."""
    names = [a.name for a in self.axes]
    return [dict(zip(names, values))
            for values in itertools.product(*(a.values for a in self.axes))]

  @property
  def ours(self) -> tuple[str, ...]:
    """The axes whose values are our choice, not the paper's."""
    return tuple(a.name for a in self.axes if a.source == OURS)


_SERVER_LR = (1e-5, 1e-4, 1e-3)
_FINE_TUNE_EPOCHS = (1, 10, 20)
_ASYNC_SERVER_LR = (0.01, 0.1, 1.0)
_BUFFER_SIZES = (10, 20, 50)

# Feddle's coefficient search at the paper's rate, eta / sum_m ||abar_m||^2
# (appendix A: the loss is L sum_m ||a_m||^2-smooth in c), 'scaled_sgd'.
# The paper's grid {1e-5, 1e-4, 1e-3} is the rate of an optimizer it does
# not name; under Adam those rates leave c at FedBuff's c' (1e-5 moved it
# by a median 1.5% at 16x16). Eta is our choice: at 16x16 it moves c by a
# median of about 20% (0.01) to 100% (1) of c'. Epochs: the paper's.
_FEDDLE_SEARCH = (
    Axis('feddle_search_optimizer', ('scaled_sgd',), OURS),
    Axis('feddle_search_lr', (0.01, 0.03, 0.1, 0.3, 1.0), OURS),
    Axis('feddle_search_epochs', _FINE_TUNE_EPOCHS),
)

# The clients' Adam learning rate and epochs, tuned on FedAvg (appendix D
# tunes them but lists no values: our choice, around Adam's usual 1e-3).
CLIENT_GRID = Grid(FEDAVG, (
    Axis('client_lr', (1e-4, 1e-3, 1e-2), OURS),
    Axis('client_epochs', (1, 2, 5), OURS),
))

# Appendix D, method by method.
METHOD_GRIDS = {
    grid.method: grid for grid in (
        Grid(FED_FT, (Axis('server_sgd_lr', _SERVER_LR),
                      Axis('server_epochs', _FINE_TUNE_EPOCHS))),
        Grid(FEDDF_ID, (Axis('server_sgd_lr', _SERVER_LR),
                        Axis('server_epochs', _FINE_TUNE_EPOCHS))),
        Grid(FEDDF_OOD, (Axis('server_sgd_lr', _SERVER_LR),
                         Axis('server_epochs', _FINE_TUNE_EPOCHS))),
        Grid(CENTER, (Axis('server_sgd_lr', _SERVER_LR),
                      Axis('server_epochs', (10, 20, 50)))),
        # FedAsync's adaptive constant a (the exponent of its polynomial
        # staleness function) and mixing constant alpha.
        Grid(FEDASYNC, (Axis('fedasync_a', (0.1, 0.5, 0.9)),
                        Axis('fedasync_alpha', (0.2, 0.4, 0.8)))),
        Grid(FEDBUFF, (Axis('server_lr', _ASYNC_SERVER_LR),
                       Axis('buffer_size', _BUFFER_SIZES))),
        Grid(CA2FL, (Axis('server_lr', _ASYNC_SERVER_LR),
                     Axis('buffer_size', _BUFFER_SIZES))),
        Grid(FEDDLE_ID, _FEDDLE_SEARCH),
        Grid(FEDDLE_OOD, _FEDDLE_SEARCH),
    )
}


def restrict(grid: Grid, only: Mapping[str, Sequence[Any]]) -> Grid:
  """`grid` with some axes cut to a stated subset of their values.

  Args:
    grid: A grid.
    only: {axis name: values to keep}; axes the grid lacks are ignored (so
      one restriction can serve every method), other axes keep all values.

  Returns:
    The restricted grid (values in the grid's order).

  Raises:
    ValueError: If a kept value is not on its axis, or an axis is left
      without values.
  """
  axes = []
  for axis in grid.axes:
    if axis.name not in only:
      axes.append(axis)
      continue
    wanted = list(only[axis.name])
    missing = [v for v in wanted
               if not any(_same(v, value) for value in axis.values)]
    if missing:
      raise ValueError(f'{grid.method}: {axis.name} has no value(s) '
                       f'{missing}; its grid is {list(axis.values)}.')
    kept = tuple(v for v in axis.values
                 if any(_same(v, w) for w in wanted))
    if not kept:
      raise ValueError(f'{grid.method}: no value of {axis.name} kept.')
    axes.append(axis._replace(values=kept))
  return grid._replace(axes=tuple(axes))


def _same(a: Any, b: Any) -> bool:
  """Grid values match by value (1 == 1.0; 1e-3 typed as 0.001)."""
  try:
    return abs(float(a) - float(b)) <= 1e-12 * max(1.0, abs(float(b)))
  except (TypeError, ValueError):
    return a == b


def select(scores: Mapping[int, float],
           late_scores: Optional[Mapping[int, float]] = None,
           tolerance: float = 0.0) -> int:
  """The index of the best point, by a stated rule.

  The highest score wins. Scores within `tolerance` of the highest are a
  tie (e.g. one validation image: below what the validation set can
  resolve), broken by the highest `late_scores` (the mean accuracy over
  the run's last half, which one lucky evaluation does not decide), then
  by the first point in grid order.

  Args:
    scores: {point index: score}, at least one.
    late_scores: {point index: tie-breaking score}, or None.
    tolerance: How far below the highest score a point still ties.

  Raises:
    ValueError: If `scores` is empty.
  """
  if not scores:
    raise ValueError('No scored point to select from.')
  best = max(scores.values())
  tied = sorted(i for i in scores if scores[i] >= best - tolerance)
  late = late_scores or {}
  return max(tied, key=lambda i: (late.get(i, 0.0), -i))
