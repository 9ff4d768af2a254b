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
clients.

Input formats (`read_ratings`; MovieLens files are never shipped with this
project, their licence forbids redistribution):

*   `'ml-1m'`: MovieLens 1M `ratings.dat`, one rating a line,
    `UserID::MovieID::Rating::Timestamp`, e.g. `1::1193::5::978300760`.
*   `'ml-100k'`: MovieLens 100K `u.data`, tab separated,
    `user id<TAB>item id<TAB>rating<TAB>timestamp`, e.g.
    `196<TAB>242<TAB>3<TAB>881250949`.

Both are read as latin-1 text with universal newlines (`\\n` or `\\r\\n`);
blank lines are ignored. User and movie ids are integers >= 1 (movie id 0 is
reserved for padding), timestamps are integers (Unix seconds), ratings are
finite numbers.

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

For the federated dual encoder, `client_movie_keys` gives the (bounded) set of
movie ids a client touches, whose embedding rows it fetches, and
`remap_to_local` maps global movie ids to rows of that local slice.
"""

import collections
from collections.abc import Mapping, Sequence
import math
import os
import re
from typing import NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

FORMAT_AUTO = 'auto'
FORMAT_ML_1M = 'ml-1m'
FORMAT_ML_100K = 'ml-100k'
_FORMATS = (FORMAT_AUTO, FORMAT_ML_1M, FORMAT_ML_100K)
_SEPARATORS = {FORMAT_ML_1M: '::', FORMAT_ML_100K: '\t'}
_NUM_FIELDS = 4
_INT32_MAX = np.iinfo(np.int32).max
# A decimal integer with an optional sign and surrounding blanks. Python's
# `int` also accepts underscores (`1_000`); such fields are rejected here.
_INTEGER_RE = re.compile(r'\s*[+-]?[0-9]+\s*\Z')

# Padding id in contexts and in `client_movie_keys`; MovieLens ids start at 1.
PADDING_ID = 0


class Ratings(NamedTuple):
  """Ratings read from a MovieLens file, in file order.

  Attributes:
    user_ids: int64[n], user ids (>= 1).
    movie_ids: int64[n], movie ids (>= 1).
    ratings: float32[n], the ratings (1 to 5 stars in MovieLens).
    timestamps: int64[n], Unix timestamps in seconds.
    num_skipped: The number of malformed lines skipped (only non-zero with
      `skip_malformed=True`).
  """
  user_ids: np.ndarray
  movie_ids: np.ndarray
  ratings: np.ndarray
  timestamps: np.ndarray
  num_skipped: int


class MalformedRatingsError(ValueError):
  """A line of a ratings file cannot be parsed.

  Attributes:
    path: The file.
    line_number: The 1-based line number.
    reason: What is wrong with the line.
  """

  def __init__(self, path: str, line_number: int, reason: str,
               line: Optional[str] = None):
    self.path = path
    self.line_number = line_number
    self.reason = reason
    message = f'{path}: line {line_number}: {reason}'
    if line is not None:
      shown = line if len(line) <= 100 else line[:100] + '...'
      message += f': {shown!r}'
    super().__init__(message)


def _detect_format(path: str, line_number: int, line: str) -> str:
  if '::' in line:
    return FORMAT_ML_1M
  if '\t' in line:
    return FORMAT_ML_100K
  raise MalformedRatingsError(
      path, line_number,
      "unknown ratings file format (expected 'ml-1m' fields separated by "
      "'::' or 'ml-100k' fields separated by tabs)", line)


def _diagnose(fields: Sequence[str], max_movie_id: Optional[int]) -> str:
  """Says what is wrong with the four fields of a line, '' if nothing."""
  user, movie, rating, timestamp = fields
  for name, value in (('user id', user), ('movie id', movie),
                      ('timestamp', timestamp)):
    if not _INTEGER_RE.match(value):
      return f'{name} {value.strip()!r} is not an integer'
  try:
    if '_' in rating:
      raise ValueError(rating)
    rating_value = float(rating)
  except ValueError:
    return f'rating {rating.strip()!r} is not a number'
  if not math.isfinite(rating_value):
    return f'rating {rating.strip()!r} is not a finite number'
  if int(user) < 1:
    return f'user id {int(user)} is not >= 1'
  if int(movie) < 1:
    return f'movie id {int(movie)} is not >= 1 (0 is reserved for padding)'
  if max_movie_id is not None and int(movie) > max_movie_id:
    return f'movie id {int(movie)} is larger than max_movie_id={max_movie_id}'
  return ''


def read_ratings(path: str,
                 *,
                 file_format: str = FORMAT_AUTO,
                 skip_malformed: bool = False,
                 max_movie_id: Optional[int] = None) -> Ratings:
  """Reads a MovieLens ratings file.

  Args:
    path: The file: ML-1M `ratings.dat` or ML-100K `u.data`.
    file_format: `'ml-1m'` (`UserID::MovieID::Rating::Timestamp`), `'ml-100k'`
      (four tab-separated fields) or `'auto'`: decided from the first
      non-blank line (`'::'` means ml-1m, a tab means ml-100k).
    skip_malformed: If True, malformed lines are skipped, counted in
      `Ratings.num_skipped` and reported in one absl warning; if False, the
      first one raises `MalformedRatingsError`.
    max_movie_id: If given, movie ids above it are malformed.

  Returns:
    The `Ratings`, in file order.

  Raises:
    FileNotFoundError: If `path` does not exist.
    IsADirectoryError: If `path` is a directory.
    MalformedRatingsError: For the first malformed line (wrong number of
      fields, a non-integer id or timestamp, a non-numeric or non-finite
      rating, an id < 1, a movie id > `max_movie_id`) unless `skip_malformed`;
      with `'auto'`, also (even with `skip_malformed`) when the first
      non-blank line is in neither format.
    ValueError: If `file_format` or `max_movie_id` is invalid, or the file
      holds no valid rating.
  """
  if file_format not in _FORMATS:
    raise ValueError(
        f'file_format must be one of {_FORMATS}, got {file_format!r}')
  if max_movie_id is not None:
    max_movie_id = _check_positive_int('max_movie_id', max_movie_id)
  path = os.fspath(path)
  if not os.path.exists(path):
    raise FileNotFoundError(f'MovieLens ratings file not found: {path}')
  if os.path.isdir(path):
    inside = [n for n in ('ratings.dat', 'u.data')
              if os.path.isfile(os.path.join(path, n))]
    raise IsADirectoryError(
        f'The MovieLens ratings file {path} is a directory; pass the ratings '
        'file itself' + (f', e.g. {os.path.join(path, inside[0])}.'
                         if inside else ' (ratings.dat or u.data).'))

  users, movies, values, times = [], [], [], []
  add_user, add_movie = users.append, movies.append
  add_value, add_time = values.append, times.append
  num_skipped = 0
  first_error = None
  separator = _SEPARATORS.get(file_format)
  movie_limit = max_movie_id if max_movie_id is not None else math.inf
  isfinite = math.isfinite
  # Universal newlines turn '\r\n' and '\r' into '\n', so splitting at '\n'
  # numbers the lines like iterating over the file. (`str.splitlines` would
  # also split at latin-1 characters such as '\x85'.)
  with open(path, 'r', encoding='latin-1') as f:
    text = f.read()
  # Python's `int` and `float` accept '1_000'; only look for it if needed.
  check_underscores = '_' in text
  for line_number, line in enumerate(text.split('\n'), start=1):
    if separator is None:
      if not line or line.isspace():
        continue
      file_format = _detect_format(path, line_number, line)
      separator = _SEPARATORS[file_format]
    fields = line.split(separator)
    reason = ''
    if len(fields) != _NUM_FIELDS:
      if not line or line.isspace():
        continue  # A blank line.
      reason = (f'expected {_NUM_FIELDS} fields separated by '
                f'{separator!r} ({file_format}), found {len(fields)}')
    else:
      try:
        user = int(fields[0])
        movie = int(fields[1])
        value = float(fields[2])
        time = int(fields[3])
      except ValueError:
        reason = (_diagnose(fields, max_movie_id) or
                  'cannot parse the fields as numbers')
      else:
        if (user < 1 or movie < 1 or movie > movie_limit or
            not isfinite(value) or (check_underscores and '_' in line)):
          reason = _diagnose(fields, max_movie_id)
    if reason:
      error = MalformedRatingsError(path, line_number, reason, line)
      if not skip_malformed:
        raise error
      num_skipped += 1
      if first_error is None:
        first_error = error
      continue
    add_user(user)
    add_movie(movie)
    add_value(value)
    add_time(time)

  if num_skipped:
    logging.warning('Skipped %d malformed line(s) of %s; the first: %s',
                    num_skipped, path, first_error)
  if not users:
    raise ValueError(f'No valid ratings in {path}')
  return Ratings(
      user_ids=np.array(users, dtype=np.int64),
      movie_ids=np.array(movies, dtype=np.int64),
      ratings=np.array(values, dtype=np.float32),
      timestamps=np.array(times, dtype=np.int64),
      num_skipped=num_skipped)


def _check_positive_int(name: str, value) -> int:
  if (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or
      value < 1):
    raise ValueError(f'{name} must be an integer >= 1, got {value!r}')
  return int(value)


def timeline_examples(
    ratings: Ratings,
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
  context_length = _check_positive_int('context_length', context_length)
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
  constant tensors holding all clients' examples). Either way the datasets
  are `from_tensor_slices` over constants, so they serialize into a TFF
  computation: `create_tf_dataset_for_client(cid).batch(16)` can be passed as
  a `tff.SequenceType` argument.

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
  client_ids, context_list, label_list = [], [], []
  seen = set()
  context_length = None
  for user in np.asarray(user_ids, dtype=np.int64).ravel().tolist():
    if user in seen or user not in examples:
      continue
    seen.add(user)
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
    client_ids.append(str(user))
    context_list.append(contexts.astype(np.int32, copy=False))
    label_list.append(labels.astype(np.int32, copy=False))
  if not client_ids:
    raise ValueError('None of the given users has examples; a ClientData '
                     'needs at least one client')

  by_client = dict(zip(client_ids, zip(context_list, label_list)))
  # For the graph path: all rows, and where each client's rows are.
  all_contexts = np.concatenate(context_list)
  all_labels = np.concatenate(label_list)
  counts = np.array([len(l) for l in label_list], dtype=np.int64)
  stops = np.cumsum(counts)
  starts = stops - counts
  ids_array = np.array(client_ids, dtype=object)

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
    return make_dataset(tf.constant(all_contexts)[start:stop],
                        tf.constant(all_labels)[start:stop])

  return tff.simulation.datasets.ClientData.from_clients_and_tf_fn(
      client_ids, serializable_dataset_fn)


class MovieLensData(NamedTuple):
  """The MovieLens next-movie task data (see `load_movielens`).

  Attributes:
    num_movies: The largest movie id; an embedding table has `num_movies + 1`
      rows, row 0 being the padding id.
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

  Reads the ratings (`read_ratings`), makes each user's examples
  (`timeline_examples`), splits all users who rated something
  (`split_users`, so ML-1M's 6,040 users split as in the paper) and builds
  one `ClientData` per federated group (`build_client_data`).

  Args:
    path: The ratings file (ML-1M `ratings.dat` or ML-100K `u.data`).
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
  context_length = _check_positive_int('context_length', context_length)
  ratings = read_ratings(path, file_format=file_format,
                         skip_malformed=skip_malformed)
  examples = timeline_examples(ratings, context_length)
  groups = split_users(ratings.user_ids,
                       datacenter_fraction=datacenter_fraction,
                       validation_fraction=validation_fraction,
                       test_fraction=test_fraction, seed=seed)

  def client_data(users):
    if not any(int(u) in examples for u in users):
      return None
    return build_client_data(examples, users)

  data = MovieLensData(
      num_movies=int(ratings.movie_ids.max()),
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
      num_skipped=ratings.num_skipped)
  logging.info(
      'MovieLens %s: %d ratings (%d skipped), %d users, %d movies, %d '
      'examples; users: %d datacenter, %d train, %d validation, %d test; '
      'context_length=%d', path, data.num_ratings, data.num_skipped,
      sum(len(g) for g in groups.values()), data.num_movies,
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
  max_keys = _check_positive_int('max_keys', max_keys)
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
