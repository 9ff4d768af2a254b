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
"""Label imbalance on real handwritten digits: federated positives only.

A small, download-free analogue of the smile-classifier experiment of
Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning" (arXiv:2205.13655, section 4.1): the clients only hold
examples of one label, the datacenter only holds examples of the other, and
the model is evaluated on both.

Data: scikit-learn's bundled copy of the test set of the UCI "Optical
Recognition of Handwritten Digits" data set (E. Alpaydin and C. Kaynak, 1998;
https://archive.ics.uci.edu/dataset/80), loaded with
`sklearn.datasets.load_digits()`: 1,797 real 8x8 grayscale images of the
digits 0-9 with pixel counts 0..16. It ships inside the scikit-learn package
(BSD-3-Clause), so no download is needed.

The task:

*   Binary label: 1 ("positive") for the digits in `positive_digits` (default
    0-4, about half of the images), 0 ("negative") for the others.
*   Features: the 64 pixels divided by 16, `float32[64]`; labels
    `float32[1]`, matching `tff_mixed.models.dense.build_binary_classifier(64)`.
*   A seeded split into train and eval examples, stratified by digit so both
    labels (and every digit) keep their proportions.
*   Federated clients hold only positive training examples. The partition is
    non-IID by digit: positives are sorted by digit (random order within a
    digit) and cut into `num_clients` contiguous shards of near-equal size, so
    most clients hold a single digit, like the shards of McMahan et al. 2017.
*   The centralized data are all negative training examples, pooled.
*   The "oracle" scenario federates all training examples: oracle client i
    holds positive shard i plus negative shard i (negatives partitioned the
    same way), as if the negatives had stayed on the devices.
*   The eval set is every held-out example, positive and negative.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from sklearn import datasets as sk_datasets
from sklearn import model_selection
import tensorflow as tf

from tff_mixed.simulation import client_groups as client_groups_lib
from tff_mixed.tasks import binary_metrics

# The task's evaluation (kept here too so `task.evaluate` reads naturally).
EvalMetrics = binary_metrics.EvalMetrics
evaluate = binary_metrics.evaluate

NUM_FEATURES = 64
DEFAULT_POSITIVE_DIGITS = (0, 1, 2, 3, 4)
_MAX_PIXEL = 16.0
_NUM_DIGITS = 10


class LabelImbalanceTask(NamedTuple):
  """The digits label-imbalance task (see the module docstring).

  Index fields refer to rows of `sklearn.datasets.load_digits()`.

  Attributes:
    client_datasets: One `tf.data.Dataset` of `(float32[?, 64],
      float32[?, 1])` batches per client, positives only.
    oracle_client_datasets: Like `client_datasets`, but each client also holds
      its share of the negative training examples.
    central_data: `(x, y)` numpy arrays of all negative training examples.
    eval_data: `(x, y)` numpy arrays of all held-out examples.
    num_client_examples: Examples per client in `client_datasets`.
    num_oracle_client_examples: Examples per client in
      `oracle_client_datasets`.
    client_indices: Per client, the indices of its examples.
    oracle_client_indices: Per oracle client, the indices of its examples.
    central_indices: Indices of the central examples.
    eval_indices: Indices of the eval examples.
    positive_digits: The digit classes labeled 1.
    client_order: Per client, the indices of its examples in dataset order
      (the order of `client_datasets`' examples).
    oracle_client_order: Per oracle client, likewise.
    client_batch_size: The batch size of the client datasets.
  """

  client_datasets: list[tf.data.Dataset]
  oracle_client_datasets: list[tf.data.Dataset]
  central_data: tuple[np.ndarray, np.ndarray]
  eval_data: tuple[np.ndarray, np.ndarray]
  num_client_examples: list[int]
  num_oracle_client_examples: list[int]
  client_indices: list[np.ndarray]
  oracle_client_indices: list[np.ndarray]
  central_indices: np.ndarray
  eval_indices: np.ndarray
  positive_digits: tuple[int, ...]
  client_order: list[np.ndarray]
  oracle_client_order: list[np.ndarray]
  client_batch_size: int

  @property
  def num_clients(self) -> int:
    return len(self.client_datasets)

  def client_groups(self, oracle: bool = False
                    ) -> client_groups_lib.ClientGroups:
    """The clients for the fast simulation mode, int32 ids 0, 1, ....

    Client `i`'s dataset, read inside the group's computation, holds the
    batches of `client_datasets[i]` (`oracle_client_datasets[i]` with
    `oracle`): the same examples in the same order.
    """
    x, _, y = _load_examples(self.positive_digits)
    orders = self.oracle_client_order if oracle else self.client_order
    dataset_fn = client_groups_lib.array_dataset_fn(
        [(x[o], y[o]) for o in orders],
        lambda d: d.batch(self.client_batch_size))
    return client_groups_lib.ClientGroups(dataset_fn, np.int32)


def _check_int(name: str, value, minimum: int) -> None:
  # bool is an int subclass; `num_clients=True` is a bug, not 1.
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'`{name}` must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'`{name}` must be >= {minimum}, got {value}.')


def _check_positive_digits(positive_digits) -> tuple[int, ...]:
  try:
    digits = tuple(positive_digits)
  except TypeError:
    raise TypeError('`positive_digits` must be a sequence of ints, got '
                    f'{positive_digits!r}.') from None
  for d in digits:
    if (isinstance(d, bool) or not isinstance(d, (int, np.integer))
        or not 0 <= d < _NUM_DIGITS):
      raise ValueError('`positive_digits` must hold digits in 0..9, got '
                       f'{digits!r}.')
  if len(set(digits)) != len(digits):
    raise ValueError(f'`positive_digits` has duplicates: {digits!r}.')
  if not 0 < len(digits) < _NUM_DIGITS:
    raise ValueError('`positive_digits` must hold between 1 and 9 digits so '
                     f'both labels exist, got {digits!r}.')
  return tuple(sorted(int(d) for d in digits))


def _shard_by_digit(indices: np.ndarray, digits: np.ndarray, num_shards: int,
                    rng: np.random.Generator) -> list[np.ndarray]:
  """Splits `indices` into contiguous shards after sorting them by digit."""
  shuffled = rng.permutation(indices)
  # A stable sort keeps the random order within each digit.
  ordered = shuffled[np.argsort(digits[shuffled], kind='stable')]
  return [np.sort(s) for s in np.array_split(ordered, num_shards)]


def _load_examples(positive_digits: tuple[int, ...]):
  """`(x, digits, y)` of every image of `load_digits()`, row by row."""
  digits_data = sk_datasets.load_digits()
  x = (digits_data.data / _MAX_PIXEL).astype(np.float32)
  digits = digits_data.target.astype(np.int64)
  y = np.isin(digits, positive_digits).astype(np.float32)[:, np.newaxis]
  return x, digits, y


def _client_dataset(x: np.ndarray, y: np.ndarray, order: np.ndarray,
                    batch_size: int) -> tf.data.Dataset:
  return tf.data.Dataset.from_tensor_slices(
      (x[order], y[order])).batch(batch_size)


def build_task(
    num_clients: int = 60,
    client_batch_size: int = 8,
    seed: int = 0,
    eval_fraction: float = 0.25,
    positive_digits: Sequence[int] = DEFAULT_POSITIVE_DIGITS,
) -> LabelImbalanceTask:
  """Builds the digits label-imbalance task.

  Args:
    num_clients: Number of federated clients (shards of the positives).
    client_batch_size: Batch size of the client datasets.
    seed: Seeds the train/eval split, the partition and the client shuffles.
    eval_fraction: Fraction of the images held out for evaluation, in (0, 1).
    positive_digits: The digit classes labeled 1 (the rest are labeled 0).

  Returns:
    A `LabelImbalanceTask`.

  Raises:
    TypeError: If an argument has the wrong type.
    ValueError: If an argument is out of range, e.g. more clients than
      positive training examples.
  """
  _check_int('num_clients', num_clients, 1)
  _check_int('client_batch_size', client_batch_size, 1)
  _check_int('seed', seed, 0)
  if (isinstance(eval_fraction, bool)
      or not isinstance(eval_fraction, (float, int))
      or not 0 < eval_fraction < 1):
    raise ValueError(
        f'`eval_fraction` must be a number in (0, 1), got {eval_fraction!r}.')
  positive_digits = _check_positive_digits(positive_digits)

  x, digits, y = _load_examples(positive_digits)

  train_indices, eval_indices = model_selection.train_test_split(
      np.arange(len(digits)), test_size=eval_fraction, random_state=seed,
      shuffle=True, stratify=digits)
  train_indices = np.sort(train_indices)
  eval_indices = np.sort(eval_indices)
  positive_train = train_indices[y[train_indices, 0] == 1]
  negative_train = train_indices[y[train_indices, 0] == 0]
  if num_clients > len(positive_train):
    raise ValueError(
        f'`num_clients` must be at most the {len(positive_train)} positive '
        f'training examples (one or more per client), got {num_clients}.')

  rng = np.random.default_rng(seed)
  client_indices = _shard_by_digit(positive_train, digits, num_clients, rng)
  negative_shards = _shard_by_digit(negative_train, digits, num_clients, rng)
  oracle_client_indices = [
      np.sort(np.concatenate([p, n]))
      for p, n in zip(client_indices, negative_shards)
  ]
  # Each client is shuffled once here, so that batches mix its digits; TFF
  # restarts the dataset each round, so an in-pipeline shuffle would add
  # nothing. Drawn in this order (clients, then oracle clients): a seed
  # gives the datasets it always gave.
  client_order = [rng.permutation(i) for i in client_indices]
  oracle_client_order = [rng.permutation(i) for i in oracle_client_indices]
  client_datasets = [_client_dataset(x, y, o, client_batch_size)
                     for o in client_order]
  oracle_client_datasets = [_client_dataset(x, y, o, client_batch_size)
                            for o in oracle_client_order]
  return LabelImbalanceTask(
      client_datasets=client_datasets,
      oracle_client_datasets=oracle_client_datasets,
      central_data=(x[negative_train], y[negative_train]),
      eval_data=(x[eval_indices], y[eval_indices]),
      num_client_examples=[len(i) for i in client_indices],
      num_oracle_client_examples=[len(i) for i in oracle_client_indices],
      client_indices=client_indices,
      oracle_client_indices=oracle_client_indices,
      central_indices=negative_train,
      eval_indices=eval_indices,
      positive_digits=positive_digits,
      client_order=client_order,
      oracle_client_order=oracle_client_order,
      client_batch_size=client_batch_size,
  )
