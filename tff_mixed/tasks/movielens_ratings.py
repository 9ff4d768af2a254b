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
"""Reading and validating MovieLens ratings files.

The input of the movie-recommendation experiment of Augenstein et al.,
"Mixed Federated Learning: Joint Decentralized and Centralized Learning"
(arXiv:2205.13655, section 4.3 and appendix B.2.3). MovieLens files are never
shipped with this project (their licence forbids redistribution).
`read_ratings` reads two formats:

*   `'ml-1m'`: MovieLens 1M `ratings.dat`, one rating a line,
    `UserID::MovieID::Rating::Timestamp`, e.g. `1::1193::5::978300760`.
*   `'ml-100k'`: MovieLens 100K `u.data`, tab separated,
    `user id<TAB>item id<TAB>rating<TAB>timestamp`, e.g.
    `196<TAB>242<TAB>3<TAB>881250949`.

Both are read as latin-1 text with universal newlines (`\\n` or `\\r\\n`);
blank lines are ignored. User and movie ids are integers >= 1 (movie id 0
is reserved for padding), timestamps are integers (Unix seconds), ratings
are finite numbers. Either file may be gzipped (e.g. `ratings.dat.gz`): one
that starts with gzip's magic bytes, or whose name ends in `.gz`, is
decompressed as it is read; one that cannot be is a one-line error naming
the file.
"""

from collections.abc import Sequence
import gzip
import math
import os
import re
from typing import NamedTuple, Optional
import zlib

from absl import logging
import numpy as np

FORMAT_AUTO = 'auto'
FORMAT_ML_1M = 'ml-1m'
FORMAT_ML_100K = 'ml-100k'
_FORMATS = (FORMAT_AUTO, FORMAT_ML_1M, FORMAT_ML_100K)
_SEPARATORS = {FORMAT_ML_1M: '::', FORMAT_ML_100K: '\t'}
_NUM_FIELDS = 4
# A decimal integer with an optional sign and surrounding blanks. Python's
# `int` also accepts underscores (`1_000`); such fields are rejected here.
_INTEGER_RE = re.compile(r'\s*[+-]?[0-9]+\s*\Z')
# The first two bytes of every gzip file (RFC 1952, section 2.3.1).
_GZIP_MAGIC = b'\x1f\x8b'


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
    path: The file: ML-1M `ratings.dat` or ML-100K `u.data`, either of them
      possibly gzipped (detected by gzip's magic bytes or a `.gz` name).
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
    ValueError: If `file_format` or `max_movie_id` is invalid, the file
      holds no valid rating, or it is gzipped (or named `.gz`) but cannot be
      decompressed.
  """
  if file_format not in _FORMATS:
    raise ValueError(
        f'file_format must be one of {_FORMATS}, got {file_format!r}')
  if max_movie_id is not None:
    max_movie_id = check_positive_int('max_movie_id', max_movie_id)
  path = _check_ratings_file(path)

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
  text = _read_text(path)
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
  return _to_ratings(path, users, movies, values, times, num_skipped)


def _read_text(path: str) -> str:
  """The file's text (latin-1, universal newlines), gunzipped if it is
  gzip (magic bytes) or named `.gz`; raises `ValueError` naming the file if
  that decompression fails."""
  with open(path, 'rb') as f:
    compressed = f.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
  if not compressed and not path.endswith('.gz'):
    with open(path, 'r', encoding='latin-1') as f:
      return f.read()
  if not compressed:
    raise ValueError(f'{path}: named .gz but not gzip-compressed (it does '
                     'not start with the gzip magic bytes 1f 8b); '
                     'decompress or rename it')
  try:
    # Text mode of gzip.open: the same universal newlines as open().
    with gzip.open(path, 'rt', encoding='latin-1') as f:
      return f.read()
  except (OSError, EOFError, zlib.error) as e:
    raise ValueError(f'{path}: corrupt gzip file ({e or type(e).__name__}); '
                     'download it again or pass the uncompressed ratings '
                     'file') from None


def _check_ratings_file(path) -> str:
  """`path` as a string; raises if it is missing or a directory."""
  path = os.fspath(path)
  if not os.path.exists(path):
    raise FileNotFoundError(f'MovieLens ratings file not found: {path}')
  if os.path.isdir(path):
    inside = [n for n in ('ratings.dat', 'ratings.dat.gz', 'u.data')
              if os.path.isfile(os.path.join(path, n))]
    raise IsADirectoryError(
        f'The MovieLens ratings file {path} is a directory; pass the ratings '
        'file itself' + (f', e.g. {os.path.join(path, inside[0])}.'
                         if inside else ' (ratings.dat or u.data).'))
  return path


def _to_ratings(path: str, users: list[int], movies: list[int],
                values: list[float], times: list[int],
                num_skipped: int) -> Ratings:
  """The parsed columns as `Ratings`; raises if there is no rating."""
  if not users:
    raise ValueError(f'No valid ratings in {path}')
  return Ratings(
      user_ids=np.array(users, dtype=np.int64),
      movie_ids=np.array(movies, dtype=np.int64),
      ratings=np.array(values, dtype=np.float32),
      timestamps=np.array(times, dtype=np.int64),
      num_skipped=num_skipped)


def check_positive_int(name: str, value) -> int:
  """`value` as an int; raises ValueError naming `name` unless it is >= 1.

  Shared by the MovieLens modules for their size arguments.
  """
  if (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or
      value < 1):
    raise ValueError(f'{name} must be an integer >= 1, got {value!r}')
  return int(value)

