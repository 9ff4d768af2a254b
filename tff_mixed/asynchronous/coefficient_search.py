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
"""Feddle's search for merging coefficients on the server data.

Feddle ("Guided Model Merging for Hybrid Data Learning", Zhu et al., eqs. 5,
9 and 10) minimizes the server loss of the merged model x + sum_m c_m abar_m
over the coefficients c, from FedBuff's coefficients c' and with the fallback
term lambda/2 ||c - c'||^2. Each step uses one server batch, cycling through
the server data, and the memory-efficient coefficient gradient of appendix E
(`anchor_merging.loss_and_coefficient_gradient`).

The paper names no optimizer for the coefficients. Its analysis (appendix A,
lemma on the smoothness of c -> F(x + sum_m c_m a_m)) finds the loss
L sum_m ||a_m||^2-smooth in c, so gradient steps converge at rates of order
1 / (L sum_m ||a_m||^2): 'scaled_sgd' takes that rate, `learning_rate` /
sum_m ||abar_m||^2, the dimensionless `learning_rate` standing for 1 / L.
Plain 'sgd' (the rate as given) and 'adam' are the alternatives; Adam moves
every coefficient by about its rate a step whatever the gradient, so a rate
far below c' leaves c at c'.

Every search reports how far it moved (`coefficient_move`, ||c - c'|| /
||c'||) and the server loss at c' and at its result, over one pass of the
server data, so that a search that does not move, or moves uphill, shows.
There is no rule to keep c' when the searched c has the higher loss: the
paper's fallback is the starting point and the regularizer of eq. 10, not a
choice between the two, and a loss on the search's own data would favour
the search anyway.
"""

from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import anchor_merging
from tff_mixed.asynchronous import server_data as server_data_lib
from tff_mixed.core import traced_cache
from tff_mixed.core import validation

Weights = Sequence[Any]
LossFn = anchor_merging.LossFn

OPTIMIZERS = ('sgd', 'scaled_sgd', 'adam')
_ADAM_BETA1, _ADAM_BETA2, _ADAM_EPSILON = 0.9, 0.999, 1e-8


# ----------------------------------------------------------------------------
# Coefficient search (eqs. 5, 9, 10).


class SearchDiagnostics(NamedTuple):
  """What a coefficient search did.

  Attributes:
    init_coefficients: float32 `[M]` starting point c' (the fallback).
    losses: float32 `[T]` loss at the coefficients before each step.
    objectives: float32 `[T]` loss plus the fallback term lambda/2 ||c-c'||^2.
    gradients: float32 `[T, M]` loss gradient dL/dc at each step, without the
      fallback term (what eq. 7 compares between in- and out-of-domain data).
    negative_share: Fraction of the final coefficients that are negative.
    prior_loss: The mean loss over one pass of the server data at c'.
    final_loss: The same at the searched coefficients.
    coefficient_move: ||c - c'|| / ||c'|| (NaN where c' is 0).
    rate: The step size the search took (`learning_rate`, or for
      'scaled_sgd' `learning_rate` / sum_m ||abar_m||^2).
  """
  init_coefficients: np.ndarray
  losses: np.ndarray
  objectives: np.ndarray
  gradients: np.ndarray
  negative_share: float
  prior_loss: float = float('nan')
  final_loss: float = float('nan')
  coefficient_move: float = float('nan')
  rate: float = float('nan')


class SearchResult(NamedTuple):
  """The result of `search_coefficients`.

  Attributes:
    weights: The merged weights x + sum_m c_m abar_m (eq. 6), numpy arrays.
    coefficients: float32 `[M]` searched coefficients c-hat.
    diagnostics: A `SearchDiagnostics`.
  """
  weights: tuple[np.ndarray, ...]
  coefficients: np.ndarray
  diagnostics: SearchDiagnostics


def _checked_search_args(steps, learning_rate, fallback_lambda, optimizer,
                         weights, anchors, init_coefficients):
  """`search_coefficients`' arguments, checked and converted."""
  steps = validation.check_int('steps', steps, 0)
  # 0 keeps c' (FedBuff's merge), the search's cost aside.
  learning_rate = validation.check_float('learning_rate', learning_rate, 0.0,
                                         strict=False)
  fallback_lambda = validation.check_float('fallback_lambda', fallback_lambda,
                                           0.0, strict=False)
  if optimizer not in OPTIMIZERS:
    raise ValueError(f'`optimizer` must be one of {OPTIMIZERS}, got '
                     f'{optimizer!r}.')
  base = validation.as_arrays(weights, 'weights')
  anchors = [validation.check_like(a, base, f'anchors[{i}]')
             for i, a in enumerate(anchors)]
  c0 = np.asarray(init_coefficients, np.float32).reshape([-1])
  if c0.shape[0] != len(anchors):
    raise ValueError(f'{c0.shape[0]} initial coefficients for '
                     f'{len(anchors)} anchors.')
  return steps, learning_rate, fallback_lambda, base, anchors, c0


def _search_fns(loss_fn, fallback_lambda, use_adam):
  """`(step, loss_at)`: one search step on c, the loss gradient plus the
  fallback term (eq. 10), at step size `rate`; and the loss of the merge at
  c on one batch."""

  @tf.function(reduce_retracing=True)
  def step(base, stacked, c, c_prior, m, v, t, rate, batch):
    loss, grad = anchor_merging.loss_and_coefficient_gradient(
        loss_fn, base, stacked, c, batch)
    total = grad + fallback_lambda * (c - c_prior)
    objective = loss + 0.5 * fallback_lambda * tf.reduce_sum(
        tf.square(c - c_prior))
    if use_adam:
      m = _ADAM_BETA1 * m + (1.0 - _ADAM_BETA1) * total
      v = _ADAM_BETA2 * v + (1.0 - _ADAM_BETA2) * tf.square(total)
      m_hat = m / (1.0 - tf.pow(_ADAM_BETA1, t))
      v_hat = v / (1.0 - tf.pow(_ADAM_BETA2, t))
      c = c - rate * m_hat / (tf.sqrt(v_hat) + _ADAM_EPSILON)
    else:
      c = c - rate * total
    return c, m, v, loss, objective, grad

  @tf.function(reduce_retracing=True)
  def loss_at(base, stacked, c, batch):
    return tf.cast(loss_fn(anchor_merging.merge_tf(base, stacked, c), batch),
                   tf.float32)

  return step, loss_at


def _mean_loss(loss_at, base, stacked, c, batches) -> float:
  """The mean loss of the merge at `c` over one pass of `batches` (a list
  of one batch when they were joined, `_joined`)."""
  return float(tf.reduce_mean(tf.stack(
      [loss_at(base, stacked, c, batch) for batch in batches])))


def _joined(batches: list[Any]) -> list[Any]:
  """Batches of one size as one batch (a list of it), else as they are.

  The mean loss over equal batches is the loss over their union, which
  one call computes faster than a call a batch (it is a diagnostic: the
  order of the sums may change its last bits).
  """
  sizes = {int(tf.shape(tf.nest.flatten(b)[0])[0]) for b in batches}
  if len(batches) < 2 or len(sizes) != 1:
    return batches
  return [tf.nest.map_structure(lambda *parts: tf.concat(parts, 0),
                                *batches)]


def _step_size(optimizer: str, learning_rate: float,
               stacked: Sequence[tf.Tensor]) -> float:
  """The step size: `learning_rate`, scaled for 'scaled_sgd' by 1 / sum_m
  ||abar_m||^2 (the paper's rate, of order 1 / (L sum_m ||a_m||^2))."""
  if optimizer != 'scaled_sgd':
    return learning_rate
  squared = float(tf.add_n([tf.reduce_sum(tf.square(tf.cast(s, tf.float64)))
                            for s in stacked]))
  return learning_rate / squared if squared > 0 else 0.0


def _relative_move(c: np.ndarray, c_prior: np.ndarray) -> float:
  """||c - c'|| / ||c'||, NaN where c' is 0."""
  prior = float(np.linalg.norm(np.asarray(c_prior, np.float64)))
  if prior == 0:
    return float('nan')
  return float(np.linalg.norm(np.asarray(c, np.float64) - c_prior) / prior)


# `search_coefficients`' traced steps by its `cache_key`.
_STEPS = traced_cache.TracedCache()


def search_coefficients(loss_fn: LossFn, weights: Weights,
                        anchors: Sequence[Weights], init_coefficients: Any,
                        server_data: Any, *, steps: int,
                        learning_rate: float, fallback_lambda: float = 0.0,
                        optimizer: str = 'sgd',
                        cache_key: Optional[Hashable] = None
                       ) -> SearchResult:
  """Searches merging coefficients on server data (eqs. 5, 9 and 10).

  Minimizes L(x + sum_m c_m abar_m; batch) + lambda/2 ||c - c'||^2 over c by
  `steps` gradient steps from c = c'. Each step uses the next server batch
  (cycling) and the memory-efficient gradient of appendix E: the merged
  weights are formed without gradient to the anchors (eq. 15), one backward
  pass gives g = dL/dw, and dL/dc_m = <g, abar_m> (eq. 16); the fallback term
  adds lambda (c - c'). The paper tunes the server optimizer's rate; SGD
  is the default here, at the given rate or at the paper's scaled rate
  ('scaled_sgd'), Adam (beta1 0.9, beta2 0.999, eps 1e-8) the alternative.

  Args:
    loss_fn: `loss_fn(weights, batch) -> scalar`, traceable by tf.function,
      e.g. `feddle.model_loss_fn(model)` or an
      `ood_surrogate.surrogate_loss_fn`.
    weights: The global model x (sequence of arrays).
    anchors: The normalized anchors abar_m, shaped like `weights`.
    init_coefficients: `[M]` fallback coefficients c' (start and prior).
    server_data: A `tf.data.Dataset` of batches, a list of batches or one
      batch, in the form `loss_fn` expects.
    steps: Number of gradient steps T; 0 returns the merge at c'.
    learning_rate: Coefficient learning rate eta_c ('sgd', 'adam'), or for
      'scaled_sgd' the dimensionless rate eta, the step being
      eta / sum_m ||abar_m||^2.
    fallback_lambda: Fallback strength lambda (paper: 0 in-domain, 0.01 OOD).
    optimizer: 'sgd', 'scaled_sgd' or 'adam'.
    cache_key: If given, the traced step is kept under it (with lambda and
      the optimizer) and reused by the next search with the same key,
      which must then mean the same `loss_fn` (e.g. the model whose loss it
      is); None traces it for this search only.

  Returns:
    A `SearchResult`.

  Raises:
    ValueError: On a bad hyperparameter, coefficient count, anchor shape, or
      empty server data.
  """
  steps, learning_rate, fallback_lambda, base, anchors, c0 = (
      _checked_search_args(steps, learning_rate, fallback_lambda, optimizer,
                           weights, anchors, init_coefficients))
  num = len(anchors)
  if not num:
    empty = np.zeros([0], np.float32)
    return SearchResult(
        tuple(np.array(b) for b in base), empty,
        SearchDiagnostics(empty, np.zeros([0], np.float32),
                          np.zeros([0], np.float32),
                          np.zeros([0, 0], np.float32), 0.0))

  use_adam = optimizer == 'adam'
  step, loss_at = _STEPS.get(
      None if cache_key is None else (cache_key, fallback_lambda, use_adam),
      lambda: _search_fns(loss_fn, fallback_lambda, use_adam))
  base_t = [tf.constant(b) for b in base]
  stacked = anchor_merging.stack_anchors(anchors, base)
  rate = _step_size(optimizer, learning_rate, stacked)
  rate_t = tf.constant(rate, tf.float32)
  # Batches held as tensors are converted once per search; a dataset is
  # read pass after pass, as it may reshuffle.
  if isinstance(server_data, tf.data.Dataset):
    cycle = server_data_lib.cycle_batches(server_data)
    next_batch = lambda t: next(cycle)
    one_pass = lambda: server_data_lib.one_pass(server_data)
  else:
    batches = server_data_lib.one_pass(server_data)
    next_batch = lambda t: batches[t % len(batches)]
    one_pass = lambda: batches
  c_prior = tf.constant(c0)
  c = c_prior
  m = v = tf.zeros([num], tf.float32)
  losses, objectives, gradients = [], [], []
  for t in range(steps):
    c, m, v, loss, objective, grad = step(
        base_t, stacked, c, c_prior, m, v, tf.constant(t + 1.0), rate_t,
        next_batch(t))
    # Kept as tensors: read back once, after the loop.
    losses.append(loss)
    objectives.append(objective)
    gradients.append(grad)
  merged = anchor_merging.merge_tf(base_t, stacked, c)
  whole = _joined(one_pass())
  final_loss = _mean_loss(loss_at, base_t, stacked, c, whole)
  prior_loss = (final_loss if steps == 0 else
                _mean_loss(loss_at, base_t, stacked, c_prior, whole))
  c = c.numpy()
  as_array = lambda values, shape: (
      tf.stack(values).numpy() if values else np.zeros(shape, np.float32))
  diagnostics = SearchDiagnostics(
      init_coefficients=c0,
      losses=as_array(losses, [0]),
      objectives=as_array(objectives, [0]),
      gradients=as_array(gradients, [0, num]).reshape([steps, num]),
      negative_share=float(np.mean(c < 0)),
      prior_loss=prior_loss, final_loss=final_loss,
      coefficient_move=_relative_move(c, c0), rate=rate)
  return SearchResult(tuple(w.numpy() for w in merged), c, diagnostics)

