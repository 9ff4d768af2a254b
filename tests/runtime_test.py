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
"""A script that calls `tff_mixed.register_worker_cleanup()` leaves no TFF
worker behind at exit, nor when it is killed.

Without the cleanup, TFF's orphaned worker keeps the script's stdout open and
`subprocess.run(..., capture_output=True)` below would wait for it until the
timeout.
"""

import os
import select
import signal
import subprocess
import sys
import textwrap
import time

from absl.testing import absltest

from tests import temp_dirs
from tff_mixed import runtime

# Every script starts here: one computation, so TFF starts its worker.
_PROLOGUE = textwrap.dedent("""
    import gc
    import os
    import time
    import numpy as np
    import tensorflow_federated as tff
    import tff_mixed
    from tff_mixed import runtime
    tff_mixed.register_worker_cleanup()

    @tff.tensorflow.computation
    def one():
      return np.int32(1)

    assert one() == 1
""")

_SCRIPT = _PROLOGUE + textwrap.dedent("""
    print('WORKERS', *runtime.own_worker_pids(), flush=True)
""")


# Runs one computation (TFF starts its worker), reports the worker, waits.
_KILLED_SCRIPT = _PROLOGUE + textwrap.dedent("""
    print('WORKERS', *runtime.own_worker_pids(), flush=True)
    time.sleep(600)
""")


# Started as a shell's `cmd &` starts it, with SIGINT and SIGQUIT ignored:
# reports its TFF worker's ignored signals, then replaces the execution
# context, whose old worker TFF stops with SIGINT and waits for.
_BACKGROUND_SCRIPT = _PROLOGUE + textwrap.dedent("""
    for pid in runtime.own_worker_pids():
      with open(f'/proc/{pid}/status') as f:
        ignored = [l.split()[1] for l in f if l.startswith('SigIgn:')][0]
      print('WORKER', pid, ignored, flush=True)
    tff.backends.native.set_sync_local_cpp_execution_context()
    gc.collect()
    assert one() == 1
    print('DONE', flush=True)
""")


# Notes every fork whose child runs Python code (a `preexec_fn` makes
# `subprocess` fork and run the interpreter's fork hooks in the child), then
# starts TFF's worker and two more (`start_local_workers`).
_FORK_SCRIPT = textwrap.dedent("""
    import os, sys
    os.register_at_fork(
        after_in_child=lambda: open(sys.argv[1], 'a').write('forked\\n'))
""") + _PROLOGUE + textwrap.dedent("""
    from tff_mixed import worker_processes
    worker_processes.stop_workers(worker_processes.start_local_workers(2))
    print('WORKERS', *runtime.own_worker_pids(), flush=True)
""")


# TFF's worker dies before it listens (here: SIGABRT at once, as a child
# forked from a threaded process can die before its exec).
_DEAD_WORKER_SCRIPT = textwrap.dedent("""
    import numpy as np
    import tensorflow_federated as tff
    import tff_mixed
    from tff_mixed import runtime
    tff_mixed.register_worker_cleanup()
    runtime.worker_command = lambda args, die_with_parent=True: [
        '/bin/sh', '-c', 'kill -ABRT $$']

    @tff.tensorflow.computation
    def one():
      return np.int32(1)

    try:
      one()
    except RuntimeError as e:
      print('RAISED', e, flush=True)
""")


def _ignore_sigint_and_sigquit() -> None:
  """What a non-interactive shell does to a command it starts with `&`."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  signal.signal(signal.SIGQUIT, signal.SIG_IGN)


def _kill_if_worker(pid: int) -> None:
  """SIGKILLs `pid` if it is still a live TFF worker (not a reused PID)."""
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      is_worker = b'worker_binary' in f.read()
    if is_worker and runtime.process_alive(pid):
      os.kill(pid, signal.SIGKILL)
  except OSError:
    pass


_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_script(test: absltest.TestCase, script: str, *args: str,
                hung: str = 'the script hung',
                preexec_fn=None) -> subprocess.CompletedProcess:
  """Runs `script` in a new interpreter that imports this repository; fails
  `test` with `hung` (and the script's output) after 120 s, or if it fails."""
  try:
    result = subprocess.run(
        [sys.executable, '-c', script, *args], capture_output=True,
        text=True, timeout=600, env=dict(os.environ, PYTHONPATH=_REPO_ROOT),
        preexec_fn=preexec_fn, check=False)
  except subprocess.TimeoutExpired as e:
    test.fail(f'{hung}; its output: {e.stdout!r}')
  test.assertEqual(result.returncode, 0, result.stderr[-2000:])
  return result


class WorkerCleanupTest(absltest.TestCase):

  def test_script_exits_without_leaving_a_worker(self):
    result = _run_script(self, _SCRIPT)
    # TFF's own late shutdown of the worker is disarmed, so it no longer
    # prints an 'Exception ignored ... ServiceManager.__del__' traceback.
    self.assertNotIn('Traceback', result.stderr)
    line = [l for l in result.stdout.splitlines() if l.startswith('WORKERS')]
    pids = [int(p) for p in line[0].split()[1:]]
    # The script did start a worker, and it is gone now.
    self.assertNotEmpty(pids)
    for pid in pids:
      self.assertFalse(runtime.process_alive(pid), f'worker {pid} outlived its script')

  def test_worker_dies_when_its_python_process_is_killed(self):
    # A SIGKILL skips every exit hook: only the kernel can end the worker.
    script = subprocess.Popen(
        [sys.executable, '-c', _KILLED_SCRIPT], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, PYTHONPATH=_REPO_ROOT))
    self.addCleanup(script.stdout.close)
    self.addCleanup(script.wait)
    self.addCleanup(script.kill)
    ready, _, _ = select.select([script.stdout], [], [], 240)
    self.assertNotEmpty(ready, 'the script reported no worker in 240 s')
    line = script.stdout.readline().split()
    self.assertEqual(line[:1], ['WORKERS'], 'the script failed')
    pids = [int(p) for p in line[1:]]
    self.assertNotEmpty(pids)
    for pid in pids:
      self.addCleanup(_kill_if_worker, pid)  # If the test fails.
    os.kill(script.pid, signal.SIGKILL)  # The Python process alone.
    script.wait()
    deadline = time.monotonic() + 10
    while (any(runtime.process_alive(p) for p in pids)
           and time.monotonic() < deadline):
      time.sleep(0.1)
    self.assertEqual([p for p in pids if runtime.process_alive(p)], [],
                     'TFF workers outlived their killed Python process')

  def test_run_started_in_the_background_stops_its_worker(self):
    # `cmd &` in a script starts cmd with SIGINT ignored, which the worker
    # inherited: TFF's SIGINT then never stopped it and the run hung.
    result = _run_script(
        self, _BACKGROUND_SCRIPT, preexec_fn=_ignore_sigint_and_sigquit,
        hung='a run started with SIGINT ignored hung when TFF stopped its '
        'worker')
    workers = [l.split() for l in result.stdout.splitlines()
               if l.startswith('WORKER')]
    self.assertNotEmpty(workers)
    for _, pid, ignored in workers:
      mask = int(ignored, 16)
      self.assertFalse(mask & (1 << (signal.SIGINT - 1)),
                       f'worker {pid} ignores SIGINT')
      self.assertFalse(mask & (1 << (signal.SIGQUIT - 1)),
                       f'worker {pid} ignores SIGQUIT')
    self.assertIn('DONE', result.stdout)

  def test_workers_start_with_no_python_between_fork_and_exec(self):
    # A `preexec_fn` runs Python in a child forked from a process with TFF's
    # and gRPC's threads; a suite run lost such a child to SIGABRT.
    marker = os.path.join(temp_dirs.temp_dir(self), 'forks')
    result = _run_script(self, _FORK_SCRIPT, marker)
    self.assertIn('WORKERS', result.stdout)
    self.assertFalse(os.path.exists(marker),
                     'a worker start ran Python in a forked child')

  def test_worker_dead_before_it_answers_raises_instead_of_hanging(self):
    result = _run_script(
        self, _DEAD_WORKER_SCRIPT,
        hung='TFF waited forever for a worker that had died')
    self.assertRegex(result.stdout,
                     r"RAISED TFF's worker_binary \(pid \d+\) killed by "
                     r'signal 6 before it answered')

  def test_own_worker_pids_ignores_other_processes(self):
    sleeper = subprocess.Popen(['sleep', '30'])
    self.addCleanup(sleeper.kill)
    self.assertNotIn(sleeper.pid, runtime.own_worker_pids())


if __name__ == '__main__':
  absltest.main()
