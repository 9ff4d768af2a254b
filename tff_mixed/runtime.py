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
CI steps that wait for the pipe then hang. Importing `tff_mixed` registers an
`atexit` hook that kills, by PID, exactly the workers that are children of this
process, and nothing else on the machine.

An exit hook cannot run when the process is killed (`kill -9`, the OOM
killer), and the worker, adopted by init, would keep running (~170 MB). So on
Linux every worker also gets a parent-death signal (`prctl(PR_SET_PDEATHSIG,
SIGKILL)`, set in the child between fork and exec): the kernel kills it as
soon as its parent goes, however that happens. TFF starts its worker with
`subprocess.Popen` inside `executor_factory.local_cpp_executor_factory`; we
hand that module a `subprocess` whose `Popen` adds the signal, without editing
TFF's files. Linux delivers the signal when the *thread* that started the
worker ends: TFF starts it from its execution context's event-loop thread,
which lives as long as the context does (and a context replaced by another
stops its worker anyway).
"""

import atexit
import ctypes
import gc
import os
import signal
import subprocess
import sys
import types

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


# prctl(2) option: the signal this process gets when its parent thread ends.
_PR_SET_PDEATHSIG = 1


def die_with_parent_preexec_fn():
  """A `Popen` `preexec_fn` that kills the child when its parent ends.

  Runs in the child between fork and exec and sets the Linux parent-death
  signal to SIGKILL, which survives the exec. If the parent already died
  before the signal was set, the child exits at once. Returns `None` where
  `prctl` is unavailable (not Linux): there only the exit hook ends workers.

  Returns:
    The function, or `None`.
  """
  if not sys.platform.startswith('linux'):
    return None
  try:
    # Resolved here, in the parent: the child should only make the call.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
  except (OSError, AttributeError):
    return None
  parent = os.getpid()
  kill = int(signal.SIGKILL)

  def preexec_fn():
    prctl(_PR_SET_PDEATHSIG, kill)
    if os.getppid() != parent:
      os._exit(1)  # pylint: disable=protected-access

  return preexec_fn


class _PopenDyingWithParent(subprocess.Popen):
  """`subprocess.Popen` whose child gets the parent-death signal (Linux)."""

  def __init__(self, args, **kwargs):
    if kwargs.get('preexec_fn') is None:
      kwargs['preexec_fn'] = die_with_parent_preexec_fn()
    super().__init__(args, **kwargs)


class _SubprocessDyingWithParent(types.ModuleType):
  """The `subprocess` module, but `Popen` children die with their parent."""

  Popen = _PopenDyingWithParent

  def __getattr__(self, name):
    return getattr(subprocess, name)


def _make_tff_workers_die_with_parent() -> None:
  """Gives TFF's local-runtime worker the parent-death signal.

  TFF 0.87's `executor_factory` module starts `worker_binary` with
  `subprocess.Popen(args, stdout=..., stderr=...)`, looking `subprocess` up
  in its module globals at call time; the module is handed our version. If a
  TFF upgrade moves the call, nothing breaks: only the signal is lost, which
  `tests/runtime_test.py` reports.
  """
  try:
    # pylint: disable=g-import-not-at-top
    from tensorflow_federated.python.core.impl.executor_stacks import executor_factory
    # pylint: enable=g-import-not-at-top
  except ImportError:
    return
  if getattr(executor_factory, 'subprocess', None) is subprocess:
    executor_factory.subprocess = _SubprocessDyingWithParent('subprocess')


_registered = False


def register_worker_cleanup() -> None:
  """Makes the TFF workers this process starts end with it (once).

  Registers `stop_own_workers` to run at interpreter exit, and on Linux gives
  TFF's local-runtime worker the parent-death signal, so that it also ends
  when this process is killed.
  """
  global _registered
  if not _registered:
    atexit.register(_at_exit)
    _make_tff_workers_die_with_parent()
    _registered = True
