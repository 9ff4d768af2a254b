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
"""Tests of the `Posts.xml` to `stackoverflow.sqlite` converter.

The round trip goes through `tff.simulation.datasets.stackoverflow.load_data`,
TFF's real loader, reading the converted file from its `cache_dir`; loading
runs no TFF computation, so no TFF worker process is started.
"""

import datetime
import gzip
import os
import subprocess
from typing import NamedTuple, Optional
from unittest import mock
from xml.sax import saxutils

from absl.testing import absltest
from absl.testing import parameterized
import tensorflow as tf
import tensorflow_federated as tff

from experiments.stackoverflow_wikipedia import posts_splits
from experiments.stackoverflow_wikipedia import posts_xml_lib
from experiments.stackoverflow_wikipedia import posts_xml_rows
from tests import binary_runs
from tests import preloaded_python
from tests import temp_dirs

_CUTOFF = '2016-01-01'


class _Row(NamedTuple):
  """One `<row>` of a fake Posts.xml and what it must become."""
  post_id: int
  type_id: str
  date: str
  owner: Optional[str]
  body: str  # HTML, as the dump holds it once XML-unescaped.
  score: int = 0
  title: str = ''
  tags: str = ''  # As in the dump: `<a><b>`.
  tokens: str = ''  # The expected text; unused for skipped rows.
  expected_tags: str = ''


# A handful of owners with questions and answers on both sides of _CUTOFF,
# plus rows that must be skipped: no owner (Id 3), an empty body (Id 4),
# post types other than question and answer (Ids 9, 10).
_ROWS = (
    _Row(1, '1', '2015-03-01T10:00:00.123', '3',
         '<p>What makes an <em>IPA</em> bitter?</p>\n\n<p>Ales &amp; lagers'
         ' &lt;3</p>\n', score=5, title='Bitterness of IPAs & "ales"',
         tags='<ipa><hops>', tokens='What makes an IPA bitter? Ales & lagers'
         ' <3', expected_tags='ipa|hops'),
    _Row(2, '2', '2015-04-01T08:30:00.5', '7',
         '<p>Hops contain <a href="http://x.org/a?b=1&amp;c=2">alpha'
         ' acids</a>.<br>See below:</p>\n<pre><code>IBU = 40\n  AA = 10%'
         '</code></pre>\n', score=-2,
         tokens='Hops contain alpha acids. See below: IBU = 40 AA = 10%'),
    _Row(3, '1', '2015-04-02T00:00:00', None, '<p>Orphan question</p>',
         title='Orphan', tags='<misc>'),
    _Row(4, '2', '2015-04-03T00:00:00', '7', '<p> \n </p>'),
    _Row(5, '2', '2016-02-01T12:00:00', '3',
         '<ul><li>Caf&eacute;</li><li>na&#239;ve&nbsp;beer</li></ul>',
         score=1, tokens='Café naïve beer'),
    _Row(6, '1', '2015-05-01T00:00:00', '7', '<p>Why <b>lager</b>?</p>',
         score=3, title='Lager', tags='<lager>', tokens='Why lager?',
         expected_tags='lager'),
    _Row(8, '1', '2016-06-01T23:59:59.999', '12',
         '<p>Stout   or\tporter?</p>', score=0, title='Stout vs porter',
         tags='<stout><porter><style>', tokens='Stout or porter?',
         expected_tags='stout|porter|style'),
    _Row(9, '4', '2015-06-01T00:00:00', '3', '<p>Tag wiki for hops.</p>'),
    _Row(10, '5', '2015-06-01T00:00:00', None, ''),
    _Row(11, '2', '2015-01-02T00:00:00', '40', '<p>First!</p>', score=2,
         tokens='First!'),
    _Row(12, '2', '2016-01-01T00:00:00', '40', '<p>On the cutoff.</p>',
         score=4, tokens='On the cutoff.'),
    _Row(13, '2', '2015-12-31T23:59:59.999', '5', 'Just text, no tags.',
         score=7, tokens='Just text, no tags.'),
)
_CONVERTED = tuple(r for r in _ROWS if r.tokens)
_CLIENTS = ('12', '3', '40', '5', '7')


def _dated_rows() -> list[_Row]:
  """27 answers of owners 1-4 every 10 days from 2015-01-01, latest first.

  Post i (0-26) is created 10 * i days after 2015-01-01T12:00:00, except
  post 23, which ties with post 24 on 2015-08-29. The dump ends on
  2015-09-18, before the old fixed cutoff 2016-08-01. The file lists them
  latest first, so that a cutoff taken in file order would be wrong.
  """
  start = datetime.datetime(2015, 1, 1, 12)
  rows = []
  for i in range(27):
    date = start + datetime.timedelta(days=10 * (24 if i == 23 else i))
    rows.append(_Row(100 + i, '2', date.isoformat(), str(i % 4 + 1),
                     f'<p>Post {i}</p>', tokens=f'Post {i}'))
  return rows[::-1]


def _attr(value: str) -> str:
  # The dumps escape newlines in attributes as `&#xA;`.
  return saxutils.quoteattr(value, {'\n': '&#xA;', '\t': '&#x9;'})


def _row_xml(row: _Row) -> str:
  attributes = [f'Id="{row.post_id}"', f'PostTypeId="{row.type_id}"',
                f'CreationDate="{row.date}"', f'Score="{row.score}"',
                f'Body={_attr(row.body)}']
  if row.owner is not None:
    attributes.append(f'OwnerUserId="{row.owner}"')
  else:
    attributes.append('OwnerDisplayName="gone"')
  if row.type_id == '1':
    attributes += [f'Title={_attr(row.title)}', f'Tags={_attr(row.tags)}']
  return '  <row ' + ' '.join(attributes) + ' />'


def _write_posts(directory: str, rows=_ROWS, root: str = 'posts',
                 name: str = 'Posts.xml', gzipped: bool = False) -> str:
  """Writes a Posts.xml like the dumps': UTF-8 BOM and CRLF line ends;
  gzipped (as `gzip -n`) if asked."""
  lines = ['<?xml version="1.0" encoding="utf-8"?>', f'<{root}>']
  lines += [_row_xml(r) for r in rows]
  lines.append(f'</{root}>')
  content = b'\xef\xbb\xbf' + '\r\n'.join(lines).encode('utf-8') + b'\r\n'
  path = os.path.join(directory, name)
  with open(path, 'wb') as f:
    f.write(gzip.compress(content, mtime=0) if gzipped else content)
  return path


# A second site whose owners 3 and 7 share their ids with _ROWS' owners but
# are other people: the conversion must keep them apart.
_OTHER_SITE = 'history.meta.stackexchange.com'
_OTHER_ROWS = (
    _Row(1, '1', '2015-02-01T09:00:00', '3', '<p>Which <b>sources</b>?</p>',
         score=2, title='Sources', tags='<sources>', tokens='Which sources?',
         expected_tags='sources'),
    _Row(2, '2', '2015-02-02T10:00:00', '7', '<p>Primary ones.</p>',
         tokens='Primary ones.'),
    _Row(3, '2', '2016-03-01T00:00:00', '3', '<p>Later answer.</p>',
         score=1, tokens='Later answer.'),
    _Row(4, '2', '2016-04-01T00:00:00', '99', '<p>Only here.</p>',
         tokens='Only here.'),
)


def _file_bytes(path: str) -> bytes:
  with open(path, 'rb') as f:
    return f.read()


def _expected_split(row: _Row, heldout: frozenset[str]) -> str:
  if row.owner in heldout:
    return 'heldout'
  return 'train' if row.date < _CUTOFF else 'test'


def _expected_example(row: _Row) -> tuple[bytes, int, bytes, bytes, bytes,
                                          bytes]:
  is_question = row.type_id == '1'
  return (row.date.encode(), row.score, row.expected_tags.encode(),
          (row.title if is_question else '').encode(), row.tokens.encode(),
          b'question' if is_question else b'answer')


def _decoded(client_data, client_id):
  """A client's examples as tuples of Python values, in FEATURE_NAMES order."""
  examples = []
  for x in client_data.create_tf_dataset_for_client(client_id):
    values = tuple(x[k].numpy() for k in posts_xml_rows.FEATURE_NAMES)
    examples.append(values[:1] + (int(values[1]),) + values[2:])
  return examples


class StripHtmlTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('paragraphs', '<p>One.</p><p>Two.</p>\n', 'One. Two.'),
      ('inline_tags_join', 'fo<strong>o</strong>bar <em>x</em>', 'foobar x'),
      ('entities', 'Ales &amp; lagers &lt;3 &quot;q&quot; &#233;t&eacute;',
       'Ales & lagers <3 "q" été'),
      ('line_breaks', 'one<br>two<br/>three<hr />four',
       'one two three four'),
      ('code_block', '<pre><code>x = 1\n    y = 2\n</code></pre>',
       'x = 1 y = 2'),
      ('link_text_only', 'see <a href="http://a.b/?c=1&amp;d=2">here</a>.',
       'see here.'),
      ('list_items', '<ul><li>a</li><li>b</li></ul>', 'a b'),
      ('nbsp_is_whitespace', 'a&nbsp;&nbsp;b\r\n\tc', 'a b c'),
      ('comment_dropped', '<!-- hidden -->shown', 'shown'),
      ('script_dropped', '<script>alert(1)</script>ok', 'ok'),
      ('image_separates', 'before<img src="x.png" alt="pic">after',
       'before after'),
      ('lone_angle_bracket', 'a < b', 'a < b'),
      ('case_kept', 'Keep THE Case', 'Keep THE Case'),
      ('empty', '', ''),
      ('only_markup', '<p> \n </p><br>', ''),
  )
  def test_golden(self, html, expected):
    self.assertEqual(posts_xml_rows.strip_html(html), expected)


class HelpersTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('angle_brackets', '<beer><hops>', 'beer|hops'),
      ('pipes', '|beer|hops|', 'beer|hops'),
      ('one_tag', '<c++>', 'c++'),
      ('empty', '', ''),
  )
  def test_tags_field(self, tags, expected):
    self.assertEqual(posts_xml_rows.tags_field(tags), expected)

  @parameterized.parameters('beer', '<beer', '<>', '<a><>')
  def test_tags_field_rejects(self, tags):
    with self.assertRaisesRegex(ValueError, 'Tags must look like'):
      posts_xml_rows.tags_field(tags)

  def test_parse_cutoff(self):
    expected = datetime.datetime(2016, 8, 1)
    self.assertEqual(posts_splits.parse_cutoff('2016-08-01'), expected)
    self.assertEqual(posts_splits.parse_cutoff(datetime.date(2016, 8, 1)),
                     expected)
    self.assertEqual(
        posts_splits.parse_cutoff('2016-08-01T02:00:00+02:00'), expected)
    with self.assertRaisesRegex(ValueError, "ISO 8601.*'Aug 2016'"):
      posts_splits.parse_cutoff('Aug 2016')

  def test_select_heldout_clients(self):
    ids = [str(i) for i in range(40)]
    heldout = posts_splits.select_heldout_clients(ids, 0.1, seed=3)
    self.assertLen(heldout, 4)
    self.assertContainsSubset(heldout, ids)
    # Deterministic, and independent of the order the ids come in.
    self.assertEqual(heldout, posts_splits.select_heldout_clients(
        list(reversed(ids)), 0.1, seed=3))
    self.assertNotEqual(heldout, posts_splits.select_heldout_clients(
        ids, 0.1, seed=4))
    # At least one, never all.
    self.assertLen(posts_splits.select_heldout_clients(ids[:3], 0.1, 0), 1)
    self.assertLen(posts_splits.select_heldout_clients(ids[:3], 0.9, 0), 2)
    for fraction in (0.0, 1.0):
      with self.assertRaisesRegex(ValueError, r'heldout_fraction.*\(0, 1\)'):
        posts_splits.select_heldout_clients(ids, fraction, 0)
    with self.assertRaisesRegex(ValueError, 'two or more clients, got 1'):
      posts_splits.select_heldout_clients(ids[:1], 0.5, 0)


class ConvertPostsTest(absltest.TestCase):

  def test_round_trip_through_tff_loader(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    posts = _write_posts(directory)
    summary = posts_xml_lib.convert_posts(posts, cache_dir,
                                          test_cutoff=_CUTOFF)
    # 5 clients at the default fraction 0.1: rounded to 0, raised to 1.
    heldout = posts_splits.select_heldout_clients(list(_CLIENTS), 0.1, 0)
    self.assertLen(heldout, 1)

    expected = {'train': {}, 'heldout': {}, 'test': {}}
    for row in _CONVERTED:  # In file order, as the loader must return them.
      expected[_expected_split(row, heldout)].setdefault(
          row.owner, []).append(_expected_example(row))
    # The fixture must exercise every split, and a client in two of them.
    self.assertTrue(all(expected.values()))
    self.assertTrue(set(expected['train']) & set(expected['test']))

    train, heldout_data, test = tff.simulation.datasets.stackoverflow.load_data(
        cache_dir=cache_dir)
    self.assertEqual(os.listdir(cache_dir), ['stackoverflow.sqlite'])
    for name, client_data in (('train', train), ('heldout', heldout_data),
                              ('test', test)):
      with self.subTest(split=name):
        self.assertEqual(client_data.client_ids, sorted(expected[name]))
        for client_id in client_data.client_ids:
          self.assertEqual(_decoded(client_data, client_id),
                           expected[name][client_id], client_id)
        spec = client_data.element_type_structure
        self.assertEqual(spec['score'], tf.TensorSpec([], tf.int64))
        self.assertEqual(spec['tokens'], tf.TensorSpec([], tf.string))

    self.assertEqual(summary, posts_xml_lib.ConversionSummary(
        database_path=os.path.join(cache_dir, 'stackoverflow.sqlite'),
        rows_read=len(_ROWS),
        skipped_other_type=2,
        skipped_no_owner=1,
        skipped_empty_body=1,
        train_examples=sum(map(len, expected['train'].values())),
        heldout_examples=sum(map(len, expected['heldout'].values())),
        test_examples=sum(map(len, expected['test'].values())),
        train_clients=len(expected['train']),
        heldout_clients=len(expected['heldout']),
        test_clients=len(expected['test']),
        test_cutoff=datetime.datetime(2016, 1, 1),
        test_cutoff_derived=False))
    self.assertEqual(summary.examples_written, len(_CONVERTED))

  def test_time_split_boundary(self):
    directory = temp_dirs.temp_dir(self)
    summary = posts_xml_lib.convert_posts(
        _write_posts(directory), directory, test_cutoff='2016-01-01', seed=1)
    train, heldout, test = tff.simulation.datasets.stackoverflow.load_data(
        cache_dir=directory)
    self.assertEqual(heldout.client_ids, ['7'])
    self.assertEqual(train.client_ids, ['3', '40', '5'])
    self.assertEqual(test.client_ids, ['12', '3', '40'])
    # Id 12 is created exactly at the cutoff (on or after it means test),
    # Id 13 a millisecond before it.
    self.assertEqual([x[4] for x in _decoded(test, '40')],
                     [b'On the cutoff.'])
    self.assertEqual([x[4] for x in _decoded(train, '5')],
                     [b'Just text, no tags.'])
    self.assertEqual((summary.train_examples, summary.heldout_examples,
                      summary.test_examples), (3, 2, 3))

  def test_default_cutoff_is_the_latest_tenth(self):
    # 27 posts: round(27 / 10) = 3, so the cutoff is the creation time of
    # the 3rd latest post (post 24, tied with post 23), which puts 4 posts on
    # or after it.
    directory = temp_dirs.temp_dir(self)
    rows = _dated_rows()
    summary = posts_xml_lib.convert_posts(_write_posts(directory, rows),
                                          directory)
    cutoff = datetime.datetime(2015, 8, 29, 12)
    self.assertEqual(summary.test_cutoff, cutoff)
    self.assertTrue(summary.test_cutoff_derived)
    heldout = posts_splits.select_heldout_clients(['1', '2', '3', '4'], 0.1,
                                                  0)
    late = [r for r in rows if r.date >= '2015-08-29T12:00:00']
    self.assertLen(late, 4)
    self.assertEqual(summary.test_examples,
                     sum(r.owner not in heldout for r in late))
    self.assertEqual(summary.train_examples,
                     sum(r.owner not in heldout for r in rows) - len(
                         [r for r in late if r.owner not in heldout]))
    train, _, test = tff.simulation.datasets.stackoverflow.load_data(
        cache_dir=directory)
    for client_id in test.client_ids:
      for x in _decoded(test, client_id):
        self.assertGreaterEqual(x[0], b'2015-08-29T12:00:00')
    for client_id in train.client_ids:
      for x in _decoded(train, client_id):
        self.assertLess(x[0], b'2015-08-29T12:00:00')

  def test_explicit_cutoff_wins_over_the_derived_one(self):
    directory = temp_dirs.temp_dir(self)
    rows = _dated_rows()
    summary = posts_xml_lib.convert_posts(
        _write_posts(directory, rows), directory, test_cutoff='2015-03-01')
    self.assertEqual(summary.test_cutoff, datetime.datetime(2015, 3, 1))
    self.assertFalse(summary.test_cutoff_derived)
    heldout = posts_splits.select_heldout_clients(['1', '2', '3', '4'], 0.1,
                                                  0)
    # Posts 6-26 (from 2015-03-02) are on or after 2015-03-01.
    self.assertEqual(summary.test_examples,
                     sum(r.owner not in heldout and r.post_id >= 106
                         for r in rows))
    self.assertEqual(summary.train_examples,
                     sum(r.owner not in heldout and r.post_id < 106
                         for r in rows))

  def test_empty_split_is_refused(self):
    # TFF's loader cannot open a database with an empty split.
    directory = temp_dirs.temp_dir(self)
    path = _write_posts(directory)
    with self.assertRaisesRegex(
        ValueError, f'{path}: the test split would be empty .* cutoff '
        '2020-01-01 00:00:00; the posts run from 2015-01-02 00:00:00 to '
        '2016-06-01 23:59:59.999000'):
      posts_xml_lib.convert_posts(path, directory, test_cutoff='2020-01-01')
    with self.assertRaisesRegex(ValueError, 'the train split would be empty'):
      posts_xml_lib.convert_posts(path, directory, test_cutoff='2000-01-01')
    with self.assertRaisesRegex(ValueError, r'heldout_fraction.*\(0, 1\)'):
      posts_xml_lib.convert_posts(path, directory, heldout_fraction=0.0)
    with self.assertRaisesRegex(ValueError, 'only one owner \\(3\\)'):
      posts_xml_lib.convert_posts(_write_posts(directory, _ROWS[:1]),
                                  directory)
    self.assertEqual(os.listdir(directory), ['Posts.xml'])

  def test_skipped_counts(self):
    directory = temp_dirs.temp_dir(self)
    extra = (
        _Row(20, '2', '2015-01-01T00:00:00', None, '<p>no owner</p>'),
        _Row(21, '2', '2015-01-01T00:00:00', '', '<p>empty owner</p>'),
        _Row(22, '1', '2015-01-01T00:00:00', '9', '<p><br></p>', title='T'),
        _Row(23, '2', '2015-01-01T00:00:00', '9', ''),
        _Row(24, '7', '2015-01-01T00:00:00', '9', '<p>nomination</p>'),
    )
    summary = posts_xml_lib.convert_posts(
        _write_posts(directory, _ROWS + extra), directory,
        test_cutoff=_CUTOFF)
    self.assertEqual(summary.rows_read, len(_ROWS) + 5)
    self.assertEqual(summary.skipped_other_type, 3)
    self.assertEqual(summary.skipped_no_owner, 3)
    self.assertEqual(summary.skipped_empty_body, 3)
    self.assertEqual(summary.examples_written, len(_CONVERTED))

  def test_missing_file(self):
    directory = temp_dirs.temp_dir(self)
    path = os.path.join(directory, 'nope', 'Posts.xml')
    with self.assertRaisesRegex(FileNotFoundError,
                                f'{path} does not exist'):
      posts_xml_lib.convert_posts(path, directory)
    with self.assertRaisesRegex(FileNotFoundError, 'is not a file'):
      posts_xml_lib.convert_posts(directory, directory)

  def test_malformed_xml(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    path = _write_posts(directory)
    with open(path, 'rb') as f:
      lines = f.read().split(b'\r\n')
    # Line 5 (the third row) loses its closing `/>`.
    lines[4] = lines[4][:-2]
    with open(path, 'wb') as f:
      f.write(b'\r\n'.join(lines))
    with self.assertRaisesRegex(
        ValueError, f'{path}: malformed XML at line 6, column 2'):
      posts_xml_lib.convert_posts(path, cache_dir)
    # Nothing left where the loader looks, nor a temporary file.
    self.assertEqual(os.listdir(cache_dir), [])

  def test_empty_file(self):
    directory = temp_dirs.temp_dir(self)
    path = os.path.join(directory, 'Posts.xml')
    open(path, 'w').close()
    with self.assertRaisesRegex(ValueError,
                                f'{path}: malformed XML at line 1'):
      posts_xml_lib.convert_posts(path, directory)

  def test_wrong_root(self):
    directory = temp_dirs.temp_dir(self)
    path = _write_posts(directory, root='users')
    with self.assertRaisesRegex(
        ValueError, f'{path}: the root element must be <posts>.*got <users>'):
      posts_xml_lib.convert_posts(path, directory)

  def test_no_usable_posts(self):
    directory = temp_dirs.temp_dir(self)
    rows = tuple(r for r in _ROWS if not r.tokens)
    path = _write_posts(directory, rows)
    with self.assertRaisesRegex(
        ValueError, f'{path} has no question or answer to convert: of 4 rows,'
        ' 2 are other post types, 1 have no OwnerUserId and 1 an empty body'):
      posts_xml_lib.convert_posts(path, directory)
    self.assertEqual(os.listdir(directory), ['Posts.xml'])

  def test_bad_row(self):
    directory = temp_dirs.temp_dir(self)
    bad = _ROWS[0]._replace(post_id=77, date='yesterday')
    path = _write_posts(directory, (_ROWS[1], bad))
    with self.assertRaisesRegex(
        ValueError, f'{path}, row 2 \\(Id=77\\): CreationDate must be an ISO '
        "8601 date and time, got 'yesterday'"):
      posts_xml_lib.convert_posts(path, directory)

  def test_interrupted_conversion_keeps_existing_file(self):
    directory = temp_dirs.temp_dir(self)
    path = _write_posts(directory)
    database = os.path.join(directory, 'stackoverflow.sqlite')
    with open(database, 'wb') as f:
      f.write(b'previous')
    real_serialize = posts_xml_rows._serialize_example
    calls = []

    def serialize_then_interrupt(*args):
      calls.append(1)
      if len(calls) == 3:
        raise KeyboardInterrupt()
      return real_serialize(*args)

    with mock.patch.object(posts_xml_rows, '_serialize_example',
                           serialize_then_interrupt):
      with self.assertRaises(KeyboardInterrupt):
        posts_xml_lib.convert_posts(path, directory)
    with open(database, 'rb') as f:
      self.assertEqual(f.read(), b'previous')
    self.assertCountEqual(os.listdir(directory),
                          ['Posts.xml', 'stackoverflow.sqlite'])


class SeveralDumpsTest(absltest.TestCase):
  """Dumps of several sites at once, plain or gzipped."""

  def _two_dumps(self, directory: str) -> tuple[str, str]:
    beer = _write_posts(directory, name='beer.stackexchange.com_Posts.xml')
    other = _write_posts(directory, _OTHER_ROWS,
                         name=f'{_OTHER_SITE}.Posts.xml.gz', gzipped=True)
    return beer, other

  def test_same_owner_on_two_sites_is_two_clients(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    summary = posts_xml_lib.convert_posts(
        self._two_dumps(directory), cache_dir, test_cutoff=_CUTOFF, seed=2)
    # The reference: each site's rows under `<site>:<owner>`.
    rows = [('beer.stackexchange.com:' + r.owner, r) for r in _CONVERTED]
    rows += [(f'{_OTHER_SITE}:{r.owner}', r) for r in _OTHER_ROWS]
    heldout = posts_splits.select_heldout_clients(
        [client for client, _ in rows], 0.1, seed=2)
    expected = {'train': {}, 'heldout': {}, 'test': {}}
    for client, row in rows:
      split = ('heldout' if client in heldout else
               'train' if row.date < _CUTOFF else 'test')
      expected[split].setdefault(client, []).append(_expected_example(row))
    self.assertIn('beer.stackexchange.com:3', {c for c, _ in rows})
    self.assertIn(f'{_OTHER_SITE}:3', {c for c, _ in rows})
    loaded = tff.simulation.datasets.stackoverflow.load_data(
        cache_dir=cache_dir)
    for name, client_data in zip(('train', 'heldout', 'test'), loaded):
      with self.subTest(split=name):
        self.assertEqual(client_data.client_ids, sorted(expected[name]))
        for client_id in client_data.client_ids:
          self.assertEqual(_decoded(client_data, client_id),
                           expected[name][client_id], client_id)
    self.assertEqual(summary.examples_written, len(rows))
    self.assertEqual(summary.test_cutoff, datetime.datetime(2016, 1, 1))
    self.assertEqual(
        [(s.site, s.rows_read, s.posts_converted, s.clients)
         for s in summary.sites],
        [('beer.stackexchange.com', len(_ROWS), len(_CONVERTED), 5),
         (_OTHER_SITE, len(_OTHER_ROWS), len(_OTHER_ROWS), 3)])

  def test_each_dump_gets_its_own_derived_cutoff(self):
    directory = temp_dirs.temp_dir(self)
    early = _dated_rows()
    # The same posts four years later, on another site.
    late = [r._replace(date=r.date.replace('2015-', '2019-'))
            for r in early]
    summary = posts_xml_lib.convert_posts(
        [_write_posts(directory, early, name='a.stackexchange.com_Posts.xml'),
         _write_posts(directory, late, name='b.stackexchange.com_Posts.xml')],
        directory)
    self.assertIsNone(summary.test_cutoff)
    self.assertTrue(summary.test_cutoff_derived)
    # As test_default_cutoff_is_the_latest_tenth, for each dump alone.
    self.assertEqual(
        [s.test_cutoff for s in summary.sites],
        [datetime.datetime(2015, 8, 29, 12), datetime.datetime(2019, 8, 29,
                                                               12)])
    _, _, test = tff.simulation.datasets.stackoverflow.load_data(
        cache_dir=directory)
    self.assertEqual({c.split(':')[0] for c in test.client_ids},
                     {'a.stackexchange.com', 'b.stackexchange.com'})

  def test_gzipped_dump_converts_as_the_plain_one(self):
    directory = temp_dirs.temp_dir(self)
    plain = _write_posts(directory)
    # Gzip is told by its magic bytes, not by the name.
    packed = _write_posts(directory, name='Posts.bin', gzipped=True)
    for path, name in ((plain, 'plain'), (packed, 'packed')):
      posts_xml_lib.convert_posts(path, os.path.join(directory, name),
                                  test_cutoff=_CUTOFF)
    self.assertEqual(
        _file_bytes(os.path.join(directory, 'packed', 'stackoverflow.sqlite')),
        _file_bytes(os.path.join(directory, 'plain', 'stackoverflow.sqlite')))

  def test_one_dump_in_a_list_converts_as_alone(self):
    # A single dump keeps bare owner ids (test_round_trip_through_tff_loader
    # checks them against _ROWS), so the database of one dump is unchanged.
    directory = temp_dirs.temp_dir(self)
    path = _write_posts(directory, name='beer.stackexchange.com_Posts.xml')
    alone = posts_xml_lib.convert_posts(path, os.path.join(directory, 'a'))
    listed = posts_xml_lib.convert_posts([path], os.path.join(directory, 'b'))
    self.assertEqual(listed._replace(database_path=''),
                     alone._replace(database_path=''))
    self.assertEqual(alone.sites, ())
    self.assertEqual(_file_bytes(listed.database_path),
                     _file_bytes(alone.database_path))

  def test_bad_dumps_are_refused_before_anything_is_written(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    beer, other = self._two_dumps(directory)
    os.mkdir(os.path.join(directory, 'beer.stackexchange.com'))
    again = _write_posts(os.path.join(directory, 'beer.stackexchange.com'))
    missing = os.path.join(directory, 'gone.stackexchange.com_Posts.xml')
    unnamed = _write_posts(directory, name='dump.xml')
    for paths, error, message in (
        ([beer, other, again], ValueError,
         f'{beer} and {again} are both dumps of beer.stackexchange.com'),
        ([beer, missing], FileNotFoundError, f'{missing} does not exist'),
        ([beer, unnamed], ValueError,
         f'Cannot tell the site of the dump {unnamed}'),
        ([beer, ''], ValueError, 'An empty path')):
      with self.subTest(message=message):
        with self.assertRaisesRegex(error, message):
          posts_xml_lib.convert_posts(paths, cache_dir)
        self.assertFalse(os.path.exists(cache_dir))

  def test_damaged_gzip(self):
    directory = temp_dirs.temp_dir(self)
    beer, other = self._two_dumps(directory)
    packed = _file_bytes(other)
    with open(other, 'wb') as f:
      f.write(packed[:len(packed) // 2])
    with self.assertRaisesRegex(ValueError,
                                f'{other}: damaged gzip file after row'):
      posts_xml_lib.convert_posts([beer, other], directory)
    self.assertCountEqual(os.listdir(directory), [
        os.path.basename(beer), os.path.basename(other)])


@binary_runs.runs_binaries
class ConvertPostsMainTest(absltest.TestCase):

  def _run(self, *args: str) -> subprocess.CompletedProcess:
    return preloaded_python.run_module(
        'experiments.stackoverflow_wikipedia.convert_posts_main', *args,
        timeout=300)

  def test_converts_and_prints_summary(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    result = self._run(f'--posts_xml={_write_posts(directory)}',
                       f'--cache_dir={cache_dir}', f'--test_cutoff={_CUTOFF}',
                       '--heldout_fraction=0.1', '--seed=1')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn(
        f'Wrote {cache_dir}/stackoverflow.sqlite: 12 rows read, 8 posts '
        'converted, 4 skipped (2 neither question nor answer, 1 without '
        'owner, 1 with an empty body).', result.stdout)
    self.assertIn('train:   3 posts of 3 clients', result.stdout)
    self.assertIn('heldout: 2 posts of 1 client\n', result.stdout)
    self.assertIn('test:    3 posts of 3 clients', result.stdout)
    self.assertTrue(
        os.path.isfile(os.path.join(cache_dir, 'stackoverflow.sqlite')))

  def test_dump_ending_before_2016_converts_with_the_default_cutoff(self):
    # Such a dump was refused with the old fixed default 2016-08-01.
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    result = self._run(
        f'--posts_xml={_write_posts(directory, _dated_rows())}',
        f'--cache_dir={cache_dir}')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('test:    ', result.stdout)
    self.assertIn('test cutoff 2015-08-29 12:00:00 (derived: the latest 10% '
                  'of the posts are on or after it', result.stdout)

  def test_summary_names_an_explicit_cutoff(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    result = self._run(
        f'--posts_xml={_write_posts(directory, _dated_rows())}',
        f'--cache_dir={cache_dir}', '--test_cutoff=2015-03-01')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('test cutoff 2015-03-01 00:00:00 (--test_cutoff)',
                  result.stdout)

  def test_several_dumps(self):
    directory = temp_dirs.temp_dir(self)
    cache_dir = os.path.join(directory, 'cache')
    note = os.path.join(directory, 'note.txt')
    beer = _write_posts(directory, name='beer.stackexchange.com_Posts.xml')
    other = _write_posts(directory, _OTHER_ROWS,
                         name=f'{_OTHER_SITE}.Posts.xml.gz', gzipped=True)
    result = self._run(f'--posts_xml={beer},{other}',
                       f'--cache_dir={cache_dir}', f'--data_note_file={note}')
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn('2 sites (client ids <site>:<owner>):\n'
                  '    beer.stackexchange.com: 8 posts of 5 clients (12 rows '
                  'read), test cutoff ', result.stdout)
    self.assertIn(f'    {_OTHER_SITE}: 4 posts of 3 clients (4 rows read)',
                  result.stdout)
    self.assertIn("test cutoff per site (derived: the latest 10% of each "
                  "site's posts", result.stdout)
    with open(note) as f:
      self.assertStartsWith(
          f.read(), '2 Stack Exchange sites, 8 clients (a client is one owner '
          'on one site), 12 posts: beer.stackexchange.com 8 posts of 5 '
          f'clients, {_OTHER_SITE} 4 posts of 3 clients; train ')
    # A damaged gzip file is one error line, like any bad input.
    with open(other, 'wb') as f:
      f.write(gzip.compress(b"<posts>")[:10])
    result = self._run(f'--posts_xml={beer},{other}',
                       f'--cache_dir={cache_dir}')
    self.assertEqual(result.returncode, 1)
    self.assertIn(f'error: {other}: damaged gzip file', result.stderr)
    self.assertNotIn('Traceback', result.stderr)

  def test_bad_input_is_one_error_line(self):
    directory = temp_dirs.temp_dir(self)
    path = _write_posts(directory, root='users')
    result = self._run(f'--posts_xml={path}', f'--cache_dir={directory}')
    self.assertEqual(result.returncode, 1)
    self.assertIn(f'error: {path}: the root element must be <posts>',
                  result.stderr)
    self.assertNotIn('Traceback', result.stderr)
    self.assertEqual(result.stdout, '')


if __name__ == '__main__':
  absltest.main()
