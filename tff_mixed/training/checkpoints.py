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
"""Checkpoints that refuse to resume the wrong run and survive a corrupt save.

Wraps `tff.program.FileProgramStateManager` with the guarantees a long
simulation needs:

* a run writes a fingerprint (its hyperparameters) beside its checkpoints and
  refuses to resume from a directory written by a different configuration,
  instead of silently overwriting it;
* a checkpoint whose tensors do not match the process's state (another model)
  is refused with a message, never loaded into the wrong structure;
* a latest checkpoint that cannot be read (a save cut off by a kill) is
  skipped in favour of the previous one, and the fallback is reported;
* a run resumed without the metrics of the rounds its checkpoints hold (a
  deleted metrics file) is refused, naming what is missing
  (`check_metrics_cover`);
* one process at a time writes a checkpoint directory (`run_lock`), and the
  one that claims it clears what a writer killed mid-save left: TFF writes
  `program_state_N_tempXXXX` and renames it to `program_state_N` when done.
"""

import asyncio
from collections.abc import Callable, Iterator
import contextlib
import csv
import errno
import io
import json
import os
import re
import shutil
from typing import Any, Mapping, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.training import reports
from tff_mixed.training import run_lock

FINGERPRINT_FILE = 'experiment_fingerprint.json'
_PREFIX = 'program_state_'
# A save in progress (`tff.program.FileProgramStateManager` writes the
# SavedModel there, then renames it): left behind only by a dead writer.
_TEMP_PATTERN = re.compile(re.escape(_PREFIX) + r'\d+_temp\d+')


class CheckpointMismatchError(ValueError):
  """The checkpoint directory belongs to another experiment or model."""


def run_sync(coroutine):
  """Runs a coroutine on this thread's event loop (TFF's program style)."""
  try:
    loop = asyncio.get_event_loop()
  except RuntimeError:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
  return loop.run_until_complete(coroutine)


def _signature(structure) -> list[tuple[tuple[int, ...], str]]:
  return [(tuple(np.shape(x)), np.asarray(x).dtype.name)
          for x in tf.nest.flatten(structure)]


def _free_name(path: str) -> str:
  """`path`, or `path.2`, `path.3`, ...: the first that does not exist.

  An earlier fallback may have left `program_state_N.unreadable` behind (a
  later run wrote round N again and lost it again): never overwrite it.
  """
  candidate, n = path, 1
  while os.path.lexists(candidate):
    n += 1
    candidate = f'{path}.{n}'
  return candidate


def claim_directory(directory: str) -> None:
  """Locks checkpoint `directory` for this process; clears dead writers' saves.

  Creates the directory if needed. Holding the lock (`run_lock`), no other
  process can be saving there, so any `program_state_N_temp*` is a save cut
  off by a kill: removed. Complete checkpoints are never touched.

  Raises:
    run_lock.DirectoryInUseError: If another process holds the directory.
    OSError: If the directory or its lock file cannot be created.
  """
  run_lock.lock_run_directory(directory)
  for path in _cut_off_saves(directory):
    logging.warning('Removing %s, a checkpoint save cut off by the end of '
                    'its process.', path)
    shutil.rmtree(path)


def _cut_off_saves(directory: str) -> list[str]:
  """The `program_state_N_temp*` directories in `directory`, sorted."""
  return [os.path.join(directory, name)
          for name in sorted(os.listdir(directory))
          if _TEMP_PATTERN.fullmatch(name)
          and os.path.isdir(os.path.join(directory, name))]


# What a full disk (or an exhausted quota) says: an OSError's errno, or the
# text TensorFlow's file system puts in the error it raises instead (a
# `tf.errors.ResourceExhaustedError` from a SavedModel or gfile write).
_DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_DISK_FULL_TEXTS = tuple(os.strerror(e) for e in _DISK_FULL_ERRNOS)


def is_disk_full(error: BaseException) -> bool:
  """Whether `error` says a write failed for want of disk space."""
  if isinstance(error, OSError) and error.errno in _DISK_FULL_ERRNOS:
    return True
  return (isinstance(error, (OSError, tf.errors.OpError))
          and any(text in str(error) for text in _DISK_FULL_TEXTS))


class DiskFullError(OSError):
  """A write of a run failed for want of disk space; its message says what
  was kept and how to resume."""

  def __init__(self, message: str):
    super().__init__(errno.ENOSPC, message)

  def __str__(self) -> str:
    return self.strerror


@contextlib.contextmanager
def disk_full_as(message: Callable[[], str]) -> Iterator[None]:
  """Raises `DiskFullError(message())` for a disk-full error in the block.

  Other errors pass unchanged; the disk-full one is its `__cause__`.
  """
  try:
    yield
  except Exception as error:  # pylint: disable=broad-exception-caught
    if not is_disk_full(error):
      raise
    raise DiskFullError(message()) from error


def _read_fingerprint(path: str) -> dict[str, Any]:
  """The fingerprint at `path`.

  Raises:
    CheckpointMismatchError: Naming `path`, if it is not a JSON object.
  """
  try:
    with open(path, encoding='utf-8') as f:
      fingerprint = json.load(f)
  except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError included.
    raise CheckpointMismatchError(
        f'{path} is damaged ({e}), so the checkpoints beside it cannot be '
        'matched to this run: restore it, or delete that directory to start '
        'over.') from e
  if not isinstance(fingerprint, dict):
    raise CheckpointMismatchError(
        f'{path} is damaged (a JSON {type(fingerprint).__name__}, not an '
        'object), so the checkpoints beside it cannot be matched to this '
        'run: restore it, or delete that directory to start over.')
  return fingerprint


class Checkpointer:
  """Saves and restores a process's state under one directory.

  Attributes:
    directory: The checkpoint directory.
  """

  def __init__(self, directory: str, fingerprint: Mapping[str, Any],
               keep_total: int = 3):
    self.directory = directory
    self._fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True,
                                              default=str))
    self._manager = tff.program.FileProgramStateManager(
        directory, prefix=_PREFIX, keep_total=keep_total, keep_first=False)

  def _fingerprint_path(self) -> str:
    return os.path.join(self.directory, FINGERPRINT_FILE)

  def claim(self) -> None:
    """`claim_directory(self.directory)`."""
    claim_directory(self.directory)

  def check_or_write_fingerprint(self) -> None:
    """Claims the directory; writes the fingerprint or refuses another one.

    Raises:
      CheckpointMismatchError: If the directory holds checkpoints of a run
        with different hyperparameters.
      run_lock.DirectoryInUseError: If another process holds the directory.
    """
    self.claim()
    path = self._fingerprint_path()
    if os.path.exists(path):
      existing = _read_fingerprint(path)
      if existing != self._fingerprint:
        diff = sorted(
            k for k in set(existing) | set(self._fingerprint)
            if existing.get(k) != self._fingerprint.get(k))
        raise CheckpointMismatchError(
            f'Refusing to resume from {self.directory}: its checkpoints were '
            f'written by a run with other settings (differing: {diff}). Use '
            'another --experiment_name or --root_output_dir, or delete that '
            'directory to start over.')
      return
    if run_sync(self._manager.get_versions()):
      raise CheckpointMismatchError(
          f'Refusing to resume from {self.directory}: it holds checkpoints '
          f'but no {FINGERPRINT_FILE}, so it was not written by this runner.')
    temp = path + '.tmp'
    with open(temp, 'w') as f:
      json.dump(self._fingerprint, f, indent=2, sort_keys=True)
    os.replace(temp, path)

  def latest_version(self) -> Optional[int]:
    versions = run_sync(self._manager.get_versions())
    return versions[-1] if versions else None

  def restore(self, initial_state) -> tuple[Any, int]:
    """Returns `(state, round)` of the newest readable checkpoint.

    Returns `(initial_state, 0)` when there is none.

    Raises:
      CheckpointMismatchError: If the checkpoints hold another structure.
    """
    versions = run_sync(self._manager.get_versions()) or []
    expected = _signature(initial_state)
    unreadable = []
    for version in reversed(versions):
      try:
        state = run_sync(self._manager.load(version, initial_state))
      except Exception as e:  # pylint: disable=broad-except
        logging.warning(
            'Checkpoint %d in %s is unreadable (%s: %s); falling back to the '
            'previous one.', version, self.directory, type(e).__name__, e)
        unreadable.append(version)
        continue
      if _signature(state) != expected:
        raise CheckpointMismatchError(
            f'Refusing to resume from checkpoint {version} in '
            f'{self.directory}: its tensors do not match this model '
            '(different shapes or dtypes). Use another --experiment_name.')
      moved = []
      for bad in unreadable:
        # Keep the unreadable files for inspection, out of the way of the
        # rounds about to be saved again.
        path = os.path.join(self.directory, f'{_PREFIX}{bad}')
        target = _free_name(f'{path}.unreadable')
        os.rename(path, target)
        moved.append(os.path.basename(target))
      if unreadable:
        logging.warning('Resumed from checkpoint %d, not the latest (%d), '
                        'which could not be read; moved aside: %s.', version,
                        versions[-1], ', '.join(moved))
      return state, version
    if versions:
      # Starting over would bury the unreadable checkpoints under new ones;
      # leave them for the user to inspect.
      raise CheckpointMismatchError(
          f'No checkpoint in {self.directory} can be read (versions '
          f'{versions}). Inspect or delete the directory, or use another '
          '--experiment_name.')
    return initial_state, 0

  def save(self, state, round_num: int) -> None:
    """Saves `state` as round `round_num`.

    Raises:
      DiskFullError: If the disk is full; the unfinished save is removed
        and the checkpoints before it are left intact.
    """
    def failed_save() -> str:
      # The directory is this process's (`claim`): any unfinished save in
      # it is the one that just failed.
      for path in _cut_off_saves(self.directory):
        shutil.rmtree(path, ignore_errors=True)
      return (f'No space left on device to save round {round_num} in '
              f'{self.directory}')

    with disk_full_as(failed_save):
      run_sync(self._manager.save(state, round_num))


class RoundSaver:
  """When a run saves its state: every `every` rounds, the last, on a stop.

  Attributes:
    last_saved: The newest round saved or resumed from (None: none yet).
  """

  def __init__(self, checkpointer: Checkpointer, every: int,
               total_rounds: int, start_round: int):
    self._checkpointer = checkpointer
    self._every, self._total_rounds = every, total_rounds
    self.last_saved = start_round or None
    # The newest state a round handed out (rounds inside a multi-round call
    # get none).
    self._newest = (start_round, None)

  def round_ended(self, round_num: int, state) -> None:
    """Keeps `state` (None: none handed out), saved on schedule."""
    if state is not None:
      self._newest = (round_num, state)
    if round_num % self._every == 0 or round_num == self._total_rounds:
      self._checkpointer.save(state, round_num)
      self.last_saved = round_num

  def save_newest(self, name: str) -> None:
    """Saves the newest state if no checkpoint holds it (on a stop).

    A failed save is logged, not raised: the checkpoints before it stay.
    """
    round_num, state = self._newest
    if state is None or round_num == self.last_saved:
      return
    if self._checkpointer.latest_version() == round_num:
      # Saved on schedule, by a save a signal cut short of counting it.
      self.last_saved = round_num
      return
    try:
      self._checkpointer.save(state, round_num)
      self.last_saved = round_num
    except Exception as error:  # pylint: disable=broad-exception-caught
      logging.warning('%s: could not save round %d on stopping: %s', name,
                      round_num, error)


def check_metrics_cover(metrics_path: str, start_round: int,
                        checkpoint_dir: str, round_key: str) -> None:
  """Checks a resumed run's metrics CSV holds rounds 1..`start_round`.

  Its rows are keyed by the column `round_key`.

  The runner writes a round's metrics before its checkpoint, so a run
  resuming after round `start_round` has their rows; without them (the file
  deleted, or replaced by an older copy) the resumed run would go on
  without the history of the rounds its model has trained. A last row cut
  off mid-write (a kill, a full disk) belongs to a round after the
  checkpoint, which is trained again: it is dropped.

  Raises:
    ValueError: Naming the file and the missing rounds.
  """
  try:
    with open(metrics_path, newline='') as f:
      text = f.read()
  except FileNotFoundError:
    text = ''
  if text and not text.endswith('\n'):
    text = text[:text.rfind('\n') + 1]
    reports.atomic_write_text(metrics_path, text)
    logging.warning('%s: dropped its last row, cut off while it was being '
                    'written; its round is trained again.', metrics_path)
  found = {row.get(round_key) for row in csv.DictReader(io.StringIO(text))}
  missing = [r for r in range(1, start_round + 1) if str(r) not in found]
  if missing:
    rounds = (f'round {missing[0]}' if len(missing) == 1 else
              f'{len(missing)} rounds from {missing[0]} to {missing[-1]}')
    what = ('is missing' if not text else f'has no row for {rounds}')
    raise ValueError(
        f'{metrics_path} {what}, although the checkpoints in '
        f'{checkpoint_dir} reach round {start_round}: restore the file, or '
        'delete both directories to train from round 1 again.')
