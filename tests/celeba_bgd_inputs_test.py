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
"""Table 4's B~^2 on CelebA: the identity, the sign, standardized inputs."""

import os

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from experiments.celeba_smile import bgd_inputs_lib
from experiments.celeba_smile import celeba_smile_lib
from experiments.common import bgd_diagnostics
from tests import temp_dirs
from tff_mixed.core import round_estimates
from tff_mixed.models import dense
from tff_mixed.training import runner


def _estimates(g_f, g_c):
  g2, b2 = round_estimates.bgd_estimates(
      (tf.constant(g_f, tf.float32),), (tf.constant(g_c, tf.float32),),
      0.5, 0.5)
  return float(g2), float(b2)


def _gradient(model, weights, x, label):
  weights = tuple(tf.constant(w) for w in weights)
  with tf.GradientTape() as tape:
    tape.watch(weights)
    loss = model.loss(model.predict_on_batch((weights, ()), x),
                      tf.fill([x.shape[0], 1], label))
  return np.concatenate([g.numpy().ravel()
                         for g in tape.gradient(loss, weights)])


class IdentityTest(absltest.TestCase):

  def test_estimates_at_half_weights_are_the_closed_form(self):
    rng = np.random.default_rng(0)
    for _ in range(5):
      g_f, g_c = rng.normal(size=7), rng.normal(size=7)
      a, b = g_f / 2, g_c / 2  # grad f_f, grad f_c (eq. 7).
      g2, b2 = _estimates(g_f, g_c)
      np.testing.assert_allclose(g2, np.sum((a - b) ** 2), rtol=1e-5)
      np.testing.assert_allclose(
          b2, 1 + np.sum((a - b) ** 2) / np.sum((a + b) ** 2), rtol=1e-5)
      # B~^2 > 2 exactly when a . b < 0.
      self.assertEqual(b2 > bgd_inputs_lib.NEGATIVE_B2, a @ b < 0)

  def test_b2_grows_without_bound_as_the_gradients_balance(self):
    b2 = [_estimates([1.0, 0.0], [-1.0 + eps, 0.0])[1]
          for eps in (0.5, 0.1, 0.01)]
    self.assertGreater(b2[0], 2)
    self.assertLess(b2[0], b2[1])
    self.assertLess(b2[1], b2[2])
    self.assertGreater(b2[2], 1e4)


class SignTest(absltest.TestCase):
  """Nonnegative inputs, ReLU, label 1 vs label 0: a . b < 0."""

  def test_nonnegative_inputs_give_opposite_gradients(self):
    rng = np.random.default_rng(1)
    model = dense.build_binary_classifier(12, hidden_units=(6,), seed=2)
    weights = model.initial_weights[0]
    for _ in range(5):
      positives = tf.constant(rng.random((4, 12)), tf.float32)
      negatives = tf.constant(rng.random((5, 12)), tf.float32)
      a = _gradient(model, weights, positives, 1.0)
      b = _gradient(model, weights, negatives, 0.0)
      # Coordinate by coordinate, opposite signs or zero.
      self.assertTrue(np.all(a * b <= 0))
      self.assertLess(a @ b, 0)

  def test_standardized_model_sees_two_x_minus_one(self):
    x = tf.constant(np.random.default_rng(3).random((4, 12)), tf.float32)
    plain = dense.build_binary_classifier(12, hidden_units=(6,), seed=2)
    standardized = dense.build_binary_classifier(
        12, hidden_units=(6,), seed=2,
        input_shift=celeba_smile_lib.STANDARDIZED_SHIFT,
        input_scale=celeba_smile_lib.STANDARDIZED_SCALE)
    weights = plain.initial_weights
    np.testing.assert_allclose(
        standardized.predict_on_batch(weights, x).numpy(),
        plain.predict_on_batch(weights, 2 * x - 1).numpy(), rtol=1e-5,
        atol=1e-6)
    with self.assertRaisesRegex(ValueError, 'input_scale'):
      dense.build_binary_classifier(12, input_scale=0.0)

  def test_celeba_model_takes_the_flag(self):
    # `_task_and_model`'s model: the flag reaches the classifier.
    built = {}
    original = dense.build_binary_classifier

    def spy(*args, **kwargs):
      built.update(kwargs)
      return original(*args, **kwargs)

    dense.build_binary_classifier = spy
    original_task = celeba_smile_lib.celeba.build_task
    celeba_smile_lib.celeba.build_task = lambda *a, **k: None
    try:
      for flag in (False, True):
        built.clear()
        celeba_smile_lib._task_and_model(
            cache_dir=None, work_dir=None, download=False, label='smiling',
            raw_clients_per_client=1, client_batch_size=1,
            max_eval_examples=None, seed=0, hidden_units=(4,),
            standardize_inputs=flag)
        self.assertEqual(built.get('input_shift'),
                         0.5 if flag else None)
        self.assertEqual(built.get('input_scale'), 0.5 if flag else None)
    finally:
      dense.build_binary_classifier = original
      celeba_smile_lib.celeba.build_task = original_task


def _write_csv(path, b2_values, g2=3.0):
  lines = [f'{runner.ROUND_KEY},{bgd_diagnostics.G2_COLUMN},'
           f'{bgd_diagnostics.B2_COLUMN}']
  lines += [f'{t},{g2 + t},{b2}' for t, b2 in enumerate(b2_values, 1)]
  with open(path, 'w') as f:
    f.write('\n'.join(lines) + '\n')


def _record(inputs, scenario, stats):
  return dict(inputs=inputs, scenario=scenario, seed=0, rounds=100,
              settings=dict(clients_per_round=100, client_batch_size=5,
                            client_lr=0.01, mixing_weights=[0.5, 0.5]),
              data_description='hand-made', date='D', machine='M',
              **stats)


def _write(records_dir, record):
  """Keeps `record` as the run that made it would."""
  return bgd_inputs_lib.kept_or_made(
      records_dir, (record['inputs'], record['scenario'], record['seed']),
      record['settings'], record['rounds'], lambda: record)


class SectionTest(absltest.TestCase):

  def test_round_statistics_and_section(self):
    d = temp_dirs.temp_dir(self)
    default_csv = os.path.join(d, 'default.csv')
    standardized_csv = os.path.join(d, 'standardized.csv')
    # Rounds 1-100; the window is 10-100 (91 rounds).
    _write_csv(default_csv, [5.0] * 9 + [3.0] * 46 + [400.0] * 45)
    _write_csv(standardized_csv, [9.0] * 9 + [1.2] * 61 + [2.5] * 30)
    default = bgd_inputs_lib.round_statistics(default_csv)
    self.assertEqual((default['first_round'], default['last_round'],
                      default['num_rounds']), (10, 100, 91))
    self.assertEqual(default['max_b2'], 400.0)
    self.assertEqual(default['median_b2'], 3.0)
    self.assertEqual(default['negative_fraction'], 1.0)
    self.assertEqual(default['max_g2'], 103.0)
    self.assertEqual(default['median_g2'], 58.0)
    standardized = bgd_inputs_lib.round_statistics(standardized_csv)
    self.assertAlmostEqual(standardized['negative_fraction'], 30 / 91)
    self.assertEqual(standardized['median_b2'], 1.2)

    records_dir = os.path.join(d, 'records')
    _write(records_dir, _record(
        'standardized', 'parallel_training', standardized))
    _write(records_dir, _record('default', 'parallel_training', default))
    records = bgd_inputs_lib.read_records(records_dir)
    self.assertEqual([r['inputs'] for r in records],
                     ['default', 'standardized'])
    text = bgd_inputs_lib.section_markdown(
        records, command='cmd', date='now', records_dir='docs/x')
    self.assertIn(bgd_inputs_lib.EXPLANATION, text)
    self.assertIn('| pixels in [0, 1] (as table 4) | Parallel Training | 0 '
                  '| 10-100 | 103 | 58 | 400 | 3 | 100% of 91 |', text)
    self.assertIn('| standardized, 2 x - 1 in [-1, 1] | Parallel Training '
                  '| 0 | 10-100 | 103 | 58 | 2.5 | 1.2 | 33% of 91 |', text)
    self.assertIn('* pixels in [0, 1] (as table 4): a . b < 0 in 100% of '
                  'the 91 rounds', text)
    self.assertIn("no run has a median B~^2 within twice the paper's 1.26",
                  text)
    self.assertIn("1 of 1 runs have a median B~^2 within twice the paper's "
                  '1.26', text)

  def test_a_kept_record_counts_only_with_its_settings(self):
    records_dir = temp_dirs.temp_dir(self)
    record = _record('default', 'two_way_gt', dict(
        first_round=10, last_round=100, num_rounds=91, max_g2=1.0,
        median_g2=1.0, max_b2=3.0, median_b2=3.0, negative_fraction=1.0))
    settings = record['settings']
    key = ('default', 'two_way_gt', record['seed'])
    made = []

    def make():
      made.append(record)
      return record

    self.assertEqual(bgd_inputs_lib.kept_or_made(
        records_dir, key, settings, record['rounds'], make), record)
    self.assertLen(made, 1)
    self.assertEqual(bgd_inputs_lib.kept_or_made(
        records_dir, key, dict(settings), record['rounds'], make), record)
    self.assertLen(made, 1)
    with self.assertRaisesRegex(ValueError, r'other settings \(client_lr'):
      bgd_inputs_lib.kept_or_made(records_dir, key,
                                  dict(settings, client_lr=0.1),
                                  record['rounds'], make)
    with self.assertRaisesRegex(ValueError, r'other settings \(rounds'):
      bgd_inputs_lib.kept_or_made(records_dir, key, settings,
                                  record['rounds'] + 1, make)
    self.assertLen(made, 1)
    # A record made that is off is refused before it is written.
    off = dict(record, inputs='other')
    with self.assertRaisesRegex(ValueError, 'inputs'):
      bgd_inputs_lib.kept_or_made(records_dir, ('other', 'two_way_gt', 0),
                                  settings, record['rounds'], lambda: off)
    self.assertFalse(os.path.exists(os.path.join(
        records_dir, 'other_two_way_gt_seed0.json')))

  def test_bad_records_are_refused(self):
    d = temp_dirs.temp_dir(self)
    with self.assertRaisesRegex(ValueError, 'lacks'):
      bgd_inputs_lib.check_record({'inputs': 'default'}, 'r')
    record = _record('default', 'parallel_training', dict(
        first_round=10, last_round=100, num_rounds=91, max_g2=1.0,
        median_g2=1.0, max_b2=3.0, median_b2=3.0, negative_fraction=1.0))
    record['settings']['mixing_weights'] = [0.75, 0.25]
    with self.assertRaisesRegex(ValueError, 'w_f = w_c = 1/2'):
      bgd_inputs_lib.check_record(record, 'r')
    empty = os.path.join(d, 'empty.csv')
    _write_csv(empty, [])
    with self.assertRaisesRegex(ValueError, 'diagnostics'):
      bgd_inputs_lib.round_statistics(empty)


if __name__ == '__main__':
  absltest.main()
