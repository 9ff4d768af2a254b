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
"""CelebA split by identity for the hybrid experiment (the paper's table 2).

On small generated `celeba.sqlite` files (tests/celeba_testing.py), read
back through TFF's own CelebA loader for the expected faces and labels.
"""

import csv
import os
import shutil
import tempfile

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_records
from tests import binary_runs
from tests import celeba_testing
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.tasks import celeba_database
from tff_mixed.tasks import celeba_hybrid
from tff_mixed.tasks import hybrid_images

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRAIN_CLIENTS, _TEST_CLIENTS, _PER_CLIENT = 30, 10, 3


class _CacheTest(absltest.TestCase):
  """One generated database (40 identities of 3 faces) for the class."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.directory = tempfile.mkdtemp()
    cls.cache_dir = celeba_testing.make_fake_celeba_cache(
        os.path.join(cls.directory, 'celeba'), _TRAIN_CLIENTS, _TEST_CLIENTS,
        _PER_CLIENT, seed=3)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.directory, ignore_errors=True)
    super().tearDownClass()


class LoadIdentityImagesTest(_CacheTest):

  def test_faces_labels_and_identities_are_tff_loaders(self):
    # 42 divides 84: the area average is the mean of 2x2 pixel blocks.
    data = celeba_hybrid.load_identity_images(self.cache_dir, 42)
    num_faces = (_TRAIN_CLIENTS + _TEST_CLIENTS) * _PER_CLIENT
    self.assertEqual(data.images.shape, (num_faces, 42, 42, 3))
    self.assertEqual(data.images.dtype, np.float32)
    self.assertEqual(data.labels.dtype, np.int32)
    self.assertLen(data.identities, num_faces)
    train, test = celeba_database.load_client_data(self.cache_dir)
    self.assertCountEqual(set(data.identities),
                          train.client_ids + test.client_ids)
    for client_data in (train, test):
      for client_id in client_data.client_ids:
        # Each face as (label, image), in an order both sides share.
        expected = sorted(
            ((int(e['smiling']), hybrid_images.downsample_images(
                e['image'].numpy()[None] / 255.0, 2)[0])
             for e in client_data.create_tf_dataset_for_client(client_id)),
            key=lambda face: (face[0], float(face[1].sum())))
        rows = np.flatnonzero(data.identities == client_id)
        got = sorted(((int(data.labels[r]), data.images[r]) for r in rows),
                     key=lambda face: (face[0], float(face[1].sum())))
        self.assertEqual([label for label, _ in got],
                         [label for label, _ in expected], client_id)
        for (_, image), (_, want) in zip(got, expected, strict=True):
          np.testing.assert_allclose(image, want, atol=1e-5)
    # Both labels occur, so the check above compares real Smiling values.
    self.assertEqual(set(data.labels), {0, 1})

  def test_any_size_is_an_area_average(self):
    data = celeba_hybrid.load_identity_images(self.cache_dir, 32)
    self.assertEqual(data.images.shape[1:], (32, 32, 3))
    self.assertBetween(float(data.images.min()), 0.0, 1.0)
    self.assertBetween(float(data.images.max()), 0.0, 1.0)
    # Averaging keeps each face's mean brightness.
    full = celeba_hybrid.load_identity_images(self.cache_dir, 84)
    np.testing.assert_allclose(data.images.mean(axis=(1, 2)),
                               full.images.mean(axis=(1, 2)), atol=1e-4)

  def test_bad_inputs(self):
    with self.assertRaisesRegex(ValueError, 'image size'):
      celeba_hybrid.load_identity_images(self.cache_dir, 100)
    with self.assertRaisesRegex(celeba_database.DataNotFoundError,
                                'does not exist'):
      celeba_hybrid.load_identity_images(
          os.path.join(self.directory, 'missing'), 16)


class BuildIdentitySplitTest(_CacheTest):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.data = celeba_hybrid.load_identity_images(cls.cache_dir, 8)

  def _split(self, **kwargs):
    args = dict(num_clients=20, server_size=4, eval_size=15, seed=0,
                validation_size=5)
    args.update(kwargs)
    return celeba_hybrid.build_identity_split(self.data, **args)

  def _identities(self, rows):
    return set(self.data.identities[rows])

  def test_no_identity_is_in_two_sets(self):
    split = self._split()
    clients = [self._identities(c) for c in split.client_indices]
    # One identity per client, all its faces.
    for client, rows in zip(clients, split.client_indices):
      self.assertLen(client, 1)
      self.assertLen(rows, _PER_CLIENT)
    client_identities = set.union(*clients)
    self.assertLen(client_identities, 20)
    sets = [client_identities, self._identities(split.server_indices),
            self._identities(split.validation_indices),
            self._identities(split.eval_indices)]
    for i, a in enumerate(sets):
      self.assertNotEmpty(a)
      for b in sets[i + 1:]:
        self.assertEmpty(a & b)

  def test_sizes_labels_and_arrays(self):
    split = self._split()
    self.assertEqual(split.num_clients, 20)
    self.assertLen(split.server_indices, 4)
    self.assertLen(split.validation_indices, 5)
    # Held out: 5 identities (15 faces); the server takes 2 of them (4
    # faces, the second cut short), validation 2 (5 faces), evaluation the
    # fifth's 3.
    self.assertLen(split.eval_indices, _PER_CLIENT)
    np.testing.assert_array_equal(split.labels, self.data.labels)
    np.testing.assert_array_equal(split.server_y,
                                  self.data.labels[split.server_indices])
    np.testing.assert_array_equal(split.eval_x,
                                  self.data.images[split.eval_indices])
    np.testing.assert_array_equal(
        split.validation_y, self.data.labels[split.validation_indices])
    self.assertIn('20 clients, one identity each', split.description)
    self.assertIn('no identity in two sets', split.description)

  def test_deterministic_per_seed(self):
    a, b, other = self._split(), self._split(), self._split(seed=1)
    for field in ('server_indices', 'validation_indices', 'eval_indices'):
      np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    for x, y in zip(a.client_indices, b.client_indices, strict=True):
      np.testing.assert_array_equal(x, y)
    self.assertEqual(a.description, b.description)
    self.assertNotEqual(
        [tuple(c) for c in a.client_indices],
        [tuple(c) for c in other.client_indices])

  def test_clients_and_server_do_not_depend_on_validation(self):
    a, b = self._split(validation_size=0), self._split(validation_size=5)
    np.testing.assert_array_equal(a.server_indices, b.server_indices)
    for x, y in zip(a.client_indices, b.client_indices, strict=True):
      np.testing.assert_array_equal(x, y)
    self.assertEmpty(a.validation_indices)

  def test_too_few_identities_say_how_many(self):
    with self.assertRaisesRegex(ValueError, r'num_clients <= 35'):
      self._split(num_clients=36)
    with self.assertRaisesRegex(ValueError, 'smaller eval_size'):
      self._split(eval_size=200)
    with self.assertRaisesRegex(ValueError, 'larger than server_size'):
      self._split(eval_size=9)
    # The server and validation identities use up the held-out ones.
    with self.assertRaisesRegex(ValueError, 'No identity is left'):
      self._split(server_size=5, validation_size=5, eval_size=11)
    with self.assertRaisesRegex(ValueError, 'num_clients'):
      self._split(num_clients=0)


def _run(*args):
  """Runs the binary; output to files, not pipes (a TFF worker left behind
  would hold a pipe open)."""
  directory = tempfile.mkdtemp()
  try:
    paths = [os.path.join(directory, n) for n in ('out.txt', 'err.txt')]
    returncode = preloaded_python.shared().run(
        'experiments.hybrid_async.hybrid_async_main', args, cwd=_REPO,
        stdout_path=paths[0], stderr_path=paths[1], timeout=900)
    texts = []
    for path in paths:
      with open(path) as f:
        texts.append(f.read())
    return returncode, texts[0], texts[1]
  finally:
    shutil.rmtree(directory, ignore_errors=True)


@binary_runs.runs_binaries
class HybridCelebaBinaryTest(_CacheTest):

  def test_two_round_run(self):
    output_dir = os.path.join(temp_dirs.temp_dir(self), 'out')
    results = os.path.join(output_dir, 'RESULTS.md')
    methods = ['center', 'fed_ft', 'hfcl', 'feddf_id', 'feddle_id', 'fedavg',
               'fedbuff', 'feddle_ood']
    returncode, stdout, stderr = _run(
        '--data=celeba', f'--celeba_cache_dir={self.cache_dir}',
        f'--methods={",".join(methods)}', '--seeds=0', '--delay_stds=0.5',
        '--rounds=2', '--num_clients=20', '--clients_per_round=2',
        '--server_size=6', '--eval_size=30', '--image_size=12',
        '--client_batch_size=4', '--server_steps=1',
        '--feddle_search_steps=1', '--conv_filters=2,4,4', '--dense_units=8',
        '--eval_every=1', '--buffer_size=2', f'--output_dir={output_dir}',
        f'--results_markdown={results}', '--results_section=hybrid_celeba')
    self.assertEqual(returncode, 0, stderr[-3000:])
    self.assertIn('identities, N(0.5)', stdout)
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    self.assertEqual({r['method'] for r in rows}, set(methods))
    for r in rows:
      self.assertEqual(r['alpha'], 'identities')
      self.assertBetween(float(r['accuracy']), 0.0, 1.0)
    self.assertEqual(
        sorted(os.listdir(os.path.join(output_dir, 'runs'))),
        sorted(hybrid_records.run_key(m, hybrid_config.Setting(None, 0.5), 0)
               + '.json' for m in methods))
    with open(results) as f:
      report = f.read()
    self.assertIn('Zhu et al., table 2', report)
    self.assertIn('CelebA, label Smiling, at 12x12', report)
    self.assertIn('20 clients, one identity each', report)


if __name__ == '__main__':
  absltest.main()
