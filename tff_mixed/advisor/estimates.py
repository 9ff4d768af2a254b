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
"""The advisor's estimates over a window of rounds.

Each round of a mixed FL process with diagnostics reports, in
metrics['central'] (`tff_mixed/core/round_estimates.py`), sampled values of the
constants in arXiv:2205.13655's section 5: sigma^2 (eq. 4), sigma_c^2
(eq. 6), G~_t^2 and B~_t^2 (eq. 7), a secant lower bound on beta (Def. D.1)
and |grad f(x^(t))|^2. This module reads them from a run's per-round
metrics (the runner's history, or the rows of its metrics.csv) and
summarizes each over a window of rounds: mean, max, standard deviation and
a bootstrap interval of the mean.

G and B are bounds over all x (Def. 5.2); the paper's table 4 reports the
maximum of the sampled G~_t^2, B~_t^2 over rounds, and so does `Estimate.max`.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Optional

import numpy as np

# The per-round quantities, by their metrics['central'] names.
SIGMA2 = 'sigma2'
SIGMA_C2 = 'sigma_c2'
BETA = 'beta'
G2 = 'bgd_G2'
B2 = 'bgd_B2'
GRAD_NORM2 = 'mixed_grad_norm2'
NAMES = (SIGMA2, SIGMA_C2, BETA, G2, B2, GRAD_NORM2)
# Where the runner puts them (`flatten_metrics(metrics, 'train/')`), and
# where a process's own metrics hold them once flattened.
_PREFIXES = ('train/central/', 'central/')
_ROUND_KEYS = ('round_num', 'round')

BOOTSTRAP_RESAMPLES = 1000


class Estimate(NamedTuple):
  """One quantity over a window of rounds.

  Attributes:
    mean: The mean of the per-round values.
    max: Their maximum (table 4's statistic for G~^2 and B~^2).
    std: Their sample standard deviation (0 for one round).
    low: The 2.5% quantile of the bootstrap distribution of the mean.
    high: Its 97.5% quantile.
    rounds: How many rounds the window holds.
  """

  mean: float
  max: float
  std: float
  low: float
  high: float
  rounds: int


class WindowEstimates(NamedTuple):
  """The window's `Estimate`s and the per-round values behind them.

  Attributes:
    estimates: `{name: Estimate}` for the names in `NAMES`.
    per_round: `{name: float64 array}`, one value per round of the window,
      in round order (the advisor resamples them).
    rounds: The window's round numbers.
  """

  estimates: dict
  per_round: dict
  rounds: tuple


def bootstrap_indices(num_rounds: int, resamples: int,
                      seed: int) -> np.ndarray:
  """`[resamples, num_rounds]` round indices drawn with replacement."""
  rng = np.random.default_rng(seed)
  return rng.integers(0, num_rounds, size=(resamples, num_rounds))


def summarize(values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
              seed: int = 0) -> Estimate:
  """The `Estimate` of per-round values (at least one)."""
  values = np.asarray(values, np.float64)
  if values.ndim != 1 or values.size == 0:
    raise ValueError('`values` must be a non-empty list of numbers.')
  means = values[bootstrap_indices(values.size, resamples, seed)].mean(axis=1)
  return Estimate(
      mean=float(values.mean()), max=float(values.max()),
      std=float(values.std(ddof=1)) if values.size > 1 else 0.0,
      low=float(np.quantile(means, 0.025)),
      high=float(np.quantile(means, 0.975)), rounds=int(values.size))


def _value(row: Mapping[str, float], name: str) -> float:
  for prefix in _PREFIXES:
    if prefix + name in row:
      return float(row[prefix + name])
  raise KeyError(name)


def round_number(row: Mapping[str, float], index: int) -> int:
  """The row's round number, or `index + 1` if it has none."""
  for key in _ROUND_KEYS:
    if key in row:
      return int(row[key])
  return index + 1


def window_estimates(rows: Sequence[Mapping[str, float]], *,
                     first_round: int = 1, last_round: Optional[int] = None,
                     resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = 0) -> WindowEstimates:
  """Summarizes the diagnostics of rounds `first_round..last_round`.

  Args:
    rows: Per-round flat metrics, in round order: `RunResult.history`, the
      rows of a metrics.csv, or flattened process metrics (`central/...`).
      Rows without a round number count from 1.
    first_round: The window's first round (skipping the first rounds leaves
      out the start, where the model is far from where it will train; the
      paper's table 4 starts at round 10).
    last_round: Its last round; `None` for the last row.
    resamples: Bootstrap resamples.
    seed: Seeds the bootstrap.

  Raises:
    ValueError: If the window is empty or a row lacks a diagnostic (a run
      without `with_diagnostics`).
  """
  window, rounds = [], []
  for index, row in enumerate(rows):
    round_num = round_number(row, index)
    if round_num >= first_round and (last_round is None
                                     or round_num <= last_round):
      window.append(row)
      rounds.append(round_num)
  if not window:
    raise ValueError(f'No rounds in the window {first_round}..'
                     f'{"end" if last_round is None else last_round}.')
  per_round = {}
  for name in NAMES:
    try:
      per_round[name] = np.array([_value(row, name) for row in window])
    except KeyError:
      raise ValueError(
          f'The metrics lack central/{name}: the advisor needs a run with '
          'diagnostics (`with_diagnostics=True`).') from None
  return WindowEstimates(
      estimates={name: summarize(values, resamples=resamples, seed=seed)
                 for name, values in per_round.items()},
      per_round=per_round, rounds=tuple(rounds))
