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
"""Tests of the MovieLens dual-encoder experiment binary.

On small generated ratings files (MovieLens files may not be shipped).
"""

import csv
import gzip
import json
import os

from absl import logging
from absl.testing import absltest
import numpy as np
import tensorflow as tf

from experiments.common import advising
from experiments.common import markdown_sections
from experiments.movielens import movielens_advice
from experiments.movielens import movielens_claims
from experiments.movielens import movielens_config
from experiments.movielens import movielens_lib
from experiments.movielens import movielens_process
from experiments.movielens import movielens_records
from tests import binary_runs
from tests import movielens_testing
from tests import multi_round_testing
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.advisor import estimates
from tff_mixed.algorithms import registry
from tff_mixed.models import dual_encoder


_write_ratings = movielens_testing.write_ratings


def _run(*args, timeout=600):
  return preloaded_python.run_module('experiments.movielens.movielens_main',
                                     *args, timeout=timeout)


def _training_metrics(output_dir: str, scenario: str) -> list[dict]:
  """The runner's per-round training metrics (`client_work/train/*`)."""
  with open(os.path.join(output_dir, 'results', scenario,
                         'metrics.csv')) as f:
    return [{k: float(v) for k, v in row.items()
             if k.startswith('train/client_work/train/') and v}
            for row in csv.DictReader(f)]


class GroupedEqualsPerClientTest(absltest.TestCase):

  def test_scenarios_run_in_groups_with_the_per_client_numbers(self):
    # The experiment's wiring of groups (its dataset_fn, the broadcast
    # table and the select path); every algorithm's grouped == per-client is
    # proven in client_groups_test.
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    results = {}
    # 5 clients in groups of 2: uneven groups (3 + 2, `split_cohort`).
    for clients_per_group in (1, 2):
      config = movielens_config.Config(
          rounds=2, clients_per_round=5, client_steps=2, client_batch_size=4,
          embedding_dim=8, context_length=3, keys_per_client=8,
          eval_every=1, clients_per_group=clients_per_group)
      output_dir = os.path.join(directory, f'out{clients_per_group}')
      results[clients_per_group] = (movielens_lib.run_experiment(
          ratings, config=config,
          scenarios=[movielens_config.BASELINE, movielens_config.TWO_WAY_GT],
          output_dir=output_dir, progress=False), output_dir)
    (per_client, per_client_dir), (grouped, grouped_dir) = (results[1],
                                                            results[2])
    for a, b in zip(per_client.results, grouped.results):
      self.assertEqual(a.scenario, b.scenario)
      self.assertEqual([r['round'] for r in a.rows], [0, 1, 2])
      for row_a, row_b in zip(a.rows, b.rows):
        for key in ('recall_at_10', 'hinge_loss'):
          np.testing.assert_allclose(row_a[key], row_b[key], rtol=1e-4,
                                     err_msg=f'{a.scenario} {key}')
      # The models train: round 2 is not round 0.
      self.assertNotEqual(a.rows[0]['hinge_loss'], a.rows[-1]['hinge_loss'])
      train_a = _training_metrics(per_client_dir, a.scenario)
      train_b = _training_metrics(grouped_dir, b.scenario)
      self.assertLen(train_b, len(train_a))
      for round_a, round_b in zip(train_a, train_b):
        self.assertIn('train/client_work/train/loss', round_a)
        for key, value in round_a.items():
          np.testing.assert_allclose(value, round_b[key], rtol=1e-4,
                                     err_msg=f'{a.scenario} {key}')
      # Costs are a client's, not a group's, in both modes.
      self.assertEqual(a.costs, b.costs)


class RoundsPerCallTest(absltest.TestCase):

  def test_rounds_per_call_gives_the_numbers_of_one_round_a_call(self):
    # 10 rounds checkpointed every 2 and evaluated after the last: calls of
    # 2 rounds of the baseline (the table broadcast) and of 2-way GT
    # (federated_select), in groups (the default) and per client.
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    scenarios = [movielens_config.BASELINE, movielens_config.TWO_WAY_GT]
    for clients_per_group in (0, 1):
      config = movielens_config.Config(
          rounds=10, clients_per_round=3, client_steps=2, client_batch_size=4,
          embedding_dim=4, context_length=3, keys_per_client=8,
          eval_every=10, clients_per_group=clients_per_group)
      runs = {}
      for rounds_per_call in (1, 2):
        output_dir = os.path.join(
            directory, f'out{clients_per_group}_{rounds_per_call}')
        with multi_round_testing.chained_calls() as spy:
          result = movielens_lib.run_experiment(
              ratings, config=config, scenarios=scenarios,
              output_dir=output_dir, progress=False,
              rounds_per_call=rounds_per_call)
        runs[rounds_per_call] = (result, output_dir,
                                 [c.args[1] for c in spy.call_args_list])
      (one, one_dir, one_calls), (two, two_dir, two_calls) = runs[1], runs[2]
      self.assertEqual((one_calls, two_calls), ([], [2, 2]))
      for a, b in zip(one.results, two.results, strict=True):
        self.assertEqual([r['round'] for r in b.rows], [0, 10])
        for row_a, row_b in zip(a.rows, b.rows):
          for key in ('recall_at_10', 'hinge_loss'):
            np.testing.assert_allclose(row_b[key], row_a[key], rtol=1e-5,
                                       err_msg=f'{a.scenario} {key}')
        multi_round_testing.assert_same_metrics(
            self, *(os.path.join(d, 'results', a.scenario, 'metrics.csv')
                    for d in (one_dir, two_dir)))


class SkipMalformedAndResumeTest(absltest.TestCase):

  def test_skipped_malformed_line_and_resume(self):
    # In-process: the binary passes these through to `run_experiment`.
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'),
                             extra_line='7\tnot-a-movie\t3\t881250949')
    output_dir = os.path.join(directory, 'out')
    config = movielens_config.Config(
        rounds=1, clients_per_round=2, client_steps=1, embedding_dim=4,
        context_length=3, keys_per_client=8, eval_every=1)
    run = lambda rounds: movielens_lib.run_experiment(
        ratings, scenarios=['one_way_gt'], config=config._replace(
            rounds=rounds), output_dir=output_dir, progress=False,
        skip_malformed=True)
    first = run(1)
    # A finished run is extended by a larger `rounds`: it resumes.
    self.addCleanup(logging.set_verbosity, logging.get_verbosity())
    logging.set_verbosity(logging.INFO)
    with self.assertLogs(logging.get_absl_logger(), level='INFO') as logs:
      second = run(2)
    self.assertTrue(any('one_way_gt: resuming after round 1' in line
                        for line in logs.output), logs.output)
    self.assertEqual([r['round'] for r in first.results[0].rows], [0, 1])
    self.assertEqual([r['round'] for r in second.results[0].rows],
                     [0, 1, 2])
    self.assertEqual(second.results[0].rows[:2], first.results[0].rows)
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      self.assertEqual([int(r['round']) for r in csv.DictReader(f)],
                       [0, 1, 2])


class RecordsTest(absltest.TestCase):

  def test_records_of_other_settings_stop_the_run_before_training(self):
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    records_dir = os.path.join(directory, 'records')
    config = movielens_config.Config(
        rounds=1, clients_per_round=2, client_steps=1, embedding_dim=4,
        context_length=3, keys_per_client=8, eval_every=1)
    stale = movielens_lib.record_settings(config._replace(client_lr=0.1),
                                          'other data')
    movielens_records.write_record(records_dir, movielens_records.ScenarioRecord(
        scenario='baseline', rounds=1,
        rows=[dict(round=0, recall_at_10=0.0, hinge_loss=1.0),
              dict(round=1, recall_at_10=0.1, hinge_loss=0.9)],
        settings=stale, costs={}, mean_keys=1.0, seconds=1.0,
        seconds_complete=True, seconds_per_round=1.0, machine='m', date='d',
        command='c'))
    output_dir = os.path.join(directory, 'out')
    with self.assertRaisesRegex(ValueError, r'baseline\.json.*client_lr'):
      movielens_lib.run_experiment(
          ratings, scenarios=['two_way_gt'], config=config,
          output_dir=output_dir, records_dir=records_dir, progress=False)
    # Refused before any training: no checkpoint, no record of its own.
    self.assertFalse(os.path.exists(os.path.join(output_dir, 'checkpoints',
                                                 'two_way_gt')))
    self.assertIsNone(movielens_records.read_record(records_dir,
                                                    'two_way_gt'))


def _record(scenario, settings):
  return movielens_records.ScenarioRecord(
      scenario=scenario, rounds=1,
      rows=[dict(round=0, recall_at_10=0.0, hinge_loss=1.0),
            dict(round=1, recall_at_10=0.1, hinge_loss=0.9)],
      settings=settings, costs={}, mean_keys=1.0, seconds=1.0,
      seconds_complete=True, seconds_per_round=1.0, machine='m', date='d',
      command='c')


class ParallelTrainingLrTest(absltest.TestCase):

  def test_parallel_training_alone_takes_its_eta(self):
    config = movielens_config.Config(client_lr=0.5, parallel_training_lr=0.2)
    for scenario in movielens_config.SCENARIOS:
      want = 0.2 if scenario == 'parallel_training' else 0.5
      self.assertEqual(movielens_config.client_lr_of(config, scenario), want,
                       scenario)

  def test_its_eta_decides_only_its_own_record(self):
    records_dir = temp_dirs.temp_dir(self)
    settings = movielens_lib.record_settings(
        movielens_config.Config(parallel_training_lr=0.25), 'data')
    before = dict(settings, parallel_training_lr=settings['client_lr'])
    movielens_records.write_record(records_dir, _record('baseline', before))
    # The baseline does not depend on PT's eta: its record still counts.
    movielens_records.check_settings(records_dir, settings)
    self.assertTrue(movielens_records.same_settings(
        movielens_records.read_record(records_dir, 'baseline'), settings))
    movielens_records.write_record(records_dir,
                                   _record('parallel_training', before))
    with self.assertRaisesRegex(ValueError,
                                'parallel_training.json.*parallel_training_lr'):
      movielens_records.check_settings(records_dir, settings)

  def test_one_section_compares_records_of_other_pt_etas(self):
    settings = movielens_lib.record_settings(
        movielens_config.Config(parallel_training_lr=0.25), 'data')
    baseline = _record('baseline', dict(settings, parallel_training_lr=0.5))
    gt = _record('one_way_gt', settings)
    # Gradient transfer's numbers do not depend on PT's eta.
    movielens_claims.check_comparable([baseline, gt])
    other = _record('one_way_gt', dict(settings, client_lr=0.25))
    with self.assertRaisesRegex(ValueError, 'baseline and one_way_gt.*'
                                r'\(client_lr\)'):
      movielens_claims.check_comparable([baseline, other])

  def test_the_key_budget_decides_only_the_mixed_records(self):
    settings = movielens_lib.record_settings(movielens_config.Config(),
                                             'data')
    baseline = _record('baseline', dict(settings, keys_per_client=160))
    pt = _record('parallel_training', dict(settings, keys_per_client=1760))
    gt = _record('one_way_gt', dict(settings, keys_per_client=1760))
    # The baseline broadcasts the table: its record counts at any budget.
    movielens_claims.check_comparable([baseline, pt, gt])
    records_dir = temp_dirs.temp_dir(self)
    movielens_records.write_record(records_dir, baseline)
    movielens_records.check_settings(records_dir, pt.settings)
    # Two mixed records of different budgets do not share a section, also
    # when the baseline comes first.
    other = _record('two_way_gt', dict(settings, keys_per_client=160))
    with self.assertRaisesRegex(ValueError, 'parallel_training and '
                                r'two_way_gt.*\(keys_per_client\)'):
      movielens_claims.check_comparable([baseline, pt, gt, other])

  def test_records_from_before_take_the_clients_eta_for_pt(self):
    records_dir = temp_dirs.temp_dir(self)
    settings = movielens_lib.record_settings(movielens_config.Config(),
                                             'data')
    del settings['parallel_training_lr']
    movielens_records.write_record(records_dir,
                                   _record('parallel_training', settings))
    record = movielens_records.read_record(records_dir, 'parallel_training')
    self.assertEqual(record.settings['parallel_training_lr'],
                     settings['client_lr'])


# Tiny settings of the advice tests: a few seconds of training.
_ADVICE_FLAGS = ('--clients_per_round=3', '--client_steps=2',
                 '--client_batch_size=4', '--embedding_dim=4',
                 '--context_length=3', '--keys_per_client=8',
                 '--eval_every=1', '--central_epochs=1')


def _advice_paths(test: absltest.TestCase) -> tuple[str, str, str]:
  """`(ratings, output_dir, records_dir)` in a fresh directory."""
  directory = temp_dirs.temp_dir(test)
  return (_write_ratings(os.path.join(directory, 'u.data')),
          os.path.join(directory, 'out'), os.path.join(directory, 'records'))


class AdviceTest(absltest.TestCase):

  def test_run_advice_probes_parallel_training_with_diagnostics(self):
    ratings, output_dir, records_dir = _advice_paths(self)
    config = movielens_config.Config(
        rounds=50, clients_per_round=3, client_steps=2, client_batch_size=4,
        embedding_dim=4, context_length=3, keys_per_client=8, eval_every=1)
    advice, files = movielens_advice.run_advice(
        ratings, rounds=2, config=config, output_dir=output_dir,
        progress=False, records_dir=records_dir)
    with open(files['advice_json']) as f:
      written = json.load(f)
    self.assertEqual(written['recommendation'], advice.recommendation)
    # The spreadout draws no central batch: sigma_c^2 is 0 (to rounding),
    # 1-way GT's bound is 2-way GT's, and the advice is PT or 1-way GT.
    self.assertIn(advice.recommendation,
                  (registry.PARALLEL_TRAINING, registry.ONE_WAY_GT))
    self.assertLess(written['estimates'][estimates.SIGMA_C2]['max'], 1e-9)
    self.assertAlmostEqual(written['ratios'][registry.ONE_WAY_GT], 1.0)
    for name in (estimates.SIGMA2, estimates.G2, estimates.B2):
      self.assertGreater(written['estimates'][name]['max'], 0.0, name)
    self.assertEqual(advice.rounds, (1, 2))
    self.assertEqual((advice.settings.client_steps,
                      advice.settings.cohort_size), (2, 3))
    self.assertCountEqual(os.listdir(output_dir),
                          [advising.JSON_FILE, advising.MARKDOWN_FILE,
                           advising.PROBE_DIR])
    # The probe is the run's own PT at K = 2 (not table 4's K = 1).
    with open(os.path.join(output_dir, advising.PROBE_DIR,
                           movielens_lib.CONFIG_FILE)) as f:
      probe = json.load(f)
    self.assertEqual((probe['scenarios'], probe['rounds'],
                      probe['client_steps']), (['parallel_training'], 2, 2))
    # Also beside the records, where the scenario records do not see it.
    kept = os.path.join(records_dir, advising.PROBE_DIR)
    for kind, name in (('advice_json', advising.JSON_FILE),
                       ('advice_markdown', advising.MARKDOWN_FILE)):
      with open(files[kind]) as a, open(files[f'records_{kind}']) as b:
        self.assertEqual(a.read(), b.read())
      self.assertEqual(files[f'records_{kind}'], os.path.join(kept, name))
    self.assertEmpty(movielens_records.read_records(records_dir))


@binary_runs.runs_binaries
class MovieLensBinaryTest(absltest.TestCase):

  def test_advise_then_stop_and_then_continue(self):
    ratings, output_dir, records_dir = _advice_paths(self)

    def run(then):
      return _run(f'--ratings_file={ratings}', '--rounds=1',
                  '--scenarios=one_way_gt', f'--output_dir={output_dir}',
                  f'--records_dir={records_dir}', '--advise_rounds=2',
                  f'--advise_then={then}', *_ADVICE_FLAGS)

    stop = run('stop')
    self.assertEqual(stop.returncode, 0, stop.stderr[-3000:])
    self.assertIn('Recommendation: ', stop.stdout)
    with open(os.path.join(output_dir, advising.JSON_FILE)) as f:
      written = json.load(f)
    self.assertIn(written['recommendation'],
                  (registry.PARALLEL_TRAINING, registry.ONE_WAY_GT,
                   registry.TWO_WAY_GT))
    for name in (estimates.SIGMA2, estimates.SIGMA_C2, estimates.G2,
                 estimates.B2):
      self.assertIn(name, written['estimates'])
    # The advice, and no scenario trained after it.
    self.assertCountEqual(os.listdir(output_dir),
                          [advising.JSON_FILE, advising.MARKDOWN_FILE,
                           advising.PROBE_DIR])
    self.assertEqual(os.listdir(records_dir),
                     [advising.PROBE_DIR])
    # Continue: the finished probe is resumed (nothing left to train),
    # then the scenario runs and leaves its record.
    go_on = run('continue')
    self.assertEqual(go_on.returncode, 0, go_on.stderr[-3000:])
    self.assertIn('Recommendation: ', go_on.stdout)
    self.assertIn('one_way_gt', go_on.stdout)
    self.assertTrue(os.path.exists(os.path.join(output_dir, 'checkpoints',
                                                'one_way_gt')))
    self.assertEqual(
        movielens_records.read_record(records_dir, 'one_way_gt').rounds, 1)

  def test_records_section_over_two_invocations(self):
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    records_dir = os.path.join(directory, 'docs', 'records')
    plot = os.path.join(directory, 'docs', 'movielens.png')
    results = os.path.join(directory, 'RESULTS.md')
    for name in ('other', 'movielens', 'movielens_two_way_gt'):
      markdown_sections.write_section(results, name, f'## {name}\nold')

    def run(scenarios, output_dir, *extra):
      return _run(*extra, f'--ratings_file={ratings}', '--rounds=2',
                  '--baseline_rounds=1', f'--scenarios={scenarios}',
                  '--clients_per_round=3', '--client_steps=2',
                  '--client_batch_size=4', '--embedding_dim=8',
                  '--context_length=3', '--keys_per_client=8',
                  '--eval_every=1', f'--output_dir={output_dir}',
                  f'--records_dir={records_dir}', f'--plot={plot}',
                  f'--results_markdown={results}',
                  '--results_section=movielens_reproduction',
                  '--drop_sections=movielens,movielens_two_way_gt',
                  '--central_epochs=1', '--spreadout_lambdas=1e-3,1e-2')

    # Session 1: the baseline (a shorter horizon); session 2, on a machine
    # without session 1's outputs: 2-way GT, the baseline read back, and
    # table 4's run of 2-way GT.
    first = run('baseline', os.path.join(directory, 'out1'))
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])
    baseline_json, _ = movielens_records.paths(records_dir, 'baseline')
    with open(baseline_json) as f:
      recorded = f.read()
    # The lambda search, then the reference rows at the selected lambda.
    references = movielens_records.read_references(records_dir)
    selected = references.lambda_search.selected
    self.assertIn(selected, (1e-3, 1e-2))
    self.assertEqual(references.central.settings['spreadout_lambda'],
                     selected)
    self.assertEqual(movielens_records.read_record(
        records_dir, 'baseline').settings['spreadout_lambda'], selected)
    self.assertEqual([r['epoch'] for r in references.central.rows], [0, 1])
    self.assertIn('popularity floor: recall@10 ', first.stdout)
    reference_files = {}
    for name in references._fields:
      with open(movielens_records.reference_path(records_dir, name)) as f:
        reference_files[name] = f.read()
    with open(results) as f:
      text = f.read()
    self.assertIn('Missing (no record yet', text)
    second = run('baseline,two_way_gt', os.path.join(directory, 'out2'),
                 '--diagnostic_rounds=2')
    self.assertEqual(second.returncode, 0, second.stderr[-3000:])
    with open(baseline_json) as f:
      self.assertEqual(f.read(), recorded)  # Read back, not retrained.
    for name, text in reference_files.items():
      with open(movielens_records.reference_path(records_dir, name)) as f:
        self.assertEqual(f.read(), text, name)
    self.assertFalse(os.path.exists(os.path.join(
        directory, 'out2', 'checkpoints', 'baseline')))
    baseline = movielens_records.read_record(records_dir, 'baseline')
    two_way = movielens_records.read_record(records_dir, 'two_way_gt')
    self.assertEqual((baseline.rounds, two_way.rounds), (1, 2))
    self.assertEqual([r['round'] for r in two_way.rows], [0, 1, 2])
    self.assertTrue(two_way.seconds_complete)
    self.assertGreater(two_way.seconds, 0)
    self.assertLess(two_way.costs['down_bytes'],
                    baseline.costs['down_bytes'])
    with open(results) as f:
      text = f.read()
    # The new section replaced the superseded ones; the others stay.
    self.assertEqual(
        [line.split()[2] for line in text.splitlines()
         if line.startswith('<!-- BEGIN ')],
        ['other', 'movielens_reproduction'])
    self.assertIn('Missing (no record yet, so their claims are not '
                  'checked): PT, 1-w GT.', text)
    self.assertIn('Shorter than the 2-round horizon: baseline', text)
    self.assertIn('](docs/movielens.png)', text)
    self.assertIn('(docs/records)', text)
    self.assertIn('| popularity floor | - |', text)
    self.assertIn('| central ceiling | 1 epochs |', text)
    self.assertIn(f'| {selected:g} |', text)
    self.assertIn(f'The scenarios ran at lambda {selected:g} (the selected '
                  'one).', text)
    self.assertIn('**not reproduced**', text)
    self.assertTrue(os.path.exists(plot))
    diagnostics = movielens_records.read_record(
        os.path.join(records_dir, 'diagnostics'), 'two_way_gt')
    self.assertEqual(diagnostics.settings['client_steps'], 1)
    self.assertEqual(diagnostics.diagnostics['last_round'], 2)
    self.assertGreaterEqual(diagnostics.diagnostics['max_b2'], 1.0)
    self.assertIn(f'| 2-w GT | 1-2 | {diagnostics.diagnostics["max_g2"]:.4f}',
                  text)


  def test_two_round_smoke_run_of_every_scenario(self):
    # On a gzipped subset of users whose movie ids have gaps.
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'ratings.dat.gz'),
                             partial=True)
    with gzip.open(ratings, 'rt') as f:
      lines = f.read().split()
    movies = {line.split('::')[1] for line in lines}
    output_dir = os.path.join(directory, 'out')
    results = os.path.join(directory, 'RESULTS.md')
    run = _run(f'--ratings_file={ratings}', '--rounds=2',
               '--clients_per_round=3', '--client_steps=2',
               '--client_batch_size=4', '--embedding_dim=8',
               '--context_length=3', '--keys_per_client=8',
               '--eval_every=1', f'--output_dir={output_dir}',
               f'--results_markdown={results}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    for scenario in movielens_config.SCENARIOS:
      self.assertIn(scenario, run.stdout)
      scenario_rows = [r for r in rows if r['scenario'] == scenario]
      self.assertEqual([int(r['round']) for r in scenario_rows], [0, 1, 2])
      for r in scenario_rows:
        self.assertBetween(float(r['recall_at_10']), 0.0, 1.0)
    with open(os.path.join(output_dir, 'costs.txt')) as f:
      costs = {line.split()[0]: line.split() for line in f
               if line.split() and line.split()[0] in
               movielens_config.SCENARIOS}
    baseline_down = float(costs['baseline'][1])
    for scenario in ('parallel_training', 'one_way_gt', 'two_way_gt'):
      # 8 rows travel instead of the whole table (one per movie, + 1).
      self.assertLess(float(costs[scenario][1]), baseline_down)
      self.assertIn('less', ' '.join(costs[scenario]))
      # Client Mflop: the slice's hinge steps against the whole table's
      # spreadout on every client.
      self.assertLess(float(costs[scenario][5]),
                      float(costs['baseline'][4]))
    with open(results) as f:
      text = f.read()
    self.assertIn('MovieLens dual encoder', text)
    # One table row per rated movie, not per id up to the largest.
    self.assertIn(f'`ratings.dat.gz`: {len(lines)} ratings, '
                  f'{len(movies)} movies', text)
    self.assertTrue(os.path.exists(os.path.join(output_dir, 'recall.png')))

  def test_malformed_line_names_file_and_line(self):
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'),
                             extra_line='7\tnot-a-movie\t3\t881250949')
    run = _run(f'--ratings_file={ratings}', '--rounds=1',
               f'--output_dir={directory}/out', timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn(f'{ratings}: line 4', run.stderr)
    self.assertNotIn('Traceback', run.stderr)



def _small_data(test, **config_kwargs):
  """`(config, data, users with examples)` of a small generated ratings file
  (context length 3)."""
  ratings = _write_ratings(os.path.join(temp_dirs.temp_dir(test), 'u.data'))
  config = movielens_config.Config(context_length=3, **config_kwargs)
  data = movielens_lib.load_data(ratings, config)
  return config, data, [u for u in data.train_user_ids
                        if int(u) in data.examples]


class ClientDatasetTest(absltest.TestCase):

  def test_batches_are_those_of_shuffling_and_mapping_each_example(self):
    # The dataset shuffles the rows' positions and gathers each batch,
    # mapping `model_batch` once a batch; the oracle shuffles the client's
    # examples, maps each and then batches.
    config, data, users = _small_data(self, client_batch_size=3,
                                      client_steps=5)
    users = users[:6]
    for fedavg in (True, False):
      for fresh_shuffle in (True, False):
        dataset_fn = movielens_process.client_dataset_fn(
            data, config, fedavg=fedavg, fresh_shuffle=fresh_shuffle)
        for user in users:
          client_id = f'2|{user}'
          seed = tf.strings.to_hash_bucket_fast(
              f'{client_id}#{config.seed}', 2**31 - 1)
          want = data.train.serializable_dataset_fn(str(user)).shuffle(
              1000, seed=seed).map(dual_encoder.model_batch).batch(
                  config.client_batch_size)
          if fedavg:
            want = want.repeat().take(config.client_steps)
          got = list(dataset_fn(tf.constant(client_id)))
          want = list(want)
          self.assertLen(got, len(want))
          for g, w in zip(got, want):
            tf.nest.map_structure(np.testing.assert_array_equal, g, w)


class KeyBudgetTest(absltest.TestCase):

  def test_the_default_budget_holds_every_movie_of_a_round(self):
    config = movielens_config.Config(client_batch_size=16, client_steps=10,
                                     context_length=10)
    self.assertIsNone(config.keys_per_client)
    self.assertEqual(movielens_config.key_budget(config), 16 * 10 * 11)
    self.assertEqual(movielens_config.key_budget(
        config._replace(keys_per_client=160)), 160)
    # Records name the budget the clients got, however it was asked for.
    self.assertEqual(movielens_lib.record_settings(config, 'data')[
        'keys_per_client'], 1760)

  def test_diagnostics_records_hold_at_any_budget(self):
    # They broadcast the whole table: the budget changes none of their
    # numbers, unlike a selecting run's.
    settings = dict(movielens_lib.record_settings(
        movielens_config.Config(), 'data'), with_diagnostics=True)
    record = _record('one_way_gt', dict(settings, keys_per_client=160))
    self.assertTrue(movielens_records.same_settings(record, settings))
    del settings['with_diagnostics']
    selecting = _record('one_way_gt', dict(settings, keys_per_client=160))
    self.assertFalse(movielens_records.same_settings(selecting, settings))

  def test_n_counts_the_movies_clients_train_on(self):
    # K B = 16 examples cover every user's (at most 13): each client's round
    # holds all its movies, and with S = every training user each round
    # samples them all. The oracle counts them in the user's arrays.
    config, data, users = _small_data(self, client_batch_size=4,
                                      client_steps=4)
    want = np.mean([np.sum(np.unique(np.concatenate(
        [data.examples[int(u)][0].ravel(), data.examples[int(u)][1]])) > 0)
                    for u in users])
    n = movielens_process.mean_distinct_keys(
        data, config._replace(clients_per_round=len(users)))
    self.assertAlmostEqual(n, want)
    # One batch of one example: its context movies and its label at most.
    small = movielens_process.mean_distinct_keys(
        data, config._replace(client_batch_size=1, client_steps=1,
                              clients_per_round=len(users)))
    self.assertLessEqual(small, 4)
    self.assertLess(small, want)

  def test_records_read_back_take_the_counted_n(self):
    directory = temp_dirs.temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    records_dir = os.path.join(directory, 'records')
    config = movielens_config.Config(
        rounds=1, clients_per_round=2, client_steps=1, embedding_dim=4,
        context_length=3, eval_every=1)
    data = movielens_lib.load_data(ratings, config)
    settings = movielens_lib.record_settings(
        config, movielens_lib.data_description(ratings, data))
    costs = movielens_config.Costs('one_way_gt', 10, 20, 30.0, 3 * 1.0 * 4 *
                                   4, 50.0)._asdict()
    for scenario in ('baseline', 'one_way_gt'):
      movielens_records.write_record(records_dir, _record(scenario, settings)
                                     ._replace(costs=dict(costs)))
    result = movielens_lib.run_experiment(
        ratings, scenarios=['one_way_gt'], config=config,
        output_dir=os.path.join(directory, 'out'), records_dir=records_dir,
        progress=False)
    n = movielens_process.mean_distinct_keys(data, config)
    self.assertNotEqual(n, 1.0)
    self.assertEqual(result.results[0].mean_keys, n)
    for scenario, want in (('one_way_gt', 3 * n * 4 * 4),
                           ('baseline', 2 * data.num_movies * 4 * 4)):
      record = movielens_records.read_record(records_dir, scenario)
      self.assertEqual(record.mean_keys, n)
      self.assertAlmostEqual(record.costs['paper_comm_bytes'], want)
      # What was measured stays.
      self.assertEqual(record.costs['down_bytes'], 10)
      self.assertEqual(record.rows, _record(scenario, settings).rows)


if __name__ == '__main__':
  absltest.main()
