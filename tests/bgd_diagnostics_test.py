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
"""Tests of reading table 4's (G, B)-BGD estimates back from a run."""

import os
import shutil
import tempfile

from absl.testing import absltest

from experiments.common import bgd_diagnostics
from tff_mixed.training import runner


def _write_metrics(path, rounds, g2_fn, b2_fn):
  """A runner-style CSV; G~^2 / B~^2 from the round, eval columns only on
  some rounds (as when a run evaluates every few rounds)."""
  lines = [f'{runner.ROUND_KEY},{bgd_diagnostics.G2_COLUMN},'
           f'{bgd_diagnostics.B2_COLUMN},eval/recall_at_10']
  for t in range(1, rounds + 1):
    lines.append(f'{t},{g2_fn(t)},{b2_fn(t)},{0.1 if t % 5 == 0 else ""}')
  with open(path, 'w') as f:
    f.write('\n'.join(lines) + '\n')
  return path


class ReadDiagnosticsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

  def test_maxima_over_rounds_10_to_100(self):
    # The largest values sit outside the window (rounds 5 and 150): left out.
    path = _write_metrics(
        os.path.join(self.directory, 'm.csv'), 150,
        lambda t: 99.0 if t in (5, 150) else t / 100,
        lambda t: 9.0 if t in (5, 150) else 1 + t / 1000)
    self.assertEqual(
        bgd_diagnostics.read_diagnostics('two_way_gt', path),
        bgd_diagnostics.Diagnostics('two_way_gt', 1.0, 1.1, 10, 100))

  def test_a_shorter_run_takes_its_last_rounds(self):
    path = _write_metrics(os.path.join(self.directory, 'm.csv'), 30,
                          lambda t: t, lambda t: 2.0)
    self.assertEqual(
        bgd_diagnostics.read_diagnostics('pt', path, rounds=(10, 100)),
        bgd_diagnostics.Diagnostics('pt', 30.0, 2.0, 1, 30))
    self.assertEqual(
        bgd_diagnostics.read_diagnostics('pt', path, rounds=(25, 28)),
        bgd_diagnostics.Diagnostics('pt', 28.0, 2.0, 25, 28))

  def test_a_run_without_diagnostics_has_none(self):
    path = os.path.join(self.directory, 'm.csv')
    with open(path, 'w') as f:
      f.write(f'{runner.ROUND_KEY},train/loss\n1,0.5\n2,0.4\n')
    self.assertIsNone(bgd_diagnostics.read_diagnostics('pt', path))

  def test_format(self):
    text = bgd_diagnostics.format_diagnostics(
        [bgd_diagnostics.Diagnostics('one_way_gt', 0.0123, 2.0, 10, 100)])
    self.assertIn('one_way_gt', text)
    self.assertIn('10-100', text)
    self.assertIn('0.012', text)
    self.assertIn('2.000', text)


if __name__ == '__main__':
  absltest.main()
