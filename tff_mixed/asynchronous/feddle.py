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
to choose merging coefficients instead of FedBuff's uniform average. This
module is the Feddle server round (`feddle_step`: UpdateAtlas +
GlobalModelUpdate) and `FeddleMethod`, Feddle behind a FedBuff-style buffer
as an asynchronous strategy (`strategy.AsyncStrategy`). Its parts, one
concept a module:

  * `feddle_atlas`: the atlas (sec. 4.1.1), anchor normalization (eq. 4) and
    FedBuff's fallback coefficients (sec. 4.1.3);
  * `anchor_merging`: x + sum_m c_m abar_m (eq. 6) and the memory-efficient
    coefficient gradient (appendix E, eqs. 15-16);
  * `coefficient_search`: the search on the server data (eqs. 5, 10);
  * `ood_surrogate`: the out-of-domain surrogate loss (eqs. 8-9);
  * `server_data`: checking and cycling the server batches.

Their public names are also importable from here (`feddle.add_anchor`, ...).

Conventions chosen here (the paper leaves them open):
  * Out of domain, the full model, head included, moves by the searched
    coefficients, as the paper does after eq. 9; `ood_head_rule` can instead
    apply FedBuff's coefficients c' to the head, or freeze it.
  * The in-domain objective l(D_S, w) of eq. 5 is the model's loss with
    `training=False`, so the search sees a deterministic loss.
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import anchor_merging
from tff_mixed.asynchronous import coefficient_search
from tff_mixed.asynchronous import feddle_atlas
from tff_mixed.asynchronous import ood_surrogate
from tff_mixed.asynchronous import server_data as server_data_lib
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import strategy
from tff_mixed.core import central_objective
from tff_mixed.core import model_ops
from tff_mixed.core import validation

# Feddle's parts, importable from here as before the split.
# pylint: disable=g-bad-import-order,unused-import
from tff_mixed.asynchronous.anchor_merging import coefficient_gradient
from tff_mixed.asynchronous.anchor_merging import LossFn
from tff_mixed.asynchronous.anchor_merging import merge_anchors
from tff_mixed.asynchronous.coefficient_search import search_coefficients
from tff_mixed.asynchronous.coefficient_search import SearchDiagnostics
from tff_mixed.asynchronous.coefficient_search import SearchResult
from tff_mixed.asynchronous.feddle_atlas import add_anchor
from tff_mixed.asynchronous.feddle_atlas import anchor_norm
from tff_mixed.asynchronous.feddle_atlas import Atlas
from tff_mixed.asynchronous.feddle_atlas import empty_atlas
from tff_mixed.asynchronous.feddle_atlas import fedbuff_coefficients
from tff_mixed.asynchronous.feddle_atlas import normalize_anchors
from tff_mixed.asynchronous.feddle_atlas import NormalizedAnchors
from tff_mixed.asynchronous.ood_surrogate import fit_linear_head
from tff_mixed.asynchronous.ood_surrogate import linear_head_loss
from tff_mixed.asynchronous.ood_surrogate import LinearHead
from tff_mixed.asynchronous.ood_surrogate import surrogate_loss_fn
from tff_mixed.asynchronous.server_data import check_server_data
# pylint: enable=g-bad-import-order,unused-import

Weights = Sequence[Any]

_OOD_HEAD_RULES = ('searched', 'fallback', 'frozen')


def model_loss_fn(model: Any, non_trainable: Optional[Weights] = None
                  ) -> LossFn:
  """The in-domain objective l(D_S, w) of eq. 5, in the trainable weights.

  The model's own loss (`model_ops.trainable_loss_fn`), with inputs cast to
  the model's input spec dtypes and `predict_on_batch` run with
  `training=False`, so that the search sees a deterministic loss.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    non_trainable: Non-trainable weights; the model's initial ones if None.

  Returns:
    `loss_fn(trainable_weights, batch) -> scalar`.
  """
  return model_ops.trainable_loss_fn(model, non_trainable, training=False,
                                     cast_inputs=True)


# ----------------------------------------------------------------------------
# One Feddle server round (Algorithm 1).


class FeddleConfig(NamedTuple):
  """Hyperparameters of one Feddle server round.

  Attributes:
    max_anchors: Atlas size M (paper: twice the clients per round).
    server_lr: FedBuff's server learning rate eta_g, for the fallback c'.
    search_lr: Coefficient learning rate eta_c (paper tunes 1e-5..1e-3),
      or with 'scaled_sgd' the dimensionless rate of the step eta_c /
      sum_m ||abar_m||^2.
    search_steps: Search steps T, one server batch each; 0 is FedBuff.
    fallback_lambda: lambda of eq. 10 (paper: 0 in-domain, 0.01 OOD).
    out_of_domain: Use the surrogate loss of eqs. 8-9 on the server labels.
    head_size: Number of trailing weight arrays forming the model head
      (2 for a dense (kernel, bias) head); OOD only.
    num_ood_classes: Number of classes of the OOD server labels.
    head_steps: Gradient steps fitting the surrogate head theta (eq. 8).
    head_lr: Step size for fitting theta.
    optimizer: 'sgd', 'scaled_sgd' or 'adam' for the coefficient search
      (`coefficient_search`).
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
  validation.check_int('max_anchors', config.max_anchors, 1)
  validation.check_float('server_lr', config.server_lr, 0.0, strict=True)
  validation.check_float('search_lr', config.search_lr, 0.0, strict=False)
  validation.check_int('search_steps', config.search_steps, 0)
  validation.check_float('fallback_lambda', config.fallback_lambda, 0.0,
                          strict=False)
  if not isinstance(config.out_of_domain, (bool, np.bool_)):
    raise ValueError('`out_of_domain` must be a bool, got '
                     f'{config.out_of_domain!r}.')
  validation.check_int('head_size', config.head_size, 1)
  validation.check_int('num_ood_classes', config.num_ood_classes, 2)
  validation.check_int('head_steps', config.head_steps, 0)
  validation.check_float('head_lr', config.head_lr, 0.0, strict=True)
  if config.optimizer not in coefficient_search.OPTIMIZERS:
    raise ValueError('`optimizer` must be one of '
                     f'{coefficient_search.OPTIMIZERS}, got '
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
    coefficient_move: How far the search moved: ||c-hat - c'|| / ||c'||.
    prior_loss: The search's loss (the surrogate's, OOD) over one pass of
      the server data at c', FedBuff's merge.
    final_loss: The same at c-hat.
    search_rate: The step size the search took (for 'scaled_sgd',
      search_lr / sum_m ||abar_m||^2).
  """
  new_indices: tuple[int, ...]
  init_coefficients: np.ndarray
  coefficients: np.ndarray
  negative_share: float
  losses: np.ndarray
  gradients: np.ndarray
  median_norm: float
  head: Optional[ood_surrogate.LinearHead]
  id_ood_cosine: float = float('nan')
  id_ood_cosine_at_zero: float = float('nan')
  coefficient_move: float = float('nan')
  prior_loss: float = float('nan')
  final_loss: float = float('nan')
  search_rate: float = float('nan')


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
    atlas: feddle_atlas.Atlas,
    new_deltas: Sequence[Weights],
    server_data: Any,
    config: FeddleConfig,
    features_fn: Optional[Callable[[list[tf.Tensor], Any], Any]] = None,
    id_probe: Any = None,
) -> tuple[tuple[np.ndarray, ...], feddle_atlas.Atlas, FeddleDiagnostics]:
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
  weights, new_deltas = _checked_step_args(model, reference, weights,
                                           new_deltas, server_data, config,
                                           features_fn)
  new_indices = []
  for delta in new_deltas:
    atlas, index = feddle_atlas.insert_anchor(
        atlas, delta, config.max_anchors, protected=new_indices)
    new_indices.append(index)
  normalized = feddle_atlas.normalize_anchors(atlas.anchors)
  c_prior = feddle_atlas.fedbuff_coefficients(
      len(atlas.anchors), new_indices, config.server_lr, normalized.norms)
  if config.out_of_domain and atlas.anchors:
    new_weights, result, head, alignment = _out_of_domain_merge(
        model, weights, normalized.anchors, c_prior, server_data, config,
        features_fn, id_probe)
  else:
    result = coefficient_search.search_coefficients(
        model_loss_fn(model), weights, normalized.anchors, c_prior,
        server_data, **_search_args(config),
        cache_key=('feddle_model_loss', model))
    new_weights, head, alignment = result.weights, None, {}
  coefficients = result.coefficients
  new_atlas = feddle_atlas.Atlas(atlas.anchors,
                                 np.abs(coefficients).astype(np.float64))
  diagnostics = FeddleDiagnostics(
      new_indices=tuple(new_indices),
      init_coefficients=c_prior,
      coefficients=coefficients,
      negative_share=result.diagnostics.negative_share,
      losses=result.diagnostics.losses,
      gradients=result.diagnostics.gradients,
      median_norm=normalized.median,
      head=head,
      coefficient_move=result.diagnostics.coefficient_move,
      prior_loss=result.diagnostics.prior_loss,
      final_loss=result.diagnostics.final_loss,
      search_rate=result.diagnostics.rate,
      **alignment)
  return tuple(new_weights), new_atlas, diagnostics


def _checked_step_args(model, reference, weights, new_deltas, server_data,
                       config, features_fn):
  """`feddle_step`'s weights and updates, checked against the model."""
  weights = validation.check_like(weights, reference, 'weights')
  new_deltas = [validation.check_like(d, reference, f'new_deltas[{i}]')
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
  server_data_lib.check_server_data(
      server_data, model.input_spec,
      labels_from_model=not config.out_of_domain)
  return weights, new_deltas


def _search_args(config: FeddleConfig) -> dict[str, Any]:
  return dict(steps=config.search_steps, learning_rate=config.search_lr,
              fallback_lambda=config.fallback_lambda,
              optimizer=config.optimizer)


def _out_of_domain_merge(model, weights, anchors, c_prior, server_data,
                         config, features_fn, id_probe):
  """The body searched with the surrogate loss (eqs. 8-9), then the head.

  Returns:
    `(new_weights, search_result, head, alignment)`, with `alignment` the
    `id_ood_cosine*` diagnostics when there is an `id_probe`, else empty.
  """
  split = len(weights) - config.head_size
  x_spec, _ = central_objective.split_batch(model.input_spec)

  def cast_features_fn(body, x):
    return features_fn(list(body), model_ops.cast_to_spec(x, x_spec))

  body_anchors = [a[:split] for a in anchors]
  head_anchors = [a[split:] for a in anchors]
  # Eq. 8: theta is fitted where the search starts, at the body merged with
  # the fallback coefficients c'.
  start_body = [tf.constant(w) for w in anchor_merging.merge_anchors(
      weights[:split], body_anchors, c_prior)]
  head = ood_surrogate.fit_linear_head(
      lambda x: cast_features_fn(start_body, x), server_data,
      config.num_ood_classes, config.head_steps, config.head_lr)
  surrogate = ood_surrogate.surrogate_loss_fn(cast_features_fn, head)
  result = coefficient_search.search_coefficients(
      surrogate, weights[:split], body_anchors, c_prior, server_data,
      **_search_args(config))
  head_coefficients = {
      'searched': result.coefficients,
      'fallback': c_prior,
      'frozen': np.zeros_like(c_prior),
  }[config.ood_head_rule]
  new_weights = result.weights + anchor_merging.merge_anchors(
      weights[split:], head_anchors, head_coefficients)
  alignment = {}
  if id_probe is not None:
    server_data_lib.check_server_data(id_probe, model.input_spec,
                                      labels_from_model=True)
    ood_batch = next(server_data_lib.cycle_batches(server_data))
    cosines = [cosine_similarity(
        anchor_merging.coefficient_gradient(model_loss_fn(model), weights,
                                            anchors, at, id_probe),
        anchor_merging.coefficient_gradient(surrogate, weights[:split],
                                            body_anchors, at, ood_batch))
               for at in (c_prior, np.zeros_like(c_prior))]
    alignment = dict(id_ood_cosine=cosines[0],
                     id_ood_cosine_at_zero=cosines[1])
  return new_weights, result, head, alignment


# ----------------------------------------------------------------------------
# Feddle as an asynchronous strategy (`simulation.run_async`).


class FeddleState(NamedTuple):
  """Feddle's server state: the atlas and the not yet merged updates."""

  atlas: feddle_atlas.Atlas
  buffer: tuple[server_strategies.ClientUpdate, ...]
  num_merges: int


class FeddleMerge(NamedTuple):
  """What a Feddle merge reports (`strategy.MergeEvent.diagnostics`).

  Attributes:
    atlas: The atlas the search ran on (this merge's updates added, the
      scores set to |c-hat|).
    diagnostics: The merge's `FeddleDiagnostics` (FedBuff's c', the
      searched c-hat, the share of negative coefficients, ...).
  """

  atlas: feddle_atlas.Atlas
  diagnostics: FeddleDiagnostics


class FeddleMethod(strategy.AsyncStrategy):
  """Feddle (Zhu et al., Algorithm 1) as an asynchronous strategy.

  Arrived updates are buffered; every `buffer_size` of them trigger one
  `feddle.feddle_step` (atlas update, coefficient search on the server data
  from FedBuff's coefficients). Each merge's `FeddleMerge` (the atlas and
  the `FeddleDiagnostics`: share of negative coefficients, coefficient
  gradients; out-of-domain with an `id_probe`, the in-domain/out-of-domain
  gradient cosine similarities) goes to `apply`'s `on_merge`, e.g. to
  measure what else the atlas's span holds
  (experiments/hybrid_async/feddle_span_lib.py).
  """

  def __init__(self, model: tff.learning.models.FunctionalModel,
               config: FeddleConfig, server_data: Any,
               buffer_size: int,
               features_fn: Optional[Callable[..., Any]] = None,
               id_probe: Any = None):
    validate_config(config)
    if isinstance(buffer_size, bool) or not isinstance(
        buffer_size, int) or buffer_size < 1:
      raise ValueError(f'`buffer_size` must be an int >= 1, got '
                       f'{buffer_size!r}.')
    if buffer_size > config.max_anchors:
      raise ValueError(f'`buffer_size` ({buffer_size}) must be at most the '
                       f'atlas size `max_anchors` ({config.max_anchors}).')
    self._model = model
    self._config = config
    self._server_data = server_data
    self._buffer_size = buffer_size
    self._features_fn = features_fn
    # Out-of-domain only: an in-domain batch for the gradient-alignment
    # diagnostics (never used for the update).
    if id_probe is not None:
      if not config.out_of_domain:
        raise ValueError('`id_probe` is a diagnostic of out-of-domain Feddle; '
                         'in-domain Feddle searches on the probe\'s kind of '
                         'data already.')
      server_data_lib.check_server_data(id_probe, model.input_spec)
    self._id_probe = id_probe

  def initial_state(self) -> FeddleState:
    return FeddleState(feddle_atlas.empty_atlas(), (), 0)

  def apply(self, state: FeddleState, weights: Weights,
            updates: Sequence[server_strategies.ClientUpdate],
            on_merge: strategy.OnMerge = None
           ) -> tuple[FeddleState, list[np.ndarray]]:
    """See `AsyncStrategy.apply`."""
    buffer = list(state.buffer) + list(updates)
    atlas, merges = state.atlas, state.num_merges
    weights = [np.asarray(w) for w in weights]
    while len(buffer) >= self._buffer_size:
      batch, buffer = (buffer[:self._buffer_size],
                       buffer[self._buffer_size:])
      new_weights, atlas, diagnostics = feddle_step(
          self._model, weights, atlas, [u.delta for u in batch],
          self._server_data, self._config, features_fn=self._features_fn,
          id_probe=self._id_probe)
      new_weights = [np.asarray(w, dtype=old.dtype)
                     for w, old in zip(new_weights, weights)]
      strategy.report_merge(on_merge, merges, weights, new_weights, batch,
                            FeddleMerge(atlas, diagnostics))
      weights = new_weights
      merges += 1
    return FeddleState(atlas, tuple(buffer), merges), weights
