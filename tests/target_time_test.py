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
"""benchmarks/target_time.py: a make target timed whole into BENCHMARKS.md.

The binary runs as a user runs it, with a stand-in for make (a script that
sleeps, writes its arguments and exits with a chosen status), so a run takes
a second: the recorded seconds cover the stand-in's sleep, a second target
keeps the first one's row, and a failing target writes no record. A target
timed in parts: a run stopped by Ctrl-C (or failing) keeps its seconds, and
the run that finishes the target records the sum.
"""

import json
import os
import signal
import stat
import time

from absl.testing import absltest

from tests import binary_runs
from tests import preloaded_python
from tests import temp_dirs

_STAND_IN = """#!/bin/sh
# make's stand-in: its arguments to a file, a pause, then status $STATUS.
echo "$@" >> "{calls}"
sleep 1
exit {status}
"""

# make's stand-in for a target timed in parts: its first call runs until
# Ctrl-C reaches it (then exits as make does), later ones as _STAND_IN's.
_INTERRUPTIBLE = """#!/bin/sh
trap 'kill $!; exit 130' INT
echo "$@" >> "{calls}"
if [ "$(wc -l < "{calls}")" = 1 ]; then sleep 60 & wait; exit 3; fi
sleep 1
exit 0
"""
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@binary_runs.runs_binaries
class TargetTimeTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = temp_dirs.temp_dir(self)
    self.calls = os.path.join(self.dir, 'calls.txt')
    self.records = os.path.join(self.dir, 'times.json')
    self.markdown = os.path.join(self.dir, 'BENCHMARKS.md')

  def _stand_in(self, status, script=_STAND_IN):
    path = os.path.join(self.dir, f'make{status}')
    with open(path, 'w') as f:
      f.write(script.format(calls=self.calls, status=status))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path

  def _args(self, target, make, *args):
    return (f'--timed_target={target}', f'--make={make}',
            f'--records={self.records}', f'--output_markdown={self.markdown}',
            f'--log={os.path.join(self.dir, target + ".log")}', *args)

  def _run(self, target, status=0, *args):
    return preloaded_python.run_module(
        'benchmarks.target_time',
        *self._args(target, self._stand_in(status), *args), timeout=600)

  def _segments(self, target='results-celeba'):
    with open(os.path.join(self.dir, f'{target}.segments.json')) as f:
      return json.load(f)

  def test_times_targets_and_keeps_earlier_rows(self):
    first = self._run('results-celeba', 0, '--make_args=CELEBA_SEEDS=0')
    self.assertEqual(first.returncode, 0, first.stderr[-2000:])
    second = self._run('results-movielens')
    self.assertEqual(second.returncode, 0, second.stderr[-2000:])
    with open(self.calls) as f:
      self.assertEqual(f.read().splitlines(),
                       ['results-celeba CELEBA_SEEDS=0', 'results-movielens'])
    with open(self.records) as f:
      records = json.load(f)
    self.assertCountEqual(records, ['results-celeba', 'results-movielens'])
    celeba = records['results-celeba']
    self.assertTrue(celeba['command'].endswith(
        'make0 results-celeba CELEBA_SEEDS=0'), celeba['command'])
    # The stand-in's one-second sleep, and not much more.
    self.assertBetween(celeba['seconds'], 1.0, 30.0)
    self.assertRegex(celeba['finished'], r'^\d{4}-\d\d-\d\d \d\d:\d\d UTC$')
    self.assertIn('cores', celeba['machine'])
    with open(self.markdown) as f:
      text = f.read()
    self.assertIn('<!-- BEGIN target_times -->', text)
    rows = [line for line in text.splitlines() if line.startswith('| `')]
    self.assertLen(rows, 2)  # Both targets, by name.
    self.assertIn('results-celeba CELEBA_SEEDS=0`', rows[0])
    self.assertIn(f'| {celeba["seconds"]:,.0f} |', rows[0])
    self.assertIn('results-movielens`', rows[1])

  def test_ctrl_c_keeps_the_part_and_the_same_command_adds_it(self):
    make = self._stand_in('i', _INTERRUPTIBLE)
    stderr_path = os.path.join(self.dir, 'stderr.txt')
    # Ctrl-C to our pid alone (not a terminal's to the whole group): it must
    # reach make through target_time, which then waits for make to end.
    run = preloaded_python.shared().start(
        'benchmarks.target_time', self._args('results-celeba', make),
        cwd=_REPO, stderr_path=stderr_path)
    deadline = time.monotonic() + 60
    while not os.path.exists(self.calls) and time.monotonic() < deadline:
      time.sleep(0.1)
    time.sleep(0.5)  # A part worth counting.
    run.send_signal(signal.SIGINT)
    self.assertEqual(run.wait(600), 130)
    with open(stderr_path) as f:
      stderr = f.read()
    self.assertNotIn('Traceback', stderr)
    self.assertRegex(
        stderr.strip().splitlines()[-1],
        r'^\S*makei results-celeba was interrupted after \d+ s; its output '
        r'is in .*results-celeba\.log; 1 unfinished run\(s\), \d+ s in all, '
        r'kept in .*results-celeba\.segments\.json: the same command goes '
        r'on and adds them$')
    self.assertFalse(os.path.exists(self.records))  # No record yet.
    kept = self._segments()
    self.assertTrue(kept['command'].endswith('makei results-celeba'))
    (part,) = kept['segments']
    self.assertEqual((part['status'], part['interrupted']), (130, True))
    self.assertBetween(part['seconds'], 0.5, 30.0)

    finished = preloaded_python.run_module(
        'benchmarks.target_time', *self._args('results-celeba', make),
        timeout=600)
    self.assertEqual(finished.returncode, 0, finished.stderr[-2000:])
    with open(self.records) as f:
      celeba = json.load(f)['results-celeba']
    self.assertEqual(celeba['parts'], 2)
    # Both parts: the interrupted one's seconds, then the stand-in's sleep.
    self.assertBetween(celeba['seconds'], part['seconds'] + 1.0,
                       part['seconds'] + 30.0)
    self.assertFalse(os.path.exists(
        os.path.join(self.dir, 'results-celeba.segments.json')))
    with open(self.markdown) as f:
      (row,) = [r for r in f.read().splitlines() if r.startswith('| `')]
    self.assertIn(f'| {celeba["seconds"]:,.0f} | 2 |', row)

  def test_parts_of_another_command_are_refused_unless_fresh(self):
    self.assertEqual(self._run('results-celeba', 2).returncode, 1)
    self.assertLen(self._segments()['segments'], 1)
    other = self._run('results-celeba', 0)  # Another make: make0, not make2.
    self.assertEqual(other.returncode, 1)
    self.assertRegex(other.stderr.strip().splitlines()[-1],
                     r'^error: .*results-celeba\.segments\.json keeps the '
                     r'time of unfinished runs of another command .*pass '
                     r'--fresh to drop it$')
    self.assertFalse(os.path.exists(self.records))
    fresh = self._run('results-celeba', 0, '--fresh')
    self.assertEqual(fresh.returncode, 0, fresh.stderr[-2000:])
    with open(self.records) as f:
      celeba = json.load(f)['results-celeba']
    self.assertEqual(celeba['parts'], 1)  # The failed part was dropped.
    self.assertBetween(celeba['seconds'], 1.0, 30.0)

  def test_failing_target_writes_no_record_and_keeps_its_part(self):
    self.assertEqual(self._run('results-celeba').returncode, 0)
    with open(self.records) as f:
      before = f.read()
    with open(self.markdown) as f:
      markdown_before = f.read()
    failed = self._run('results-celeba', 2)
    self.assertEqual(failed.returncode, 1)
    self.assertRegex(failed.stderr.strip().splitlines()[-1],
                     r'^error: .*make2 results-celeba exited with status 2 '
                     r'after \d+ s; its output is in .*results-celeba\.log; '
                     r'1 unfinished run\(s\)')
    self.assertNotIn('Traceback', failed.stderr)
    # Its seconds are kept for the run of the same command that finishes.
    (part,) = self._segments()['segments']
    self.assertEqual((part['status'], part['interrupted']), (2, False))
    with open(self.records) as f:
      self.assertEqual(f.read(), before)
    with open(self.markdown) as f:
      self.assertEqual(f.read(), markdown_before)

  def test_bad_inputs_are_refused_before_running(self):
    for args, message in (
        (['--timed_target='], '--timed_target must name a make target'),
        (['--timed_target=CELEBA_SEEDS=0'],
         '--timed_target must name a make target'),
    ):
      with self.subTest(args[0]):
        completed = preloaded_python.run_module(
            'benchmarks.target_time', *args, f'--make={self._stand_in(0)}',
            f'--records={self.records}', timeout=600)
        self.assertEqual(completed.returncode, 1)
        self.assertIn(message, completed.stderr)
    with open(self.records, 'w') as f:
      f.write('[1, 2]')
    bad_records = self._run('results-celeba')
    self.assertEqual(bad_records.returncode, 1)
    self.assertIn('is not a file of target times', bad_records.stderr)
    self.assertFalse(os.path.exists(self.calls))  # make never ran.


if __name__ == '__main__':
  absltest.main()
