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
"""Table 4 of arXiv:2205.13655: the (G, B)-BGD estimates of a run.

A mixed process built `with_diagnostics` reports, per round, the sampled
estimates G~_t^2 and B~_t^2 of eq. 7 (`tff_mixed.core.round_estimates.
bgd_estimates`); the runner writes them to its per-round metrics CSV. Table
4 states their maxima over rounds 10 to 100 of runs with one local step
(appendix B.1). Every experiment reads them back the same way here.
"""

from collections.abc import Sequence
import csv
from typing import NamedTuple, Optional

from experiments.common import run_loop


# The paper's table 4 reports the maxima over rounds 10 to 100.
ROUNDS = (10, 100)
G2_COLUMN = 'train/central/bgd_G2'
B2_COLUMN = 'train/central/bgd_B2'


class Diagnostics(NamedTuple):
  """Max G~_t^2 and B~_t^2 (eq. 7) of one scenario over a round window.

  Attributes:
    scenario: The scenario.
    max_g2: max_t G~_t^2 over the window's rounds.
    max_b2: max_t B~_t^2 over the same rounds.
    first_round: First round of the window that ran.
    last_round: Last round of the window that ran.
  """

  scenario: str
  max_g2: float
  max_b2: float
  first_round: int
  last_round: int


def read_round_estimates(metrics_path: str,
                         rounds: tuple[int, int] = ROUNDS
                         ) -> list[tuple[int, float, float]]:
  """`(round, G~_t^2, B~_t^2)` of each round of `rounds` (inclusive) that ran.

  Read from a runner's per-round CSV (`RunResult.metrics_path`). If the run
  is shorter than the window, the window is its last rounds up to the same
  length (at least round 1). Empty if the run reported no estimates.
  """
  return _window(metrics_path, rounds)[2]


def _window(metrics_path, rounds):
  """`(first, last, [(round, G~^2, B~^2)])` of the window; `(0, 0, [])`."""
  with open(metrics_path) as f:
    records = [r for r in csv.DictReader(f) if r.get(G2_COLUMN)]
  if not records:
    return (0, 0, [])
  by_round = {int(r[run_loop.ROUND_KEY]): r for r in records}
  last = min(rounds[1], max(by_round))
  first = min(rounds[0], max(1, last - (rounds[1] - rounds[0])))
  return first, last, [
      (t, float(by_round[t][G2_COLUMN]), float(by_round[t][B2_COLUMN]))
      for t in range(first, last + 1) if t in by_round]


def read_diagnostics(scenario: str, metrics_path: str,
                     rounds: tuple[int, int] = ROUNDS
                     ) -> Optional[Diagnostics]:
  """Max G~^2 and B~^2 over `rounds` (inclusive) of a runner's metrics CSV.

  The window is `read_round_estimates`'s.

  Args:
    scenario: The scenario, for the result.
    metrics_path: The runner's per-round CSV (`RunResult.metrics_path`).
    rounds: `(first, last)` round of the window.

  Returns:
    The `Diagnostics`, or `None` if the run reported none.
  """
  first, last, window = _window(metrics_path, rounds)
  if not window:
    return None
  return Diagnostics(
      scenario=scenario,
      max_g2=max(g2 for _, g2, _ in window),
      max_b2=max(b2 for _, _, b2 in window),
      first_round=first, last_round=last)


def format_diagnostics(diagnostics: Sequence[Diagnostics]) -> str:
  """A small text table of the diagnostics."""
  lines = ['scenario           rounds     max G~^2   max B~^2',
           '-----------------  ---------  ---------  ---------']
  for d in diagnostics:
    lines.append(f'{d.scenario:<17}  {d.first_round:>3}-{d.last_round:<5}  '
                 f'{d.max_g2:>9.3f}  {d.max_b2:>9.3f}')
  return '\n'.join(lines) + '\n'
