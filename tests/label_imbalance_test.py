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
"""Tests of the digits label-imbalance task, its evaluation and comparison."""

import csv
import json
import math
import os
from unittest import mock

from absl import flags
from absl.testing import absltest
from absl.testing import flagsaver
from absl.testing import parameterized
import numpy as np
from sklearn import datasets as sk_datasets
import tensorflow_federated as tff

from experiments.common import advising
from experiments.common import comparison
from experiments.common import scenarios as scenarios_lib
from experiments.common import tables
from experiments.label_imbalance import label_imbalance_lib
from experiments.label_imbalance import label_imbalance_main
from experiments.label_imbalance import train_lib
from tff_mixed.algorithms import registry
from tff_mixed.models import dense
from tff_mixed.tasks import digits_label_imbalance as task_lib
from tff_mixed.training import run_lock
from tests import multi_round_testing
from tests import temp_dirs

_NUM_CLIENTS = 12
_DIGITS = sk_datasets.load_digits().target


class BuildTaskTest(parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.task = task_lib.build_task(num_clients=_NUM_CLIENTS,
                                   client_batch_size=4, seed=3)

  def test_clients_hold_only_positive_training_examples(self):
    task = self.task
    self.assertLen(task.client_datasets, _NUM_CLIENTS)
    for dataset, indices, n in zip(task.client_datasets, task.client_indices,
                                   task.num_client_examples):
      labels = np.concatenate([y.numpy() for _, y in dataset])
      self.assertLen(labels, n)
      self.assertLen(indices, n)
      np.testing.assert_array_equal(labels, 1.0)
      self.assertTrue(np.isin(_DIGITS[indices], task.positive_digits).all())

  def test_clients_partition_the_positives_by_digit(self):
    task = self.task
    all_indices = np.concatenate(task.client_indices)
    self.assertLen(np.unique(all_indices), len(all_indices))  # Disjoint.
    train = np.setdiff1d(np.arange(len(_DIGITS)), task.eval_indices)
    positives = train[np.isin(_DIGITS[train], task.positive_digits)]
    np.testing.assert_array_equal(np.sort(all_indices), positives)
    # Contiguous shards of the digit-sorted positives: at most two digits each.
    for indices in task.client_indices:
      self.assertLessEqual(len(np.unique(_DIGITS[indices])), 2)

  def test_central_data_are_all_negative_training_examples(self):
    task = self.task
    x, y = task.central_data
    np.testing.assert_array_equal(y, 0.0)
    self.assertFalse(
        np.isin(_DIGITS[task.central_indices], task.positive_digits).any())
    train = np.setdiff1d(np.arange(len(_DIGITS)), task.eval_indices)
    negatives = train[~np.isin(_DIGITS[train], task.positive_digits)]
    np.testing.assert_array_equal(task.central_indices, negatives)
    self.assertEqual(x.shape, (len(negatives), task_lib.NUM_FEATURES))
    self.assertEqual(x.dtype, np.float32)
    self.assertEqual(y.shape, (len(negatives), 1))
    self.assertBetween(float(x.min()), 0.0, 1.0)
    self.assertBetween(float(x.max()), 0.0, 1.0)

  def test_eval_holds_both_labels_and_no_training_example(self):
    task = self.task
    x, y = task.eval_data
    self.assertLen(x, len(task.eval_indices))
    self.assertBetween(float(y.mean()), 0.4, 0.6)
    train = np.concatenate([*task.client_indices, task.central_indices])
    self.assertEmpty(np.intersect1d(train, task.eval_indices))
    self.assertLen(train, len(_DIGITS) - len(task.eval_indices))
    self.assertEqual(len(task.eval_indices), math.ceil(0.25 * len(_DIGITS)))

  def test_oracle_clients_hold_all_training_examples(self):
    task = self.task
    self.assertLen(task.oracle_client_datasets, _NUM_CLIENTS)
    all_indices = np.sort(np.concatenate(task.oracle_client_indices))
    train = np.concatenate([*task.client_indices, task.central_indices])
    np.testing.assert_array_equal(all_indices, np.sort(train))
    for positives, indices in zip(task.client_indices,
                                  task.oracle_client_indices):
      self.assertTrue(np.isin(positives, indices).all())
    labels = np.concatenate(
        [y.numpy() for _, y in task.oracle_client_datasets[0]])
    self.assertEqual(set(labels.ravel()), {0.0, 1.0})
    self.assertEqual(sum(task.num_oracle_client_examples), len(train))

  def test_datasets_match_the_model_input_spec(self):
    model = dense.build_binary_classifier(task_lib.NUM_FEATURES)
    x_spec, y_spec = self.task.client_datasets[0].element_spec
    self.assertTrue(model.input_spec[0].is_compatible_with(x_spec))
    self.assertTrue(model.input_spec[1].is_compatible_with(y_spec))
    x, _ = next(iter(self.task.client_datasets[0]))
    self.assertEqual(x.shape[0], 4)

  def test_same_seed_same_task_other_seed_other_split(self):
    again = task_lib.build_task(num_clients=_NUM_CLIENTS,
                                client_batch_size=4, seed=3)
    np.testing.assert_array_equal(again.eval_indices, self.task.eval_indices)
    for a, b in zip(again.client_indices, self.task.client_indices):
      np.testing.assert_array_equal(a, b)
    first_batch = lambda t: next(iter(t.client_datasets[5]))[0].numpy()
    np.testing.assert_array_equal(first_batch(again), first_batch(self.task))
    other = task_lib.build_task(num_clients=_NUM_CLIENTS,
                                client_batch_size=4, seed=4)
    self.assertFalse(
        np.array_equal(other.eval_indices, self.task.eval_indices))

  @parameterized.named_parameters(
      ('zero_clients', dict(num_clients=0), ValueError, 'num_clients'),
      ('too_many_clients', dict(num_clients=10_000), ValueError,
       'num_clients'),
      ('bool_clients', dict(num_clients=True), TypeError, 'num_clients'),
      ('zero_batch', dict(client_batch_size=0), ValueError,
       'client_batch_size'),
      ('float_batch', dict(client_batch_size=2.0), TypeError,
       'client_batch_size'),
      ('negative_seed', dict(seed=-1), ValueError, 'seed'),
      ('eval_fraction_one', dict(eval_fraction=1.0), ValueError,
       'eval_fraction'),
      ('no_positive_digits', dict(positive_digits=()), ValueError,
       'positive_digits'),
      ('all_digits_positive', dict(positive_digits=range(10)), ValueError,
       'positive_digits'),
      ('digit_out_of_range', dict(positive_digits=(3, 10)), ValueError,
       'positive_digits'),
      ('repeated_digit', dict(positive_digits=(3, 3)), ValueError,
       'positive_digits'),
  )
  def test_bad_arguments_raise_naming_the_argument(self, kwargs, error,
                                                   name):
    with self.assertRaisesRegex(error, f'`{name}`'):
      task_lib.build_task(**kwargs)


class EvaluateTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    # Logistic regression with logit = x0 - x1 + 0.
    self.model = dense.build_binary_classifier(2, hidden_units=())
    self.weights = tff.learning.models.ModelWeights(
        trainable=(np.array([[1.0], [-1.0]], np.float32),
                   np.zeros([1], np.float32)),
        non_trainable=())

  def test_matches_hand_computed_metrics(self):
    x = np.array([[2, 0], [0, 1], [1, 1], [0, 3]], np.float32)
    y = np.array([[1], [0], [1], [1]], np.float32)
    # Logits 2, -1, 0, -3. Logit 0 is not > 0, so example 2 is called
    # negative: correct are examples 0 and 1.
    metrics = task_lib.evaluate(self.model, self.weights, (x, y))
    self.assertAlmostEqual(metrics.accuracy, 0.5)
    self.assertAlmostEqual(metrics.positive_accuracy, 1 / 3)
    self.assertAlmostEqual(metrics.negative_accuracy, 1.0)
    # Positive logits {2, 0, -3} against the negative's -1: 2 of 3 pairs
    # ranked right.
    self.assertAlmostEqual(metrics.auc, 2 / 3)
    softplus = lambda z: math.log1p(math.exp(z))
    expected_loss = (softplus(-2) + softplus(-1) + softplus(0)
                     + softplus(3)) / 4
    self.assertAlmostEqual(metrics.loss, expected_loss, places=5)
    self.assertEqual(metrics.num_examples, 4)

  def test_accepts_weight_pair_and_flat_labels(self):
    x = np.array([[2, 0], [0, 1]], np.float32)
    y = np.array([1, 0], np.float32)
    pair = (self.weights.trainable, self.weights.non_trainable)
    metrics = task_lib.evaluate(self.model, pair, (x, y))
    self.assertEqual(metrics.accuracy, 1.0)
    self.assertEqual(metrics.auc, 1.0)

  def test_single_label_gives_nan_auc_and_nan_other_label_accuracy(self):
    x = np.array([[2, 0], [0, 1]], np.float32)
    y = np.ones([2, 1], np.float32)
    metrics = task_lib.evaluate(self.model, self.weights, (x, y))
    self.assertTrue(math.isnan(metrics.auc))
    self.assertTrue(math.isnan(metrics.negative_accuracy))
    self.assertAlmostEqual(metrics.positive_accuracy, 0.5)

  def test_rejects_mismatched_data(self):
    with self.assertRaisesRegex(ValueError, '`eval_data`'):
      task_lib.evaluate(self.model, self.weights,
                        (np.zeros([3, 2], np.float32),
                         np.zeros([2, 1], np.float32)))


class RunComparisonTest(parameterized.TestCase):

  def test_smoke_writes_metrics_plot_and_table(self):
    output_dir = temp_dirs.temp_dir(self)
    scenarios = [scenarios_lib.FL_ONLY, scenarios_lib.TWO_WAY_GT,
                 scenarios_lib.EXAMPLE_TRANSFER]
    result = label_imbalance_lib.run_comparison(
        scenarios=scenarios, rounds=3, clients_per_round=2, client_steps=2,
        client_batch_size=4, client_lr=0.1, num_clients=6, eval_every=2,
        seed=1, output_dir=output_dir, progress=False)

    with open(result.files['metrics']) as f:
      reader = csv.DictReader(f)
      self.assertEqual(tuple(reader.fieldnames),
                       tables.CSV_COLUMNS)
      rows = list(reader)
    # Evaluated after rounds 0, 2 (eval_every) and 3 (the last).
    self.assertEqual([(r['scenario'], int(r['round'])) for r in rows],
                     [(s, n) for s in scenarios for n in (0, 2, 3)])
    for row in rows:
      for column in ('eval_accuracy', 'eval_auc', 'positive_accuracy',
                     'negative_accuracy'):
        self.assertBetween(float(row[column]), 0.0, 1.0)
      if int(row['round']) > 0:
        self.assertTrue(math.isfinite(float(row['train_loss'])))
        self.assertGreater(float(row['seconds']), 0.0)

    with open(result.files['plot'], 'rb') as f:
      self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')
    with open(result.files['table']) as f:
      self.assertEqual(f.read(), result.table)
    for scenario in scenarios:
      self.assertIn(scenario, result.table)
    self.assertEqual([s.scenario for s in result.summaries], scenarios)
    for summary in result.summaries:
      # The last quarter of 3 rounds holds only the final evaluation.
      self.assertEqual(summary.tail_auc, summary.final.auc)
    # FL only never sees a negative, so it cannot learn to predict one.
    self.assertLess(result.summaries[0].final.negative_accuracy, 0.5)
    # Atomic writes leave no temporary files behind; each scenario ran in
    # the runner's layout; the comparison held the directory (its lock
    # file, released).
    self.assertCountEqual(
        os.listdir(output_dir),
        [comparison.METRICS_FILE, comparison.PLOT_FILE,
         comparison.TABLE_FILE, comparison.CONFIG_FILE,
         'checkpoints', 'results', 'logdir', run_lock.LOCK_FILE])

  @parameterized.named_parameters(
      ('zero_rounds', dict(rounds=0), ValueError, 'rounds'),
      ('unknown_scenario', dict(scenarios=['fedprox']), ValueError,
       'scenarios'),
      ('scenario_string', dict(scenarios='oracle'), TypeError, 'scenarios'),
      ('cohort_too_large', dict(clients_per_round=7), ValueError,
       'clients_per_round'),
      ('zero_learning_rate', dict(client_lr=0.0), ValueError, 'client_lr'),
      ('target_auc_above_one', dict(target_auc=1.5), ValueError,
       'target_auc'),
      ('zero_central_batch', dict(central_batch_size=0), ValueError,
       'central_batch_size'),
  )
  def test_bad_arguments_raise_naming_the_argument(self, overrides, error,
                                                   name):
    kwargs = dict(rounds=1, clients_per_round=2, client_steps=1,
                  client_batch_size=4, client_lr=0.1, num_clients=6,
                  output_dir=temp_dirs.temp_dir(self))
    kwargs.update(overrides)
    with self.assertRaisesRegex(error, f'`{name}`'):
      label_imbalance_lib.run_comparison(**kwargs)

  def test_client_groups_give_the_per_client_metrics(self):
    # Five clients a round in groups of 2, 2 and 1 (uneven), against one
    # client per CLIENTS member (TFF's FedAvg for the baselines).
    scenarios = [scenarios_lib.FL_ONLY, scenarios_lib.ORACLE,
                 scenarios_lib.EXAMPLE_TRANSFER, scenarios_lib.TWO_WAY_GT]
    kwargs = dict(scenarios=scenarios, rounds=2, clients_per_round=5,
                  client_steps=3, client_batch_size=4, client_lr=0.1,
                  num_clients=8, seed=2, progress=False)
    per_client, grouped = (
        label_imbalance_lib.run_comparison(
            clients_per_group=n, output_dir=temp_dirs.temp_dir(self), **kwargs)
        for n in (1, 2))
    self.assertEqual(grouped.config['clients_per_group'], 2)
    self.assertLen(grouped.rows, len(per_client.rows))
    for want, got in zip(per_client.rows, grouped.rows):
      self.assertEqual(got[:2], want[:2])
      np.testing.assert_allclose(
          got[2:-1], want[2:-1], rtol=1e-4, atol=1e-6,
          err_msg=f'{want.scenario} round {want.round}')

  def test_rounds_per_call_gives_the_numbers_of_one_round_a_call(self):
    # 10 rounds checkpointed every 2 and evaluated after the last: calls of
    # 2 rounds, per client (TFF's FedAvg, datasets built in the worker) and
    # in groups.
    scenarios = [scenarios_lib.FL_ONLY, scenarios_lib.TWO_WAY_GT]
    for clients_per_group in (1, 2):
      kwargs = dict(scenarios=scenarios, rounds=10, eval_every=10,
                    clients_per_round=3, client_steps=2, client_batch_size=4,
                    client_lr=0.1, num_clients=6, seed=1, progress=False,
                    clients_per_group=clients_per_group)
      one = label_imbalance_lib.run_comparison(
          output_dir=temp_dirs.temp_dir(self), **kwargs)
      with multi_round_testing.chained_calls() as spy:
        chained = label_imbalance_lib.run_comparison(
            output_dir=temp_dirs.temp_dir(self), rounds_per_call=2, **kwargs)
      self.assertEqual([c.args[1] for c in spy.call_args_list],
                       [2] * len(scenarios))
      self.assertLen(chained.rows, len(one.rows))
      for want, got in zip(one.rows, chained.rows):
        self.assertEqual(got[:2], want[:2])
        np.testing.assert_allclose(got[2:-1], want[2:-1], rtol=1e-5,
                                   err_msg=f'{want.scenario} {want.round}')
      for want, got in zip(one.summaries, chained.summaries):
        multi_round_testing.assert_same_metrics(self, want.metrics_path,
                                                got.metrics_path)

  def test_adaptive_and_fixed_dp_train_in_groups(self):
    # tff.learning.dp_aggregator (adaptive clipping, zeroing of large
    # updates) and a fixed clip both run in groups: each group clips and
    # zeroes its members' updates (tff_mixed.simulation.group_aggregation).
    common = dict(scenario=scenarios_lib.TWO_WAY_GT, total_rounds=1,
                  clients_per_round=4, client_steps=1, num_clients=6,
                  dp_noise_multiplier=0.1, clients_per_group=2,
                  progress=False)
    for name, clip in (('adaptive', 0.0), ('fixed', 1.0)):
      with mock.patch.object(train_lib.comparison, 'scenario_process',
                             wraps=comparison.scenario_process) as built:
        result = train_lib.train(root_output_dir=temp_dirs.temp_dir(self),
                                 experiment_name=name, dp_clip_norm=clip,
                                 **common)
      self.assertEqual(built.call_args.kwargs['clients_per_group'], 2, name)
      self.assertEqual([h['round_num'] for h in result.history], [1])
    self.assertEqual(
        train_lib.run_hparams(scenario=scenarios_lib.TWO_WAY_GT,
                              clients_per_group=2)['clients_per_group'], 2)

  def test_main_rejects_extra_arguments(self):
    with self.assertRaisesRegex(Exception, 'Unexpected arguments: extra'):
      label_imbalance_main.main(['label_imbalance_main', 'extra'])


class AdviceTest(absltest.TestCase):
  """`--advise_rounds`: the probe run, the advice files, continue or stop."""

  def test_run_advice_writes_the_advice_beside_its_probe(self):
    output_dir = temp_dirs.temp_dir(self)
    advice, files = label_imbalance_lib.run_advice(
        rounds=3, clients_per_round=2, client_steps=2, client_batch_size=4,
        client_lr=0.1, num_clients=6, seed=1, output_dir=output_dir,
        progress=False)
    self.assertIn(advice.recommendation,
                  (registry.PARALLEL_TRAINING, registry.ONE_WAY_GT,
                   registry.TWO_WAY_GT))
    self.assertEqual(advice.rounds, (1, 2, 3))
    self.assertEqual(advice.settings.client_steps, 2)
    self.assertEqual(advice.settings.cohort_size, 2)
    with open(files['advice_json']) as f:
      self.assertEqual(json.load(f)['recommendation'], advice.recommendation)
    with open(files['advice_markdown']) as f:
      self.assertIn(advice.to_text(), f.read())
    # The probe keeps the runner's layout under advice/; atomic writes
    # leave nothing else.
    self.assertCountEqual(os.listdir(output_dir),
                          [advising.JSON_FILE, advising.MARKDOWN_FILE,
                           advising.PROBE_DIR])
    self.assertCountEqual(
        os.listdir(os.path.join(output_dir, advising.PROBE_DIR)),
        ['checkpoints', 'results', 'logdir'])

  def test_main_stops_after_the_advice(self):
    output_dir = temp_dirs.temp_dir(self)
    with flagsaver.flagsaver():
      flags.FLAGS([
          'label_imbalance_main', '--advise_rounds=2', '--advise_then=stop',
          f'--output_dir={output_dir}', '--num_clients=6',
          '--clients_per_round=2', '--client_steps=1',
          '--client_batch_size=4'])
      label_imbalance_main.main(['label_imbalance_main'])
    # The advice, and no comparison.
    self.assertCountEqual(os.listdir(output_dir),
                          [advising.JSON_FILE, advising.MARKDOWN_FILE,
                           advising.PROBE_DIR])


if __name__ == '__main__':
  absltest.main()
