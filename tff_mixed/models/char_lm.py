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
"""A next-character GRU language model as a variable-free FunctionalModel.

The mixed FL paper's language model (arXiv:2205.13655, appendix B.2.2) is an
embedding (256), one GRU layer (1024 units) and a softmax over the
characters, adapted from TF's "Text generation with an RNN" tutorial. Here
it is written as a pure function of its weights (like `dense.py`), so the
server can differentiate the central loss at any weights without
`tf.Variable`s; the GRU follows Keras' `reset_after=True` equations.

Padding targets (id 0) carry no loss and are not counted in accuracy.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.models import char_vocabulary

# Trainable weights, in order.
EMBEDDINGS, KERNEL, RECURRENT_KERNEL, GRU_BIAS, OUTPUT_KERNEL, OUTPUT_BIAS = (
    range(6))


def _glorot(rng, fan_in, fan_out):
  limit = np.sqrt(6.0 / (fan_in + fan_out))
  return rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)


def _orthogonal_blocks(rng, units, blocks):
  """Keras' orthogonal initializer for each of the z, r, h recurrent parts."""
  parts = []
  for _ in range(blocks):
    q, r = np.linalg.qr(rng.normal(size=(units, units)))
    parts.append(q * np.sign(np.diag(r)))
  return np.concatenate(parts, axis=1).astype(np.float32)


def initial_weights(vocab_size: int, embedding_dim: int, gru_units: int,
                    seed: int = 0):
  rng = np.random.default_rng(seed)
  return (
      rng.uniform(-0.05, 0.05, (vocab_size, embedding_dim)).astype(
          np.float32),
      _glorot(rng, embedding_dim, 3 * gru_units),
      _orthogonal_blocks(rng, gru_units, 3),
      np.zeros([2, 3 * gru_units], np.float32),
      _glorot(rng, gru_units, vocab_size),
      np.zeros([vocab_size], np.float32),
  )


def _gru_forward(x, recurrent_kernel, recurrent_bias):
  """The recurrence on input projections `x` `[T, B, 3U]`.

  Returns the states `[T, B, U]` and, per step, what the backward pass
  reuses: the update and reset gates, the candidate and the recurrent
  projection of the candidate (each `[T, B, U]`), and h0.
  """
  units = tf.shape(recurrent_kernel)[0]
  h0 = tf.zeros(tf.stack([tf.shape(x)[1], units]), x.dtype)

  def step(carry, x_t):
    h = carry[0]
    x_z, x_r, x_h = tf.split(x_t, 3, axis=-1)
    h_z, h_r, h_h = tf.split(
        tf.matmul(h, recurrent_kernel) + recurrent_bias, 3, axis=-1)
    z = tf.sigmoid(x_z + h_z)
    r = tf.sigmoid(x_r + h_r)
    candidate = tf.tanh(x_h + r * h_h)
    return z * h + (1.0 - z) * candidate, z, r, candidate, h_h

  return tf.scan(step, x, initializer=(h0,) * 5), h0


@tf.custom_gradient
def gru_states(x, recurrent_kernel, recurrent_bias):
  """Keras' GRU (`reset_after=True`) states of input projections `x`.

  `x` is `[T, B, 3U]` (the inputs' kernel projections plus the input bias);
  the result is `[T, B, U]`, from a zero initial state.

  The gradient is written out (backpropagation through time as a reverse
  scan) rather than left to autodiff, for two reasons, both measured on
  2 cores with GRU 64 (2026-11-27): autodiff of `tf.scan` keeps its
  activations in TensorList accumulators that `tf.vectorized_map` cannot
  convert, so many clients could not train in lockstep
  (`tff_mixed.simulation.lockstep`); and the written-out pass is faster even for
  one client (16 local steps: 0.22 s against 0.33 s). The kernel's and the
  bias' gradients are summed over steps after the scan, in one product.
  tests/char_lm_test.py checks it against autodiff of the same recurrence.
  """
  (states, z, r, candidate, h_h), h0 = _gru_forward(x, recurrent_kernel,
                                                    recurrent_bias)
  previous = tf.concat([h0[tf.newaxis], states[:-1]], axis=0)

  def gradient(upstream):

    def back_step(carry, inputs):
      g, z_t, r_t, c_t, hh_t, previous_t = inputs
      d = carry[0] + g
      d_candidate = d * (1.0 - z_t) * (1.0 - tf.square(c_t))
      d_z = d * (previous_t - c_t) * z_t * (1.0 - z_t)
      d_r = d_candidate * hh_t * r_t * (1.0 - r_t)
      # Gradients of the input projections, and of the recurrent ones
      # (whose candidate part passes through the reset gate).
      d_x = tf.concat([d_z, d_r, d_candidate], axis=-1)
      d_recurrent = tf.concat([d_z, d_r, d_candidate * r_t], axis=-1)
      d_previous = d * z_t + tf.matmul(d_recurrent, recurrent_kernel,
                                       transpose_b=True)
      return d_previous, d_x, d_recurrent

    zeros = tf.zeros_like(x[0])
    _, d_x, d_recurrent = tf.scan(
        back_step, (upstream, z, r, candidate, h_h, previous),
        initializer=(tf.zeros_like(h0), zeros, zeros), reverse=True)
    return (d_x, tf.einsum('tbu,tbg->ug', previous, d_recurrent),
            tf.reduce_sum(d_recurrent, axis=[0, 1]))

  return states, gradient


def logits(weights, inputs):
  """`[B, T]` character ids to `[B, T, vocab]` next-character logits."""
  (embeddings, kernel, recurrent_kernel, bias, output_kernel,
   output_bias) = weights
  x = tf.gather(embeddings, inputs)
  # The input projections of every step at once; the scan does the rest.
  x = tf.einsum('bte,eg->tbg', x, kernel) + bias[0]
  states = gru_states(x, recurrent_kernel, bias[1])
  return tf.einsum('tbu,uv->btv', states, output_kernel) + output_bias


def masked_sums(logits_, targets):
  """`(summed cross-entropy, correct predictions, tokens)` over non-padding."""
  mask = tf.cast(tf.not_equal(targets, char_vocabulary.PAD_ID), tf.float32)
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=targets, logits=logits_)
  predicted = tf.argmax(logits_, axis=-1, output_type=targets.dtype)
  correct = tf.cast(tf.equal(predicted, targets), tf.float32)
  return (tf.reduce_sum(losses * mask), tf.reduce_sum(correct * mask),
          tf.reduce_sum(mask))


def _metric_fns():
  """Token-weighted loss and accuracy (padding excluded), sequence count."""

  def initialize():
    return collections.OrderedDict(
        loss=tf.zeros([2], tf.float32), accuracy=tf.zeros([2], tf.float32),
        num_examples=tf.zeros([], tf.int64))

  def update(state, labels, batch_output, sample_weight=None):
    del sample_weight  # Unused.
    loss, correct, tokens = masked_sums(batch_output.predictions, labels)
    return collections.OrderedDict(
        loss=state['loss'] + tf.stack([loss, tokens]),
        accuracy=state['accuracy'] + tf.stack([correct, tokens]),
        num_examples=state['num_examples'] + tf.cast(
            batch_output.num_examples, tf.int64))

  def finalize(state):
    return collections.OrderedDict(
        loss=tf.math.divide_no_nan(state['loss'][0], state['loss'][1]),
        accuracy=tf.math.divide_no_nan(state['accuracy'][0],
                                       state['accuracy'][1]),
        num_tokens=state['loss'][1],
        num_examples=state['num_examples'])

  return initialize, update, finalize


def build_char_lm(
    vocab_size: int = char_vocabulary.VOCAB_SIZE,
    embedding_dim: int = 256,
    gru_units: int = 1024,
    sequence_length: int = char_vocabulary.DEFAULT_SEQUENCE_LENGTH,
    seed: int = 0,
) -> tff.learning.models.FunctionalModel:
  """The character GRU language model as a `FunctionalModel`.

  Batches are `(inputs int32[B, T], targets int32[B, T])`;
  `predict_on_batch` returns logits `[B, T, vocab_size]`; the loss is the
  mean cross-entropy over non-padding targets; metrics are the token-weighted
  `loss` and `accuracy` (padding excluded), `num_tokens` and `num_examples`
  (sequences).

  Args:
    vocab_size: Output classes (the default: `char_vocabulary.VOCAB_SIZE`).
    embedding_dim: Embedding size (the paper: 256).
    gru_units: GRU units (the paper: 1024).
    sequence_length: T.
    seed: Seeds the initial weights.

  Returns:
    The model.

  Raises:
    ValueError: If a size is not a positive int (vocab_size at least 2).
  """
  for name, value, low in (('vocab_size', vocab_size, 2),
                           ('embedding_dim', embedding_dim, 1),
                           ('gru_units', gru_units, 1),
                           ('sequence_length', sequence_length, 1)):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
      raise ValueError(f'`{name}` must be an int >= {low}, got {value!r}.')
  weights = initial_weights(vocab_size, embedding_dim, gru_units, seed)

  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def predict_on_batch(model_weights, x, training=True):
    del training  # No dropout.
    trainable, _ = model_weights
    return logits(trainable, x)

  def loss(output, label, sample_weight=None):
    del sample_weight  # Padding is masked instead.
    total, _, tokens = masked_sums(output, label)
    return tf.math.divide_no_nan(total, tokens)

  return tff.learning.models.FunctionalModel(
      initial_weights=(weights, ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      metrics_fns=_metric_fns(),
      input_spec=(tf.TensorSpec([None, sequence_length], tf.int32),
                  tf.TensorSpec([None, sequence_length], tf.int32)),
  )
