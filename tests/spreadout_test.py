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
"""The fast spreadout (d x d Gram of the columns) against its definition.

`dual_encoder.spreadout` is the central loss of the movie task
(arXiv:2205.13655, section 4.3) and the baseline computes it on every
client at every step, so it is computed in O(rows d^2) rather than from the
rows x rows Gram matrix. These tests hold it to `pairwise_spreadout` (the
definition as written) and to a float64 numpy loop over the pairs, in value
and in gradient, on MovieLens' table shape and on edge cases.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tff_mixed.models import dual_encoder


def _numpy_spreadout(table, first_row):
  e = np.asarray(table, np.float64)[first_row:]
  norms = np.maximum(np.linalg.norm(e, axis=-1, keepdims=True), 1e-6)
  e = e / norms
  n = len(e)
  total = sum(float(e[i] @ e[j]) ** 2 for i in range(n) for j in range(n)
              if i != j)
  return total / max(n * (n - 1), 1)


def _value_and_gradient(fn, table, first_row):
  table = tf.constant(table)
  with tf.GradientTape() as tape:
    tape.watch(table)
    value = fn(table, first_row=first_row)
  return float(value), tape.gradient(value, table).numpy()


class SpreadoutTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('movielens_table', 1683, 16, 0),
      ('wide_rows', 40, 64, 1),
      ('two_movies', 3, 4, 2),
  )
  def test_equals_the_pairwise_definition(self, rows, dim, seed):
    table = np.random.default_rng(seed).normal(
        0.0, 0.25, (rows, dim)).astype(np.float32)
    fast, fast_grad = _value_and_gradient(dual_encoder.spreadout, table, 1)
    slow, slow_grad = _value_and_gradient(dual_encoder.pairwise_spreadout,
                                          table, 1)
    # float32: the fast form subtracts the n diagonal terms from a total
    # that holds them, so with few rows it loses a few more digits.
    self.assertAlmostEqual(fast, slow, delta=1e-5 * max(abs(slow), 1e-3))
    np.testing.assert_allclose(fast_grad, slow_grad, rtol=1e-4,
                               atol=1e-5 * np.abs(slow_grad).max() + 1e-12)
    # Row 0 (padding) is left out of both: no gradient reaches it.
    np.testing.assert_array_equal(fast_grad[0], 0.0)

  def test_equals_a_float64_loop_with_a_zero_row(self):
    rng = np.random.default_rng(3)
    table = rng.normal(size=(9, 3)).astype(np.float32)
    table[4] = 0.0  # A movie whose row was never trained into a direction.
    fast = float(dual_encoder.spreadout(table, first_row=1))
    self.assertAlmostEqual(fast, _numpy_spreadout(table, 1), places=6)
    self.assertAlmostEqual(
        float(dual_encoder.pairwise_spreadout(table, first_row=1)), fast,
        places=6)

  def test_orthonormal_rows_give_zero_and_parallel_rows_give_one(self):
    self.assertAlmostEqual(
        float(dual_encoder.spreadout(np.eye(5, dtype=np.float32), 0)), 0.0,
        places=7)
    parallel = np.tile(np.array([[2.0, -1.0]], np.float32), (6, 1))
    self.assertAlmostEqual(float(dual_encoder.spreadout(parallel, 0)), 1.0,
                           places=6)


if __name__ == '__main__':
  absltest.main()
