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
"""Builds TFF's Stack Overflow database from Stack Exchange `Posts.xml` dumps.

`tff.simulation.datasets.stackoverflow.load_data(cache_dir=DIR)` reads
`DIR/stackoverflow.sqlite` and downloads nothing when that file exists (it
would otherwise fetch `stackoverflow.sqlite.lzma` and decompress it to that
name). This module writes such a file from any site's data-dump `Posts.xml`
(e.g. a small site such as beer.stackexchange.com), or from the dumps of
several sites together, so that the loader, and the experiments built on
it, run offline and unchanged on real posts. A dump may be plain XML or
gzipped (`posts_dumps`).

The schema is the one of TFF's `SqlClientData`:

*   `examples(split_name TEXT, client_id TEXT, serialized_example_proto BLOB)`:
    one row per post; a client's rows are in `Posts.xml` order.
*   `client_metadata(client_id TEXT, split_name TEXT, num_examples INTEGER)`:
    one row per client and split it has posts in. The loader takes a split's
    client ids from this table, so a client with no posts in a split is not
    in that split.

`load_data` fails (a bare `StopIteration`) if any of the three splits has no
client, since it opens the first client of each split to learn the element
type; the conversion therefore refuses to write a database with an empty
split and says which one and why.

An index on `examples(client_id, split_name)` serves the per-client queries of
`SqlClientData`.

Every example is a post (`posts_xml_rows`: its features and the rules that
turn a dump's rows into posts), and the posts are split into train,
held-out and test (`posts_splits`: the cutoff and the held-out draw).

Posts are written to the database as they are read (`posts_xml_rows`
stream-parses a dump), so memory holds only the set of client ids, not the
posts. The file is built under a temporary name in the output directory and
renamed onto `stackoverflow.sqlite` only when complete, so an interrupted or
failed conversion leaves no partial file where the loader looks (an
existing one is kept). The same input, cutoff, fraction and seed give the
same database.
"""

import collections
from collections.abc import Iterator, Sequence
import datetime
import os
import sqlite3
from typing import NamedTuple, Optional, Union

from experiments.common import sqlite_files
from experiments.stackoverflow_wikipedia import posts_dumps
from experiments.stackoverflow_wikipedia import posts_splits
from experiments.stackoverflow_wikipedia import posts_xml_rows

DATABASE_FILENAME = 'stackoverflow.sqlite'
_INSERT_BATCH = 1000


class SiteSummary(NamedTuple):
  """One dump of a conversion of several (`ConversionSummary.sites`).

  Attributes:
    site: The site, e.g. `beer.stackexchange.com` (`posts_dumps.site_name`).
    path: The dump.
    rows_read: Its `<row>` elements, of every post type.
    posts_converted: Its posts written, in any split.
    clients: Its owners with a converted post (clients `<site>:<owner>`).
    test_cutoff: The test cutoff of its posts (naive UTC).
  """
  site: str
  path: str
  rows_read: int
  posts_converted: int
  clients: int
  test_cutoff: datetime.datetime


class ConversionSummary(NamedTuple):
  """What `convert_posts` read, skipped and wrote.

  Attributes:
    database_path: The written `stackoverflow.sqlite`.
    rows_read: `<row>` elements in the input, of every post type.
    skipped_other_type: Rows that are neither questions nor answers.
    skipped_no_owner: Questions and answers without `OwnerUserId`.
    skipped_empty_body: Questions and answers with an owner whose body is
      empty once stripped of HTML.
    train_examples: Posts written to the `train` split.
    heldout_examples: Posts written to the `heldout` split.
    test_examples: Posts written to the `test` split.
    train_clients: Clients with at least one post in `train`.
    heldout_clients: Clients with at least one post in `heldout`.
    test_clients: Clients with at least one post in `test`.
    test_cutoff: The test cutoff used (naive UTC): posts created on or after
      it are in `test` (or `heldout`). None when several dumps got different
      derived cutoffs (each is in `sites`).
    test_cutoff_derived: Whether `test_cutoff` was derived from the dump's
      dates (no explicit cutoff given) rather than given.
    sites: Per dump, when several were converted together; empty for one.
  """
  database_path: str
  rows_read: int
  skipped_other_type: int
  skipped_no_owner: int
  skipped_empty_body: int
  train_examples: int
  heldout_examples: int
  test_examples: int
  train_clients: int
  heldout_clients: int
  test_clients: int
  test_cutoff: Optional[datetime.datetime]
  test_cutoff_derived: bool
  sites: tuple[SiteSummary, ...] = ()

  @property
  def examples_written(self) -> int:
    return self.train_examples + self.heldout_examples + self.test_examples



class _Inserted(NamedTuple):
  """What `_insert_posts` wrote of one dump."""
  client_ids: set[str]
  first: Optional[datetime.datetime]  # The earliest post's creation time.
  last: Optional[datetime.datetime]  # The latest post's creation time.
  rowids: tuple[int, int]  # The first and last rowid of its posts.



def _max_rowid(connection: sqlite3.Connection) -> int:
  (rowid,), = connection.execute('SELECT COALESCE(MAX(rowid), 0) FROM '
                                 'examples;')
  return rowid


def _insert_posts(connection: sqlite3.Connection,
                  posts: Iterator[posts_xml_rows.Post]) -> _Inserted:
  """Inserts posts with their `posts_splits.date_key` as provisional split
  name.

  `posts_splits.split_by_date` replaces it with train or test once the
  cutoff is known, which, when derived, needs all posts' dates: keeping them
  in the database rather than in memory keeps memory small on large dumps.
  """
  client_ids = set()
  first = last = None
  batch = []
  start = _max_rowid(connection) + 1
  for post in posts:
    client_ids.add(post.client_id)
    first = post.creation if first is None else min(first, post.creation)
    last = post.creation if last is None else max(last, post.creation)
    batch.append((posts_splits.date_key(post.creation), post.client_id,
                  post.proto))
    if len(batch) >= _INSERT_BATCH:
      connection.executemany(
          'INSERT INTO examples (split_name, client_id, '
          'serialized_example_proto) VALUES (?, ?, ?);', batch)
      batch = []
  connection.executemany(
      'INSERT INTO examples (split_name, client_id, serialized_example_proto)'
      ' VALUES (?, ?, ?);', batch)
  return _Inserted(client_ids, first, last, (start, _max_rowid(connection)))


def _check_no_empty_split(source: str, per_split: dict[str, tuple[int, int]],
                          cutoffs: Sequence[datetime.datetime],
                          inserted: _Inserted, num_other_clients: int) -> None:
  """Raises a ValueError naming the split TFF's loader could not open."""
  if len(set(cutoffs)) == 1:
    cutoff = f'the test cutoff {cutoffs[0].isoformat(sep=" ")}'
  else:
    cutoff = "its site's test cutoff"
  for split, side in ((posts_splits.TRAIN_SPLIT, 'before'),
                      (posts_splits.TEST_SPLIT, 'on or after')):
    if split not in per_split:
      raise ValueError(
          f'{source}: the {split} split would be empty (no post of the '
          f'{num_other_clients} clients not held out is {side} {cutoff}; the '
          f'posts run from {inserted.first.isoformat(sep=" ")} to '
          f'{inserted.last.isoformat(sep=" ")}), and TFF\'s loader fails on '
          'an empty split. Choose another test_cutoff or seed.')


def _dumps(posts_xml: Union[str, Sequence[str]]
           ) -> list[tuple[str, Optional[str]]]:
  """(path, site) of each dump to convert, all checked before any is read;
  the site is None for a single dump (its clients keep bare owner ids)."""
  paths = [posts_xml] if isinstance(posts_xml, str) else list(posts_xml)
  if not paths:
    raise ValueError('No posts file given.')
  if len(paths) == 1:
    posts_dumps.check_readable_file(paths[0])
    return [(paths[0], None)]
  return list(zip(paths, posts_dumps.dump_sites(paths)))


def _insert_dumps(connection: sqlite3.Connection,
                  dumps: Sequence[tuple[str, Optional[str]]],
                  counts: posts_xml_rows.RowCounts
                  ) -> list[tuple[str, Optional[str], int, _Inserted]]:
  """Inserts every dump's posts; returns (path, site, rows, what was
  inserted) per dump."""
  inserted_dumps = []
  for path, site in dumps:
    rows_before = counts.rows_read
    skipped_before = collections.Counter(counts.skipped)
    posts = posts_xml_rows.read_posts(path, counts, site)
    try:
      inserted = _insert_posts(connection, posts)
    finally:
      posts.close()  # Closes the input file now, even when interrupted.
    rows = counts.rows_read - rows_before
    if not inserted.client_ids:
      skipped = counts.skipped - skipped_before
      raise ValueError(
          f'{path} has no question or answer to convert: of {rows} rows, '
          f'{skipped["other_type"]} are other post types, '
          f'{skipped["no_owner"]} have no OwnerUserId and '
          f'{skipped["empty_body"]} an empty body.')
    inserted_dumps.append((path, site, rows, inserted))
  return inserted_dumps


def _merged(inserted: Sequence[_Inserted]) -> _Inserted:
  return _Inserted(set().union(*(i.client_ids for i in inserted)),
                   min(i.first for i in inserted),
                   max(i.last for i in inserted),
                   (inserted[0].rowids[0], inserted[-1].rowids[1]))


def _write_database(connection: sqlite3.Connection,
                    given: Sequence[tuple[str, Optional[str]]],
                    cutoff: Optional[datetime.datetime],
                    heldout_fraction: float, seed: int,
                    counts: posts_xml_rows.RowCounts):
  """Fills the database; returns (posts per split, [(dump, cutoff)])."""
  for statement in sqlite_files.CLIENT_DATA_TABLES:
    connection.execute(statement)
  dumps = _insert_dumps(connection, given, counts)
  inserted = _merged([d[3] for d in dumps])
  client_ids = inserted.client_ids
  source = given[0][0] if len(given) == 1 else f'The {len(given)} dumps'
  if len(client_ids) < 2:
    raise ValueError(
        f'{source}: posts of only one owner ({next(iter(client_ids))}); the '
        'held-out split needs one client and train and test at least one '
        'more.')
  # One cutoff for all given one; else each dump's own latest tenth.
  cutoffs = [cutoff or posts_splits.derived_cutoff(connection, d[3].rowids)
             for d in dumps]
  for dump, dump_cutoff in zip(dumps, cutoffs):
    posts_splits.split_by_date(connection, dump_cutoff, dump[3].rowids)
  heldout = posts_splits.select_heldout_clients(sorted(client_ids),
                                                heldout_fraction, seed)
  # Built before the update, so that each client's update is a lookup
  # rather than a scan of all posts.
  connection.execute(sqlite_files.CLIENT_DATA_INDEX)
  # Held-out clients keep all their posts, of any date, in `heldout`.
  connection.executemany(
      'UPDATE examples SET split_name = ? WHERE client_id = ?;',
      [(posts_splits.HELDOUT_SPLIT, client_id)
       for client_id in sorted(heldout)])
  connection.execute(
      'INSERT INTO client_metadata (client_id, split_name, num_examples) '
      'SELECT client_id, split_name, COUNT(*) FROM examples '
      'GROUP BY client_id, split_name ORDER BY split_name, client_id;')
  per_split = {
      split: (clients, examples) for split, clients, examples in
      connection.execute(
          'SELECT split_name, COUNT(*), SUM(num_examples) '
          'FROM client_metadata GROUP BY split_name;')}
  _check_no_empty_split(source, per_split, cutoffs, inserted,
                        len(client_ids) - len(heldout))
  return per_split, list(zip(dumps, cutoffs))


def _site_summaries(dumps) -> tuple[SiteSummary, ...]:
  if len(dumps) == 1:
    return ()
  return tuple(
      SiteSummary(site=site, path=path, rows_read=rows,
                  posts_converted=inserted.rowids[1] - inserted.rowids[0] + 1,
                  clients=len(inserted.client_ids), test_cutoff=cutoff)
      for (path, site, rows, inserted), cutoff in dumps)


def convert_posts(
    posts_xml: Union[str, Sequence[str]],
    cache_dir: str,
    *,
    test_cutoff: Optional[Union[str, datetime.date]] = None,
    heldout_fraction: float = posts_splits.DEFAULT_HELDOUT_FRACTION,
    seed: int = 0,
) -> ConversionSummary:
  """Converts Stack Exchange `Posts.xml` dumps to TFF's stackoverflow.sqlite.

  Afterwards `tff.simulation.datasets.stackoverflow.load_data(
  cache_dir=cache_dir)` reads it without downloading. See `posts_xml_rows`
  for the features and the conversion rules and `posts_splits` for the
  split rules, and both for what changes when several dumps are converted
  together (client ids `<site>:<owner>`, a derived test cutoff per dump).

  The write is atomic: a failure or interruption midway (KeyboardInterrupt
  included) leaves no new `stackoverflow.sqlite` (an existing one is kept)
  and no temporary file.

  Args:
    posts_xml: A data dump's `Posts.xml` (UTF-8, with or without a BOM,
      plain or gzipped), or a sequence of dumps of different sites, each
      named so that it says its site (`posts_dumps.site_name`). A sequence
      of one converts like the path alone.
    cache_dir: Directory for `stackoverflow.sqlite`; created if missing.
    test_cutoff: Posts created on or after it (UTC) go to `test`, the others
      to `train` (except held-out clients'); see
      `posts_splits.parse_cutoff`. None (the default) derives it from each
      dump's dates so that the latest tenth of its posts are on or after it
      (see `posts_splits`).
    heldout_fraction: Fraction of the clients, in (0, 1), whose posts all go
      to `heldout`; see `posts_splits.select_heldout_clients`.
    seed: Seed of the held-out draw (non-negative).

  Returns:
    A `ConversionSummary`.

  Raises:
    FileNotFoundError: If a dump does not exist or is not a file.
    ValueError: On a bad argument, malformed XML (naming the file, line and
      column), a damaged gzip file, a root other than `<posts>`, a bad row
      (naming the file, row number and Id), a dump with no question or
      answer left to convert, fewer than two clients, a split that would be
      empty (TFF's loader fails on one), or, for several dumps, a file name
      that does not say its site or two dumps of one site.
    OSError: If an input cannot be read or the output cannot be written.
  """
  derived = test_cutoff is None
  cutoff = None if derived else posts_splits.parse_cutoff(test_cutoff)
  posts_splits.check_heldout_fraction(heldout_fraction)
  posts_splits.check_seed(seed)
  given = _dumps(posts_xml)
  os.makedirs(cache_dir, exist_ok=True)
  database_path = os.path.join(cache_dir, DATABASE_FILENAME)

  counts = posts_xml_rows.RowCounts()
  with sqlite_files.new_database(database_path) as connection:
    per_split, dumps = _write_database(connection, given, cutoff,
                                       heldout_fraction, seed, counts)

  clients = {split: per_split.get(split, (0, 0))[0]
             for split in posts_splits.SPLIT_NAMES}
  examples = {split: per_split.get(split, (0, 0))[1]
              for split in posts_splits.SPLIT_NAMES}
  cutoffs = {c for _, c in dumps}
  return ConversionSummary(
      database_path=database_path,
      rows_read=counts.rows_read,
      skipped_other_type=counts.skipped['other_type'],
      skipped_no_owner=counts.skipped['no_owner'],
      skipped_empty_body=counts.skipped['empty_body'],
      train_examples=examples[posts_splits.TRAIN_SPLIT],
      heldout_examples=examples[posts_splits.HELDOUT_SPLIT],
      test_examples=examples[posts_splits.TEST_SPLIT],
      train_clients=clients[posts_splits.TRAIN_SPLIT],
      heldout_clients=clients[posts_splits.HELDOUT_SPLIT],
      test_clients=clients[posts_splits.TEST_SPLIT],
      test_cutoff=cutoffs.pop() if len(cutoffs) == 1 else None,
      test_cutoff_derived=derived,
      sites=_site_summaries(dumps))
