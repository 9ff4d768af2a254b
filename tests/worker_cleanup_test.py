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
"""scripts/with_worker_cleanup.sh ends the TFF workers its command left, only;
scripts/beside.py gives its command a session of its own.

A stand-in worker is a shell script whose path looks like TFF's local worker
(`.../tensorflow_federated/python/core/impl/executor_stacks/../../../../
data/worker_binary`): the wrapper must end the one its command orphaned, and
leave alone one that an experiment in another session (started with
`setsid`, as a background run or another terminal is) started meanwhile.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WRAPPER = os.path.join(_REPO, 'scripts', 'with_worker_cleanup.sh')
_BESIDE = os.path.join(_REPO, 'scripts', 'beside.py')


def _alive(pid: int) -> bool:
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().split(')')[-1].split()[0] != 'Z'
  except FileNotFoundError:
    return False


class WorkerCleanupTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
    stacks = os.path.join(self.dir, 'tensorflow_federated', 'python', 'core',
                          'impl', 'executor_stacks')
    os.makedirs(stacks)
    os.makedirs(os.path.join(self.dir, 'tensorflow_federated', 'data'))
    real = os.path.join(self.dir, 'tensorflow_federated', 'data',
                        'worker_binary')
    with open(real, 'w') as f:
      f.write('#!/bin/bash\nsleep 30\n')
    os.chmod(real, 0o755)
    # The path TFF's local runtime starts it by.
    self.worker = os.path.join(stacks, '..', '..', '..', '..', 'data',
                               'worker_binary')

  def _pid_file(self, name):
    return os.path.join(self.dir, name)

  def _read_pid(self, path):
    for _ in range(100):
      if os.path.exists(path) and open(path).read().strip():
        return int(open(path).read())
      time.sleep(0.05)
    self.fail(f'no pid in {path}')

  def test_ends_its_commands_orphan_and_spares_another_sessions(self):
    other_pid_file = self._pid_file('other')
    mine_pid_file = self._pid_file('mine')
    # The other session's worker starts while the wrapper runs.
    command = (
        f'setsid bash -c \'"{self.worker}" & echo $! > {other_pid_file}\' '
        '< /dev/null > /dev/null 2>&1; '
        f'"{self.worker}" < /dev/null > /dev/null 2>&1 & '
        f'echo $! > {mine_pid_file}; sleep 0.5')
    with open(os.path.join(self.dir, 'stderr'), 'w+') as err:
      # In a session of its own, as `make` runs it: the wrapper counts the
      # workers of its session, and pytest-xdist's workers share one
      # session, where other tests start TFF workers meanwhile (the wrapper
      # would count them as its command's, and end them).
      run = subprocess.run(['bash', _WRAPPER, 'bash', '-c', command],
                           stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=err,
                           timeout=600, check=False, start_new_session=True)
      err.seek(0)
      stderr = err.read()
    mine = self._read_pid(mine_pid_file)
    other = self._read_pid(other_pid_file)
    self.addCleanup(lambda: _alive(other) and os.kill(other, 9))
    self.addCleanup(lambda: _alive(mine) and os.kill(mine, 9))
    self.assertEqual(run.returncode, 0, stderr)
    self.assertIn(f'ending TFF workers left by this run: {mine}', stderr)
    for _ in range(100):
      if not _alive(mine):
        break
      time.sleep(0.05)
    self.assertFalse(_alive(mine))
    self.assertTrue(_alive(other))

  def test_passes_the_commands_exit_status(self):
    run = subprocess.run(['bash', _WRAPPER, 'bash', '-c', 'exit 7'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, timeout=600, check=False,
                         start_new_session=True)
    self.assertEqual(run.returncode, 7)


# What a command started by scripts/beside.py finds: its session, nice,
# SIGINT's action.
_PROBE = """
import os, signal
print(os.getsid(0) == os.getpid(), os.nice(0),
      signal.getsignal(signal.SIGINT) != signal.SIG_IGN)
"""


class BesideTest(absltest.TestCase):
  """scripts/beside.py, which .ci/run starts the side checks with."""

  def test_own_session_lowest_priority_and_sigint_restored(self):
    # Started as `&` starts a job from a script: SIGINT ignored, in the
    # caller's session.
    run = subprocess.run(
        ['python3', _BESIDE, 'python3', '-c', _PROBE],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    self.assertEqual(run.returncode, 0, run.stderr)
    self.assertEqual(run.stdout.split(), ['True', '19', 'True'])

  def test_passes_the_commands_exit_status(self):
    run = subprocess.run(['python3', _BESIDE, 'bash', '-c', 'exit 7'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, timeout=600, check=False)
    self.assertEqual(run.returncode, 7)


if __name__ == '__main__':
  absltest.main()
