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
import textwrap

from absl.testing import absltest

from tests import script_modules
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PYTHON_DIRS = ('tff_mixed', 'experiments', 'benchmarks', 'examples',
                'tests')
_SRCS = re.compile(r'\bsrcs\s*=\s*(\[[^\]]*\])', re.S)


def declared_sources(build_file: str) -> set[str]:
  """The files listed in `srcs` of the rules of one BUILD file: its own
  files, not the labels of targets (a filegroup's `//pkg:sources`)."""
  with open(build_file) as f:
    text = f.read()
  sources = set()
  for match in _SRCS.finditer(text):
    sources.update(entry for entry in ast.literal_eval(match.group(1))
                   if not entry.startswith((':', '//', '@')))
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


def _check_bazel_deps():
  """scripts/check_bazel_deps.py, which CI runs on Bazel's own graph."""
  return script_modules.load('check_bazel_deps')


# `bazel query --output=xml`'s shape: a test on a library that imports
# another library, and a filegroup of data.
_QUERY = """<?xml version="1.1" encoding="UTF-8" standalone="no"?>
<query version="2">
  <rule class="py_test" name="//tests:a_test">
    <list name="srcs"><label value="//tests:a_test.py"/></list>
    <list name="deps"><label value="//tff_mixed/core:a"/></list>
    <list name="data"><label value="//:docs"/></list>
  </rule>
  <rule class="py_library" name="//tff_mixed/core:a">
    <list name="srcs"><label value="//tff_mixed/core:a.py"/></list>
    <list name="deps"><label value="//tff_mixed/core:b"/></list>
  </rule>
  <rule class="py_library" name="//tff_mixed/core:b">
    <list name="srcs"><label value="//tff_mixed/core:b.py"/></list>
  </rule>
  <rule class="filegroup" name="//:docs">
    <list name="srcs"><label value="//:notes.py"/></list>
  </rule>
</query>"""

_SOURCES = {
    # check_bazel_deps: not run (the sources of the graph above).
    'tests/a_test.py': textwrap.dedent('''
        import numpy
        from tff_mixed.core import a

        def later():
          del numpy
          from tff_mixed.core import b  # Only when it runs.

        SCRIPT = """
            import json
            import importlib
            importlib.import_module('tff_mixed.core.b')
        """
        '''),
    'tff_mixed/core/a.py': 'from tff_mixed.core import b\n',
    'tff_mixed/core/b.py': 'import json\n',
    'tff_mixed/core/__init__.py': '',
    'notes.py': 'import tff_mixed.core.a\n',
}


class BazelTargetsTest(absltest.TestCase):

  def test_deps_check_passes_a_complete_graph(self):
    check = _check_bazel_deps()
    rules = check.parse_query(_QUERY)
    self.assertEqual(rules['//tests:a_test'].deps,
                     ('//tff_mixed/core:a', '//:docs'))
    self.assertEqual(
        check.runfiles(rules, '//tests:a_test'),
        {'tests/a_test.py', 'tff_mixed/core/a.py', 'tff_mixed/core/b.py',
         'notes.py'})
    self.assertEqual(
        check.imported_modules(_SOURCES['tests/a_test.py'],
                               _SOURCES.__contains__),
        {'tff_mixed.core.a', 'tff_mixed.core.b'})
    self.assertEqual(
        check.missing_deps(rules, _SOURCES.get, _SOURCES.__contains__), [])

  def test_deps_check_finds_imports_in_functions_and_scripts(self):
    check = _check_bazel_deps()
    # The test's library no longer depends on b: a's import, the test
    # function's and its script's import_module all miss it.
    query = _QUERY.replace(
        '<list name="deps"><label value="//tff_mixed/core:b"/></list>', '')
    tests_source = _SOURCES['tests/a_test.py']
    for cut in ('', 'from tff_mixed.core import b', "import_module('"):
      sources = dict(_SOURCES)
      if cut:  # Only the script's, then only the function's import left.
        sources['tests/a_test.py'] = '\n'.join(
            line for line in tests_source.splitlines() if cut not in line)
      problems = check.missing_deps(check.parse_query(query), sources.get,
                                    sources.__contains__)
      self.assertEqual(problems, [
          '//tests:a_test: tests/a_test.py imports tff_mixed.core.b, which '
          'none of its deps provide',
          '//tff_mixed/core:a: tff_mixed/core/a.py imports tff_mixed.core.b, '
          'which none of its deps provide'], cut)

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
                ' "gone.py"],\n)\nfilegroup(\n    name = "all",\n    srcs = '
                '[":listed", "//other:sources"],\n)\n')
      untargeted, dangling = missing_targets(root)
    self.assertEqual(untargeted, ['tff_mixed/forgotten.py'])
    self.assertEqual(dangling, ['tff_mixed/gone.py'])


if __name__ == '__main__':
  absltest.main()
