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
"""The advisor's validation against measurement (experiments/advisor_validation).

Curves are read from both CSV layouts the binaries write (a comparison's
combined metrics.csv with a `scenario` column, and the runner's per-run
metrics.csv with `round_num` and empty cells between evaluations); the
winner is the algorithm reaching the target first in every curve; the
binary writes a record and the RESULTS.md section (its bad inputs are in
tests/bad_inputs_test.py).
"""

import json
import os

from absl.testing import absltest
import numpy as np

import tff_mixed
from experiments.advisor_validation import validation_lib
from tests import binary_runs
from tests import preloaded_python
from tests import temp_dirs


def _advice_json(directory):
  """A real `Advice.to_json` from 10 rounds of made-up diagnostics."""
  rng = np.random.default_rng(0)
  rows = [{
      'round_num': t,
      'train/central/bgd_G2': 4.0 + rng.uniform(),
      'train/central/bgd_B2': 2.0 + rng.uniform(),
      'train/central/sigma2': 1.0 + rng.uniform(),
      'train/central/sigma_c2': 0.1 + 0.1 * rng.uniform(),
      'train/central/beta': 2.0,
      'train/central/mixed_grad_norm2': 1.0 / t,
      'train/client_work/train/loss': 1.0 / t,
      'train/central/loss': 1.0 / t,
  } for t in range(1, 11)]
  advice = tff_mixed.advise(rows, client_steps=4, cohort_size=10,
                            client_learning_rate=0.01)
  path = os.path.join(directory, 'advice.json')
  with open(path, 'w') as f:
    f.write(advice.to_json())
  return path, advice.recommendation


def _combined_csv(path, curves):
  """A comparison's metrics.csv: one row per scenario and evaluation."""
  with open(path, 'w') as f:
    f.write('scenario,round,eval_auc\n')
    for scenario, values in curves.items():
      for i, v in enumerate(values):
        f.write(f'{scenario},{5 * i},{v}\n')


def _runner_csv(path, values):
  """A runner's metrics.csv: round_num, evaluations every other round."""
  with open(path, 'w') as f:
    f.write('round_num,train/loss,eval/auc\n')
    for i, v in enumerate(values):
      f.write(f'{2 * i + 1},0.5,\n{2 * i + 2},0.5,{v}\n')


class ValidationLibTest(absltest.TestCase):

  def test_reads_both_layouts(self):
    directory = temp_dirs.temp_dir(self)
    combined = os.path.join(directory, 'combined.csv')
    _combined_csv(combined, {'one_way_gt': [0.5, 0.7], 'two_way_gt': [0.6]})
    self.assertEqual(validation_lib.read_curve(combined, 'eval_auc',
                                               scenario='one_way_gt'),
                     [(0, 0.5), (5, 0.7)])
    runner = os.path.join(directory, 'runner.csv')
    _runner_csv(runner, [0.4, float('nan'), 0.9])
    self.assertEqual(validation_lib.read_curve(runner, 'eval/auc'),
                     [(2, 0.4), (6, 0.9)])
    with self.assertRaisesRegex(ValueError, "no column 'auc'"):
      validation_lib.read_curve(runner, 'auc')
    with self.assertRaisesRegex(ValueError, 'no finite'):
      validation_lib.read_curve(combined, 'eval_auc', scenario='oracle')

  def test_target_share_is_of_the_lowest_tail(self):
    directory = temp_dirs.temp_dir(self)
    curves = {}
    for name, values in (('parallel_training', [0.1, 0.5, 0.6, 0.6, 0.6]),
                         ('one_way_gt', [0.1, 0.8, 0.8, 0.8, 0.8]),
                         ('two_way_gt', [0.1, 0.2, 0.7, 0.8, 0.8])):
      path = os.path.join(directory, name + '.csv')
      _combined_csv(path, {name: values})
      curves[name] = [path]
    target, rule, measured, spacing = validation_lib.measure(
        curves, 'eval_auc', target_share=0.9)
    # Tails (rounds >= 15): PT 0.6 and 0.6, the lowest; 0.9 x 0.6 = 0.54.
    self.assertAlmostEqual(target, 0.54)
    self.assertEqual(spacing, 5)  # The curves' evaluations: every 5 rounds.
    self.assertIn('0.9 x the lowest', rule)
    self.assertEqual(measured, {'parallel_training': [10],
                                'one_way_gt': [5], 'two_way_gt': [10]})
    # A loss: the highest tail (1-way's 0.8) / 0.8 = 1.0; reached at or
    # below it, so from round 0 by all.
    target, rule, measured, _ = validation_lib.measure(
        curves, 'eval_auc', target_share=0.8, minimize=True)
    self.assertAlmostEqual(target, 1.0)
    self.assertIn('the highest last-quarter mean', rule)
    self.assertEqual(measured['one_way_gt'], [0])
    _, _, measured, _ = validation_lib.measure(
        curves, 'eval_auc', target=0.15, minimize=True)
    self.assertEqual(measured, {'parallel_training': [0],
                                'one_way_gt': [0], 'two_way_gt': [0]})
    _, _, measured, _ = validation_lib.measure(curves, 'eval_auc',
                                               target=0.75)
    self.assertEqual(measured['parallel_training'], [None])
    with self.assertRaises(ValueError):
      validation_lib.measure(curves, 'eval_auc')

  def _record(self, measured, recommendation, resolution=0):
    return validation_lib.Validation(
        task='t', title='T', advice={'recommendation': recommendation},
        metric='m', target=0.5, target_rule='r', measured=measured,
        curves={}, machine='here', date='now', command='c',
        resolution=resolution)

  def test_winner_ties_and_agreement(self):
    result = validation_lib.outcome(self._record(
        {'parallel_training': [200, 210, 190], 'one_way_gt': [100, 140, 80],
         'two_way_gt': [90, 110, 55]}, 'one_way_gt'))
    self.assertEqual(result.winner, 'two_way_gt')
    # 1-way's mean 106.7 is within its own std (30.6) of 2-way's 85.
    self.assertEqual(result.tied, ('one_way_gt',))
    self.assertFalse(result.agrees)
    self.assertTrue(result.agrees_within_spread)
    self.assertAlmostEqual(result.mean_rounds['parallel_training'], 200.0)
    # An algorithm missing the target in a seed cannot win, however fast
    # it is in the others.
    result = validation_lib.outcome(self._record(
        {'parallel_training': [10, None], 'one_way_gt': [50, 60],
         'two_way_gt': [70, 80]}, 'parallel_training'))
    self.assertEqual(result.winner, 'one_way_gt')
    self.assertEqual(result.tied, ())
    self.assertFalse(result.agrees_within_spread)
    self.assertEqual(result.reached['parallel_training'], (1, 2))
    # One seed: no spread, but first rounds one evaluation apart are not
    # told apart.
    one_seed = {'parallel_training': [60], 'one_way_gt': [70],
                'two_way_gt': [120]}
    result = validation_lib.outcome(self._record(one_seed, 'one_way_gt'))
    self.assertEqual((result.winner, result.tied), ('parallel_training', ()))
    self.assertFalse(result.agrees_within_spread)
    result = validation_lib.outcome(self._record(one_seed, 'one_way_gt',
                                                 resolution=10))
    self.assertEqual(result.tied, ('one_way_gt',))
    self.assertTrue(result.agrees_within_spread)
    none = validation_lib.outcome(self._record(
        {a: [None] for a in validation_lib.ALGORITHMS}, 'one_way_gt'))
    self.assertIsNone(none.winner)

  def test_curve_specs(self):
    directory = temp_dirs.temp_dir(self)
    for seed in range(2):
      open(os.path.join(directory, f'pt{seed}.csv'), 'w').close()
    spec = f'parallel_training:{directory}/pt*.csv'
    with self.assertRaisesRegex(ValueError, 'no --curve for one_way_gt'):
      validation_lib.expand_curves([spec])
    curves = validation_lib.expand_curves(
        [spec, f'one_way_gt:{directory}/pt0.csv',
         f'two_way_gt:{directory}/pt1.csv'])
    self.assertLen(curves['parallel_training'], 2)
    for bad, message in (('oracle:x', 'must be one of'),
                         ('one_way_gt', 'is not ALGORITHM:GLOB'),
                         (f'one_way_gt:{directory}/none*', 'no file')):
      with self.assertRaisesRegex(ValueError, message):
        validation_lib.expand_curves([bad])


@binary_runs.runs_binaries
class AdviceValidationMainTest(absltest.TestCase):

  def _run(self, *args):
    # Output to files, not pipes, as every binary test here.
    directory = temp_dirs.temp_dir(self)
    run = preloaded_python.run_module(
        'experiments.advisor_validation.advice_validation_main', *args,
        timeout=300)
    return run.returncode, run.stderr

  def test_writes_record_and_section(self):
    directory = temp_dirs.temp_dir(self)
    advice_path, recommendation = _advice_json(directory)
    curves = os.path.join(directory, 'metrics.csv')
    # The recommended algorithm reaches 0.8 first (round 5), the next two
    # evaluations (10 rounds) later: more than the spacing, so no tie.
    others = [a for a in validation_lib.ALGORITHMS if a != recommendation]
    _combined_csv(curves, {recommendation: [0.5, 0.85, 0.9, 0.9],
                           others[0]: [0.5, 0.6, 0.7, 0.85],
                           others[1]: [0.5, 0.7, 0.7, 0.7]})
    records = os.path.join(directory, 'records')
    markdown = os.path.join(directory, 'RESULTS.md')
    returncode, stderr = self._run(
        '--task=toy', '--title=Toy task', f'--advice_json={advice_path}',
        *(f'--curve={a}:{curves}' for a in validation_lib.ALGORITHMS),
        '--metric=eval_auc', '--target=0.8', f'--records_dir={records}',
        f'--results_markdown={markdown}')
    self.assertEqual(returncode, 0, stderr[-3000:])
    with open(os.path.join(records, 'toy.json')) as f:
      record = json.load(f)
    self.assertEqual(record['measured'][recommendation], [5])
    self.assertEqual(record['measured'][others[1]], [None])
    self.assertEqual(record['advice']['recommendation'], recommendation)
    with open(markdown) as f:
      text = f.read()
    self.assertIn('<!-- BEGIN advisor_validation -->', text)
    self.assertIn('| Toy task |', text)
    self.assertIn('| agrees |', text)
    self.assertIn('names the measured winner on 1 of 1 decided tasks', text)
    # --report_only rebuilds the same rows from the record alone.
    os.remove(markdown)
    returncode, stderr = self._run('--report_only', f'--records_dir={records}',
                    f'--results_markdown={markdown}')
    self.assertEqual(returncode, 0, stderr[-3000:])
    with open(markdown) as f:
      self.assertIn('| Toy task |', f.read())


if __name__ == '__main__':
  absltest.main()
