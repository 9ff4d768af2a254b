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
"""The train, held-out and test splits of a Stack Overflow database.

The conversion of Stack Exchange dumps (`posts_xml_lib`) splits their posts
after TFF's Stack Overflow (whose docstring describes train as the posts
before 2018-01-01 except held-out users, test as the posts from then on
except held-out users, and held-out as all posts of one user in ten, of all
dates):

*   `heldout`: all posts, of all dates, of a fraction `heldout_fraction`
    of the clients (rounded, at least one and never all of them), drawn
    with numpy's generator from `seed` among the clients sorted by id.
    TFF picks users with `user_id % 10 == 0`; a seeded draw gives the
    requested fraction on a small site as well.
*   `train`: the other clients' posts created before `test_cutoff`.
*   `test`: the other clients' posts created on or after `test_cutoff`.

Without an explicit `test_cutoff`, the cutoff is derived from the dump:
it is the creation time of the k-th latest converted post, where k is a
tenth (`1 / TEST_FRACTION_DENOMINATOR`) of the n converted posts, rounded
half up and at least one (k = max(1, (n + 5) // 10)), held-out clients'
posts included. So the latest tenth of the posts (more when several share
that time) are on or after it, whatever years the dump covers. A tenth
follows TFF's split, whose test posts (16,586,035) are 10.9% of the
posts of the clients not held out (152,404,765). The cutoff is an exact
creation time, not a day, so that a small dump splits near a tenth too.
With several dumps, each dump gets its own derived cutoff from its own
posts: the sites' dumps cover different years (e.g. 7 weeks of 2014 and
2010-2023), and one cutoff over all would leave the earlier sites no
test posts. An explicit `test_cutoff` applies to every dump. The
held-out draw is over all clients of all dumps.

The posts wait in the database with their creation time as a provisional
split name (`date_key`) until the cutoff is known (`derived_cutoff`), which
takes every post's date: kept there rather than in memory, large dumps
need little memory.
"""

import datetime
import sqlite3
from typing import Union

import numpy as np

TRAIN_SPLIT = 'train'
HELDOUT_SPLIT = 'heldout'
TEST_SPLIT = 'test'
SPLIT_NAMES = (TRAIN_SPLIT, HELDOUT_SPLIT, TEST_SPLIT)
# Without an explicit cutoff, 1 / TEST_FRACTION_DENOMINATOR of the posts are
# on or after the derived one (see the module docstring); an integer, so that
# the rounding of n / 10 is exact.
TEST_FRACTION_DENOMINATOR = 10
DEFAULT_HELDOUT_FRACTION = 0.1


def parse_cutoff(cutoff: Union[str, datetime.date]) -> datetime.datetime:
  """Returns a test cutoff as a naive UTC datetime.

  Args:
    cutoff: An ISO 8601 date or date and time (`2016-08-01`,
      `2016-08-01T12:00:00`), or a `datetime.date`/`datetime.datetime`. A
      naive value is taken as UTC, the time zone of the dumps' dates.

  Returns:
    The cutoff, midnight for a date.

  Raises:
    ValueError: If `cutoff` is not a valid date.
  """
  if isinstance(cutoff, str):
    try:
      cutoff = datetime.datetime.fromisoformat(cutoff.strip())
    except ValueError:
      raise ValueError('test_cutoff must be an ISO 8601 date such as '
                       f'2016-08-01, got {cutoff!r}.') from None
  elif not isinstance(cutoff, datetime.datetime):
    if not isinstance(cutoff, datetime.date):
      raise ValueError('test_cutoff must be a date or an ISO 8601 string, '
                       f'got {cutoff!r}.')
    cutoff = datetime.datetime.combine(cutoff, datetime.time())
  if cutoff.tzinfo is not None:
    cutoff = cutoff.astimezone(datetime.timezone.utc).replace(tzinfo=None)
  return cutoff


def select_heldout_clients(client_ids: list[str], heldout_fraction: float,
                           seed: int) -> frozenset[str]:
  """Draws the clients whose posts all go to the `heldout` split.

  Args:
    client_ids: The ids of all clients with converted posts.
    heldout_fraction: In (0, 1). The number drawn is `heldout_fraction` times
      the number of clients, rounded, but at least one and at most all but
      one.
    seed: Seed of numpy's generator (non-negative).

  Returns:
    The drawn ids; the same for the same ids (in any order), fraction and
    seed.

  Raises:
    ValueError: If `heldout_fraction` or `seed` is out of range, or there
      are fewer than two clients.
  """
  check_heldout_fraction(heldout_fraction)
  check_seed(seed)
  ordered = sorted(set(client_ids))
  if len(ordered) < 2:
    raise ValueError('Held-out clients can only be drawn from two or more '
                     f'clients, got {len(ordered)}.')
  count = min(max(int(round(len(ordered) * heldout_fraction)), 1),
              len(ordered) - 1)
  order = np.random.default_rng(seed).permutation(len(ordered))
  return frozenset(ordered[i] for i in order[:count])


def check_heldout_fraction(value: float) -> None:
  """Raises a ValueError unless 0 < `value` < 1."""
  if (not isinstance(value, (int, float)) or isinstance(value, bool)
      or not 0.0 < value < 1.0):
    # Zero would leave `heldout` empty, which TFF's loader cannot open.
    raise ValueError(f'heldout_fraction must be in (0, 1), got {value!r}.')


def check_seed(seed: int) -> None:
  """Raises a ValueError unless `seed` is an int >= 0."""
  if (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)
      or seed < 0):
    raise ValueError(f'seed must be a non-negative integer, got {seed!r}.')


def date_key(time: datetime.datetime) -> str:
  """Returns a creation time as text that sorts in time order."""
  # Fixed width (microseconds always written), so strings compare as times.
  return time.isoformat(sep=' ', timespec='microseconds')


def derived_cutoff(connection: sqlite3.Connection,
                   rowids: tuple[int, int]) -> datetime.datetime:
  """Returns the creation time of the k-th latest post among `rowids`
  (module docstring)."""
  (num_posts,), = connection.execute(
      'SELECT COUNT(*) FROM examples WHERE rowid BETWEEN ? AND ?;', rowids)
  denominator = TEST_FRACTION_DENOMINATOR
  k = max(1, (num_posts + denominator // 2) // denominator)
  (key,), = connection.execute(
      'SELECT split_name FROM examples WHERE rowid BETWEEN ? AND ? '
      'ORDER BY split_name DESC LIMIT 1 OFFSET ?;', (*rowids, k - 1))
  return datetime.datetime.fromisoformat(key)


def split_by_date(connection: sqlite3.Connection,
                  cutoff: datetime.datetime,
                  rowids: tuple[int, int]) -> None:
  """Replaces the provisional date keys among `rowids` by train (before
  cutoff) or test."""
  connection.execute(
      'UPDATE examples SET split_name = CASE WHEN split_name < ? THEN ? '
      'ELSE ? END WHERE rowid BETWEEN ? AND ?;',
      (date_key(cutoff), TRAIN_SPLIT, TEST_SPLIT, *rowids))
