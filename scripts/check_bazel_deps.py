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
"""Checks that every Bazel target's deps provide every module it imports.

  python scripts/check_bazel_deps.py [QUERY_XML]

Under `bazel test` a Python target sees only the files of its transitive
`deps` and `data` (its runfiles); an import of a first-party module
(`tff_mixed`, `experiments`, `benchmarks`, `examples`, `tests`) whose file
is not among them fails with `ModuleNotFoundError` when, and only when, that
line runs. This check reads the graph as Bazel itself resolved it
(`bazel query --output=xml`, run here unless a saved XML is given), and
parses every `import`, `from ... import` and literal
`importlib.import_module(...)` of each target's own sources, the ones inside
functions and inside string literals that are Python programs (the scripts
tests run with `python -c`; a literal marked `check_bazel_deps: not run`
on its first line or the line above is skipped) included, so it also catches imports that no
test executes. It
prints one line per missing module, `<target>: <source> imports <module>,
which none of its deps provide`, and exits 1 if there is any.

CI runs it instead of every test target a second time under Bazel (the
pytest run already runs each test; `make bazel-test` still runs them all
through Bazel). Run from the repository root.
"""

import ast
import os
import subprocess
import sys
import textwrap
from typing import NamedTuple
import xml.etree.ElementTree as ElementTree

FIRST_PARTY = ('tff_mixed', 'experiments', 'benchmarks', 'examples', 'tests')
QUERY = 'kind("py_.*|filegroup", //...)'
# On the line where a string literal starts, or the line above: Python code
# that no interpreter runs (a test's fixture for a parser).
# Exit statuses of main().
_EXIT_OK = 0
_EXIT_FAILED = 1
_SKIP = 'check_bazel_deps: not run'


class Rule(NamedTuple):
  """One Bazel rule: its own files and the labels it depends on.

  Attributes:
    srcs: Its files (repository-relative paths).
    deps: The labels of its `deps` and `data`.
    python: Whether it is a `py_*` rule (a filegroup's files are data only).
  """

  srcs: tuple[str, ...]
  deps: tuple[str, ...]
  python: bool = True


def label_path(label: str) -> str:
  """`//pkg/sub:file.py` -> `pkg/sub/file.py` (`//:x` -> `x`)."""
  package, _, name = label.lstrip('/').partition(':')
  return os.path.join(package, name) if package else name


def parse_query(xml_text: str) -> dict[str, Rule]:
  """Rules by label from `bazel query --output=xml`."""
  rules = {}
  for element in ElementTree.fromstring(xml_text).iter('rule'):
    lists = {child.get('name'): [label.get('value') for label in child]
             for child in element if child.tag == 'list'}
    rules[element.get('name')] = Rule(
        srcs=tuple(label_path(label) for label in lists.get('srcs', [])),
        deps=tuple(lists.get('deps', []) + lists.get('data', [])),
        python=element.get('class').startswith('py_'))
  return rules


def runfiles(rules: dict[str, Rule], label: str) -> set[str]:
  """The repository files of `label` and of everything it depends on."""
  files, seen, stack = set(), set(), [label]
  while stack:
    current = stack.pop()
    if current in seen:
      continue
    seen.add(current)
    if current in rules:
      files.update(rules[current].srcs)
      stack.extend(rules[current].deps)
    elif current.startswith('//'):
      files.add(label_path(current))  # A source file named directly.
  return files


def module_files(module: str) -> tuple[str, str]:
  """The two files that can define a dotted module name."""
  path = module.replace('.', '/')
  return path + '.py', path + '/__init__.py'


def _is_script(node: ast.AST) -> bool:
  """Whether a node is a string literal holding Python code with imports."""
  # Two lines at least: a program, not a one-line fragment a test parses.
  if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and
          'import ' in node.value and
          len([l for l in node.value.splitlines() if l.strip()]) > 1):
    return False
  try:
    ast.parse(textwrap.dedent(node.value))
  except SyntaxError:
    return False
  return True


def imported_modules(source: str, exists) -> set[str]:
  """First-party modules a Python source imports anywhere in its body.

  Args:
    source: The file's text.
    exists: `exists(path)` for a repository-relative path; `from a import b`
      names module `a.b` where a file defines it, else module `a`.
  """

  def is_module(name):
    return any(exists(f) for f in module_files(name))

  modules = set()
  lines = source.splitlines()
  for node in ast.walk(ast.parse(source)):
    names = []
    if _is_script(node) and _SKIP not in ''.join(
        lines[max(node.lineno - 2, 0):node.lineno]):
      # A program a test runs in a new interpreter (`python -c`) imports
      # from the same runfiles.
      modules.update(imported_modules(textwrap.dedent(node.value), exists))
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f'{node.module}.{alias.name}'
               if is_module(f'{node.module}.{alias.name}') else node.module
               for alias in node.names]
    elif (isinstance(node, ast.Call) and node.args and
          isinstance(node.args[0], ast.Constant) and
          isinstance(node.args[0].value, str) and
          getattr(node.func, 'attr', getattr(node.func, 'id', None)) ==
          'import_module'):
      names = [node.args[0].value]
    modules.update(n for n in names if n.split('.')[0] in FIRST_PARTY)
  return modules


def missing_deps(rules: dict[str, Rule], read, exists) -> list[str]:
  """One line per module a rule imports that its runfiles lack.

  Args:
    rules: `parse_query`'s rules.
    read: `read(path)`, a repository file's text.
    exists: `exists(path)`, whether a repository file exists.
  """
  problems = []
  for label in sorted(rules):
    available = None
    for src in rules[label].srcs:
      if not (rules[label].python and src.endswith('.py')):
        continue
      for module in sorted(imported_modules(read(src), exists)):
        available = available or runfiles(rules, label)
        if not any(f in available for f in module_files(module)):
          problems.append(f'{label}: {src} imports {module}, which none of '
                          'its deps provide')
  return problems


def _read(path: str) -> str:
  with open(path, encoding='utf-8') as f:
    return f.read()


def main(argv: list[str]) -> int:
  if len(argv) > 2:
    print('error: usage: check_bazel_deps.py [QUERY_XML]', file=sys.stderr)
    return _EXIT_FAILED
  if len(argv) == 2:
    xml_text = _read(argv[1])
  else:
    xml_text = subprocess.run(
        ['bazel', 'query', '--output=xml', QUERY], check=True,
        capture_output=True, text=True).stdout
  rules = parse_query(xml_text)
  problems = missing_deps(rules, _read, os.path.exists)
  for line in problems:
    print(f'error: {line}', file=sys.stderr)
  print(f'[bazel deps] {len(rules)} rules checked, '
        f'{len(problems)} missing module(s)', file=sys.stderr)
  return _EXIT_FAILED if problems else _EXIT_OK


if __name__ == '__main__':
  sys.exit(main(sys.argv))
