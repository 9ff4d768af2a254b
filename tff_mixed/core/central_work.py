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
Algorithms 1-2 and appendix A.2), in one server computation that runs before
the distribution, from x^(t) and its own state:

*   `next: (<C, <weights, round_num, federated_gradient>> -> <state=C,
    result=CentralResult, measurements>)`: the augmenting central gradient
    g~_c the clients use (f_c's gradient at x^(t) on the round's first
    central batch, 1-way GT's Algorithm 2 and 2-way GT's 'fresh' option; or
    the previous round's mean, 2-way GT's Algorithm 1, kept in the state);
    K_c steps of CENTRALOPTIMIZER on f_c from x^(t), giving x_c (Parallel
    Training; 2-way GT, whose steps use `w_c g_c + w_f g~_f`, Algorithm 1's
    purple steps), whose mean gradient is 2-way GT's next g~_c; and its
    metrics: f_c(x^(t)) and, with diagnostics, the advisor's sigma_c^2 and
    beta (section 5, appendix C) and the g_c(x^(t)) that
    `round_estimates.build_cohort_diagnostics` sets against the cohort's
    probe gradients after aggregation (eq. 7);
*   `initialize: ( -> C)`, `C = OrderedDict(central_optimizer,
    central_gradient)`, the state it owns: CENTRALOPTIMIZER's, and 2-way
    GT's carried g~_c.

The two form a `tff.templates.MeasuredProcess`, the shape of every TFF
learning component.

Nothing in it depends on the clients' updates of the round: the central
steps start from x^(t), and 2-way GT's g~_f is last round's, recovered by
the finalizer. The math is pure TF (`build_central_gradient_fn` and the
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
  'fresh' option); its loss is then the reported f_c(x^(t)).

  An augmenting gradient rule: `evaluated_at_model` and `carried_in_state`
  say which of its two inputs the central work computes, and
  `rule(gradient_at_model, previous_round_mean)` (each `None` when not
  computed) gives the g~_c the clients use.
  """

  evaluated_at_model = True
  carried_in_state = False

  def __call__(self, gradient_at_model, previous_round_mean):
    del previous_round_mean  # Not kept.
    return gradient_at_model


class PreviousRoundMean(NamedTuple):
  """g~_c is the mean gradient of the previous round's K_c central steps.

  2-way GT as Algorithm 1 writes it (zero at t=0): the central work keeps
  this round's mean in its state's `central_gradient` for the next round
  (clipped when `clip_norm` is set; without the `w_f g~_f` term).
  """

  evaluated_at_model = False
  carried_in_state = True

  def __call__(self, gradient_at_model, previous_round_mean):
    del gradient_at_model  # Not computed.
    return previous_round_mean


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
    """Whether g~_c is f_c's gradient at x^(t), computed this round."""
    return getattr(self.augmenting_gradient, 'evaluated_at_model', False)

  @property
  def carried(self) -> bool:
    """Whether g~_c is the previous round's mean, kept in the state."""
    return getattr(self.augmenting_gradient, 'carried_in_state', False)


class CentralResult(NamedTuple):
  """The `result` of the central work's `next`.

  Attributes:
    augmenting_gradient: The g~_c this round's clients use, or `()`.
    model: x_c, the trainable weights after the K_c steps, or `()`.
    gradient_at_model: With diagnostics, g_c(x^(t)) on the round's first
      central batch (eq. 7's g_c); else `()`.
  """

  augmenting_gradient: Any
  model: Any
  gradient_at_model: Any


class CentralWork(NamedTuple):
  """The central work: a `tff.templates.MeasuredProcess` and its choices.

  `process.next: (<C, <weights, round_num, federated_gradient>> ->
  <state=C, result=CentralResult, measurements>)`, where `C` is
  `OrderedDict(central_optimizer, central_gradient)`: CENTRALOPTIMIZER's
  state (`()` without steps) and, with `PreviousRoundMean()`, this round's
  mean central gradient, the next round's g~_c (else `()`);
  `federated_gradient` (g~_f, kept by the finalizer) is `()` unless the step
  rule reads it, and `measurements` is `OrderedDict([sigma_c2, beta,]
  [loss])` (`_central_metrics`).
  """

  process: tff.templates.MeasuredProcess
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
                   round_num, state, federated_gradient, first):
  """K_c steps of CENTRALOPTIMIZER from x^(t).

  `first` is `(f_c(x^(t)), g_c(x^(t)))` on the round's first central batch
  when already computed (g~_c of `GradientAtModel()`), which is step 0's
  loss and gradient; `None` computes it.

  Returns `(x_c, state, (f_c(x^(t)), g_c(x^(t))), mean g_c)`: the loss and
  gradient of the first step and the mean of the K_c central gradients.
  """
  x_c = trainable
  gradient_sum = tuple(tf.zeros_like(w) for w in trainable)
  for step in range(config.central_steps):
    if step == 0 and first is not None:
      loss, gradient = first
    else:
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
                     first):
  """`(g_c(x^(t)) or (), metrics)`: what the central work measures.

  `first` is `(f_c(x^(t)), g_c(x^(t)))` on the round's first central batch,
  or `None` when the round computed neither. The metrics are, with
  diagnostics, sigma_c^2 (`sigma_c2`, eq. 6, at the run's |B_c|) and the
  secant lower bound on beta of f~_c (`beta`), then f_c(x^(t)) (`loss`)
  when computed. With diagnostics g_c(x^(t)) is returned for
  `round_estimates.build_cohort_diagnostics`.
  """
  metrics = collections.OrderedDict()
  gradient_at_model = ()
  if config.with_diagnostics:
    if first is None:
      first = gradient_fn(trainable, non_trainable, round_num, 0)
    gradient_at_model = first[1]
    metrics['sigma_c2'], metrics['beta'] = _advisor_estimates(
        config, gradient_fn, trainable, non_trainable, round_num)
  if config.at_model or config.central_steps > 0:
    metrics['loss'] = first[0]
  return gradient_at_model, metrics


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
    return collections.OrderedDict(
        central_optimizer=optimizer.initialize(specs) if has_steps else (),
        central_gradient=(model_types.zeros_of(specs) if config.carried
                          else ()))

  input_type = tff.to_type(collections.OrderedDict(
      weights=weights_type,
      round_num=tff.TensorType(np.int32),
      federated_gradient=(weights_type.trainable
                          if config.step_rule.uses_federated_gradient
                          else tff.to_type(()))))

  @tff.tensorflow.computation(initialize.type_signature.result, input_type)
  def next_computation(state, inputs):
    x = tuple(inputs['weights'].trainable)
    non_trainable = tuple(inputs['weights'].non_trainable)
    round_num = inputs['round_num']
    first = None
    if config.at_model:
      first = gradient_fn(x, non_trainable, round_num, 0)
    augmenting = ()
    if config.augmenting_gradient is not None:
      augmenting = config.augmenting_gradient(
          first[1] if config.at_model else None,
          tuple(state['central_gradient']) if config.carried else None)
    x_c, optimizer_state, carried = (), state['central_optimizer'], ()
    if has_steps:
      x_c, optimizer_state, first, mean_gradient = _central_steps(
          config, gradient_fn, optimizer, x, non_trainable, round_num,
          optimizer_state, inputs['federated_gradient'], first)
      if config.carried:
        # Algorithm 1: this round's central gradients become the next
        # round's g~_c, as its client deltas become g~_f (eq. 10): the
        # central side of the 'meta-SCAFFOLD' view (appendix C.3).
        carried = mean_gradient
    gradient_at_model, metrics = _central_metrics(
        config, gradient_fn, x, non_trainable, round_num, first)
    new_state = collections.OrderedDict(central_optimizer=optimizer_state,
                                        central_gradient=carried)
    return tff.templates.MeasuredProcessOutput(
        state=new_state,
        result=CentralResult(augmenting, x_c, gradient_at_model),
        measurements=metrics)

  return CentralWork(
      tff.templates.MeasuredProcess(initialize, next_computation),
      optimizer if has_steps else None, config)
