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
"""Central work: what the server computes from the central objective f_c.

Everything the server does with f_c in a round (arXiv:2205.13655,
Algorithms 1-2 and appendix A.2; eq. 7 for diagnostics):

*   `gradient_at_x: (<ModelWeights, int32> -> <float32, trainable>)`, the
    augmenting central gradient g~_c(x^(t)) and f_c(x^(t)) on the round's
    first central batch, computed before the broadcast (1-way GT, Algorithm
    2, and 2-way GT's 'fresh' option);
*   `next: (CentralInput -> CentralOutput)`, after aggregation: K_c steps of
    CENTRALOPTIMIZER on f_c from x^(t), giving x_c (Parallel Training; 2-way
    GT, whose steps use `w_c g_c + w_f g~_f`, Algorithm 1's purple steps),
    the mean of their gradients (2-way GT's next g~_c, Algorithm 1 as
    written) and the `central` metrics: f_c(x^(t)) and, with diagnostics,
    the sampled (G, B)-BGD estimates G~_t^2, B~_t^2 of eq. 7 and the
    advisor's per-round sigma^2, sigma_c^2, beta (section 5, appendix C);
*   `initialize: ( -> central optimizer state)`.

The math is pure TF (`build_central_gradient_fn`, `bgd_estimates` and the
step loop); the computations' types come from the model and the optimizer's
traced state.
"""

import collections
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import model_types
from tff_mixed.core import round_estimates
from tff_mixed.core.model_types import add, scale


class PlainCentralSteps(NamedTuple):
  """Central steps on f_c's own gradient g_c (Parallel Training).

  A central step rule: `rule(central_gradient, federated_gradient)` gives
  the gradient CENTRALOPTIMIZER applies; `uses_federated_gradient` says
  whether it reads g~_f from the state (which the finalizer must recover).
  """

  uses_federated_gradient = False

  def __call__(self, central_gradient, federated_gradient):
    del federated_gradient  # Not kept.
    return central_gradient


class MixedCentralSteps(NamedTuple):
  """Central steps on `w_c g_c + w_f g~_f` (2-way GT, Algorithm 1, purple)."""

  central_weight: float
  federated_weight: float
  uses_federated_gradient = True

  def __call__(self, central_gradient, federated_gradient):
    return add(scale(self.central_weight, central_gradient),
               scale(self.federated_weight, federated_gradient))


class GradientAtModel(NamedTuple):
  """g~_c sent to the clients is f_c's gradient at x^(t), before they train.

  On the round's first central batch (1-way GT, Algorithm 2; 2-way GT's
  'fresh' option); its loss is then the reported f_c(x^(t)). An augmenting
  gradient source: `before_distribution(central, state)` runs inside the
  process's federated `next` and returns `(g~_c@SERVER, extra@SERVER)`,
  `extra` being what the central work's `next` gets as `gradient_at_x`.
  """

  evaluated_at_model = True
  carried_in_state = False

  def before_distribution(self, central, state):
    at_x = tff.federated_map(central.gradient_at_x,
                             (state.global_model_weights, state.round_num))
    return at_x[1], at_x


class PreviousRoundMean(NamedTuple):
  """g~_c is the mean gradient of the previous round's K_c central steps.

  2-way GT as Algorithm 1 writes it (zero at t=0): the central work returns
  this round's mean, the finalizer keeps it in the state's
  `central_gradient` for the next round (clipped when `clip_norm` is set;
  without the `w_f g~_f` term).
  """

  evaluated_at_model = False
  carried_in_state = True

  def before_distribution(self, central, state):
    del central  # Nothing to compute: it is in the state.
    return state.central_gradient, tff.federated_value((), tff.SERVER)


class CentralConfig(NamedTuple):
  """Static configuration of the central work.

  What an algorithm does with f_c is chosen by objects, not flags: a step
  rule and the source of the augmenting central gradient g~_c.

  Attributes:
    central_steps: K_c, central optimizer steps per round (0: none).
    batch_size: Central examples per batch.
    seed: Seeds central batch sampling.
    clip_norm: If set, central gradients are clipped to this global L2 norm.
    federated_weight: w_f.
    central_weight: w_c.
    step_rule: `PlainCentralSteps()` or `MixedCentralSteps(w_c, w_f)`.
    augmenting_gradient: The source of the g~_c the clients use:
      `GradientAtModel()`, `PreviousRoundMean()`, or `None` when the
      clients get none (Parallel Training, FedAvg).
    with_diagnostics: Compute G~_t^2 and B~_t^2, and the advisor's
      sigma^2, sigma_c^2 and beta estimates (`round_estimates`); the opt-in
      diagnostics of every algorithm.
    variance_batches: With diagnostics, M >= 2 extra central batches whose
      gradients at x^(t) give sigma_c^2 (their sample variance) and, with
      the same batches at a nearby point, the secant estimate of beta: 2M
      extra central gradients a round.
  """

  central_steps: int
  batch_size: int
  seed: int
  clip_norm: Optional[float]
  federated_weight: float
  central_weight: float
  step_rule: Any = PlainCentralSteps()
  augmenting_gradient: Any = None
  with_diagnostics: bool = False
  variance_batches: int = 4

  @property
  def at_model(self) -> bool:
    """Whether g~_c(x^(t)) is computed before the distribution."""
    return getattr(self.augmenting_gradient, 'evaluated_at_model', False)

  @property
  def carried(self) -> bool:
    """Whether g~_c is the previous round's mean, kept in the state."""
    return getattr(self.augmenting_gradient, 'carried_in_state', False)


class CentralOutput(NamedTuple):
  """The result of `CentralWork.next`.

  Attributes:
    model: x_c, the trainable weights after the K_c steps, or `()`.
    state: The new CENTRALOPTIMIZER state (`()` without steps).
    gradient: g~_c^(t+1), the mean central gradient of the round, with
      `PreviousRoundMean()`; else `()`.
    metrics: `OrderedDict([bgd_G2, bgd_B2, sigma2, sigma_c2, beta,
      mixed_grad_norm2,] [loss])`, metrics['central'] (see
      `_central_metrics`).
  """

  model: Any
  state: Any
  gradient: Any
  metrics: Any


class CentralWork(NamedTuple):
  """The central work computations (see the module docstring).

  `next`'s parameter is `OrderedDict(weights, round_num, state,
  federated_gradient, gradient_at_x, mean_probe_gradient,
  mean_probe_norm_squared, num_probe_clients)`, members absent in this
  configuration being `()`.
  """

  initialize: tff.Computation
  gradient_at_x: Optional[tff.Computation]
  next: tff.Computation
  optimizer: Optional[tff.learning.optimizers.Optimizer]
  config: CentralConfig


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
      federated_weight * model_types.global_norm_squared(federated_gradient)
      + central_weight * model_types.global_norm_squared(central_gradient))
  total = add(
      scale(federated_weight, federated_gradient),
      scale(central_weight, central_gradient))
  total_norm_squared = model_types.global_norm_squared(total)
  return (weighted_sum - total_norm_squared,
          tf.math.divide_no_nan(weighted_sum, total_norm_squared))


def _gradient_point(weights):
  """`weights`, passed through an op Grappler does not recompute.

  The next gradients are taken at these weights in the same graph. TFF's
  local runtime optimizes each graph with Grappler's memory optimizer,
  whose recomputation copies cheap ops (the optimizer's `Sub` and `Mul`)
  that feed gradients and hangs the copies on nodes of the backward pass
  it finds; with several backward passes in one graph and the character
  LM's written-out GRU gradient (`models/char_lm.py`), it picked a later
  step's, a cycle, and the graph failed ("Retval[0] does not have value").
  `EnsureShape` is not recomputed and leaves the values unchanged.
  """
  return tuple(tf.ensure_shape(w, w.shape) for w in weights)


def _central_steps(config, gradient_fn, optimizer, trainable, non_trainable,
                   round_num, state, federated_gradient):
  """K_c steps of CENTRALOPTIMIZER from x^(t).

  Returns `(x_c, state, (f_c(x^(t)), g_c(x^(t))), mean g_c)`: the loss and
  gradient of the first step (at x^(t) on the round's first central batch)
  and the mean of the K_c central gradients.
  """
  x_c = trainable
  gradient_sum = tuple(tf.zeros_like(w) for w in trainable)
  first = None
  for step in range(config.central_steps):
    loss, gradient = gradient_fn(x_c, non_trainable, round_num, step)
    if step == 0:
      first = (loss, gradient)
    gradient_sum = add(gradient_sum, gradient)
    gradient = config.step_rule(gradient, federated_gradient)
    state, x_c = optimizer.next(state, x_c, gradient)
    x_c = _gradient_point(x_c)
  mean_gradient = scale(1.0 / config.central_steps, gradient_sum)
  return x_c, state, first, mean_gradient


# The secant point's distance from x^(t), relative to |x^(t)| (or absolute
# below |x^(t)| = 1): small enough to probe the curvature at x^(t), large
# enough that float32 gradient differences stand above rounding.
_SECANT_RELATIVE_STEP = 1e-2


def _advisor_estimates(config, gradient_fn, trainable, non_trainable,
                       round_num):
  """sigma_c^2 and the secant beta on `config.variance_batches` batches.

  The batches are the round's central batches numbered after those its
  steps use (step 0 alone without steps), so they are fresh and
  independent of the gradients the run trains on. The secant point moves
  against their mean gradient, the direction the run moves in.
  """
  first_extra = max(config.central_steps, 1)
  steps = range(first_extra, first_extra + config.variance_batches)
  at_x = [gradient_fn(trainable, non_trainable, round_num, s)[1]
          for s in steps]
  sigma_c2, mean_gradient = round_estimates.sample_variance(at_x)
  length = _SECANT_RELATIVE_STEP * tf.maximum(
      tf.sqrt(model_types.global_norm_squared(trainable)), 1.0)
  direction_norm = tf.sqrt(model_types.global_norm_squared(mean_gradient))
  shift = tf.math.divide_no_nan(length, direction_norm)
  nearby = _gradient_point(
      tuple(w - shift * g for w, g in zip(trainable, mean_gradient)))
  at_nearby = [gradient_fn(nearby, non_trainable, round_num, s)[1]
               for s in steps]
  mean_nearby = tuple(tf.add_n(list(parts)) / float(len(at_nearby))
                      for parts in zip(*at_nearby))
  beta = round_estimates.secant_smoothness(mean_gradient, mean_nearby,
                                           trainable, nearby)
  return sigma_c2, beta


def _central_metrics(config, gradient_fn, trainable, non_trainable, round_num,
                     first, at_x, probes):
  """metrics['central']: the diagnostics, then f_c(x^(t)).

  With diagnostics: G~_t^2 and B~_t^2 of eq. 7 (`bgd_G2`, `bgd_B2`), the
  advisor's sigma^2 (`sigma2`, eq. 4, across the cohort's probe gradients),
  sigma_c^2 (`sigma_c2`, eq. 6, at the run's |B_c|), the secant lower bound
  on beta of f~_c (`beta`) and |w_f g_f + w_c g_c|^2 (`mixed_grad_norm2`,
  the sampled |grad f(x^(t))|^2 the nonconvex bounds' epsilon is set
  against).

  `probes` is `(mean_i g_i, mean_i |g_i|^2, S)` with diagnostics.
  """
  metrics = collections.OrderedDict()
  if config.with_diagnostics:
    if config.at_model:
      g_c = at_x[1]
    elif first is not None:
      g_c = first[1]  # At x^(t), on the first batch.
    else:
      _, g_c = gradient_fn(trainable, non_trainable, round_num, 0)
    mean_probe_gradient, mean_norm_squared, num_clients = probes
    mean_probe_gradient = tuple(mean_probe_gradient)
    g_squared, b_squared = bgd_estimates(
        mean_probe_gradient, g_c, config.federated_weight,
        config.central_weight)
    metrics['bgd_G2'] = g_squared
    metrics['bgd_B2'] = b_squared
    metrics['sigma2'] = round_estimates.client_variance(
        mean_norm_squared, mean_probe_gradient, num_clients)
    metrics['sigma_c2'], metrics['beta'] = _advisor_estimates(
        config, gradient_fn, trainable, non_trainable, round_num)
    metrics['mixed_grad_norm2'] = model_types.global_norm_squared(add(
        scale(config.federated_weight, mean_probe_gradient),
        scale(config.central_weight, g_c)))
  if config.at_model:
    metrics['loss'] = at_x[0]
  elif first is not None:
    metrics['loss'] = first[0]
  return metrics


def _build_gradient_at_x(gradient_fn, weights_type):
  @tff.tensorflow.computation(weights_type, tff.TensorType(np.int32))
  def gradient_at_x(weights, round_num):
    loss, gradient = gradient_fn(weights.trainable, weights.non_trainable,
                                 round_num, 0)
    return loss, gradient

  return gradient_at_x


def build_central_work(
    model: tff.learning.models.FunctionalModel,
    objective: Optional[central_lib.CentralObjective],
    optimizer: Optional[tff.learning.optimizers.Optimizer],
    config: CentralConfig,
) -> CentralWork:
  """Builds the central work of a process.

  Args:
    model: The `tff.learning.models.FunctionalModel` being trained.
    objective: f_c, or `None` when the configuration never evaluates it.
    optimizer: CENTRALOPTIMIZER, or `None` without central steps.
    config: A `CentralConfig`.

  Returns:
    A `CentralWork`.
  """
  if config.with_diagnostics and config.variance_batches < 2:
    raise ValueError('`variance_batches` must be at least 2: sigma_c^2 is '
                     f'their sample variance; got {config.variance_batches}.')
  if config.carried and config.central_steps < 1:
    raise ValueError('`PreviousRoundMean()` needs central steps: g~_c is '
                     'their mean gradient.')
  gradient_fn = None
  if objective is not None:
    gradient_fn = build_central_gradient_fn(
        model, objective, config.batch_size, config.seed, config.clip_norm)
  weights_type = model_types.weights_type(model)
  has_steps = config.central_steps > 0
  specs = model_types.trainable_specs(model)

  @tff.tensorflow.computation
  def initialize():
    return optimizer.initialize(specs) if has_steps else ()

  gradient_at_x = None
  if config.at_model:
    gradient_at_x = _build_gradient_at_x(gradient_fn, weights_type)

  def trainable_or_empty(present):
    return weights_type.trainable if present else tff.to_type(())

  def scalar_or_empty(present):
    return tff.TensorType(np.float32) if present else tff.to_type(())

  input_type = tff.to_type(collections.OrderedDict(
      weights=weights_type,
      round_num=tff.TensorType(np.int32),
      state=initialize.type_signature.result,
      federated_gradient=trainable_or_empty(
          config.step_rule.uses_federated_gradient),
      gradient_at_x=(gradient_at_x.type_signature.result
                     if gradient_at_x is not None else tff.to_type(())),
      mean_probe_gradient=trainable_or_empty(config.with_diagnostics),
      mean_probe_norm_squared=scalar_or_empty(config.with_diagnostics),
      num_probe_clients=scalar_or_empty(config.with_diagnostics)))

  @tff.tensorflow.computation(input_type)
  def next_computation(inputs):
    x = tuple(inputs['weights'].trainable)
    non_trainable = tuple(inputs['weights'].non_trainable)
    x_c, state, first, gradient = (), inputs['state'], None, ()
    if has_steps:
      x_c, state, first, mean_gradient = _central_steps(
          config, gradient_fn, optimizer, x, non_trainable,
          inputs['round_num'], state, inputs['federated_gradient'])
      if config.carried:
        # Algorithm 1: this round's central gradients become the next
        # round's g~_c, as its client deltas become g~_f (eq. 10): the
        # central side of the 'meta-SCAFFOLD' view (appendix C.3).
        gradient = mean_gradient
    metrics = _central_metrics(
        config, gradient_fn, x, non_trainable, inputs['round_num'], first,
        inputs['gradient_at_x'],
        (inputs['mean_probe_gradient'], inputs['mean_probe_norm_squared'],
         inputs['num_probe_clients']))
    return CentralOutput(x_c, state, gradient, metrics)

  return CentralWork(initialize, gradient_at_x, next_computation,
                     optimizer if has_steps else None, config)
