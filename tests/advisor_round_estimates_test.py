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
"""The advisor's per-round estimates (`tff_mixed/core/round_estimates.py`).

Pure TF against numpy (sigma^2 from the cohort's two moments equals the
per-client sample variance; sigma_c^2; the secant beta on quadratics with a
known Hessian), then one round of a process with diagnostics against a
numpy replay of its clients' probe gradients (arXiv:2205.13655, eqs. 4-6).
Grouped clients give the per-client numbers: tests/client_groups_test.py
compares every metric of the two modes.
"""

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tff_mixed.core import round_estimates
from tests import testing_utils as tu


def _flat(gradient):
  return np.concatenate([np.ravel(g) for g in gradient])


class RoundEstimatesTest(absltest.TestCase):

  def test_client_variance_is_the_unbiased_per_client_variance(self):
    rng = np.random.default_rng(0)
    probes = [(rng.normal(size=(3, 2)), rng.normal(size=(2,)))
              for _ in range(5)]
    flat = np.stack([_flat(p) for p in probes])
    want = np.sum((flat - flat.mean(axis=0)) ** 2) / (len(probes) - 1)
    mean_norm_squared = np.mean(np.sum(flat ** 2, axis=1))
    mean_gradient = tuple(
        tf.constant(np.mean([p[i] for p in probes], axis=0), tf.float32)
        for i in range(2))
    got = round_estimates.client_variance(
        tf.constant(mean_norm_squared, tf.float32), mean_gradient,
        tf.constant(5.0))
    self.assertAlmostEqual(float(got), want, places=4)

  def test_client_variance_of_one_client_is_zero(self):
    got = round_estimates.client_variance(
        tf.constant(4.0), (tf.constant([2.0]),), tf.constant(1.0))
    self.assertEqual(float(got), 0.0)

  def test_sample_variance(self):
    rng = np.random.default_rng(1)
    samples = [(rng.normal(size=(4,)), rng.normal(size=(1, 2)))
               for _ in range(4)]
    flat = np.stack([_flat(s) for s in samples])
    variance, mean = round_estimates.sample_variance(
        [tuple(tf.constant(a, tf.float32) for a in s) for s in samples])
    self.assertAlmostEqual(
        float(variance),
        np.sum((flat - flat.mean(axis=0)) ** 2) / 3, places=4)
    np.testing.assert_allclose(_flat([m.numpy() for m in mean]),
                               flat.mean(axis=0), rtol=1e-5)
    with self.assertRaisesRegex(ValueError, '2 or more'):
      round_estimates.sample_variance(samples[:1])

  def test_secant_on_a_quadratic(self):
    # f(x) = x^T A x / 2: grad f = A x, beta = the largest eigenvalue of A.
    # Along an eigenvector the secant is exact; elsewhere it is below.
    hessian = np.diag([5.0, 1.0, 0.5]).astype(np.float32)
    x = np.array([1.0, -2.0, 0.3], np.float32)

    def secant(direction):
      y = x + direction.astype(np.float32)
      return float(round_estimates.secant_smoothness(
          (tf.constant(hessian @ x),), (tf.constant(hessian @ y),),
          (tf.constant(x),), (tf.constant(y),)))

    self.assertAlmostEqual(secant(np.array([0.1, 0.0, 0.0])), 5.0, places=4)
    self.assertAlmostEqual(secant(np.array([0.0, 0.0, 0.2])), 0.5, places=4)
    mixed = secant(np.array([0.1, 0.1, 0.1]))
    self.assertLess(mixed, 5.0)
    self.assertGreater(mixed, 0.5)
    self.assertEqual(secant(np.zeros(3)), 0.0)


class ProcessRoundEstimatesTest(absltest.TestCase):
  """One round of 1-way GT with diagnostics against numpy."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    clients = tu.client_arrays(sizes=(4, 6, 2, 5))
    central = tu.central_arrays()
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(), tff_mixed.central_data_objective(central),
        tu.sgd(0.1), central_batch_size=tu.CENTRAL_EXAMPLES, client_steps=2,
        federated_weight=0.7, central_weight=0.3, with_diagnostics=True)
    cls.metrics = process.next(process.initialize(),
                               tu.to_datasets(clients, 2)).metrics['central']
    x0 = [w.copy() for w in tu.initial_weights()]
    cls.probes = np.stack([_flat(tu.mse_gradient(x0, x[:2], y[:2]))
                           for x, y in clients])
    cls.x0, cls.central = x0, central

  def test_sigma2_is_the_variance_of_the_clients_probe_gradients(self):
    want = (np.sum((self.probes - self.probes.mean(axis=0)) ** 2)
            / (len(self.probes) - 1))
    self.assertGreater(want, 0.1)
    self.assertAlmostEqual(float(self.metrics['sigma2']), want, places=3)

  def test_full_central_batches_have_no_variance(self):
    # |B_c| >= the central set: every batch is the whole set.
    self.assertAlmostEqual(float(self.metrics['sigma_c2']), 0.0, places=6)

  def test_beta_is_the_secant_along_the_central_gradient(self):
    g = tu.mse_gradient(self.x0, *self.central)
    length = 1e-2 * max(np.linalg.norm(_flat(self.x0)), 1.0)
    shift = length / np.linalg.norm(_flat(g))
    nearby = [w - shift * gi for w, gi in zip(self.x0, g)]
    g_nearby = tu.mse_gradient(nearby, *self.central)
    want = (np.linalg.norm(_flat(g_nearby) - _flat(g))
            / np.linalg.norm(_flat(nearby) - _flat(self.x0)))
    self.assertAlmostEqual(float(self.metrics['beta']), want, delta=1e-3 * want)
    # The MSE's Hessian 2/n [x 1]^T [x 1] bounds it from above.
    features = np.hstack([self.central[0], np.ones((8, 1), np.float32)])
    top = np.linalg.eigvalsh(2.0 / 8 * features.T @ features)[-1]
    self.assertLessEqual(float(self.metrics['beta']), top * (1 + 1e-4))

  def test_mixed_gradient_norm(self):
    g_f = self.probes.mean(axis=0)
    g_c = _flat(tu.mse_gradient(self.x0, *self.central))
    total = 0.7 * g_f + 0.3 * g_c
    self.assertAlmostEqual(float(self.metrics['mixed_grad_norm2']),
                           total @ total, places=4)


if __name__ == '__main__':
  tff.backends.native.set_sync_local_cpp_execution_context()
  absltest.main()
