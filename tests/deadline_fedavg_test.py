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
"""Tests for `tff_mixed.asynchronous.deadline_fedavg` (the paper's eq. 2
FedAvg) on hand-computed rounds of tiny weight vectors."""

from absl.testing import absltest
import numpy as np

from tff_mixed.asynchronous import deadline_fedavg
from tff_mixed.asynchronous import server_strategies as strategies

ClientUpdate = strategies.ClientUpdate


def _w(*values):
  return [np.array(values, dtype=np.float64)]


class DeadlineFedAvgTest(absltest.TestCase):

  def test_late_updates_are_dropped_and_on_time_ones_weighted(self):
    fedavg = deadline_fedavg.DeadlineFedAvg()
    updates = [
        ClientUpdate(0, _w(3.0, 0.0), staleness=0, num_examples=1.0),
        ClientUpdate(1, _w(100.0, 100.0), staleness=2, num_examples=50.0),
        ClientUpdate(2, _w(0.0, 6.0), staleness=0, num_examples=2.0),
    ]
    state, x = fedavg.apply(fedavg.initial_state(), _w(1.0, 1.0), updates)
    # On time: clients 0 and 2, weights 1/3 and 2/3:
    # [1, 1] + (1/3) [3, 0] + (2/3) [0, 6] = [2, 5]; client 1 is dropped.
    np.testing.assert_allclose(x[0], [2.0, 5.0])
    self.assertEqual(state, deadline_fedavg.DeadlineFedAvgState(1, 1))

  def test_deadline_admits_staleness_up_to_it(self):
    fedavg = deadline_fedavg.DeadlineFedAvg(learning_rate=0.5, deadline=2,
                                            weighting='uniform')
    updates = [ClientUpdate(0, _w(4.0), staleness=2),
               ClientUpdate(1, _w(8.0), staleness=3)]
    # Only the first (staleness 2 <= 2): 0 + 0.5 * 4 = 2.
    state, x = fedavg.apply(fedavg.initial_state(), _w(0.0), updates)
    np.testing.assert_allclose(x[0], [2.0])
    self.assertEqual((state.num_updates, state.num_discarded), (1, 1))

  def test_round_with_nothing_on_time_keeps_the_model(self):
    fedavg = deadline_fedavg.DeadlineFedAvg()
    state, x = fedavg.apply(
        fedavg.initial_state(), _w(1.0, -2.0),
        [ClientUpdate(0, _w(5.0, 5.0), staleness=1, num_examples=3.0)])
    np.testing.assert_allclose(x[0], [1.0, -2.0])
    self.assertEqual((state.num_updates, state.num_discarded), (0, 1))
    state, x = fedavg.apply(state, x, [])
    self.assertEqual((state.num_updates, state.num_discarded), (0, 1))

  def test_without_delays_equals_weighted_fedbuff_of_the_round(self):
    # The project's `fedavg` baseline is weighted FedBuff with M = the
    # round's clients and eta_g = 1; with every update on time the deadline
    # strategy must give the same model, round after round.
    rng = np.random.default_rng(0)
    fedavg = deadline_fedavg.DeadlineFedAvg()
    fedbuff = strategies.FedBuff(1.0, 3, weighting='num_examples')
    x_a = x_b = [rng.normal(size=(2, 3)), rng.normal(size=4)]
    state_a, state_b = fedavg.initial_state(), fedbuff.initial_state()
    for _ in range(3):
      updates = [ClientUpdate(i, [rng.normal(size=(2, 3)),
                                  rng.normal(size=4)], staleness=0,
                              num_examples=float(rng.integers(1, 9)))
                 for i in range(3)]
      state_a, x_a = fedavg.apply(state_a, x_a, updates)
      state_b, x_b = fedbuff.apply(state_b, x_b, updates)
      for a, b in zip(x_a, x_b):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    self.assertEqual(state_a.num_updates, state_b.num_updates)

  def test_bad_arguments(self):
    for kwargs in ({'deadline': -1}, {'deadline': 1.5}, {'deadline': True},
                   {'learning_rate': 0.0}, {'weighting': 'median'}):
      with self.subTest(**kwargs):
        with self.assertRaises(ValueError):
          deadline_fedavg.DeadlineFedAvg(**kwargs)
    fedavg = deadline_fedavg.DeadlineFedAvg()
    with self.assertRaisesRegex(ValueError, 'num_examples'):
      fedavg.apply(fedavg.initial_state(), _w(0.0),
                   [ClientUpdate(0, _w(1.0), staleness=0)])
    with self.assertRaisesRegex(ValueError, 'ClientUpdate'):
      fedavg.apply(fedavg.initial_state(), _w(0.0), [(0, _w(1.0))])


if __name__ == '__main__':
  absltest.main()
