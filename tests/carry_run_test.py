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
"""scripts/carry_run.py: what it copies, where it refuses, its errors.

A real run carried to a new root and resumed there is tested with the other
resumes (tests/runner_test.py, `test_carried_run_resumes_elsewhere`).
"""

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPT = os.path.join(_REPO, 'scripts', 'carry_run.py')


def _carry(*args):
  return subprocess.run([sys.executable, _SCRIPT, *args],
                        capture_output=True, text=True, timeout=600)


def _write(path, text=''):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w') as f:
    f.write(text)


def _files(root):
  return sorted(os.path.relpath(os.path.join(d, f), root)
                for d, _, names in os.walk(root) for f in names)


class CarryRunTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir)
    self.root = os.path.join(self.dir, 'runs')
    self.dest = os.path.join(self.dir, 'carried')
    checkpoints = os.path.join(self.root, 'checkpoints', 'run')
    for version in (9, 10):
      _write(os.path.join(checkpoints, f'program_state_{version}', 'v'),
             str(version))
    # A save cut off (not finished) and the lock of the run.
    _write(os.path.join(checkpoints, 'program_state_11_temp123', 'v'))
    _write(os.path.join(checkpoints, '.run.lock'), '123')
    _write(os.path.join(checkpoints, 'experiment_fingerprint.json'), '{}')
    _write(os.path.join(self.root, 'results', 'run', 'metrics.csv'), 'r\n1\n')
    _write(os.path.join(self.root, 'results', 'run', 'hparams.json'), '{}')

  def test_save_copies_the_newest_finished_checkpoint_and_the_metrics(self):
    result = _carry('save', self.root, 'run', self.dest)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('saved program_state_10', result.stdout)
    self.assertEqual(_files(os.path.join(self.dest, 'run')), [
        'checkpoints/experiment_fingerprint.json',
        'checkpoints/program_state_10/v',
        'results/hparams.json',
        'results/metrics.csv'])
    # Saving again replaces the carried state, leaving nothing beside it.
    shutil.rmtree(os.path.join(self.root, 'checkpoints', 'run',
                               'program_state_10'))
    self.assertEqual(_carry('save', self.root, 'run', self.dest).returncode,
                     0)
    self.assertEqual(os.listdir(self.dest), ['run'])
    self.assertIn('checkpoints/program_state_9/v',
                  _files(os.path.join(self.dest, 'run')))

  def test_restore_fills_an_empty_root_and_leaves_a_newer_run_alone(self):
    _carry('save', self.root, 'run', self.dest)
    fresh = os.path.join(self.dir, 'fresh')
    result = _carry('restore', self.dest, fresh, 'run')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('restored program_state_10', result.stdout)
    self.assertEqual(_files(fresh), [
        'checkpoints/run/experiment_fingerprint.json',
        'checkpoints/run/program_state_10/v',
        'results/run/hparams.json',
        'results/run/metrics.csv'])
    again = _carry('restore', self.dest, fresh, 'run')
    self.assertEqual(again.returncode, 0, again.stderr)
    self.assertIn('not restored', again.stdout)
    nothing = _carry('restore', self.dest, fresh, 'other')
    self.assertEqual(nothing.returncode, 0, nothing.stderr)
    self.assertIn('nothing carried', nothing.stdout)

  def test_restore_refuses_a_root_that_a_running_process_holds(self):
    _carry('save', self.root, 'run', self.dest)
    started = os.path.join(self.dir, 'started', 'checkpoints', 'run')
    _write(os.path.join(started, '.run.lock'), str(os.getpid()))
    fd = os.open(os.path.join(started, '.run.lock'), os.O_RDONLY)
    self.addCleanup(os.close, fd)
    fcntl.flock(fd, fcntl.LOCK_EX)
    result = _carry('restore', self.dest,
                    os.path.join(self.dir, 'started'), 'run')
    self.assertEqual(result.returncode, 1)
    self.assertStartsWith(result.stderr.strip(),
                          f'error: a running process holds {started};')
    self.assertLen(result.stderr.strip().splitlines(), 1)
    # Unlocked (the run ended before its first checkpoint): restored.
    fcntl.flock(fd, fcntl.LOCK_UN)
    result = _carry('restore', self.dest,
                    os.path.join(self.dir, 'started'), 'run')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('restored program_state_10', result.stdout)

  def test_save_refuses_a_run_that_is_still_running(self):
    # It went on past the carried checkpoint, and rotated checkpoints away
    # under the copy.
    lock = os.path.join(self.root, 'checkpoints', 'run', '.run.lock')
    fd = os.open(lock, os.O_RDONLY)
    self.addCleanup(os.close, fd)
    fcntl.flock(fd, fcntl.LOCK_EX)
    result = _carry('save', self.root, 'run', self.dest)
    self.assertEqual(result.returncode, 1)
    self.assertStartsWith(result.stderr, 'error: a running process holds ')
    self.assertIn('stop it first', result.stderr)
    self.assertFalse(os.path.exists(self.dest))

  def test_bad_inputs_get_one_error_line(self):
    for args, message in (
        ((), 'usage: carry_run.py'),
        (('copy', self.root, 'run', self.dest), 'usage: carry_run.py'),
        (('save', self.root, 'missing', self.dest),
         'no finished checkpoint in'),
    ):
      result = _carry(*args)
      self.assertEqual(result.returncode, 1, args)
      self.assertLen(result.stderr.strip().splitlines(), 1, result.stderr)
      self.assertStartsWith(result.stderr, f'error: {message}')
    os.remove(os.path.join(self.root, 'results', 'run', 'metrics.csv'))
    result = _carry('save', self.root, 'run', self.dest)
    self.assertEqual(result.returncode, 1)
    self.assertIn('metrics.csv is missing', result.stderr)
    # A failed save leaves nothing behind.
    self.assertFalse(os.path.exists(self.dest) and os.listdir(self.dest))


if __name__ == '__main__':
  absltest.main()
