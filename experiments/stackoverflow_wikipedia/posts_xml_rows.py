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
"""Reads the posts of a Stack Exchange `Posts.xml` dump as TFF's examples.

Each question and answer of a data dump's `Posts.xml` (plain or gzipped,
`posts_dumps`) becomes a serialized `tf.train.Example` with the six
features `stackoverflow.py` (TFF's Stack Overflow loader) parses, each
holding exactly one value:

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

Rows become posts by these rules:

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

The input is stream-parsed (`xml.etree.ElementTree.iterparse`, each row freed
once read), so `read_posts` holds one row at a time, however large the dump.
"""

import collections
from collections.abc import Iterator
import datetime
import gzip
from html import parser as html_parser
import re
from typing import NamedTuple, Optional
import xml.etree.ElementTree as ET
import zlib

from absl import logging
import tensorflow as tf

from experiments.stackoverflow_wikipedia import posts_dumps


# The features TFF's `stackoverflow.load_data` parses, in its order.
FEATURE_NAMES = ('creation_date', 'score', 'tags', 'title', 'tokens', 'type')
QUESTION_TYPE_ID = '1'
ANSWER_TYPE_ID = '2'
POST_TYPES = {QUESTION_TYPE_ID: 'question', ANSWER_TYPE_ID: 'answer'}
# Between a site and an owner id in the client ids of several dumps.
SITE_SEPARATOR = ':'

_ROOT_TAG = 'posts'
_ROW_TAG = 'row'
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
_LOG_EVERY_ROWS = 100_000


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


class Post(NamedTuple):
  """One converted post: its client, creation time (naive UTC) and
  serialized `tf.train.Example`."""
  client_id: str
  creation: datetime.datetime
  proto: bytes


class RowCounts:
  """Mutable tallies of the rows read while parsing: all of them
  (`rows_read`) and the skipped ones by why (`skipped`: `other_type`,
  `no_owner`, `empty_body`)."""

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
                 counts: RowCounts) -> Optional[Post]:
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
  return Post(str(int(owner)), creation, proto)


def client_id(site: Optional[str], owner: str) -> str:
  """The client id of an owner's posts: `owner`, or `<site>:<owner>` when
  several dumps are converted together (owner ids are per site)."""
  return owner if site is None else f'{site}{SITE_SEPARATOR}{owner}'


def read_posts(posts_xml: str, counts: RowCounts,
               site: Optional[str] = None) -> Iterator[Post]:
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

