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

Every example is a serialized `tf.train.Example` with the six features
`stackoverflow.py` parses, each holding exactly one value:

*   `creation_date` (bytes): the post's `CreationDate` exactly as in the XML,
    e.g. `2014-01-21T20:26:05.383` (UTC, ISO 8601). TFF's own data spells it
    `2014-01-21 20:26:05.383 UTC`; the value is kept verbatim rather than
    reformatted since nothing in this project parses it.
*   `score` (int64): the post's `Score`.
*   `tags` (bytes): the question's tags joined by `|`, as in TFF's data:
    `<beer><hops>` (or the newer dumps' `|beer|hops|`) becomes `beer|hops`.
    Answers have no tags in the dump and get the empty string.
*   `title` (bytes): the question's `Title`; the empty string for answers.
*   `tokens` (bytes): the `Body` as plain text (`strip_html`): tags removed,
    with a space where a block element (paragraph, line break, list item,
    code block, ...) starts or ends, HTML entities unescaped, and runs of
    whitespace collapsed to one space. Case, punctuation and non-ASCII
    characters are kept. TFF's data is instead lower-cased, ASCII-only, with
    punctuation split into space-separated tokens and URLs replaced by a
    token, because it feeds a word-level model; the models here are
    character level, for which the text as written is the natural input, and
    keeping it loses nothing (a word-level user can lower-case and tokenize
    on read).
*   `type` (bytes): `question` or `answer`.

Conversion rules:

*   A client is a post owner: its id is `OwnerUserId` as a decimal string.
    When several dumps are converted together, owner ids are per site (the
    same `OwnerUserId` on two sites is two people), so the id is
    `<site>:<OwnerUserId>`, e.g. `beer.stackexchange.com:7`, the site read
    from the dump's file name (`posts_dumps.site_name`). One dump keeps the
    bare owner id, so its database is the same as before several could be
    given.
*   Only questions (`PostTypeId` 1) and answers (2) are converted; other post
    types (tag wikis, wiki excerpts, moderator nominations, ...) are skipped
    and counted. So are questions and answers with no `OwnerUserId` (posts of
    deleted users), then those whose body is empty once stripped of HTML.
*   Splits, after TFF's Stack Overflow (whose docstring describes train as the
    posts before 2018-01-01 except held-out users, test as the posts from
    then on except held-out users, and held-out as all posts of one user in
    ten, of all dates):

    -   `heldout`: all posts, of all dates, of a fraction `heldout_fraction`
        of the clients (rounded, at least one and never all of them), drawn
        with numpy's generator from `seed` among the clients sorted by id.
        TFF picks users with `user_id % 10 == 0`; a seeded draw gives the
        requested fraction on a small site as well.
    -   `train`: the other clients' posts created before `test_cutoff`.
    -   `test`: the other clients' posts created on or after `test_cutoff`.

    Without an explicit `test_cutoff`, the cutoff is derived from the dump:
    it is the creation time of the k-th latest converted post, where k is a
    tenth (`1 / TEST_FRACTION_DENOMINATOR`) of the n converted posts, rounded half
    up and at least one (k = max(1, (n + 5) // 10)), held-out clients' posts
    included. So the latest tenth of the posts (more when several share
    that time) are on or after it, whatever years the dump covers. A tenth
    follows TFF's split, whose test posts (16,586,035) are 10.9% of the
    posts of the clients not held out (152,404,765). The cutoff is an exact
    creation time, not a day, so that a small dump splits near a tenth too.
    With several dumps, each dump gets its own derived cutoff from its own
    posts: the sites' dumps cover different years (e.g. 7 weeks of 2014 and
    2010-2023), and one cutoff over all would leave the earlier sites no
    test posts. An explicit `test_cutoff` applies to every dump. The
    held-out draw is over all clients of all dumps.

The input is stream-parsed (`xml.etree.ElementTree.iterparse`, each row freed
once read) and posts are written to the database as they are read, so memory
holds only the set of client ids, not the posts. The file is built under a
temporary name in the output directory and renamed onto
`stackoverflow.sqlite` only when complete, so an interrupted or failed
conversion leaves no partial file where the loader looks (an existing one is
kept). The same input, cutoff, fraction and seed give the same database.
"""

import collections
from collections.abc import Iterator, Sequence
import datetime
import gzip
from html import parser as html_parser
import os
import re
import sqlite3
from typing import NamedTuple, Optional, Union
import xml.etree.ElementTree as ET
import zlib

from absl import logging
import numpy as np
import tensorflow as tf

from experiments.common import sqlite_files
from experiments.stackoverflow_wikipedia import posts_dumps

DATABASE_FILENAME = 'stackoverflow.sqlite'
TRAIN_SPLIT = 'train'
HELDOUT_SPLIT = 'heldout'
TEST_SPLIT = 'test'
SPLIT_NAMES = (TRAIN_SPLIT, HELDOUT_SPLIT, TEST_SPLIT)
# The features TFF's `stackoverflow.load_data` parses, in its order.
FEATURE_NAMES = ('creation_date', 'score', 'tags', 'title', 'tokens', 'type')
QUESTION_TYPE_ID = '1'
ANSWER_TYPE_ID = '2'
POST_TYPES = {QUESTION_TYPE_ID: 'question', ANSWER_TYPE_ID: 'answer'}
# Without an explicit cutoff, 1 / TEST_FRACTION_DENOMINATOR of the posts are
# on or after the derived one (see the module docstring); an integer, so that
# the rounding of n / 10 is exact.
TEST_FRACTION_DENOMINATOR = 10
DEFAULT_HELDOUT_FRACTION = 0.1
# Between a site and an owner id in the client ids of several dumps.
SITE_SEPARATOR = ':'

_ROOT_TAG = 'posts'
_ROW_TAG = 'row'
_CREATE_STATEMENTS = (
    'CREATE TABLE examples (split_name TEXT NOT NULL, client_id TEXT NOT NULL,'
    ' serialized_example_proto BLOB NOT NULL);',
    'CREATE TABLE client_metadata (client_id TEXT NOT NULL,'
    ' split_name TEXT NOT NULL, num_examples INTEGER NOT NULL);',
)
_CREATE_INDEX = ('CREATE INDEX examples_client_split ON examples'
                 ' (client_id, split_name);')
# Elements that separate text: without a space at their edges,
# `<p>end.</p><p>Next</p>` would read `end.Next`. Inline elements (`em`,
# `code`, `a`, ...) may sit inside a word and add nothing.
_BLOCK_TAGS = frozenset([
    'address', 'article', 'aside', 'blockquote', 'br', 'caption', 'dd', 'div',
    'dl', 'dt', 'figcaption', 'figure', 'footer', 'h1', 'h2', 'h3', 'h4', 'h5',
    'h6', 'header', 'hr', 'img', 'li', 'ol', 'p', 'pre', 'section', 'table',
    'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
])
# Their content is code or styling, not text of the post.
_SKIPPED_CONTENT_TAGS = frozenset(['script', 'style'])
_CLIENT_ID = re.compile(r'-?[0-9]+')
_POSITION_SUFFIX = re.compile(r':? line [0-9]+, column [0-9]+$')
_INSERT_BATCH = 1000
_LOG_EVERY_ROWS = 100_000


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


class _TextExtractor(html_parser.HTMLParser):
  """Collects the text of an HTML fragment, entities unescaped."""

  def __init__(self):
    # `convert_charrefs` unescapes `&amp;`, `&#233;`, ... in the text.
    super().__init__(convert_charrefs=True)
    self.pieces = []
    self._skip_depth = 0

  def handle_starttag(self, tag, attrs):
    del attrs  # Unused: link targets and image sources are not text.
    if tag in _SKIPPED_CONTENT_TAGS:
      self._skip_depth += 1
    elif tag in _BLOCK_TAGS:
      self.pieces.append(' ')

  def handle_endtag(self, tag):
    if tag in _SKIPPED_CONTENT_TAGS:
      self._skip_depth = max(self._skip_depth - 1, 0)
    elif tag in _BLOCK_TAGS:
      self.pieces.append(' ')

  def handle_data(self, data):
    if not self._skip_depth:
      self.pieces.append(data)


def strip_html(text: str) -> str:
  """Returns the plain text of an HTML fragment such as a post body.

  Tags are removed (with a space where a block element such as `p`, `br`,
  `li` or `pre` starts or ends, none around inline ones such as `em` or
  `code`), the content of `script` and `style` is dropped, comments are
  dropped, character references are unescaped, and runs of whitespace
  (non-breaking spaces included) become one space, with none at the ends.
  Case and punctuation are kept.

  Args:
    text: An HTML fragment, e.g. `<p>Ales &amp; <em>lagers</em></p>`.

  Returns:
    Its text, e.g. `Ales & lagers`.
  """
  extractor = _TextExtractor()
  extractor.feed(text)
  extractor.close()
  return ' '.join(''.join(extractor.pieces).split())


def tags_field(tags: str) -> str:
  """Returns a dump's `Tags` value joined by `|`, as TFF stores tags.

  Args:
    tags: `<beer><hops>` (older dumps), `|beer|hops|` (dumps since 2023) or
      the empty string.

  Returns:
    `beer|hops`, or the empty string.

  Raises:
    ValueError: If `tags` is in neither format.
  """
  tags = tags.strip()
  if not tags:
    return ''
  if tags.startswith('<') and tags.endswith('>'):
    names = tags[1:-1].split('><')
  elif tags.startswith('|') and tags.endswith('|'):
    names = tags[1:-1].split('|')
  else:
    raise ValueError(f'Tags must look like <a><b> or |a|b|, got {tags!r}.')
  if not all(names) or any(c in name for name in names for c in '<>|'):
    raise ValueError(f'Tags must look like <a><b> or |a|b|, got {tags!r}.')
  return '|'.join(names)


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
  _check_heldout_fraction(heldout_fraction)
  _check_seed(seed)
  ordered = sorted(set(client_ids))
  if len(ordered) < 2:
    raise ValueError('Held-out clients can only be drawn from two or more '
                     f'clients, got {len(ordered)}.')
  count = min(max(int(round(len(ordered) * heldout_fraction)), 1),
              len(ordered) - 1)
  order = np.random.default_rng(seed).permutation(len(ordered))
  return frozenset(ordered[i] for i in order[:count])


def _check_heldout_fraction(value: float) -> None:
  if (not isinstance(value, (int, float)) or isinstance(value, bool)
      or not 0.0 < value < 1.0):
    # Zero would leave `heldout` empty, which TFF's loader cannot open.
    raise ValueError(f'heldout_fraction must be in (0, 1), got {value!r}.')


def _check_seed(seed: int) -> None:
  if (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)
      or seed < 0):
    raise ValueError(f'seed must be a non-negative integer, got {seed!r}.')


class _Post(NamedTuple):
  client_id: str
  creation: datetime.datetime
  proto: bytes


class _Counts:
  """Mutable tallies of the rows read while parsing."""

  def __init__(self):
    self.rows_read = 0
    self.skipped = collections.Counter()


def _serialize_example(creation_date: str, score: int, tags: str, title: str,
                       tokens: str, post_type: str) -> bytes:
  """Returns the serialized `tf.train.Example` of one post."""
  example = tf.train.Example()
  feature = example.features.feature
  feature['creation_date'].bytes_list.value.append(
      creation_date.encode('utf-8'))
  feature['score'].int64_list.value.append(score)
  feature['tags'].bytes_list.value.append(tags.encode('utf-8'))
  feature['title'].bytes_list.value.append(title.encode('utf-8'))
  feature['tokens'].bytes_list.value.append(tokens.encode('utf-8'))
  feature['type'].bytes_list.value.append(post_type.encode('utf-8'))
  return example.SerializeToString()


def _required(attrib: dict[str, str], name: str, where: str) -> str:
  value = attrib.get(name, '').strip()
  if not value:
    raise ValueError(f'{where}: the {name} attribute is missing or empty.')
  return value


def _convert_row(attrib: dict[str, str], where: str,
                 counts: _Counts) -> Optional[_Post]:
  """Returns one row's post, or None (counted) if it is skipped."""
  post_type = POST_TYPES.get(_required(attrib, 'PostTypeId', where))
  if post_type is None:
    counts.skipped['other_type'] += 1
    return None
  owner = attrib.get('OwnerUserId', '').strip()
  if not owner:
    counts.skipped['no_owner'] += 1
    return None
  tokens = strip_html(attrib.get('Body', ''))
  if not tokens:
    counts.skipped['empty_body'] += 1
    return None
  if not _CLIENT_ID.fullmatch(owner):
    # Ids are spliced between quotes into TFF's SQL; integers are safe.
    raise ValueError(f'{where}: OwnerUserId must be an integer, got '
                     f'{owner!r}.')
  creation_date = _required(attrib, 'CreationDate', where)
  try:
    creation = datetime.datetime.fromisoformat(creation_date)
  except ValueError:
    raise ValueError(f'{where}: CreationDate must be an ISO 8601 date and '
                     f'time, got {creation_date!r}.') from None
  if creation.tzinfo is not None:
    creation = creation.astimezone(datetime.timezone.utc).replace(tzinfo=None)
  score_text = _required(attrib, 'Score', where)
  try:
    score = int(score_text)
  except ValueError:
    raise ValueError(f'{where}: Score must be an integer, got '
                     f'{score_text!r}.') from None
  if post_type == 'question':
    try:
      tags = tags_field(attrib.get('Tags', ''))
    except ValueError as e:
      raise ValueError(f'{where}: {e}') from None
    title = attrib.get('Title', '')
  else:
    tags, title = '', ''
  proto = _serialize_example(creation_date, score, tags, title, tokens,
                             post_type)
  return _Post(str(int(owner)), creation, proto)


def client_id(site: Optional[str], owner: str) -> str:
  """The client id of an owner's posts: `owner`, or `<site>:<owner>` when
  several dumps are converted together (owner ids are per site)."""
  return owner if site is None else f'{site}{SITE_SEPARATOR}{owner}'


def _read_posts(posts_xml: str, counts: _Counts,
                site: Optional[str] = None) -> Iterator[_Post]:
  """Stream-parses `posts_xml`, yielding its converted posts in file order.

  Args:
    posts_xml: The path of a `Posts.xml`, plain or gzipped.
    counts: Updated with the rows read and skipped.
    site: The dump's site when several dumps are converted together: the
      posts' client ids are then `client_id(site, owner)`.

  Yields:
    The converted posts.

  Raises:
    ValueError: On malformed XML (with the parser's line and column), a
      damaged gzip file, a root other than `<posts>`, an element other than
      `<row>` in it, or a bad row (with its number in the file and its Id).
  """
  with posts_dumps.open_dump(posts_xml) as source:
    events = ET.iterparse(source, events=('start', 'end'))
    root = None
    depth = 0
    row = 0  # Rows read from this file.
    try:
      for event, element in events:
        if event == 'start':
          depth += 1
          if root is None:
            root = element
            if element.tag != _ROOT_TAG:
              raise ValueError(
                  f'{posts_xml}: the root element must be <{_ROOT_TAG}> (a '
                  f'Stack Exchange Posts.xml), got <{element.tag}>.')
          elif depth == 2 and element.tag != _ROW_TAG:
            raise ValueError(
                f'{posts_xml}: expected only <{_ROW_TAG}> elements in '
                f'<{_ROOT_TAG}>, got <{element.tag}> after row {row}.')
          continue
        depth -= 1
        if depth != 1:
          continue  # The root's end, or the content of a row.
        row += 1
        counts.rows_read += 1
        where = f'{posts_xml}, row {row} (Id={element.get("Id", "?")})'
        post = _convert_row(element.attrib, where, counts)
        # Rows are done with once read: free them, the dumps can be large.
        element.clear()
        root.clear()
        if row % _LOG_EVERY_ROWS == 0:
          logging.info('Read %d rows of %s.', row, posts_xml)
        if post is not None:
          yield post._replace(client_id=client_id(site, post.client_id))
    except ET.ParseError as e:
      line, column = e.position
      # expat's message ends with the position, given first here.
      reason = _POSITION_SUFFIX.sub('', str(e))
      raise ValueError(f'{posts_xml}: malformed XML at line {line}, column '
                       f'{column}: {reason}.') from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
      # A truncated or damaged gzip member; not a bug, and not the XML.
      raise ValueError(f'{posts_xml}: damaged gzip file after row {row} '
                       f'({e}).') from None


class _Inserted(NamedTuple):
  """What `_insert_posts` wrote of one dump."""
  client_ids: set[str]
  first: Optional[datetime.datetime]  # The earliest post's creation time.
  last: Optional[datetime.datetime]  # The latest post's creation time.
  rowids: tuple[int, int]  # The first and last rowid of its posts.


def _date_key(time: datetime.datetime) -> str:
  """Returns a creation time as text that sorts in time order."""
  # Fixed width (microseconds always written), so strings compare as times.
  return time.isoformat(sep=' ', timespec='microseconds')


def _max_rowid(connection: sqlite3.Connection) -> int:
  (rowid,), = connection.execute('SELECT COALESCE(MAX(rowid), 0) FROM '
                                 'examples;')
  return rowid


def _insert_posts(connection: sqlite3.Connection,
                  posts: Iterator[_Post]) -> _Inserted:
  """Inserts posts with their `_date_key` as provisional split name.

  `_split_by_date` replaces it with train or test once the cutoff is known,
  which, when derived, needs all posts' dates: keeping them in the database
  rather than in memory keeps memory small on large dumps.
  """
  client_ids = set()
  first = last = None
  batch = []
  start = _max_rowid(connection) + 1
  for post in posts:
    client_ids.add(post.client_id)
    first = post.creation if first is None else min(first, post.creation)
    last = post.creation if last is None else max(last, post.creation)
    batch.append((_date_key(post.creation), post.client_id, post.proto))
    if len(batch) >= _INSERT_BATCH:
      connection.executemany(
          'INSERT INTO examples (split_name, client_id, '
          'serialized_example_proto) VALUES (?, ?, ?);', batch)
      batch = []
  connection.executemany(
      'INSERT INTO examples (split_name, client_id, serialized_example_proto)'
      ' VALUES (?, ?, ?);', batch)
  return _Inserted(client_ids, first, last, (start, _max_rowid(connection)))


def _derived_cutoff(connection: sqlite3.Connection,
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


def _split_by_date(connection: sqlite3.Connection,
                   cutoff: datetime.datetime,
                   rowids: tuple[int, int]) -> None:
  """Replaces the provisional date keys among `rowids` by train (before
  cutoff) or test."""
  connection.execute(
      'UPDATE examples SET split_name = CASE WHEN split_name < ? THEN ? '
      'ELSE ? END WHERE rowid BETWEEN ? AND ?;',
      (_date_key(cutoff), TRAIN_SPLIT, TEST_SPLIT, *rowids))


def _check_no_empty_split(source: str, per_split: dict[str, tuple[int, int]],
                          cutoffs: Sequence[datetime.datetime],
                          inserted: _Inserted, num_other_clients: int) -> None:
  """Raises a ValueError naming the split TFF's loader could not open."""
  if len(set(cutoffs)) == 1:
    cutoff = f'the test cutoff {cutoffs[0].isoformat(sep=" ")}'
  else:
    cutoff = "its site's test cutoff"
  for split, side in ((TRAIN_SPLIT, 'before'), (TEST_SPLIT, 'on or after')):
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
                  counts: _Counts) -> list[tuple[str, Optional[str], int,
                                                 _Inserted]]:
  """Inserts every dump's posts; returns (path, site, rows, what was
  inserted) per dump."""
  inserted_dumps = []
  for path, site in dumps:
    rows_before = counts.rows_read
    skipped_before = collections.Counter(counts.skipped)
    posts = _read_posts(path, counts, site)
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
                    heldout_fraction: float, seed: int, counts: _Counts):
  """Fills the database; returns (posts per split, [(dump, cutoff)])."""
  for statement in _CREATE_STATEMENTS:
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
  cutoffs = [cutoff or _derived_cutoff(connection, d[3].rowids)
             for d in dumps]
  for dump, dump_cutoff in zip(dumps, cutoffs):
    _split_by_date(connection, dump_cutoff, dump[3].rowids)
  heldout = select_heldout_clients(sorted(client_ids), heldout_fraction, seed)
  # Built before the update, so that each client's update is a lookup
  # rather than a scan of all posts.
  connection.execute(_CREATE_INDEX)
  # Held-out clients keep all their posts, of any date, in `heldout`.
  connection.executemany(
      'UPDATE examples SET split_name = ? WHERE client_id = ?;',
      [(HELDOUT_SPLIT, client_id) for client_id in sorted(heldout)])
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
    heldout_fraction: float = DEFAULT_HELDOUT_FRACTION,
    seed: int = 0,
) -> ConversionSummary:
  """Converts Stack Exchange `Posts.xml` dumps to TFF's stackoverflow.sqlite.

  Afterwards `tff.simulation.datasets.stackoverflow.load_data(
  cache_dir=cache_dir)` reads it without downloading. See the module
  docstring for the features and the conversion and split rules, and for
  what changes when several dumps are converted together (client ids
  `<site>:<owner>`, a derived test cutoff per dump).

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
      to `train` (except held-out clients'); see `parse_cutoff`. None (the
      default) derives it from each dump's dates so that the latest tenth of
      its posts are on or after it (see the module docstring).
    heldout_fraction: Fraction of the clients, in (0, 1), whose posts all go
      to `heldout`; see `select_heldout_clients`.
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
  cutoff = None if derived else parse_cutoff(test_cutoff)
  _check_heldout_fraction(heldout_fraction)
  _check_seed(seed)
  given = _dumps(posts_xml)
  os.makedirs(cache_dir, exist_ok=True)
  database_path = os.path.join(cache_dir, DATABASE_FILENAME)

  counts = _Counts()
  with sqlite_files.new_database(database_path) as connection:
    per_split, dumps = _write_database(connection, given, cutoff,
                                       heldout_fraction, seed, counts)

  clients = {split: per_split.get(split, (0, 0))[0] for split in SPLIT_NAMES}
  examples = {split: per_split.get(split, (0, 0))[1] for split in SPLIT_NAMES}
  cutoffs = {c for _, c in dumps}
  return ConversionSummary(
      database_path=database_path,
      rows_read=counts.rows_read,
      skipped_other_type=counts.skipped['other_type'],
      skipped_no_owner=counts.skipped['no_owner'],
      skipped_empty_body=counts.skipped['empty_body'],
      train_examples=examples[TRAIN_SPLIT],
      heldout_examples=examples[HELDOUT_SPLIT],
      test_examples=examples[TEST_SPLIT],
      train_clients=clients[TRAIN_SPLIT],
      heldout_clients=clients[HELDOUT_SPLIT],
      test_clients=clients[TEST_SPLIT],
      test_cutoff=cutoffs.pop() if len(cutoffs) == 1 else None,
      test_cutoff_derived=derived,
      sites=_site_summaries(dumps))
