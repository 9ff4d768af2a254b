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
"""Tests of the CelebA smile reproduction over seeds (driver and report).

The runs use small generated `celeba.sqlite` files (tests/celeba_testing.py);
the report and the claims are also checked on hand-made numbers.
"""

import csv
import json
import os
import shutil
import statistics
import tempfile
import types

from absl.testing import absltest
import numpy as np

from experiments.celeba_smile import celeba_smile_lib
from experiments.celeba_smile import reproduce_lib
from experiments.celeba_smile import reproduce_report as report
from experiments.common import records
from experiments.common import tables
from tests import binary_runs
from tests import celeba_testing
from tests import preloaded_python
from tests import temp_dirs

_TINY = dict(client_batch_size=2, client_lr=0.05, hidden_units=(4,),
             eval_every=1, progress=False)


def _fake_cache(test: absltest.TestCase) -> str:
  # 9 raw training clients: 3 composite clients of 3.
  return celeba_testing.make_fake_celeba_cache(
      temp_dirs.temp_dir(test), num_train_clients=9, num_test_clients=2,
      images_per_client=6, seed=4)


def _assert_same_rows(rows, others):
  """Equal metrics rows, NaN equal to NaN, wall-clock seconds ignored."""
  np.testing.assert_equal([list(r[:-1]) for r in rows],
                          [list(r[:-1]) for r in others])


def _row(scenario, round_num, auc, pos=0.5, neg=0.5, seconds=1.0):
  return records.MetricsRow(scenario, round_num, 0.1, 0.5, auc, 0.6, pos,
                            neg, seconds)


def _run(scenario, seed, aucs, pos=0.5, neg=0.5, seconds=10.0,
         diagnostics=None, every=10):
  """A RunRecord evaluated every `every` rounds with these AUCs (round 0
  first)."""
  rows = [_row(scenario, i * every, auc, pos, neg)
          for i, auc in enumerate(aucs)]
  return reproduce_lib.RunRecord(scenario, seed, rows, seconds, False,
                                 'fake data', diagnostics)


class ReportTest(absltest.TestCase):

  def test_stats_are_the_hand_computed_means_and_spreads(self):
    runs = [_run('oracle', 0, [0.5, 0.7, 0.8, 0.9, 0.92], pos=0.8, neg=0.9),
            _run('oracle', 1, [0.5, 0.6, 0.85, 0.88, 0.96], pos=0.7, neg=1.0,
                 seconds=30.0)]
    (stats,) = report.scenario_stats(runs, target_auc=0.85)
    self.assertEqual(stats.seeds, [0, 1])
    self.assertAlmostEqual(stats.auc.mean, 0.94)
    self.assertAlmostEqual(stats.auc.std, statistics.stdev([0.92, 0.96]))
    self.assertAlmostEqual(stats.positive_accuracy.mean, 0.75)
    self.assertAlmostEqual(stats.negative_accuracy.mean, 0.95)
    # 40 rounds: the last quarter is round 40, the one before round 30.
    self.assertAlmostEqual(stats.tail_auc.mean, 0.94)
    self.assertAlmostEqual(stats.tail_gain.mean,
                           ((0.92 - 0.9) + (0.96 - 0.88)) / 2)
    self.assertEqual(stats.rounds_to_target, [30, 20])
    self.assertEqual(stats.mean_rounds_to_target, 25)
    self.assertAlmostEqual(stats.seconds.mean, 20.0)
    self.assertAlmostEqual(stats.seconds_per_round.mean, 0.5)

  def test_rounds_to_target_not_reached(self):
    runs = [_run('fl_only', 0, [0.5, 0.6]), _run('fl_only', 1, [0.5, 0.9])]
    (stats,) = report.scenario_stats(runs, target_auc=0.8)
    self.assertEqual(stats.rounds_to_target, [None, 10])
    self.assertEqual(stats.mean_rounds_to_target, float('inf'))
    self.assertIn('10 ± 0 (1/2 seeds)', report.stats_table([stats], 0.8))
    (never,) = report.scenario_stats(runs, target_auc=0.95)
    self.assertIn('| not reached |', report.stats_table([never], 0.95))

  def _claims(self, mixed_final, fl_only_final, pt_curve, g2, target=0.85):
    diag = celeba_smile_lib.Diagnostics('parallel_training', g2, 1.3, 10, 100)
    runs, diagnostic_runs = [], []
    for seed in (0, 1):
      runs += [
          _run('fl_only', seed, [0.5, 0.6, fl_only_final]),
          _run('parallel_training', seed, [0.5, *pt_curve, mixed_final]),
          _run('one_way_gt', seed, [0.5, 0.9, mixed_final]),
          _run('two_way_gt', seed, [0.5, 0.9, mixed_final]),
          _run('oracle', seed, [0.5, 0.9, 0.96 + 0.01 * seed])]
      diagnostic_runs.append(_run('parallel_training', seed, [0.5],
                                  diagnostics=diag._replace(max_g2=g2 - seed)))
    stats = report.scenario_stats(runs, target_auc=target)
    return {c.claim: c for c in report.claims(
        stats, report.diagnostic_stats(diagnostic_runs), target)}

  def test_claims_reproduced(self):
    found = self._claims(mixed_final=0.96, fl_only_final=0.6, pt_curve=[0.7],
                         g2=40.0)
    self.assertLen(found, 5)
    for claim in found.values():
      self.assertTrue(claim.reproduced, claim)
    self.assertIn('0.965 ± 0.007', found[
        'The oracle reaches an eval AUC above 0.95'].measured)
    self.assertIn('Parallel Training 20 ± 0, 1-way GT 10 ± 0', found[
        'Gradient transfer (1-w and 2-w) converges faster than PT'].measured)
    self.assertIn('40 (per seed 39.5 ± 0.707)',
                  found["PT's max G~^2 is large (>= 1)"].measured)

  def test_claims_not_reproduced(self):
    # Mixed 0.025 and 0.035 below the oracle, FL-only on it, PT as fast as
    # GT, a small G.
    found = self._claims(mixed_final=0.935, fl_only_final=0.965,
                         pt_curve=[0.9], g2=0.5)
    self.assertLen(found, 5)
    for name, claim in found.items():
      if name != 'The oracle reaches an eval AUC above 0.95':
        self.assertFalse(claim.reproduced, claim)
    self.assertIn('Parallel Training 0.030 ± 0.007', found[
        "The mixed algorithms reach the oracle's AUC"].measured)

  def test_convergence_undecided_when_no_one_reaches_the_target(self):
    found = self._claims(mixed_final=0.96, fl_only_final=0.6, pt_curve=[0.7],
                         g2=2.0, target=0.99)
    claim = found['Gradient transfer (1-w and 2-w) converges faster than PT']
    self.assertFalse(claim.reproduced)
    self.assertIn('undecided', claim.measured)

  def test_claims_of_scenarios_not_run_are_left_out(self):
    runs = [_run('fl_only', 0, [0.5, 0.6]), _run('oracle', 0, [0.5, 0.9])]
    found = report.claims(report.scenario_stats(runs, 0.85), [], 0.85)
    self.assertEqual([c.claim for c in found],
                     ['The oracle reaches an eval AUC above 0.95',
                      "FL-only does not reach the oracle's AUC"])


class _FakeRunFn:
  """Stands in for run_experiment: records the calls, writes a metrics CSV."""

  def __init__(self):
    self.calls = []

  def __call__(self, *, scenarios, seed, output_dir, with_diagnostics,
               **kwargs):
    self.calls.append(dict(kwargs, scenarios=scenarios, seed=seed,
                           with_diagnostics=with_diagnostics))
    rows = [_row(scenarios[0], t, 0.5 + 0.01 * t)
            for t in range(kwargs['rounds'] + 1)]
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, 'metrics.csv')
    tables.write_metrics_csv(path, rows)
    diagnostics = ([celeba_smile_lib.Diagnostics(scenarios[0], 3.0, 1.5, 1,
                                                 kwargs['rounds'])]
                   if with_diagnostics else [])
    # Only what reproduce_lib.run_one reads of a ComparisonResult.
    comparison = types.SimpleNamespace(
        summaries=[types.SimpleNamespace(seconds=12.0)], rows=rows,
        files={'metrics': path})
    return celeba_smile_lib.ExperimentResult(comparison, diagnostics, 'fake')


class DriverPlumbingTest(absltest.TestCase):

  def test_paper_settings_reach_every_run(self):
    fake = _FakeRunFn()
    reproduction = reproduce_lib.reproduce(
        ['fl_only', 'parallel_training', 'one_way_gt', 'two_way_gt'], [3, 4],
        output_dir=temp_dirs.temp_dir(self), clients_per_round=100,
        diagnostic_rounds=4, run_fn=fake, rounds=6, client_steps=2,
        count_clients_fn=lambda seed, **_: 40 + seed)
    self.assertEqual(reproduction.clients_per_round, {3: 43, 4: 44})
    self.assertLen(reproduction.runs, 8)
    self.assertLen(reproduction.diagnostic_runs, 6)
    by_call = {(c['scenarios'][0], c['seed'], c['with_diagnostics']): c
               for c in fake.calls}
    self.assertLen(by_call, 14)
    for (scenario, seed, diagnose), call in by_call.items():
      self.assertEqual(call['clients_per_round'], 40 + seed)
      self.assertEqual(call['central_batch_size'], {
          'parallel_training': 500, 'one_way_gt': 1000,
          'two_way_gt': 500}.get(scenario))
      self.assertEqual((call['rounds'], call['client_steps']),
                       (4, 1) if diagnose else (6, 2))
    (pt,) = [d for d in report.diagnostic_stats(reproduction.diagnostic_runs)
             if d.scenario == 'parallel_training']
    self.assertEqual((pt.max_g2, pt.max_b2, pt.last_round), (3.0, 1.5, 4))

  def test_bad_seeds(self):
    with self.assertRaisesRegex(ValueError, 'distinct'):
      reproduce_lib.reproduce(['oracle'], [1, 1], output_dir=temp_dirs.temp_dir(self),
                              run_fn=_FakeRunFn(),
                              count_clients_fn=lambda seed, **_: 5)


class RunKeyTest(absltest.TestCase):

  def test_rounds_per_call_does_not_decide_whether_a_run_is_reused(self):
    # Several rounds a TFF call give the same numbers: a finished run is
    # read back whatever the value; a setting that changes numbers is not.
    kwargs = dict(cache_dir=temp_dirs.temp_dir(self), rounds=10,
                  client_lr=0.05, output_dir='a', rounds_per_call=1)
    key = reproduce_lib.run_key('fl_only', 0, False, kwargs)
    self.assertEqual(reproduce_lib.run_key(
        'fl_only', 0, False, dict(kwargs, rounds_per_call=5,
                                  output_dir='b')), key)
    self.assertNotEqual(reproduce_lib.run_key(
        'fl_only', 0, False, dict(kwargs, client_lr=0.1)), key)


class ReproduceRunTest(absltest.TestCase):
  """2 seeds x 2 scenarios x 2 rounds on a fake cache, then a rerun."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.cache_dir = celeba_testing.make_fake_celeba_cache(
        os.path.join(cls.root, 'cache'), num_train_clients=9,
        num_test_clients=2, images_per_client=6, seed=4)
    cls.output_dir = os.path.join(cls.root, 'out')
    cls.kwargs = dict(cache_dir=cls.cache_dir, rounds=2, diagnostic_rounds=0,
                      output_dir=cls.output_dir, clients_per_round=100,
                      **_TINY)
    cls.reproduction = reproduce_lib.reproduce(
        ['fl_only', 'oracle'], [0, 1], **cls.kwargs)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def _csv_rows(self, scenario, seed):
    path = os.path.join(self.output_dir, 'runs', scenario, f'seed{seed}',
                        'metrics.csv')
    with open(path) as f:
      return list(csv.DictReader(f))

  def test_stats_match_the_metrics_csv(self):
    # All 3 composite clients each round (S capped at the clients).
    self.assertEqual(self.reproduction.clients_per_round, {0: 3, 1: 3})
    target = 0.6
    stats = {s.scenario: s
             for s in report.scenario_stats(self.reproduction.runs, target)}
    self.assertEqual(list(stats), ['fl_only', 'oracle'])
    for scenario, s in stats.items():
      finals = [self._csv_rows(scenario, seed)[-1] for seed in (0, 1)]
      for field, got in (('eval_auc', s.auc),
                         ('positive_accuracy', s.positive_accuracy),
                         ('negative_accuracy', s.negative_accuracy)):
        values = [float(r[field]) for r in finals]
        self.assertAlmostEqual(got.mean, statistics.mean(values), places=5)
        self.assertAlmostEqual(got.std, statistics.stdev(values), places=5)
      for seed, reached in zip((0, 1), s.rounds_to_target):
        rows = self._csv_rows(scenario, seed)
        self.assertEqual([int(r['round']) for r in rows], [0, 1, 2])
        want = next((int(r['round']) for r in rows
                     if float(r['eval_auc']) >= target), None)
        self.assertEqual(reached, want)

  def test_rerun_reads_finished_runs_back(self):
    def must_not_run(**_):
      raise AssertionError('a finished run was run again')

    again = reproduce_lib.reproduce(['fl_only', 'oracle'], [0, 1],
                                    run_fn=must_not_run, **self.kwargs)
    self.assertEqual(len(again.runs), 4)
    for run, first in zip(again.runs, self.reproduction.runs):
      self.assertEqual(run._replace(rows=None), first._replace(rows=None))
      np.testing.assert_equal(run.rows, first.rows)  # Seconds too.

  def test_lost_record_or_more_rounds_run_again(self):
    calls = []

    def spy(**kwargs):
      calls.append((kwargs['scenarios'][0], kwargs['seed']))
      return celeba_smile_lib.run_experiment(**kwargs)

    output_dir = os.path.join(self.root, 'copy')
    shutil.copytree(self.output_dir, output_dir)
    os.remove(os.path.join(output_dir, 'runs', 'oracle', 'seed1',
                           reproduce_lib.RUN_FILE))
    kwargs = dict(self.kwargs, output_dir=output_dir)
    again = reproduce_lib.reproduce(['fl_only', 'oracle'], [0, 1],
                                    run_fn=spy, **kwargs)
    self.assertEqual(calls, [('oracle', 1)])
    # Resumed from the final checkpoint: the same numbers.
    _assert_same_rows(again.runs[3].rows, self.reproduction.runs[3].rows)
    self.assertTrue(again.runs[3].resumed)
    with open(os.path.join(output_dir, 'runs', 'fl_only', 'seed0',
                           reproduce_lib.RUN_FILE)) as f:
      self.assertEqual(json.load(f)['key']['rounds'], 2)
    # More rounds: the run continues from its last checkpoint.
    calls.clear()
    (longer,) = reproduce_lib.reproduce(['fl_only'], [0], run_fn=spy,
                                        **dict(kwargs, rounds=3)).runs
    self.assertEqual(calls, [('fl_only', 0)])
    self.assertEqual([r.round for r in longer.rows], [0, 1, 2, 3])
    self.assertTrue(longer.resumed)
    _assert_same_rows(longer.rows[:3], again.runs[0].rows)


def _run_binary(*args, timeout=600):
  return preloaded_python.run_module(
      'experiments.celeba_smile.reproduce_main', *args, timeout=timeout)


@binary_runs.runs_binaries
class BinaryTest(absltest.TestCase):

  def test_writes_the_section_and_the_plot(self):
    output_dir = temp_dirs.temp_dir(self)
    results = os.path.join(output_dir, 'RESULTS.md')
    with open(results, 'w') as f:
      f.write('# Results\n\n<!-- BEGIN other -->\nkept\n<!-- END other -->\n')
    run = _run_binary(
        f'--cache_dir={_fake_cache(self)}', '--seeds=0,1',
        '--scenarios=parallel_training,oracle', '--rounds=1',
        '--diagnostic_rounds=1', '--hidden_units=4', '--target_auc=0.5',
        f'--output_dir={output_dir}', f'--results_markdown={results}',
        '--data_note=fake test data')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(results) as f:
      section = f.read()
    self.assertIn('kept', section)
    self.assertIn(f'<!-- BEGIN {report.RESULTS_SECTION} -->', section)
    self.assertIn('fake test data', section)
    self.assertIn('seeds [0, 1]', section)
    self.assertIn('![Eval AUC over seeds](auc_over_seeds.png)', section)
    self.assertIn('| Parallel Training | 1-1 |', section)  # Table 4 row.
    self.assertIn('B~^2 = 1 + |a - b|^2 / |a + b|^2', section)
    self.assertIn("PT's max G~^2 is large", section)
    self.assertGreater(os.path.getsize(
        os.path.join(output_dir, report.PLOT_FILE)), 1000)

  def test_seed_instead_of_seeds_is_a_clear_message(self):
    run = _run_binary('--seed=3', f'--output_dir={temp_dirs.temp_dir(self)}',
                      timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn('error: This binary takes --seeds', run.stderr)
    self.assertNotIn('Traceback', run.stderr)


if __name__ == '__main__':
  absltest.main()
