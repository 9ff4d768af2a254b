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
"""Generated sections of RESULTS.md: the machine, the date, the outcome.

Each experiment binary writes its own section (`--results_markdown`), never
edited by hand, so the numbers in the repository are the numbers a run
produced; the file's other sections are kept, and the write is atomic.
"""

from collections.abc import Callable, Mapping
import datetime
import os
import platform
import re
import sys
from typing import NamedTuple, Optional

from absl import flags
from absl import logging
import tensorflow as tf
import tensorflow_federated as tff

from experiments.common import markdown_sections
from experiments.common import scenarios as scenarios_lib
from experiments.common import shared_flags


def machine_description() -> str:
  """CPU, cores, OS and library versions, for results files."""
  cpu = platform.processor() or platform.machine()
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          cpu = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  return (f'{cpu}, {os.cpu_count()} cores, {platform.system()} '
          f'{platform.release()}; Python {platform.python_version()}, '
          f'TensorFlow {tf.__version__}, TensorFlow Federated '
          f'{tff.__version__}')


def utc_now() -> str:
  """The current time in UTC, to the minute, for 'Generated on' lines."""
  return datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')


def write_results_section(path: str, section: str, markdown: str,
                          note: str = '', after: Optional[str] = None) -> None:
  """Replaces (or appends) one generated section of RESULTS.md.

  Args:
    path: The Markdown file.
    section: The section's name (its BEGIN/END markers).
    markdown: The section's text; its first line is its heading.
    note: Optional paragraph placed under the heading, e.g. why a run of a
      few scenarios has a section of its own (`--results_note`).
    after: A new section goes right after this one (e.g. the experiment's
      main section), if present.
  """
  if note:
    heading, _, rest = markdown.partition('\n')
    markdown = f'{heading}\n\n{note.strip()}\n{rest}'
  markdown_sections.write_section(path, section, markdown, title='Results',
                                  after=after)


def command_line(module: str) -> str:
  """How this run was started, e.g. `python -m experiments.x.x_main --a=1`."""
  return ' '.join(['python -m', module, *sys.argv[1:]])


def define_results_section_flags(default_section: str):
  """`--results_section` and `--results_note` of an experiment binary.

  A run of some scenarios (say, those a fix changed) can then write a
  section of its own instead of replacing the whole experiment's section.
  Returns the two flag holders.
  """
  section = flags.DEFINE_string(
      'results_section', default_section, 'Name of the generated section '
      'of --results_markdown this run writes (one word).')
  note = flags.DEFINE_string(
      'results_note', '', 'Optional paragraph written under the section '
      'heading (e.g. which rows of another section this run supersedes).')
  flags.register_validator(
      'results_section', lambda name: re.fullmatch(r'\w+', name) is not None,
      message='--results_section must be one word (letters, digits, _).')
  return section, note


def outcome_lines(result) -> list[str]:
  """Sentences on FL-only's failure and the mixed algorithms vs the oracle.

  Args:
    result: A `comparison.ComparisonResult`.

  Returns:
    The sentences, one per line (none for scenarios that were not run).
  """
  by_name = {s.scenario: s for s in result.summaries}
  lines = []
  if scenarios_lib.FL_ONLY in by_name:
    fl_only = by_name[scenarios_lib.FL_ONLY].final
    lines.append(
        f'FL-only never sees a negative: its accuracy on negatives is '
        f'{fl_only.negative_accuracy:.3f} and its AUC {fl_only.auc:.3f}.')
  mixed = [n for n in (scenarios_lib.PARALLEL_TRAINING,
                       scenarios_lib.ONE_WAY_GT, scenarios_lib.TWO_WAY_GT,
                       scenarios_lib.EXAMPLE_TRANSFER) if n in by_name]
  if mixed and scenarios_lib.ORACLE in by_name:
    oracle_auc = by_name[scenarios_lib.ORACLE].tail_auc
    gaps = ', '.join(
        f'{n} {by_name[n].tail_auc:.3f}' for n in mixed)
    lines.append(
        f'Mean AUC over the last quarter of rounds: oracle {oracle_auc:.3f}; '
        f'{gaps}. The paper (arXiv:2205.13655, section 4.1 and Table 4) '
        'reports that the mixed algorithms recover the oracle on CelebA '
        'smiles and that Parallel Training converges slowest when the '
        'federated and central gradients are dissimilar; rows above that '
        'fall short of the oracle are reported as measured.')
  return lines


class ResultsFlags(NamedTuple):
  """Holders of `--results_markdown`, `--results_section`, `--results_note`."""

  markdown: flags.FlagHolder
  section: flags.FlagHolder
  note: flags.FlagHolder


def define_results_flags(default_section: str) -> ResultsFlags:
  """Defines the flags with which a binary writes its RESULTS.md section."""
  markdown = shared_flags.define_results_markdown_flag()
  section, note = define_results_section_flags(default_section)
  return ResultsFlags(markdown, section, note)


def publish(table: str, files: Mapping[str, str], results_flags: ResultsFlags,
            *, module: str, markdown_fn: Callable[[str, str, str], str],
            after: Optional[str] = None) -> None:
  """How an experiment binary ends: table, RESULTS.md section, file list.

  Prints the run's table; with `--results_markdown` writes the section
  `--results_section` made by `markdown_fn(command, machine, date)` (the
  command line of `python -m module`, `machine_description()`, `utc_now()`),
  with `--results_note` under its heading, right after section `after` if it
  is new; logs the files the run wrote.
  """
  print(table, end='', flush=True)
  path = results_flags.markdown.value
  if path:
    write_results_section(
        path, results_flags.section.value,
        markdown_fn(command_line(module), machine_description(), utc_now()),
        note=results_flags.note.value, after=after)
    logging.info('Wrote %s', path)
  for kind, written in files.items():
    logging.info('Wrote %s: %s', kind, written)
