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
"""A run stops when it is told to, and when its disk is full, losing nothing.

Each case stops a run of the digits trainer (`train_main` as a user runs it,
or `train_lib.train` through the library) and checks what it left: one line
saying where it got to, the shell's exit status, checkpoints and metrics
that agree, nothing half-written; then that the same command resumes it to
the numbers of a run never stopped. Runs that must be signalled or starved
of disk for real run in processes of their own
(`tests/preloaded_python.py`), their output in files.
"""

import csv
import errno
import os
import re
import signal
import subprocess
import time
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import tensorflow as tf
import tensorflow_federated as tff

from experiments.label_imbalance import train_lib
from tests import binary_runs
from tests import preloaded_python
from tests import temp_dirs
import tff_mixed
from tff_mixed.training import checkpoints as checkpoints_lib
from tff_mixed.training import runner as runner_lib

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRAIN = 'experiments.label_imbalance.train_main'
_TINY = dict(clients_per_round=3, client_steps=2, num_clients=6,
             rounds_per_evaluation=2)
_TINY_FLAGS = ('--clients_per_round=3', '--client_steps=2', '--num_clients=6',
               '--rounds_per_evaluation=2', '--scenario=two_way_gt',
               '--experiment_name=run')
# Long enough never to end by itself within a test.
_ENDLESS = '--total_rounds=100000'
# A wait that would otherwise never end fails after this; far longer than
# any run here takes on a loaded machine.
_WAIT_S = 300

# train_main as a user types it, in a process of its own. argv[1] '1' starts
# it as a script's background job does: in a session (and process group) of
# its own, with SIGINT ignored, which Python then leaves ignored.
_BINARY = """
import os, signal, sys
if sys.argv[1] == '1':
  os.setsid()
  signal.signal(signal.SIGINT, signal.SIG_IGN)
from experiments import tf_log_level
from experiments.common import cli
from experiments.label_imbalance import train_main
sys.argv = ['train_main'] + sys.argv[2:]
cli.run(train_main.main)
"""

# train_main whose round-2 checkpoint is written with SIGINT arriving just
# before (argv[1] 'before': the write is under way when it is acted on) or
# just after it (argv[1] 'after': saved, not yet counted).
_SIGNAL_IN_SAVE = """
import os, signal, sys
from experiments import tf_log_level
from experiments.common import cli
from experiments.label_imbalance import train_main
from tff_mixed.training import checkpoints

when = sys.argv[1]
save = checkpoints.Checkpointer.save
sent = []

def save_with_signal(self, state, round_num):
  signal_now = round_num == 2 and not sent
  if signal_now:
    sent.append(round_num)
  if signal_now and when == 'before':
    os.kill(os.getpid(), signal.SIGINT)
  save(self, state, round_num)
  if signal_now and when == 'after':
    os.kill(os.getpid(), signal.SIGINT)

checkpoints.Checkpointer.save = save_with_signal
sys.argv = ['train_main'] + sys.argv[2:]
cli.run(train_main.main)
"""

_STOPPED_LINE = re.compile(r'(interrupted|stopped by SIGTERM) after round '
                           r'(\d+) of run; run the same command to resume')


def _rows(root):
  path = os.path.join(root, 'results', 'run', 'metrics.csv')
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return list(csv.DictReader(f))


def _saved(root):
  """The checkpoint directory's entries of saves, finished or not."""
  directory = os.path.join(root, 'checkpoints', 'run')
  return sorted(n for n in os.listdir(directory)
                if n.startswith('program_state_'))


def _wait_for_rows(test, run, root, count):
  """Waits until `run` has written `count` rounds' metrics."""
  deadline = time.monotonic() + _WAIT_S
  while len(_rows(root)) < count:
    test.assertIsNone(run.poll(), 'the run ended before its rounds')
    test.assertLess(time.monotonic(), deadline, f'no {count} rounds')
    time.sleep(0.1)


def _wait(test, run, log_path):
  """The exit status of `run`, which must end (it is killed otherwise)."""
  try:
    return run.wait(_WAIT_S)
  except subprocess.TimeoutExpired:
    run.kill()
    run.wait(60)
    with open(log_path) as f:
      test.fail(f'the run did not stop: {f.read()[-2000:]}')


def _uninterrupted_rows(test, rounds):
  """The metrics rows of `rounds` rounds of the run, never stopped."""
  root = temp_dirs.temp_dir(test)
  train_lib.train(scenario='two_way_gt', root_output_dir=root,
                  experiment_name='run', total_rounds=rounds,
                  progress=False, **_TINY)
  return _rows(root)


def _resume(test, root, rounds):
  """Runs the stopped run's command again, to `rounds`; returns its
  stderr."""
  log_path = os.path.join(temp_dirs.temp_dir(test), 'resumed.log')
  status = preloaded_python.shared().run(
      _TRAIN, [*_TINY_FLAGS, f'--root_output_dir={root}',
               f'--total_rounds={rounds}'],
      cwd=_REPO, stderr_path=log_path, timeout=_WAIT_S)
  with open(log_path) as f:
    stderr = f.read()
  test.assertEqual(status, 0, stderr[-3000:])
  return stderr


@binary_runs.runs_binaries
class StopSignalsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # A script's `setsid cmd &` job, stopped by SIGINT to its process
      # group (as Ctrl-C at a terminal signals the foreground group). It
      # used to run on: Python ignored SIGINT, the TFF worker died of it
      # and TFF silently started another.
      ('sigint_to_a_background_job', signal.SIGINT, True, 130,
       'interrupted'),
      # SIGTERM used to kill the run without a word.
      ('sigterm', signal.SIGTERM, False, 143, 'stopped by SIGTERM'),
  )
  def test_signal_stops_the_run_and_the_same_command_resumes(
      self, signum, background, status, how):
    root = temp_dirs.temp_dir(self)
    log_path = os.path.join(root, 'stopped.log')
    run = preloaded_python.shared().start(
        None, ['1' if background else '0', *_TINY_FLAGS, _ENDLESS,
               f'--root_output_dir={root}'],
        cwd=_REPO, stderr_path=log_path, code=_BINARY)
    self.addCleanup(run.wait)
    self.addCleanup(run.kill)
    _wait_for_rows(self, run, root, 2)
    if background:
      os.killpg(run.pid, signum)  # Its own group: the test is not in it.
    else:
      os.kill(run.pid, signum)
    returncode = _wait(self, run, log_path)
    with open(log_path) as f:
      stderr = f.read()
    self.assertNotIn('Traceback', stderr, stderr[-3000:])
    self.assertEqual(returncode, status, stderr[-3000:])
    last = stderr.splitlines()[-1]
    stopped = _STOPPED_LINE.fullmatch(last)
    self.assertIsNotNone(stopped, stderr[-3000:])
    self.assertEqual(stopped.group(1), how)
    last_round = int(stopped.group(2))
    # Its metrics and checkpoints agree on where it got to.
    self.assertEqual([r['round_num'] for r in _rows(root)],
                     [str(r) for r in range(1, last_round + 1)])
    self.assertIn(f'program_state_{last_round}', _saved(root))
    self.assertFalse([n for n in _saved(root) if '_temp' in n])
    stderr = _resume(self, root, last_round + 1)
    self.assertIn(f'resuming after round {last_round}', stderr)
    self.assertEqual(_rows(root), _uninterrupted_rows(self, last_round + 1))

  @parameterized.parameters('before', 'after')
  def test_a_signal_during_a_checkpoint_waits_for_it(self, when):
    # It used to cut the save off: 'could not save round 2 on Ctrl-C: File
    # already exists', 'interrupted after round 1' with round 2 saved, or
    # a program_state_2_temp* left behind.
    root = temp_dirs.temp_dir(self)
    log_path = os.path.join(root, 'stopped.log')
    returncode = preloaded_python.shared().start(
        None, [when, *_TINY_FLAGS, '--total_rounds=4',
               f'--root_output_dir={root}'],
        cwd=_REPO, stderr_path=log_path, code=_SIGNAL_IN_SAVE).wait(_WAIT_S)
    with open(log_path) as f:
      stderr = f.read()
    self.assertNotIn('Traceback', stderr, stderr[-3000:])
    self.assertNotIn('could not save', stderr)
    self.assertEqual(returncode, 130, stderr[-3000:])
    self.assertEqual(
        stderr.splitlines()[-1],
        'interrupted after round 2 of run; run the same command to resume')
    self.assertEqual(_saved(root), ['program_state_1', 'program_state_2'])
    self.assertEqual([r['round_num'] for r in _rows(root)], ['1', '2'])
    _resume(self, root, 4)
    self.assertEqual(_rows(root), _uninterrupted_rows(self, 4))


def _fill(directory):
  """Writes a file into `directory` until its file system is full."""
  path = os.path.join(directory, 'filler')
  chunk = b'\0' * (1 << 16)
  with open(path, 'wb', buffering=0) as f:
    try:
      while True:
        f.write(chunk)
    except OSError as e:
      if e.errno != errno.ENOSPC:
        raise
  # Whatever is left is less than a chunk: fill it byte by byte.
  with open(path, 'ab', buffering=0) as f:
    try:
      while True:
        f.write(b'\0')
    except OSError as e:
      if e.errno != errno.ENOSPC:
        raise
  return path


def _mount_tmpfs(test, size):
  """A fresh tmpfs of `size` (e.g. '64m'), unmounted at the test's end;
  skips the test where this process may not mount one."""
  if not hasattr(os, 'geteuid') or os.geteuid() != 0:
    test.skipTest('mounting a tmpfs needs root')
  path = temp_dirs.temp_dir(test)
  mounted = subprocess.run(
      ['mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs', path],
      capture_output=True, text=True, check=False)
  if mounted.returncode:
    test.skipTest(f'cannot mount a tmpfs here: {mounted.stderr.strip()}')
  # Lazily: a worker of a failed run may still hold a file there.
  test.addCleanup(subprocess.run, ['umount', '-l', path], check=False)
  return path


class DiskFullTest(absltest.TestCase):

  @binary_runs.runs_binaries
  def test_a_full_disk_mid_run_gives_one_line_and_the_run_resumes(self):
    # It used to end in a 58-line traceback (ResourceExhaustedError).
    disk = _mount_tmpfs(self, '64m')
    root = os.path.join(disk, 'out')
    log_path = os.path.join(temp_dirs.temp_dir(self), 'full.log')
    run = preloaded_python.shared().start(
        None, ['0', *_TINY_FLAGS, _ENDLESS, f'--root_output_dir={root}'],
        cwd=_REPO, stderr_path=log_path, code=_BINARY)
    self.addCleanup(run.wait)
    self.addCleanup(run.kill)
    _wait_for_rows(self, run, root, 2)
    run.send_signal(signal.SIGSTOP)  # Still while the disk fills.
    filler = _fill(disk)
    run.send_signal(signal.SIGCONT)
    returncode = _wait(self, run, log_path)
    with open(log_path) as f:
      stderr = f.read()
    self.assertNotIn('Traceback', stderr, stderr[-3000:])
    self.assertEqual(returncode, 1, stderr[-3000:])
    lines = stderr.splitlines()
    self.assertLen([l for l in lines if l.startswith('error:')], 1, stderr)
    self.assertStartsWith(lines[-1], 'error: No space left on device')
    self.assertIn('run the same command to resume', lines[-1])
    self.assertFalse([n for n in _saved(root) if '_temp' in n])
    os.remove(filler)
    last_saved = max(int(n.rsplit('_', 1)[1]) for n in _saved(root))
    _resume(self, root, last_saved + 1)
    self.assertEqual(_rows(root), _uninterrupted_rows(self, last_saved + 1))

  def test_a_save_on_a_full_disk_keeps_the_checkpoints_before_it(self):
    # Through the library, where no tmpfs can be mounted: TFF's save of
    # round 2 fails as TensorFlow's file system fails on a full disk, after
    # writing part of its temporary directory.
    root = temp_dirs.temp_dir(self)
    checkpoint_dir = os.path.join(root, 'checkpoints', 'run')
    real_save = tff.program.FileProgramStateManager.save

    async def save(manager, program_state, version):
      if version != 2:
        return await real_save(manager, program_state, version)
      os.makedirs(os.path.join(checkpoint_dir,
                               'program_state_2_temp123', 'variables'))
      raise tf.errors.ResourceExhaustedError(
          None, None, f'{checkpoint_dir}/program_state_2_temp123/variables/'
          'variables.data-00000-of-00001.tempstate1; No space left on device')

    with mock.patch.object(tff.program.FileProgramStateManager, 'save',
                           save):
      with self.assertRaises(OSError) as raised:
        train_lib.train(scenario='two_way_gt', root_output_dir=root,
                        experiment_name='run', total_rounds=4,
                        progress=False, **_TINY)
    self.assertIsInstance(raised.exception, checkpoints_lib.DiskFullError)
    self.assertEqual(raised.exception.errno, errno.ENOSPC)
    self.assertIn('round 2 of run', str(raised.exception))
    self.assertIn('checkpoints up to round 1 are intact', str(raised.exception))
    self.assertEqual(_saved(root), ['program_state_1'])
    resumed = train_lib.train(scenario='two_way_gt', root_output_dir=root,
                              experiment_name='run', total_rounds=4,
                              progress=False, **_TINY)
    self.assertEqual(resumed.resumed_from, 1)
    self.assertEqual(_rows(root), _uninterrupted_rows(self, 4))


class ResumeChecksTest(absltest.TestCase):

  def train(self, root, rounds):
    return train_lib.train(scenario='two_way_gt', root_output_dir=root,
                           experiment_name='run', total_rounds=rounds,
                           progress=False, **_TINY)

  def test_checkpoints_without_their_metrics_are_not_resumed(self):
    # The run used to go on from round 3 with one row: the history of the
    # rounds its model had trained was lost without a word.
    root = temp_dirs.temp_dir(self)
    result = self.train(root, 2)
    os.remove(result.metrics_path)
    with self.assertRaisesRegex(
        ValueError, r'metrics\.csv is missing, although the checkpoints in '
        r'.* reach round 2'):
      self.train(root, 3)
    self.assertEqual(_saved(root), ['program_state_1', 'program_state_2'])
    with open(result.metrics_path, 'w') as f:  # Rows of round 1 only.
      f.write('round_num,train/x\n1,0.5\n')
    with self.assertRaisesRegex(ValueError, r'has no row for round 2'):
      self.train(root, 3)

  def test_a_last_row_cut_off_mid_write_is_trained_again(self):
    # A kill or a full disk in the middle of appending round 3's row.
    root = temp_dirs.temp_dir(self)
    result = self.train(root, 2)
    with open(result.metrics_path, 'a') as f:
      f.write('3,0.41')
    with mock.patch.object(runner_lib.logging, 'warning',
                           wraps=runner_lib.logging.warning) as warning:
      self.train(root, 3)
    warnings = [call.args[0] % call.args[1:] for call in warning.call_args_list]
    self.assertTrue(any('cut off' in w for w in warnings), warnings)
    self.assertEqual(_rows(root), _uninterrupted_rows(self, 3))

  def test_a_damaged_fingerprint_is_named(self):
    root = temp_dirs.temp_dir(self)
    directory = os.path.join(root, 'checkpoints', 'run')
    os.makedirs(directory)
    path = os.path.join(directory, checkpoints_lib.FINGERPRINT_FILE)
    for damaged in ('', '{"a": ', '[1, 2]', b'\xff\xfe'):
      with self.subTest(damaged=damaged):
        with open(path, 'wb') as f:
          f.write(damaged if isinstance(damaged, bytes) else damaged.encode())
        with self.assertRaisesRegex(tff_mixed.CheckpointMismatchError,
                                    f'{re.escape(path)} is damaged'):
          runner_lib.prepare_run(root, 'run', {'a': 1})

  def test_experiment_name_must_name_one_directory(self):
    root = temp_dirs.temp_dir(self)
    for name in ('', '.', '..', 'a/b', '../x', 'a\0b', None):
      with self.subTest(name=name):
        with self.assertRaisesRegex(ValueError, '`experiment_name`'):
          runner_lib.prepare_run(root, name, {})
    self.assertEqual(os.listdir(root), [])


if __name__ == '__main__':
  absltest.main()
