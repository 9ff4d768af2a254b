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
"""Tests for `tff_mixed.asynchronous.feddle` (guided model merging, Zhu et al.).

Oracles: a quadratic loss whose optimal coefficient is known in closed form,
autodiff through the merged weights for the memory-efficient gradient, and
FedBuff's update for the zero-step fallback.
"""

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import feddle
from tff_mixed.models import dense


def _quadratic_model(target):
  """loss(w) = 0.5 ||w - target||^2, with target fed as every label row."""
  dim = target.size

  @tf.function
  def predict_on_batch(model_weights, x, training=True):
    del training  # Unused.
    (w,), _ = model_weights
    return tf.broadcast_to(w, [tf.shape(x)[0], dim])

  def loss(output, label, sample_weight=None):
    del sample_weight  # Unused.
    return tf.reduce_mean(
        tf.reduce_sum(tf.square(output - label), axis=1)) / 2

  model = tff.learning.models.FunctionalModel(
      initial_weights=((np.zeros([dim], np.float32),), ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      input_spec=(tf.TensorSpec([None, 1], tf.float32),
                  tf.TensorSpec([None, dim], tf.float32)))
  batch = (np.ones([2, 1], np.float32),
           np.tile(target[None, :], [2, 1]).astype(np.float32))
  return model, batch


def _random_like(weights, rng, scale=1.0):
  return tuple((scale * rng.normal(size=w.shape)).astype(np.float32)
               for w in weights)


def _classifier_batches(rng, num_batches=2, size=8):
  batches = []
  for _ in range(num_batches):
    x = rng.normal(size=[size, 4]).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    batches.append((x, y))
  return batches


def _features(body, x):
  # build_binary_classifier(4, (3,)): the body is the hidden layer.
  return tf.nn.relu(tf.matmul(x, body[0]) + body[1])


class AtlasTest(absltest.TestCase):

  def test_replaces_the_smallest_score_lowest_index_on_ties(self):
    atlas = feddle.empty_atlas()
    for value in range(3):
      atlas = feddle.add_anchor(atlas, [np.full([2], value, np.float32)], 3)
    self.assertLen(atlas.anchors, 3)
    np.testing.assert_array_equal(atlas.scores, [np.inf] * 3)
    atlas = atlas._replace(scores=np.array([0.5, 0.1, 0.1]))
    atlas = feddle.add_anchor(atlas, [np.full([2], 7.0, np.float32)], 3)
    self.assertLen(atlas.anchors, 3)
    np.testing.assert_array_equal(atlas.anchors[1][0], [7.0, 7.0])
    np.testing.assert_array_equal(atlas.scores, [0.5, np.inf, 0.1])
    # The new anchor is protected by its +inf score: index 2 goes next.
    atlas = feddle.add_anchor(atlas, [np.full([2], 8.0, np.float32)], 3)
    np.testing.assert_array_equal(atlas.anchors[2][0], [8.0, 8.0])
    np.testing.assert_array_equal(atlas.anchors[0][0], [0.0, 0.0])

  def test_normalization_gives_the_median_norm_and_keeps_directions(self):
    rng = np.random.default_rng(0)
    anchors = []
    for norm in (1.0, 5.0, 2.0):
      a = rng.normal(size=[7]).astype(np.float32)
      b = rng.normal(size=[2, 3]).astype(np.float32)
      scale = norm / np.sqrt(np.sum(a**2) + np.sum(b**2))
      anchors.append((a * scale, b * scale))
    anchors.append((np.zeros([7], np.float32), np.zeros([2, 3], np.float32)))
    result = feddle.normalize_anchors(anchors)
    np.testing.assert_allclose(result.norms, [1.0, 5.0, 2.0, 0.0], rtol=1e-5)
    self.assertAlmostEqual(result.median, 2.0, places=5)
    for raw, normalized in zip(anchors[:3], result.anchors):
      self.assertAlmostEqual(feddle.anchor_norm(normalized), 2.0, places=5)
      flat_raw = np.concatenate([w.ravel() for w in raw])
      flat = np.concatenate([w.ravel() for w in normalized])
      cosine = flat @ flat_raw / np.linalg.norm(flat) / np.linalg.norm(
          flat_raw)
      self.assertAlmostEqual(cosine, 1.0, places=5)
    for w in result.anchors[3]:
      np.testing.assert_array_equal(w, np.zeros_like(w))


class SearchTest(absltest.TestCase):

  def test_one_anchor_converges_to_the_analytic_coefficient(self):
    rng = np.random.default_rng(1)
    target = rng.normal(size=[5]).astype(np.float32)
    model, batch = _quadratic_model(target)
    x = (rng.normal(size=[5]).astype(np.float32),)
    anchor = (rng.normal(size=[5]).astype(np.float32),)
    a, diff = anchor[0].astype(np.float64), (target - x[0]).astype(np.float64)
    c_star = diff @ a / (a @ a)
    # One anchor: the median is its own norm, so abar = a and c* is the same.
    config = feddle.FeddleConfig(max_anchors=2, server_lr=1.0,
                                 search_lr=0.5 / (a @ a), search_steps=100)
    weights, atlas, diagnostics = feddle.feddle_step(
        model, x, feddle.empty_atlas(), [anchor], [batch], config)
    self.assertAlmostEqual(float(diagnostics.coefficients[0]), c_star,
                           places=4)
    np.testing.assert_allclose(weights[0], x[0] + c_star * a, atol=1e-4)
    np.testing.assert_allclose(atlas.scores, [abs(c_star)], rtol=1e-4)
    self.assertEqual(diagnostics.init_coefficients[0], 1.0)
    self.assertLess(diagnostics.losses[-1], diagnostics.losses[0])

    # The fallback term moves the optimum towards c' = 1 (eq. 10).
    lam = 0.7 * (a @ a)
    result = feddle.search_coefficients(
        feddle.model_loss_fn(model), x, [anchor], [1.0], batch, steps=200,
        learning_rate=0.3 / (a @ a), fallback_lambda=lam)
    expected = ((a @ a) * c_star + lam * 1.0) / ((a @ a) + lam)
    self.assertAlmostEqual(float(result.coefficients[0]), expected, places=4)

  def test_adam_also_reaches_the_optimum(self):
    target = np.array([1.0, -2.0, 0.5], np.float32)
    model, batch = _quadratic_model(target)
    anchor = (np.array([1.0, 1.0, 0.0], np.float32),)
    result = feddle.search_coefficients(
        feddle.model_loss_fn(model), model.initial_weights[0], [anchor],
        [0.0], [batch], steps=300, learning_rate=0.05, optimizer='adam')
    self.assertAlmostEqual(float(result.coefficients[0]), -0.5, places=2)

  def test_scaled_sgd_steps_at_the_papers_rate(self):
    # The loss is sum_m ||a_m||^2-smooth in c at most (the paper's appendix
    # A): 'scaled_sgd' steps by eta / sum_m ||abar_m||^2.
    target = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    model, batch = _quadratic_model(target)
    x = (np.zeros([4], np.float32),)
    anchors = [(np.array([1.0, 0.0, 0.0, 0.0], np.float32),),
               (np.array([0.0, 2.0, 0.0, 1.0], np.float32),)]
    c0 = np.array([0.5, 0.5], np.float32)
    a = np.stack([anchor[0] for anchor in anchors]).astype(np.float64)
    squared = float(np.sum(a * a))  # 1 + 5.
    loss_fn = feddle.model_loss_fn(model)
    one = feddle.search_coefficients(loss_fn, x, anchors, c0, [batch],
                                     steps=1, learning_rate=0.5,
                                     optimizer='scaled_sgd')
    gradient = a @ (c0 @ a - target)  # dL/dc of 0.5 ||A^T c - t||^2.
    np.testing.assert_allclose(one.coefficients,
                               c0 - 0.5 / squared * gradient, rtol=1e-5)
    self.assertAlmostEqual(one.diagnostics.rate, 0.5 / squared, places=7)
    # Its diagnostics: the loss over the server data at c' and at the
    # result, and the relative move.
    loss_at = lambda c: 0.5 * float(np.sum((c @ a - target) ** 2))
    self.assertAlmostEqual(one.diagnostics.prior_loss, loss_at(c0), places=5)
    self.assertAlmostEqual(one.diagnostics.final_loss,
                           loss_at(one.coefficients), places=5)
    self.assertAlmostEqual(
        one.diagnostics.coefficient_move,
        np.linalg.norm(one.coefficients - c0) / np.linalg.norm(c0), places=6)
    # At eta = 1 it converges to the least-squares coefficients.
    many = feddle.search_coefficients(loss_fn, x, anchors, c0, [batch],
                                      steps=300, learning_rate=1.0,
                                      optimizer='scaled_sgd')
    c_star = np.linalg.lstsq(a.T, target, rcond=None)[0]
    np.testing.assert_allclose(many.coefficients, c_star, atol=1e-4)
    self.assertLess(many.diagnostics.final_loss, many.diagnostics.prior_loss)
    # Rate 0 stays at c': FedBuff's merge, whatever the steps.
    still = feddle.search_coefficients(loss_fn, x, anchors, c0, [batch],
                                       steps=5, learning_rate=0.0,
                                       optimizer='scaled_sgd')
    np.testing.assert_array_equal(still.coefficients, c0)
    self.assertEqual(still.diagnostics.coefficient_move, 0.0)

  def test_adam_at_a_small_rate_barely_moves(self):
    # Adam moves each coefficient by about its rate a step, whatever the
    # gradient: at 1e-5 and 160 steps the coefficients of a real-sized c'
    # (0.1) move by at most 1.6e-3.
    model = dense.build_binary_classifier(4, (3,))
    rng = np.random.default_rng(4)
    weights = model.initial_weights[0]
    anchors = [_random_like(weights, rng) for _ in range(3)]
    c0 = np.full([3], 0.1, np.float32)
    result = feddle.search_coefficients(
        feddle.model_loss_fn(model), weights, anchors, c0,
        _classifier_batches(rng), steps=160, learning_rate=1e-5,
        optimizer='adam')
    self.assertLessEqual(np.abs(result.coefficients - c0).max(), 1.7e-3)
    self.assertLess(result.diagnostics.coefficient_move, 0.02)

  def test_projected_gradient_equals_autodiff(self):
    model = dense.build_binary_classifier(4, (3,))
    rng = np.random.default_rng(2)
    weights = model.initial_weights[0]
    anchors = [_random_like(weights, rng, scale) for scale in (0.1, 1.0, 3.0)]
    coefficients = np.array([0.3, -0.2, 0.05], np.float32)
    batch = _classifier_batches(rng, num_batches=1)[0]
    loss_fn = feddle.model_loss_fn(model)
    projected = feddle.coefficient_gradient(loss_fn, weights, anchors,
                                            coefficients, batch)
    c = tf.Variable(coefficients)
    with tf.GradientTape() as tape:
      merged = [
          w + tf.add_n([c[m] * anchors[m][i] for m in range(len(anchors))])
          for i, w in enumerate(weights)
      ]
      loss = loss_fn(merged, batch)
    expected = tape.gradient(loss, c).numpy()
    self.assertGreater(np.abs(expected).max(), 1e-3)
    np.testing.assert_allclose(projected, expected, rtol=1e-4, atol=1e-6)
    # The search records the same gradient at its first step.
    result = feddle.search_coefficients(loss_fn, weights, anchors,
                                        coefficients, [batch], steps=1,
                                        learning_rate=0.1)
    np.testing.assert_allclose(result.diagnostics.gradients[0], expected,
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(result.coefficients,
                               coefficients - 0.1 * expected, rtol=1e-5)

  def test_zero_steps_reproduce_fedbuff_exactly(self):
    model = dense.build_binary_classifier(4, (3,))
    rng = np.random.default_rng(3)
    weights = _random_like(model.initial_weights[0], rng)
    old = _random_like(weights, rng, 0.5)
    atlas = feddle.add_anchor(feddle.empty_atlas(), old, 4)
    atlas = atlas._replace(scores=np.array([0.2]))
    zero = tuple(np.zeros_like(w) for w in weights)
    deltas = [_random_like(weights, rng, s) for s in (0.01, 1.0, 20.0)]
    deltas.append(zero)
    config = feddle.FeddleConfig(max_anchors=5, server_lr=0.7, search_steps=0)
    new_weights, new_atlas, diagnostics = feddle.feddle_step(
        model, weights, atlas, deltas, _classifier_batches(rng), config)
    self.assertEqual(diagnostics.new_indices, (1, 2, 3, 4))
    self.assertEqual(diagnostics.init_coefficients[0], 0.0)
    for i, w in enumerate(weights):
      fedbuff = w + 0.7 * np.mean([d[i] for d in deltas], axis=0)
      np.testing.assert_allclose(new_weights[i], fedbuff, rtol=1e-6,
                                 atol=1e-6)
    np.testing.assert_allclose(new_atlas.scores,
                               np.abs(diagnostics.init_coefficients))
    # The same via the public pieces.
    normalized = feddle.normalize_anchors(new_atlas.anchors)
    c_prior = feddle.fedbuff_coefficients(5, [1, 2, 3, 4], 0.7,
                                          normalized.norms)
    merged = feddle.merge_anchors(weights, normalized.anchors, c_prior)
    for m, n in zip(merged, new_weights):
      np.testing.assert_allclose(m, n, rtol=1e-6, atol=1e-7)


class OutOfDomainTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(4)
    self.model = dense.build_binary_classifier(4, (3,))
    self.weights = _random_like(self.model.initial_weights[0], rng)
    self.deltas = [_random_like(self.weights, rng, s) for s in (0.1, 0.3)]
    self.data = []
    for _ in range(2):
      x = rng.normal(size=[32, 4]).astype(np.float32)
      # Three OOD classes unrelated to the model's binary task.
      self.data.append((x, np.argmax(x[:, :3], axis=1).astype(np.int32)))

  def test_fitting_the_head_reduces_the_surrogate_loss(self):
    body = [tf.constant(w) for w in self.weights[:2]]
    features_fn = lambda x: _features(body, x)
    head = feddle.fit_linear_head(features_fn, self.data, 3, steps=200,
                                  lr=0.5)
    self.assertEqual(head.kernel.shape, (3, 3))
    x, labels = self.data[0]
    zero = feddle.LinearHead(np.zeros([3, 3]), np.zeros([3]))
    before = float(feddle.linear_head_loss(zero, features_fn(x), labels))
    after = float(feddle.linear_head_loss(head, features_fn(x), labels))
    self.assertAlmostEqual(before, np.log(3.0), places=5)
    self.assertLess(after, before - 0.05)

  def test_body_search_and_head_rules(self):
    config = feddle.FeddleConfig(
        max_anchors=4, server_lr=1.0, search_lr=0.05, search_steps=15,
        fallback_lambda=0.01, out_of_domain=True, num_ood_classes=3,
        head_steps=50, head_lr=0.5)
    results = {}
    for rule in ('searched', 'fallback', 'frozen'):
      results[rule] = feddle.feddle_step(
          self.model, self.weights, feddle.empty_atlas(), self.deltas,
          self.data, config._replace(ood_head_rule=rule), _features)
    new_weights, atlas, diagnostics = results['searched']
    self.assertIsNotNone(diagnostics.head)
    self.assertEqual(diagnostics.gradients.shape, (15, 2))
    self.assertLess(diagnostics.losses[-1], diagnostics.losses[0])
    c_hat = diagnostics.coefficients
    self.assertFalse(np.allclose(c_hat, diagnostics.init_coefficients))
    normalized = feddle.normalize_anchors(atlas.anchors).anchors
    expected = feddle.merge_anchors(self.weights, normalized, c_hat)
    for got, want in zip(new_weights, expected):
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # The searched body is the same under every head rule; the head moves
    # by c' (FedBuff) or not at all, and the surrogate theta never enters.
    fedbuff = feddle.merge_anchors(self.weights, normalized,
                                   diagnostics.init_coefficients)
    for rule, head_want in (('fallback', fedbuff[2:]),
                            ('frozen', self.weights[2:])):
      got = results[rule][0]
      np.testing.assert_allclose(results[rule][2].coefficients, c_hat,
                                 rtol=1e-6)
      for g, w in zip(got[:2], new_weights[:2]):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
      for g, w in zip(got[2:], head_want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
    # The search ignores the model's head: changing it changes nothing.
    other_head = self.weights[:2] + tuple(w + 1.0 for w in self.weights[2:])
    _, _, other = feddle.feddle_step(self.model, other_head,
                                     feddle.empty_atlas(), self.deltas,
                                     self.data, config, _features)
    np.testing.assert_allclose(other.coefficients, c_hat, rtol=1e-6)


  def test_in_and_out_of_domain_gradient_cosines(self):
    config = feddle.FeddleConfig(
        max_anchors=4, search_lr=0.05, search_steps=2, fallback_lambda=0.01,
        out_of_domain=True, num_ood_classes=3, head_steps=20, head_lr=0.5)
    probe = _classifier_batches(np.random.default_rng(5), 1, 16)[0]
    _, atlas, diagnostics = feddle.feddle_step(
        self.model, self.weights, feddle.empty_atlas(), self.deltas,
        self.data, config, _features, id_probe=probe)
    # Oracle: autodiff gradients of both losses w.r.t. the coefficients.
    anchors = feddle.normalize_anchors(atlas.anchors).anchors
    surrogate = feddle.surrogate_loss_fn(
        lambda body, x: _features(body, x), diagnostics.head)
    task = feddle.model_loss_fn(self.model)

    def autodiff(loss_fn, weights, anchors, at, batch):
      c = tf.Variable(np.asarray(at, np.float32))
      with tf.GradientTape() as tape:
        merged = [w + tf.add_n([c[m] * a[i] for m, a in enumerate(anchors)])
                  for i, w in enumerate(weights)]
        loss = loss_fn(merged, batch)
      return tape.gradient(loss, c).numpy()

    for at, got in ((diagnostics.init_coefficients,
                     diagnostics.id_ood_cosine),
                    (np.zeros(2), diagnostics.id_ood_cosine_at_zero)):
      g_id = autodiff(task, self.weights, anchors, at, probe)
      g_ood = autodiff(surrogate, self.weights[:2],
                       [a[:2] for a in anchors], at, self.data[0])
      want = g_id @ g_ood / np.linalg.norm(g_id) / np.linalg.norm(g_ood)
      self.assertAlmostEqual(got, float(want), places=4)
    # Without a probe the diagnostic is NaN, and the update is the same.
    _, _, plain = feddle.feddle_step(
        self.model, self.weights, feddle.empty_atlas(), self.deltas,
        self.data, config, _features)
    self.assertTrue(np.isnan(plain.id_ood_cosine))
    np.testing.assert_allclose(plain.coefficients, diagnostics.coefficients,
                               rtol=1e-6)
    self.assertTrue(np.isnan(feddle.cosine_similarity([0.0, 0.0],
                                                      [1.0, 2.0])))
    self.assertAlmostEqual(feddle.cosine_similarity([1.0, 0.0], [-2.0, 0.0]),
                           -1.0)


class BadInputTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(5)
    self.model = dense.build_binary_classifier(4, (3,))
    self.weights = self.model.initial_weights[0]
    self.deltas = [_random_like(self.weights, rng)]
    self.data = _classifier_batches(rng, num_batches=1)
    self.config = feddle.FeddleConfig(max_anchors=2, search_steps=1)

  def _step(self, config=None, data=None, deltas=None, **kwargs):
    return feddle.feddle_step(
        self.model, self.weights, feddle.empty_atlas(),
        self.deltas if deltas is None else deltas,
        self.data if data is None else data,
        self.config if config is None else config, **kwargs)

  def test_bad_config_fields(self):
    for field, value in (('max_anchors', 0), ('search_steps', -1),
                         ('server_lr', 0.0), ('search_lr', float('nan')),
                         ('fallback_lambda', -0.1), ('head_size', 0),
                         ('num_ood_classes', 1), ('optimizer', 'rmsprop'),
                         ('ood_head_rule', 'theta'), ('out_of_domain', 1)):
      with self.assertRaisesRegex(ValueError, f'`{field}`'):
        self._step(config=self.config._replace(**{field: value}))
    with self.assertRaisesRegex(ValueError, '`max_size`'):
      feddle.add_anchor(feddle.empty_atlas(), self.deltas[0], 0)
    with self.assertRaisesRegex(ValueError, '`steps`'):
      feddle.search_coefficients(feddle.model_loss_fn(self.model),
                                 self.weights, self.deltas, [0.0], self.data,
                                 steps=-1, learning_rate=0.1)

  def test_server_data_that_does_not_match_the_model(self):
    x, y = self.data[0]
    wide = [(np.zeros([8, 5], np.float32), y)]
    missing_label = tf.data.Dataset.from_tensor_slices(x).batch(4)
    for data in (wide, [x], missing_label):
      with self.assertRaisesRegex(
          ValueError, 'does not match the model.*TensorSpec.*model input '
          r'spec \(TensorSpec\(shape=\(None, 4\)'):
        self._step(data=data)
    # A matching Dataset is accepted.
    self._step(data=tf.data.Dataset.from_tensor_slices((x, y)).batch(4))

  def test_other_bad_arguments(self):
    with self.assertRaisesRegex(ValueError, 'exceed max_anchors=2'):
      self._step(deltas=self.deltas * 3)
    with self.assertRaisesRegex(ValueError, r'new_deltas\[0\]'):
      self._step(deltas=[self.deltas[0][:2]])
    with self.assertRaisesRegex(ValueError, '`features_fn` is required'):
      self._step(config=self.config._replace(out_of_domain=True))
    with self.assertRaisesRegex(ValueError, 'leaves no body'):
      self._step(config=self.config._replace(out_of_domain=True,
                                             head_size=4),
                 features_fn=_features)


if __name__ == '__main__':
  absltest.main()
