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
"""Tests of the point-by-point comparison with the paper's tables."""

import math

from absl.testing import absltest

from experiments.hybrid_async import paper_comparison
from experiments.hybrid_async import paper_tables

_KEY = (0.1, 5)
_TABLE = paper_tables.PaperTable(
    name='table 9', data='X', caption='made up',
    values={'a': {_KEY: 50.0}, 'b': {_KEY: (40.0, 1.0)}, 'c': {_KEY: 30.0},
            'feddle_id': {_KEY: 60.0}})


class RanksTest(absltest.TestCase):

  def test_highest_first_and_ties_share_their_mean_rank(self):
    self.assertEqual(paper_comparison.ranks({'a': 3, 'b': 5, 'c': 3, 'd': 1}),
                     {'b': 1, 'a': 2.5, 'c': 2.5, 'd': 4})

  def test_spearman_by_hand(self):
    # Ranks (1, 2, 3) against (1, 3, 2): d^2 = 0 + 1 + 1, so
    # rho = 1 - 6 * 2 / (3 * (9 - 1)) = 0.5.
    self.assertAlmostEqual(
        paper_comparison.spearman({'a': 3, 'b': 2, 'c': 1},
                                  {'a': 9, 'b': 1, 'c': 5}), 0.5)
    self.assertAlmostEqual(
        paper_comparison.spearman({'a': 3, 'b': 2, 'c': 1},
                                  {'a': 1, 'b': 2, 'c': 3}), -1.0)
    self.assertTrue(math.isnan(paper_comparison.spearman({'a': 1, 'b': 2},
                                                         {'a': 1, 'b': 2})))


class ComparisonLinesTest(absltest.TestCase):

  def test_gaps_ranks_and_the_departure_beyond_the_median_gap(self):
    # Gaps: a -20, b -10, c -25, feddle_id -30: median -22.5.
    ours = {'a': {_KEY: 30.0}, 'b': {_KEY: 30.0}, 'c': {_KEY: 5.0},
            'feddle_id': {_KEY: 30.0}, 'not_in_paper': {_KEY: 99.0}}
    lines = paper_comparison.comparison_lines(ours, _TABLE, [_KEY],
                                              ['Dir(0.1), N(5)'])
    text = '\n'.join(lines)
    self.assertNotIn('not_in_paper', text)
    # a, b and feddle_id tie at 30: ranks 2 each; c is 4th.
    self.assertIn('| a | -20.0 (2 / 2 of 4) | +2.5 |', text)
    self.assertIn('| b | -10.0 (2 / 3 of 4) | +12.5 |', text)
    self.assertIn('| c | -25.0 (4 / 4 of 4) | -2.5 |', text)
    self.assertIn('| feddle_id | -30.0 (2 / 1 of 4) | -7.5 |', text)
    self.assertIn('median gap -22.5 points', text)
    self.assertIn('feddle_id ranks 2 (paper: 1)', text)
    self.assertIn('furthest below the median gap: feddle_id (-7.5), '
                  'c (-2.5), a (+2.5)', text)
    self.assertIn('furthest above: b (+12.5), a (+2.5)', text)

  def test_two_methods_have_no_rank_correlation(self):
    lines = paper_comparison.comparison_lines(
        {'a': {_KEY: 30.0}, 'b': {_KEY: 20.0}}, _TABLE, [_KEY],
        ['Dir(0.1), N(5)'])
    text = '\n'.join(lines)
    self.assertIn('rank correlation n/a (it needs 3 methods with distinct '
                  'scores; 2 here)', text)
    self.assertNotIn('nan', text)

  def test_nothing_in_common_gives_no_lines(self):
    self.assertEqual(paper_comparison.comparison_lines(
        {'z': {_KEY: 1.0}}, _TABLE, [_KEY], ['x']), [])
    self.assertEqual(paper_comparison.comparison_lines(
        {'a': {(0.3, 20): 1.0}}, _TABLE, [(0.3, 20)], ['x']), [])


if __name__ == '__main__':
  absltest.main()
