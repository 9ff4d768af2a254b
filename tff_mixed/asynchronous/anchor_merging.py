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
"""Merging anchors into a model, and the gradient in the merge coefficients.

Feddle ("Guided Model Merging for Hybrid Data Learning", Zhu et al.) moves
the global model x to x + sum_m c_m abar_m (eq. 6). Its memory-efficient
search (appendix E, eqs. 15-16) keeps the anchors out of the autodiff graph:
one backward pass gives g = dL/dw at the merged weights, and
dL/dc_m = <g, abar_m>. Pure TensorFlow on sequences of weight arrays.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tff_mixed.core import model_ops
from tff_mixed.core import validation

Weights = Sequence[Any]
# loss_fn(weights, batch) -> scalar loss tensor, traceable by tf.function.
LossFn = Callable[[Sequence[tf.Tensor], Any], tf.Tensor]


# ----------------------------------------------------------------------------
# Merging and the coefficient gradient (eqs. 6, 15, 16).


def stack_anchors(anchors: Sequence[Sequence[np.ndarray]],
                  reference: Sequence[np.ndarray]) -> list[tf.Tensor]:
  """Per weight array, the anchors stacked along a new axis 0: [M, ...]."""
  return [
      tf.constant(np.stack([np.asarray(a[i], r.dtype) for a in anchors]))
      for i, r in enumerate(reference)
  ]


def merge_tf(base, stacked, coefficients):
  """x + sum_m c_m abar_m, per weight array (eqs. 6 and 15)."""
  return [
      b + tf.tensordot(tf.cast(coefficients, s.dtype), s, axes=1)
      for b, s in zip(base, stacked)
  ]


def _project(gradients, stacked):
  """dL/dc_m = <dL/dw, abar_m> summed over all weight arrays (eq. 16)."""
  terms = []
  for g, s in zip(gradients, stacked):
    rows = tf.reshape(s, [tf.shape(s)[0], -1])
    terms.append(tf.cast(tf.linalg.matvec(rows, tf.reshape(g, [-1])),
                         tf.float32))
  return tf.add_n(terms)


def loss_and_coefficient_gradient(loss_fn, base, stacked, coefficients,
                                  batch):
  """L at x + sum_m c_m abar_m and dL/dc, by one backward pass (eqs. 15-16)."""
  # The merged weights are computed outside the tape: the anchors never enter
  # the autodiff graph (eq. 15, stop_grad), and one backward pass through the
  # model gives the coefficient gradient by inner products (eq. 16).
  merged = merge_tf(base, stacked, coefficients)
  loss, gradients = model_ops.trainable_loss_and_gradient(loss_fn, merged,
                                                          batch)
  return tf.cast(loss, tf.float32), _project(gradients, stacked)


def merge_anchors(weights: Weights, anchors: Sequence[Weights],
                  coefficients: Any) -> tuple[np.ndarray, ...]:
  """The merged model x + sum_m c_m abar_m (eq. 6).

  Args:
    weights: The global model x, a sequence of arrays.
    anchors: The (normalized) anchors abar_m.
    coefficients: `[len(anchors)]` coefficients c.

  Returns:
    The merged weights as a tuple of numpy arrays (dtypes of `weights`).

  Raises:
    ValueError: If shapes or the number of coefficients do not match.
  """
  base = validation.as_arrays(weights, 'weights')
  coefficients = np.asarray(coefficients, np.float32).reshape([-1])
  if coefficients.shape[0] != len(anchors):
    raise ValueError(f'{coefficients.shape[0]} coefficients for '
                     f'{len(anchors)} anchors.')
  if not anchors:
    return tuple(np.array(b) for b in base)
  anchors = [validation.check_like(a, base, f'anchors[{i}]')
             for i, a in enumerate(anchors)]
  merged = merge_tf([tf.constant(b) for b in base],
                    stack_anchors(anchors, base), tf.constant(coefficients))
  return tuple(m.numpy() for m in merged)


def coefficient_gradient(loss_fn: LossFn, weights: Weights,
                         anchors: Sequence[Weights], coefficients: Any,
                         batch: Any) -> np.ndarray:
  """dL/dc at c by one backward pass and inner products (eqs. 15-16).

  Useful to compare search directions, e.g. the cosine similarity of the
  in-domain and out-of-domain coefficient gradients at the same point (eq. 7).

  Args:
    loss_fn: `loss_fn(weights, batch) -> scalar` at merged weights.
    weights: The global model x.
    anchors: The (normalized) anchors abar_m.
    coefficients: `[len(anchors)]` coefficients c.
    batch: One batch as `loss_fn` expects it.

  Returns:
    float32 `[len(anchors)]` gradient of the loss (no fallback term).
  """
  base = validation.as_arrays(weights, 'weights')
  anchors = [validation.check_like(a, base, f'anchors[{i}]')
             for i, a in enumerate(anchors)]
  coefficients = np.asarray(coefficients, np.float32).reshape([-1])
  if coefficients.shape[0] != len(anchors) or not anchors:
    raise ValueError(f'{coefficients.shape[0]} coefficients for '
                     f'{len(anchors)} anchors; need one per anchor, >= 1.')
  # Eager: a diagnostic called once per round would retrace a tf.function
  # (new Python closures) every call.
  batch = tf.nest.map_structure(tf.convert_to_tensor, batch)
  return loss_and_coefficient_gradient(
      loss_fn, [tf.constant(b) for b in base], stack_anchors(anchors, base),
      tf.constant(coefficients), batch)[1].numpy()

