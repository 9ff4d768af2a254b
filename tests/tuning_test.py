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
"""Tests for the paper's hyperparameter grids (experiments/hybrid_async)."""

from absl.testing import absltest

from experiments.hybrid_async import tuning


class GridTest(absltest.TestCase):

  def test_grids_are_the_papers_appendix(self):
    # Appendix D of the guided-model-merging paper, axis by axis.
    want = {
        'fed_ft': [(1e-5, 1e-4, 1e-3), (1, 10, 20)],
        'feddf_id': [(1e-5, 1e-4, 1e-3), (1, 10, 20)],
        'feddf_ood': [(1e-5, 1e-4, 1e-3), (1, 10, 20)],
        'center': [(1e-5, 1e-4, 1e-3), (10, 20, 50)],
        'fedasync': [(0.1, 0.5, 0.9), (0.2, 0.4, 0.8)],
        'fedbuff': [(0.01, 0.1, 1.0), (10, 20, 50)],
        'ca2fl': [(0.01, 0.1, 1.0), (10, 20, 50)],
        # The search at the paper's scaled rate (appendix A), our grid
        # of its factor; the paper's epochs.
        'feddle_id': [('scaled_sgd',), (0.01, 0.03, 0.1, 0.3, 1.0),
                      (1, 10, 20)],
        'feddle_ood': [('scaled_sgd',), (0.01, 0.03, 0.1, 0.3, 1.0),
                       (1, 10, 20)],
    }
    self.assertEqual(
        {m: [a.values for a in g.axes]
         for m, g in tuning.METHOD_GRIDS.items()}, want)
    for method, grid in tuning.METHOD_GRIDS.items():
      self.assertEqual(grid.ours, (
          ('feddle_search_optimizer', 'feddle_search_lr')
          if method.startswith('feddle') else ()))
    # The client grid is ours, and says so.
    self.assertEqual(tuning.CLIENT_GRID.ours, ('client_lr', 'client_epochs'))

  def test_points_enumerate_the_product_last_axis_fastest(self):
    points = tuning.METHOD_GRIDS['fedbuff'].points()
    self.assertLen(points, 9)
    self.assertEqual(points[:2], [dict(server_lr=0.01, buffer_size=10),
                                  dict(server_lr=0.01, buffer_size=20)])
    self.assertEqual(points[-1], dict(server_lr=1.0, buffer_size=50))

  def test_restrict_keeps_a_stated_subset(self):
    grid = tuning.restrict(tuning.METHOD_GRIDS['feddle_id'],
                           {'feddle_search_epochs': [1], 'buffer_size': [10],
                            'feddle_search_lr': ['0.3', 0.01]})
    # Values keep the grid's order; an axis the grid lacks is ignored.
    self.assertEqual([a.values for a in grid.axes],
                     [('scaled_sgd',), (0.01, 0.3), (1,)])
    self.assertEqual(grid.points(), [
        dict(feddle_search_optimizer='scaled_sgd', feddle_search_lr=0.01,
             feddle_search_epochs=1),
        dict(feddle_search_optimizer='scaled_sgd', feddle_search_lr=0.3,
             feddle_search_epochs=1)])
    with self.assertRaisesRegex(ValueError, 'no value'):
      tuning.restrict(tuning.METHOD_GRIDS['center'], {'server_epochs': [5]})
    with self.assertRaisesRegex(ValueError, 'no value'):
      tuning.restrict(tuning.METHOD_GRIDS['center'], {'server_epochs': []})

  def test_select_takes_the_best_and_the_first_on_ties(self):
    self.assertEqual(tuning.select({0: 0.2, 1: 0.5, 2: 0.1}), 1)
    self.assertEqual(tuning.select({3: 0.5, 1: 0.5, 2: 0.4}), 1)

  def test_select_breaks_ties_within_the_tolerance_by_the_late_score(self):
    # 0.172 and 0.1716 are one validation image apart of 250 (0.004): a
    # tie, which the runs' last-half means decide, then grid order.
    scores = {0: 0.1716, 1: 0.172, 2: 0.15}
    late = {0: 0.16, 1: 0.12, 2: 0.2}
    self.assertEqual(tuning.select(scores), 1)
    self.assertEqual(tuning.select(scores, late, tolerance=1 / 250), 0)
    self.assertEqual(tuning.select(scores, {0: 0.1, 1: 0.1},
                                   tolerance=1 / 250), 0)
    self.assertEqual(tuning.select(scores, late, tolerance=0.03), 2)
    with self.assertRaisesRegex(ValueError, 'No scored'):
      tuning.select({})


if __name__ == '__main__':
  absltest.main()
