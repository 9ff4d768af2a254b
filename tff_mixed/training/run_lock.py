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
"""One process at a time per run directory.

Two runs writing one checkpoint directory corrupt each other: both append
round 1 to metrics.csv, and the second then fails on TFF's 'File already
exists for path .../program_state_1', leaving its `program_state_1_temp*`
behind. `lock_run_directory` takes an exclusive `flock` on a lock file in
the directory, held until the process ends (the kernel releases it however
the process goes, `kill -9` included, so a lock is never stale), and writes
this process's PID into the file; a second process is refused with an error
that names the PID of the holder, before it writes anything.

A process may lock the same directory again (the runner claims a run once
before building its process and again when training starts): the lock is
taken once per process.
"""

import fcntl
import os

LOCK_FILE = '.run.lock'

# realpath of a locked directory -> the descriptor that holds its lock, open
# for the life of the process.
_held: dict[str, int] = {}


class DirectoryInUseError(RuntimeError):
  """Another live process holds the run directory's lock."""


def _holder(fd: int) -> str:
  """The PID the lock file records, as text ('' if not written yet)."""
  try:
    return os.pread(fd, 32, 0).decode('ascii', 'replace').strip()
  except OSError:
    return ''


def lock_run_directory(path: str) -> None:
  """Locks run directory `path` (created if missing) for this process.

  Args:
    path: The directory that holds one run's state (its checkpoints).

  Raises:
    DirectoryInUseError: If another process holds the lock.
    OSError: If the directory or its lock file cannot be created.
  """
  os.makedirs(path, exist_ok=True)
  key = os.path.realpath(path)
  if key in _held:
    return
  fd = os.open(os.path.join(path, LOCK_FILE),
               os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    holder = _holder(fd)
    os.close(fd)
    # The holder writes its PID right after taking the lock: an empty file
    # means we looked in between.
    by = f'process {holder}' if holder.isdigit() else 'another process'
    raise DirectoryInUseError(
        f'{path} is in use by {by}; wait for that run to end (or stop it) '
        'before running it again, or use another output directory or '
        'experiment name.') from None
  except BaseException:
    os.close(fd)
    raise
  os.ftruncate(fd, 0)
  os.pwrite(fd, f'{os.getpid()}\n'.encode('ascii'), 0)
  _held[key] = fd
