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
"""The library's shape, as docs/ARCHITECTURE.md states it.

Reads the sources of tff_mixed/ (nothing is imported or run) and checks the
rules a new module must follow: the layers import only downwards, modules and
functions stay short, every package says what it holds, comments cite
papers rather than project notes, and the library imports nothing of the
experiments, benchmarks, examples or tests that sit on top of it. The
modules of experiments/ stay short too, at a looser bound.
"""

import ast
import os
import re

from absl.testing import absltest

_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), 'tff_mixed')

# Bottom to top (docs/ARCHITECTURE.md, "Layers"): a module may import its own
# package and the packages of lower layers only.
LAYERS = {
    # Where TFF runs: its worker processes, local or remote.
    'tff_mixed.runtime': 0,
    'tff_mixed.worker_processes': 1,
    'tff_mixed.remote': 2,
    # The components of the processes, and the models.
    'tff_mixed.core': 1,
    'tff_mixed.models': 2,
    # The fast simulation of a cohort, a layer over core's components (core
    # imports none of it), and what a client of a round costs.
    'tff_mixed.simulation': 2,
    'tff_mixed.costs': 2,
    # Running processes: the loop, checkpoints, reports.
    'tff_mixed.training': 3,
    # What users build and run. Synchronous and asynchronous algorithms sit
    # side by side, each with its own registry: neither imports the other.
    'tff_mixed.tasks': 4,
    'tff_mixed.asynchronous': 4,
    'tff_mixed.algorithms': 4,
    # Reading runs: the algorithm advisor (imports the registry's names).
    'tff_mixed.advisor': 5,
    'tff_mixed': 6,  # The facade, tff_mixed/__init__.py.
}
# The trees on top of the library, which it never imports: the binaries and
# what they share (experiments/), benchmarks/, examples/ and tests/.
OUTSIDE_LIBRARY = ('experiments', 'benchmarks', 'examples', 'tests')
MAX_MODULE_LINES = 500
# experiments/ holds binaries' flag tables and report text beside their
# logic, so its bound is looser; a module past it holds more than one
# concept and is split by concept.
MAX_EXPERIMENT_MODULE_LINES = 600
# Modules of experiments/ allowed past the bound, at most at these lengths:
# one that grows fails, and so does one that fits, to leave this list.
LONG_EXPERIMENT_MODULES = {}
# Lines from `def` to the function's end, its docstring not counted.
MAX_FUNCTION_LINES = 80


def _sources():
  """Yields (dotted module name, path, text) for every module of tff_mixed."""
  for directory, _, files in os.walk(_ROOT):
    for name in sorted(files):
      if not name.endswith('.py'):
        continue
      path = os.path.join(directory, name)
      relative = os.path.relpath(path, os.path.dirname(_ROOT))[:-3]
      module = relative.replace(os.sep, '.')
      if module.endswith('.__init__'):
        module = module[:-len('.__init__')]
      with open(path) as f:
        yield module, path, f.read()


def _experiment_sources():
  """Yields (path relative to experiments/, line count) of its modules."""
  experiments = os.path.join(os.path.dirname(_ROOT), 'experiments')
  for directory, _, files in os.walk(experiments):
    for name in sorted(f for f in files if f.endswith('.py')):
      path = os.path.join(directory, name)
      with open(path) as f:
        yield os.path.relpath(path, experiments), len(f.read().splitlines())


def _long_modules(lengths, bound, allowed):
  """The modules of `lengths` ({path: lines}) past `bound`, or past their
  length in `allowed`, and the allowed ones that fit it now."""
  long_modules = [f'{path}: {lines} lines' for path, lines in lengths.items()
                  if lines > allowed.get(path, bound)]
  fitting = [f'{path}: {lengths[path]} lines, within {bound}'
             for path in allowed if path in lengths and lengths[path] <= bound]
  return long_modules, fitting


def _unit(module):
  """The layer unit (package or top-level module) a dotted name belongs to."""
  parts = module.split('.')
  if len(parts) == 1:
    return 'tff_mixed'
  return '.'.join(parts[:2])


def _imported_units(tree):
  """The tff_mixed units a module's imports name."""
  units = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
      if node.module == 'tff_mixed':
        names = [f'tff_mixed.{alias.name}' for alias in node.names]
      else:
        names = [node.module]
    else:
      continue
    units.update(_unit(name) for name in names
                 if name == 'tff_mixed' or name.startswith('tff_mixed.'))
  return units


# Core's process and the per-client components it composes.
_GROUP_FREE_MODULES = tuple(
    f'tff_mixed.core.{name}' for name in (
        'mixed_process', 'distributors', 'aggregators', 'client_work',
        'central_work', 'finalizer'))


def _group_names(tree):
  """The names and attributes in a module's code that speak of groups."""
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Name):
      names.add(node.id)
    elif isinstance(node, ast.Attribute):
      names.add(node.attr)
    elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.arg)):
      names.add(getattr(node, 'name', None) or node.arg)
  # Not "member" alone: TFF's types have members too.
  return {n for n in names if any(
      w in n.lower()
      for w in ('group', 'lockstep', 'member_records', 'receive_members'))}


def _imported_outside(tree):
  """The modules of OUTSIDE_LIBRARY that a module's imports name."""
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names.add(node.module)
  return {name for name in names if name.split('.')[0] in OUTSIDE_LIBRARY}


def _function_lengths(tree):
  """Yields (name, first line, lines without the docstring)."""
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      length = node.end_lineno - node.lineno + 1
      first = node.body[0]
      if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
          and isinstance(first.value.value, str)):
        length -= first.end_lineno - first.lineno + 1
      yield node.name, node.lineno, length


class StructureTest(absltest.TestCase):

  def test_every_unit_has_a_layer(self):
    for module, path, _ in _sources():
      self.assertIn(_unit(module), LAYERS, f'{path}: no layer in LAYERS')

  def test_imports_run_only_downwards(self):
    upward = []
    for module, path, text in _sources():
      unit = _unit(module)
      for target in _imported_units(ast.parse(text)):
        if target != unit and LAYERS.get(target, 99) >= LAYERS[unit]:
          upward.append(f'{path} imports {target}')
    self.assertEmpty(upward)

  def test_synchronous_and_asynchronous_algorithms_import_neither_other(
      self):
    # Each registry names its own kind only (`tff_mixed.registry`,
    # `tff_mixed.async_registry`); the facade offers both.
    self.assertEqual(LAYERS['tff_mixed.algorithms'],
                     LAYERS['tff_mixed.asynchronous'])
    crossing, read = [], set()
    for module, path, text in _sources():
      unit = _unit(module)
      others = {'tff_mixed.algorithms', 'tff_mixed.asynchronous'} - {unit}
      if len(others) == 1:
        read.add(unit)
        crossing.extend(f'{path} imports {target}' for target in
                        _imported_units(ast.parse(text)) & others)
    self.assertEqual(read, {'tff_mixed.algorithms', 'tff_mixed.asynchronous'})
    self.assertEmpty(crossing)

  def test_core_components_hold_no_group_simulation(self):
    # The fast simulation is a layer over the components (`simulation/`):
    # core's process and the per-client components it composes name no
    # group, lockstep or group member's records in their code (docstrings aside), so a
    # round's federated wiring is the same in both modes.
    self.assertLess(LAYERS['tff_mixed.core'], LAYERS['tff_mixed.simulation'])
    found = []
    for module, path, text in _sources():
      if module in _GROUP_FREE_MODULES:
        found.extend(f'{path}: {name}'
                     for name in sorted(_group_names(ast.parse(text))))
    self.assertEmpty(found)
    self.assertEqual(
        _group_names(ast.parse('def f(a):\n  """A group."""\n'
                               '  return a.member_records, is_group(a)\n')),
        {'member_records', 'is_group'})

  def test_library_imports_nothing_on_top_of_it(self):
    outside = [f'{path} imports {name}' for _, path, text in _sources()
               for name in sorted(_imported_outside(ast.parse(text)))]
    self.assertEmpty(outside)

  def test_modules_are_short(self):
    long_modules = [
        f'{path}: {len(text.splitlines())} lines'
        for _, path, text in _sources()
        if len(text.splitlines()) > MAX_MODULE_LINES]
    self.assertEmpty(long_modules)

  def test_functions_are_short(self):
    long_functions = []
    for _, path, text in _sources():
      for name, line, length in _function_lengths(ast.parse(text)):
        if length > MAX_FUNCTION_LINES:
          long_functions.append(f'{path}:{line} {name}: {length} lines')
    self.assertEmpty(long_functions)

  def test_every_package_says_what_it_holds(self):
    silent = [path for module, path, text in _sources()
              if path.endswith('__init__.py')
              and ast.get_docstring(ast.parse(text)) is None]
    self.assertEmpty(silent)

  def test_comments_cite_papers_not_project_notes(self):
    pattern = re.compile(r'seed 00\d|ANCHORS\.md')
    hits = [f'{path}:{number}' for _, path, text in _sources()
            for number, line in enumerate(text.splitlines(), 1)
            if pattern.search(line)]
    self.assertEmpty(hits)

  def test_the_checks_can_fail(self):
    # Imports of other units (one inside a function, which the layer checks
    # read too), imports of the trees on top of the library and a long
    # function, as the checks above see them.
    # check_bazel_deps: not run (a fixture for the parsers here).
    tree = ast.parse('from tff_mixed import advisor\n'
                     'from experiments.common import cli\n'
                     'import benchmarks.round_time, numpy\n'
                     'def f():\n  """Doc."""\n'
                     '  from tff_mixed.asynchronous import builders\n'
                     + '  x = 1\n' * 80)
    self.assertEqual(_imported_units(tree),
                     {'tff_mixed.advisor', 'tff_mixed.asynchronous'})
    self.assertEqual(_imported_outside(tree),
                     {'experiments.common', 'benchmarks.round_time'})
    self.assertEqual([length for _, _, length in _function_lengths(tree)],
                     [82])


def _top_level_imports(tree):
  """The modules a module imports at its top level (not in functions)."""
  names = set()
  for node in tree.body:
    if isinstance(node, ast.Import):
      names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names.add(node.module)
  return names


class ExperimentsImportTest(absltest.TestCase):

  def test_matplotlib_only_at_the_first_figure(self):
    # Its import is most of a binary's start after TensorFlow's (about a
    # second): experiments/common/plots.py imports it when a figure is drawn,
    # so a run refused for a bad flag answers at once.
    experiments = os.path.join(os.path.dirname(_ROOT), 'experiments')
    hits, packages = [], set()
    for directory, _, files in os.walk(experiments):
      for name in sorted(f for f in files if f.endswith('.py')):
        path = os.path.join(directory, name)
        packages.add(os.path.relpath(directory, experiments))
        with open(path) as f:
          imports = _top_level_imports(ast.parse(f.read()))
        if any(n.split('.')[0] == 'matplotlib' for n in imports):
          hits.append(os.path.relpath(path, experiments))
    self.assertEmpty(hits)
    # Every study's sources were read (Bazel: the test's `data`).
    self.assertContainsSubset({'common', 'celeba_smile', 'hybrid_async',
                               'label_imbalance', 'movielens',
                               'stackoverflow_wikipedia'}, packages)
    self.assertEqual(_top_level_imports(ast.parse(
        'import matplotlib.pyplot\ndef f():\n  import numpy\n')),
                     {'matplotlib.pyplot'})

  def test_experiments_use_the_public_api_not_core(self):
    # The binaries are what users copy: they reach the library through its
    # public names (`tff_mixed`, `tff_mixed.simulation`, `tff_mixed.costs`,
    # ...), never through the processes' internals in `tff_mixed.core`.
    experiments = os.path.join(os.path.dirname(_ROOT), 'experiments')
    hits = []
    for directory, _, files in os.walk(experiments):
      for name in sorted(f for f in files if f.endswith('.py')):
        path = os.path.join(directory, name)
        with open(path) as f:
          if 'tff_mixed.core' in _imported_units(ast.parse(f.read())):
            hits.append(os.path.relpath(path, experiments))
    self.assertEmpty(hits)
    self.assertEqual(_imported_units(ast.parse(
        'from tff_mixed.core import client_work\nfrom tff_mixed import simulation'
        '\n')), {'tff_mixed.core', 'tff_mixed.simulation'})


class ExperimentModulesTest(absltest.TestCase):

  def test_modules_are_short(self):
    lengths = dict(_experiment_sources())
    # Every study's sources were read (Bazel: the test's `data`).
    self.assertContainsSubset(
        {os.path.join('hybrid_async', 'hybrid_async_lib.py'),
         os.path.join('movielens', 'movielens_lib.py')}, lengths)
    long_modules, fitting = _long_modules(
        lengths, MAX_EXPERIMENT_MODULE_LINES, LONG_EXPERIMENT_MODULES)
    self.assertEmpty(long_modules)
    self.assertEmpty(fitting)

  def test_the_length_check_can_fail(self):
    lengths = {'a.py': 600, 'b.py': 601, 'c.py': 700, 'd.py': 650}
    long_modules, fitting = _long_modules(lengths, 600,
                                          {'c.py': 690, 'd.py': 650})
    # Past the bound, and past its allowed length.
    self.assertEqual(long_modules, ['b.py: 601 lines', 'c.py: 700 lines'])
    self.assertEmpty(fitting)
    _, fitting = _long_modules({'d.py': 590}, 600, {'d.py': 650})
    self.assertEqual(fitting, ['d.py: 590 lines, within 600'])


if __name__ == '__main__':
  absltest.main()
