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
"""A small image CNN as a variable-free `tff.learning.models.FunctionalModel`.

The guided-model-merging paper ("Guided Model Merging for Hybrid Data
Learning", Feddle; appendix D, "Models", and appendix F.2) trains a small CNN
from scratch on 32x32 images. The paper only gives its layer counts: three
convolutional layers, one pooling layer and two fully connected layers. The
rest is assumed here and can be changed through the arguments:

*   3x3 convolutions with 'VALID' padding and stride 1, each followed by ReLU
    (Keras' default padding; the paper does not say). Widths default to
    32, 64, 64 as in TensorFlow's CIFAR-10 CNN tutorial.
*   The single 2x2 max-pool (stride 2, 'VALID') after the last convolution,
    since the paper does not place it.
*   Flatten, a dense hidden layer (64 units by default) with ReLU, and a dense
    output layer giving one logit per class.

For 32x32x3 inputs the feature maps are 30, 28, 26 and, after pooling, 13
pixels wide, so the first dense layer has 13 * 13 * 64 inputs.

Like `dense.py`, the model is a pure function of its weights (no
`tf.Variable`, no Keras at run time), so servers can evaluate and
differentiate it at merged weights. The trainable weights are, in order,
kernel and bias of each convolution, then of each dense layer; the last
`HEAD_SIZE` arrays (output kernel and bias) are the classification head, and
`features` maps an image batch through the rest (the "body") to the hidden
representation that Feddle's out-of-domain surrogate loss works on.
"""

import collections
from collections.abc import Sequence
from typing import Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

NUM_CONV_LAYERS = 3
KERNEL_SIZE = 3
POOL_SIZE = 2
PADDING = 'VALID'
# The output layer's kernel and bias.
HEAD_SIZE = 2
# Kernel and bias of every conv layer and of the hidden dense layer.
BODY_SIZE = 2 * NUM_CONV_LAYERS + 2
NUM_WEIGHTS = BODY_SIZE + HEAD_SIZE
# Three VALID 3x3 convolutions shrink each side by 6; the pool then needs 2.
MIN_INPUT_SIZE = NUM_CONV_LAYERS * (KERNEL_SIZE - 1) + POOL_SIZE


def _spatial_after_body(height: int, width: int) -> tuple[int, int]:
  """Height and width of the pooled feature map."""
  shrink = NUM_CONV_LAYERS * (KERNEL_SIZE - 1)
  return (height - shrink) // POOL_SIZE, (width - shrink) // POOL_SIZE


def _check_weights(weights, expected: int, name: str) -> None:
  if not isinstance(weights, Sequence) or len(weights) != expected:
    got = len(weights) if isinstance(weights, Sequence) else type(weights)
    raise ValueError(f'`{name}` must be a sequence of {expected} arrays, '
                     f'got {got!r}.')


def features(weights_body, x):
  """The hidden representation fed to the classification head.

  Args:
    weights_body: The first `BODY_SIZE` trainable arrays (conv kernels and
      biases, then the hidden dense kernel and bias), i.e. all trainable
      weights but the last `HEAD_SIZE`.
    x: float32[batch, height, width, channels] images.

  Returns:
    float32[batch, dense_units], the ReLU output of the hidden dense layer.

  Raises:
    ValueError: If `weights_body` does not hold `BODY_SIZE` arrays.
  """
  _check_weights(weights_body, BODY_SIZE, 'weights_body')
  h = x
  for layer in range(NUM_CONV_LAYERS):
    h = tf.nn.conv2d(h, weights_body[2 * layer], strides=1, padding=PADDING)
    h = tf.nn.relu(h + weights_body[2 * layer + 1])
  h = tf.nn.max_pool2d(h, ksize=POOL_SIZE, strides=POOL_SIZE,
                       padding='VALID')
  # Row-major (height, width, channel) flattening, as Keras' Flatten does.
  h = tf.reshape(h, [tf.shape(h)[0], -1])
  return tf.nn.relu(tf.matmul(h, weights_body[-2]) + weights_body[-1])


def logits(weights, x):
  """Class logits of the CNN.

  Args:
    weights: All `NUM_WEIGHTS` trainable arrays, in model order (the first
      element of a FunctionalModel's `(trainable, non_trainable)` weights).
    x: float32[batch, height, width, channels] images.

  Returns:
    float32[batch, num_classes] logits.

  Raises:
    ValueError: If `weights` does not hold `NUM_WEIGHTS` arrays.
  """
  _check_weights(weights, NUM_WEIGHTS, 'weights')
  kernel, bias = weights[BODY_SIZE:]
  return tf.matmul(features(weights[:BODY_SIZE], x), kernel) + bias


def multiclass_metric_fns():
  """Metrics (mean loss, top-1 accuracy, example count) for logits outputs.

  Like `dense.mean_metric_fns`, the state holds sums so that
  `tff.learning.metrics.sum_then_finalize` gives example-weighted means over
  a cohort; accuracy compares the argmax of the logits with integer labels.

  Returns:
    The `(initialize, update, finalize)` functions of a FunctionalModel.
  """

  def initialize():
    return collections.OrderedDict(
        loss=tf.zeros([2], tf.float32),
        accuracy=tf.zeros([2], tf.float32),
        num_examples=tf.zeros([], tf.int64),
    )

  def update(state, labels, batch_output, sample_weight=None):
    del sample_weight  # Unused.
    n = tf.cast(batch_output.num_examples, tf.float32)
    predicted = tf.argmax(batch_output.predictions, axis=-1,
                          output_type=tf.int32)
    labels = tf.reshape(tf.cast(labels, tf.int32), tf.shape(predicted))
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32))
    return collections.OrderedDict(
        loss=state['loss'] + tf.stack([batch_output.loss * n, n]),
        accuracy=state['accuracy'] + tf.stack([correct, n]),
        num_examples=state['num_examples']
        + tf.cast(batch_output.num_examples, tf.int64),
    )

  def finalize(state):
    return collections.OrderedDict(
        loss=tf.math.divide_no_nan(state['loss'][0], state['loss'][1]),
        accuracy=tf.math.divide_no_nan(state['accuracy'][0],
                                       state['accuracy'][1]),
        num_examples=state['num_examples'],
    )

  return initialize, update, finalize


def _is_positive_int(value) -> bool:
  return (isinstance(value, (int, np.integer))
          and not isinstance(value, bool) and value > 0)


def _glorot(rng: np.random.Generator, shape, fan_in: int,
            fan_out: int) -> np.ndarray:
  limit = np.sqrt(6.0 / (fan_in + fan_out))
  return rng.uniform(-limit, limit, shape).astype(np.float32)


def initial_weights(input_shape=(32, 32, 3), num_classes: int = 10,
                    conv_filters: Sequence[int] = (32, 64, 64),
                    dense_units: int = 64, seed: int = 0):
  """Glorot-uniform kernels (Keras' fan convention) and zero biases.

  Arguments are as in `build_cnn`, which validates them.

  Returns:
    A tuple of `NUM_WEIGHTS` float32 numpy arrays.
  """
  rng = np.random.default_rng(seed)
  weights = []
  channels = input_shape[2]
  area = KERNEL_SIZE * KERNEL_SIZE
  for filters in conv_filters:
    weights.append(_glorot(rng, (KERNEL_SIZE, KERNEL_SIZE, channels, filters),
                           area * channels, area * filters))
    weights.append(np.zeros([filters], np.float32))
    channels = filters
  height, width = _spatial_after_body(input_shape[0], input_shape[1])
  flat = height * width * channels
  for fan_in, fan_out in ((flat, dense_units), (dense_units, num_classes)):
    weights.append(_glorot(rng, (fan_in, fan_out), fan_in, fan_out))
    weights.append(np.zeros([fan_out], np.float32))
  return tuple(weights)


def build_cnn(
    input_shape: Sequence[int] = (32, 32, 3),
    num_classes: int = 10,
    conv_filters: Sequence[int] = (32, 64, 64),
    dense_units: int = 64,
    seed: int = 0,
    body_weights: Optional[Sequence[np.ndarray]] = None,
) -> tff.learning.models.FunctionalModel:
  """The Feddle paper's small CNN (module docstring) as a FunctionalModel.

  Its loss is the mean sparse softmax cross-entropy of the logits;
  `predict_on_batch` returns `float32[batch, num_classes]` logits; metrics
  are `loss`, `accuracy` (argmax of the logits) and `num_examples`.

  Args:
    input_shape: `(height, width, channels)` of the images; height and width
      must be at least `MIN_INPUT_SIZE` (8).
    num_classes: Number of classes, >= 2 (labels are `0..num_classes-1`).
    conv_filters: Output channels of the three convolutions.
    dense_units: Width of the hidden dense layer.
    seed: Seeds the Glorot-uniform initial kernels (integer >= 0).
    body_weights: Optional initial body (the first `BODY_SIZE` trainable
      arrays, e.g. a pretrained backbone) in place of the seeded one; the
      head is drawn from `seed` either way, so it is the same as without.

  Returns:
    A `tff.learning.models.FunctionalModel` with input spec
    `(float32[?, height, width, channels], int32[?])` and no non-trainable
    weights.

  Raises:
    ValueError: If an argument has the wrong type or range.
  """
  input_shape = tuple(input_shape)
  if len(input_shape) != 3 or not all(
      _is_positive_int(d) for d in input_shape):
    raise ValueError('`input_shape` must be 3 positive ints (height, width, '
                     f'channels), got {input_shape!r}.')
  if min(input_shape[:2]) < MIN_INPUT_SIZE:
    raise ValueError(
        f'Images must be at least {MIN_INPUT_SIZE}x{MIN_INPUT_SIZE} for three '
        f"'VALID' 3x3 convolutions and a 2x2 pool, got {input_shape!r}.")
  if not _is_positive_int(num_classes) or num_classes < 2:
    raise ValueError(f'`num_classes` must be an int >= 2, got '
                     f'{num_classes!r}.')
  conv_filters = tuple(conv_filters)
  if len(conv_filters) != NUM_CONV_LAYERS or not all(
      _is_positive_int(f) for f in conv_filters):
    raise ValueError(f'`conv_filters` must be {NUM_CONV_LAYERS} positive ints, '
                     f'got {conv_filters!r}.')
  if not _is_positive_int(dense_units):
    raise ValueError(f'`dense_units` must be a positive int, got '
                     f'{dense_units!r}.')
  if (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)
      or seed < 0):
    raise ValueError(f'`seed` must be an int >= 0, got {seed!r}.')
  input_shape = tuple(int(d) for d in input_shape)
  weights = initial_weights(input_shape, int(num_classes), conv_filters,
                            int(dense_units), int(seed))
  if body_weights is not None:
    _check_weights(body_weights, BODY_SIZE, 'body_weights')
    for i, (given, expected) in enumerate(zip(body_weights, weights)):
      if np.shape(given) != expected.shape:
        raise ValueError(f'`body_weights[{i}]` has shape {np.shape(given)}, '
                         f'expected {expected.shape}.')
    weights = tuple(np.asarray(w, np.float32) for w in body_weights) + (
        weights[BODY_SIZE:])

  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def predict_on_batch(model_weights, x, training=True):
    del training  # No dropout or batch norm.
    trainable, _ = model_weights
    return logits(trainable, x)

  def loss(output, label, sample_weight=None):
    del sample_weight  # Unused.
    label = tf.reshape(tf.cast(label, tf.int32), [-1])
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label,
                                                       logits=output))

  return tff.learning.models.FunctionalModel(
      initial_weights=(weights, ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      metrics_fns=multiclass_metric_fns(),
      input_spec=(
          tf.TensorSpec([None, *input_shape], tf.float32),
          tf.TensorSpec([None], tf.int32),
      ),
  )
