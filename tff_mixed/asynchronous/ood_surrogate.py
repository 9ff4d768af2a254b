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
"""Feddle's out-of-domain surrogate loss: a linear head on the server labels.

When the server's data come from another domain, their labels are not the
task's. Feddle ("Guided Model Merging for Hybrid Data Learning", Zhu et al.,
eqs. 8-9) then fits a new linear head theta on the server's own labels over
the frozen features of the model body (eq. 8), and searches the body's
merging coefficients with that surrogate loss h_theta (eq. 9). The fitted head
is only a surrogate and never enters the model weights. Pure TensorFlow.
"""

from collections.abc import Callable
import itertools
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import anchor_merging
from tff_mixed.asynchronous import server_data as server_data_lib
from tff_mixed.core import central_objective
from tff_mixed.core import traced_cache
from tff_mixed.core import validation


class LinearHead(NamedTuple):
  """The surrogate classifier head theta of eq. 8: logits = f kernel + bias."""
  kernel: np.ndarray
  bias: np.ndarray


def linear_head_loss(head: Any, features: tf.Tensor,
                     labels: tf.Tensor) -> tf.Tensor:
  """Mean softmax cross-entropy of `head` on features (the h of eqs. 8-9).

  Args:
    head: A `LinearHead` (arrays or tensors), kernel `[d, C]`, bias `[C]`.
    features: `[batch, ...]` body features, flattened to `[batch, d]`.
    labels: Class ids in [0, C), any layout with `batch` elements.

  Returns:
    A scalar tensor.
  """
  kernel = tf.convert_to_tensor(head[0])
  bias = tf.convert_to_tensor(head[1], kernel.dtype)
  features = tf.cast(tf.convert_to_tensor(features), kernel.dtype)
  features = tf.reshape(features, [tf.shape(features)[0], -1])
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  logits = tf.matmul(features, kernel) + bias
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))


def fit_linear_head(body_features_fn: Callable[[tf.Tensor], tf.Tensor],
                    server_data: Any, num_classes: int, steps: int,
                    lr: float) -> LinearHead:
  """Fits the surrogate head theta on the server's own labels (eq. 8).

  The body is frozen: only theta = (kernel, bias) is trained, by `steps`
  plain gradient steps of softmax regression from zeros (a convex problem, so
  the zero start is harmless and deterministic), one server batch a step.

  Args:
    body_features_fn: `x -> [batch, ...] features` of the frozen body.
    server_data: `(x, labels)` batches (Dataset, list, or one batch).
    num_classes: Number C of server classes (labels in [0, C)).
    steps: Number of gradient steps; 0 returns the zero head.
    lr: Step size.

  Returns:
    The fitted `LinearHead` (numpy arrays).

  Raises:
    ValueError: On a bad `num_classes`, `steps`, `lr` or empty data.
  """
  num_classes = validation.check_int('num_classes', num_classes, 2)
  steps = validation.check_int('steps', steps, 0)
  lr = validation.check_float('lr', lr, 0.0, strict=True)
  batches = server_data_lib.cycle_batches(server_data)
  x0, _ = central_objective.split_batch(next(batches))
  features = tf.convert_to_tensor(body_features_fn(x0))
  dim = int(np.prod(features.shape[1:]))
  dtype = features.dtype if features.dtype.is_floating else tf.float32
  kernel = tf.zeros([dim, num_classes], dtype)
  bias = tf.zeros([num_classes], dtype)

  step = _HEAD_STEPS.get(lr, lambda: _head_step(lr))
  def features_and_labels(batch):
    x, labels = central_objective.split_batch(batch)
    return tf.convert_to_tensor(body_features_fn(x)), labels

  stream = map(features_and_labels,
               server_data_lib.cycle_batches(server_data))
  batches = server_data_lib.iterable_batches(server_data)
  if isinstance(batches, list):
    # The body is frozen: one pass of features serves every later pass (a
    # Dataset may yield different batches each pass, so it is recomputed).
    stream = itertools.cycle(
        list(itertools.islice(stream, min(steps, len(batches)))))
  for features, labels in itertools.islice(stream, steps):
    kernel, bias = step(kernel, bias, features, labels)
  return LinearHead(kernel.numpy(), bias.numpy())


# The head's gradient step by step size, traced once (the fit runs at every
# out-of-domain merge).
_HEAD_STEPS = traced_cache.TracedCache()


def _head_step(lr: float):

  @tf.function(reduce_retracing=True)
  def step(kernel, bias, features, labels):
    with tf.GradientTape() as tape:
      tape.watch([kernel, bias])
      loss = linear_head_loss((kernel, bias), features, labels)
    grad_kernel, grad_bias = tape.gradient(loss, [kernel, bias])
    return kernel - lr * grad_kernel, bias - lr * grad_bias

  return step


def surrogate_loss_fn(features_fn: Callable[[list[tf.Tensor], Any], Any],
                      head: Any) -> anchor_merging.LossFn:
  """The surrogate loss h_theta of eq. 9 as a function of the body weights.

  Args:
    features_fn: `features_fn(body_weights, x) -> [batch, ...] features`.
    head: The fitted `LinearHead` theta*, held fixed.

  Returns:
    `loss_fn(body_weights, (x, labels)) -> scalar`.
  """
  head = LinearHead(np.asarray(head[0]), np.asarray(head[1]))

  def loss_fn(body, batch):
    x, labels = central_objective.split_batch(batch)
    return linear_head_loss(head, features_fn(body, x), labels)

  return loss_fn

