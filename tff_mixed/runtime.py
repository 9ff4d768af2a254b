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
"""

import atexit
import gc
import os
import signal

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


_registered = False


def register_worker_cleanup() -> None:
  """Registers `stop_own_workers` to run at interpreter exit (once)."""
  global _registered
  if not _registered:
    atexit.register(_at_exit)
    _registered = True
