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
"""Our dual encoder losses against an external oracle.

The oracle: the expected values published by the tests of the federated dual
encoder (hinge and spreadout losses, like the movie task of the mixed FL
paper, arXiv:2205.13655 section 4.3) in repository google-research/federated,
file dual_encoder/losses_test.py (`test_hinge`, `test_hinge_similarities`,
`test_hinge_spreadout`, `test_update_loss_with_spreadout_loss`), whose
definitions are in dual_encoder/losses.py. Only their fixed inputs and
expected numbers are restated here.

Where the definitions agree the values are reproduced; where they differ the
tests pin the exact relation:

*   Scores: both are the cosine similarity of the context vector and the
    label embedding (theirs with the default l2 normalization). Same.
*   Hinge on positives: theirs is mean_k max(0, 0.9 - s_k)^2 (squared, margin
    fixed at 0.9); ours is mean_k max(0, m - s_k) (not squared, margin m,
    default 1.0). Theirs is the mean of the squares of our per-example terms
    at m = 0.9.
*   Spreadout of a set of n vectors: theirs is the Frobenius norm of the
    off-diagonal similarities, sqrt(sum_{i != j} (v_i . v_j)^2), on the
    vectors as given to it (l2-normalized only where their loss normalizes
    its embeddings); ours is the mean over the n (n - 1) ordered pairs of
    the squared cosine, sum_{i != j} (v_i . v_j)^2 / (n (n - 1)) on
    l2-normalized rows. So theirs = sqrt(n (n - 1) ours) on unit vectors,
    and on other vectors ours is scale-invariant and theirs is not.
*   Their "cross" spreadout (context k against the other batch labels j)
    has no counterpart in our losses (our clients use positives only); it is
    rebuilt from our pair scores to account for their published total.
"""

import math

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from tff_mixed.models import dual_encoder

# The fixed inputs of their `test_hinge` (3 examples, 2-d vectors): context
# vectors and label embeddings.
_CONTEXTS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
_LABELS = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], np.float32)
# Their published similarity matrix for those inputs (`test_hinge_similarities`
# row k: context k against labels 0, 1, 2), and published losses.
_REFERENCE_SIMILARITIES = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0],
                                    [0.7071067, 0.7071067, 0.7071067]])
_REFERENCE_HINGE = 0.552403
# `test_hinge_spreadout`: lambdas 0.1 (context), 0.2 (label), 0.3 (cross).
_REFERENCE_HINGE_SPREADOUT = 1.576667
_REFERENCE_MARGIN = 0.9


def _scores(context_index, label_index):
  """Our pair scores for (context k, label j) pairs of the fixed inputs.

  The table holds the three context vectors (rows 1-3) and the label
  embeddings (rows 4-6); the context layer is the identity, so the left
  tower's vector for a one-movie context is that movie's row.
  """
  table = np.concatenate([np.zeros([1, 2], np.float32), _CONTEXTS, _LABELS])
  weights = (table, np.eye(2, dtype=np.float32), np.zeros([2], np.float32))
  context = np.stack([np.asarray(context_index, np.int32) + 1,
                      np.full(len(context_index), -1, np.int32)], axis=1)
  label = np.asarray(label_index, np.int32) + 4
  scores, valid = dual_encoder.pair_scores(weights, context, label)
  return np.asarray(scores, np.float64), np.asarray(valid)


def _hinge_terms(scores, margin):
  """Our per-example hinge terms, each read off `hinge_loss` alone."""
  terms = []
  for k in range(len(scores)):
    only_k = np.zeros(len(scores), np.float32)
    only_k[k] = 1.0
    terms.append(float(dual_encoder.hinge_loss(
        scores.astype(np.float32), only_k, margin=margin)))
  return np.array(terms)


def _our_spreadout(vectors):
  return float(dual_encoder.spreadout(np.asarray(vectors, np.float32),
                                      first_row=0))


class DualEncoderReferenceTest(absltest.TestCase):

  def test_scores_are_their_cosine_similarities(self):
    rows, cols = np.meshgrid(range(3), range(3), indexing='ij')
    scores, _ = _scores(rows.ravel(), cols.ravel())
    np.testing.assert_allclose(scores.reshape(3, 3), _REFERENCE_SIMILARITIES,
                               atol=1e-6)

  def test_their_hinge_is_the_mean_of_our_squared_terms_at_margin_0_9(self):
    scores, valid = _scores([0, 1, 2], [0, 1, 2])
    terms = _hinge_terms(scores, _REFERENCE_MARGIN)
    self.assertAlmostEqual(float(np.mean(terms ** 2)), _REFERENCE_HINGE,
                           places=5)
    # Our hinge itself is the unsquared mean: (0.9 + 0.9 + (0.9 - 1/sqrt 2))
    # / 3 at their margin, (1 + 1 + (1 - 1/sqrt 2)) / 3 at our default.
    ours = float(dual_encoder.hinge_loss(scores.astype(np.float32), valid,
                                         margin=_REFERENCE_MARGIN))
    self.assertAlmostEqual(ours, (2.7 - 1.0 / math.sqrt(2.0)) / 3.0,
                           places=6)
    self.assertGreater(abs(ours - _REFERENCE_HINGE), 0.1)
    ours_default = float(dual_encoder.hinge_loss(scores.astype(np.float32),
                                                 valid))
    self.assertEqual(dual_encoder.DEFAULT_MARGIN, 1.0)
    self.assertAlmostEqual(ours_default, (3.0 - 1.0 / math.sqrt(2.0)) / 3.0,
                           places=6)

  def test_their_spreadout_total_from_ours(self):
    # Their total = squared hinge + 0.1 ctx + 0.2 label + 0.3 cross, each
    # spreadout sqrt(sum_{i != j} s_ij^2) on unit vectors.
    n = 3
    scores, _ = _scores([0, 1, 2], [0, 1, 2])
    hinge = float(np.mean(_hinge_terms(scores, _REFERENCE_MARGIN) ** 2))
    context_spreadout = math.sqrt(n * (n - 1) * _our_spreadout(_CONTEXTS))
    label_spreadout = math.sqrt(n * (n - 1) * _our_spreadout(_LABELS))
    rows, cols = np.meshgrid(range(n), range(n), indexing='ij')
    off = rows.ravel() != cols.ravel()
    cross, _ = _scores(rows.ravel()[off], cols.ravel()[off])
    cross_spreadout = math.sqrt(float(np.sum(cross ** 2)))
    total = (hinge + 0.1 * context_spreadout + 0.2 * label_spreadout
             + 0.3 * cross_spreadout)
    self.assertAlmostEqual(total, _REFERENCE_HINGE_SPREADOUT, places=5)
    # Ours is the mean over the 6 ordered pairs of the squared cosine: the
    # context pairs have cosines 0, 1/sqrt 2, 1/sqrt 2 (twice each).
    self.assertAlmostEqual(_our_spreadout(_CONTEXTS), 2.0 / 6.0, places=6)
    self.assertAlmostEqual(context_spreadout, math.sqrt(2.0), places=5)

  def test_the_cited_forms_give_their_published_numbers(self):
    # Our default forms are theirs: the squared hinge at margin 0.9 and the
    # Frobenius spreadout reproduce `test_hinge` and `test_hinge_spreadout`
    # directly (the cross term, which our clients do not compute, rebuilt
    # from our scores as above).
    scores, valid = _scores([0, 1, 2], [0, 1, 2])
    hinge = float(dual_encoder.client_loss(scores.astype(np.float32), valid))
    self.assertAlmostEqual(hinge, _REFERENCE_HINGE, places=5)
    self.assertAlmostEqual(
        float(dual_encoder.squared_hinge_loss(scores.astype(np.float32),
                                              valid)), _REFERENCE_HINGE,
        places=5)
    frobenius = lambda v, lam: float(dual_encoder.table_spreadout(
        np.asarray(v, np.float32), dual_encoder.FROBENIUS, lam, first_row=0))
    rows, cols = np.meshgrid(range(3), range(3), indexing='ij')
    off = rows.ravel() != cols.ravel()
    cross, _ = _scores(rows.ravel()[off], cols.ravel()[off])
    total = (hinge + frobenius(_CONTEXTS, 0.1) + frobenius(_LABELS, 0.2)
             + 0.3 * math.sqrt(float(np.sum(cross ** 2))))
    self.assertAlmostEqual(total, _REFERENCE_HINGE_SPREADOUT, places=5)

  def test_frobenius_spreadout_and_its_gradient_against_numpy(self):
    rng = np.random.default_rng(0)
    table = rng.normal(size=[7, 3]).astype(np.float32)

    def oracle(t):
      unit = t[1:] / np.linalg.norm(t[1:], axis=1, keepdims=True)
      gram = unit @ unit.T
      return math.sqrt(float(np.sum(gram ** 2)
                             - np.sum(np.diag(gram) ** 2))) / 4

    variable = tf.Variable(table)
    with tf.GradientTape() as tape:
      value = dual_encoder.table_spreadout(variable, dual_encoder.FROBENIUS,
                                           0.25)
    gradient = tape.gradient(value, variable).numpy()
    self.assertAlmostEqual(float(value), oracle(table.astype(np.float64)),
                           places=5)
    # Central differences of the numpy oracle (row 0, padding, has none).
    expected = np.zeros_like(table, np.float64)
    for i in range(1, 7):
      for j in range(3):
        step = np.zeros_like(table, np.float64)
        step[i, j] = 1e-4
        expected[i, j] = (oracle(table + step) - oracle(table - step)) / 2e-4
    np.testing.assert_allclose(gradient, expected, atol=2e-3)
    np.testing.assert_array_equal(gradient[0], 0.0)

  def test_unnormalized_spreadout_differs_from_ours(self):
    # Their `test_update_loss_with_spreadout_loss`: base loss 0.1, context
    # (1, 0), (0, 1); labels (1, 1), (0, 1), (1, 0), (1, 0) NOT normalized;
    # cross similarities [[1, 0, 1, 1], [1, 1, 0, 0]] with positives at
    # columns 1 and 2; lambdas 0.1 / 0.2 / 0.3; published 1.3365058.
    contexts = np.array([[1.0, 0.0], [0.0, 1.0]])
    labels = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    similarities = np.array([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    positives = np.array([1, 2])

    def frobenius_off(gram, diagonal):
      return math.sqrt(float(np.sum(gram ** 2) - np.sum(diagonal ** 2)))

    raw_label = frobenius_off(labels @ labels.T, np.diag(labels @ labels.T))
    total = (0.1 + 0.1 * frobenius_off(contexts @ contexts.T, np.ones(2))
             + 0.2 * raw_label
             + 0.3 * frobenius_off(similarities,
                                   similarities[[0, 1], positives]))
    self.assertAlmostEqual(total, 1.3365058, places=5)
    self.assertAlmostEqual(raw_label, math.sqrt(8.0), places=6)
    # Ours normalizes the rows first, (1, 1) -> (1, 1)/sqrt 2: squared
    # cosines 1/2 (three pairs), 0, 0, 1, each twice, over 12 ordered pairs.
    # On these rows theirs would be sqrt(12 * 5/12) = sqrt 5, not sqrt 8:
    # their unnormalized spreadout also grows with the rows' norms.
    self.assertAlmostEqual(_our_spreadout(labels), 5.0 / 12.0, places=6)
    self.assertAlmostEqual(_our_spreadout(3.0 * labels), 5.0 / 12.0,
                           places=6)
    self.assertGreater(abs(math.sqrt(12 * _our_spreadout(labels)) - raw_label),
                       0.5)


if __name__ == '__main__':
  absltest.main()
