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
"""docs/ALGORITHMS.md's "Paper vs this implementation" table against the code:
the asynchronous baselines' and Feddle's deliberate deviations each have a
row (what, the paper, here, why), and the defaults those rows state hold."""

import os

from absl.testing import absltest
import numpy as np

from tff_mixed.asynchronous import feddle_atlas
from tff_mixed.asynchronous import server_strategies

_ALGORITHMS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'docs', 'ALGORITHMS.md')
_SECTION = '## Paper vs this implementation'


def _deviation_rows() -> dict[str, list[str]]:
  """{what: [the paper, here, why]} of the deviation table."""
  with open(_ALGORITHMS) as f:
    text = f.read()
  section = text.split(_SECTION, 1)[1].split('\n## ', 1)[0]
  rows = {}
  for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split(' | ')]
    if line.startswith('| ') and len(cells) == 4:
      rows[cells[0]] = cells[1:]
  return rows


class PaperDeviationsTest(absltest.TestCase):

  def test_every_asynchronous_deviation_has_a_row_with_its_reason(self):
    rows = _deviation_rows()
    for what, mentions in (
        ('FedBuff (Nguyen et al. 2022)', '--fedbuff_staleness_exponent'),
        ('FedAsync (Xie et al. 2019)', '--fedasync_staleness_unit'),
        ('FedDF (Lin et al. 2020)', 'one distillation per merge'),
        ('Feddle: a new anchor\'s score', '+inf'),
        ('Feddle: eq. 4 with zero anchors', 'left out of the median'),
        ('Feddle: when to search', '`buffer_size`'),
        ('Feddle: search optimizer and rate', '`scaled_sgd`'),
        ('Feddle: atlas size', 'at least FedBuff\'s buffer'),
        ('Feddle: keep c\' when the search is worse', 'no such rule'),
        ('Feddle, Fed+FT, FedDF: the FedBuff they build on',
         '`hybrid_methods.method_config`'),
    ):
      self.assertIn(what, rows)
      paper, here, why = rows[what]
      self.assertTrue(paper and here and why, what)
      self.assertIn(mentions, here, what)

  def test_no_row_claims_the_baselines_follow_their_papers_whole(self):
    # FedBuff's default leaves out its paper's staleness weights.
    with open(_ALGORITHMS) as f:
      self.assertNotIn('as in their papers', f.read())

  def test_the_defaults_the_rows_state(self):
    self.assertEqual(server_strategies.FedAsync(0.5).staleness_unit,
                     'server_steps')
    self.assertEqual(server_strategies.FedBuff(1.0, 2).staleness_exponent,
                     0.0)
    atlas = feddle_atlas.add_anchor(feddle_atlas.empty_atlas(),
                                    [np.ones(2)], max_size=2)
    self.assertEqual(atlas.scores.tolist(), [np.inf])
    normalized = feddle_atlas.normalize_anchors(
        [[np.zeros(2)], [np.array([3.0, 4.0])], [np.array([0.0, 1.0])],
         [np.array([0.0, 2.0])]])
    # The median of the nonzero norms 5, 1 and 2; the zero anchor stays 0.
    self.assertEqual(normalized.median, 2.0)
    np.testing.assert_array_equal(normalized.anchors[0][0], [0.0, 0.0])


if __name__ == '__main__':
  absltest.main()
