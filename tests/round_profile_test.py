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
"""benchmarks/round_profile.py runs end to end at a tiny size.

The binary runs as a user runs it, in a subprocess from the repository root
(it shares round_time's flags and sets TFF's execution context, which this
test process keeps out of), writing into a temporary directory.
"""

from absl.testing import absltest

from tests import benchmark_testing
from tests import binary_runs


@binary_runs.runs_binaries
class RoundProfileTest(absltest.TestCase):

  def test_tiny_run_writes_section_and_json(self):
    report, text = benchmark_testing.run_benchmark(self, 'round_profile', [
        '--cohort_sizes=2', '--warmup_rounds=1', '--timed_rounds=1',
        '--input_dim=4', '--hidden_units=4', '--concurrency=1',
        '--nostream_structs'])

    self.assertIn('<!-- BEGIN round_profile -->', text)
    self.assertIn('<!-- END round_profile -->', text)
    self.assertIn('### 2 clients per round', text)
    self.assertIn('Where the time goes', text)

    (cohort,) = report['cohorts']
    self.assertEqual(cohort['clients_per_round'], 2)
    self.assertCountEqual(
        cohort['probes'],
        ['fedavg_round', 'composed_round', 'dispatch_tensors',
         'dispatch_datasets', 'python_datasets', 'python_serialize',
         'aggregate_from_python', 'broadcast_mean', 'floor'])
    for key, summary in cohort['probes'].items():
      with self.subTest(key):
        self.assertGreater(summary['median_s'], 0.0)
        self.assertGreater(summary['x_floor'], 0.0)
    # TFF's default context first, then the one --concurrency value, each
    # on a worker of its own, ended after.
    self.assertEqual(
        [row['max_concurrent_computation_calls'] for row in cohort['knobs']],
        [-1, 1])
    for row in cohort['knobs']:
      self.assertGreater(row['median_s'], 0.0)
    self.assertGreaterEqual(cohort['knob_workers']['during'], 2)
    self.assertEqual(cohort['knob_workers']['left_after'], 0)
    self.assertGreater(cohort['build_s']['fedavg_round'], 0.0)


if __name__ == '__main__':
  absltest.main()
