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
"""MovieLens next-movie data for the mixed-FL dual-encoder experiment.

The data layer of the movie-recommendation experiment of Augenstein et al.,
"Mixed Federated Learning: Joint Decentralized and Centralized Learning"
(arXiv:2205.13655, section 4.3 and appendix B.2.3): each user's ratings,
ordered by time, become next-movie prediction examples, and the users are
split into "datacenter" users and federated train / validation / test
clients. `load_movielens` does it all in one call:

*   `movielens_ratings`: reads and validates a ratings file (`read_ratings`;
    ML-1M `ratings.dat` or ML-100K `u.data`).
*   `movielens_examples`: each user's timeline to examples
    (`timeline_examples`), the seeded user split (`split_users`) and the
    federated datasets (`build_client_data`; `build_rows_fn`, a client's
    rows as tensors).
*   here: the task's data (`MovieLensData`), and, for the federated dual
    encoder, `client_movie_keys` (the bounded set of movie ids a client
    touches, whose embedding rows it fetches) and `remap_to_local` (global
    movie ids to rows of that local slice).

The names of both modules are importable from here as well
(`movielens.read_ratings`, `movielens.PADDING_ID`, ...).
"""

from typing import NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff

from tff_mixed.tasks import movielens_examples
from tff_mixed.tasks import movielens_ratings

# Reading ratings files.
FORMAT_AUTO = movielens_ratings.FORMAT_AUTO
FORMAT_ML_1M = movielens_ratings.FORMAT_ML_1M
FORMAT_ML_100K = movielens_ratings.FORMAT_ML_100K
Ratings = movielens_ratings.Ratings
MalformedRatingsError = movielens_ratings.MalformedRatingsError
read_ratings = movielens_ratings.read_ratings
# Examples, user split, client data.
PADDING_ID = movielens_examples.PADDING_ID
timeline_examples = movielens_examples.timeline_examples
split_users = movielens_examples.split_users
build_client_data = movielens_examples.build_client_data
build_rows_fn = movielens_examples.build_rows_fn


class MovieLensData(NamedTuple):
  """The MovieLens next-movie task data (see `load_movielens`).

  Attributes:
    num_movies: The number of distinct movies rated; an embedding table has
      `num_movies + 1` rows, row 0 being the padding id. Movies are
      renumbered densely (`movie_ids`), so a file whose ids have gaps (ML-1M
      rates 3,706 of ids 1-3,952; a subset of its users fewer still) has no
      row that no rating can train.
    context_length: The number of context movies of an example.
    train: Federated training clients, or None if no train user has examples.
    validation: Federated validation clients, or None if none has examples.
    test: Federated test clients, or None if none has examples.
    train_user_ids: int64 array, sorted: the train users.
    validation_user_ids: int64 array, sorted: the validation users.
    test_user_ids: int64 array, sorted: the test users.
    datacenter_user_ids: int64 array, sorted: the users set aside for the
      datacenter (their examples are in `examples`).
    examples: User id to `(contexts, labels)` for all users with examples, as
      returned by `timeline_examples`.
    num_ratings: The number of ratings read.
    num_skipped: The number of malformed lines skipped.
    movie_ids: int64[num_movies], sorted: the file's id of each movie, row r
      of the table (and id r in `examples`) being movie `movie_ids[r - 1]`.
      The identity where the file's ids are 1 to `num_movies` without gaps
      (ML-100K).
  """
  num_movies: int
  context_length: int
  train: Optional[tff.simulation.datasets.ClientData]
  validation: Optional[tff.simulation.datasets.ClientData]
  test: Optional[tff.simulation.datasets.ClientData]
  train_user_ids: np.ndarray
  validation_user_ids: np.ndarray
  test_user_ids: np.ndarray
  datacenter_user_ids: np.ndarray
  examples: dict[int, tuple[np.ndarray, np.ndarray]]
  num_ratings: int
  num_skipped: int
  movie_ids: np.ndarray


def load_movielens(path: str,
                   *,
                   context_length: int = 10,
                   file_format: str = FORMAT_AUTO,
                   skip_malformed: bool = False,
                   datacenter_fraction: float = 0.2,
                   validation_fraction: float = 0.1,
                   test_fraction: float = 0.1,
                   seed: int = 0) -> MovieLensData:
  """Reads a MovieLens file and builds the federated next-movie data.

  Reads the ratings (`read_ratings`), renumbers the movies densely (1 to
  the number of distinct movies, in the order of their ids), makes each
  user's examples (`timeline_examples`), splits all users who rated
  something (`split_users`, so ML-1M's 6,040 users split as in the paper,
  and a subset of them in the same proportions) and builds one `ClientData`
  per federated group (`build_client_data`).

  Args:
    path: The ratings file (ML-1M `ratings.dat` or ML-100K `u.data`, or a
      subset of either, possibly gzipped).
    context_length: The number of context movies, >= 1.
    file_format: `'auto'`, `'ml-1m'` or `'ml-100k'` (see `read_ratings`).
    skip_malformed: Whether to skip malformed lines (see `read_ratings`).
    datacenter_fraction: See `split_users`.
    validation_fraction: See `split_users`.
    test_fraction: See `split_users`.
    seed: The seed of the user split.

  Returns:
    A `MovieLensData`.

  Raises:
    FileNotFoundError: If `path` does not exist.
    IsADirectoryError: If `path` is a directory.
    MalformedRatingsError: For a malformed line unless `skip_malformed`.
    ValueError: For invalid arguments or a file without valid ratings.
  """
  context_length = movielens_ratings.check_positive_int('context_length',
                                                        context_length)
  ratings = movielens_ratings.read_ratings(path, file_format=file_format,
                                           skip_malformed=skip_malformed)
  # Dense ids: a table row per rated movie, none for the ids a file skips.
  movie_ids, dense = np.unique(ratings.movie_ids, return_inverse=True)
  ratings = ratings._replace(movie_ids=dense.astype(np.int64) + 1)
  examples = movielens_examples.timeline_examples(ratings, context_length)
  groups = movielens_examples.split_users(
      ratings.user_ids, datacenter_fraction=datacenter_fraction,
      validation_fraction=validation_fraction, test_fraction=test_fraction,
      seed=seed)

  def client_data(users):
    if not any(int(u) in examples for u in users):
      return None
    return movielens_examples.build_client_data(examples, users)

  data = MovieLensData(
      num_movies=len(movie_ids),
      context_length=context_length,
      train=client_data(groups['train']),
      validation=client_data(groups['validation']),
      test=client_data(groups['test']),
      train_user_ids=groups['train'],
      validation_user_ids=groups['validation'],
      test_user_ids=groups['test'],
      datacenter_user_ids=groups['datacenter'],
      examples=examples,
      num_ratings=len(ratings.user_ids),
      num_skipped=ratings.num_skipped,
      movie_ids=movie_ids)
  logging.info(
      'MovieLens %s: %d ratings (%d skipped), %d users, %d movies (ids up '
      'to %d), %d examples; users: %d datacenter, %d train, %d validation, '
      '%d test; context_length=%d', path, data.num_ratings, data.num_skipped,
      sum(len(g) for g in groups.values()), data.num_movies, movie_ids[-1],
      sum(len(l) for _, l in examples.values()),
      len(data.datacenter_user_ids), len(data.train_user_ids),
      len(data.validation_user_ids), len(data.test_user_ids), context_length)
  return data


def client_movie_keys(contexts: np.ndarray, labels: np.ndarray,
                      max_keys: int) -> tuple[np.ndarray, np.ndarray]:
  """The movie ids a client's examples use, bounded to `max_keys`.

  The keys are the distinct non-zero movie ids in `contexts` and `labels`,
  sorted ascending and followed by zeros (`PADDING_ID`) up to exactly
  `max_keys` entries: the embedding rows a client fetches.

  If there are more than `max_keys` distinct ids, only the `max_keys` most
  frequent are kept (occurrences counted over `contexts` and `labels`
  together; among equal counts the smaller id wins), still sorted
  ascending. An example whose label was dropped cannot be trained on: the
  returned mask is False for it. Context movies that were dropped are to be
  treated as padding by the caller (`remap_to_local` maps them to -1).

  Args:
    contexts: int[m, context_length] context movie ids, 0 being padding.
    labels: int[m] label movie ids.
    max_keys: The number of keys, >= 1.

  Returns:
    `(keys, label_kept)`: `keys` int32[max_keys] as above; `label_kept`
    bool[m], True where the example's label is among the keys (all True
    without overflow, unless a label is 0).

  Raises:
    ValueError: If `max_keys` < 1, the shapes disagree or an id is negative.
  """
  max_keys = movielens_ratings.check_positive_int('max_keys', max_keys)
  contexts = np.asarray(contexts)
  labels = np.asarray(labels)
  if contexts.ndim != 2 or labels.ndim != 1 or len(contexts) != len(labels):
    raise ValueError('contexts must be [m, context_length] and labels [m], '
                     f'got shapes {contexts.shape} and {labels.shape}')
  ids = np.concatenate([contexts.ravel(), labels]).astype(np.int64)
  if ids.size and ids.min() < 0:
    raise ValueError(f'movie ids must be >= 0, got {ids.min()}')
  unique, counts = np.unique(ids[ids != PADDING_ID], return_counts=True)
  if len(unique) > max_keys:
    # Most frequent first, then smaller id first.
    order = np.lexsort((unique, -counts))
    unique = np.sort(unique[order[:max_keys]])
  keys = np.zeros([max_keys], dtype=np.int32)
  keys[:len(unique)] = unique
  label_kept = np.isin(labels, unique)
  return keys, label_kept


def remap_to_local(ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
  """Maps global movie ids to their index in `keys`.

  Args:
    ids: int array (any shape) of global movie ids.
    keys: int[k] keys as returned by `client_movie_keys`: strictly
      increasing positive ids followed by zero padding.

  Returns:
    int32 array of the shape of `ids`: the index of each id in `keys`, or -1
    for the padding id 0 and for ids not among the keys (to be masked by the
    caller).

  Raises:
    ValueError: If `keys` is not 1-D positive strictly increasing ids
      followed by zeros.
  """
  keys = np.asarray(keys)
  if keys.ndim != 1:
    raise ValueError(f'keys must be 1-D, got shape {keys.shape}')
  num_valid = int(np.count_nonzero(keys))
  valid = keys[:num_valid].astype(np.int64)
  if (np.any(keys[num_valid:] != PADDING_ID) or np.any(valid < 1) or
      np.any(np.diff(valid) <= 0)):
    raise ValueError('keys must be strictly increasing positive ids followed '
                     f'by zero padding, got {keys}')
  ids = np.asarray(ids).astype(np.int64)
  if not num_valid:
    return np.full(ids.shape, -1, dtype=np.int32)
  position = np.minimum(np.searchsorted(valid, ids), num_valid - 1)
  found = (valid[position] == ids) & (ids != PADDING_ID)
  return np.where(found, position, -1).astype(np.int32)
