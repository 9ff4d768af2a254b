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
"""Feddle's model atlas: anchors, their normalization and FedBuff's fallback.

Feddle ("Guided Model Merging for Hybrid Data Learning", Zhu et al., section
4.1 and Algorithm 1) keeps the most useful recent client updates as *anchors*
of a model atlas:

  * atlas (sec. 4.1.1): at most M anchors; when full, a new update replaces
    the anchor with the smallest importance score s_m = |c_m|;
  * normalization (eq. 4): each anchor is rescaled to the median anchor norm;
  * fallback (sec. 4.1.3): FedBuff's merge written as coefficients c' of the
    normalized anchors, where the coefficient search starts.

Conventions chosen here (the paper leaves them open):
  * A new anchor's score is +inf until a search has given it a coefficient
    (Algorithm 1 only defines scores after a search, line 12), so it cannot
    be evicted before the server has judged it.
  * Ties in the eviction argmin go to the lowest atlas index (numpy's argmin).
  * Eq. 4 is undefined for a zero anchor (0/0): zero anchors stay zero and
    the median is taken over the nonzero anchors' norms.

Plain numpy on anchors given as sequences of weight arrays (the trainable
weights of a `tff.learning.models.FunctionalModel`).
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from tff_mixed.core import validation

Weights = Sequence[Any]


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


def insert_anchor(atlas: Atlas, delta: Weights, max_size: int,
                   protected: Sequence[int] = ()) -> tuple[Atlas, int]:
  """`add_anchor` that also returns the slot used; never evicts `protected`."""
  max_size = validation.check_int('max_size', max_size, 1)
  if len(atlas.anchors) != len(atlas.scores):
    raise ValueError(f'Atlas has {len(atlas.anchors)} anchors but '
                     f'{len(atlas.scores)} scores.')
  if len(atlas.anchors) > max_size:
    raise ValueError(f'Atlas already holds {len(atlas.anchors)} anchors, more '
                     f'than max_size={max_size}.')
  if atlas.anchors:
    delta = validation.check_like(delta, atlas.anchors[0], 'delta')
  else:
    delta = tuple(np.array(a) for a in validation.as_arrays(delta, 'delta'))
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
  return insert_anchor(atlas, delta, max_size)[0]


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
  anchors = tuple(validation.as_arrays(a, f'anchors[{i}]')
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
  num_anchors = validation.check_int('num_anchors', num_anchors, 0)
  server_lr = validation.check_float('server_lr', server_lr, 0.0, strict=True)
  new_indices = [validation.check_int('new_indices', i, 0) for i in new_indices]
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

