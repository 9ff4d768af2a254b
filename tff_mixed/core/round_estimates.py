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

Pure TF, run at the server inside a round from quantities the round
already has or a few extra central gradients (`central_work.py` computes
sigma_c^2 and beta; `build_cohort_diagnostics` the rest, after
aggregation); the algorithm advisor (`tff_mixed/advisor/`) reads them over a
window of rounds:

*   `bgd_estimates`: the sampled (G, B)-BGD constants G~_t^2, B~_t^2 of
    eq. 7;
*   `client_variance`: sigma^2 of eq. 4, the variance of one client's
    stochastic gradient g_i(x^(t)), from the cohort's first two moments;
*   `sample_variance`: sigma_c^2 of eq. 6 at the run's |B_c|, from a few
    central batches' gradients at x^(t);
*   `secant_smoothness`: a lower bound on beta (Def. D.1) from two gradients
    of the same batches at two points.

Gradients are tuples of tensors like the trainable weights.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import model_types
from tff_mixed.core.model_types import add, scale


def bgd_estimates(federated_gradient, central_gradient, federated_weight,
                  central_weight):
  """Sampled (G, B)-BGD estimates of arXiv:2205.13655, eq. 7.

  With f_f = w_f * f~_f and f_c = w_c * f~_c (the paper subsumes the mixing
  weights into the losses), grad f_f = w_f * g_f and grad f_c = w_c * g_c, so

    G~^2 = w_f |g_f|^2 + w_c |g_c|^2 - |w_f g_f + w_c g_c|^2
    B~^2 = (w_f |g_f|^2 + w_c |g_c|^2) / |w_f g_f + w_c g_c|^2.

  Args:
    federated_gradient: g_f, the cohort's mean client gradient at x^(t).
    central_gradient: g_c, the central gradient at x^(t).
    federated_weight: w_f.
    central_weight: w_c.

  Returns:
    `(G~^2, B~^2)` as float32 scalars.
  """
  weighted_sum = (
      federated_weight * model_types.global_norm_squared(federated_gradient)
      + central_weight * model_types.global_norm_squared(central_gradient))
  total = add(
      scale(federated_weight, federated_gradient),
      scale(central_weight, central_gradient))
  total_norm_squared = model_types.global_norm_squared(total)
  return (weighted_sum - total_norm_squared,
          tf.math.divide_no_nan(weighted_sum, total_norm_squared))


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


def build_cohort_diagnostics(trainable_type, central_metrics_type,
                             federated_weight: float,
                             central_weight: float) -> tff.Computation:
  """The opt-in diagnostics that need the cohort: metrics['central'].

  `(OrderedDict(gradient_at_model, central_metrics, mean_probe_gradient,
  mean_probe_norm_squared, num_probe_clients) -> OrderedDict(bgd_G2, bgd_B2,
  sigma2, sigma_c2, beta, mixed_grad_norm2[, loss]))`, at the server after
  aggregation: G~_t^2 and B~_t^2 of eq. 7 from the cohort's mean probe
  gradient and the central work's g_c(x^(t)); sigma^2 (eq. 4) across the
  probe gradients; |w_f g_f + w_c g_c|^2, the sampled |grad f(x^(t))|^2 the
  nonconvex bounds' epsilon is set against; the central work's own metrics
  (sigma_c^2, beta, f_c(x^(t))) in their places.

  Args:
    trainable_type: The model's trainable weights' TFF type.
    central_metrics_type: The type of the central work's metrics.
    federated_weight: w_f.
    central_weight: w_c.
  """
  scalar = tff.TensorType(np.float32)
  has_loss = 'loss' in tff.structure.name_list(central_metrics_type)

  @tff.tensorflow.computation(collections.OrderedDict(
      gradient_at_model=trainable_type, central_metrics=central_metrics_type,
      mean_probe_gradient=trainable_type, mean_probe_norm_squared=scalar,
      num_probe_clients=scalar))
  def cohort_diagnostics(inputs):
    g_c = tuple(inputs['gradient_at_model'])
    mean_probe_gradient = tuple(inputs['mean_probe_gradient'])
    central = inputs['central_metrics']
    metrics = collections.OrderedDict()
    metrics['bgd_G2'], metrics['bgd_B2'] = bgd_estimates(
        mean_probe_gradient, g_c, federated_weight, central_weight)
    metrics['sigma2'] = client_variance(inputs['mean_probe_norm_squared'],
                                        mean_probe_gradient,
                                        inputs['num_probe_clients'])
    metrics['sigma_c2'] = central['sigma_c2']
    metrics['beta'] = central['beta']
    metrics['mixed_grad_norm2'] = model_types.global_norm_squared(add(
        scale(federated_weight, mean_probe_gradient),
        scale(central_weight, g_c)))
    if has_loss:
      metrics['loss'] = central['loss']
    return metrics

  return cohort_diagnostics
