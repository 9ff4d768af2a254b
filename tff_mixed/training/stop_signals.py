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
"""How a run stops when it is told to: SIGINT and SIGTERM.

A training run must stop on Ctrl-C (SIGINT) and on SIGTERM (`kill`, a job
scheduler, a CI timeout) the same way: save the newest round, say where it
got to, and exit with the shell's status for the signal (130, 143). Two
things stood in the way:

* A process started in the background by a non-interactive shell (`cmd &`,
  `setsid cmd &`) inherits SIGINT ignored (POSIX), and Python then installs
  no `KeyboardInterrupt` handler: such a run could only be killed.
  `stop_on_signals` restores Ctrl-C's handler for the run, and raises
  `Terminated` (a `KeyboardInterrupt`) on SIGTERM, whose default action
  would kill the process without a word and without saving.
* A signal that lands while a round is being written (its metrics row, its
  checkpoint: TFF writes `program_state_N_tempXXXX`, then renames it) cut
  the write off half-way: a temporary directory left behind, a round saved
  but not counted. `deferred` holds SIGINT and SIGTERM for such a block and
  acts on them once it has ended.

Both act only in the main thread (the only one Python delivers signals to)
and put the previous handlers back when their block ends, so a library
caller's own handlers are left as they were.
"""

from collections.abc import Iterator
import contextlib
import signal
import threading
from typing import Optional


class Terminated(KeyboardInterrupt):
  """SIGTERM, raised where Ctrl-C raises `KeyboardInterrupt`.

  A subclass, so that everything that stops cleanly on Ctrl-C (saving the
  newest round, one line instead of a traceback) does so on SIGTERM too.

  Attributes:
    signum: `signal.SIGTERM`: the exit status is 128 + signum.
  """

  signum = signal.SIGTERM


def signal_number(error: BaseException) -> int:
  """The signal that raised `error` (SIGINT unless it says otherwise).

  A `RunInterrupted` carries the signal of the interrupt it replaces.
  """
  return int(getattr(error, 'signum', signal.SIGINT))


def _raise_terminated(signum, frame):
  del signum, frame  # Unused.
  raise Terminated()


def _in_main_thread() -> bool:
  return threading.current_thread() is threading.main_thread()


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
  """In the block, SIGINT raises `KeyboardInterrupt`, SIGTERM `Terminated`.

  SIGINT keeps a handler the caller installed; only an ignored SIGINT (a
  background job's) or the default action gets Python's Ctrl-C handler.
  SIGTERM keeps a handler the caller installed other than the default
  action, and ignoring it, which the caller chose. Outside the main thread
  it does nothing.
  """
  if not _in_main_thread():
    yield
    return
  previous = {s: signal.getsignal(s) for s in _STOP_SIGNALS}
  if previous[signal.SIGINT] in (signal.SIG_IGN, signal.SIG_DFL, None):
    signal.signal(signal.SIGINT, signal.default_int_handler)
  if previous[signal.SIGTERM] in (signal.SIG_DFL, None):
    signal.signal(signal.SIGTERM, _raise_terminated)
  try:
    yield
  finally:
    _restore(previous)


def _restore(handlers) -> None:
  for signum, handler in handlers.items():
    if handler is not None:  # None: not set from Python; leave it.
      signal.signal(signum, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
  """Holds SIGINT and SIGTERM until the block ends, then acts on them.

  For writes that must not be cut off half-way (a round's metrics and
  checkpoint). A signal that arrives in the block is delivered to the
  handler in force before it once the block has ended (so it raises there,
  after the write); the block itself runs to its end. Outside the main
  thread it does nothing.
  """
  if not _in_main_thread():
    yield
    return
  held: list[int] = []
  previous = {s: signal.getsignal(s) for s in _STOP_SIGNALS}

  def hold(signum, frame):
    del frame  # Unused.
    held.append(signum)

  for signum, handler in previous.items():
    # An ignored signal stays ignored, and one not set from Python stays.
    if handler not in (signal.SIG_IGN, None):
      signal.signal(signum, hold)
  try:
    yield
  finally:
    _restore(previous)
    first: Optional[int] = held[0] if held else None
    if first is not None:
      # The handler in force before the block gets it now: Python runs it
      # before `raise_signal` returns, so it raises here.
      signal.raise_signal(first)
