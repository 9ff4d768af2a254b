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
"""The advisor on constructed tasks where the right answer is known.

Quadratic losses f~_f(x) = |x - a|^2 / 2, f~_c(x) = |x - c|^2 / 2 (beta = 1),
clients' gradients with additive noise of variance sigma^2 and central
batches' with sigma_c^2, w_f = w_c = 1/2: then
W - T = |a - c|^2 / 4 at every x (eq. 7), so G^2 = |a - c|^2 / 4 with
B = 1 by construction, and the sampled G~_t^2 has mean
G^2 + (sigma^2 / S + sigma_c^2) / 4 (the noise of g_f - g_c). The rounds
are simulated with the advisor's own per-round estimators
(`round_estimates`) on these gradients, no TFF process (the wiring is
tests/advisor_round_estimates_test.py's).
"""

import json

import numpy as np
import tensorflow as tf
from absl.testing import absltest

import tff_mixed
from tff_mixed.advisor import estimates as estimates_lib
from tff_mixed.algorithms import registry
from tff_mixed.core import round_estimates

DIM = 10
COHORT = 20
VARIANCE_BATCHES = 4
ROUNDS = 20
# Relative tolerance of the recovered variances: over 20 rounds the mean
# estimate's relative standard deviation is about sqrt(2 / (S d T)) ~ 2%
# for sigma^2 and sqrt(2 / (3 d T)) ~ 6% for sigma_c^2.
RTOL = 0.2
_X0 = np.full(DIM, 5.0)
# The target on |grad f|^2 of the advice tests, with the task's true F: the
# bounds' terms weigh differently at each epsilon (1/eps^2 variance, 1/eps^1.5
# G, 1/eps B and beta), so the right answer is the one at a stated target.
EPSILON = 0.01


def _simulate(a, c, sigma2, sigma_c2, seed=0, lr=0.05):
  """Per-round metrics rows of a run on the quadratic task."""
  rng = np.random.default_rng(seed)
  x = _X0.copy()
  rows = []
  for round_num in range(1, ROUNDS + 1):
    probes = (x - a) + rng.normal(scale=np.sqrt(sigma2 / DIM),
                                  size=(COHORT, DIM))
    noise = rng.normal(scale=np.sqrt(sigma_c2 / DIM),
                       size=(VARIANCE_BATCHES + 1, DIM))
    central = (x - c) + noise
    mean_probe = (tf.constant(probes.mean(axis=0), tf.float32),)
    g_c = (tf.constant(central[0], tf.float32),)
    g2, b2 = round_estimates.bgd_estimates(mean_probe, g_c, 0.5, 0.5)
    sigma2_t = round_estimates.client_variance(
        tf.constant(np.mean(np.sum(probes**2, axis=1)), tf.float32),
        mean_probe, tf.constant(float(COHORT)))
    sigma_c2_t, mean_c = round_estimates.sample_variance(
        [(tf.constant(g, tf.float32),) for g in central[1:]])
    # The same batches at a nearby point: the noise cancels.
    nearby = x - 0.05 * mean_c[0].numpy()
    beta_t = round_estimates.secant_smoothness(
        mean_c, (tf.constant((nearby - c) + noise[1:].mean(axis=0),
                             tf.float32),),
        (tf.constant(x, tf.float32),), (tf.constant(nearby, tf.float32),))
    total = 0.5 * probes.mean(axis=0) + 0.5 * central[0]
    rows.append({
        'round_num': round_num,
        'train/central/bgd_G2': float(g2),
        'train/central/bgd_B2': float(b2),
        'train/central/sigma2': float(sigma2_t),
        'train/central/sigma_c2': float(sigma_c2_t),
        'train/central/beta': float(beta_t),
        'train/central/mixed_grad_norm2': float(total @ total),
        'train/client_work/train/loss': 0.5 * float((x - a) @ (x - a)),
        'train/central/loss': 0.5 * float((x - c) @ (x - c)),
    })
    x = x - lr * (0.5 * probes.mean(axis=0) + 0.5 * central[0])
  return rows


def _advise(rows, client_steps=4, **kwargs):
  # eta and eta_s within every nonconvex condition at beta = 1, K = 4.
  return tff_mixed.advise(rows, client_steps=client_steps,
                          cohort_size=COHORT, client_learning_rate=0.001,
                          server_learning_rate=np.sqrt(COHORT), **kwargs)


def _gap(a, c):
  """The task's true F = f(x^(0)) - f(x*): f = |x - (a + c) / 2|^2 / 2 + C."""
  m = (a + c) / 2
  return float((_X0 - m) @ (_X0 - m)) / 2


class EstimatorsOnQuadraticsTest(absltest.TestCase):

  def test_estimates_recover_the_constructed_constants(self):
    a = np.zeros(DIM)
    c = np.full(DIM, 2.0)
    sigma2, sigma_c2 = 4.0, 1.0
    window = estimates_lib.window_estimates(_simulate(a, c, sigma2, sigma_c2))
    e = window.estimates
    self.assertEqual(e['sigma2'].rounds, ROUNDS)
    np.testing.assert_allclose(e['sigma2'].mean, sigma2, rtol=RTOL)
    np.testing.assert_allclose(e['sigma_c2'].mean, sigma_c2, rtol=RTOL)
    g2 = (a - c) @ (a - c) / 4 + (sigma2 / COHORT + sigma_c2) / 4
    np.testing.assert_allclose(e['bgd_G2'].mean, g2, rtol=RTOL)
    # beta = 1 (identity Hessians); B is near 1 far from the optimum.
    np.testing.assert_allclose(e['beta'].max, 1.0, rtol=1e-3)
    self.assertLess(e['bgd_B2'].mean, 1.5)
    # The bootstrap interval brackets the mean.
    for estimate in e.values():
      self.assertLessEqual(estimate.low, estimate.mean + 1e-12)
      self.assertGreaterEqual(estimate.high, estimate.mean - 1e-12)
      self.assertGreaterEqual(estimate.max, estimate.mean)

  def test_window_and_missing_diagnostics(self):
    rows = _simulate(np.zeros(DIM), np.zeros(DIM), 1.0, 1.0)
    window = estimates_lib.window_estimates(rows, first_round=5, last_round=9)
    self.assertEqual(window.rounds, (5, 6, 7, 8, 9))
    with self.assertRaisesRegex(ValueError, 'No rounds'):
      estimates_lib.window_estimates(rows, first_round=50)
    with self.assertRaisesRegex(ValueError, 'with_diagnostics'):
      estimates_lib.window_estimates([{'train/central/loss': 1.0}])


class AdviceOnQuadraticsTest(absltest.TestCase):

  def test_identical_optima_choose_parallel_training(self):
    # G ~ 0, B ~ 1: PT's dissimilarity terms vanish.
    a = c = np.ones(DIM)
    rows = _simulate(a, c, sigma2=4.0, sigma_c2=0.2)
    advice = _advise(rows, epsilon=EPSILON, initial_gap=_gap(a, c))
    self.assertEqual(advice.recommendation, registry.PARALLEL_TRAINING,
                     advice.to_text())
    self.assertGreater(advice.agreement, 0.9)

  def test_opposite_optima_with_small_central_variance_choose_one_way(self):
    # Large G rules PT out; K S sigma_c^2 << sigma^2 keeps 1-way close.
    a, c = np.full(DIM, 3.0), np.full(DIM, -3.0)
    rows = _simulate(a, c, sigma2=4.0, sigma_c2=1e-4)
    advice = _advise(rows, epsilon=EPSILON, initial_gap=_gap(a, c))
    self.assertEqual(advice.recommendation, registry.ONE_WAY_GT,
                     advice.to_text())
    self.assertGreater(advice.ratios[registry.PARALLEL_TRAINING], 1.1)

  def test_large_central_variance_with_many_steps_choose_two_way(self):
    # A tiny |B_c| (large sigma_c^2) and K = 16: 1-way pays K S sigma_c^2.
    a, c = np.full(DIM, 3.0), np.full(DIM, -3.0)
    rows = _simulate(a, c, sigma2=1.0, sigma_c2=4.0)
    target = dict(epsilon=EPSILON, initial_gap=_gap(a, c))
    advice = _advise(rows, client_steps=16, **target)
    self.assertEqual(advice.recommendation, registry.TWO_WAY_GT,
                     advice.to_text())
    self.assertGreater(advice.ratios[registry.ONE_WAY_GT], 1.1)
    # With K = 1 the 1-way term is the others': no longer ruled out.
    self.assertNotEqual(
        _advise(rows, client_steps=1, **target).recommendation,
        registry.TWO_WAY_GT)

  def test_central_batch_sizes_scale_sigma_c2(self):
    # The paper's rule gives 1-way GT a K times larger |B_c|: its
    # K S sigma_c^2 is then S sigma_c^2 at the measured size, as the
    # others'. Measured at |B_c| = 10, 1-way GT at 160 (K = 16).
    a, c = np.full(DIM, 3.0), np.full(DIM, -3.0)
    rows = _simulate(a, c, sigma2=1.0, sigma_c2=4.0)
    target = dict(epsilon=EPSILON, initial_gap=_gap(a, c))
    sizes = {registry.PARALLEL_TRAINING: 10, registry.ONE_WAY_GT: 160,
             registry.TWO_WAY_GT: 10}
    advice = _advise(rows, client_steps=16, central_batch_sizes=sizes,
                     measured_central_batch_size=10, **target)
    self.assertEqual(advice.recommendation, registry.ONE_WAY_GT,
                     advice.to_text())
    self.assertAlmostEqual(advice.ratios[registry.ONE_WAY_GT], 1.0)
    self.assertAlmostEqual(advice.settings.central_variance_scale[
        registry.ONE_WAY_GT], 1 / 16)
    with self.assertRaisesRegex(ValueError, 'positive ints'):
      _advise(rows, central_batch_sizes=sizes, **target)

  def test_flags(self):
    rows = _simulate(np.zeros(DIM), np.zeros(DIM), 1.0, 1.0)
    # Defaults of `_advise`: eta_s = sqrt(S), eta small: nothing flagged.
    self.assertEqual(_advise(rows).flags, ())
    flags = tff_mixed.advise(rows, client_steps=1, cohort_size=COHORT,
                             client_learning_rate=1.0,
                             central_learning_rate=1.0,
                             merge_learning_rate=0.5).flags
    text = '\n'.join(flags)
    self.assertIn('K = 1', text)
    self.assertIn('eta_s = 1 < sqrt(S)', text)
    self.assertIn('eta_m = 0.5 < 1', text)
    # beta = 1, K = 1, eta_s = 1: 1-way's limit on eta is 1 / 18.
    self.assertIn('one_way_gt: eta = 1 exceeds the nonconvex limit 0.05556',
                  text)
    self.assertIn('two_way_gt: eta_c = 1 exceeds', text)
    self.assertIn('parallel_training: eta * eta_s = 1 exceeds', text)

  def test_default_target_and_gap(self):
    # epsilon: a tenth of the window's mean |grad f|^2; F: the mixed loss
    # of its first round (here above the true F, since f* > 0).
    a, c = np.full(DIM, 3.0), np.full(DIM, -3.0)
    rows = _simulate(a, c, sigma2=4.0, sigma_c2=1e-4)
    advice = _advise(rows)
    self.assertAlmostEqual(
        advice.constants.epsilon,
        0.1 * np.mean([r['train/central/mixed_grad_norm2'] for r in rows]))
    self.assertAlmostEqual(
        advice.constants.initial_gap,
        0.5 * rows[0]['train/client_work/train/loss']
        + 0.5 * rows[0]['train/central/loss'])
    self.assertGreater(advice.constants.initial_gap, _gap(a, c))

  def test_reports(self):
    advice = _advise(_simulate(np.ones(DIM), np.ones(DIM), 4.0, 0.2),
                     initial_gap=10.0, epsilon=0.5)
    decoded = json.loads(advice.to_json())
    self.assertEqual(decoded['recommendation'], advice.recommendation)
    self.assertEqual(decoded['constants']['initial_gap'], 10.0)
    self.assertEqual(decoded['rounds'], [1, ROUNDS])
    self.assertEqual(set(decoded['estimates']), set(estimates_lib.NAMES))
    text = advice.to_text()
    self.assertIn('Recommendation: Parallel Training', text)
    self.assertIn('sigma_c2', text)

  def test_bad_arguments(self):
    rows = _simulate(np.zeros(DIM), np.zeros(DIM), 1.0, 1.0)
    with self.assertRaisesRegex(ValueError, 'tolerance'):
      _advise(rows, tolerance=-1.0)
    with self.assertRaisesRegex(ValueError, 'initial_gap'):
      _advise([{k: v for k, v in r.items() if 'loss' not in k}
               for r in rows])


if __name__ == '__main__':
  absltest.main()
