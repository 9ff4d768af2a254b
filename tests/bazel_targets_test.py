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
"""Every Python module and test file in the tree has a Bazel target.

BUILD files cannot rot silently: a new `.py` file that no `py_library`,
`py_binary` or `py_test` in its package's BUILD lists fails this test, and so
does a BUILD entry naming a file that does not exist.
"""

import ast
import os
import re
import tempfile

from absl.testing import absltest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PYTHON_DIRS = ('tff_mixed', 'experiments', 'benchmarks', 'examples',
                'tests')
_SRCS = re.compile(r'\bsrcs\s*=\s*(\[[^\]]*\])', re.S)


def declared_sources(build_file: str) -> set[str]:
  """The files listed in `srcs` of the rules of one BUILD file."""
  with open(build_file) as f:
    text = f.read()
  sources = set()
  for match in _SRCS.finditer(text):
    sources.update(ast.literal_eval(match.group(1)))
  return sources


def missing_targets(root: str) -> tuple[list[str], list[str]]:
  """Returns (python files without target, BUILD entries without file)."""
  untargeted, dangling = [], []
  for top in _PYTHON_DIRS:
    for directory, dirs, files in os.walk(os.path.join(root, top)):
      dirs[:] = [d for d in dirs if not d.startswith(('.', '__pycache__'))]
      python_files = sorted(f for f in files if f.endswith('.py'))
      build = os.path.join(directory, 'BUILD')
      declared = declared_sources(build) if os.path.exists(build) else set()
      rel = os.path.relpath(directory, root)
      untargeted += [os.path.join(rel, f) for f in python_files
                     if f not in declared]
      dangling += [os.path.join(rel, f) for f in sorted(declared)
                   if not os.path.exists(os.path.join(directory, f))]
  return untargeted, dangling


class BazelTargetsTest(absltest.TestCase):

  def test_every_python_file_has_a_target(self):
    untargeted, dangling = missing_targets(_ROOT)
    self.assertEmpty(untargeted, 'Python files with no Bazel target; add them '
                     'to their package BUILD file')
    self.assertEmpty(dangling, 'BUILD files list sources that do not exist')

  def test_check_detects_a_missing_target(self):
    with tempfile.TemporaryDirectory() as root:
      package = os.path.join(root, 'tff_mixed')
      os.makedirs(package)
      for name in ('listed.py', 'forgotten.py'):
        with open(os.path.join(package, name), 'w') as f:
          f.write('')
      with open(os.path.join(package, 'BUILD'), 'w') as f:
        f.write('py_library(\n    name = "listed",\n    srcs = ["listed.py",'
                ' "gone.py"],\n)\n')
      untargeted, dangling = missing_targets(root)
    self.assertEqual(untargeted, ['tff_mixed/forgotten.py'])
    self.assertEqual(dangling, ['tff_mixed/gone.py'])


if __name__ == '__main__':
  absltest.main()
