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
"""benchmarks/group_profile.py runs end to end at a tiny size.

Both models (the CelebA-size one reads its clients from an `ExampleStore`),
as a user runs the binary, in a subprocess from
the repository root writing into a temporary directory.
"""

from absl.testing import absltest

from tests import benchmark_testing
from tests import binary_runs

_ROWS = ['grouped_round', 'group_work_threads', 'group_work_sequential',
         'group_call', 'member_loop', 'member_datasets', 'member_iterators',
         'member_batches_no_iterator', 'member_rows', 'group_tensors',
         'floor', 'floor_threads', 'tff_fixed', 'floor_in_tff',
         'floor_in_tff_arguments']


@binary_runs.runs_binaries
class GroupProfileTest(absltest.TestCase):

  def test_tiny_run_writes_section_and_json(self):
    report, text = benchmark_testing.run_benchmark(self, 'group_profile', [
        '--models=small,celeba', '--cohort_sizes=3',
        '--warmup_rounds=1', '--timed_rounds=1', '--input_dim=4',
        '--hidden_units=4', '--central_examples=10',
        '--central_batch_size=5'])

    self.assertIn('<!-- BEGIN group_profile -->', text)
    self.assertIn('<!-- END group_profile -->', text)
    self.assertIn('### small model (input 4, hidden [4]): 3 clients', text)
    self.assertIn('### celeba model (input 21168, hidden [64]): 3 clients',
                  text)
    self.assertEqual(text.count("Where a grouped round's time goes (shares"), 2)
    self.assertEqual(text.count("The floor's own graph run in TFF's worker "
                                'takes'), 2)

    self.assertEqual(list(report['models']), ['small', 'celeba'])
    for model_name, result in report['models'].items():
      (cohort,) = result['cohorts']
      self.assertEqual(cohort['clients_per_round'], 3)
      self.assertEqual(sum(cohort['groups']), 3)
      self.assertCountEqual(cohort['probes'], _ROWS)
      for key, summary in cohort['probes'].items():
        with self.subTest(model=model_name, row=key):
          self.assertGreater(summary['median_s'], 0.0)
          self.assertGreater(summary['x_floor'], 0.0)
      self.assertCountEqual(cohort['shares'], ['wall', 'cpu'])
      self.assertIn('member_tf_data', cohort['shares']['wall'])
      self.assertGreater(cohort['build_s']['grouped_round'], 0.0)


if __name__ == '__main__':
  absltest.main()
