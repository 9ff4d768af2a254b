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
"""Server-side computations of mixed FL (pure TensorFlow, no federated types).

Everything the server computes from the central objective f_c lives here
(arXiv:2205.13655, Algorithms 1-2 and appendix A.2; eq. 7 for diagnostics):

* the augmenting central gradient g~_c(x^(t)) of 1-way GT (and of 2-way
  GT's 'fresh' option);
* the central model x_c after K_c steps of CENTRALOPTIMIZER (Parallel
  Training, 2-way GT, whose steps add w_f * g~_f), and for 2-way GT
  (Algorithm 1) the mean gradient of those steps, the next round's g~_c;
* the update of the global model: SERVEROPTIMIZER on the aggregated client
  update, then, where there is central training, the merge
  `Delta = w_f Delta_f + w_c Delta_c` applied with MERGEOPTIMIZER;
* 2-way GT's federated gradient g~_f recovered from what FedAvg uploads
  (appendix A.2, eq. 10), for the next round's central steps;
* the sampled (G, B)-BGD estimates G~_t^2 and B~_t^2.
"""

import collections
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_objective as central_lib


class ServerUpdateConfig(NamedTuple):
  """Static (Python-level) configuration of the server update.

  Attributes:
    central_steps: K_c, central optimizer steps per round (0: no central
      training, the server applies only SERVEROPTIMIZER).
    central_batch_size: Central examples per batch.
    federated_weight: w_f.
    central_weight: w_c.
    central_clip_norm: If set, central gradients are clipped to this global L2
      norm.
    augment_central_steps: 2-way GT: central steps add `w_f * g~_f` and use
      the mixed gradient `w_c * g_c + w_f * g~_f`.
    recover_federated_gradient: 2-way GT: recover g~_f for the next round.
    carry_central_gradient: 2-way GT as in Algorithm 1: g~_c is state. The
      clients of round t use the g~_c^(t) of the state (zero at t = 0) and
      the round returns g~_c^(t+1), the mean of its K_c central gradients
      g_c (clipped when `central_clip_norm` is set; without the `w_f g~_f`
      term). If False, g~_c is computed at x^(t) before the broadcast (1-way
      GT; 2-way GT's 'fresh' option) and is no state.
    client_learning_rate: eta, needed to recover g~_f.
    client_steps: K, needed to recover g~_f.
    seed: Seeds central batch sampling.
    with_diagnostics: Compute G~_t^2 and B~_t^2.
    report_central_loss: Report f_c(x^(t)) of the first central step (off
      when the broadcast computation already reports it).
  """

  central_steps: int
  central_batch_size: int
  federated_weight: float
  central_weight: float
  central_clip_norm: Optional[float]
  augment_central_steps: bool
  recover_federated_gradient: bool
  client_learning_rate: Optional[float]
  client_steps: Optional[int]
  seed: int
  with_diagnostics: bool
  report_central_loss: bool = True
  carry_central_gradient: bool = False


def _add(a, b):
  return tuple(x + y for x, y in zip(a, b))


def _scale(c, a):
  return tuple(c * x for x in a)


def _global_norm_squared(a):
  return tf.add_n([tf.reduce_sum(tf.square(x)) for x in a])


def _all_finite(structure):
  flat = tf.nest.flatten(structure)
  return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in flat])


def build_central_gradient_fn(
    model: tff.learning.models.FunctionalModel,
    objective: central_lib.CentralObjective,
    batch_size: int,
    seed: int,
    clip_norm: Optional[float],
) -> Callable[..., tuple[tf.Tensor, Any]]:
  """Returns `fn(trainable, non_trainable, round_num, step) -> (loss, grad)`.

  The gradient of f_c at the given weights on central batch `step` of round
  `round_num`, clipped to `clip_norm` when set.
  """
  loss_fn = objective.loss_fn or central_lib.model_loss_fn(model)

  def central_gradient(trainable, non_trainable, round_num, step):
    batch = central_lib.sample_batch(objective, batch_size, seed, round_num,
                                     step)
    loss, gradient = central_lib.loss_and_gradient(loss_fn, tuple(trainable),
                                                   tuple(non_trainable), batch)
    if clip_norm is not None:
      gradient, _ = tf.clip_by_global_norm(list(gradient), clip_norm)
      gradient = tuple(gradient)
    return loss, gradient

  return central_gradient


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
      federated_weight * _global_norm_squared(federated_gradient)
      + central_weight * _global_norm_squared(central_gradient))
  total = _add(
      _scale(federated_weight, federated_gradient),
      _scale(central_weight, central_gradient))
  total_norm_squared = _global_norm_squared(total)
  return (weighted_sum - total_norm_squared,
          tf.math.divide_no_nan(weighted_sum, total_norm_squared))


def build_server_update_fn(
    model: tff.learning.models.FunctionalModel,
    objective: Optional[central_lib.CentralObjective],
    config: ServerUpdateConfig,
    server_optimizer: tff.learning.optimizers.Optimizer,
    central_optimizer: Optional[tff.learning.optimizers.Optimizer],
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer],
):
  """Builds the `tf.function` that updates the global model once a round.

  The returned function takes `(model_weights, round_num, server_state,
  central_state, merge_state, federated_gradient, aggregated_update,
  central_gradient, mean_probe_gradient, central_loss, augmenting_coverage)`:

  *   `aggregated_update`: the weighted mean of client updates `x^(t) - x_i`
      (after whatever clipping or noise the model aggregator applies: it is
      the update the server applies, and the one g~_f is recovered from);
  *   `central_gradient`: the g~_c this round's clients used (the state's
      with `carry_central_gradient`, else the one computed at x^(t)), or
      `()` without gradient transfer;
  *   `central_loss`: f_c(x^(t)) when computed before the broadcast, or `()`;
  *   `augmenting_coverage`: `()` when every client applied `w_c g~_c` to
      every weight; with `federated_select`, per weight the share of the
      cohort's aggregation weight whose clients applied it
      (`embedding_select.augmenting_coverage`).

  It returns `(model_weights, round_num + 1, server_state, central_state,
  merge_state, federated_gradient, central_gradient, central_metrics,
  finalizer_metrics)`, where `federated_gradient` is g~_f^(t+1) (2-way GT)
  and `central_gradient` is g~_c^(t+1) with `carry_central_gradient` (else
  `()`). Everything the server does after aggregation is this one
  computation, so a round costs one server call. A non-finite aggregated
  update is rejected as TFF's FedAvg finalizer does: model, optimizer
  states and augmenting gradients stay as they were.
  """
  if config.carry_central_gradient and config.central_steps < 1:
    raise ValueError('`carry_central_gradient` needs central steps: g~_c is '
                     'their mean gradient.')
  if objective is not None:
    central_gradient_fn = build_central_gradient_fn(
        model, objective, config.central_batch_size, config.seed,
        config.central_clip_norm)
  w_f, w_c = config.federated_weight, config.central_weight

  def central_training(trainable, non_trainable, round_num, central_state,
                       federated_gradient):
    """K_c steps of CENTRALOPTIMIZER from x^(t).

    Returns `(x_c, central_state, f_c(x^(t)), g_c(x^(t)), mean g_c)`: the
    loss and gradient of the first step (at x^(t) on the round's first
    central batch) and the mean of the K_c central gradients.
    """
    x_c = trainable
    gradient_sum = tuple(tf.zeros_like(w) for w in trainable)
    first_loss, first_gradient = None, None
    for step in range(config.central_steps):
      loss, gradient = central_gradient_fn(x_c, non_trainable, round_num, step)
      if step == 0:
        first_loss, first_gradient = loss, gradient
      gradient_sum = _add(gradient_sum, gradient)
      if config.augment_central_steps:
        gradient = _add(_scale(w_c, gradient),
                        _scale(w_f, federated_gradient))
      central_state, x_c = central_optimizer.next(central_state, x_c,
                                                  gradient)
      x_c = tuple(x_c)
    mean_gradient = _scale(1.0 / config.central_steps, gradient_sum)
    return x_c, central_state, first_loss, first_gradient, mean_gradient

  @tf.function
  def server_update(model_weights, round_num, server_state, central_state,
                    merge_state, federated_gradient, aggregated_update,
                    central_gradient, mean_probe_gradient, central_loss_at_x,
                    augmenting_coverage=()):
    x = tuple(model_weights.trainable)
    non_trainable = tuple(model_weights.non_trainable)
    aggregated_update = tuple(aggregated_update)
    metrics = collections.OrderedDict()  # About f_c.

    new_server_state, x_f = server_optimizer.next(server_state, x,
                                                  aggregated_update)
    x_f = tuple(x_f)
    new_central_state, new_merge_state = central_state, merge_state
    new_federated_gradient = federated_gradient
    new_central_gradient = ()
    central_loss, first_central_gradient = None, None
    if config.central_steps > 0:
      (x_c, new_central_state, central_loss, first_central_gradient,
       mean_central_gradient) = central_training(
           x, non_trainable, round_num, central_state, federated_gradient)
      if config.carry_central_gradient:
        # Algorithm 1: this round's central gradients become the next
        # round's g~_c, as its client deltas become g~_f (eq. 10): the
        # central side of the 'meta-SCAFFOLD' view (appendix C.3).
        new_central_gradient = mean_central_gradient
      delta_f = tuple(a - b for a, b in zip(x_f, x))
      delta_c = tuple(a - b for a, b in zip(x_c, x))
      merged_delta = _add(_scale(w_f, delta_f), _scale(w_c, delta_c))
      # MERGEOPTIMIZER takes the merged delta as a negative gradient.
      new_merge_state, new_x = merge_optimizer.next(
          merge_state, x, tuple(-d for d in merged_delta))
      new_x = tuple(new_x)
    else:
      new_x = x_f

    if config.recover_federated_gradient:
      # Appendix A.2, eq. 10: with SGD on clients and K steps each, the mean
      # per-step total gradient is aggregated_update / (eta K); removing the
      # augmenting term w_c g~_c (the one the clients used, where they used
      # it) and the weight w_f leaves the mean client gradient, used as g~_f
      # in the next round's central steps. With federated_select a client
      # applied g~_c only to its rows, so a row's mean holds w_c g~_c times
      # the share of the cohort that held it; what remains is the gradient
      # of the cohort's federated loss, zero on rows nobody held.
      used_central_gradient = tuple(central_gradient)
      if augmenting_coverage:
        used_central_gradient = tuple(
            c * g for c, g in zip(augmenting_coverage, used_central_gradient))
      mean_total_gradient = _scale(
          1.0 / (config.client_learning_rate * config.client_steps),
          aggregated_update)
      new_federated_gradient = _scale(
          1.0 / w_f,
          tuple(t - w_c * c
                for t, c in zip(mean_total_gradient, used_central_gradient)))

    if config.with_diagnostics:
      if (not config.carry_central_gradient
          and isinstance(central_gradient, tuple) and central_gradient):
        g_c = central_gradient
      elif first_central_gradient is not None:
        g_c = first_central_gradient  # At x^(t), on the first batch.
      else:
        _, g_c = central_gradient_fn(x, non_trainable, round_num, 0)
      g_squared, b_squared = bgd_estimates(tuple(mean_probe_gradient), g_c,
                                           w_f, w_c)
      metrics['bgd_G2'] = g_squared
      metrics['bgd_B2'] = b_squared

    accept = _all_finite(aggregated_update) & _all_finite(new_x)

    def keep(new, old):
      return tf.nest.map_structure(
          lambda n, o: tf.where(accept, n, o), new, old)

    new_x = keep(new_x, x)
    new_server_state = keep(new_server_state, server_state)
    new_central_state = keep(new_central_state, central_state)
    new_merge_state = keep(new_merge_state, merge_state)
    new_federated_gradient = keep(new_federated_gradient, federated_gradient)
    if config.carry_central_gradient:
      new_central_gradient = keep(new_central_gradient,
                                  tuple(central_gradient))
    if central_loss is not None and config.report_central_loss:
      metrics['loss'] = central_loss
    elif tf.is_tensor(central_loss_at_x):
      metrics['loss'] = central_loss_at_x
    finalizer_metrics = collections.OrderedDict(
        update_non_finite=tf.cast(tf.logical_not(accept), tf.int32))
    new_weights = tff.learning.models.ModelWeights(
        trainable=new_x, non_trainable=non_trainable)
    return (new_weights, round_num + 1, new_server_state, new_central_state,
            new_merge_state, new_federated_gradient, new_central_gradient,
            metrics, finalizer_metrics)

  return server_update
