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
"""The wheel holds the `tff_mixed` package alone, at `__version__`.

Builds the wheel offline (`pip wheel --no-build-isolation --no-index`, with
the test interpreter's setuptools) from a copy of the files a build reads,
so the repository gets no `build/` or `.egg-info`. Installing it into a
fresh virtualenv with README.md's command, and running the README's
quickstart there, is scripts/check_wheel_install.sh (`make wheel-check`; it
downloads TensorFlow, so it is not a unit test).
"""

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version() -> str:
  with open(os.path.join(_REPO, 'tff_mixed', '__init__.py')) as f:
    for node in ast.parse(f.read()).body:
      if (isinstance(node, ast.Assign)
          and [t.id for t in node.targets] == ['__version__']):
        return node.value.value
  raise AssertionError('no __version__ in tff_mixed/__init__.py')


class WheelTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.dir = tempfile.mkdtemp()
    src = os.path.join(cls.dir, 'src')
    shutil.copytree(os.path.join(_REPO, 'tff_mixed'),
                    os.path.join(src, 'tff_mixed'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    for name in ('pyproject.toml', 'README.md'):
      shutil.copy(os.path.join(_REPO, name), src)
    out = os.path.join(cls.dir, 'dist')
    result = subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-cache-dir',
         '--no-build-isolation', '--no-index', '-w', out, src],
        capture_output=True, text=True, timeout=300, check=False)
    if result.returncode:
      raise AssertionError(f'pip wheel failed: {result.stderr[-3000:]}')
    (wheel,) = os.listdir(out)
    cls.wheel = wheel
    with zipfile.ZipFile(os.path.join(out, wheel)) as z:
      cls.names = z.namelist()
      info = [n for n in cls.names if n.endswith('.dist-info/METADATA')]
      cls.metadata = z.read(info[0]).decode()

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.dir, ignore_errors=True)
    super().tearDownClass()

  def test_named_by_the_one_version(self):
    self.assertEqual(self.wheel, f'tff_mixed-{_version()}-py3-none-any.whl')
    self.assertIn(f'\nVersion: {_version()}\n', self.metadata)

  def test_holds_tff_mixed_only_and_no_data(self):
    other = [n for n in self.names
             if not re.match(r'tff_mixed/.*\.py$|tff_mixed-[^/]+\.dist-info/',
                             n)]
    self.assertEqual(other, [])
    # Every module of the package is in it.
    for directory, _, files in os.walk(os.path.join(_REPO, 'tff_mixed')):
      for f in files:
        if f.endswith('.py'):
          rel = os.path.relpath(os.path.join(directory, f), _REPO)
          self.assertIn(rel, self.names)

  def test_requires_tff_087(self):
    self.assertIn('Requires-Dist: tensorflow-federated==0.87.0',
                  self.metadata)

  def test_overrides_replace_the_unservable_jaxlib_pin(self):
    with open(os.path.join(_REPO, 'overrides.txt')) as f:
      pins = [l.strip() for l in f if l.strip() and not l.startswith('#')]
    self.assertIn('jaxlib==0.4.13', pins)
    with open(os.path.join(_REPO, 'requirements.txt')) as f:
      self.assertIn('jaxlib==0.4.13', f.read().split())


if __name__ == '__main__':
  absltest.main()
