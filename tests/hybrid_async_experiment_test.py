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
"""The hybrid asynchronous binary end to end on generated CIFAR-format data.

A small npz of random JPEG images in the CIFAR-10 file format stands in for
the client images; scikit-learn's digits are the out-of-domain server set.
The binary runs in a subprocess (absl flags are process-global).
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from experiments.hybrid_async import hybrid_async_lib

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _temp_dir(test: absltest.TestCase) -> str:
  path = tempfile.mkdtemp()
  test.addCleanup(shutil.rmtree, path, ignore_errors=True)
  return path


def _write_npz(path: str, num_images: int = 240, seed: int = 0) -> str:
  """Random 32x32 JPEGs, labels 0..9, in the npz layout of the loader."""
  rng = np.random.default_rng(seed)
  labels = np.arange(num_images) % 10
  files = []
  for label in labels:
    # A class-dependent mean colour, so the task is learnable.
    image = np.clip(rng.normal(25 * label, 30, (32, 32, 3)), 0, 255)
    files.append(tf.io.encode_jpeg(image.astype(np.uint8)).numpy())
  offsets = np.cumsum([0] + [len(f) for f in files]).astype(np.int64)
  np.savez(path, jpeg_bytes=np.frombuffer(b''.join(files), np.uint8),
           jpeg_offsets=offsets, label=labels.astype(np.int8))
  return path


def _run(*args, timeout=900):
  return subprocess.run(
      [sys.executable, '-m', 'experiments.hybrid_async.hybrid_async_main',
       *args], cwd=_REPO, capture_output=True, text=True, timeout=timeout,
      check=False)


_SMALL = ('--rounds=2', '--num_clients=12', '--clients_per_round=2',
          '--delay_std=0.5', '--server_size=30', '--eval_size=80',
          '--client_steps=2', '--client_batch_size=4', '--server_steps=1',
          '--feddle_search_steps=1', '--conv_filters=2,4,4',
          '--dense_units=8', '--eval_every=1', '--buffer_size=2')


class HybridAsyncBinaryTest(absltest.TestCase):

  def test_two_round_smoke_run_of_every_method(self):
    directory = _temp_dir(self)
    npz = _write_npz(os.path.join(directory, 'cifar.npz'))
    output_dir = os.path.join(directory, 'out')
    results = os.path.join(directory, 'RESULTS.md')
    run = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
               f'--output_dir={output_dir}', f'--results_markdown={results}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    for method in hybrid_async_lib.METHODS:
      self.assertIn(method, run.stdout)
      method_rows = [r for r in rows if r['method'] == method]
      self.assertEqual([int(r['round']) for r in method_rows], [0, 1, 2])
      for r in method_rows:
        self.assertBetween(float(r['accuracy']), 0.0, 1.0)
    with open(os.path.join(output_dir, 'feddle_diagnostics.csv')) as f:
      diagnostics = list(csv.DictReader(f))
    self.assertEqual({d['method'] for d in diagnostics},
                     {'feddle_id', 'feddle_ood'})
    with open(results) as f:
      self.assertIn('Feddle and baselines', f.read())
    self.assertTrue(os.path.exists(os.path.join(output_dir, 'accuracy.png')))

  def test_bad_settings_fail_before_training(self):
    directory = _temp_dir(self)
    npz = _write_npz(os.path.join(directory, 'cifar.npz'), num_images=120)
    cases = [
        # Delays that would never arrive within the run.
        (['--delay_std=5'], 'delay'),
        # More clients per round than clients.
        (['--clients_per_round=20'], 'clients_per_round'),
        # CIFAR-10 requested but not given.
        (['--data=cifar10', '--cifar10_npz='], 'cifar10_npz'),
        # Out-of-domain methods without an out-of-domain set.
        (['--data=digits', '--cifar10_npz=', '--methods=feddle_ood'],
         'out-of-domain'),
    ]
    for extra, message in cases:
      run = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
                 f'--output_dir={directory}/out', *extra, timeout=300)
      self.assertEqual(run.returncode, 1, (extra, run.stderr[-2000:]))
      self.assertIn('error:', run.stderr)
      self.assertIn(message, run.stderr)
      self.assertNotIn('Traceback', run.stderr)


if __name__ == '__main__':
  absltest.main()
