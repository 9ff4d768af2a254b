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
"""Tests for experiments.common.claims."""

from absl.testing import absltest

from experiments.common import claims


class SpreadTest(absltest.TestCase):

  def test_mean_and_sample_std(self):
    s = claims.spread([1.0, 2.0, 4.0])
    self.assertAlmostEqual(s.mean, 7 / 3)
    # Sample (ddof=1) standard deviation: sqrt(sum((x - mean)^2) / 2).
    self.assertAlmostEqual(s.std, ((16 / 9 + 1 / 9 + 25 / 9) / 2)**0.5)
    self.assertEqual(str(s), '2.333 ± 1.528')

  def test_one_value_has_no_spread(self):
    self.assertEqual(claims.spread([0.5]), claims.Spread(0.5, 0.0))

  def test_no_value_is_an_error(self):
    with self.assertRaisesRegex(ValueError, 'must not be empty'):
      claims.spread([])


class ClaimsMarkdownTest(absltest.TestCase):

  def test_one_bullet_per_claim_with_verdict_paper_and_measured(self):
    paper = claims.PaperNumber('~0.1', 'section 4.3')
    lines = claims.claims_markdown([
        claims.Claim('A holds', paper, True, 'x 0.11'),
        claims.Claim('B holds', paper, False, 'y 0.02')])
    self.assertEqual(lines, [
        '* **reproduced**: A holds (paper: ~0.1, section 4.3). Measured: '
        'x 0.11.',
        '* **not reproduced**: B holds (paper: ~0.1, section 4.3). '
        'Measured: y 0.02.'])


if __name__ == '__main__':
  absltest.main()
