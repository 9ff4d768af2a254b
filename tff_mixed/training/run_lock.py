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
taken once per process, and held until the process ends or releases it
(`unlock_run_directory`: the runner does when its run ends).

`claimed_output_directory` does the same for a binary's whole output
directory, where one invocation writes files of its own (a table, a plot,
its config) beside its runs: a second invocation on the directory, even
with other scenarios, would overwrite them.
"""

from collections.abc import Iterator
import contextlib
import fcntl
import os

from tff_mixed.training import reports

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
  _lock(os.path.join(path, LOCK_FILE), path)


def lock_run_file(path: str) -> None:
  """Locks the run whose state is the one file `path`, for this process.

  For a run whose state is one file, replaced whole at every save (a
  locked file would be replaced by an unlocked one): the lock is on
  `path + '.lock'`, beside it.

  Raises:
    DirectoryInUseError: If another process holds the lock.
    OSError: If the lock file cannot be created.
  """
  _lock(path + '.lock', path)


def _lock(lock_path: str, what: str) -> None:
  """Takes the lock of `lock_path` for this process; `what` is locked."""
  key = os.path.realpath(lock_path)
  if key in _held:
    return
  fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    holder = _holder(fd)
    os.close(fd)
    # The holder writes its PID right after taking the lock: an empty file
    # means we looked in between.
    by = f'process {holder}' if holder.isdigit() else 'another process'
    raise DirectoryInUseError(
        f'{what} is in use by {by}; wait for that run to end (or stop it) '
        'before running it again, or use another output directory or '
        'experiment name.') from None
  except BaseException:
    os.close(fd)
    raise
  os.ftruncate(fd, 0)
  os.pwrite(fd, f'{os.getpid()}\n'.encode('ascii'), 0)
  _held[key] = fd


def unlock_run_directory(path: str) -> None:
  """Releases this process's lock of run directory `path`, if it holds one.

  For a process that goes on after a run (a notebook, a test, a binary
  running several): another process may take the run up from there.
  """
  _unlock(os.path.join(path, LOCK_FILE))


def unlock_run_file(path: str) -> None:
  """Releases this process's lock of the run file `path` (`lock_run_file`),
  if it holds one, and removes the lock file.

  Removed while still held, so no other process can hold that file: one
  that opens the path afterwards creates and locks a new one, and this
  process writes nothing more.
  """
  _unlock(path + '.lock', remove=True)


def _unlock(lock_path: str, remove: bool = False) -> None:
  fd = _held.pop(os.path.realpath(lock_path), None)
  if fd is not None:
    if remove:
      try:
        os.remove(lock_path)
      except FileNotFoundError:
        pass
    os.close(fd)  # The kernel drops the flock with its last descriptor.


@contextlib.contextmanager
def claimed_output_directory(path: str, what: str = 'output directory'
                             ) -> Iterator[str]:
  """Creates directory `path` if needed and holds its lock for the block.

  For everything one invocation writes under `path`. A block inside
  another that holds the same directory leaves the lock to the outer one.

  Args:
    path: The directory.
    what: What it is, for the error messages (e.g. '--output_dir').

  Yields:
    `path`.

  Raises:
    DirectoryInUseError: If another process holds it.
    OSError: If it cannot be created (`reports.make_directory`).
  """
  reports.make_directory(path, what)
  held_already = os.path.realpath(os.path.join(path, LOCK_FILE)) in _held
  lock_run_directory(path)
  try:
    yield path
  finally:
    if not held_already:
      unlock_run_directory(path)
