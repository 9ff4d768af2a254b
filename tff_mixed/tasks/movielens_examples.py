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
"""MovieLens ratings to next-movie examples, user groups and client data.

The examples and the user split of the movie-recommendation experiment of
Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning" (arXiv:2205.13655, section 4.3 and appendix B.2.3).

Examples (`timeline_examples`): per user, the ratings sorted by timestamp
(stable: ties keep the order of the file). Position j >= 1 of that timeline
gives one example whose label is movie j and whose context is the up to
`context_length` movies just before it, oldest first, right-padded with 0:

    timeline  [m0, m1, m2, m3],  context_length = 2
    examples  context [m0, 0 ] -> label m1
              context [m0, m1] -> label m2
              context [m1, m2] -> label m3

Element format of the federated datasets (`build_client_data`):
`OrderedDict(context=int32[context_length], label=int32[])`; the client ids
are the user ids as decimal strings.

User split (`split_users`): a seeded permutation of the users; the first
`datacenter_fraction` of them are datacenter users (the paper sets 20% aside),
the others are split into train / validation / test clients (the paper's
80% / 10% / 10%, 3,865 / 483 / 483 users of ML-1M).
"""

import collections
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.tasks import movielens_ratings

_INT32_MAX = np.iinfo(np.int32).max

# Padding id in contexts and in `client_movie_keys`; MovieLens ids start at 1.
PADDING_ID = 0


def timeline_examples(
    ratings: movielens_ratings.Ratings,
    context_length: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
  """Turns each user's ratings into next-movie examples.

  Per user, the ratings are sorted by timestamp with a stable sort, so ratings
  with equal timestamps keep their order in `ratings` (the file order). Call
  the sorted movies t[0], ..., t[n-1]. For each position j = 1, ..., n-1 there
  is one example, in order of j:

  *   label: t[j];
  *   context: t[max(0, j - context_length)], ..., t[j-1], oldest first,
      followed by zeros (`PADDING_ID`) up to `context_length` entries.

  So the first example is `([t[0], 0, ..., 0], t[1])` and, once j >=
  `context_length`, the context is the `context_length` movies just before
  the label. A user with a single rating has no examples and is left out of
  the result. Repeated ratings of one movie are kept as they are.

  Args:
    ratings: The `Ratings` (any order).
    context_length: The number of context movies, >= 1.

  Returns:
    A dict from user id (Python int), in increasing order, to `(contexts,
    labels)`: `contexts` int32[m, context_length], `labels` int32[m], m >= 1.

  Raises:
    ValueError: If `context_length` < 1, the arrays of `ratings` differ in
      length, or a movie id is outside 1 .. 2**31 - 1.
  """
  context_length = movielens_ratings.check_positive_int('context_length',
                                                        context_length)
  users = np.asarray(ratings.user_ids, dtype=np.int64)
  movies = np.asarray(ratings.movie_ids, dtype=np.int64)
  times = np.asarray(ratings.timestamps, dtype=np.int64)
  if not users.ndim == movies.ndim == times.ndim == 1 or not (
      len(users) == len(movies) == len(times)):
    raise ValueError('user_ids, movie_ids and timestamps must be 1-D arrays of '
                     f'equal length, got shapes {users.shape}, '
                     f'{movies.shape}, {times.shape}')
  if movies.size and (movies.min() < 1 or movies.max() > _INT32_MAX):
    raise ValueError('movie ids must be in 1 .. 2**31 - 1 (0 is padding), got '
                     f'{movies.min()} .. {movies.max()}')
  if not users.size:
    return {}

  # Sort by user, then timestamp; both sorts are stable, so ties keep the
  # original order.
  order = np.argsort(times, kind='stable')
  order = order[np.argsort(users[order], kind='stable')]
  users = users[order]
  movies = movies[order].astype(np.int32)

  n = len(users)
  starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
  lengths = np.diff(np.r_[starts, n])
  # Position of each rating within its user's timeline.
  position = np.arange(n) - np.repeat(starts, lengths)
  example_index = np.flatnonzero(position >= 1)
  num_context = np.minimum(position[example_index], context_length)
  first = example_index - num_context
  offsets = np.arange(context_length)
  gather = first[:, None] + offsets[None, :]
  valid = offsets[None, :] < num_context[:, None]
  contexts = np.where(valid, movies[np.where(valid, gather, 0)],
                      PADDING_ID).astype(np.int32)
  labels = movies[example_index]

  result = {}
  # Examples of a user with n ratings are n - 1 consecutive rows.
  example_counts = lengths - 1
  example_starts = np.r_[0, np.cumsum(example_counts)[:-1]]
  for user, start, count in zip(users[starts].tolist(),
                                example_starts.tolist(),
                                example_counts.tolist()):
    if count:
      result[user] = (contexts[start:start + count],
                      labels[start:start + count])
  return result


def _check_fraction(name: str, value: float) -> float:
  if isinstance(value, bool) or not isinstance(value, (int, float,
                                                       np.floating)):
    raise ValueError(f'{name} must be a number in [0, 1), got {value!r}')
  if not 0.0 <= value < 1.0:
    raise ValueError(f'{name} must be in [0, 1), got {value}')
  return float(value)


def split_users(user_ids: Sequence[int],
                *,
                datacenter_fraction: float = 0.2,
                validation_fraction: float = 0.1,
                test_fraction: float = 0.1,
                seed: int = 0) -> dict[str, np.ndarray]:
  """Splits users into datacenter, train, validation and test users.

  The sorted unique user ids are permuted with
  `np.random.RandomState(seed).permutation`. The first
  `round(datacenter_fraction * n)` of the permutation are datacenter users;
  of the `rest` others, the next `round(validation_fraction * rest)` are
  validation users, the next `round(test_fraction * rest)` test users and the
  remaining ones train users (`round` is Python's, halves to even).

  With the 6,040 users of ML-1M and the defaults this gives 1,208 datacenter,
  483 validation, 483 test and 3,866 train users; the paper (appendix B.2.3)
  reports 3,865 train users, one fewer, from an unstated rounding.
  Tiny inputs may leave some group empty.

  Args:
    user_ids: The user ids (duplicates are ignored).
    datacenter_fraction: The fraction of all users set aside as datacenter
      users, in [0, 1).
    validation_fraction: The fraction of the non-datacenter users used for
      validation, in [0, 1).
    test_fraction: The fraction of the non-datacenter users used for testing,
      in [0, 1); `validation_fraction + test_fraction` must be < 1.
    seed: The seed of the permutation, a non-negative integer.

  Returns:
    A dict with keys `'datacenter'`, `'train'`, `'validation'` and `'test'`,
    each a sorted int64 array; they are disjoint and cover the users.

  Raises:
    ValueError: If `user_ids` is empty, a fraction is outside [0, 1),
      `validation_fraction + test_fraction` >= 1, or `seed` is invalid.
  """
  datacenter_fraction = _check_fraction('datacenter_fraction',
                                        datacenter_fraction)
  validation_fraction = _check_fraction('validation_fraction',
                                        validation_fraction)
  test_fraction = _check_fraction('test_fraction', test_fraction)
  if validation_fraction + test_fraction >= 1.0:
    raise ValueError(
        'validation_fraction + test_fraction must be < 1 (some users must be '
        f'left for training), got {validation_fraction} + {test_fraction}')
  if (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or
      not 0 <= seed < 2**32):
    raise ValueError(f'seed must be an integer in [0, 2**32), got {seed!r}')
  users = np.unique(np.asarray(user_ids, dtype=np.int64).ravel())
  if not users.size:
    raise ValueError('user_ids is empty')

  permuted = users[np.random.RandomState(int(seed)).permutation(len(users))]
  num_datacenter = int(round(datacenter_fraction * len(users)))
  rest = len(users) - num_datacenter
  num_validation = int(round(validation_fraction * rest))
  num_test = int(round(test_fraction * rest))
  # round(v * rest) + round(t * rest) < (v + t) * rest + 1 <= rest + 1, so the
  # train group is never negative.
  bounds = np.cumsum([num_datacenter, num_validation, num_test])
  datacenter, validation, test, train = np.split(permuted, bounds)
  return {
      'datacenter': np.sort(datacenter),
      'train': np.sort(train),
      'validation': np.sort(validation),
      'test': np.sort(test),
  }


def _client_arrays(
    examples: Mapping[int, tuple[np.ndarray, np.ndarray]],
    user_ids: Sequence[int]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
  """Decimal user id -> its int32 `(contexts, labels)`, in `user_ids` order
  (duplicates, absent users and users without examples left out).

  Raises:
    ValueError: If none of `user_ids` has examples, or the arrays of
      `examples` are inconsistent (shapes, context lengths).
  """
  by_client = {}
  context_length = None
  for user in np.asarray(user_ids, dtype=np.int64).ravel().tolist():
    if str(user) in by_client or user not in examples:
      continue
    contexts, labels = examples[user]
    contexts = np.asarray(contexts)
    labels = np.asarray(labels)
    if contexts.ndim != 2 or labels.ndim != 1 or len(contexts) != len(labels):
      raise ValueError(
          f'examples[{user}] must be (contexts [m, context_length], labels '
          f'[m]), got shapes {contexts.shape} and {labels.shape}')
    if not len(labels):
      continue
    if context_length is None:
      context_length = contexts.shape[1]
    elif contexts.shape[1] != context_length:
      raise ValueError(
          f'examples[{user}] has context length {contexts.shape[1]}, other '
          f'users have {context_length}')
    by_client[str(user)] = (contexts.astype(np.int32, copy=False),
                            labels.astype(np.int32, copy=False))
  if not by_client:
    raise ValueError('None of the given users has examples; a ClientData '
                     'needs at least one client')
  return by_client


def _graph_rows_fn(by_client: Mapping[str, tuple[np.ndarray, np.ndarray]]):
  """`rows(client_id) -> (contexts, labels)` for a string tensor, sliced
  out of constants holding every client's rows (one lookup in the graph)."""
  client_ids = list(by_client)
  all_contexts = np.concatenate([c for c, _ in by_client.values()])
  all_labels = np.concatenate([l for _, l in by_client.values()])
  counts = np.array([len(l) for _, l in by_client.values()], dtype=np.int64)
  stops = np.cumsum(counts)
  starts = stops - counts
  ids_array = np.array(client_ids, dtype=object)

  def rows(client_id):
    client_id = tf.convert_to_tensor(client_id, dtype=tf.string)
    matches = tf.reshape(
        tf.where(tf.equal(tf.constant(ids_array, dtype=tf.string),
                          client_id)), [-1])
    check = tf.debugging.assert_equal(
        tf.size(matches), 1, message='Unknown client id')
    with tf.control_dependencies([check]):
      index = tf.identity(matches[0])
    start = tf.gather(tf.constant(starts), index)
    stop = tf.gather(tf.constant(stops), index)
    return (tf.constant(all_contexts)[start:stop],
            tf.constant(all_labels)[start:stop])

  return rows


def build_rows_fn(examples: Mapping[int, tuple[np.ndarray, np.ndarray]],
                  user_ids: Sequence[int]):
  """`rows(client_id) -> (contexts int32[m, L], labels int32[m])` in a graph.

  The rows of `build_client_data(examples, user_ids)`'s client
  `client_id` (a string tensor), as tensors rather than a dataset: for a
  pipeline that shuffles the rows' positions and gathers its batches (a
  shuffle's order depends only on the number of elements and the seed, and
  positions are cheaper to shuffle than examples). An unknown id fails an
  assertion when the graph runs.

  Raises:
    ValueError: As `build_client_data`.
  """
  return _graph_rows_fn(_client_arrays(examples, user_ids))


def build_client_data(
    examples: Mapping[int, tuple[np.ndarray, np.ndarray]],
    user_ids: Sequence[int]) -> tff.simulation.datasets.ClientData:
  """Builds an in-memory federated dataset of the given users' examples.

  The client ids are the user ids as decimal strings, in the order of
  `user_ids` (duplicates dropped); users absent from `examples` or without
  examples are skipped. A client's dataset holds its examples in timeline
  order, as `OrderedDict(context=int32[context_length], label=int32[])`.

  The result comes from `ClientData.from_clients_and_tf_fn`. Its
  `serializable_dataset_fn` works both on a Python string (used by
  `create_tf_dataset_for_client`: the dataset is built from that user's
  arrays only) and on a string tensor inside a `tf.function` or TFF
  computation (used by `dataset_computation` and
  `create_tf_dataset_from_all_clients`: the user's rows are sliced out of
  constant tensors holding all clients' examples, `build_rows_fn`). Either
  way the datasets are `from_tensor_slices` over constants, so they
  serialize into a TFF computation:
  `create_tf_dataset_for_client(cid).batch(16)` can be passed as a
  `tff.SequenceType` argument.

  Args:
    examples: User id to `(contexts int[m, context_length], labels int[m])`,
      as returned by `timeline_examples`.
    user_ids: The users to include.

  Returns:
    A `tff.simulation.datasets.ClientData`.

  Raises:
    ValueError: If none of `user_ids` has examples, or the arrays of
      `examples` are inconsistent (shapes, context lengths).
  """
  by_client = _client_arrays(examples, user_ids)
  graph_rows = _graph_rows_fn(by_client)

  def make_dataset(contexts, labels):
    return tf.data.Dataset.from_tensor_slices(
        collections.OrderedDict(context=contexts, label=labels))

  def serializable_dataset_fn(client_id) -> tf.data.Dataset:
    if tf.is_tensor(client_id) and tf.executing_eagerly():
      client_id = client_id.numpy()
    if isinstance(client_id, (bytes, np.bytes_)):
      client_id = client_id.decode('utf-8')
    if isinstance(client_id, str):
      if client_id not in by_client:
        raise ValueError(f'Unknown client id {client_id!r}')
      return make_dataset(*by_client[client_id])
    # Traced (tf.function / TFF computation): look the id up in the graph.
    return make_dataset(*graph_rows(client_id))

  return tff.simulation.datasets.ClientData.from_clients_and_tf_fn(
      list(by_client), serializable_dataset_fn)
