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
"""Ends the TFF `worker_binary` processes that this Python process started.

TFF 0.87's local C++ runtime starts `tensorflow_federated/data/worker_binary`
as a child process on the first computation call. At interpreter exit TFF fails
to stop it (its `ServiceManager.__del__` runs after module teardown), so the
worker is orphaned and keeps our stdout/stderr open: `python x.py | tail` and
CI steps that wait for the pipe then hang. `register_worker_cleanup()`
(exported as `tff_mixed.register_worker_cleanup`) registers an `atexit` hook
that kills, by PID, exactly the workers that are children of this process, and
nothing else on the machine.

Importing `tff_mixed` does none of this: a library import leaves the
interpreter's exit hooks and TFF's modules alone. The call is explicit, and
made by those that own the process: `tff_mixed.training.runner.run_training`,
`tff_mixed.asynchronous.simulation.run_async` and every binary of the
repository's `experiments/` (their shared entry point makes it). A program
that runs TFF computations in its own loop calls it once, before its first
computation.

An exit hook cannot run when the process is killed (`kill -9`, the OOM
killer), and the worker, adopted by init, would keep running (~170 MB). So on
Linux every worker also gets a parent-death signal (`prctl(PR_SET_PDEATHSIG,
SIGKILL)`, set by a small launcher that then execs the worker in its place,
`worker_command`): the kernel kills it as soon as its parent goes, however
that happens. TFF starts its worker with `subprocess.Popen` inside
`executor_factory.local_cpp_executor_factory`; we hand that module a
`subprocess` whose `Popen` starts the worker through the launcher, without
editing TFF's files. Linux delivers the signal when the *thread* that started
the worker ends: TFF starts it from its execution context's event-loop thread,
which lives as long as the context does (and a context replaced by another
stops its worker anyway).

The same `Popen` also gives the worker the default SIGINT and SIGQUIT
handlers. A non-interactive shell starts `cmd &` with both ignored, and an
ignored signal stays ignored across fork and exec; TFF stops its worker with
SIGINT and then waits for it, so a run started in the background from a
script (the Makefile's `results-celeba`, `make test &`) hung there forever.
It also puts the worker in a process group of its own, so that Ctrl-C, or a
signal sent to the job's process group, reaches the Python process alone,
which stops cleanly and ends its workers itself.

TFF then waits for its new worker to answer, polling the worker's channel and
never its process: a worker that dies before it listens left the caller
waiting forever. That wait now raises a RuntimeError naming the worker and
how it ended (`_WorkerWatchingTime`).
"""

import atexit
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import types
from typing import Optional

_WORKER_NAME = 'worker_binary'


def _stat_fields(pid: int) -> list[str]:
  """Fields of `/proc/PID/stat` after the command name, or [] if gone."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      stat = f.read()
  except OSError:
    return []
  # The command name in field 2 may contain spaces; fields resume after ')'.
  return stat.rsplit(')', 1)[-1].split()


def process_alive(pid: int) -> bool:
  """Whether `pid` is a live process (not gone, not a zombie)."""
  fields = _stat_fields(pid)
  return bool(fields) and fields[0] != 'Z'


def _children_of(pid: int) -> list[int]:
  """Returns the PIDs whose parent is `pid` (Linux `/proc`; empty elsewhere)."""
  children = []
  try:
    entries = os.listdir('/proc')
  except OSError:
    return children
  for entry in entries:
    if not entry.isdigit():
      continue
    fields = _stat_fields(int(entry))
    if len(fields) > 1 and int(fields[1]) == pid:
      children.append(int(entry))
  return children


def own_worker_pids() -> list[int]:
  """Returns the PIDs of TFF workers started by this process."""
  pids = []
  for child in _children_of(os.getpid()):
    try:
      with open(f'/proc/{child}/cmdline', 'rb') as f:
        cmdline = f.read()
    except OSError:
      continue
    if _WORKER_NAME.encode() in cmdline:
      pids.append(child)
  return pids


def stop_own_workers() -> None:
  """Kills the TFF workers started by this process (idempotent)."""
  for pid in own_worker_pids():
    try:
      os.kill(pid, signal.SIGKILL)
      os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
      pass


def _disarm_tff_service_managers() -> None:
  """Stops TFF's own late worker shutdown from printing a traceback.

  TFF's `ServiceManager.__del__` runs during module teardown, when the
  `subprocess` module is already gone, and prints 'Exception ignored ...
  AttributeError' on every exit. Once `stop_own_workers` has ended the
  worker there is nothing left for it to do, so its finalizer is replaced
  by a no-op. Matched by class name and attribute; the class is local to one
  TFF factory function, so nothing else is touched.
  """
  for obj in gc.get_objects():
    # `type(obj) is type`, not isinstance: isinstance on TFDS's lazy
    # placeholder classes imports their modules (and logs warnings).
    if (type(obj) is type and obj.__name__ == 'ServiceManager'
        and obj.__module__.startswith('tensorflow_federated.')
        and '__del__' in vars(obj)):
      obj.__del__ = lambda self: None


def _at_exit() -> None:
  stop_own_workers()
  if not own_worker_pids():
    _disarm_tff_service_managers()


# The launcher every worker this project starts runs first: a new interpreter
# (`python -I -S`, about 25 ms) that restores the default SIGINT and SIGQUIT
# (a non-interactive shell's `cmd &` starts both ignored, POSIX; TFF stops its
# worker with SIGINT), on Linux sets the parent-death signal (prctl(2) option
# 1, PR_SET_PDEATHSIG: SIGKILL, which survives the exec; if the parent has
# already died it exits at once), then execs the worker in its place (same
# pid). Doing this in the
# launcher, not in a `preexec_fn` between fork and exec, keeps Python code out
# of a child forked from a process full of threads (TFF's, gRPC's): without a
# `preexec_fn`, `subprocess` spawns with vfork and runs no fork handlers. With
# one, a suite run lost a child to SIGABRT between fork and exec; TFF, which
# polls the new worker's channel without looking at its process, then waited
# forever (`_WorkerWatchingTime` now ends such a wait).
# The worker also gets a process group of its own: Ctrl-C at a terminal, or
# `kill -INT -PGID` to a job, signals the whole process group, and a worker
# killed by it under a running computation was silently replaced by TFF
# while the run went on (where Python ignored SIGINT) or failed the round
# under a run that was stopping cleanly. Signals to the job are the Python
# process's to act on; its workers end with it (the exit hook, the
# parent-death signal), and TFF's own SIGINT reaches the worker by pid.
# argv: parent pid, "1" to die with the parent, the worker's command.
_LAUNCHER = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.setpgid(0, 0)
if sys.argv[2] == '1' and sys.platform.startswith('linux'):
  import ctypes
  libc = ctypes.CDLL(None, use_errno=True)
  libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)
  if os.getppid() != int(sys.argv[1]):
    os._exit(1)
try:
  os.execv(sys.argv[3], sys.argv[3:])
except OSError as e:
  sys.stderr.write(f'error: cannot start {sys.argv[3]}: {e}\\n')
  os._exit(127)
"""


def worker_command(args, die_with_parent: bool = True) -> list[str]:
  """The command that starts the worker `args` through `_LAUNCHER`.

  The worker (`args[0]`, an executable path, run with `args[1:]`) gets the
  default SIGINT and SIGQUIT handlers, which a process started in the
  background by a non-interactive shell inherits as ignored, and which exec
  keeps ignored: TFF stops its worker with SIGINT and waits for it to end.
  It runs in a process group of its own, out of reach of signals sent to its
  parent's job (Ctrl-C). With `die_with_parent` on Linux it also gets SIGKILL when the thread that
  started it ends (the parent-death signal; Linux delivers it per thread). The
  launcher execs the worker, so the `Popen`'s pid is the worker's.

  Args:
    args: The worker's command: its executable's path, then its arguments.
    die_with_parent: Whether to kill the worker when the thread that started
      it ends.

  Returns:
    The command to hand `subprocess.Popen` (with no `preexec_fn`).
  """
  args = [os.fspath(a) for a in args]
  return [sys.executable, '-I', '-S', '-c', _LAUNCHER, str(os.getpid()),
          '1' if die_with_parent else '0', *args]


# The last worker `_PopenDyingWithParent` started in each thread: TFF starts a
# worker and then polls its channel in the same thread.
_started = threading.local()


class _PopenDyingWithParent(subprocess.Popen):
  """`subprocess.Popen` for TFF's worker: started by `worker_command`."""

  def __init__(self, args, **kwargs):
    super().__init__(worker_command(args), **kwargs)
    _started.process = self


def _exit_description(process: subprocess.Popen) -> Optional[str]:
  """How `process` ended ('exited with status 1', 'killed by signal 6'), or
  None while it runs; not reaped (TFF signals and waits for it by pid)."""
  if process.returncode is not None:
    code = process.returncode
    return (f'exited with status {code}' if code >= 0 else
            f'killed by signal {-code}')
  try:
    info = os.waitid(os.P_PID, process.pid,
                     os.WEXITED | os.WNOHANG | os.WNOWAIT)
  except ChildProcessError:
    return None
  if info is None:
    return None
  return (f'exited with status {info.si_status}'
          if info.si_code == os.CLD_EXITED else
          f'killed by signal {info.si_status}')


class _WorkerWatchingTime(types.ModuleType):
  """The `time` module, but `sleep` raises if the worker it waits for died.

  TFF 0.87 waits for a new local worker with `while not stub.is_ready:
  time.sleep(...)`, and never looks at the worker's process: a worker that
  exits before it listens (killed, a port taken, a failed start) leaves the
  caller waiting forever. TFF's wait is the only `time` call in its
  `executor_factory` module; the module is handed this one.
  """

  def sleep(self, seconds):
    process = getattr(_started, 'process', None)
    if process is not None:
      ended = _exit_description(process)
      if ended is not None:
        _started.process = None
        raise RuntimeError(f"TFF's worker_binary (pid {process.pid}) {ended} "
                           'before it answered')
    time.sleep(seconds)

  def __getattr__(self, name):
    return getattr(time, name)


class _SubprocessDyingWithParent(types.ModuleType):
  """The `subprocess` module, but `Popen` children are started by
  `worker_command`: default SIGINT and SIGQUIT, and dead with their parent."""

  Popen = _PopenDyingWithParent

  def __getattr__(self, name):
    return getattr(subprocess, name)


def _tff_executor_factory() -> Optional[types.ModuleType]:
  """TFF's `executor_factory` module, which starts the local worker; None if
  a TFF version has moved it."""
  try:
    # pylint: disable=g-import-not-at-top
    from tensorflow_federated.python.core.impl.executor_stacks import executor_factory
    # pylint: enable=g-import-not-at-top
  except ImportError:
    return None
  return executor_factory


def _make_tff_workers_die_with_parent() -> None:
  """Gives TFF's local-runtime worker the parent-death signal and SIGINT.

  TFF 0.87's `executor_factory` module starts `worker_binary` with
  `subprocess.Popen(args, stdout=..., stderr=...)`, looking `subprocess` up
  in its module globals at call time; the module is handed our version. If a
  TFF upgrade moves the call, nothing breaks: only the signals are lost,
  which `tests/runtime_test.py` reports.
  """
  executor_factory = _tff_executor_factory()
  if executor_factory is None:
    return
  if getattr(executor_factory, 'subprocess', None) is subprocess:
    executor_factory.subprocess = _SubprocessDyingWithParent('subprocess')


def _make_tff_wait_watch_its_worker() -> None:
  """Ends TFF's wait for a new local worker if the worker has died.

  TFF 0.87's `executor_factory` looks `time` up in its module globals when it
  sleeps between checks of the new worker's channel; the module is handed
  `_WorkerWatchingTime`, whose `sleep` raises a RuntimeError naming the
  worker and how it ended. If a TFF upgrade drops the name, nothing is set.
  """
  executor_factory = _tff_executor_factory()
  if executor_factory is not None and getattr(
      executor_factory, 'time', None) is time:
    executor_factory.time = _WorkerWatchingTime('time')


# TFF 0.87 checks a new worker's gRPC channel, then sleeps a fixed second
# before checking again; and gRPC, whose first connection attempt comes
# before the worker listens, waits its default initial reconnect backoff
# (about a second) before the next. A worker is ready in about 0.1 s, so
# every start (every binary run, every new execution context) waited about
# 0.9 s idle. Polled every 10 ms, with a first reconnect backoff of 20 ms
# (growing by gRPC's factor 1.6 from there), the first call of a fresh
# context takes about 0.2 s instead of 1.1-1.2 s.
# Only the initial backoff is set. gRPC's `min_reconnect_backoff_ms` is also
# its connect timeout (20 s by default): set to 20 ms, a connection attempt
# on a loaded machine can time out; and its `max_reconnect_backoff_ms` (120 s
# by default) lets the channels of ended workers, which TFF's stubs keep
# polling, go quiet. With both set (20 and 100 ms), a run of the suite with
# three pytest processes on two cores lost one to a segmentation fault in
# gRPC's connectivity polling and hung another on a call to its worker (the
# cause is not proven; neither had been seen before they were set).
_WORKER_POLL_SECONDS = 0.01
_WORKER_CHANNEL_OPTIONS = (
    ('grpc.initial_reconnect_backoff_ms', 20),
)


def _make_tff_workers_start_fast() -> None:
  """Waits for TFF's new local worker by polling, not a fixed second.

  TFF 0.87's `executor_factory` reads its wait
  (`_LOCALHOST_SERVER_WAIT_TIME_SEC`) and its gRPC channel options
  (`_GRPC_CHANNEL_OPTIONS`, only for the channel to its local worker) from
  module globals at call time; the module is given a shorter wait and the
  options plus `_WORKER_CHANNEL_OPTIONS`. Nothing else changes: the worker,
  its flags and what runs on it are TFF's. If a TFF upgrade drops these
  names, nothing is set (`tests/runtime_test.py` reports it).
  """
  executor_factory = _tff_executor_factory()
  if executor_factory is None:
    return
  if not (hasattr(executor_factory, '_LOCALHOST_SERVER_WAIT_TIME_SEC')
          and isinstance(getattr(executor_factory, '_GRPC_CHANNEL_OPTIONS',
                                 None), list)):
    return
  executor_factory._LOCALHOST_SERVER_WAIT_TIME_SEC = min(  # pylint: disable=protected-access
      executor_factory._LOCALHOST_SERVER_WAIT_TIME_SEC,  # pylint: disable=protected-access
      _WORKER_POLL_SECONDS)
  options = executor_factory._GRPC_CHANNEL_OPTIONS  # pylint: disable=protected-access
  names = {name for name, _ in options}
  executor_factory._GRPC_CHANNEL_OPTIONS = options + [  # pylint: disable=protected-access
      option for option in _WORKER_CHANNEL_OPTIONS if option[0] not in names]


_registered = False


def register_worker_cleanup() -> None:
  """Makes the TFF workers this process starts end with it (idempotent).

  Registers `stop_own_workers` to run at interpreter exit, and on Linux gives
  TFF's local-runtime worker the parent-death signal, so that it also ends
  when this process is killed, and the default SIGINT, with which TFF stops
  it, even in a process started in the background with SIGINT ignored.
  It also has TFF wait for a new local worker by polling it every 10 ms
  rather than a fixed second (`_make_tff_workers_start_fast`): a fresh
  execution context's first call then takes about 0.2 s instead of 1.1.

  Nothing calls it at import. Call it once, early, in a program that runs
  TFF computations (before the first, which starts the worker: the signals
  apply to workers started after the call, the exit hook to all of them);
  `run_training`, `run_async` and the binaries call it themselves. It hands
  TFF's `executor_factory` module a `subprocess` of ours, so the process's
  other `subprocess` users are unaffected.
  """
  global _registered
  if not _registered:
    atexit.register(_at_exit)
    _make_tff_workers_die_with_parent()
    _make_tff_wait_watch_its_worker()
    _make_tff_workers_start_fast()
    _registered = True
