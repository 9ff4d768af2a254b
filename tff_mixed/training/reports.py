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
"""Run outputs written safely: atomic files and output directories.

A run's metrics, summaries and reports are written to a temporary file beside
their path and renamed onto it, so a reader, or a run killed mid-write, never
sees half a file; an output directory is made with a clear error when a file
stands in its way.
"""

import os
import tempfile
from typing import Optional

from absl import logging


def _current_umask() -> int:
  umask = os.umask(0)
  os.umask(umask)
  return umask


def atomic_write(path: str, write_fn, mode: str = 'w') -> None:
  """Writes via `write_fn(file)` to a temp file, then renames it to `path`.

  Readers (and a crashed run) never see a half-written file.

  Args:
    path: The file to write.
    write_fn: Called with the open temporary file.
    mode: `'w'` for text, `'wb'` for bytes.
  """
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp_path = tempfile.mkstemp(
      dir=directory, prefix=f'.{os.path.basename(path)}.', suffix='.tmp')
  try:
    with os.fdopen(fd, mode) as f:
      write_fn(f)
    # mkstemp creates the file private (0600); give it the usual mode.
    os.chmod(tmp_path, 0o666 & ~_current_umask())
    os.replace(tmp_path, path)
  except BaseException:
    if os.path.exists(tmp_path):
      os.remove(tmp_path)
    raise


def file_in_the_way(path: str) -> Optional[str]:
  """The nearest existing one of `path` and its parents, if not a directory.

  `None` means `path` is a directory or can be created as far as existing
  files go (permissions aside).
  """
  existing = os.path.abspath(os.fspath(path))
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  return None if os.path.isdir(existing) else existing


def make_directory(path: str, what: str = 'output directory') -> str:
  """Creates directory `path` (and its parents) unless it exists.

  Args:
    path: The directory.
    what: What it is, for the error message (e.g. '--output_dir').

  Returns:
    `path`.

  Raises:
    NotADirectoryError: If `path`, or the nearest of its parents that exists,
      is not a directory (the message names it).
    OSError: If it cannot be created otherwise (e.g. no permission), naming
      `path`.
  """
  path = os.fspath(path)
  blocker = file_in_the_way(path)
  if blocker == os.path.abspath(path):
    raise NotADirectoryError(f'The {what} {path} is a file, not a directory.')
  if blocker is not None:
    raise NotADirectoryError(f'The {what} {path} cannot be created: '
                             f'{blocker} is a file, not a directory.')
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as e:
    raise type(e)(f'The {what} {path} cannot be created: '
                  f'{e.strerror or e}.') from e
  return path


def temp_path_beside(path: str) -> str:
  """A new empty temporary file in `path`'s directory (created if needed).

  For writers that must hand a path (not an open file) to another library,
  e.g. sqlite3: write there, then `os.replace` it onto `path`.
  """
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, temp_path = tempfile.mkstemp(
      prefix=f'.{os.path.basename(path)}.', suffix='.tmp', dir=directory)
  os.close(fd)
  return temp_path


def remove_quietly(path: str) -> None:
  """Removes a temporary file; a missing one is fine, a failure is logged."""
  try:
    os.remove(path)
  except FileNotFoundError:
    pass
  except OSError as e:
    logging.warning('Could not remove the temporary file %s: %s', path, e)


def atomic_write_text(path: str, text: str) -> None:
  """Writes `text` to `path` atomically."""
  atomic_write(path, lambda f: f.write(text))
