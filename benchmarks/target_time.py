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
"""The wall time of a make target that regenerates results, as users wait it.

A results target (e.g. `make results-celeba`: 27 runs of the CelebA binary,
three seeds as concurrent processes) is timed whole, from the start of `make`
to its end, data conversion included: the time a user waits to regenerate
the table, which no per-run number in RESULTS.md gives. One run of this
report runs the target once, with its output in a log file, and on success
records the elapsed seconds, the command, the commit, the machine and the
date in a JSON file (one entry per target, kept across runs), then writes
the `target_times` section of BENCHMARKS.md from every entry.

A target longer than a sitting (results-celeba: hours) can be timed in
parts, as it is made: the results targets resume where they stopped. A run
that is interrupted (Ctrl-C: make gets it, and its runs stop at a round's
end with their state saved) or fails leaves the records and the section as
they were and keeps its seconds in a segments file beside the log; the same
command later goes on, and the run that finishes the target records the sum
of every part's seconds, with their number. `--fresh` drops the parts kept
(for a target started again from nothing).

Usage, from the repository root (or `make benchmark-results-celeba`):

  .venv/bin/python -m benchmarks.target_time --timed_target=results-celeba
"""

import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from typing import Any, NamedTuple, Optional

# pylint: disable=g-bad-import-order
from experiments.common import cli
from absl import app
from absl import flags

from benchmarks import benchmark_flags
from benchmarks import round_reports
from tff_mixed import runtime
from tff_mixed.training import reports
# pylint: enable=g-bad-import-order

_TIMED_TARGET = flags.DEFINE_string(
    'timed_target', None, 'The make target to time (e.g. results-celeba).')
_MAKE_ARGS = flags.DEFINE_list(
    'make_args', [], 'Extra arguments for make, e.g. CELEBA_SEEDS=0.')
_MAKE = flags.DEFINE_string(
    'make', 'make', 'The make program (tests give a stand-in).')
_LOG = flags.DEFINE_string(
    'log', None, 'Where the target\'s output goes (default '
    'outputs/target_time/TARGET.log).')
_RECORDS = flags.DEFINE_string(
    'records', os.path.join('benchmarks', 'results', 'target_times.json'),
    'The JSON file of every timed target, updated with this one.')
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md')
_SECTION = benchmark_flags.define_section_flag('target_times')
_SEGMENTS = flags.DEFINE_string(
    'segments', None, 'Where the seconds of unfinished runs of the target '
    'wait for the run that finishes it (default: beside --log, '
    'TARGET.segments.json).')
_FRESH = flags.DEFINE_bool(
    'fresh', False, 'Drop the seconds kept from unfinished runs of the '
    'target (when it starts again from nothing).')


def machine() -> str:
  """CPU, cores, memory and OS, in one line (no TensorFlow needed)."""
  info = round_reports.hardware_info()
  return (f'{info["cpu_model"]}, {info["cpu_count"]} cores, '
          f'{round_reports.fmt(info["memory_gib"], 0)} GiB, '
          f'{info["platform"]}')


def _commit() -> str:
  """HEAD's short hash, with `+changes` when the tree differs from it."""
  try:
    head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                          cwd=round_reports.resolve('.'), check=True,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(['git', 'status', '--porcelain',
                            '--untracked-files=no'],
                           cwd=round_reports.resolve('.'), check=True,
                           capture_output=True, text=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return 'unknown'
  return head + ('+changes' if dirty else '')


def _read_json(path: str, missing: Any) -> Any:
  """The JSON value at `path`, or `missing` if there is no such file.

  Raises:
    ValueError: If the file is not JSON.
  """
  if not os.path.exists(path):
    return missing
  with open(path) as f:
    try:
      return json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f'{path} is not JSON: {e}') from e


class Outcome(NamedTuple):
  """How one run of a make command ended."""
  seconds: float  # Its wall-clock time.
  status: int  # Its exit status.
  interrupted: bool  # Whether Ctrl-C (SIGINT) reached us while it ran.


def run_target(command: list[str], log_path: str,
               append: bool = False) -> Outcome:
  """Runs `command` with its output in `log_path` (added to it with
  `append`) until it ends, also on Ctrl-C.

  Raises:
    OSError: If it cannot be started.
  """
  executable = shutil.which(command[0])
  if executable is None:
    raise FileNotFoundError(f'{command[0]}: no such program on PATH')
  reports.make_directory(os.path.dirname(log_path) or '.', 'log directory')
  interrupted = False
  start = time.perf_counter()
  with open(log_path, 'a' if append else 'w') as log:
    # Through TFF workers' launcher, which restores SIGINT and SIGQUIT: a
    # job started in the background ignores both, and so would make's TFF
    # workers, which TFF then cannot stop. In a process group of its own,
    # so that a Ctrl-C reaches make's processes once, through us, whether it
    # came from a terminal or to our pid alone.
    process = subprocess.Popen(
        runtime.worker_command([executable, *command[1:]],
                               die_with_parent=False),
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        cwd=round_reports.resolve('.'), process_group=0)
    while True:
      try:
        status = process.wait()
        break
      except KeyboardInterrupt:
        # Not killed: its runs stop at a round's end and save their state,
        # which the next run of the command resumes from.
        interrupted = True
        try:
          os.killpg(process.pid, signal.SIGINT)
        except ProcessLookupError:
          pass
  return Outcome(time.perf_counter() - start, status, interrupted)


def read_segments(path: str, command: str) -> list[dict[str, Any]]:
  """The unfinished runs of `command` kept at `path` (`[]` if none).

  Raises:
    ValueError: If the file is not such a segments file, or keeps the runs
      of another command.
  """
  kept = _read_json(path, None)
  if kept is None:
    return []
  if not (isinstance(kept, dict) and isinstance(kept.get('segments'), list)
          and all(isinstance(s, dict) and 'seconds' in s
                  for s in kept['segments'])):
    raise ValueError(f'{path} is not a file of unfinished runs.')
  if kept.get('command') != command:
    raise ValueError(
        f'{path} keeps the time of unfinished runs of another command '
        f'({kept.get("command")!r}); run that one to go on, or pass --fresh '
        'to drop it')
  return kept['segments']


def read_records(path: str) -> dict[str, Any]:
  """The records at `path` (`{}` if there is none yet).

  Raises:
    ValueError: If the file is not such a record file.
  """
  records = _read_json(path, {})
  if not isinstance(records, dict) or not all(
      isinstance(r, dict) and 'seconds' in r for r in records.values()):
    raise ValueError(f'{path} is not a file of target times.')
  return records


def _duration(seconds: float) -> str:
  if seconds >= 3600:
    return f'{seconds / 3600:.2f} h'
  if seconds >= 60:
    return f'{seconds / 60:.1f} min'
  return f'{seconds:.0f} s'


def build_section(records: dict[str, Any], command: str) -> str:
  """The section's Markdown: one row per timed target, by name."""
  lines = [
      '## Wall time to regenerate results (make targets, timed whole)', '',
      f'Generated by `{command}` (last run); each row is the latest run of '
      'its target, timed from the start of `make` to its end, with data '
      'conversion and everything else the target does. A row is written '
      'only when its target succeeded. A target timed in parts (interrupted '
      'and resumed, as the results targets can be) counts the seconds of '
      'every part: "parts" says how many runs of make it took; each resumed '
      'part adds its own start-up and redoes the rounds after its last saved '
      'state.', '',
      '| Target | wall time | seconds | parts | finished | commit | machine |',
      '|---|---:|---:|---:|---|---|---|',
  ]
  for target in sorted(records):
    r = records[target]
    lines.append(f'| `{r["command"]}` | {_duration(r["seconds"])} | '
                 f'{r["seconds"]:,.0f} | {r.get("parts", 1)} | '
                 f'{r["finished"]} | {r["commit"]} | {r["machine"]} |')
  return '\n'.join(lines) + '\n'


def _now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')


def record(target: str, command: list[str], seconds: float,
           finished: Optional[str] = None, parts: int = 1) -> dict[str, Any]:
  """One target's entry: `seconds` over `parts` runs of `command`."""
  return dict(target=target, command=shlex.join(command),
              seconds=round(seconds, 1), parts=parts,
              finished=finished or _now(), commit=_commit(),
              machine=machine())


def _keep_unfinished(path: str, command: list[str],
                     segments: list[dict[str, Any]], outcome: Outcome,
                     log_path: str) -> KeyboardInterrupt | ChildProcessError:
  """Adds `outcome`'s run to the segments at `path`; the error to raise."""
  segments = [*segments, dict(
      seconds=round(outcome.seconds, 1), status=outcome.status,
      interrupted=outcome.interrupted, ended=_now(), commit=_commit())]
  reports.atomic_write_text(path, json.dumps(
      dict(command=shlex.join(command), segments=segments), indent=2) + '\n')
  ended = ('was interrupted' if outcome.interrupted
           else f'exited with status {outcome.status}')
  total = sum(s['seconds'] for s in segments)
  message = (f'{shlex.join(command)} {ended} after {outcome.seconds:.0f} s; '
             f'its output is in {log_path}; {len(segments)} unfinished '
             f'run(s), {total:.0f} s in all, kept in {path}: the same command '
             'goes on and adds them')
  if outcome.interrupted:
    return KeyboardInterrupt(message)
  return ChildProcessError(message)


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  target = _TIMED_TARGET.value
  if not target or target.startswith('-') or '=' in target:
    raise app.UsageError(
        f'--timed_target must name a make target, got {target!r}')
  records_path = round_reports.resolve(_RECORDS.value)
  records = read_records(records_path)  # Refuse a bad file before the run.
  log_path = round_reports.resolve(
      _LOG.value or os.path.join('outputs', 'target_time', f'{target}.log'))
  segments_path = round_reports.resolve(
      _SEGMENTS.value or os.path.join(os.path.dirname(log_path),
                                      f'{target}.segments.json'))
  command = [_MAKE.value, target, *_MAKE_ARGS.value]
  segments = ([] if _FRESH.value
              else read_segments(segments_path, shlex.join(command)))
  print(f'Running {shlex.join(command)}; output in {log_path}'
        + (f' (part {len(segments) + 1})' if segments else ''), flush=True)
  outcome = run_target(command, log_path, append=bool(segments))
  if outcome.status:
    raise _keep_unfinished(segments_path, command, segments, outcome,
                           log_path)
  seconds = outcome.seconds + sum(s['seconds'] for s in segments)
  records[target] = record(target, command, seconds,
                           parts=len(segments) + 1)
  reports.atomic_write_text(records_path,
                            json.dumps(records, indent=2) + '\n')
  if os.path.exists(segments_path):
    os.remove(segments_path)  # Counted in the record.
  markdown = build_section(
      records, round_reports.command_line('benchmarks.target_time'))
  output = round_reports.write_benchmarks_section(_OUTPUT_MARKDOWN.value,
                                                  _SECTION.value, markdown)
  print(markdown)
  print(f'{target}: {_duration(seconds)} in {len(segments) + 1} part(s). '
        f'Wrote section {_SECTION.value} of {output} and {records_path}')


if __name__ == '__main__':
  cli.run(main)
