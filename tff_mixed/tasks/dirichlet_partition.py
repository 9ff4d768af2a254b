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
"""Dirichlet label partition of a centralized dataset into clients.

The standard way to simulate label heterogeneity (Yurochkin et al., "Bayesian
Nonparametric Federated Learning of Neural Networks", ICML 2019; Hsu et al.
2019), used with Dir(0.1) and Dir(0.3) by the guided-model-merging paper
(Feddle, "Guided Model Merging for Hybrid Data Learning"): for every class
separately, the class's examples are shuffled and split among the clients in
proportions p ~ Dirichlet(alpha, ..., alpha). Small alpha gives each client a
few dominant classes and uneven sizes; large alpha approaches an iid split.

Split of one class of n examples: with c = cumsum(p), client i receives the
shuffled examples [floor(n c_{i-1}), floor(n c_i)) (c_0 = 0, the last client
takes the rest), so every example is assigned exactly once.

Non-empty clients: small alpha can leave clients with (almost) no examples.
By default the whole partition is redrawn, with the same Generator, until
every client has at least `min_examples` examples, at most `max_tries`
times, then a ValueError says how small the smallest client was. With
`top_up=True` the first draw is kept and repaired instead: each client
short of `min_examples` (in id order) receives randomly chosen examples from
the currently largest client (ties: lowest id) until it has enough, which
moves few examples and always succeeds when
`num_clients * min_examples <= len(labels)`.

Everything is deterministic given `seed` (numpy Generator).
"""

from collections.abc import Sequence
from typing import NamedTuple, Optional

import numpy as np

DEFAULT_MAX_TRIES = 100


class PartitionStats(NamedTuple):
  """Per-client label statistics of a partition.

  Attributes:
    classes: The distinct labels, sorted; column j of `histograms` counts
      `classes[j]`.
    histograms: int64[num_clients, num_classes] label counts.
    sizes: int64[num_clients] examples per client.
    max_class_share: float64[num_clients], the largest class count over the
      client's size (nan for an empty client).
  """
  classes: np.ndarray
  histograms: np.ndarray
  sizes: np.ndarray
  max_class_share: np.ndarray


def _check_labels(labels) -> np.ndarray:
  labels = np.asarray(labels)
  if labels.ndim != 1:
    raise ValueError(f'labels must be 1-D, got shape {labels.shape}.')
  if labels.size == 0:
    raise ValueError('labels is empty.')
  if not (np.issubdtype(labels.dtype, np.integer)
          or labels.dtype == np.bool_):
    raise ValueError(f'labels must be integers, got dtype {labels.dtype}.')
  return labels


def _check_int(name: str, value, minimum: int) -> int:
  if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
      or value < minimum):
    raise ValueError(f'{name} must be an integer >= {minimum}, got '
                     f'{value!r}.')
  return int(value)


def _draw(labels: np.ndarray, num_clients: int, alpha: float,
          rng: np.random.Generator) -> list[list[np.ndarray]]:
  """One Dirichlet draw: per client, the list of its index chunks."""
  chunks = [[] for _ in range(num_clients)]
  for label in np.unique(labels):
    indices = np.flatnonzero(labels == label)
    rng.shuffle(indices)
    proportions = rng.dirichlet(np.full(num_clients, alpha))
    if not np.all(np.isfinite(proportions)):
      raise ValueError(f'Dirichlet({alpha!r}) proportions are not finite; '
                       'alpha is too small for numpy to sample.')
    cuts = (np.cumsum(proportions)[:-1] * indices.size).astype(np.int64)
    # Rounding can make the cumulative sum exceed 1 by an ulp.
    cuts = np.minimum(cuts, indices.size)
    for client, part in enumerate(np.split(indices, cuts)):
      chunks[client].append(part)
  return chunks


def _top_up(parts: list[np.ndarray], min_examples: int,
            rng: np.random.Generator) -> list[np.ndarray]:
  """Moves examples from the largest clients to those below the minimum."""
  parts = list(parts)
  for client in range(len(parts)):
    while parts[client].size < min_examples:
      sizes = np.array([p.size for p in parts])
      donor = int(np.argmax(sizes))
      # The donor keeps at least min_examples: since the total is at least
      # num_clients * min_examples, the largest client has more than that
      # while some client is short.
      count = min(min_examples - parts[client].size,
                  sizes[donor] - min_examples)
      moved = rng.choice(parts[donor].size, size=count, replace=False)
      keep = np.ones(parts[donor].size, dtype=bool)
      keep[moved] = False
      parts[client] = np.concatenate([parts[client], parts[donor][moved]])
      parts[donor] = parts[donor][keep]
  return parts


def dirichlet_partition(labels: Sequence[int],
                        num_clients: int,
                        alpha: float,
                        seed: int,
                        min_examples: int = 1,
                        max_tries: int = DEFAULT_MAX_TRIES,
                        top_up: bool = False) -> list[np.ndarray]:
  """Splits example indices among clients with Dirichlet label skew.

  Args:
    labels: int[n], the label of every example.
    num_clients: Number of clients, >= 1.
    alpha: Dirichlet concentration, > 0 (smaller: more skewed).
    seed: Seed (integer >= 0) of the numpy Generator.
    min_examples: Each client gets at least this many examples (>= 0).
    max_tries: Draws to try before giving up (>= 1; unused with `top_up`).
    top_up: Repair the first draw instead of redrawing (module docstring).

  Returns:
    num_clients int64 arrays of example indices (into `labels`), each sorted;
    together they hold every index exactly once.

  Raises:
    ValueError: If an argument is invalid, if `num_clients * min_examples`
      exceeds the number of examples, or if no draw within `max_tries` gives
      every client `min_examples` examples.
  """
  labels = _check_labels(labels)
  num_clients = _check_int('num_clients', num_clients, 1)
  if (isinstance(alpha, bool)
      or not isinstance(alpha, (int, float, np.integer, np.floating))
      or not np.isfinite(alpha) or alpha <= 0):
    raise ValueError(f'alpha must be a finite number > 0, got {alpha!r}.')
  min_examples = _check_int('min_examples', min_examples, 0)
  max_tries = _check_int('max_tries', max_tries, 1)
  # A None seed would make numpy draw fresh entropy: not reproducible.
  seed = _check_int('seed', seed, 0)
  if num_clients * min_examples > labels.size:
    raise ValueError(
        f'Cannot give num_clients={num_clients} clients min_examples='
        f'{min_examples} examples each: only {labels.size} examples.')
  rng = np.random.default_rng(seed)
  smallest = []
  for _ in range(1 if top_up else max_tries):
    chunks = _draw(labels, num_clients, float(alpha), rng)
    parts = [np.concatenate(c) if c else np.zeros(0, np.int64)
             for c in chunks]
    if top_up:
      parts = _top_up(parts, min_examples, rng)
    smallest.append(min(p.size for p in parts))
    if smallest[-1] >= min_examples:
      return [np.sort(p).astype(np.int64) for p in parts]
  raise ValueError(
      f'No Dirichlet(alpha={alpha!r}) partition into {num_clients} clients '
      f'gave every client min_examples={min_examples} examples in '
      f'max_tries={max_tries} draws (largest smallest client: '
      f'{max(smallest)} examples). Use top_up=True, a larger alpha, fewer '
      'clients or a smaller min_examples.')


def partition_stats(labels: Sequence[int],
                    partition: Sequence[np.ndarray],
                    classes: Optional[Sequence[int]] = None
                    ) -> PartitionStats:
  """Per-client label histograms of a partition.

  Args:
    labels: int[n], the label of every example.
    partition: Per client, indices into `labels`.
    classes: The labels to count, in column order; None: the sorted distinct
      values of `labels`.

  Returns:
    A `PartitionStats`.

  Raises:
    ValueError: If `labels` is invalid, an index is out of range, or a label
      is not in `classes`.
  """
  labels = _check_labels(labels)
  classes = np.unique(labels) if classes is None else np.asarray(classes)
  column = {int(c): j for j, c in enumerate(classes.tolist())}
  histograms = np.zeros((len(partition), len(column)), dtype=np.int64)
  for client, indices in enumerate(partition):
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= labels.size):
      raise ValueError(f'partition[{client}] has indices outside '
                       f'[0, {labels.size}).')
    values, counts = np.unique(labels[indices], return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist()):
      if int(value) not in column:
        raise ValueError(f'Label {value!r} of partition[{client}] is not in '
                         f'classes.')
      histograms[client, column[int(value)]] = count
  sizes = histograms.sum(axis=1)
  with np.errstate(invalid='ignore', divide='ignore'):
    share = np.where(sizes > 0, histograms.max(axis=1, initial=0)
                     / np.maximum(sizes, 1), np.nan)
  return PartitionStats(classes=classes, histograms=histograms, sizes=sizes,
                        max_class_share=share.astype(np.float64))
