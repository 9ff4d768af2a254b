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
"""Per-round estimates of arXiv:2205.13655's variance and smoothness constants.

Pure TF, run at the server inside a round (`central_work.py`) from
quantities the round already has or a few extra central gradients; the
algorithm advisor (`tff_mixed/advisor/`) reads them over a window of rounds:

*   `client_variance`: sigma^2 of eq. 4, the variance of one client's
    stochastic gradient g_i(x^(t)), from the cohort's first two moments;
*   `sample_variance`: sigma_c^2 of eq. 6 at the run's |B_c|, from a few
    central batches' gradients at x^(t);
*   `secant_smoothness`: a lower bound on beta (Def. D.1) from two gradients
    of the same batches at two points.

Gradients are tuples of tensors like the trainable weights.
"""

import tensorflow as tf

from tff_mixed.core import model_types


def client_variance(mean_norm_squared, mean_gradient, num_clients):
  """sigma~^2 = S / (S - 1) * (mean_i |g_i|^2 - |mean_i g_i|^2).

  The unbiased sample variance `sum_i |g_i - g_bar|^2 / (S - 1)` of the
  cohort's probe gradients, written with the two means the server receives
  by aggregation (eq. 4: E|g_i(x) - grad f_f(x)|^2 <= sigma^2). With
  non-IID clients it also holds their dissimilarity (the sigma_f^2 of the
  remark after table 3), which enters the bounds in the same place.

  Args:
    mean_norm_squared: mean_i |g_i|^2 over the S clients (float32 scalar).
    mean_gradient: mean_i g_i, a tuple of tensors.
    num_clients: S (float32 scalar).

  Returns:
    The float32 estimate; 0 when S < 2 (no spread to see). Clamped at 0:
    the difference of means can round below it.
  """
  spread = mean_norm_squared - model_types.global_norm_squared(mean_gradient)
  correction = tf.math.divide_no_nan(num_clients, num_clients - 1.0)
  return tf.where(num_clients > 1.0,
                  tf.maximum(correction * spread, 0.0), 0.0)


def sample_variance(gradients):
  """`sum_j |g_j - g_bar|^2 / (M - 1)` over M >= 2 gradient samples.

  With the g_j independent central batches' gradients at one point this is
  an unbiased estimate of E|g_c - grad f_c|^2, the sigma_c^2 of eq. 6 at
  the batch size they were drawn with.

  Args:
    gradients: A list of M >= 2 gradients (tuples of tensors).

  Returns:
    `(variance, g_bar)`: a float32 scalar and the mean gradient.
  """
  count = len(gradients)
  if count < 2:
    raise ValueError(f'A sample variance needs 2 or more samples, got {count}.')
  mean = tuple(tf.add_n(list(parts)) / float(count)
               for parts in zip(*gradients))
  total = tf.add_n([
      model_types.global_norm_squared(
          tuple(a - b for a, b in zip(g, mean))) for g in gradients])
  return total / float(count - 1), mean


def secant_smoothness(gradient_a, gradient_b, point_a, point_b):
  """|g(b) - g(a)| / |b - a|: a lower bound on the smoothness beta.

  Def. D.1 asks |grad f(x) - grad f(y)| <= beta |x - y| for all x, y; one
  pair of points can only show that beta is at least this ratio. Both
  gradients must come from the same batches, so that sampling noise does
  not enter the difference (it would inflate the ratio by sqrt(2 sigma^2)
  over the step: successive rounds' gradients, drawn on fresh batches,
  overstate beta whenever steps are small).

  Returns:
    The float32 ratio, 0 when the points coincide.
  """
  gradient_change = model_types.global_norm_squared(
      tuple(b - a for a, b in zip(gradient_a, gradient_b)))
  step = model_types.global_norm_squared(
      tuple(b - a for a, b in zip(point_a, point_b)))
  return tf.sqrt(tf.math.divide_no_nan(gradient_change, step))
