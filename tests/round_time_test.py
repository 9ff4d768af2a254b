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
"""benchmarks/round_time.py runs end to end at a tiny size.

The binary runs as a user runs it, in a subprocess from the repository root
(it sets TFF's execution context, which this test process keeps out of),
writing into a temporary directory: per-client and grouped rows, the floor,
the ratios to it, and the closing line computed from them.
"""

from absl.testing import absltest

from tests import benchmark_testing
from tests import binary_runs


@binary_runs.runs_binaries
class RoundTimeTest(absltest.TestCase):

  def test_tiny_run_times_both_modes_and_the_floor(self):
    report, text = benchmark_testing.run_benchmark(self, 'round_time', [
        '--models=small', '--clients_per_round=2,4', '--clients_per_group=2',
        '--algorithms=fedavg,parallel_training,compute_floor',
        '--warmup_rounds=1', '--timed_rounds=1', '--input_dim=4',
        '--hidden_units=4'])

    self.assertEqual(list(report['models']), ['small'])
    cohorts = report['models']['small']['cohorts']
    self.assertEqual([c['clients_per_round'] for c in cohorts], [2, 4])
    self.assertEqual([c['groups'] for c in cohorts], [[2], [2, 2]])
    for cohort in cohorts:
      rows = cohort['algorithms']
      self.assertEqual(list(rows), [
          'fedavg', 'fedavg@grouped', 'parallel_training',
          'parallel_training@grouped', 'compute_floor'])
      for name, summary in rows.items():
        with self.subTest(f'{cohort["clients_per_round"]} {name}'):
          self.assertGreater(summary['median_wall_s'], 0.0)
          self.assertAlmostEqual(
              summary['wall_vs_floor'], summary['median_wall_s']
              / rows['compute_floor']['median_wall_s'])
      # Each mode against its own FedAvg.
      self.assertAlmostEqual(
          rows['parallel_training@grouped']['wall_vs_fedavg'],
          rows['parallel_training@grouped']['median_wall_s']
          / rows['fedavg@grouped']['median_wall_s'])

    self.assertIn('<!-- BEGIN round_time -->', text)
    self.assertIn('Parallel Training, grouped (2 x 2)', text)
    self.assertIn('FedAvg (TFF `build_weighted_fed_avg`), per-client', text)
    self.assertIn('Where the time goes', text)
    section = text.split('<!-- END round_time -->')[0].rstrip()
    last = section.splitlines()[-1]
    self.assertStartsWith(
        last, '**Best ratio to the compute floor at the largest cohort:**')
    self.assertIn('at 4 clients', last)
    self.assertRegex(last, r'This (meets|does not meet) the goal of 2x')


if __name__ == '__main__':
  absltest.main()
