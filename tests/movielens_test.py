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
"""Tests of the MovieLens next-movie data layer.

All ratings files are small ones generated here (MovieLens files must not be
shipped); the real ML-100K `u.data` and ML-1M's users 1-2999, when present
next to the repository, are read as a sanity check.
"""

import collections
import gzip
import os

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.tasks import movielens
from tests import temp_dirs

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ML_100K = os.path.join(_REPO_ROOT, '..', 'shared', 'data', 'movielens_100k',
                        'u.data')
_ML_1M_PARTIAL = os.path.join(_REPO_ROOT, '..', 'shared', 'data',
                              'movielens_1m_partial',
                              'ratings_users1-2999.dat.gz')

# (user, movie, rating, timestamp), in file order. User 7 has timestamp ties
# (100: movies 20 then 60; 200: movies 30 then 40), user 3 is out of order,
# user 9 has a single rating.
_HISTORY = (
    (7, 10, 4.0, 300),
    (3, 5, 3.0, 50),
    (7, 20, 5.0, 100),
    (9, 11, 2.0, 10),
    (7, 30, 1.0, 200),
    (7, 40, 3.5, 200),
    (3, 6, 4.0, 40),
    (7, 50, 2.0, 400),
    (7, 60, 5.0, 100),
)


def _format_rating(row, file_format: str) -> str:
  user, movie, rating, timestamp = row
  rating = f'{rating:g}'
  if file_format == 'ml-1m':
    return f'{user}::{movie}::{rating}::{timestamp}'
  return f'{user}\t{movie}\t{rating}\t{timestamp}'


def _write(test: absltest.TestCase, lines, name: str = 'ratings',
           newline: str = '\n') -> str:
  path = os.path.join(temp_dirs.temp_dir(test), name)
  with open(path, 'w', encoding='latin-1', newline='') as f:
    f.write(''.join(line + newline for line in lines))
  return path


def _write_ratings(test, rows, file_format: str, **kwargs) -> str:
  return _write(test, [_format_rating(r, file_format) for r in rows],
                **kwargs)


def _gzip_copy(path: str, name: str) -> str:
  """`path` gzipped into `name` beside it."""
  target = os.path.join(os.path.dirname(path), name)
  with open(path, 'rb') as f, gzip.open(target, 'wb') as g:
    g.write(f.read())
  return target


def _ratings_of(rows) -> movielens.Ratings:
  columns = list(zip(*rows))
  return movielens.Ratings(
      user_ids=np.array(columns[0], np.int64),
      movie_ids=np.array(columns[1], np.int64),
      ratings=np.array(columns[2], np.float32),
      timestamps=np.array(columns[3], np.int64),
      num_skipped=0)


def _random_rows(num_users: int, seed: int = 0):
  rng = np.random.RandomState(seed)
  rows = []
  for user in range(1, num_users + 1):
    for _ in range(rng.randint(2, 8)):
      rows.append((user, int(rng.randint(1, 60)), float(rng.randint(1, 6)),
                   int(rng.randint(0, 10**9))))
  rng.shuffle(rows)
  return rows


class ReadRatingsTest(parameterized.TestCase):

  def assert_ratings_equal(self, actual, expected):
    self.assertEqual(actual.num_skipped, expected.num_skipped)
    for field in ('user_ids', 'movie_ids', 'ratings', 'timestamps'):
      a, e = getattr(actual, field), getattr(expected, field)
      self.assertEqual(a.dtype, e.dtype, field)
      np.testing.assert_array_equal(a, e, err_msg=field)

  def test_both_formats_give_the_same_ratings(self):
    expected = _ratings_of(_HISTORY)
    for file_format in ('ml-1m', 'ml-100k'):
      path = _write_ratings(self, _HISTORY, file_format)
      for requested in (file_format, 'auto'):
        with self.subTest(file_format=file_format, requested=requested):
          self.assert_ratings_equal(
              movielens.read_ratings(path, file_format=requested), expected)

  def test_dtypes_and_values(self):
    path = _write(self, ['1::1193::5::978300760', '2::7::3.5::-4'])
    ratings = movielens.read_ratings(path)
    self.assertEqual(ratings.user_ids.dtype, np.int64)
    self.assertEqual(ratings.movie_ids.dtype, np.int64)
    self.assertEqual(ratings.ratings.dtype, np.float32)
    self.assertEqual(ratings.timestamps.dtype, np.int64)
    np.testing.assert_array_equal(ratings.user_ids, [1, 2])
    np.testing.assert_array_equal(ratings.movie_ids, [1193, 7])
    np.testing.assert_array_equal(ratings.ratings, [5.0, 3.5])
    np.testing.assert_array_equal(ratings.timestamps, [978300760, -4])

  def test_auto_detection_uses_first_non_empty_line(self):
    path = _write(self, ['', '  ', '196\t242\t3\t881250949'])
    ratings = movielens.read_ratings(path)
    np.testing.assert_array_equal(ratings.movie_ids, [242])

  def test_auto_detection_rejects_unknown_format(self):
    path = _write(self, ['', '1,2,3,4', '1::2::3::4'])
    with self.assertRaisesRegex(movielens.MalformedRatingsError,
                                'unknown ratings file format') as cm:
      movielens.read_ratings(path, skip_malformed=True)
    self.assertIn(path, str(cm.exception))
    self.assertIn('line 2', str(cm.exception))
    self.assertEqual(cm.exception.line_number, 2)

  def test_explicit_format_mismatch_is_malformed(self):
    path = _write_ratings(self, _HISTORY, 'ml-100k')
    with self.assertRaisesRegex(movielens.MalformedRatingsError,
                                'line 1: expected 4 fields'):
      movielens.read_ratings(path, file_format='ml-1m')

  @parameterized.parameters('ml-1m', 'ml-100k')
  def test_crlf_and_blank_lines(self, file_format):
    lines = [_format_rating(r, file_format) for r in _HISTORY]
    lines = [''] + lines[:3] + ['', ' \t '] + lines[3:] + ['', '']
    path = _write(self, lines, newline='\r\n')
    self.assert_ratings_equal(movielens.read_ratings(path),
                              _ratings_of(_HISTORY))

  def test_no_trailing_newline(self):
    path = _write(self, ['1::2::3::4\n5::6::7::8'], newline='')
    ratings = movielens.read_ratings(path)
    np.testing.assert_array_equal(ratings.user_ids, [1, 5])

  @parameterized.named_parameters(
      ('too_few_fields', '3::4::5', 'expected 4 fields'),
      ('too_many_fields', '3::4::5::6::7', 'expected 4 fields'),
      ('non_integer_user', 'x::4::5::6', "user id 'x' is not an integer"),
      ('float_movie', '3::4.0::5::6', "movie id '4.0' is not an integer"),
      ('underscore_movie', '3::1_0::5::6', "movie id '1_0'"),
      ('non_integer_timestamp', '3::4::5::6.5', 'timestamp'),
      ('empty_timestamp', '3::4::5::', 'timestamp'),
      ('non_numeric_rating', '3::4::good::6', "rating 'good' is not a num"),
      ('nan_rating', '3::4::nan::6', 'not a finite number'),
      ('user_zero', '0::4::5::6', 'user id 0 is not >= 1'),
      ('negative_user', '-2::4::5::6', 'user id -2 is not >= 1'),
      ('movie_zero', '3::0::5::6', 'movie id 0 is not >= 1'),
      ('movie_too_large', '3::101::5::6', 'larger than max_movie_id=100'),
  )
  def test_malformed_line(self, bad_line, reason):
    good = ['1::2::3::4', '', '5::6::7::8']
    path = _write(self, good + [bad_line, '9::10::4::12'])
    with self.assertRaises(movielens.MalformedRatingsError) as cm:
      movielens.read_ratings(path, max_movie_id=100)
    message = str(cm.exception)
    self.assertIn(path, message)
    self.assertIn('line 4', message)
    self.assertIn(reason, message)
    self.assertEqual(cm.exception.line_number, 4)
    self.assertIsInstance(cm.exception, ValueError)

    with self.assertLogs('absl', level='WARNING') as logs:
      ratings = movielens.read_ratings(path, max_movie_id=100,
                                       skip_malformed=True)
    self.assertEqual(ratings.num_skipped, 1)
    np.testing.assert_array_equal(ratings.user_ids, [1, 5, 9])
    np.testing.assert_array_equal(ratings.movie_ids, [2, 6, 10])
    self.assertLen(logs.output, 1)
    self.assertIn('Skipped 1 malformed', logs.output[0])
    self.assertIn('line 4', logs.output[0])

  def test_malformed_ml_100k_line(self):
    path = _write(self, ['1\t2\t3\t4', '1\t2\t3', '0\t2\t3\t4'])
    with self.assertRaisesRegex(movielens.MalformedRatingsError,
                                'line 2: expected 4 fields'):
      movielens.read_ratings(path)
    ratings = movielens.read_ratings(path, skip_malformed=True)
    self.assertEqual(ratings.num_skipped, 2)
    np.testing.assert_array_equal(ratings.user_ids, [1])

  def test_skip_counts_several_lines(self):
    path = _write(self, ['1::2::3::4', 'a::b', '2::3::x::5', '3::4::5::6',
                         '4::0::1::2'])
    with self.assertLogs('absl', level='WARNING') as logs:
      ratings = movielens.read_ratings(path, skip_malformed=True)
    self.assertEqual(ratings.num_skipped, 3)
    np.testing.assert_array_equal(ratings.user_ids, [1, 3])
    self.assertLen(logs.output, 1)
    self.assertIn('Skipped 3 malformed', logs.output[0])
    self.assertIn('line 2', logs.output[0])  # The first bad line.

  def test_gzipped_file_reads_as_the_uncompressed_one(self):
    rows = _random_rows(30, seed=4)
    for file_format in ('ml-1m', 'ml-100k'):
      plain = _write_ratings(self, rows, file_format, newline='\r\n')
      expected = movielens.read_ratings(plain)
      # Recognized by the name, and by the magic bytes without it.
      for name in ('ratings.dat.gz', 'ratings_gzipped'):
        with self.subTest(file_format=file_format, name=name):
          path = _gzip_copy(plain, name)
          self.assert_ratings_equal(movielens.read_ratings(path), expected)
          self.assert_ratings_equal(movielens.read_ratings(
              path, file_format=file_format), expected)

  def test_corrupt_gzip_is_one_line_naming_the_file(self):
    plain = _write_ratings(self, _random_rows(30, seed=5), 'ml-1m')
    with open(_gzip_copy(plain, 'whole.gz'), 'rb') as f:
      whole = f.read()
    damaged = bytearray(whole)
    damaged[len(whole) // 2] ^= 0xff
    cases = (('truncated.dat.gz', whole[:len(whole) // 2], 'corrupt gzip'),
             ('flipped.dat.gz', bytes(damaged), 'corrupt gzip'),
             ('magic_only', whole[:2], 'corrupt gzip'),
             ('text.dat.gz', b'1::2::3::4\n', 'not gzip-compressed'))
    for name, content, reason in cases:
      path = os.path.join(os.path.dirname(plain), name)
      with open(path, 'wb') as f:
        f.write(content)
      with self.subTest(name=name):
        with self.assertRaisesRegex(ValueError, reason) as cm:
          movielens.read_ratings(path)
        message = str(cm.exception)
        self.assertIn(path, message)
        self.assertNotIn('\n', message)
        with self.assertRaisesRegex(ValueError, reason):
          movielens.load_movielens(path)

  def test_missing_file(self):
    path = os.path.join(temp_dirs.temp_dir(self), 'nope', 'ratings.dat')
    with self.assertRaisesRegex(FileNotFoundError, 'nope'):
      movielens.read_ratings(path)

  def test_no_valid_ratings(self):
    for lines, kwargs in (([], {}), (['', '  '], {}),
                          (['1::0::3::4'], {'skip_malformed': True})):
      path = _write(self, lines)
      with self.subTest(lines=lines):
        with self.assertRaisesRegex(ValueError, 'No valid ratings') as cm:
          movielens.read_ratings(path, **kwargs)
        self.assertIn(path, str(cm.exception))
        self.assertNotIsInstance(cm.exception,
                                 movielens.MalformedRatingsError)

  def test_invalid_arguments(self):
    path = _write_ratings(self, _HISTORY, 'ml-1m')
    with self.assertRaisesRegex(ValueError, 'file_format'):
      movielens.read_ratings(path, file_format='csv')
    with self.assertRaisesRegex(ValueError, 'max_movie_id'):
      movielens.read_ratings(path, max_movie_id=0)


class TimelineExamplesTest(absltest.TestCase):

  def test_golden_examples(self):
    examples = movielens.timeline_examples(_ratings_of(_HISTORY),
                                           context_length=3)
    self.assertEqual(list(examples), [3, 7])  # User 9 has one rating.
    contexts, labels = examples[7]
    # Timeline of user 7: 20, 60 (t=100), 30, 40 (t=200), 10, 50.
    np.testing.assert_array_equal(contexts, [
        [20, 0, 0],
        [20, 60, 0],
        [20, 60, 30],
        [60, 30, 40],
        [30, 40, 10],
    ])
    np.testing.assert_array_equal(labels, [60, 30, 40, 10, 50])
    self.assertEqual(contexts.dtype, np.int32)
    self.assertEqual(labels.dtype, np.int32)
    contexts, labels = examples[3]
    np.testing.assert_array_equal(contexts, [[6, 0, 0]])
    np.testing.assert_array_equal(labels, [5])

  def test_golden_context_length_one_and_long(self):
    ratings = _ratings_of(_HISTORY)
    contexts, labels = movielens.timeline_examples(ratings, 1)[7]
    np.testing.assert_array_equal(contexts, [[20], [60], [30], [40], [10]])
    np.testing.assert_array_equal(labels, [60, 30, 40, 10, 50])
    contexts, labels = movielens.timeline_examples(ratings, 7)[7]
    np.testing.assert_array_equal(contexts, [
        [20, 0, 0, 0, 0, 0, 0],
        [20, 60, 0, 0, 0, 0, 0],
        [20, 60, 30, 0, 0, 0, 0],
        [20, 60, 30, 40, 0, 0, 0],
        [20, 60, 30, 40, 10, 0, 0],
    ])
    np.testing.assert_array_equal(labels, [60, 30, 40, 10, 50])

  def test_matches_a_plain_loop(self):
    rows = _random_rows(30, seed=1)
    ratings = _ratings_of(rows)
    examples = movielens.timeline_examples(ratings, 4)
    for user in np.unique(ratings.user_ids):
      history = [(t, i, m) for i, (u, m, _, t) in enumerate(rows)
                 if u == user]
      timeline = [m for _, _, m in sorted(history)]
      expected_contexts = []
      for j in range(1, len(timeline)):
        context = timeline[max(0, j - 4):j]
        expected_contexts.append(context + [0] * (4 - len(context)))
      contexts, labels = examples[int(user)]
      np.testing.assert_array_equal(contexts, expected_contexts)
      np.testing.assert_array_equal(labels, timeline[1:])
    self.assertEqual(sum(len(l) for _, l in examples.values()),
                     len(rows) - len(np.unique(ratings.user_ids)))

  def test_only_single_ratings(self):
    ratings = _ratings_of([(1, 2, 3.0, 4), (2, 2, 3.0, 4)])
    self.assertEqual(movielens.timeline_examples(ratings, 3), {})

  def test_invalid_arguments(self):
    ratings = _ratings_of(_HISTORY)
    with self.assertRaisesRegex(ValueError, 'context_length'):
      movielens.timeline_examples(ratings, 0)
    bad = ratings._replace(movie_ids=np.zeros_like(ratings.movie_ids))
    with self.assertRaisesRegex(ValueError, 'padding'):
      movielens.timeline_examples(bad, 3)


class SplitUsersTest(parameterized.TestCase):

  def test_paper_sizes_for_ml_1m(self):
    users = np.arange(1, 6041)
    groups = movielens.split_users(users)
    self.assertEqual({k: len(v) for k, v in groups.items()}, {
        'datacenter': 1208, 'validation': 483, 'test': 483, 'train': 3866})
    for ids in groups.values():
      self.assertEqual(ids.dtype, np.int64)
      np.testing.assert_array_equal(ids, np.sort(ids))
    everything = np.concatenate(list(groups.values()))
    self.assertLen(np.unique(everything), 6040)  # Disjoint ...
    np.testing.assert_array_equal(np.sort(everything), users)  # ... and all.

  def test_deterministic_by_seed(self):
    users = list(range(100, 400)) * 2  # Duplicates are ignored.
    a = movielens.split_users(users, seed=5)
    b = movielens.split_users(list(reversed(users)), seed=5)
    c = movielens.split_users(users, seed=6)
    for key in a:
      np.testing.assert_array_equal(a[key], b[key])
    self.assertFalse(np.array_equal(a['train'], c['train']))
    self.assertLen(a['datacenter'], 60)
    self.assertLen(a['validation'], 24)
    self.assertLen(a['test'], 24)
    self.assertLen(a['train'], 192)

  def test_zero_fractions(self):
    groups = movielens.split_users([3, 1, 2], datacenter_fraction=0.0,
                                   validation_fraction=0.0, test_fraction=0.0)
    np.testing.assert_array_equal(groups['train'], [1, 2, 3])
    for key in ('datacenter', 'validation', 'test'):
      self.assertEmpty(groups[key])

  @parameterized.named_parameters(
      ('datacenter_one', dict(datacenter_fraction=1.0), 'datacenter_fraction'),
      ('negative', dict(validation_fraction=-0.1), 'validation_fraction'),
      ('test_nan', dict(test_fraction=float('nan')), 'test_fraction'),
      ('sum', dict(validation_fraction=0.5, test_fraction=0.5), '< 1'),
      ('seed', dict(seed=-1), 'seed'),
  )
  def test_invalid_arguments(self, kwargs, message):
    with self.assertRaisesRegex(ValueError, message):
      movielens.split_users([1, 2, 3], **kwargs)

  def test_empty(self):
    with self.assertRaisesRegex(ValueError, 'empty'):
      movielens.split_users([])


class BuildClientDataTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.examples = movielens.timeline_examples(_ratings_of(_HISTORY), 3)
    self.client_data = movielens.build_client_data(self.examples, [7, 9, 3])

  def test_client_ids_and_element_spec(self):
    self.assertEqual(self.client_data.client_ids, ['7', '3'])
    self.assertEqual(
        self.client_data.element_type_structure,
        collections.OrderedDict(
            context=tf.TensorSpec([3], tf.int32),
            label=tf.TensorSpec([], tf.int32)))

  def test_contents(self):
    for user in (7, 3):
      dataset = self.client_data.create_tf_dataset_for_client(str(user))
      elements = list(dataset.as_numpy_iterator())
      self.assertIsInstance(elements[0], collections.OrderedDict)
      np.testing.assert_array_equal(
          [e['context'] for e in elements], self.examples[user][0])
      np.testing.assert_array_equal(
          [e['label'] for e in elements], self.examples[user][1])
    with self.assertRaises(ValueError):
      self.client_data.create_tf_dataset_for_client('9')

  def test_traced_dataset_fn(self):
    # The graph path of `serializable_dataset_fn`, as used by TFF and by
    # `create_tf_dataset_from_all_clients`.
    @tf.function
    def label_sum(client_id):
      dataset = self.client_data.serializable_dataset_fn(client_id)
      return dataset.reduce(np.int32(0), lambda s, x: s + x['label'])

    self.assertEqual(label_sum(tf.constant('7')).numpy(), 60 + 30 + 40 + 10 +
                     50)
    self.assertEqual(label_sum(tf.constant('3')).numpy(), 5)
    labels = [x['label'] for x in self.client_data
              .create_tf_dataset_from_all_clients().as_numpy_iterator()]
    self.assertCountEqual(labels, [60, 30, 40, 10, 50, 5])

  def test_dataset_in_a_tff_computation(self):
    element_type = collections.OrderedDict(
        context=tff.TensorType(np.int32, [None, 3]),
        label=tff.TensorType(np.int32, [None]))

    @tff.tensorflow.computation(tff.SequenceType(element_type))
    def label_sum(dataset):
      return dataset.reduce(
          np.int32(0), lambda s, x: s + tf.reduce_sum(x['label']))

    dataset = self.client_data.create_tf_dataset_for_client('7').batch(2)
    self.assertEqual(label_sum(dataset), 60 + 30 + 40 + 10 + 50)

  def test_dataset_computation(self):
    dataset = self.client_data.dataset_computation('7')
    labels = [int(x['label']) for x in dataset]
    self.assertEqual(labels, [60, 30, 40, 10, 50])

  def test_no_examples(self):
    with self.assertRaisesRegex(ValueError, 'None of the given users'):
      movielens.build_client_data(self.examples, [9, 11])

  # `build_rows_fn`: the same clients' rows as tensors.

  def test_rows_are_the_client_datas_in_a_graph(self):
    rows = tf.function(movielens.build_rows_fn(self.examples, [7, 9, 3]))
    for user in (7, 3):
      contexts, labels = rows(tf.constant(str(user)))
      np.testing.assert_array_equal(contexts, self.examples[user][0])
      np.testing.assert_array_equal(labels, self.examples[user][1])
      self.assertEqual(contexts.dtype, tf.int32)
      self.assertEqual(labels.dtype, tf.int32)

  def test_unknown_client_fails_when_run(self):
    with self.assertRaisesRegex(tf.errors.InvalidArgumentError,
                                'Unknown client id'):
      tf.function(movielens.build_rows_fn(self.examples, [7, 9, 3]))(
          tf.constant('9'))

  def test_rows_fn_without_examples(self):
    with self.assertRaisesRegex(ValueError, 'None of the given users'):
      movielens.build_rows_fn(self.examples, [9, 11])


class LoadMovieLensTest(absltest.TestCase):

  def test_load(self):
    rows = _random_rows(50, seed=2)
    path = _write_ratings(self, rows, 'ml-100k')
    with self.assertLogs('absl', level='INFO') as logs:
      data = movielens.load_movielens(path, context_length=4, seed=3)
    self.assertTrue(any('50 users' in line for line in logs.output))
    self.assertEqual(data.num_movies, len({r[1] for r in rows}))
    self.assertEqual(data.context_length, 4)
    self.assertEqual(data.num_ratings, len(rows))
    self.assertEqual(data.num_skipped, 0)
    self.assertLen(data.datacenter_user_ids, 10)
    self.assertLen(data.validation_user_ids, 4)
    self.assertLen(data.test_user_ids, 4)
    self.assertLen(data.train_user_ids, 32)
    groups = movielens.split_users(range(1, 51), seed=3)
    np.testing.assert_array_equal(data.train_user_ids, groups['train'])
    self.assertEqual(
        movielens.timeline_examples(movielens.read_ratings(path), 4).keys(),
        data.examples.keys())
    for client_data, users in ((data.train, data.train_user_ids),
                               (data.validation, data.validation_user_ids),
                               (data.test, data.test_user_ids)):
      self.assertEqual(client_data.client_ids, [str(u) for u in users])
      element = next(iter(client_data.create_tf_dataset_for_client(
          client_data.client_ids[0])))
      self.assertEqual(element['context'].shape, [4])


  def test_partial_copy_with_gaps_in_the_ids(self):
    # A subset of a larger file's users (sparse user ids) whose movies
    # leave gaps in the movie ids (as ML-1M users 1-2999 rate 3,615 movies
    # with ids up to 3,952), gzipped.
    rng = np.random.RandomState(6)
    ids = np.array([2, 3, 17, 18, 40, 41, 99, 250, 3900, 3952])
    rows = [(user, int(rng.choice(ids)), 4.0, int(rng.randint(0, 10**9)))
            for user in range(3, 123, 2) for _ in range(rng.randint(2, 9))]
    path = _gzip_copy(_write_ratings(self, rows, 'ml-1m'),
                      'ratings_subset.dat.gz')
    data = movielens.load_movielens(path, context_length=3)
    used = np.unique([r[1] for r in rows])
    self.assertEqual(data.num_movies, len(used))
    np.testing.assert_array_equal(data.movie_ids, used)
    # Every example is the file's, its ids renumbered 1..num_movies in the
    # order of the file's ids; padding stays 0.
    raw = movielens.timeline_examples(movielens.read_ratings(path), 3)
    self.assertEqual(data.examples.keys(), raw.keys())
    original = np.concatenate([[movielens.PADDING_ID], data.movie_ids])
    for user, (contexts, labels) in data.examples.items():
      self.assertBetween(labels.min(), 1, data.num_movies)
      np.testing.assert_array_equal(original[contexts], raw[user][0])
      np.testing.assert_array_equal(original[labels], raw[user][1])
    users = np.unique([r[0] for r in rows])
    np.testing.assert_array_equal(np.sort(np.concatenate([
        data.datacenter_user_ids, data.train_user_ids,
        data.validation_user_ids, data.test_user_ids])), users)
    self.assertEqual(data.num_ratings, len(rows))
    # The federated datasets read the renumbered ids.
    user = data.train.client_ids[0]
    labels = [int(x['label']) for x in
              data.train.create_tf_dataset_for_client(user)]
    self.assertEqual(labels, data.examples[int(user)][1].tolist())


class ClientMovieKeysTest(absltest.TestCase):

  contexts = np.array([[5, 3, 0], [3, 9, 0]], np.int32)
  labels = np.array([9, 2], np.int32)

  def test_without_overflow(self):
    keys, kept = movielens.client_movie_keys(self.contexts, self.labels, 6)
    np.testing.assert_array_equal(keys, [2, 3, 5, 9, 0, 0])
    self.assertEqual(keys.dtype, np.int32)
    np.testing.assert_array_equal(kept, [True, True])
    self.assertEqual(kept.dtype, np.bool_)
    keys, kept = movielens.client_movie_keys(self.contexts, self.labels, 4)
    np.testing.assert_array_equal(keys, [2, 3, 5, 9])

  def test_with_overflow(self):
    # Counts: 3 -> 2, 9 -> 2, 2 -> 1, 5 -> 1.
    keys, kept = movielens.client_movie_keys(self.contexts, self.labels, 2)
    np.testing.assert_array_equal(keys, [3, 9])
    np.testing.assert_array_equal(kept, [True, False])
    # A tie at count 1 between 2 and 5: the smaller id wins.
    keys, kept = movielens.client_movie_keys(self.contexts, self.labels, 3)
    np.testing.assert_array_equal(keys, [2, 3, 9])
    np.testing.assert_array_equal(kept, [True, True])

  def test_invalid(self):
    with self.assertRaisesRegex(ValueError, 'max_keys'):
      movielens.client_movie_keys(self.contexts, self.labels, 0)
    with self.assertRaisesRegex(ValueError, 'shapes'):
      movielens.client_movie_keys(self.contexts, self.labels[:1], 3)

  def test_remap_to_local(self):
    keys = np.array([2, 3, 9, 0, 0], np.int32)
    local = movielens.remap_to_local(np.array([[9, 2, 0], [5, 3, 0]]), keys)
    np.testing.assert_array_equal(local, [[2, 0, -1], [-1, 1, -1]])
    self.assertEqual(local.dtype, np.int32)
    np.testing.assert_array_equal(
        movielens.remap_to_local(np.array([1, 10, 4]), keys), [-1, -1, -1])
    np.testing.assert_array_equal(
        movielens.remap_to_local(np.array([0, 1]), np.zeros(3, np.int32)),
        [-1, -1])

  def test_keys_and_remap_together(self):
    keys, kept = movielens.client_movie_keys(self.contexts, self.labels, 2)
    local_contexts = movielens.remap_to_local(self.contexts, keys)
    local_labels = movielens.remap_to_local(self.labels, keys)
    np.testing.assert_array_equal(local_contexts, [[-1, 0, -1], [0, 1, -1]])
    np.testing.assert_array_equal(local_labels >= 0, kept)

  def test_remap_rejects_bad_keys(self):
    for keys in ([3, 2, 0], [2, 0, 3], [2, 2, 0], [-1, 0]):
      with self.subTest(keys=keys):
        with self.assertRaisesRegex(ValueError, 'keys'):
          movielens.remap_to_local(np.array([1]), np.array(keys))


class RealMovieLens100kTest(absltest.TestCase):

  def test_counts(self):
    if not os.path.exists(_ML_100K):
      self.skipTest(f'{_ML_100K} is absent')
    ratings = movielens.read_ratings(_ML_100K)
    self.assertLen(ratings.user_ids, 100_000)
    self.assertEqual(ratings.num_skipped, 0)
    self.assertLen(np.unique(ratings.user_ids), 943)
    self.assertLen(np.unique(ratings.movie_ids), 1682)
    self.assertEqual(ratings.movie_ids.max(), 1682)
    data = movielens.load_movielens(_ML_100K, file_format='ml-100k')
    self.assertEqual(data.num_movies, 1682)
    self.assertEqual(sum(len(l) for _, l in data.examples.values()),
                     100_000 - 943)
    self.assertEqual(
        [len(data.datacenter_user_ids), len(data.train_user_ids),
         len(data.validation_user_ids), len(data.test_user_ids)],
        [189, 604, 75, 75])
    self.assertLen(data.train.client_ids, 604)


class RealMovieLens1mPartialTest(absltest.TestCase):

  def test_counts(self):
    if not os.path.exists(_ML_1M_PARTIAL):
      self.skipTest(f'{_ML_1M_PARTIAL} is absent')
    data = movielens.load_movielens(_ML_1M_PARTIAL)
    # Its PROVENANCE.md: 487,650 ratings of users 1-2999, 3,615 movies with
    # ids up to 3,952.
    self.assertEqual(data.num_ratings, 487_650)
    self.assertEqual(data.num_movies, 3615)
    self.assertEqual(data.movie_ids[-1], 3952)
    self.assertEqual(
        [len(data.datacenter_user_ids), len(data.train_user_ids),
         len(data.validation_user_ids), len(data.test_user_ids)],
        [600, 1919, 240, 240])
    self.assertEqual(sum(len(l) for _, l in data.examples.values()),
                     487_650 - 2999)


if __name__ == '__main__':
  absltest.main()
