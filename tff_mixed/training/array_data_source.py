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
"""A `tff.program.FederatedDataSource` over in-memory client arrays.

`tff.learning.programs.train_model` (TFF 0.87) deep-copies its data iterator
every round and saves it with the program state, so that a restarted program
selects clients where the stopped one left off. TFF's own
`tff.program.DatasetDataSource` cannot be used there on TF 2.14:
`copy.deepcopy` of a `tf.data.Dataset` raises "cannot pickle 'Graph'
object". `ArrayDataSource` keeps each client's examples as numpy arrays and
builds the round's `tf.data.Dataset`s only in `select`; its iterator's state
is the number of selections made, so selection `r` is the same whether or not
the program was restarted before it.
"""

import io
from collections.abc import Sequence
from typing import Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff


def _check_clients(client_arrays) -> tuple[tuple[np.ndarray, ...], ...]:
  """Each client's examples as a tuple of arrays, checked to agree."""
  if isinstance(client_arrays, (str, bytes)) or not isinstance(
      client_arrays, Sequence) or not client_arrays:
    raise ValueError('`client_arrays` must be a non-empty sequence with one '
                     'tuple of numpy arrays per client.')
  clients = []
  for i, arrays in enumerate(client_arrays):
    if not isinstance(arrays, tuple) or not arrays:
      raise TypeError(f'Client {i} of `client_arrays` must be a non-empty '
                      f'tuple of arrays such as (x, y), got {type(arrays)}.')
    arrays = tuple(np.asarray(a) for a in arrays)
    if len({len(a) for a in arrays}) != 1:
      raise ValueError(f'Client {i}: the arrays must have one row per example, '
                       f'got leading dimensions {[len(a) for a in arrays]}.')
    clients.append(arrays)
  layout = [(a.dtype, a.shape[1:]) for a in clients[0]]
  for i, arrays in enumerate(clients):
    if [(a.dtype, a.shape[1:]) for a in arrays] != layout:
      raise ValueError(f'Client {i} has arrays of dtypes and trailing shapes '
                       f'{[(a.dtype, a.shape[1:]) for a in arrays]}, client 0 '
                       f'has {layout}; every client needs the same.')
  return tuple(clients)


def _batched(arrays: tuple[np.ndarray, ...],
             batch_size: int) -> tf.data.Dataset:
  return tf.data.Dataset.from_tensor_slices(arrays).batch(batch_size)


def _federated_type(clients, batch_size: int) -> tff.FederatedType:
  element_spec = _batched(clients[0], batch_size).element_spec
  return tff.FederatedType(
      tff.SequenceType(tff.types.tensorflow_to_type(element_spec)),
      tff.CLIENTS)


class ArrayDataSourceIterator(tff.program.FederatedDataSourceIterator):
  """Selects clients of an `ArrayDataSource`: distinct, seeded, resumable.

  Selection `r` (0, 1, ...) draws `k` distinct clients with numpy's generator
  seeded by `(seed, r)` and returns their batched datasets, in client order.
  `to_bytes` holds the arrays, the batch size, the seed and `r`, which is
  what `tff.program.FileProgramStateManager` saves with the program state.
  """

  def __init__(self, clients, batch_size: int, seed: int,
               selections: int = 0):
    self._clients = clients
    self._batch_size = batch_size
    self._seed = seed
    self._selections = selections
    self._federated_type = _federated_type(clients, batch_size)

  def __deepcopy__(self, memo):
    # The arrays are never written to: copies share them and own only the
    # selection count (train_model copies the iterator every round).
    del memo  # Unused.
    return ArrayDataSourceIterator(self._clients, self._batch_size,
                                   self._seed, self._selections)

  @property
  def federated_type(self) -> tff.FederatedType:
    return self._federated_type

  @property
  def selections(self) -> int:
    """How many selections this iterator has made."""
    return self._selections

  def select(self, k: Optional[int] = None) -> list[tf.data.Dataset]:
    """The next selection: `k` distinct clients' datasets, `1 <= k <= n`."""
    if not isinstance(k, int) or not 1 <= k <= len(self._clients):
      raise ValueError(f'`k` must be an int in [1, {len(self._clients)}] '
                       f'(the number of clients), got {k!r}.')
    rng = np.random.default_rng([self._seed, self._selections])
    chosen = np.sort(rng.choice(len(self._clients), size=k, replace=False))
    self._selections += 1
    return [_batched(self._clients[i], self._batch_size) for i in chosen]

  def to_bytes(self) -> bytes:
    arrays = {f'c{i}_{j}': a for i, client in enumerate(self._clients)
              for j, a in enumerate(client)}
    meta = np.array([len(self._clients), len(self._clients[0]),
                     self._batch_size, self._seed, self._selections], np.int64)
    buffer = io.BytesIO()
    np.savez(buffer, meta=meta, **arrays)
    return buffer.getvalue()

  @classmethod
  def from_bytes(cls, buffer: bytes) -> 'ArrayDataSourceIterator':
    with np.load(io.BytesIO(buffer), allow_pickle=False) as saved:
      num_clients, num_leaves, batch_size, seed, selections = (
          int(v) for v in saved['meta'])
      clients = tuple(
          tuple(saved[f'c{i}_{j}'] for j in range(num_leaves))
          for i in range(num_clients))
    return cls(clients, batch_size, seed, selections)

  def __eq__(self, other: object) -> bool:
    if not isinstance(other, ArrayDataSourceIterator):
      return NotImplemented
    if (self._batch_size, self._seed, self._selections) != (
        other._batch_size, other._seed, other._selections):
      return False
    if len(self._clients) != len(other._clients):
      return False
    return all(len(a) == len(b) and all(map(np.array_equal, a, b))
               for a, b in zip(self._clients, other._clients))


class ArrayDataSource(tff.program.FederatedDataSource):
  """Clients' numpy examples as a `tff.program.FederatedDataSource`.

  For `tff.learning.programs.train_model` with this library's processes
  (and any `LearningProcess` whose `next` takes `{B*}@CLIENTS`): each
  selection is `k` distinct clients' data as `tf.data.Dataset`s of batches of
  `batch_size`, the type `{B*}@CLIENTS` of `federated_type`.

  Args:
    client_arrays: One tuple of numpy arrays per client, e.g. `(x, y)`, each
      with one row per example; every client's arrays have the same dtypes
      and trailing shapes.
    batch_size: Examples per batch.
    seed: Seeds the client selection (see `ArrayDataSourceIterator`).
  """

  def __init__(self, client_arrays: Sequence[tuple[np.ndarray, ...]],
               batch_size: int, seed: int = 0):
    if not isinstance(batch_size, int) or batch_size < 1:
      raise ValueError(f'`batch_size` must be a positive int, got '
                       f'{batch_size!r}.')
    if not isinstance(seed, int) or seed < 0:
      raise ValueError(f'`seed` must be a non-negative int, got {seed!r}.')
    self._clients = _check_clients(client_arrays)
    self._batch_size = batch_size
    self._seed = seed
    self._federated_type = _federated_type(self._clients, batch_size)

  @property
  def federated_type(self) -> tff.FederatedType:
    return self._federated_type

  def iterator(self) -> ArrayDataSourceIterator:
    return ArrayDataSourceIterator(self._clients, self._batch_size,
                                   self._seed)
