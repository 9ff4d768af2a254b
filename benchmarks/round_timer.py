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
"""How the paper tasks' benchmarks time rounds: the median, the first
(tracing and compilation) untimed, each round's time on stderr; several
rows' rounds interleaved, so that their ratios compare the same minutes."""

import collections
from collections.abc import Callable, Mapping
import statistics
import sys
import time

from benchmarks import round_reports


def _check_rounds(rounds: int) -> None:
  if rounds < 2:
    raise ValueError(f'`rounds` must be at least 2 (the first is not '
                     f'timed), got {rounds}.')


def _timed_round(run_round: Callable[[int], None], round_num: int,
                 prefix: str) -> float:
  """The seconds of `run_round(round_num)`, printed after `prefix`."""
  start = time.perf_counter()
  run_round(round_num)
  seconds = time.perf_counter() - start
  print(f'{prefix} round {round_num}: {seconds:.2f} s', file=sys.stderr,
        flush=True)
  return seconds


def median_round(run_round: Callable[[int], None], rounds: int,
                 label: str) -> float:
  """The median seconds of `run_round(1..rounds)`, the first untimed.

  Each round's seconds are printed as `[label] round N: S s`.
  """
  _check_rounds(rounds)
  return median_of_timed([_timed_round(run_round, round_num, f'[{label}]')
                          for round_num in range(1, rounds + 1)])


def round_robin(run_rounds: Mapping[str, Callable[[int], None]],
                rounds: int, label: str,
                seed: int = 0) -> 'collections.OrderedDict[str, list[float]]':
  """Each row's seconds of its rounds 1..`rounds`, the rows interleaved.

  Round r of every row runs before round r + 1 of any, in a new seeded
  order every round (`round_reports.cycle_order`), so that a slower or
  faster spell of a shared machine falls on every row alike, and a row's
  ratio to its floor compares rounds of the same minutes. Each round's
  seconds are printed as `[label] NAME round N: S s`.

  Returns:
    `{name: [seconds of round 1, ..., of round rounds]}`, in the order of
    `run_rounds` (round 1 included: it traces; `median_of_timed` leaves it
    out).
  """
  _check_rounds(rounds)
  seconds = collections.OrderedDict((name, []) for name in run_rounds)
  for round_num in range(1, rounds + 1):
    for name in round_reports.cycle_order(list(run_rounds), round_num, seed):
      seconds[name].append(_timed_round(run_rounds[name], round_num,
                                        f'[{label}] {name}'))
  return seconds


def median_of_timed(seconds: list[float]) -> float:
  """The median of a row's rounds after its first (`round_robin`)."""
  return statistics.median(seconds[1:])
