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
"""Tests for character sequences and the GRU character language model."""

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.models import char_lm
from tff_mixed.tasks import char_sequences

cs = char_sequences


def _tf_examples(texts, sequence_length):
  dataset = cs.to_examples(tf.data.Dataset.from_tensor_slices(texts),
                           sequence_length)
  pairs = list(dataset.as_numpy_iterator())
  if not pairs:
    return (np.zeros([0, sequence_length], np.int32),) * 2
  return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


class CharSequencesTest(absltest.TestCase):

  def test_golden_example(self):
    # 'H' = 72 -> 72 - 32 + 4 = 44; 'i' = 105 -> 77; '!' = 33 -> 5; the tab
    # becomes a space (4). [BOS, H, i, space, !, EOS] = 6 ids, cut in pieces
    # of 4: [2, 44, 77, 4] and [5, 3, 0, 0].
    sequences = cs.text_sequences(['Hi\t!'], sequence_length=3)
    np.testing.assert_array_equal(sequences.inputs, [[2, 44, 77], [5, 3, 0]])
    np.testing.assert_array_equal(sequences.targets,
                                  [[44, 77, 4], [3, 0, 0]])
    self.assertEqual(sequences.num_characters, 4)
    self.assertEqual(sequences.num_oov, 0)
    self.assertEqual(cs.decode(sequences.targets[0]), 'Hi ')

  def test_piece_of_only_padding_targets_is_dropped(self):
    # [BOS, a, b, EOS] in pieces of 3: [2, a, b] and [EOS, 0, 0]; the second
    # has no target and gives no example.
    sequences = cs.text_sequences(['ab'], sequence_length=2)
    self.assertLen(sequences.inputs, 1)
    np.testing.assert_array_equal(sequences.targets, [[69, 70]])

  def test_oov_and_empty_texts_are_counted(self):
    sequences = cs.text_sequences(['caf\u00e9 \u4e2d', '', 'ok'], 100)
    self.assertEqual(sequences.num_oov, 2)
    self.assertEqual(sequences.num_empty, 1)
    self.assertEqual(sequences.num_texts, 3)
    self.assertEqual(cs.decode(sequences.inputs[0]), '<caf\ufffd \ufffd>')
    self.assertLen(sequences.inputs, 2)

  def test_tf_pipeline_equals_numpy(self):
    texts = ['Hello\tworld!\n', '', 'caf\u00e9 \u4e2d ' * 7, 'a',
             'x' * 23]
    want = cs.text_sequences(texts, 10)
    inputs, targets = _tf_examples(texts, 10)
    np.testing.assert_array_equal(inputs, want.inputs)
    np.testing.assert_array_equal(targets, want.targets)

  def test_bad_arguments(self):
    with self.assertRaisesRegex(ValueError, '`sequence_length`'):
      cs.text_sequences(['a'], 0)
    with self.assertRaisesRegex(ValueError, 'Text 1 is a bytes'):
      cs.text_sequences(['a', b'b'])


def _weights_and_keras_model(seed):
  """Our LM's weights (vocabulary 11, embedding 5, GRU 7) and Keras' layers
  holding them, for sequences of 6."""
  weights = list(char_lm.initial_weights(11, 5, 7, seed=seed))
  # Non-zero biases exercise Keras' reset_after bias layout.
  weights[char_lm.GRU_BIAS] = np.random.default_rng(seed + 1).normal(
      size=weights[char_lm.GRU_BIAS].shape).astype(np.float32)
  keras_model = tf.keras.Sequential([
      tf.keras.layers.Embedding(11, 5),
      tf.keras.layers.GRU(7, return_sequences=True, reset_after=True),
      tf.keras.layers.Dense(11)])
  keras_model.build((None, 6))
  keras_model.set_weights(weights)
  return weights, keras_model


class CharLMTest(absltest.TestCase):

  def test_logits_equal_keras_embedding_gru_dense(self):
    weights, keras_model = _weights_and_keras_model(seed=1)
    inputs = np.random.default_rng(0).integers(0, 11, (3, 6)).astype(np.int32)
    got = char_lm.logits([tf.constant(w) for w in weights],
                         tf.constant(inputs))
    np.testing.assert_allclose(got, keras_model(inputs), atol=1e-6)

  def test_gradients_equal_keras_autodiff(self):
    # The written-out backward pass of the GRU against autodiff of Keras'
    # layers with the same weights, on a masked loss with padding targets.
    weights, keras_model = _weights_and_keras_model(seed=3)
    rng = np.random.default_rng(4)
    inputs = rng.integers(0, 11, (3, 6)).astype(np.int32)
    targets = rng.integers(0, 11, (3, 6)).astype(np.int32)

    def loss_of(logits):
      total, _, tokens = char_lm.masked_sums(logits, tf.constant(targets))
      return total / tokens

    with tf.GradientTape() as tape:
      want_loss = loss_of(keras_model(inputs))
    want = tape.gradient(want_loss, keras_model.trainable_weights)
    ours = [tf.constant(w) for w in weights]
    with tf.GradientTape() as tape:
      tape.watch(ours)
      got_loss = loss_of(char_lm.logits(ours, tf.constant(inputs)))
    got = tape.gradient(got_loss, ours)
    self.assertAlmostEqual(float(got_loss), float(want_loss), places=6)
    for name, g, w in zip(('embeddings', 'kernel', 'recurrent_kernel',
                           'bias', 'output_kernel', 'output_bias'), got,
                          want):
      np.testing.assert_allclose(tf.convert_to_tensor(g),
                                 tf.convert_to_tensor(w), atol=1e-6,
                                 err_msg=name)

  def test_loss_and_accuracy_ignore_padding(self):
    model = char_lm.build_char_lm(vocab_size=6, embedding_dim=3,
                                  gru_units=4, sequence_length=3, seed=0)
    inputs = np.array([[2, 4, 5], [2, 5, 0]], np.int32)
    targets = np.array([[4, 5, 3], [5, 3, 0]], np.int32)
    trainable, _ = model.initial_weights
    logits = char_lm.logits([tf.constant(w) for w in trainable],
                            tf.constant(inputs)).numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    valid = targets != 0
    picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    want_loss = -picked[valid].mean()
    want_accuracy = (logits.argmax(-1) == targets)[valid].mean()

    @tf.function
    def run():
      output = model.predict_on_batch(model.initial_weights, inputs)
      loss = model.loss(output, targets)
      state = model.update_metrics_state(
          model.initialize_metrics_state(),
          labels=targets,
          batch_output=tff.learning.models.BatchOutput(
              predictions=output, loss=loss, num_examples=2))
      return loss, model.finalize_metrics(state)

    loss, metrics = run()
    self.assertAlmostEqual(float(loss), want_loss, places=5)
    self.assertAlmostEqual(float(metrics['loss']), want_loss, places=5)
    self.assertAlmostEqual(float(metrics['accuracy']), want_accuracy,
                           places=6)
    self.assertEqual(float(metrics['num_tokens']), 5.0)
    self.assertEqual(int(metrics['num_examples']), 2)

  def test_sgd_steps_learn_a_repeated_text(self):
    sequences = cs.text_sequences(['abcabcabc' * 4], 12)
    model = char_lm.build_char_lm(embedding_dim=8, gru_units=16,
                                  sequence_length=12, seed=0)
    weights = [tf.constant(w) for w in model.initial_weights[0]]

    @tf.function
    def step(weights):
      with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = model.loss(
            model.predict_on_batch((weights, ()), sequences.inputs),
            sequences.targets)
      gradients = tape.gradient(loss, weights)
      return loss, [w - 0.5 * tf.convert_to_tensor(g)
                    for w, g in zip(weights, gradients)]

    first, weights = step(weights)
    for _ in range(60):
      last, weights = step(weights)
    self.assertLess(float(last), 0.5 * float(first))

  def test_bad_sizes(self):
    for kwargs in (dict(vocab_size=1), dict(embedding_dim=0),
                   dict(gru_units=-3), dict(sequence_length=True)):
      with self.assertRaisesRegex(ValueError, 'must be an int'):
        char_lm.build_char_lm(**kwargs)


if __name__ == '__main__':
  absltest.main()
