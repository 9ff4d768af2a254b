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
"""The rows of round_time's reports: keys, names, order and shared lines.

`benchmarks/round_time.py` writes one JSON report per run, its rows keyed by
algorithm and mode (`fedavg`, `fedavg@grouped`, `fedavg@floor`, ...);
`benchmarks/workers_report.py` reads several such reports back. Both name
rows and describe the machine the same way from here. Plain Python: a report
can be read without loading TensorFlow.
"""

import collections
import os
import platform
import random
import shlex
import sys
from collections.abc import Sequence
from typing import Any, Optional

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# `tff_mixed.algorithms.registry.FEDAVG` (not imported: it loads TensorFlow;
# tests/round_time_test.py checks they agree).
FEDAVG = 'fedavg'
# In --algorithms: time each listed algorithm's compute floor too.
FLOOR = 'compute_floor'
DISPLAY_NAMES = collections.OrderedDict([
    (FEDAVG, 'FedAvg'),
    ('parallel_training', 'Parallel Training'),
    ('one_way_gt', '1-way Gradient Transfer'),
    ('two_way_gt', '2-way Gradient Transfer'),
    ('example_transfer', 'Example Transfer'),
    (FLOOR, 'Compute floor (plain `tf.function`)'),
])
# A grouped row's key is the algorithm's name and this suffix; a floor row's,
# the algorithm's name and FLOOR_ROW.
GROUPED = '@grouped'
FLOOR_ROW = '@floor'


def algorithm_of(row: str) -> str:
  """The algorithm a row times (its name without a mode suffix)."""
  for suffix in (GROUPED, FLOOR_ROW):
    if row.endswith(suffix):
      return row[:-len(suffix)]
  return row


def is_floor(row: str) -> bool:
  return row.endswith(FLOOR_ROW)


def mode(row: str) -> str:
  """A row's mode suffix: '' (per-client), GROUPED or FLOOR_ROW."""
  return row[len(algorithm_of(row)):]


def fmt(value: Optional[float], digits: int = 3, suffix: str = '') -> str:
  return 'n/a' if value is None else f'{value:.{digits}f}{suffix}'


def row_name(name: str, groups: list[int]) -> str:
  """A row's display name: the algorithm, and how its clients run."""
  if is_floor(name):
    return (f'Compute floor of {DISPLAY_NAMES[algorithm_of(name)]} (plain '
            '`tf.function`)')
  if name.endswith(GROUPED):
    base = name[:-len(GROUPED)]
    sizes = sorted(set(groups))
    size = '-'.join(str(g) for g in (sizes[0], sizes[-1])[:len(sizes)])
    what = ' (`tff_mixed.build_fedavg`)' if base == FEDAVG else ''
    return (f'{DISPLAY_NAMES[base]}{what}, grouped ({len(groups)} x '
            f'{size})')
  what = ' (TFF `build_weighted_fed_avg`)' if name == FEDAVG else ''
  return f'{DISPLAY_NAMES[name]}{what}, per-client'


def cycle_order(names: Sequence[str], cycle: int, seed: int) -> list[str]:
  """The order of the rows in timing cycle `cycle`: a seeded shuffle.

  A rotation kept each row after the same neighbour: every grouped row
  followed its per-client twin (a round of up to 1.2 s, whose aftermath the
  next row pays), every floor another floor. Measured on the small model at
  100 clients (2026-11-28): its grouped rows took 23-27 ms in that order and
  19-23 ms with no per-client rows at all, while its floors took 15-20 ms
  either way. A new shuffle every cycle gives every row every neighbour
  alike.
  """
  order = list(names)
  random.Random(f'{seed}/{cycle}').shuffle(order)
  return order


def _meminfo_gib(key: str) -> Optional[float]:
  try:
    with open('/proc/meminfo') as f:
      for line in f:
        if line.startswith(key + ':'):
          return float(line.split()[1]) / 2**20  # kB.
  except OSError:
    pass
  return None


def _cpu_model() -> str:
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or 'unknown'


def hardware_info() -> dict[str, Any]:
  """CPU, cores, memory and OS of this machine (no TensorFlow needed)."""
  return collections.OrderedDict(
      cpu_model=_cpu_model(),
      cpu_count=os.cpu_count(),
      usable_cores=len(os.sched_getaffinity(0)),
      memory_gib=_meminfo_gib('MemTotal'),
      platform=platform.platform(),
  )


def machine_lines(machine: dict[str, Any]) -> list[str]:
  """The Machine and Software bullets of a report's `machine` record."""
  return [
      f'* Machine: {machine["cpu_model"]}, {machine["cpu_count"]} cores '
      f'({machine["usable_cores"]} usable), '
      f'{fmt(machine["memory_gib"], 0)} GiB RAM, {machine["platform"]}.',
      f'* Software: Python {machine["python"]}, TensorFlow '
      f'{machine["tensorflow"]}, TensorFlow Federated '
      f'{machine["tensorflow_federated"]}, tff_mixed {machine["tff_mixed"]}.',
  ]


def workers_lines(config: dict[str, Any]) -> list[str]:
  """A Runtime bullet if the run's rounds ran on TFF workers, else none."""
  workers = config.get('workers', 0)
  if not workers:
    return []
  if config.get('local_workers'):
    where = (f'{workers} TFF workers that the run started on this machine '
             '(`--local_workers`), their CPU time counted as its own')
  else:
    where = (f'the TFF workers at {", ".join(config["worker_addresses"])} '
             '(`--worker_addresses`), whose CPU time is not counted')
  return [f'* Runtime: {where}; each round\'s clients (or client groups) '
          'split across them in contiguous slices (`tff_mixed.remote`).']


def command_line(module: str) -> str:
  """This process's command line, as `python -m module ...` to rerun it."""
  python = sys.executable
  relative = os.path.relpath(python, _REPO_ROOT)
  if not relative.startswith('..'):
    python = relative
  return shlex.join([python, '-m', module] + sys.argv[1:])


def resolve(path: str) -> str:
  """`path`, relative to the repository root unless absolute."""
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


def write_benchmarks_section(path: str, section: str, markdown: str) -> str:
  """Writes `markdown` as section `section` of the Markdown file `path`.

  `path` is resolved as `resolve` does; the file is created with the title
  Benchmarks if missing. Returns the resolved path.
  """
  # Imported here: it loads TensorFlow (through tff_mixed), which the
  # readers of this module's reports do not need.
  # pylint: disable-next=g-import-not-at-top
  from experiments.common import markdown_sections
  path = resolve(path)
  markdown_sections.write_section(path, section, markdown, title='Benchmarks')
  return path
