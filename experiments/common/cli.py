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
"""The one entry point of every experiment and benchmark binary.

A binary imports `experiments.tf_log_level` before anything that loads
TensorFlow (it sets TensorFlow's C++ log level, which TensorFlow reads once,
when it loads) and ends with `cli.run(main)` instead of `absl.app.run(main)`.
That gives every binary the same console behaviour:

* Errors. A bad input or a fault outside the program (a flag out of range, a
  missing or unreadable file, a damaged database, an output directory that
  cannot be written or that another running process holds, a full disk, a
  run that diverged, a checkpoint directory of another run, a TFF worker
  that is down) prints exactly one line, `error: ...`, on
  stderr and exits with status 1. Any other exception is a bug and keeps its
  traceback. `--verbose` also prints the traceback of the one-line errors.
* Ctrl-C. SIGINT prints one line, without a traceback, and exits with
  status 130 (128 + SIGINT, as shells report it), SIGTERM likewise with
  143, also in a binary started with SIGINT ignored (a script's `cmd &`;
  `tff_mixed.training.stop_signals`): for a training run,
  `interrupted after round N of <run>; run the same command to resume`
  (`tff_mixed.training.runner.RunInterrupted`), its last checkpoint left
  intact; the text of any other KeyboardInterrupt that has one (a binary
  saying what it kept); elsewhere `interrupted`. `--verbose` also prints the
  traceback.
* Workers. The TFF worker processes the binary starts end with it, at exit
  or when it is killed (`tff_mixed.runtime.register_worker_cleanup`). A
  binary that runs TFF computations calls `define_worker_addresses_flag()`:
  with `--worker_addresses=host:port,...` its `main` runs on those running
  TFF workers instead of the local runtime, a round's clients (or client
  groups) split across them. A malformed address fails as the flags are
  parsed, a worker that does not answer before `main` starts: each before
  any data is loaded.
* Quiet logs. TensorFlow's C++ log lines are off (`experiments.tf_log_level`);
  so are the INFO lines of TensorFlow's and TFF's Python code (checkpoint
  writes). This program's own log lines stay, without absl's prefix for INFO,
  and progress bars and tables are untouched. `--verbose` brings everything
  back, as does setting `TF_CPP_MIN_LOG_LEVEL` yourself (the C++ lines).
"""

import atexit
from collections.abc import Callable
import functools
import logging as std_logging
import math
import os
import signal
import sqlite3
import sys
import traceback
from typing import Any

from absl import app
from absl import flags
from absl import logging

from tff_mixed import remote
from tff_mixed import runtime
from tff_mixed.training import checkpoints
from tff_mixed.training import stop_signals

VERBOSE = flags.DEFINE_bool(
    'verbose', False, "Also print TensorFlow's and TFF's own log lines (C++ "
    'logs, grappler, checkpoint writes) and the traceback of an error.')

# The largest seed a binary takes: seeds reach NumPy, scikit-learn and
# TensorFlow, whose limits differ (2**32 - 1 for NumPy's legacy generator),
# and some runs derive more seeds from them; int32 suits all.
MAX_SEED = 2**31 - 1


def check_seeds(flag: str, seeds) -> list[int]:
  """`seeds` (a list flag's values) as distinct ints in [0, MAX_SEED].

  Raises:
    ValueError: Naming `--flag` otherwise.
  """
  try:
    values = [int(s) for s in seeds]
  except (TypeError, ValueError):
    values = []
  if (not values or min(values) < 0 or max(values) > MAX_SEED
      or len(set(values)) != len(values)):
    raise ValueError(f'--{flag} must be distinct ints from 0 to {MAX_SEED}, '
                     f'got {",".join(map(str, seeds))!r}.')
  return values


# `--worker_addresses`, once a binary defines it.
_worker_addresses: flags.FlagHolder | None = None

# This repository's packages: their INFO lines are shown by default.
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_OWN_DIRS = tuple(
    os.path.join(_REPO_ROOT, package) + os.sep
    for package in ('experiments', 'benchmarks', 'tff_mixed'))


def _expected_error_types() -> tuple[type[BaseException], ...]:
  """Exception types that mean a bad input or an outside fault, not a bug.

  Library types are looked up only if their module is loaded: an exception
  of a type whose module never loaded cannot have been raised.
  """
  types = [app.UsageError, ValueError, TypeError, OSError, sqlite3.Error]
  runner = sys.modules.get('tff_mixed.training.runner')
  if runner is not None:
    types.append(runner.DivergenceError)
  run_lock = sys.modules.get('tff_mixed.training.run_lock')
  if run_lock is not None:
    types.append(run_lock.DirectoryInUseError)  # A second run of one run.
  grpc = sys.modules.get('grpc')
  if grpc is not None:
    types.append(grpc.RpcError)  # e.g. a TFF worker that went away.
  tf = sys.modules.get('tensorflow')
  if tf is not None:
    # Files TensorFlow itself reads (e.g. TFDS data, checkpoints).
    types += [tf.errors.NotFoundError, tf.errors.PermissionDeniedError,
              tf.errors.DataLossError]
  return tuple(types)


def error_line(error: BaseException) -> str:
  """The one line (without 'error: ') that describes `error`."""
  if (isinstance(error, OSError) and error.strerror
      and error.filename is not None):
    # '[Errno 21] Is a directory: 'x'' -> 'x: Is a directory'.
    where = os.fsdecode(error.filename)
    if error.filename2 is not None:
      where += f' -> {os.fsdecode(error.filename2)}'
    text = f'{where}: {error.strerror}'
  else:
    text = str(error)
    if isinstance(error, sqlite3.Error):
      text = f'SQLite: {text}'  # Its messages do not say they are SQLite's.
  # One line, whatever the message holds (e.g. a worker's log tail).
  return ' '.join(text.split()) or type(error).__name__


def _fail(error: BaseException) -> None:
  print(f'error: {error_line(error)}', file=sys.stderr, flush=True)
  sys.exit(1)


def _check_float_flags_finite() -> None:
  """Refuses inf and nan in every float flag (no flag here means either)."""
  for name in flags.FLAGS:
    flag = flags.FLAGS[name]
    values = flag.value if isinstance(flag.value, list) else [flag.value]
    for value in values:
      if isinstance(value, float) and not math.isfinite(value):
        raise flags.IllegalFlagValueError(
            f'--{flag.name} must be finite, got {value}.')


def _parse_flags(argv: list[str]) -> list[str]:
  """absl's parse, failing in one `error:` line instead of a usage dump."""
  try:
    remaining = flags.FLAGS(argv)
    _check_float_flags_finite()
  except flags.Error as e:
    _fail(e)
  return remaining


class _OwnInfoOnly(std_logging.Filter):
  """Drops INFO (and lower) records of code outside this repository."""

  def filter(self, record: std_logging.LogRecord) -> bool:
    return (record.levelno >= std_logging.WARNING
            or os.path.abspath(record.pathname).startswith(_OWN_DIRS))


class _PlainFormatter(std_logging.Formatter):
  """INFO as the bare message; warnings and errors say which they are."""

  def format(self, record: std_logging.LogRecord) -> str:
    message = record.getMessage()
    if record.exc_info:
      message += '\n' + self.formatException(record.exc_info)
    if record.levelno >= std_logging.WARNING:
      return f'{record.levelname.lower()}: {message}'
    return message


def _configure_python_logs(verbose: bool) -> None:
  if verbose:
    return
  handler = logging.get_absl_handler()
  handler.addFilter(_OwnInfoOnly())
  handler.setFormatter(_PlainFormatter())
  # TensorFlow's logger has its own stderr handler besides absl's on the root
  # logger ('INFO:tensorflow:Assets written to ...', then the same line from
  # absl): below WARNING neither prints, and warnings print once, via absl.
  tf_logger = std_logging.getLogger('tensorflow')
  tf_logger.setLevel(std_logging.WARNING)
  if handler in std_logging.getLogger().handlers and tf_logger.propagate:
    for own in list(tf_logger.handlers):
      tf_logger.removeHandler(own)


# The exit status of a process ended by Ctrl-C, as shells report it; SIGTERM
# gives 128 + SIGTERM.
INTERRUPTED_STATUS = 128 + signal.SIGINT


def _interrupted(error: KeyboardInterrupt) -> None:
  """Prints the line for a stop by `error` and ends the process at once.

  Ctrl-C's own KeyboardInterrupt has no text; a RunInterrupted, or one a
  binary raises after Ctrl-C, says what was kept. The exit hooks run (the
  TFF workers end, logs are flushed), then the process exits without the
  interpreter's teardown: a TFF computation cut off by the signal may still
  be running on TFF's threads, and tearing the runtime down under them once
  ended a run with SIGABRT instead of its exit status.
  """
  signum = stop_signals.signal_number(error)
  default = ('interrupted' if signum == signal.SIGINT else
             f'stopped by {signal.Signals(signum).name}')
  print(str(error) or default, file=sys.stderr, flush=True)
  atexit._run_exitfuncs()  # pylint: disable=protected-access
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(128 + signum)  # pylint: disable=protected-access


def define_worker_addresses_flag() -> flags.FlagHolder:
  """Defines `--worker_addresses`: `run` runs `main` on those TFF workers.

  The one definition of the flag: a binary whose `main` runs TFF
  computations calls it at import (a second call returns the same holder).
  The addresses' form is checked as the flags are parsed
  (`tff_mixed.remote.check_worker_addresses`); `run` then connects to every
  worker before `main` and runs `main` inside
  `tff_mixed.remote.remote_execution`, so every TFF computation of the
  binary runs there. Empty (the default): TFF's local runtime.

  Returns:
    The flag's holder (a list of "host:port" strings).
  """
  global _worker_addresses
  if _worker_addresses is not None:
    # Binaries that import one another's flags (and tests importing several
    # binaries) share the one definition.
    return _worker_addresses
  _worker_addresses = flags.DEFINE_list(
      'worker_addresses', [], 'Comma-separated host:port of running TFF '
      'workers (tensorflow_federated/data/worker_binary --port=P); each '
      "round's clients (or client groups) are split across them. Empty: the "
      'local runtime.')
  flags.register_validator('worker_addresses', _check_worker_addresses)
  return _worker_addresses


def _check_worker_addresses(addresses: list[str]) -> bool:
  if addresses:
    try:
      remote.check_worker_addresses(addresses)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from None
  return True


def _run_main(main: Callable[[list[str]], Any], argv: list[str]) -> Any:
  _configure_python_logs(VERBOSE.value)
  addresses = [] if _worker_addresses is None else _worker_addresses.value
  try:
    # Ctrl-C and SIGTERM stop the binary as one KeyboardInterrupt, also
    # where it was started in the background with SIGINT ignored.
    with stop_signals.stop_on_signals():
      with remote.remote_execution(addresses):
        return main(argv)
  except KeyboardInterrupt as e:
    if VERBOSE.value:
      traceback.print_exc()
    _interrupted(e)
  except BaseException as e:  # pylint: disable=broad-except
    if not (isinstance(e, _expected_error_types())
            or checkpoints.is_disk_full(e)):
      raise  # A bug: keep the traceback.
    if VERBOSE.value:
      traceback.print_exc()
    _fail(e)


def run(main: Callable[[list[str]], Any]) -> None:
  """`absl.app.run(main)` with one-line errors and quiet logs.

  It first makes the TFF workers that the binary starts end with it
  (`tff_mixed.register_worker_cleanup`): importing `tff_mixed` does not.
  If the binary defined `--worker_addresses` (`define_worker_addresses_flag`)
  and it is set, `main` runs on those TFF workers; a worker that does not
  answer fails as one `error: ...` line before `main` starts.

  Args:
    main: The binary's `main(argv)`; it may raise `app.UsageError`,
      ValueError, TypeError, OSError, `sqlite3.Error`,
      `tff_mixed.DivergenceError`, gRPC or TensorFlow file errors for bad
      inputs, each printed as one `error: ...` line with exit status 1.
  """
  runtime.register_worker_cleanup()
  app.run(functools.partial(_run_main, main), flags_parser=_parse_flags)
