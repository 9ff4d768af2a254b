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
"""Tests for `tff_mixed.models.cnn` against Keras and numpy."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.models import cnn

# Small sizes keep the tests fast; one test covers the paper's defaults.
_TINY = dict(input_shape=(8, 8, 1), num_classes=3, conv_filters=(2, 3, 2),
             dense_units=4)


def _keras_cnn(input_shape, num_classes, conv_filters, dense_units):
  """The same layers as `cnn.build_cnn`, in Keras."""
  layers = [tf.keras.Input(shape=input_shape)]
  for filters in conv_filters:
    layers.append(tf.keras.layers.Conv2D(filters, 3, padding='valid',
                                         activation='relu'))
  layers += [
      tf.keras.layers.MaxPooling2D(2),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(dense_units, activation='relu'),
      tf.keras.layers.Dense(num_classes),
  ]
  return tf.keras.Sequential(layers)


def _random_weights(model, seed):
  """Non-zero biases too, so the bias wiring is tested."""
  rng = np.random.default_rng(seed)
  weights, _ = model.initial_weights
  return tuple(
      w + rng.normal(0.0, 0.1, w.shape).astype(np.float32) for w in weights)


def _numpy_logits(weights, x):
  """The CNN forward pass with explicit loops over output pixels."""
  h = x.astype(np.float64)
  for layer in range(cnn.NUM_CONV_LAYERS):
    kernel, bias = weights[2 * layer], weights[2 * layer + 1]
    batch, height, width, _ = h.shape
    out = np.zeros((batch, height - 2, width - 2, kernel.shape[-1]))
    for i in range(height - 2):
      for j in range(width - 2):
        patch = h[:, i:i + 3, j:j + 3, :]
        out[:, i, j, :] = np.einsum('bhwc,hwcf->bf', patch, kernel) + bias
    h = np.maximum(out, 0.0)
  batch, height, width, channels = h.shape
  pooled_h, pooled_w = height // 2, width // 2
  h = h[:, :2 * pooled_h, :2 * pooled_w, :].reshape(
      batch, pooled_h, 2, pooled_w, 2, channels).max(axis=(2, 4))
  h = h.reshape(batch, -1)
  h = np.maximum(h @ weights[6] + weights[7], 0.0)
  return h @ weights[8] + weights[9]


class CnnTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('paper_defaults', dict(input_shape=(32, 32, 3), num_classes=10,
                              conv_filters=(32, 64, 64), dense_units=64)),
      ('tiny_odd_size', dict(input_shape=(11, 9, 2), num_classes=3,
                             conv_filters=(2, 3, 4), dense_units=5)),
  )
  def test_logits_match_keras_sequential(self, kwargs):
    model = cnn.build_cnn(**kwargs, seed=3)
    weights = _random_weights(model, seed=4)
    keras_model = _keras_cnn(**kwargs)
    keras_model.set_weights(list(weights))
    x = np.random.default_rng(5).uniform(
        0.0, 1.0, (4, *kwargs['input_shape'])).astype(np.float32)
    expected = keras_model(x).numpy()
    np.testing.assert_allclose(
        model.predict_on_batch((weights, ()), x), expected, atol=1e-5)
    np.testing.assert_allclose(cnn.logits(weights, x), expected, atol=1e-5)
    self.assertEqual(expected.shape, (4, kwargs['num_classes']))

  def test_weight_shapes_and_specs(self):
    model = cnn.build_cnn()
    weights, non_trainable = model.initial_weights
    self.assertEqual(non_trainable, ())
    self.assertEqual([w.shape for w in weights], [
        (3, 3, 3, 32), (32,), (3, 3, 32, 64), (64,), (3, 3, 64, 64), (64,),
        (13 * 13 * 64, 64), (64,), (64, 10), (10,)])
    self.assertTrue(all(w.dtype == np.float32 for w in weights))
    self.assertEqual(model.input_spec[0].shape.as_list(), [None, 32, 32, 3])
    self.assertEqual(model.input_spec[1].dtype, tf.int32)

  def test_initialization_is_seeded(self):
    same_a = cnn.build_cnn(**_TINY, seed=7).initial_weights[0]
    same_b = cnn.build_cnn(**_TINY, seed=7).initial_weights[0]
    other = cnn.build_cnn(**_TINY, seed=8).initial_weights[0]
    for a, b in zip(same_a, same_b):
      np.testing.assert_array_equal(a, b)
    self.assertFalse(np.array_equal(same_a[0], other[0]))

  def test_body_weights_replace_the_body_and_keep_the_seeded_head(self):
    body = _random_weights(cnn.build_cnn(**_TINY), seed=3)[:cnn.BODY_SIZE]
    for seed in (4, 5):
      scratch = cnn.build_cnn(**_TINY, seed=seed).initial_weights[0]
      started = cnn.build_cnn(**_TINY, seed=seed,
                              body_weights=body).initial_weights[0]
      for given, used in zip(body, started):
        np.testing.assert_array_equal(given, used)
      for head, used in zip(scratch[cnn.BODY_SIZE:], started[cnn.BODY_SIZE:]):
        np.testing.assert_array_equal(head, used)
    with self.assertRaisesRegex(ValueError, 'body_weights'):
      cnn.build_cnn(**_TINY, body_weights=body[:-1])
    with self.assertRaisesRegex(ValueError, r'body_weights\[0\]'):
      cnn.build_cnn(**_TINY, body_weights=[np.zeros(3)] + list(body[1:]))

  def test_loss_and_metrics_match_numpy(self):
    model = cnn.build_cnn(**_TINY, seed=1)
    weights = _random_weights(model, seed=2)
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 1.0, (5, 8, 8, 1)).astype(np.float32)
    y = np.array([0, 1, 2, 1, 0], np.int32)

    expected_logits = _numpy_logits(weights, x)
    shifted = expected_logits - expected_logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expected_loss = -log_probs[np.arange(5), y].mean()
    expected_accuracy = np.mean(expected_logits.argmax(axis=1) == y)

    output = model.predict_on_batch((weights, ()), x)
    np.testing.assert_allclose(output, expected_logits, atol=1e-5)
    loss = model.loss(output, y)
    self.assertAlmostEqual(float(loss), expected_loss, places=5)

    # Two batches: the finalized metrics are example-weighted means.
    state = model.initialize_metrics_state()
    for rows in (slice(0, 2), slice(2, 5)):
      batch_output = model.predict_on_batch((weights, ()), x[rows])
      state = model.update_metrics_state(
          state,
          labels=y[rows],
          batch_output=tff.learning.models.BatchOutput(
              predictions=batch_output,
              loss=model.loss(batch_output, y[rows]),
              num_examples=rows.stop - rows.start),
      )
    metrics = model.finalize_metrics(state)
    self.assertAlmostEqual(float(metrics['loss']), expected_loss, places=5)
    self.assertAlmostEqual(float(metrics['accuracy']), expected_accuracy,
                           places=6)
    self.assertEqual(int(metrics['num_examples']), 5)

  def test_sgd_steps_reduce_the_loss(self):
    # Two classes told apart by image brightness.
    model = cnn.build_cnn(input_shape=(12, 12, 1), num_classes=2,
                          conv_filters=(8, 8, 8), dense_units=16, seed=0)
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 8, np.int32)
    x = (rng.uniform(0.0, 0.3, (16, 12, 12, 1))
         + 0.7 * y[:, None, None, None]).astype(np.float32)
    weights = [tf.constant(w) for w in model.initial_weights[0]]

    def loss_at(w):
      return model.loss(model.predict_on_batch((tuple(w), ()), x), y)

    losses = []
    for _ in range(10):
      with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = loss_at(weights)
      losses.append(float(loss))
      grads = tape.gradient(loss, weights)
      weights = [w - 0.1 * g for w, g in zip(weights, grads)]
    final = float(loss_at(weights))
    self.assertLess(final, 0.5 * losses[0])
    self.assertTrue(np.all(np.isfinite(losses)))

  def test_features_then_head_equals_logits(self):
    model = cnn.build_cnn(**_TINY, seed=4)
    weights = _random_weights(model, seed=5)
    x = np.random.default_rng(6).uniform(
        0.0, 1.0, (3, 8, 8, 1)).astype(np.float32)
    body, head = weights[:-cnn.HEAD_SIZE], weights[-cnn.HEAD_SIZE:]
    self.assertLen(body, cnn.BODY_SIZE)
    feats = cnn.features(body, x)
    self.assertEqual(feats.shape, (3, _TINY['dense_units']))
    self.assertTrue(np.all(feats.numpy() >= 0.0))  # After the ReLU.
    np.testing.assert_allclose(
        tf.matmul(feats, head[0]) + head[1], cnn.logits(weights, x),
        atol=1e-6)

  @parameterized.named_parameters(
      ('input_rank', dict(input_shape=(32, 32)), 'input_shape'),
      ('input_too_small', dict(input_shape=(7, 32, 3)), 'at least 8x8'),
      ('input_not_int', dict(input_shape=(32.0, 32, 3)), 'input_shape'),
      ('one_class', dict(num_classes=1), 'num_classes'),
      ('two_convs', dict(conv_filters=(32, 64)), 'conv_filters'),
      ('zero_filters', dict(conv_filters=(32, 0, 64)), 'conv_filters'),
      ('dense_units', dict(dense_units=0), 'dense_units'),
      ('negative_seed', dict(seed=-1), 'seed'),
      ('bool_seed', dict(seed=True), 'seed'),
  )
  def test_bad_arguments(self, kwargs, message):
    with self.assertRaisesRegex(ValueError, message):
      cnn.build_cnn(**kwargs)

  def test_wrong_number_of_weights(self):
    weights = cnn.build_cnn(**_TINY).initial_weights[0]
    x = np.zeros((1, 8, 8, 1), np.float32)
    with self.assertRaisesRegex(ValueError, 'weights_body'):
      cnn.features(weights, x)
    with self.assertRaisesRegex(ValueError, '`weights` must be'):
      cnn.logits(weights[:-1], x)


if __name__ == '__main__':
  absltest.main()
