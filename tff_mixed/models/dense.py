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
"""Small variable-free models as `tff.learning.models.FunctionalModel`s.

Mixed FL computes the same loss on clients (f_i) and at the server (f_c), so
models here are pure functions of their weights: the server can differentiate
them at any weights without `tf.Variable`s, as TFF's own functional FedAvg
path does.
"""

import collections
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff


def mean_metric_fns(with_accuracy: bool):
  """Metrics (mean loss, optional binary accuracy, example count).

  The state holds sums, so `tff.learning.metrics.sum_then_finalize` gives
  example-weighted means over the cohort, like Keras metrics in TFF.
  """

  def initialize():
    state = collections.OrderedDict(
        loss=tf.zeros([2], tf.float32),
        num_examples=tf.zeros([], tf.int64),
    )
    if with_accuracy:
      state['accuracy'] = tf.zeros([2], tf.float32)
    return state

  def update(state, labels, batch_output, sample_weight=None):
    del sample_weight  # Unused.
    n = tf.cast(batch_output.num_examples, tf.float32)
    new_state = collections.OrderedDict(
        loss=state['loss'] + tf.stack([batch_output.loss * n, n]),
        num_examples=state['num_examples']
        + tf.cast(batch_output.num_examples, tf.int64),
    )
    if with_accuracy:
      predicted = tf.cast(batch_output.predictions > 0.0, tf.float32)
      labels = tf.reshape(tf.cast(labels, tf.float32), tf.shape(predicted))
      correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32))
      new_state['accuracy'] = state['accuracy'] + tf.stack([correct, n])
    return new_state

  def finalize(state):
    result = collections.OrderedDict(
        loss=tf.math.divide_no_nan(state['loss'][0], state['loss'][1]),
        num_examples=state['num_examples'],
    )
    if with_accuracy:
      result['accuracy'] = tf.math.divide_no_nan(state['accuracy'][0],
                                                 state['accuracy'][1])
    return result

  return initialize, update, finalize


def build_binary_classifier(
    input_dim: int,
    hidden_units: Sequence[int] = (64,),
    seed: int = 0,
    input_shift: float = 0.0,
    input_scale: float = 1.0,
) -> tff.learning.models.FunctionalModel:
  """A fully connected binary classifier (ReLU hidden layers, one logit).

  The paper's smile classifier (arXiv:2205.13655, section 4.1) is this model
  with one hidden layer of 64 units. Its loss is binary cross-entropy on the
  logit; `predict_on_batch` returns logits of shape `[batch, 1]`; metrics are
  `loss`, `accuracy` (logit > 0 means class 1) and `num_examples`.

  Args:
    input_dim: Number of input features (inputs are `float32[?, input_dim]`).
    hidden_units: Width of each hidden layer; empty for logistic regression.
    seed: Seeds the Glorot-uniform initial weights.
    input_shift: The first layer sees `(x - input_shift) / input_scale`: a
      fixed standardization of the inputs, part of the model, so the
      clients, the server's central loss and evaluation all see the same
      inputs (the default 0 and 1 leave them as given).
    input_scale: See `input_shift`; positive.

  Returns:
    A `tff.learning.models.FunctionalModel` with input spec
    `(float32[?, input_dim], float32[?, 1])`.

  Raises:
    ValueError: If `input_dim` or a hidden width is not positive, or
      `input_scale` is not a positive finite number.
  """
  if not isinstance(input_dim, int) or input_dim <= 0:
    raise ValueError(f'`input_dim` must be a positive int, got {input_dim!r}.')
  if any(not isinstance(u, int) or u <= 0 for u in hidden_units):
    raise ValueError('`hidden_units` must hold positive ints, got '
                     f'{tuple(hidden_units)!r}.')
  if not (np.isfinite(input_shift) and np.isfinite(input_scale)
          and input_scale > 0):
    raise ValueError('`input_shift` must be finite and `input_scale` '
                     f'positive, got {input_shift!r} and {input_scale!r}.')
  standardize = input_shift != 0.0 or input_scale != 1.0
  rng = np.random.default_rng(seed)
  sizes = [input_dim, *hidden_units, 1]
  trainable = []
  for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    trainable.append(
        rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
    trainable.append(np.zeros([fan_out], np.float32))
  num_layers = len(sizes) - 1

  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def predict_on_batch(model_weights, x, training=True):
    del training  # No dropout or batch norm.
    weights, _ = model_weights
    h = x
    if standardize:
      h = (h - input_shift) / input_scale
    for layer in range(num_layers):
      h = tf.matmul(h, weights[2 * layer]) + weights[2 * layer + 1]
      if layer < num_layers - 1:
        h = tf.nn.relu(h)
    return h

  def loss(output, label, sample_weight=None):
    del sample_weight  # Unused.
    label = tf.reshape(tf.cast(label, tf.float32), tf.shape(output))
    return tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=output))

  return tff.learning.models.FunctionalModel(
      initial_weights=(tuple(trainable), ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      metrics_fns=mean_metric_fns(with_accuracy=True),
      input_spec=(
          tf.TensorSpec([None, input_dim], tf.float32),
          tf.TensorSpec([None, 1], tf.float32),
      ),
  )


def build_linear_regression(
    input_dim: int, initial_weights=None
) -> tff.learning.models.FunctionalModel:
  """Linear regression `y = x w + b` with mean squared error loss.

  Small enough that one round of every algorithm can be computed by hand; the
  tests use it as their numeric oracle.

  Args:
    input_dim: Number of input features.
    initial_weights: Optional `(w, b)` numpy arrays of shapes
      `[input_dim, 1]` and `[1]`; zeros by default.

  Returns:
    A `tff.learning.models.FunctionalModel` with input spec
    `(float32[?, input_dim], float32[?, 1])`.
  """
  if not isinstance(input_dim, int) or input_dim <= 0:
    raise ValueError(f'`input_dim` must be a positive int, got {input_dim!r}.')
  if initial_weights is None:
    initial_weights = (np.zeros([input_dim, 1], np.float32),
                       np.zeros([1], np.float32))
  initial_weights = tuple(np.asarray(w, np.float32) for w in initial_weights)

  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def predict_on_batch(model_weights, x, training=True):
    del training  # Unused.
    (w, b), _ = model_weights
    return tf.matmul(x, w) + b

  def loss(output, label, sample_weight=None):
    del sample_weight  # Unused.
    return tf.reduce_mean(tf.square(output - label))

  return tff.learning.models.FunctionalModel(
      initial_weights=(initial_weights, ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      metrics_fns=mean_metric_fns(with_accuracy=False),
      input_spec=(
          tf.TensorSpec([None, input_dim], tf.float32),
          tf.TensorSpec([None, 1], tf.float32),
      ),
  )
