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
"""Seconds per round of the paper experiments' own binaries, from their runs.

The MovieLens and LM binaries keep a JSON record for each scenario they ran
to the end (`--records_dir`): its settings, its wall-clock seconds and
seconds per round trained (evaluations included), the machine and the date.
The records are of whole runs at the make targets' settings, so their s/round
is what a user of those targets waits, not a benchmark of a few rounds.

This report reads the records of the directories given (by default, those
the make targets commit) and writes the `paper_runs` section of
BENCHMARKS.md: per experiment and scenario, the cohort S, K, the model, the
rounds, s/round and the machine and date, and per experiment whether it has
a run at the papers' S = 100 (arXiv:2205.13655, tables 5-10). Records of
table 4's K = 1 diagnostics runs are left out (another workload). A directory
with no record yet is listed with the command that makes its records.
Reading the records needs no TensorFlow.

Usage, from the repository root:

  .venv/bin/python -m benchmarks.paper_runs
"""

import datetime
import os
import statistics
from typing import Any, NamedTuple, Optional

# pylint: disable=g-bad-import-order
from experiments import tf_log_level  # pylint: disable=unused-import
from experiments.common import cli
from experiments.common import run_store
from absl import app
from absl import flags

from benchmarks import benchmark_flags
from benchmarks import round_reports
# pylint: enable=g-bad-import-order

# The papers' cohort for every one of these experiments (tables 5-10).
PAPER_COHORT = 100


class Source(NamedTuple):
  """An experiment's records directory, as the section names it."""
  title: str
  records_dir: str
  command: str


# The records the make targets commit.
SOURCES = (
    Source('MovieLens 100K dual encoder', 'docs/results/movielens',
           'make results-movielens'),
    Source('MovieLens 1M (users 1-2999) dual encoder',
           'docs/results/movielens_1m', 'make results-movielens-1m'),
    Source('MovieLens 1M (users 1-2999) dual encoder, spreadout lambda 0.1',
           'docs/results/movielens_1m_lambda',
           'make results-movielens-1m-lambda'),
    Source('LM, beer.stackexchange + WikiText-2',
           'docs/results/stackoverflow_wikipedia', 'make results-lm'),
    Source('LM, eight Stack Exchange sites + WikiText-2',
           'docs/results/stackoverflow_wikipedia_sites',
           'make results-lm-sites'),
    # Timing runs: a few rounds at results-lm-sites' settings.
    Source('LM, eight sites + WikiText-2, short runs at S = 100, GRU 64',
           'benchmarks/results/paper_runs/lm_sites_s100_gru64',
           'make benchmark-lm-s100 LM_S100_GRU_UNITS=64'),
    Source('LM, eight sites + WikiText-2, short runs at S = 100, GRU 256',
           'benchmarks/results/paper_runs/lm_sites_s100_gru256',
           'make benchmark-lm-s100 LM_S100_GRU_UNITS=256 '
           'LM_S100_EMBEDDING_DIM=64'),
    Source('LM, eight sites + WikiText-2, short runs at S = 100, GRU 1024 '
           '(the paper\'s model)',
           'benchmarks/results/paper_runs/lm_sites_s100_gru1024',
           'make benchmark-lm-s100 LM_S100_GRU_UNITS=1024 '
           'LM_S100_EMBEDDING_DIM=256 LM_S100_ROUNDS=1'),
)

_SOURCES = flags.DEFINE_list(
    'sources', None,
    'Records directories to read, each `TITLE=DIR=COMMAND` (DIR relative to '
    'the repository root); by default the make targets\' (see SOURCES).')
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md')
_SECTION = benchmark_flags.define_section_flag('paper_runs')


class Run(NamedTuple):
  """One scenario's record, as this report reads it."""
  scenario: str
  cohort: Optional[int]
  client_steps: Optional[int]
  model: str
  rounds: Optional[int]
  seconds_per_round: Optional[float]
  seconds: Optional[float]
  partial: bool
  date: str
  machine: str


def _model(settings: dict[str, Any]) -> str:
  """The model's size, as the settings give it."""
  if 'gru_units' in settings:
    return (f'GRU {settings["gru_units"]}, embedding '
            f'{settings.get("embedding_dim", "?")}')
  if 'embedding_dim' in settings:
    return f'embedding dimension {settings["embedding_dim"]}'
  return '-'


def _is_diagnostics(name: str, record: dict[str, Any]) -> bool:
  return (name.endswith('_diagnostics')
          or bool(record.get('settings', {}).get('with_diagnostics')))


def read_runs(records_dir: str) -> list[Run]:
  """The training runs recorded in `records_dir` (top level, `*.json`).

  Raises:
    ValueError: A JSON file there is not a run record.
  """
  runs = []
  # The summaries only: a run's rows are not needed here.
  store = run_store.RecordStore(records_dir,
                                remedy='move it out of the records directory')
  for name in store.names():
    path = store.path(name)
    if not os.path.isfile(path):
      continue
    record = store.read(name)
    if 'scenario' not in record:
      raise ValueError(f'{path} is not a run record (no "scenario").')
    if _is_diagnostics(name, record):
      continue
    settings = record.get('settings', {})
    rounds = record.get('rounds', settings.get('rounds'))
    runs.append(Run(
        scenario=record['scenario'],
        cohort=settings.get('clients_per_round'),
        client_steps=settings.get('client_steps'),
        model=_model(settings),
        rounds=rounds,
        seconds_per_round=record.get('seconds_per_round'),
        seconds=record.get('seconds'),
        # Seconds of a resumed run cover only the rounds its last
        # invocation trained; s/round is still per round trained.
        partial=(record.get('seconds_complete') is False
                 or bool(record.get('resumed_from'))),
        date=record.get('date', '?'),
        machine=record.get('machine', '?')))
  return runs


def _fmt(value: Optional[float], digits: int) -> str:
  return '-' if value is None else f'{value:,.{digits}f}'


def source_lines(source: Source, runs: Optional[list[Run]]) -> list[str]:
  """The subsection of one experiment: its table, or how to make it."""
  lines = ['', f'### {source.title}', '',
           f'Records: `{source.records_dir}/` (`{source.command}`).']
  if not runs:
    lines += ['', f'No run recorded yet: `{source.command}` makes them.']
    return lines
  lines += [
      '', '| scenario | S | K | model | rounds | s/round | hours | date |',
      '|---|---:|---:|---|---:|---:|---:|---|']
  for run in runs:
    hours = None if run.seconds is None else run.seconds / 3600
    lines.append(
        f'| {run.scenario} | {run.cohort or "-"} | '
        f'{run.client_steps or "-"} | {run.model} | {run.rounds or "-"} | '
        f'{_fmt(run.seconds_per_round, 2)} | '
        f'{_fmt(hours, 2)}{" (partial)" if run.partial else ""} | '
        f'{run.date} |')
  machines = sorted({run.machine for run in runs})
  lines += ['', 'Machine: ' + '; '.join(machines) + '.']
  if any(run.partial for run in runs):
    lines.append('"(partial)": the run was resumed, and its hours are those '
                 'of its last invocation; its s/round is per round that '
                 'invocation trained.')
  return lines


def summary_line(sources: list[Source],
                 runs_by_source: list[Optional[list[Run]]]) -> str:
  """Which experiments have runs at the papers' S = 100."""
  parts = []
  for source, runs in zip(sources, runs_by_source):
    at_paper = [r for r in runs or [] if r.cohort == PAPER_COHORT]
    timed = [r.seconds_per_round for r in at_paper
             if r.seconds_per_round is not None]
    if timed:
      spread = (f'{timed[0]:.2f} s/round' if len(timed) == 1 else
                f'{min(timed):.2f}-{max(timed):.2f} s/round '
                f'(median {statistics.median(timed):.2f})')
      parts.append(f'{source.title}: {len(at_paper)} scenario(s), {spread}')
    else:
      cohorts = sorted({r.cohort for r in runs or [] if r.cohort})
      parts.append(f'{source.title}: none' + (
          f' (runs at S = {", ".join(map(str, cohorts))})' if cohorts
          else ''))
  return (f'**At the papers\' S = {PAPER_COHORT}:** ' + '; '.join(parts)
          + '.')


def build_section(sources: list[Source], command: str) -> str:
  """The section's Markdown from the records of `sources`."""
  runs_by_source = []
  for source in sources:
    path = round_reports.resolve(source.records_dir)
    runs_by_source.append(read_runs(path) if os.path.isdir(path) else None)
  now = datetime.datetime.now(datetime.timezone.utc)
  lines = [
      '## Seconds per round of the paper experiments\' binaries, from '
      'their runs (benchmarks/paper_runs.py)', '',
      f'Generated on {now:%Y-%m-%d %H:%M} UTC by `{command}` from the run '
      'records the make targets keep (one JSON per scenario, written when '
      'the scenario finishes; each names its machine and date).', '',
      '* Whole runs at the make targets\' settings: s/round is the run\'s '
      'wall-clock time over the rounds it trained, evaluations and '
      'checkpoints included, on a machine that may have run other work '
      'meanwhile. Table 4\'s K = 1 diagnostics runs are left out.',
      '* The LM\'s short runs (`make benchmark-lm-s100`) are few rounds '
      'at `make results-lm-sites`\' settings, for their time only: each '
      'round of them includes its share of the one evaluation at the end '
      'and of the first round\'s start.',
      '* CelebA: `make results-celeba` keeps its runs under `outputs/` '
      '(not committed); the pipeline at S = 100 is timed in celeba_scale '
      'above.', '',
      summary_line(sources, runs_by_source)]
  for source, runs in zip(sources, runs_by_source):
    lines += source_lines(source, runs)
  return '\n'.join(lines) + '\n'


def parse_sources(values: Optional[list[str]]) -> list[Source]:
  """`--sources`, or SOURCES.

  Raises:
    ValueError: A value is not `TITLE=DIR=COMMAND`.
  """
  if not values:
    return list(SOURCES)
  sources = []
  for value in values:
    parts = value.split('=')
    if len(parts) != 3 or not all(p.strip() for p in parts):
      raise ValueError(f'--sources: {value!r} is not TITLE=DIR=COMMAND')
    sources.append(Source(*(p.strip() for p in parts)))
  return sources


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  sources = parse_sources(_SOURCES.value)
  markdown = build_section(
      sources, round_reports.command_line('benchmarks.paper_runs'))
  output = round_reports.write_benchmarks_section(_OUTPUT_MARKDOWN.value,
                                                  _SECTION.value, markdown)
  print(markdown)
  print(f'Wrote section {_SECTION.value} of {output}')


if __name__ == '__main__':
  cli.run(main)
