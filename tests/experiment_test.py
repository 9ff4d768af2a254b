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
"""Tests of the experiment framework's scenarios, records and tables."""

import math
import types
from unittest import mock

from absl.testing import absltest

from experiments.common import comparison
from experiments.common import records
from experiments.common import scenarios as scenarios_lib
from experiments.common import tables
from tff_mixed.models import dense


def _row(round_num: int, auc: float) -> records.MetricsRow:
  return records.MetricsRow('oracle', round_num, 0.1, 0.9, auc, 0.3, 0.9,
                            0.9, 1.0)


class ScenariosTest(absltest.TestCase):

  def test_paper_central_batch_sizes(self):
    sizes = scenarios_lib.paper_central_batch_sizes(
        clients_per_round=10, client_steps=5, client_batch_size=8,
        num_central_examples=300)
    self.assertEqual(sizes.parallel_training, 80)  # S |B_i|.
    self.assertEqual(sizes.two_way_gt, 80)
    self.assertEqual(sizes.one_way_gt, 300)  # K S |B_i| = 400, capped.

  def test_a_batch_size_beyond_the_central_data_is_capped_and_said(self):
    # It was capped without a word: a run of |B_c| = 500 on 28 examples
    # trained on the whole set every step.
    task = types.SimpleNamespace(
        central_objective=types.SimpleNamespace(num_examples=28))
    with mock.patch.object(comparison.logging, 'warning') as warning:
      sizes = comparison.central_batch_sizes(task, 500, 3, 2, 4)
      self.assertEqual(sizes, scenarios_lib.CentralBatchSizes(28, 28, 28))
      self.assertEqual(warning.call_args.args[1:], (500, 28, 28))
      self.assertEqual(comparison.central_batch_sizes(task, 20, 3, 2, 4),
                       scenarios_lib.CentralBatchSizes(20, 20, 20))
      self.assertLen(warning.call_args_list, 1)

  def test_unknown_scenario_process(self):
    with self.assertRaisesRegex(ValueError, '`scenario`'):
      scenarios_lib.build_process(
          'fedprox', dense.build_binary_classifier(2), None,
          client_lr=0.1, client_steps=1,
          central_batch_sizes=scenarios_lib.CentralBatchSizes(1, 1, 1),
          examples_per_client=1, client_batch_size=1, seed=0)

  def test_every_scenario_runs_a_registered_algorithm(self):
    self.assertCountEqual(scenarios_lib.ALGORITHM_OF, scenarios_lib.SCENARIOS)
    self.assertCountEqual(scenarios_lib.LABELS, scenarios_lib.SCENARIOS)

  def test_check_scenarios(self):
    self.assertEqual(scenarios_lib.check_scenarios(['oracle', 'fl_only']),
                     ('oracle', 'fl_only'))
    with self.assertRaisesRegex(ValueError, 'duplicates'):
      scenarios_lib.check_scenarios(['oracle', 'oracle'])


class RecordsTest(absltest.TestCase):

  def test_first_round_reaching(self):
    rows = [_row(0, 0.5), _row(2, float('nan')), _row(4, 0.96)]
    self.assertEqual(records.first_round_reaching(rows, 0.95), 4)
    self.assertIsNone(records.first_round_reaching(rows, 0.99))

  def test_summarize_averages_the_last_quarter(self):
    rows = [_row(0, 0.5), _row(4, 0.8), _row(8, 0.9), _row(10, 0.96)]
    summary = records.summarize(rows, rounds=10, target_auc=0.95,
                                num_examples=7, seconds=2.0,
                                build_seconds=1.0, metrics_path='m.csv')
    self.assertEqual(summary.scenario, 'oracle')
    self.assertEqual(summary.rounds_to_target, 10)
    self.assertAlmostEqual(summary.tail_auc, 0.93)  # Rounds 8 and 10.
    self.assertEqual(summary.final.num_examples, 7)
    self.assertTrue(math.isfinite(summary.final.auc))


class TablesTest(absltest.TestCase):

  def test_format_table(self):
    metrics = records.EvalMetrics(accuracy=0.9, loss=0.3, auc=0.96,
                                  positive_accuracy=0.95,
                                  negative_accuracy=0.85, num_examples=10)
    summaries = [
        records.ScenarioSummary(
            'oracle', metrics, rounds_to_target=12, tail_auc=0.955,
            tail_accuracy=0.9, seconds=3.21, build_seconds=1.0),
        records.ScenarioSummary(
            'fl_only', metrics._replace(auc=0.5), rounds_to_target=None,
            tail_auc=0.5, tail_accuracy=0.5, seconds=2.0, build_seconds=1.0),
    ]
    lines = tables.format_table(summaries, 0.95).splitlines()
    self.assertLen(lines, 4)  # Header, rule, two rows.
    self.assertIn('rounds to AUC>=0.95', lines[0])
    self.assertEqual(lines[2].split(),
                     ['oracle', '0.960', '0.900', '0.950', '0.850', '0.955',
                      '0.900', '12', '3.2'])
    self.assertEqual(lines[3].split()[-2], '-')

  def test_markdown_table(self):
    self.assertEqual(
        tables.markdown_table(('a', 'b c'), [('1', ''), ('x | y', '2')]),
        ['| a | b c |', '|---|---|', '| 1 |  |', '| x | y | 2 |'])
    self.assertEqual(tables.markdown_table(('only',), []),
                     ['| only |', '|---|'])



if __name__ == '__main__':
  absltest.main()
