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
"""The paper binaries' rounds against their compute floors, in one table.

Each paper binary's benchmark times its rounds at the paper's S beside its
floor in one run and keeps the raw numbers in benchmarks/results/ (CelebA:
celeba_scale; the character LM: lm_rounds; MovieLens: movielens_select; the
hybrid experiment: hybrid_rounds). This script reads those JSON files, takes
each scenario in the mode its binary runs by default, and writes the
`floor_summary` section of BENCHMARKS.md: s/round, the floor's s/round, the
ratio and whether it is within 1.5x, with each row's measurement date.
Nothing is timed here.

  python -m benchmarks.floor_summary            # writes the section
  python -m benchmarks.floor_summary --check    # exits 1 if it is stale
"""

import json
import os
from typing import Any, NamedTuple

# First: quiets TensorFlow's C++ logs before TensorFlow loads (the section
# writer comes with the tff_mixed package).
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.common import markdown_sections
from experiments.common import scenarios as scenarios_lib

_CHECK = flags.DEFINE_boolean(
    'check', False, 'Write nothing; exit 1 if BENCHMARKS.md\'s section is '
    'not what the JSON files give.')

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RESULTS = os.path.join('benchmarks', 'results')
SECTION = 'floor_summary'
# A paper binary's round should take at most this many times its floor.
GOAL = 1.5


class Row(NamedTuple):
  """One scenario of a paper binary: its round and floor seconds, and the
  ratio its benchmark reports (seconds over floor seconds, or for the
  hybrid rounds the median of paired rounds' ratios)."""

  binary: str
  scenario: str
  mode: str
  seconds: float
  floor_seconds: float
  ratio: float
  date: str


def _row(binary, scenario, mode, seconds, floor_seconds, date, ratio=None):
  return Row(binary, scenario, mode, seconds, floor_seconds,
             seconds / floor_seconds if ratio is None else ratio, date)


def _read(name: str) -> dict[str, Any]:
  path = os.path.join(_REPO_ROOT, _RESULTS, f'{name}.json')
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    raise ValueError(f'{path} cannot be read ({e}); run its benchmark '
                     f'(python -m benchmarks.{name}).') from e


def _celeba_rows(report) -> list[Row]:
  # celeba_smile_main trains in groups by default; each scenario against
  # its algorithm's floor (FedAvg's for FL-only and the oracle).
  rows = []
  for name, timing in report['timings'].items():
    scenario, _, mode = name.partition('@')
    if mode != 'grouped':
      continue
    floor = report['floors'][
        f'compute_floor@{scenarios_lib.ALGORITHM_OF[scenario]}']
    rows.append(_row('CelebA smile (celeba_scale)', scenario, 'grouped',
                     timing['median_round_s'], floor['median_round_s'],
                     report['date']))
  return rows


def _lm_rows(report) -> list[Row]:
  return [_row('Stack Overflow + Wikipedia LM (lm_rounds)', scenario,
               'grouped', t['seconds_per_round'],
               t['floor_seconds_per_round'], report['date'])
          for scenario, t in report['timings'].items()]


def _movielens_rows(report) -> list[Row]:
  # movielens_main sends the mixed algorithms' slices by federated_select
  # and trains in groups; the baseline broadcasts the table.
  rows = []
  for name, t in report['timings'].items():
    scenario, _, how = name.partition(' (')
    if how.startswith('broadcast') and scenario != 'baseline':
      continue
    rows.append(_row('MovieLens dual encoder (movielens_select)', scenario,
                     f'grouped, {how.rstrip(")")}',
                     t['grouped_seconds_per_round'],
                     t['floor_seconds_per_round'], report['date']))
  return rows


def _hybrid_rows(report) -> list[Row]:
  clients = ('one client per member' if report['clients_per_group'] == 1
             else 'grouped')
  return [_row('Hybrid data, asynchronous (hybrid_rounds)', method, clients,
               t['seconds_per_round'], t['floor_seconds_per_round'],
               report['date'], ratio=t['x_floor'])
          for method, t in report['timings'].items()]


# Where each benchmark shows what its rows spend beyond their floor.
_PROFILES = {
    'celeba_scale': 'celeba_scale\'s "Where a grouped FL-only round goes"',
    'movielens_select': ('movielens_select\'s "Where a grouped '
                         'federated_select round goes"'),
    'hybrid_rounds': ('hybrid_rounds\' "Where a round goes" and its floor '
                      'with Feddle\'s diagnostics'),
}

_SOURCES = (('celeba_scale', _celeba_rows), ('lm_rounds', _lm_rows),
            ('movielens_select', _movielens_rows),
            ('hybrid_rounds', _hybrid_rows))


def rows() -> list[Row]:
  """Every paper binary's scenarios, from the committed JSON files."""
  return [row for name, read in _SOURCES for row in read(_read(name))]


def markdown(table: list[Row]) -> str:
  above = [r for r in table if r.ratio > GOAL]
  lines = [
      '## The paper binaries against their compute floors '
      '(benchmarks/floor_summary.py)',
      '',
      'Each row from its benchmark\'s run (the section named beside the '
      'binary, raw numbers in `benchmarks/results/`), in the mode the binary '
      'runs by default, at the papers\' S = 100 (the hybrid experiment: its '
      'paper\'s 10 clients a round): the round\'s seconds beside the floor '
      'of the same arithmetic in one plain `tf.function`, from the same run. '
      'Generated from those files by `python -m benchmarks.floor_summary`.',
      '',
      '| binary (benchmark) | scenario | mode | s/round | floor s/round | '
      f'x floor | within {GOAL:g}x | measured |',
      '|---|---|---|---:|---:|---:|:---:|---|',
  ]
  for r in table:
    lines.append(f'| {r.binary} | {r.scenario} | {r.mode} | '
                 f'{r.seconds:.2f} | {r.floor_seconds:.3f} | {r.ratio:.2f} | '
                 f'{"yes" if r.ratio <= GOAL else "**no**"} | {r.date} |')
  lines += ['', f'**{len(table) - len(above)} of {len(table)} rows within '
            f'{GOAL:g}x of their floor.**' + (
                ' Above: ' + '; '.join(
                    f'{r.binary.split(" (")[0]} {r.scenario} '
                    f'{r.ratio:.2f}x' for r in above) + '.' if above else '')]
  profiles = [profile for name, profile in _PROFILES.items()
              if any(f'({name})' in r.binary for r in above)]
  if profiles:
    lines += ['', 'Where the rows above spend their time beyond the floor: '
              + '; '.join(profiles) + '.']
  return '\n'.join(lines)


def _section_path() -> str:
  return os.path.join(_REPO_ROOT, 'BENCHMARKS.md')


def is_current() -> bool:
  """Whether BENCHMARKS.md holds the section the JSON files give."""
  with open(_section_path()) as f:
    current = f.read()
  text = markdown(rows()).strip()
  return f'<!-- BEGIN {SECTION} -->\n{text}\n<!-- END {SECTION} -->' in current


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  if _CHECK.value:
    if not is_current():
      raise ValueError(f'The {SECTION} section of BENCHMARKS.md is out of '
                       'date; run python -m benchmarks.floor_summary.')
    return
  text = markdown(rows())
  markdown_sections.write_section(_section_path(), SECTION, text,
                                  title='Benchmarks')
  print(text, flush=True)


if __name__ == '__main__':
  cli.run(main)
