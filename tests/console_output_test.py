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
"""The binaries print no TensorFlow or TFF log lines, unless `--verbose`.

The demo (`label_imbalance_main`) runs one round of one scenario in a
subprocess, as `make demo` would, with `TF_CPP_MIN_LOG_LEVEL` unset.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
from absl.testing import parameterized

from experiments import tf_log_level
from tests import binary_runs

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# TensorFlow's C++ lines ('2026-01-01 12:00:00.000: I tensorflow/...] '),
# absl-prefixed lines ('I0101 12:00:00.000 123 file.py:1] ', also TFF's C++
# worker) and the TensorFlow logger's own handler ('INFO:tensorflow:...').
_LOG_LINE = re.compile(r'^\d{4}-\d\d-\d\d \d\d:.*\] |^[IWE]\d{4} '
                       r'|^INFO:tensorflow:')


def _run_demo(*flags: str) -> tuple[int, str, str]:
  """Runs one round of the demo; returns (exit status, stdout, stderr)."""
  directory = tempfile.mkdtemp()
  try:
    env = {k: v for k, v in os.environ.items()
           if k != 'TF_CPP_MIN_LOG_LEVEL'}
    env['PYTHONPATH'] = _REPO
    paths = [os.path.join(directory, n) for n in ('out.txt', 'err.txt')]
    # Files, not pipes: a TFF worker left behind would hold a pipe open.
    with open(paths[0], 'w') as out, open(paths[1], 'w') as err:
      completed = subprocess.run(
          [sys.executable, '-m',
           'experiments.label_imbalance.label_imbalance_main', '--rounds=1',
           '--scenarios=fl_only', '--clients_per_round=3',
           '--client_steps=2', f'--output_dir={directory}/out', *flags],
          cwd=_REPO, env=env, stdin=subprocess.DEVNULL, stdout=out,
          stderr=err, timeout=600, check=False)
    with open(paths[0]) as out, open(paths[1]) as err:
      return completed.returncode, out.read(), err.read()
  finally:
    shutil.rmtree(directory, ignore_errors=True)


def _log_lines(text: str) -> list[str]:
  return [line for line in text.splitlines() if _LOG_LINE.match(line)]


@binary_runs.runs_binaries
class ConsoleOutputTest(parameterized.TestCase):

  @parameterized.parameters(
      ([], False),
      (['--verbose'], True),
      (['-verbose'], True),
      (['--verbose=true'], True),
      (['--verbose=1'], True),
      (['--verbose=false'], False),
      (['--verbose', '--noverbose'], False),
      (['--noverbose', '--verbose'], True),
      (['--verbosity=1'], False),
      (['--', '--verbose'], False),
      (['verbose'], False),
  )
  def test_verbose_is_read_before_the_flags_are_parsed(self, args, verbose):
    self.assertEqual(tf_log_level.verbose_requested(['binary', *args]), verbose)

  def test_default_run_prints_no_log_lines(self):
    returncode, stdout, stderr = _run_demo()
    self.assertEqual(returncode, 0, stderr[-3000:])
    noise = _log_lines(stdout) + _log_lines(stderr)
    self.assertEqual(noise, [], f'{len(noise)} TensorFlow/TFF log lines')
    # The results table and this program's own messages remain.
    self.assertRegex(stdout, r'(?m)^scenario +AUC')
    self.assertRegex(stdout, r'(?m)^fl_only ')
    self.assertRegex(stderr, r'(?m)^Wrote table: ')

  def test_verbose_run_prints_the_log_lines(self):
    returncode, stdout, stderr = _run_demo('--verbose')
    self.assertEqual(returncode, 0, stderr[-3000:])
    self.assertNotEmpty(_log_lines(stderr))
    self.assertRegex(stdout, r'(?m)^fl_only ')


if __name__ == '__main__':
  absltest.main()
