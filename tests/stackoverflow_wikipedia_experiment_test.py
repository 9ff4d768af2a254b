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
"""The Stack Overflow + Wikipedia binary end to end, on generated data.

A generated `Posts.xml` goes through the converter into TFF's Stack Overflow
database, read back by TFF's own loader; WikiText-style files are the
central corpus. The binary runs in a subprocess (absl flags are global).
"""

import csv
import json
import os
from unittest import mock

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from experiments.common import advising
from experiments.stackoverflow_wikipedia import central_training
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import lm_records
from experiments.stackoverflow_wikipedia import lm_runs
from experiments.stackoverflow_wikipedia import stackoverflow_wikipedia_lib
from tests import binary_runs
from tests import lm_testing
from tests import multi_round_testing
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.algorithms import registry

def _run(*args, timeout=900):
  return preloaded_python.run_module(
      'experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main',
      *args, timeout=timeout)


# A tiny model and cohort for the binary.
_TINY_ARGS = ('--clients_per_round=2', '--client_steps=2',
              '--client_batch_size=2', '--central_batch_size=4',
              '--embedding_dim=4', '--gru_units=8', '--sequence_length=20',
              '--eval_every=1', '--max_eval_sequences=20')


class GroupedEqualsPerClientTest(absltest.TestCase):

  def test_scenarios_run_in_groups_with_the_per_client_numbers(self):
    # The experiment's wiring of groups (its dataset_fn, the central data
    # and its augmenting gradient, adaptive clipping in the groups), on
    # 2-way GT; every algorithm's grouped == per-client, clipping included,
    # is proven in client_groups_test. One grouped scenario: each grouped
    # process converts the GRU's K local steps for `tf.vectorized_map`,
    # about 30 s a process on 2 cores.
    directory = temp_dirs.temp_dir(self)
    data = lm_testing.load_tiny(directory)
    config = lm_config.Config(
        rounds=2, switch_round=1, clients_per_round=5, client_steps=2,
        client_batch_size=2, central_batch_size=4,
        one_way_central_batch_size=8, embedding_dim=4, gru_units=8,
        sequence_length=20, eval_every=1)
    self.assertTrue(config.adaptive_clipping)  # The paper's, the default.
    self.assertIsNotNone(lm_runs.client_groups_for(
        lm_config.FL_ONLY, data, config._replace(clients_per_group=2)))
    results = {}
    # 5 clients in groups of 2: uneven groups (3 + 2, `split_cohort`).
    for clients_per_group, scenarios, built in (
        (1, [lm_config.TWO_WAY_GT, lm_config.FL_ONLY,
             lm_config.CENTRAL_THEN_FL],
         # FL-only's FedAvg process serves the transfer baseline too.
         [lm_config.TWO_WAY_GT, lm_config.FL_ONLY]),
        (2, [lm_config.TWO_WAY_GT], [lm_config.TWO_WAY_GT])):
      with mock.patch.object(lm_runs, 'build_process',
                             wraps=lm_runs.build_process) as build:
        results[clients_per_group] = stackoverflow_wikipedia_lib.run_experiment(
            data, config._replace(clients_per_group=clients_per_group),
            scenarios=scenarios,
            output_dir=os.path.join(directory, f'out{clients_per_group}'),
            progress=False)
      self.assertEqual([c.args[0] for c in build.call_args_list], built)
    a, b = results[1].results[0], results[2].results[0]
    self.assertEqual((a.scenario, b.scenario), (lm_config.TWO_WAY_GT,) * 2)
    self.assertEqual([r['round'] for r in b.rows], [0, 1, 2])
    for row_a, row_b in zip(a.rows, b.rows, strict=True):
      for key in lm_config.CSV_COLUMNS[2:-1]:
        np.testing.assert_allclose(row_a[key], row_b[key], rtol=1e-4,
                                   err_msg=f'{a.scenario} {key}')
    self.assertNotEqual(a.rows[0]['mixed_loss'], a.rows[-1]['mixed_loss'])


_TINY = lm_config.Config(
    rounds=2, clients_per_round=3, client_steps=2, client_batch_size=2,
    central_batch_size=4, one_way_central_batch_size=8, embedding_dim=4,
    gru_units=8, sequence_length=20, eval_every=1, client_lr=0.5)


class RoundsPerCallTest(absltest.TestCase):

  def test_rounds_per_call_gives_the_numbers_of_one_round_a_call(self):
    # 10 rounds checkpointed every 2 and evaluated after the last: FL-only
    # and 2-way GT (with its central data and adaptive clipping) in calls of
    # 2 rounds, per client (the grouped GRU's conversion costs ~30 s a
    # process; multi-round over groups is proven in multi_round_test).
    directory = temp_dirs.temp_dir(self)
    data = lm_testing.load_tiny(directory)
    config = lm_config.Config(
        rounds=10, clients_per_round=3, client_steps=2, client_batch_size=2,
        central_batch_size=4, one_way_central_batch_size=8, embedding_dim=4,
        gru_units=8, sequence_length=20, eval_every=10, clients_per_group=1)
    scenarios = [lm_config.FL_ONLY, lm_config.TWO_WAY_GT]
    runs = {}
    for rounds_per_call in (1, 2):
      with multi_round_testing.chained_calls() as spy:
        runs[rounds_per_call] = stackoverflow_wikipedia_lib.run_experiment(
            data, config, scenarios=scenarios,
            output_dir=os.path.join(directory, f'out{rounds_per_call}'),
            progress=False, rounds_per_call=rounds_per_call)
      self.assertEqual([c.args[1] for c in spy.call_args_list],
                       [2] * len(scenarios) if rounds_per_call > 1 else [])
    for a, b in zip(runs[1].results, runs[2].results, strict=True):
      self.assertEqual([r['round'] for r in b.rows], [0, 10])
      for row_a, row_b in zip(a.rows, b.rows):
        for key, value in row_a.items():
          np.testing.assert_allclose(row_b[key], value, rtol=1e-5,
                                     err_msg=f'{a.scenario} {key}')
      multi_round_testing.assert_same_metrics(self, a.metrics_path,
                                              b.metrics_path)


class OracleTest(absltest.TestCase):

  def test_an_oracle_round_is_k_clipped_steps_on_the_pooled_batches(self):
    directory = temp_dirs.temp_dir(self)
    data = lm_testing.load_tiny(directory)
    config = _TINY._replace(rounds=1)
    result = lm_runs.run_sequential(lm_config.ORACLE, data, config,
                                    os.path.join(directory, 'out'))
    # By hand: S |B_i| = 6 sequences per step, 4 of them (0.75 x 6 = 4.5,
    # rounded half to even) from the pooled Stack Overflow clients, each
    # step's gradient clipped to norm 0.2 and applied with eta.
    pool = lm_data.federated_pool(data, config)
    f, c = central_training.oracle_batch_split(3, 2, 0.75)
    self.assertEqual((f, c), (4, 2))
    inputs, targets = central_training.pooled_batches(
        central_training.round_rng(config.seed, 1),
        (pool.inputs, pool.targets),
        (data.central.inputs, data.central.targets), steps=2,
        federated_per_batch=f, central_per_batch=c)
    model = lm_runs.model_for(config)
    weights = list(model.initial_weights[0])
    for k in range(2):
      weights = [tf.constant(w) for w in weights]
      with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = model.loss(model.predict_on_batch((weights, ()), inputs[k]),
                          targets[k])
      gradients = tape.gradient(loss, weights)
      gradients = [tf.convert_to_tensor(g).numpy() for g in gradients]
      norm = np.sqrt(sum(np.sum(g**2) for g in gradients))
      scale = min(1.0, config.central_clip_norm / norm)
      weights = [w.numpy() - config.client_lr * scale * g
                 for w, g in zip(weights, gradients)]
    expected = lm_data.evaluate_all(weights, data)
    self.assertEqual([r['round'] for r in result.rows], [0, 1])
    for key, value in expected.items():
      self.assertAlmostEqual(result.rows[1][key], value, places=4, msg=key)
    self.assertNotAlmostEqual(result.rows[0]['mixed_loss'],
                              result.rows[1]['mixed_loss'], places=4)

  def test_an_interrupted_oracle_resumes_to_the_same_numbers(self):
    directory = temp_dirs.temp_dir(self)
    data = lm_testing.load_tiny(directory)
    whole = lm_runs.run_sequential(lm_config.ORACLE, data, _TINY,
                                   os.path.join(directory, 'whole'))
    parts = os.path.join(directory, 'parts')
    lm_runs.run_sequential(lm_config.ORACLE, data, _TINY._replace(rounds=1),
                           parts)
    resumed = lm_runs.run_sequential(lm_config.ORACLE, data, _TINY, parts)
    self.assertEqual(resumed.resumed_from, 1)
    self.assertEqual(whole.resumed_from, 0)
    self.assertEqual(len(whole.rows), len(resumed.rows))
    for a, b in zip(whole.rows, resumed.rows):
      for key in a:
        self.assertAlmostEqual(a[key], b[key], places=5, msg=key)
    # Another model in the same directory is refused, not mixed in.
    with self.assertRaisesRegex(ValueError, 'other settings'):
      lm_runs.run_sequential(lm_config.ORACLE, data,
                             _TINY._replace(gru_units=4), parts)


_MIXED = (registry.PARALLEL_TRAINING, registry.ONE_WAY_GT,
          registry.TWO_WAY_GT)
_ESTIMATES = ('sigma2', 'sigma_c2', 'bgd_G2', 'bgd_B2')


@binary_runs.runs_binaries
class StackOverflowWikipediaBinaryTest(absltest.TestCase):

  def test_two_round_smoke_run_of_every_scenario(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = lm_testing.convert_posts(directory)
    train_text = lm_testing.write_wikitext(
        os.path.join(directory, 'wiki.valid.tokens'), seed=1)
    eval_text = lm_testing.write_wikitext(
        os.path.join(directory, 'wiki.test.tokens'), seed=2)
    output_dir = os.path.join(directory, 'out')
    results = os.path.join(directory, 'RESULTS.md')
    run = _run(f'--cache_dir={cache_dir}', f'--central_train_text={train_text}',
               f'--central_eval_text={eval_text}', '--rounds=2',
               '--switch_round=1', '--clients_per_round=2',
               '--client_steps=2', '--client_batch_size=2',
               '--central_batch_size=4', '--one_way_central_batch_size=8',
               '--embedding_dim=4', '--gru_units=8', '--sequence_length=20',
               '--eval_every=1', '--max_eval_sequences=20',
               '--data_note=generated posts', f'--output_dir={output_dir}',
               f'--results_markdown={results}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      reader = csv.DictReader(f)
      self.assertEqual(tuple(reader.fieldnames),
                       lm_config.CSV_COLUMNS)
      rows = list(reader)
    for scenario in lm_config.SCENARIOS:
      self.assertIn(scenario, run.stdout)
      scenario_rows = [r for r in rows if r['scenario'] == scenario]
      self.assertEqual([int(r['round']) for r in scenario_rows], [0, 1, 2])
      for r in scenario_rows:
        for name in lm_config.EVAL_SETS:
          self.assertBetween(float(r[f'{name}_accuracy']), 0.0, 1.0)
      # Every scenario trains: the weights move off round 0's.
      self.assertNotEqual(scenario_rows[0]['mixed_loss'],
                          scenario_rows[-1]['mixed_loss'])
    # Transfer rows report the first corpus at the switch and at the end.
    self.assertIn('central ', run.stdout.split('central_then_fl')[1])
    with open(results) as f:
      report = f.read()
    self.assertIn('Stack Overflow + Wikipedia character LM', report)
    self.assertIn('generated posts', report)
    self.assertTrue(os.path.exists(os.path.join(output_dir, 'accuracy.png')))

  def test_records_resume_skip_and_report(self):
    directory = temp_dirs.temp_dir(self)
    data_args = lm_testing.data_args(directory)
    records_dir = os.path.join(directory, 'records')
    results = os.path.join(directory, 'RESULTS.md')
    plot = os.path.join(directory, 'docs', 'accuracy.png')
    with open(results, 'w') as f:
      f.write('# Results\n\n<!-- BEGIN stackoverflow_wikipedia_two_way_gt -->'
              '\nstale\n<!-- END stackoverflow_wikipedia_two_way_gt -->\n')
    args = [*data_args, '--rounds=2', *_TINY_ARGS,
            f'--output_dir={os.path.join(directory, "out")}',
            f'--records_dir={records_dir}', f'--plot={plot}',
            f'--results_markdown={results}', '--why_settings=Tiny.']
    run = _run(*args, '--scenarios=oracle,parallel_training',
               '--diagnostic_rounds=2')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    self.assertEqual(sorted(os.listdir(records_dir)), sorted(
        f'{n}.{e}' for n in ('oracle', 'parallel_training',
                             'parallel_training_diagnostics')
        for e in ('csv', 'json')))
    with open(results) as f:
      report = f.read()
    self.assertIn('<!-- BEGIN stackoverflow_wikipedia_reproduction -->',
                  report)
    self.assertNotIn('stale', report)
    self.assertIn('Tiny.', report)
    self.assertIn('**Missing records**', report)
    self.assertIn('(docs/accuracy.png)', report)
    self.assertTrue(os.path.exists(plot))
    # Recorded scenarios are not run again; the section is rebuilt.
    again = _run(*args, '--scenarios=oracle', '--verbose')
    self.assertEqual(again.returncode, 0, again.stderr[-3000:])
    self.assertIn('oracle: recorded in', again.stderr)
    self.assertNotIn('Scenario oracle', again.stderr)
    only = _run(f'--records_dir={records_dir}', '--report_only',
                f'--plot={plot}')
    self.assertEqual(only.returncode, 0, only.stderr[-3000:])
    self.assertIn('Oracle (pooled, central)', only.stdout)
    # Another data set's records get a section of their own after this one
    # (make results-lm-sites), which stays as it was.
    with open(results) as f:
      before = f.read()
    sites = _run(f'--records_dir={records_dir}', '--report_only',
                 f'--plot={plot}', f'--results_markdown={results}',
                 '--results_section=lm_sites', '--results_title=LM, 8 sites',
                 '--make_target=results-lm-sites', '--results_note=Note.')
    self.assertEqual(sites.returncode, 0, sites.stderr[-3000:])
    with open(results) as f:
      after = f.read()
    end = '<!-- END stackoverflow_wikipedia_reproduction -->'
    self.assertEqual(after.split(end)[0], before.split(end)[0])
    new = after.split(end)[1]
    self.assertIn('<!-- BEGIN lm_sites -->\n## LM, 8 sites\n\nNote.\n', new)
    self.assertIn('`make results-lm-sites SCENARIOS=<name>`', new)
    bad = _run(*args[:3], '--diagnostic_rounds=2', timeout=300)
    self.assertEqual(bad.returncode, 1)
    self.assertIn('error: --diagnostic_rounds needs --records_dir',
                  bad.stderr)
    self.assertNotIn('Traceback', bad.stderr)

  def test_advise_rounds_then_stop_or_continue(self):
    directory = temp_dirs.temp_dir(self)
    # `--advise_rounds`: the PT probe at the run's settings, the advice.
    args = [*lm_testing.data_args(directory), '--rounds=1', *_TINY_ARGS,
            '--client_lr=0.5', '--one_way_central_batch_size=8',
            '--advise_rounds=2']
    output_dir = os.path.join(directory, 'out')
    stop = _run(*args, '--advise_then=stop', f'--output_dir={output_dir}')
    self.assertEqual(stop.returncode, 0, stop.stderr[-3000:])
    self.assertIn('Recommendation:', stop.stdout)
    with open(os.path.join(output_dir, advising.JSON_FILE)) as f:
      advice = json.load(f)
    self.assertIn(advice['recommendation'], _MIXED)
    self.assertEqual(advice['rounds'], [1, 2])
    for name in _ESTIMATES:
      self.assertIn(name, advice['estimates'])
    # What the processes use: K, S, eta = eta_c = client_lr, w_f, w_c,
    # each algorithm's |B_c| against PT's measured one (4 against 8).
    settings = advice['settings']
    self.assertEqual((settings['client_steps'], settings['cohort_size']),
                     (2, 2))
    self.assertEqual((settings['client_learning_rate'],
                      settings['central_learning_rate']), (0.5, 0.5))
    self.assertEqual((settings['federated_weight'],
                      settings['central_weight']), (0.75, 0.25))
    self.assertAlmostEqual(
        settings['central_variance_scale'][registry.ONE_WAY_GT], 4 / 8)
    # The advice and its probe, and no scenario (no metrics.csv, no runs).
    self.assertCountEqual(os.listdir(output_dir), [
        advising.JSON_FILE, advising.MARKDOWN_FILE, advising.PROBE_DIR])
    # The probe, with the runner's checkpoints, under advice/.
    self.assertTrue(os.path.isdir(os.path.join(
        output_dir, advising.PROBE_DIR, 'checkpoints',
        advising.PROBE_SCENARIO)))
    # Continue, in the same directory: the probe resumes at its end (no
    # round trained again), the advice is given again, the scenarios run.
    records_dir = os.path.join(directory, 'records')
    go = _run(*args, '--scenarios=fl_only', f'--output_dir={output_dir}',
              f'--records_dir={records_dir}')
    self.assertEqual(go.returncode, 0, go.stderr[-3000:])
    self.assertIn('Recommendation:', go.stdout)
    self.assertContainsSubset(['checkpoints', 'results'],
                              os.listdir(output_dir))
    # The advice is kept with the records, which still read back.
    self.assertCountEqual(os.listdir(records_dir), [
        advising.PROBE_DIR, 'fl_only.csv', 'fl_only.json', 'accuracy.png'])
    self.assertCountEqual(
        os.listdir(os.path.join(records_dir, advising.PROBE_DIR)),
        [advising.JSON_FILE, advising.MARKDOWN_FILE])
    self.assertCountEqual(lm_records.read_records(records_dir), ['fl_only'])
    # Bad flag combinations: bad_inputs_test's `lm_advise_*`.

  def test_missing_data_is_a_clear_message(self):
    directory = temp_dirs.temp_dir(self)
    run = _run(f'--cache_dir={directory}', '--central_train_text=x',
               '--central_eval_text=y', timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn('error:', run.stderr)
    self.assertNotIn('Traceback', run.stderr)
    # No central corpus at all: bad_inputs_test's `lm_no_central_corpus`.


if __name__ == '__main__':
  absltest.main()
