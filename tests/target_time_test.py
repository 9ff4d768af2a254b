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
keeps the first one's row, and a failing target writes nothing.
"""

import json
import os
import stat

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


@binary_runs.runs_binaries
class TargetTimeTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = temp_dirs.temp_dir(self)
    self.calls = os.path.join(self.dir, 'calls.txt')
    self.records = os.path.join(self.dir, 'times.json')
    self.markdown = os.path.join(self.dir, 'BENCHMARKS.md')

  def _stand_in(self, status):
    path = os.path.join(self.dir, f'make{status}')
    with open(path, 'w') as f:
      f.write(_STAND_IN.format(calls=self.calls, status=status))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path

  def _run(self, target, status=0, *args):
    return preloaded_python.run_module(
        'benchmarks.target_time', f'--target={target}',
        f'--make={self._stand_in(status)}', f'--records={self.records}',
        f'--output_markdown={self.markdown}',
        f'--log={os.path.join(self.dir, target + ".log")}', *args,
        timeout=120)

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

  def test_failing_target_writes_nothing(self):
    self.assertEqual(self._run('results-celeba').returncode, 0)
    with open(self.records) as f:
      before = f.read()
    with open(self.markdown) as f:
      markdown_before = f.read()
    failed = self._run('results-celeba', 2)
    self.assertEqual(failed.returncode, 1)
    self.assertRegex(failed.stderr.strip().splitlines()[-1],
                     r'^error: .*make2 results-celeba exited with status 2 '
                     r'after \d+ s; its output is in .*results-celeba\.log$')
    self.assertNotIn('Traceback', failed.stderr)
    with open(self.records) as f:
      self.assertEqual(f.read(), before)
    with open(self.markdown) as f:
      self.assertEqual(f.read(), markdown_before)

  def test_bad_inputs_are_refused_before_running(self):
    for args, message in (
        (['--target='], '--target must name a make target'),
        (['--target=CELEBA_SEEDS=0'], '--target must name a make target'),
    ):
      with self.subTest(args[0]):
        completed = preloaded_python.run_module(
            'benchmarks.target_time', *args, f'--make={self._stand_in(0)}',
            f'--records={self.records}', timeout=120)
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
