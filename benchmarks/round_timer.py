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
(tracing and compilation) untimed, each round's time on stderr."""

from collections.abc import Callable
import statistics
import sys
import time


def median_round(run_round: Callable[[int], None], rounds: int,
                 label: str) -> float:
  """The median seconds of `run_round(1..rounds)`, the first untimed.

  Each round's seconds are printed as `[label] round N: S s`.
  """
  if rounds < 2:
    raise ValueError(f'`rounds` must be at least 2 (the first is not '
                     f'timed), got {rounds}.')
  times = []
  for round_num in range(1, rounds + 1):
    start = time.perf_counter()
    run_round(round_num)
    times.append(time.perf_counter() - start)
    print(f'[{label}] round {round_num}: {times[-1]:.2f} s', file=sys.stderr,
          flush=True)
  return statistics.median(times[1:])
