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
"""BENCHMARKS.md's summary of the paper binaries against their floors."""

import json
import os

from absl.testing import absltest

from benchmarks import floor_summary

_RESULTS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'benchmarks', 'results')


def _json(name):
  with open(os.path.join(_RESULTS, f'{name}.json')) as f:
    return json.load(f)


class FloorSummaryTest(absltest.TestCase):

  def test_every_paper_binary_has_rows_in_the_mode_it_runs(self):
    rows = floor_summary.rows()
    by_binary = {}
    for row in rows:
      by_binary.setdefault(row.binary.split(' (')[1], []).append(row)
    self.assertEqual(set(by_binary), {
        'celeba_scale)', 'lm_rounds)', 'movielens_select)', 'hybrid_rounds)'})
    # CelebA: the grouped rows, against each algorithm's own floor.
    celeba = _json('celeba_scale')
    one_way = [r for r in by_binary['celeba_scale)']
               if r.scenario == 'one_way_gt']
    self.assertLen(one_way, 1)
    self.assertEqual(one_way[0].seconds,
                     celeba['timings']['one_way_gt@grouped']['median_round_s'])
    self.assertEqual(
        one_way[0].floor_seconds,
        celeba['floors']['compute_floor@one_way_gt']['median_round_s'])
    oracle = [r for r in by_binary['celeba_scale)'] if r.scenario == 'oracle']
    self.assertEqual(
        oracle[0].floor_seconds,
        celeba['floors']['compute_floor@fedavg']['median_round_s'])
    # MovieLens: federated_select for the mixed algorithms, grouped.
    movielens = {r.scenario: r for r in by_binary['movielens_select)']}
    self.assertEqual(set(movielens), {'baseline', 'parallel_training',
                                      'one_way_gt', 'two_way_gt'})
    self.assertIn('federated_select', movielens['one_way_gt'].mode)
    self.assertEqual(
        movielens['one_way_gt'].seconds,
        _json('movielens_select')['timings'][
            'one_way_gt (federated_select)']['grouped_seconds_per_round'])
    self.assertLen(by_binary['lm_rounds)'], len(_json('lm_rounds')['timings']))
    # The hybrid rounds: the ratio their benchmark reports (paired rounds).
    hybrid = _json('hybrid_rounds')['timings']
    self.assertEqual({r.scenario: r.ratio for r in by_binary['hybrid_rounds)']},
                     {m: t['x_floor'] for m, t in hybrid.items()})

  def test_rows_above_the_goal_are_marked(self):
    row = floor_summary.Row('b (x)', 's', 'grouped', 3.0, 1.0, 3.0, 'today')
    below = row._replace(seconds=1.2, ratio=1.2)
    text = floor_summary.markdown([row, below])
    self.assertIn('| 3.00 | 1.000 | 3.00 | **no** |', text)
    self.assertIn('| 1.20 | 1.000 | 1.20 | yes |', text)
    self.assertIn('1 of 2 rows within 1.5x', text)
    self.assertIn('b s 3.00x', text)

  def test_rows_above_point_to_their_benchmarks_profiles(self):
    row = floor_summary.Row('CelebA (celeba_scale)', 's', 'grouped', 3.0,
                            1.0, 3.0, 'today')
    lm = row._replace(binary='LM (lm_rounds)', seconds=1.0, ratio=1.0)
    text = floor_summary.markdown([row, lm])
    self.assertIn('rows above spend their time', text)
    self.assertIn('celeba_scale\'s "Where a grouped FL-only round goes"',
                  text)
    self.assertNotIn('movielens_select', text)
    within = floor_summary.markdown([lm])
    self.assertNotIn('rows above spend', within)

  def test_benchmarks_md_holds_the_current_summary(self):
    self.assertTrue(floor_summary.is_current())


if __name__ == '__main__':
  absltest.main()
