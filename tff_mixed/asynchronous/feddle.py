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
"""Feddle: server-guided merging of asynchronous client updates.

In asynchronous FL the server receives stale, heterogeneous client updates.
Feddle ("Guided Model Merging for Hybrid Data Learning", Zhu et al.,
section 4.1 and Algorithm 1) keeps the most useful recent updates as
*anchors* of a model atlas and, every server round, uses the server's own data
to choose merging coefficients instead of FedBuff's uniform average:

  * atlas (sec. 4.1.1): at most M anchors; when full, a new update replaces
    the anchor with the smallest importance score s_m = |c_m|;
  * normalization (eq. 4): each anchor is rescaled to the median anchor norm;
  * search (eqs. 5-6): minimize the server loss of x + sum_m c_m abar_m over
    c, starting from FedBuff's coefficients c' and adding the fallback term
    lambda/2 ||c - c'||^2 (eq. 10);
  * out-of-domain data (eqs. 8-9): fit a new linear head theta on the server
    data's own labels over the model body's features, then search the
    coefficients of the body with that surrogate loss;
  * memory (appendix E, eqs. 15-16): the anchors stay out of the autodiff
    graph; one backward pass gives g = dL/dw at the merged weights and
    dL/dc_m = <g, abar_m>.

This module is plain TensorFlow/numpy on lists of weight arrays (the trainable
weights of a `tff.learning.models.FunctionalModel`); the asynchronous schedule
and the FedAsync/FedBuff/CA2FL baselines live in `schedule.py` and
`server_strategies.py`.

Conventions chosen here (the paper leaves them open):
  * A new anchor's score is +inf until a search has given it a coefficient
    (Algorithm 1 only defines scores after a search, line 12), so it cannot
    be evicted before the server has judged it.
  * Ties in the eviction argmin go to the lowest atlas index (numpy's argmin).
  * Eq. 4 is undefined for a zero anchor (0/0): zero anchors stay zero and
    the median is taken over the nonzero anchors' norms.
  * The search is plain SGD by default (Adam optional); one step uses one
    server batch, cycling through the server data.
  * Out of domain, the full model, head included, moves by the searched
    coefficients, as the paper does after eq. 9; `ood_head_rule` can instead
    apply FedBuff's coefficients c' to the head, or freeze it. The fitted
    head theta is only a surrogate and never enters the model weights.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
import itertools
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import checks

Weights = Sequence[Any]
# loss_fn(weights, batch) -> scalar loss tensor, traceable by tf.function.
LossFn = Callable[[list[tf.Tensor], Any], tf.Tensor]

_OPTIMIZERS = ('sgd', 'adam')
_OOD_HEAD_RULES = ('searched', 'fallback', 'frozen')
_ADAM_BETA1, _ADAM_BETA2, _ADAM_EPSILON = 0.9, 0.999, 1e-8


# ----------------------------------------------------------------------------
# Validation helpers.










# ----------------------------------------------------------------------------
# Model atlas (section 4.1.1).


class Atlas(NamedTuple):
  """The model atlas of section 4.1.1.

  Attributes:
    anchors: The raw (unnormalized) anchors, each a tuple of weight arrays
      shaped like the model's trainable weights.
    scores: float64 `[len(anchors)]` importance scores s_m = |c_m| from the
      last search; +inf for anchors added since then.
  """
  anchors: tuple[tuple[np.ndarray, ...], ...]
  scores: np.ndarray


def empty_atlas() -> Atlas:
  """An atlas with no anchors (Algorithm 1, line 3)."""
  return Atlas(anchors=(), scores=np.zeros([0], np.float64))


def _insert_anchor(atlas: Atlas, delta: Weights, max_size: int,
                   protected: Sequence[int] = ()) -> tuple[Atlas, int]:
  """`add_anchor` that also returns the slot used; never evicts `protected`."""
  max_size = checks.check_int('max_size', max_size, 1)
  if len(atlas.anchors) != len(atlas.scores):
    raise ValueError(f'Atlas has {len(atlas.anchors)} anchors but '
                     f'{len(atlas.scores)} scores.')
  if len(atlas.anchors) > max_size:
    raise ValueError(f'Atlas already holds {len(atlas.anchors)} anchors, more '
                     f'than max_size={max_size}.')
  if atlas.anchors:
    delta = checks.check_like(delta, atlas.anchors[0], 'delta')
  else:
    delta = tuple(np.array(a) for a in checks.as_arrays(delta, 'delta'))
  anchors = list(atlas.anchors)
  scores = np.array(atlas.scores, np.float64)
  if len(anchors) < max_size:
    # Algorithm 1, line 16: the next free index.
    index = len(anchors)
    anchors.append(delta)
    scores = np.append(scores, np.inf)
  else:
    # Algorithm 1, line 18: evict argmin s_m (np.argmin: lowest index on
    # ties). Anchors added earlier in the same round are protected so that
    # the round's FedBuff fallback can still reach all of its updates.
    candidates = scores.copy()
    candidates[list(protected)] = np.nan
    if np.all(np.isnan(candidates)):
      raise ValueError(f'Cannot add more than max_size={max_size} anchors in '
                       'one round.')
    index = int(np.nanargmin(candidates))
    anchors[index] = delta
    scores[index] = np.inf
  return Atlas(anchors=tuple(anchors), scores=scores), index


def add_anchor(atlas: Atlas, delta: Weights, max_size: int) -> Atlas:
  """Adds a client update to the atlas (Algorithm 1, UpdateAtlas).

  While the atlas holds fewer than `max_size` anchors, `delta` is appended.
  Once full, it replaces the anchor with the smallest importance score
  s_m = |c_m|; ties go to the lowest index. The new anchor's score is +inf
  until the next search sets it (our choice: Algorithm 1 only defines scores
  after a search, and a fresh update should not be evicted unjudged).

  Args:
    atlas: The current `Atlas`.
    delta: A client update, a sequence of arrays shaped like the anchors.
    max_size: The atlas size M (the paper uses twice the clients per round).

  Returns:
    The new `Atlas`; the input is not modified.

  Raises:
    ValueError: If `max_size < 1`, the atlas is larger than `max_size`, or
      `delta`'s shapes differ from the anchors'.
  """
  return _insert_anchor(atlas, delta, max_size)[0]


# ----------------------------------------------------------------------------
# Anchor normalization (eq. 4) and the FedBuff fallback (section 4.1.3).


class NormalizedAnchors(NamedTuple):
  """Anchors rescaled by eq. 4.

  Attributes:
    anchors: Tuple of normalized anchors abar_m (tuples of arrays).
    norms: float64 `[M]` L2 norms of the raw anchors over all their weights.
    median: The median norm every nonzero anchor now has.
  """
  anchors: tuple[tuple[np.ndarray, ...], ...]
  norms: np.ndarray
  median: float


def anchor_norm(anchor: Weights) -> float:
  """The L2 norm of an anchor flattened over all its weight arrays."""
  return float(np.sqrt(sum(
      np.sum(np.square(np.asarray(a, np.float64))) for a in anchor)))


def _median_norm(norms: np.ndarray) -> float:
  # Zero anchors are left out: eq. 4 is undefined for them (0/0), and counting
  # them could make the median zero and wipe out every other anchor.
  nonzero = norms[norms > 0]
  return float(np.median(nonzero)) if nonzero.size else 0.0


def normalize_anchors(anchors: Sequence[Weights]) -> NormalizedAnchors:
  """Rescales every anchor to the median anchor norm (eq. 4).

  abar_m = median(||a_1||, ..., ||a_|A|||) * a_m / ||a_m||, with norms over
  whole flattened anchors, so directions are kept and magnitudes equalized.
  A zero anchor stays zero and does not enter the median (eq. 4 is undefined
  for it).

  Args:
    anchors: Sequence of anchors, each a sequence of arrays.

  Returns:
    A `NormalizedAnchors` with the normalized anchors (same dtypes), the raw
    norms and the median.
  """
  anchors = tuple(checks.as_arrays(a, f'anchors[{i}]')
                  for i, a in enumerate(anchors))
  norms = np.array([anchor_norm(a) for a in anchors], np.float64)
  median = _median_norm(norms)
  normalized = []
  for anchor, norm in zip(anchors, norms):
    scale = median / norm if norm > 0 else 0.0
    normalized.append(tuple((a * scale).astype(a.dtype) for a in anchor))
  return NormalizedAnchors(tuple(normalized), norms, median)


def fedbuff_coefficients(num_anchors: int, new_indices: Sequence[int],
                         server_lr: float,
                         anchor_norms: Optional[Sequence[float]] = None
                         ) -> np.ndarray:
  """FedBuff's merge as coefficients of the normalized anchors (sec. 4.1.3).

  FedBuff updates x <- x + server_lr * mean_{m in new} a_m over the K updates
  buffered this round. With abar_m = (median / ||a_m||) a_m (eq. 4), the same
  point is x + sum_m c'_m abar_m for
  c'_m = server_lr / K * ||a_m|| / median on the new anchors and 0 elsewhere.
  Zero anchors (and an all-zero atlas) get 0, which changes nothing since
  they add nothing to FedBuff's mean either.

  Args:
    num_anchors: Number of anchors |A| in the atlas.
    new_indices: Atlas indices of the updates buffered this round.
    server_lr: FedBuff's server learning rate eta_g.
    anchor_norms: Raw norms ||a_m|| (`NormalizedAnchors.norms`); None if the
      anchors are not rescaled (all factors 1).

  Returns:
    float32 `[num_anchors]` coefficients c'.

  Raises:
    ValueError: On a bad count, rate, index, duplicate index or a norms
      vector of the wrong length.
  """
  num_anchors = checks.check_int('num_anchors', num_anchors, 0)
  server_lr = checks.check_float('server_lr', server_lr, 0.0, strict=True)
  new_indices = [checks.check_int('new_indices', i, 0) for i in new_indices]
  if any(i >= num_anchors for i in new_indices):
    raise ValueError(f'`new_indices` {new_indices} out of range for '
                     f'{num_anchors} anchors.')
  if len(set(new_indices)) != len(new_indices):
    raise ValueError(f'`new_indices` has duplicates: {new_indices}.')
  coefficients = np.zeros([num_anchors], np.float64)
  if not new_indices:
    return coefficients.astype(np.float32)
  if anchor_norms is None:
    ratio = np.ones([num_anchors], np.float64)
  else:
    norms = np.asarray(anchor_norms, np.float64)
    if norms.shape != (num_anchors,):
      raise ValueError(f'`anchor_norms` has shape {norms.shape}, expected '
                       f'({num_anchors},).')
    median = _median_norm(norms)
    ratio = norms / median if median > 0 else np.zeros_like(norms)
  coefficients[new_indices] = server_lr / len(new_indices) * ratio[new_indices]
  return coefficients.astype(np.float32)


# ----------------------------------------------------------------------------
# Merging and the coefficient gradient (eqs. 6, 15, 16).


def _stack(anchors: Sequence[Sequence[np.ndarray]],
           reference: Sequence[np.ndarray]) -> list[tf.Tensor]:
  """Per weight array, the anchors stacked along a new axis 0: [M, ...]."""
  return [
      tf.constant(np.stack([np.asarray(a[i], r.dtype) for a in anchors]))
      for i, r in enumerate(reference)
  ]


def _merge_tf(base, stacked, coefficients):
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


def _loss_and_projected_gradient(loss_fn, base, stacked, coefficients, batch):
  # The merged weights are computed outside the tape: the anchors never enter
  # the autodiff graph (eq. 15, stop_grad), and one backward pass through the
  # model gives the coefficient gradient by inner products (eq. 16).
  merged = _merge_tf(base, stacked, coefficients)
  with tf.GradientTape() as tape:
    tape.watch(merged)
    loss = loss_fn(merged, batch)
  gradients = tape.gradient(
      loss, merged, unconnected_gradients=tf.UnconnectedGradients.ZERO)
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
  base = checks.as_arrays(weights, 'weights')
  coefficients = np.asarray(coefficients, np.float32).reshape([-1])
  if coefficients.shape[0] != len(anchors):
    raise ValueError(f'{coefficients.shape[0]} coefficients for '
                     f'{len(anchors)} anchors.')
  if not anchors:
    return tuple(np.array(b) for b in base)
  anchors = [checks.check_like(a, base, f'anchors[{i}]')
             for i, a in enumerate(anchors)]
  merged = _merge_tf([tf.constant(b) for b in base], _stack(anchors, base),
                     tf.constant(coefficients))
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
  base = checks.as_arrays(weights, 'weights')
  anchors = [checks.check_like(a, base, f'anchors[{i}]')
             for i, a in enumerate(anchors)]
  coefficients = np.asarray(coefficients, np.float32).reshape([-1])
  if coefficients.shape[0] != len(anchors) or not anchors:
    raise ValueError(f'{coefficients.shape[0]} coefficients for '
                     f'{len(anchors)} anchors; need one per anchor, >= 1.')
  # Eager: a diagnostic called once per round would retrace a tf.function
  # (new Python closures) every call.
  batch = tf.nest.map_structure(tf.convert_to_tensor, batch)
  return _loss_and_projected_gradient(
      loss_fn, [tf.constant(b) for b in base], _stack(anchors, base),
      tf.constant(coefficients), batch)[1].numpy()


# ----------------------------------------------------------------------------
# Server data.


def _split_batch(batch: Any) -> tuple[Any, Any]:
  """(x, y) of a batch given as a pair or as a mapping with 'x' and 'y'."""
  if isinstance(batch, Mapping):
    return batch['x'], batch['y']
  x, y = batch
  return x, y


def _element_specs(server_data: Any) -> list[Any]:
  """Type specs of the batches of `server_data` (see `check_server_data`)."""
  if isinstance(server_data, tf.data.Dataset):
    return [server_data.element_spec]
  to_spec = lambda t: tf.type_spec_from_value(tf.convert_to_tensor(t))
  if isinstance(server_data, list):
    return [tf.nest.map_structure(to_spec, b) for b in server_data]
  if isinstance(server_data, (tuple, Mapping)):
    return [tf.nest.map_structure(to_spec, server_data)]
  raise TypeError('Server data must be a tf.data.Dataset of batches, a list '
                  'of batches or one batch (a tuple or mapping), got '
                  f'{type(server_data).__name__}.')


def _matches(spec: Any, element: Any) -> bool:
  """Whether `element` has `spec`'s structure and compatible shapes."""
  try:
    tf.nest.assert_same_structure(spec, element, check_types=False)
  except (ValueError, TypeError):
    return False
  for s, e in zip(tf.nest.flatten(spec), tf.nest.flatten(element)):
    if not isinstance(e, tf.TensorSpec) or not s.shape.is_compatible_with(
        e.shape):
      return False
    if s.dtype.is_floating and not (e.dtype.is_floating or e.dtype.is_integer):
      return False
  return True


def check_server_data(server_data: Any, input_spec: Any,
                      labels_from_model: bool = True) -> None:
  """Checks that server batches have the model's input structure.

  Args:
    server_data: A `tf.data.Dataset` of batches, a list of batches, or one
      batch (a tuple or mapping of arrays).
    input_spec: The model's input spec, `(x_spec, y_spec)` or a mapping with
      'x' and 'y'.
    labels_from_model: If True (in-domain) the whole batch must match
      `input_spec`. If False (out-of-domain) only x must match; the labels are
      one tensor of class ids of any compatible layout.

  Raises:
    TypeError: If `server_data` is of an unsupported type.
    ValueError: If the data is empty or a batch's structure, shapes or dtypes
      do not match, naming both structures.
  """
  specs = _element_specs(server_data)
  if not specs:
    raise ValueError('Server data is empty.')
  x_spec, _ = _split_batch(input_spec)
  for element in specs:
    if labels_from_model:
      ok = _matches(input_spec, element)
      expected = input_spec
    else:
      expected = (x_spec, 'labels TensorSpec [batch, ...]')
      try:
        x, labels = _split_batch(element)
        ok = (_matches(x_spec, x) and isinstance(labels, tf.TensorSpec)
              and labels.shape.rank is not None and labels.shape.rank >= 1)
      except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
      raise ValueError('Server data whose element structure does not match '
                       f'the model: server data element {element!r}, model '
                       f'input spec {expected!r}.')


def _iterable_batches(server_data: Any) -> Any:
  if isinstance(server_data, (tf.data.Dataset, list)):
    return server_data
  if isinstance(server_data, (tuple, Mapping)):
    return [server_data]
  raise TypeError('Server data must be a tf.data.Dataset of batches, a list '
                  'of batches or one batch (a tuple or mapping), got '
                  f'{type(server_data).__name__}.')


def _cycle(server_data: Any) -> Iterator[Any]:
  """Endless batches: one pass after another through the server data."""
  batches = _iterable_batches(server_data)
  while True:
    empty = True
    for batch in batches:
      empty = False
      yield tf.nest.map_structure(tf.convert_to_tensor, batch)
    if empty:
      raise ValueError('Server data is empty.')


def model_loss_fn(model: Any, non_trainable: Optional[Weights] = None
                  ) -> LossFn:
  """The model's own loss on a batch as a function of its trainable weights.

  This is the in-domain objective l(D_S, w) of eq. 5. Inputs are cast to the
  model's input spec dtypes; `predict_on_batch` runs with `training=False`
  so the search sees a deterministic loss.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    non_trainable: Non-trainable weights; the model's initial ones if None.

  Returns:
    `loss_fn(trainable_weights, batch) -> scalar`.
  """
  if non_trainable is None:
    non_trainable = model.initial_weights[1]
  non_trainable = tuple(non_trainable)
  x_spec, y_spec = _split_batch(model.input_spec)

  def loss_fn(trainable, batch):
    x, y = _split_batch(batch)
    x = tf.nest.map_structure(lambda t, s: tf.cast(t, s.dtype), x, x_spec)
    y = tf.nest.map_structure(lambda t, s: tf.cast(t, s.dtype), y, y_spec)
    output = model.predict_on_batch((tuple(trainable), non_trainable), x,
                                    training=False)
    return model.loss(output, y)

  return loss_fn


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
  """
  init_coefficients: np.ndarray
  losses: np.ndarray
  objectives: np.ndarray
  gradients: np.ndarray
  negative_share: float


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


def search_coefficients(loss_fn: LossFn, weights: Weights,
                        anchors: Sequence[Weights], init_coefficients: Any,
                        server_data: Any, *, steps: int,
                        learning_rate: float, fallback_lambda: float = 0.0,
                        optimizer: str = 'sgd') -> SearchResult:
  """Searches merging coefficients on server data (eqs. 5, 9 and 10).

  Minimizes L(x + sum_m c_m abar_m; batch) + lambda/2 ||c - c'||^2 over c by
  `steps` gradient steps from c = c'. Each step uses the next server batch
  (cycling) and the memory-efficient gradient of appendix E: the merged
  weights are formed without gradient to the anchors (eq. 15), one backward
  pass gives g = dL/dw, and dL/dc_m = <g, abar_m> (eq. 16); the fallback term
  adds lambda (c - c'). The paper tunes the server optimizer; SGD is the
  default here, Adam (beta1 0.9, beta2 0.999, eps 1e-8) the alternative.

  Args:
    loss_fn: `loss_fn(weights, batch) -> scalar`, traceable by tf.function,
      e.g. `model_loss_fn(model)` or a `surrogate_loss_fn`.
    weights: The global model x (sequence of arrays).
    anchors: The normalized anchors abar_m, shaped like `weights`.
    init_coefficients: `[M]` fallback coefficients c' (start and prior).
    server_data: A `tf.data.Dataset` of batches, a list of batches or one
      batch, in the form `loss_fn` expects.
    steps: Number of gradient steps T; 0 returns the merge at c'.
    learning_rate: Coefficient learning rate eta_c.
    fallback_lambda: Fallback strength lambda (paper: 0 in-domain, 0.01 OOD).
    optimizer: 'sgd' or 'adam'.

  Returns:
    A `SearchResult`.

  Raises:
    ValueError: On a bad hyperparameter, coefficient count, anchor shape, or
      empty server data.
  """
  steps = checks.check_int('steps', steps, 0)
  learning_rate = checks.check_float('learning_rate', learning_rate, 0.0,
                                     strict=True)
  fallback_lambda = checks.check_float('fallback_lambda', fallback_lambda, 0.0,
                                       strict=False)
  if optimizer not in _OPTIMIZERS:
    raise ValueError(f'`optimizer` must be one of {_OPTIMIZERS}, got '
                     f'{optimizer!r}.')
  base = checks.as_arrays(weights, 'weights')
  anchors = [checks.check_like(a, base, f'anchors[{i}]')
             for i, a in enumerate(anchors)]
  c0 = np.asarray(init_coefficients, np.float32).reshape([-1])
  if c0.shape[0] != len(anchors):
    raise ValueError(f'{c0.shape[0]} initial coefficients for '
                     f'{len(anchors)} anchors.')
  num = len(anchors)
  if not num:
    empty = np.zeros([0], np.float32)
    return SearchResult(
        tuple(np.array(b) for b in base), empty,
        SearchDiagnostics(empty, np.zeros([0], np.float32),
                          np.zeros([0], np.float32),
                          np.zeros([0, 0], np.float32), 0.0))

  use_adam = optimizer == 'adam'

  @tf.function(reduce_retracing=True)
  def step(base, stacked, c, c_prior, m, v, t, batch):
    loss, grad = _loss_and_projected_gradient(loss_fn, base, stacked, c, batch)
    total = grad + fallback_lambda * (c - c_prior)
    objective = loss + 0.5 * fallback_lambda * tf.reduce_sum(
        tf.square(c - c_prior))
    if use_adam:
      m = _ADAM_BETA1 * m + (1.0 - _ADAM_BETA1) * total
      v = _ADAM_BETA2 * v + (1.0 - _ADAM_BETA2) * tf.square(total)
      m_hat = m / (1.0 - tf.pow(_ADAM_BETA1, t))
      v_hat = v / (1.0 - tf.pow(_ADAM_BETA2, t))
      c = c - learning_rate * m_hat / (tf.sqrt(v_hat) + _ADAM_EPSILON)
    else:
      c = c - learning_rate * total
    return c, m, v, loss, objective, grad

  base_t = [tf.constant(b) for b in base]
  stacked = _stack(anchors, base)
  c_prior = tf.constant(c0)
  c = c_prior
  m = v = tf.zeros([num], tf.float32)
  losses, objectives, gradients = [], [], []
  batches = _cycle(server_data)
  for t in range(steps):
    c, m, v, loss, objective, grad = step(base_t, stacked, c, c_prior, m, v,
                                          tf.constant(t + 1.0), next(batches))
    losses.append(float(loss))
    objectives.append(float(objective))
    gradients.append(grad.numpy())
  merged = _merge_tf(base_t, stacked, c)
  c = c.numpy()
  diagnostics = SearchDiagnostics(
      init_coefficients=c0,
      losses=np.array(losses, np.float32),
      objectives=np.array(objectives, np.float32),
      gradients=np.array(gradients, np.float32).reshape([steps, num]),
      negative_share=float(np.mean(c < 0)))
  return SearchResult(tuple(w.numpy() for w in merged), c, diagnostics)


# ----------------------------------------------------------------------------
# Out-of-domain surrogate (eqs. 8-9).


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
  num_classes = checks.check_int('num_classes', num_classes, 2)
  steps = checks.check_int('steps', steps, 0)
  lr = checks.check_float('lr', lr, 0.0, strict=True)
  batches = _cycle(server_data)
  x0, _ = _split_batch(next(batches))
  features = tf.convert_to_tensor(body_features_fn(x0))
  dim = int(np.prod(features.shape[1:]))
  dtype = features.dtype if features.dtype.is_floating else tf.float32
  kernel = tf.zeros([dim, num_classes], dtype)
  bias = tf.zeros([num_classes], dtype)

  @tf.function(reduce_retracing=True)
  def step(kernel, bias, features, labels):
    with tf.GradientTape() as tape:
      tape.watch([kernel, bias])
      loss = linear_head_loss((kernel, bias), features, labels)
    grad_kernel, grad_bias = tape.gradient(loss, [kernel, bias])
    return kernel - lr * grad_kernel, bias - lr * grad_bias

  def features_and_labels(batch):
    x, labels = _split_batch(batch)
    return tf.convert_to_tensor(body_features_fn(x)), labels

  stream = map(features_and_labels, _cycle(server_data))
  batches = _iterable_batches(server_data)
  if isinstance(batches, list):
    # The body is frozen: one pass of features serves every later pass (a
    # Dataset may yield different batches each pass, so it is recomputed).
    stream = itertools.cycle(
        list(itertools.islice(stream, min(steps, len(batches)))))
  for features, labels in itertools.islice(stream, steps):
    kernel, bias = step(kernel, bias, features, labels)
  return LinearHead(kernel.numpy(), bias.numpy())


def surrogate_loss_fn(features_fn: Callable[[list[tf.Tensor], Any], Any],
                      head: Any) -> LossFn:
  """The surrogate loss h_theta of eq. 9 as a function of the body weights.

  Args:
    features_fn: `features_fn(body_weights, x) -> [batch, ...] features`.
    head: The fitted `LinearHead` theta*, held fixed.

  Returns:
    `loss_fn(body_weights, (x, labels)) -> scalar`.
  """
  head = LinearHead(np.asarray(head[0]), np.asarray(head[1]))

  def loss_fn(body, batch):
    x, labels = _split_batch(batch)
    return linear_head_loss(head, features_fn(body, x), labels)

  return loss_fn


# ----------------------------------------------------------------------------
# One Feddle server round (Algorithm 1).


class FeddleConfig(NamedTuple):
  """Hyperparameters of one Feddle server round.

  Attributes:
    max_anchors: Atlas size M (paper: twice the clients per round).
    server_lr: FedBuff's server learning rate eta_g, for the fallback c'.
    search_lr: Coefficient learning rate eta_c (paper tunes 1e-5..1e-3).
    search_steps: Search steps T, one server batch each; 0 is FedBuff.
    fallback_lambda: lambda of eq. 10 (paper: 0 in-domain, 0.01 OOD).
    out_of_domain: Use the surrogate loss of eqs. 8-9 on the server labels.
    head_size: Number of trailing weight arrays forming the model head
      (2 for a dense (kernel, bias) head); OOD only.
    num_ood_classes: Number of classes of the OOD server labels.
    head_steps: Gradient steps fitting the surrogate head theta (eq. 8).
    head_lr: Step size for fitting theta.
    optimizer: 'sgd' or 'adam' for the coefficient search.
    ood_head_rule: How the model head moves in OOD mode: 'searched' (paper,
      after eq. 9: the searched c-hat on the whole anchors), 'fallback'
      (FedBuff's c') or 'frozen' (unchanged).
  """
  max_anchors: int
  server_lr: float = 1.0
  search_lr: float = 1e-3
  search_steps: int = 10
  fallback_lambda: float = 0.0
  out_of_domain: bool = False
  head_size: int = 2
  num_ood_classes: int = 2
  head_steps: int = 100
  head_lr: float = 0.1
  optimizer: str = 'sgd'
  ood_head_rule: str = 'searched'


def validate_config(config: FeddleConfig) -> FeddleConfig:
  """Checks every field of a `FeddleConfig`.

  Args:
    config: The config.

  Returns:
    `config`, unchanged.

  Raises:
    TypeError: If `config` is not a `FeddleConfig`.
    ValueError: Naming the first bad field and its value.
  """
  if not isinstance(config, FeddleConfig):
    raise TypeError(f'`config` must be a FeddleConfig, got '
                    f'{type(config).__name__}.')
  checks.check_int('max_anchors', config.max_anchors, 1)
  checks.check_float('server_lr', config.server_lr, 0.0, strict=True)
  checks.check_float('search_lr', config.search_lr, 0.0, strict=True)
  checks.check_int('search_steps', config.search_steps, 0)
  checks.check_float('fallback_lambda', config.fallback_lambda, 0.0,
                     strict=False)
  if not isinstance(config.out_of_domain, (bool, np.bool_)):
    raise ValueError('`out_of_domain` must be a bool, got '
                     f'{config.out_of_domain!r}.')
  checks.check_int('head_size', config.head_size, 1)
  checks.check_int('num_ood_classes', config.num_ood_classes, 2)
  checks.check_int('head_steps', config.head_steps, 0)
  checks.check_float('head_lr', config.head_lr, 0.0, strict=True)
  if config.optimizer not in _OPTIMIZERS:
    raise ValueError(f'`optimizer` must be one of {_OPTIMIZERS}, got '
                     f'{config.optimizer!r}.')
  if config.ood_head_rule not in _OOD_HEAD_RULES:
    raise ValueError(f'`ood_head_rule` must be one of {_OOD_HEAD_RULES}, got '
                     f'{config.ood_head_rule!r}.')
  return config


class FeddleDiagnostics(NamedTuple):
  """What one Feddle round did.

  Attributes:
    new_indices: Atlas slots of this round's updates.
    init_coefficients: float32 `[M]` FedBuff fallback c'.
    coefficients: float32 `[M]` searched coefficients c-hat (new scores |c|).
    negative_share: Fraction of c-hat below zero (the paper's Fig. 7).
    losses: float32 `[T]` search loss before each step.
    gradients: float32 `[T, M]` coefficient gradients of the (surrogate) loss,
      without the fallback term.
    median_norm: The eq. 4 median anchor norm.
    head: The fitted surrogate head theta* (OOD), else None.
    id_ood_cosine: OOD with an in-domain probe only, else NaN: the cosine
      similarity of the in-domain loss gradient dl/dc (the full model, on
      the probe) and the surrogate gradient dh/dc (on the first server
      batch), both at the search's starting point, FedBuff's c' (eq. 7 /
      eq. 17, the paper's Fig. 9 "with fallback").
    id_ood_cosine_at_zero: The same at c = 0, the current global model,
      i.e. a search started without the fallback (Fig. 9 "without").
  """
  new_indices: tuple[int, ...]
  init_coefficients: np.ndarray
  coefficients: np.ndarray
  negative_share: float
  losses: np.ndarray
  gradients: np.ndarray
  median_norm: float
  head: Optional[LinearHead]
  id_ood_cosine: float = float('nan')
  id_ood_cosine_at_zero: float = float('nan')


def cosine_similarity(a: Any, b: Any) -> float:
  """<a, b> / (|a| |b|) of two vectors; NaN if either is zero."""
  a = np.asarray(a, np.float64).reshape([-1])
  b = np.asarray(b, np.float64).reshape([-1])
  if a.shape != b.shape:
    raise ValueError(f'Vectors of different sizes: {a.shape} and {b.shape}.')
  norms = np.linalg.norm(a) * np.linalg.norm(b)
  return float(a @ b / norms) if norms > 0 else float('nan')


def feddle_step(
    model: Any,
    weights: Weights,
    atlas: Atlas,
    new_deltas: Sequence[Weights],
    server_data: Any,
    config: FeddleConfig,
    features_fn: Optional[Callable[[list[tf.Tensor], Any], Any]] = None,
    id_probe: Any = None,
) -> tuple[tuple[np.ndarray, ...], Atlas, FeddleDiagnostics]:
  """One Feddle server round (Algorithm 1, UpdateAtlas + GlobalModelUpdate).

  Adds this round's client updates as anchors, normalizes the atlas (eq. 4),
  starts from FedBuff's coefficients c' for the new updates (sec. 4.1.3),
  searches the coefficients on the server data (eq. 5/10 in-domain; eqs. 8-9
  on the body out-of-domain), merges (eq. 6) and sets the scores to |c-hat|
  (Algorithm 1, line 12). With `search_steps=0` the result is exactly
  FedBuff's x + server_lr * mean(new_deltas).

  Args:
    model: The `tff.learning.models.FunctionalModel` (loss and input spec).
    weights: The global model's trainable weights x.
    atlas: The current `Atlas` (`empty_atlas()` at the start).
    new_deltas: The client updates buffered this round, at most max_anchors.
    server_data: Server batches: a `tf.data.Dataset` of batches, a list of
      batches, or one batch. In-domain they must match `model.input_spec`;
      out-of-domain only x must, with class ids in [0, num_ood_classes) as
      labels.
    config: A `FeddleConfig`.
    features_fn: OOD only: `features_fn(body_weights, x) -> features`, with
      body_weights the weights without the last `head_size` arrays.
    id_probe: OOD only, optional: one in-domain batch (matching the model's
      input spec) for the `id_ood_cosine` diagnostics. It is never used for
      the update: Feddle out-of-domain has no in-domain data; the probe only
      measures how well the surrogate's direction agrees with the task's.

  Returns:
    `(new_weights, new_atlas, diagnostics)`: numpy weights, the updated
    `Atlas` and a `FeddleDiagnostics`.

  Raises:
    TypeError: On a bad config or server data type.
    ValueError: On a bad config field, too many deltas, weights or deltas of
      the wrong shapes, server data not matching the model, a missing
      `features_fn` or a `head_size` leaving no body.
  """
  validate_config(config)
  reference = tuple(np.asarray(w) for w in model.initial_weights[0])
  weights = checks.check_like(weights, reference, 'weights')
  new_deltas = [checks.check_like(d, reference, f'new_deltas[{i}]')
                for i, d in enumerate(new_deltas)]
  if len(new_deltas) > config.max_anchors:
    raise ValueError(f'{len(new_deltas)} new deltas exceed max_anchors='
                     f'{config.max_anchors}; FedBuff would need all of them.')
  if config.out_of_domain:
    if features_fn is None:
      raise ValueError('`features_fn` is required when out_of_domain=True.')
    if config.head_size >= len(reference):
      raise ValueError(f'`head_size`={config.head_size} leaves no body in a '
                       f'model with {len(reference)} weight arrays.')
  check_server_data(server_data, model.input_spec,
                    labels_from_model=not config.out_of_domain)

  new_indices = []
  for delta in new_deltas:
    atlas, index = _insert_anchor(atlas, delta, config.max_anchors,
                                  protected=new_indices)
    new_indices.append(index)
  normalized = normalize_anchors(atlas.anchors)
  c_prior = fedbuff_coefficients(len(atlas.anchors), new_indices,
                                 config.server_lr, normalized.norms)
  search = dict(steps=config.search_steps, learning_rate=config.search_lr,
                fallback_lambda=config.fallback_lambda,
                optimizer=config.optimizer)
  head = None
  alignment = {}
  if not atlas.anchors:
    result = search_coefficients(model_loss_fn(model), weights, (), c_prior,
                                 server_data, **search)
    new_weights = result.weights
  elif not config.out_of_domain:
    result = search_coefficients(model_loss_fn(model), weights,
                                 normalized.anchors, c_prior, server_data,
                                 **search)
    new_weights = result.weights
  else:
    split = len(reference) - config.head_size
    x_spec, _ = _split_batch(model.input_spec)

    def cast_features_fn(body, x):
      x = tf.nest.map_structure(lambda t, s: tf.cast(t, s.dtype), x, x_spec)
      return features_fn(list(body), x)

    body_anchors = [a[:split] for a in normalized.anchors]
    head_anchors = [a[split:] for a in normalized.anchors]
    # Eq. 8: theta is fitted where the search starts, at the body merged with
    # the fallback coefficients c'.
    start_body = [tf.constant(w) for w in merge_anchors(
        weights[:split], body_anchors, c_prior)]
    head = fit_linear_head(lambda x: cast_features_fn(start_body, x),
                           server_data, config.num_ood_classes,
                           config.head_steps, config.head_lr)
    result = search_coefficients(surrogate_loss_fn(cast_features_fn, head),
                                 weights[:split], body_anchors, c_prior,
                                 server_data, **search)
    head_coefficients = {
        'searched': result.coefficients,
        'fallback': c_prior,
        'frozen': np.zeros_like(c_prior),
    }[config.ood_head_rule]
    new_weights = result.weights + merge_anchors(
        weights[split:], head_anchors, head_coefficients)
    if id_probe is not None:
      check_server_data(id_probe, model.input_spec, labels_from_model=True)
      surrogate = surrogate_loss_fn(cast_features_fn, head)
      ood_batch = next(_cycle(server_data))
      cosines = []
      for at in (c_prior, np.zeros_like(c_prior)):
        cosines.append(cosine_similarity(
            coefficient_gradient(model_loss_fn(model), weights,
                                 normalized.anchors, at, id_probe),
            coefficient_gradient(surrogate, weights[:split], body_anchors,
                                 at, ood_batch)))
      alignment = dict(id_ood_cosine=cosines[0],
                       id_ood_cosine_at_zero=cosines[1])

  coefficients = result.coefficients
  new_atlas = Atlas(atlas.anchors, np.abs(coefficients).astype(np.float64))
  diagnostics = FeddleDiagnostics(
      new_indices=tuple(new_indices),
      init_coefficients=c_prior,
      coefficients=coefficients,
      negative_share=result.diagnostics.negative_share,
      losses=result.diagnostics.losses,
      gradients=result.diagnostics.gradients,
      median_norm=normalized.median,
      head=head,
      **alignment)
  return tuple(new_weights), new_atlas, diagnostics
