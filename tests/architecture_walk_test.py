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
"""docs/ARCHITECTURE.md's walks from `registry.build` to `next`, against
the code.

Each walk is a table of steps (file, functions, the name each function
takes the argument under). The code must bear every step out: the function
is defined in its file and has that parameter, it is called by name from a
function of an earlier step (the first function of a builder is reached
through the registry's `ALGORITHMS`), each further function of a step is
called by the one before it, and no file comes twice. Reads sources only;
nothing is imported or run.
"""

import ast
import functools
import os
import re

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DOC = os.path.join(_REPO, 'docs', 'ARCHITECTURE.md')
_SECTION = '## From `registry.build` to `next`'
_REGISTRY = 'tff_mixed/algorithms/registry.py'


class Step:
  """One row of a walk: `file`, its `functions`, their parameter names."""

  def __init__(self, number: int, path: str, functions: list[str],
               names: list[str]):
    self.number, self.path = number, path
    self.functions, self.names = functions, names


def _names(cell: str) -> list[str]:
  return re.findall(r'`([^`]+)`', cell)


def parse_walks(text: str) -> list[list[Step]]:
  """The tables of `_SECTION` in `text`, each a list of `Step`s."""
  start = text.index(_SECTION)
  end = text.find('\n## ', start + len(_SECTION))
  section = text[start:end if end >= 0 else len(text)]
  walks, current = [], None
  for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if line.startswith('| step'):
      current = []
      walks.append(current)
    elif (current is not None and line.startswith('|') and len(cells) == 4
          and cells[0].isdigit()):
      current.append(Step(int(cells[0]), _names(cells[1])[0],
                          _names(cells[2]), _names(cells[3])))
  return walks


@functools.lru_cache(maxsize=None)
def _module(path: str) -> ast.Module:
  with open(os.path.join(_REPO, path), encoding='utf-8') as f:
    return ast.parse(f.read())


def _function(path: str, name: str):
  for node in ast.walk(_module(path)):
    if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name == name):
      return node
  return None


def _parameters(function) -> set[str]:
  args = function.args
  names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
  names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
  return names


def _calls(function, name: str) -> bool:
  """Whether `function`'s body calls `name` (as `name(` or `x.name(`)."""
  for node in ast.walk(function):
    if isinstance(node, ast.Call):
      callee = node.func
      if ((isinstance(callee, ast.Name) and callee.id == name)
          or (isinstance(callee, ast.Attribute) and callee.attr == name)):
        return True
  return False


def _registered(builder: str, path: str) -> bool:
  """Whether `ALGORITHMS` in the registry names `<module>.<builder>`."""
  module = os.path.splitext(os.path.basename(path))[0]
  for node in ast.walk(_module(_REGISTRY)):
    if (isinstance(node, ast.Attribute) and node.attr == builder
        and isinstance(node.value, ast.Name) and node.value.id == module):
      return True
  return False


def problems(walk: list[Step]) -> list[str]:
  """Where `walk` and the code disagree; empty when the code bears it out."""
  found = []
  paths = [step.path for step in walk]
  repeated = sorted({p for p in paths if paths.count(p) > 1})
  if repeated:
    found.append(f'files entered twice: {repeated}')
  if [step.number for step in walk] != list(range(1, len(walk) + 1)):
    found.append('steps are not numbered 1, 2, ...')
  earlier = []
  for step in walk:
    if len(step.functions) != len(step.names):
      found.append(f'step {step.number}: one name per function')
      continue
    functions = [_function(step.path, f) for f in step.functions]
    for name, parameter, function in zip(step.functions, step.names,
                                         functions):
      if function is None:
        found.append(f'step {step.number}: no {name} in {step.path}')
      elif parameter not in _parameters(function):
        found.append(f'step {step.number}: {name} takes no {parameter}')
    if None in functions:
      continue
    first = step.functions[0]
    called = any(_calls(f, first) for f in earlier)
    # The registry reaches a builder through `ALGORITHMS`, not by name.
    dispatched = (step.number == 2 and walk[0].path == _REGISTRY
                  and _registered(first, step.path))
    if earlier and not (called or dispatched):
      found.append(f'step {step.number}: no earlier step calls {first}')
    for caller, callee, name in zip(functions, functions[1:],
                                    step.functions[1:]):
      if not _calls(caller, name):
        found.append(f'step {step.number}: {caller.name} does not call '
                     f'{name}')
    earlier.extend(functions)
  return found


class ArchitectureWalkTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    with open(_DOC, encoding='utf-8') as f:
      cls.walks = parse_walks(f.read())

  def test_walks_central_batch_size_and_client_optimizer(self):
    self.assertLen(self.walks, 2)
    for walk in self.walks:
      self.assertEqual(walk[0].path, _REGISTRY)
      self.assertEqual(walk[0].functions, ['build'])
      self.assertEqual(walk[-1].path, 'tff_mixed/core/mixed_process.py')
      self.assertEqual(walk[-1].functions[-1], '_build_next')

  def test_code_bears_out_each_walk(self):
    for walk in self.walks:
      self.assertEmpty(problems(walk))

  def test_finds_a_file_entered_twice(self):
    walk = self.walks[0]
    again = Step(len(walk) + 1, walk[2].path, walk[2].functions,
                 walk[2].names)
    self.assertIn(f"files entered twice: ['{walk[2].path}']",
                  problems(walk + [again]))

  def test_finds_a_step_no_earlier_step_calls(self):
    walk = self.walks[1]
    # client_work's builder is called from choices, not from the registry.
    skipped = [walk[0], walk[1]] + [
        Step(3, s.path, s.functions, s.names) for s in walk[5:6]]
    self.assertIn('step 3: no earlier step calls build_client_work',
                  problems(skipped))

  def test_finds_a_missing_function_and_parameter(self):
    step = self.walks[0][2]
    renamed = Step(step.number, step.path, ['check_mixed_args'], step.names)
    wrong = Step(step.number, step.path, step.functions, ['batch'])
    self.assertIn(f'step 3: no check_mixed_args in {step.path}',
                  problems(self.walks[0][:2] + [renamed]))
    self.assertIn('step 3: check_builder_args takes no batch',
                  problems(self.walks[0][:2] + [wrong]))


if __name__ == '__main__':
  absltest.main()
