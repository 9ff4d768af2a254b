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
"""Tests for `tff_mixed.tasks.dirichlet_partition`."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from tff_mixed.tasks import dirichlet_partition as dp


def _labels(num_classes, per_class, seed=0):
  """Shuffled labels, `per_class` examples of each class."""
  labels = np.repeat(np.arange(num_classes), per_class)
  return np.random.default_rng(seed).permutation(labels)


class DirichletPartitionTest(parameterized.TestCase):

  @parameterized.named_parameters(('skewed', 0.1), ('mild', 1.0),
                                  ('iid_like', 100.0))
  def test_every_index_exactly_once(self, alpha):
    labels = _labels(10, 200)
    parts = dp.dirichlet_partition(labels, num_clients=20, alpha=alpha,
                                   seed=1)
    self.assertLen(parts, 20)
    everything = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(everything), np.arange(2000))
    for part in parts:
      self.assertEqual(part.dtype, np.int64)
      self.assertGreaterEqual(part.size, 1)
      np.testing.assert_array_equal(part, np.sort(part))

  def test_large_alpha_is_near_uniform(self):
    labels = _labels(10, 1000)
    parts = dp.dirichlet_partition(labels, num_clients=10, alpha=100.0,
                                   seed=2)
    stats = dp.partition_stats(labels, parts)
    shares = stats.histograms / stats.sizes[:, None]
    self.assertLess(np.abs(shares - 0.1).max(), 0.06)
    self.assertLess(stats.max_class_share.mean(), 0.2)
    # Sizes near 1000 each too.
    self.assertLess(np.abs(stats.sizes - 1000).max(), 300)

  def test_small_alpha_is_skewed(self):
    labels = _labels(10, 500)
    parts = dp.dirichlet_partition(labels, num_clients=20, alpha=0.1, seed=3)
    stats = dp.partition_stats(labels, parts)
    self.assertGreater(stats.max_class_share.mean(), 0.6)

  def test_reproducible_from_seed(self):
    labels = _labels(5, 100)
    first = dp.dirichlet_partition(labels, 8, 0.5, seed=4)
    again = dp.dirichlet_partition(labels, 8, 0.5, seed=4)
    other = dp.dirichlet_partition(labels, 8, 0.5, seed=5)
    for a, b in zip(first, again):
      np.testing.assert_array_equal(a, b)
    self.assertFalse(all(a.size == b.size and np.array_equal(a, b)
                         for a, b in zip(first, other)))

  def test_min_examples_by_resampling(self):
    labels = _labels(10, 100)
    parts = dp.dirichlet_partition(labels, num_clients=20, alpha=0.3, seed=0,
                                   min_examples=10)
    self.assertGreaterEqual(min(p.size for p in parts), 10)
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)),
                                  np.arange(1000))

  def test_top_up_guarantees_min_examples(self):
    labels = _labels(10, 50)
    # Dir(0.01) over 100 clients leaves most of them empty.
    with self.assertRaisesRegex(
        ValueError, r'No Dirichlet\(alpha=0.01\) partition into 100 clients '
        r'gave every client min_examples=4 examples in max_tries=3 draws '
        r'\(largest smallest client: 0 examples\)'):
      dp.dirichlet_partition(labels, 100, 0.01, seed=0, min_examples=4,
                             max_tries=3)
    parts = dp.dirichlet_partition(labels, 100, 0.01, seed=0, min_examples=4,
                                   top_up=True)
    self.assertGreaterEqual(min(p.size for p in parts), 4)
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)),
                                  np.arange(500))
    # Exactly enough examples for everyone.
    parts = dp.dirichlet_partition(labels, 125, 0.01, seed=0, min_examples=4,
                                   top_up=True)
    self.assertEqual([p.size for p in parts], [4] * 125)

  def test_min_examples_zero_allows_empty_clients(self):
    labels = _labels(2, 5)
    parts = dp.dirichlet_partition(labels, 50, 0.1, seed=0, min_examples=0)
    self.assertLen(parts, 50)
    self.assertEqual(sum(p.size for p in parts), 10)
    stats = dp.partition_stats(labels, parts)
    empty = stats.sizes == 0
    self.assertTrue(empty.any())
    self.assertTrue(np.isnan(stats.max_class_share[empty]).all())

  def test_partition_stats_by_hand(self):
    labels = np.array([0, 0, 1, 2, 2, 2])
    stats = dp.partition_stats(labels, [np.array([0, 3, 4]),
                                        np.array([1, 2, 5])])
    np.testing.assert_array_equal(stats.classes, [0, 1, 2])
    np.testing.assert_array_equal(stats.histograms, [[1, 0, 2], [1, 1, 1]])
    np.testing.assert_array_equal(stats.sizes, [3, 3])
    np.testing.assert_allclose(stats.max_class_share, [2 / 3, 1 / 3])
    stats = dp.partition_stats(labels, [np.array([2])], classes=[2, 1, 0])
    np.testing.assert_array_equal(stats.histograms, [[0, 1, 0]])


class ValidationTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('no_clients', dict(num_clients=0),
       r'num_clients must be an integer >= 1, got 0'),
      ('zero_alpha', dict(alpha=0.0), r'alpha must be a finite number > 0, '
       r'got 0.0'),
      ('negative_alpha', dict(alpha=-1.0),
       r'alpha must be a finite number > 0, got -1.0'),
      ('nan_alpha', dict(alpha=float('nan')),
       r'alpha must be a finite number > 0, got nan'),
      ('negative_min', dict(min_examples=-1),
       r'min_examples must be an integer >= 0, got -1'),
      ('no_seed', dict(seed=None), r'seed must be an integer >= 0, got None'),
      ('zero_tries', dict(max_tries=0),
       r'max_tries must be an integer >= 1, got 0'),
      ('too_many_clients', dict(num_clients=5, min_examples=3),
       r'Cannot give num_clients=5 clients min_examples=3 examples each: '
       r'only 12 examples'),
      ('labels_2d', dict(labels=np.zeros((3, 4), np.int64)),
       r'labels must be 1-D, got shape \(3, 4\)'),
      ('float_labels', dict(labels=np.array([0.5, 1.0])),
       r'labels must be integers, got dtype float64'),
      ('no_labels', dict(labels=np.array([], np.int64)), r'labels is empty'),
  )
  def test_bad_arguments(self, overrides, message):
    args = dict(labels=_labels(3, 4), num_clients=2, alpha=1.0, seed=0)
    args.update(overrides)
    with self.assertRaisesRegex(ValueError, message):
      dp.dirichlet_partition(**args)

  def test_partition_stats_errors(self):
    labels = np.array([0, 1, 1])
    with self.assertRaisesRegex(ValueError, r'partition\[1\] has indices '
                                r'outside \[0, 3\)'):
      dp.partition_stats(labels, [np.array([0]), np.array([3])])
    with self.assertRaisesRegex(ValueError, r'Label 1 of partition\[0\] is '
                                r'not in classes'):
      dp.partition_stats(labels, [np.array([1])], classes=[0])


if __name__ == '__main__':
  absltest.main()
