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
"""Carries an unfinished run of the training runner to another checkout.

  python3 scripts/carry_run.py save ROOT NAME DEST
  python3 scripts/carry_run.py restore DEST ROOT NAME

A run of `tff_mixed.training.runner` (ROOT: its `--root_output_dir`, NAME:
its experiment name) resumes from its newest checkpoint, but only where its
output directory is. Runs longer than a machine is held (the eight-site LM's
scenarios at S = 100 take hours each on 2 cores) go on elsewhere from what
`save` copies to DEST/NAME: the newest finished checkpoint, the run's
fingerprint (which the runner checks on resuming), and its metrics so far
(`metrics.csv`, `hparams.json`). `restore` puts them back into a ROOT that
holds no checkpoint of NAME, and does nothing where DEST/NAME is absent or
ROOT already has checkpoints (the run there is newer), and refuses a ROOT
that a running process holds. The resumed run ends
where an uninterrupted one ends (the runner's guarantee, tested in
tests/runner_test.py); this only moves files.

Both write atomically: a copy is made beside its target and renamed into
place, so an interrupted `save` leaves the previous carried state intact.
Plain Python, no TensorFlow.
"""

import fcntl
import os
import re
import shutil
import signal
import sys

# The runner's layout (`runner.output_dirs`, `checkpoints.Checkpointer`;
# tests/runner_test.py checks they agree).
CHECKPOINTS = 'checkpoints'
RESULTS = 'results'
FINGERPRINT_FILE = 'experiment_fingerprint.json'
LOCK_FILE = '.run.lock'  # `run_lock.LOCK_FILE`, flocked while a run is on.
RESULT_FILES = ('metrics.csv', 'hparams.json')
# Exit statuses of main().
_EXIT_OK = 0
_EXIT_FAILED = 1
_FINISHED = re.compile(r'program_state_(\d+)')

_USAGE = ('usage: carry_run.py save ROOT NAME DEST | '
          'carry_run.py restore DEST ROOT NAME')


class CarryError(Exception):
  """A bad input, named in one line."""


def newest_checkpoint(directory: str) -> str:
  """The name of the newest finished `program_state_N` in `directory`."""
  found = []
  if os.path.isdir(directory):
    found = [(int(m.group(1)), name) for name in os.listdir(directory)
             if (m := _FINISHED.fullmatch(name))]
  if not found:
    raise CarryError(f'no finished checkpoint in {directory}')
  return max(found)[1]


def _check_not_running(directory: str) -> None:
  """Refuses a run directory that a running process holds (`run_lock`)."""
  path = os.path.join(directory, LOCK_FILE)
  if not os.path.exists(path):
    return
  fd = os.open(path, os.O_RDONLY)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    raise CarryError(f'a running process holds {directory}; stop it first '
                     '(Ctrl-C saves its last round)') from None
  finally:
    os.close(fd)  # Releases the lock, if taken.


def _copy_file(source: str, target_dir: str) -> None:
  if not os.path.isfile(source):
    raise CarryError(f'{source} is missing')
  shutil.copy2(source, target_dir)


def _publish(staged: str, target: str) -> None:
  """Renames `staged` to `target`, replacing what was there.

  Ctrl-C and SIGTERM wait for the two renames: between them `target` is
  missing (its old content is at `target.old`).
  """
  old = None
  stop_signals = {signal.SIGINT, signal.SIGTERM}
  blocked = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
  try:
    if os.path.exists(target):
      old = target + '.old'
      shutil.rmtree(old, ignore_errors=True)
      os.rename(target, old)
    os.rename(staged, target)
  finally:
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
  if old:
    shutil.rmtree(old)


def save(root: str, name: str, dest: str) -> str:
  """Copies run `name` under `root` to `dest/name`; returns the checkpoint."""
  checkpoints = os.path.join(root, CHECKPOINTS, name)
  checkpoint = newest_checkpoint(checkpoints)
  # A running run goes on past what would be carried, and rotates its
  # checkpoints away under the copy: stop it first (Ctrl-C saves its last
  # round).
  _check_not_running(checkpoints)
  target = os.path.join(dest, name)
  staged = target + '.tmp'
  shutil.rmtree(staged, ignore_errors=True)
  os.makedirs(os.path.join(staged, CHECKPOINTS))
  os.makedirs(os.path.join(staged, RESULTS))
  try:
    shutil.copytree(os.path.join(checkpoints, checkpoint),
                    os.path.join(staged, CHECKPOINTS, checkpoint))
    _copy_file(os.path.join(checkpoints, FINGERPRINT_FILE),
               os.path.join(staged, CHECKPOINTS))
    for result in RESULT_FILES:
      _copy_file(os.path.join(root, RESULTS, name, result),
                 os.path.join(staged, RESULTS))
  except BaseException:
    shutil.rmtree(staged, ignore_errors=True)
    raise
  _publish(staged, target)
  return checkpoint


def restore(dest: str, root: str, name: str) -> str:
  """Puts `dest/name` back under `root`; returns what it did, in words."""
  carried = os.path.join(dest, name)
  if not os.path.isdir(carried):
    return f'{name}: nothing carried in {dest}'
  checkpoints = os.path.join(root, CHECKPOINTS, name)
  try:
    return (f'{name}: not restored, {checkpoints} already holds '
            f'{newest_checkpoint(checkpoints)}')
  except CarryError:
    pass  # No checkpoint there: restore.
  _check_not_running(checkpoints)
  checkpoint = newest_checkpoint(os.path.join(carried, CHECKPOINTS))
  for part in (CHECKPOINTS, RESULTS):
    target = os.path.join(root, part, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staged = target + '.tmp'
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(os.path.join(carried, part), staged)
    _publish(staged, target)
  return f'{name}: restored {checkpoint} from {carried}'


def main(argv: list[str]) -> int:
  if len(argv) != 5 or argv[1] not in ('save', 'restore'):
    print(f'error: {_USAGE}', file=sys.stderr)
    return _EXIT_FAILED
  try:
    if argv[1] == 'save':
      _, _, root, name, dest = argv
      print(f'{name}: saved {save(root, name, dest)} to '
            f'{os.path.join(dest, name)}')
    else:
      _, _, dest, root, name = argv
      print(restore(dest, root, name))
  except (CarryError, OSError) as e:
    print(f'error: {e}', file=sys.stderr)
    return _EXIT_FAILED
  return _EXIT_OK


if __name__ == '__main__':
  sys.exit(main(sys.argv))
