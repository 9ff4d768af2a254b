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
"""Every absl flag of the experiment binaries has one definition.

Reads the sources of experiments/ (nothing is imported or run) and finds
each `flags.DEFINE_*('name', ...)` call: no name may be defined at two
places. A flag that several binaries take is defined once, in
`experiments/common/shared_flags.py` (or in a module of one experiment that
its binaries share), and each binary states its default there; two
definitions of one name would give it two helps, bounds or meanings, and a
process that imports both binaries a `DuplicateFlagError`.
"""

import ast
import collections
import os

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def flag_definitions(
    sources: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
  """(path, line) of each `*.DEFINE_*('name', ...)` call, by flag name.

  Args:
    sources: Python source text by path.
  """
  found = collections.defaultdict(list)
  for path, text in sorted(sources.items()):
    for node in ast.walk(ast.parse(text, path)):
      if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr.startswith('DEFINE_') and node.args
          and isinstance(node.args[0], ast.Constant)
          and isinstance(node.args[0].value, str)):
        found[node.args[0].value].append((path, node.lineno))
  return dict(found)


def defined_more_than_once(sources: dict[str, str]) -> list[str]:
  """One line per flag name defined at two or more places of `sources`."""
  return [f'--{name}: ' + ', '.join(f'{path}:{line}' for path, line in places)
          for name, places in sorted(flag_definitions(sources).items())
          if len(places) > 1]


def _sources(directory: str) -> dict[str, str]:
  """The text of every .py file under `directory`, by repository path."""
  sources = {}
  for root, _, files in os.walk(os.path.join(_REPO, directory)):
    for name in files:
      if name.endswith('.py'):
        path = os.path.join(root, name)
        with open(path) as f:
          sources[os.path.relpath(path, _REPO)] = f.read()
  return sources


class SharedFlagsTest(absltest.TestCase):

  def test_every_flag_of_the_experiments_has_one_definition(self):
    sources = _sources('experiments')
    definitions = flag_definitions(sources)
    # The scan sees the binaries' flags (a scan that found nothing would
    # pass as well).
    self.assertIn('rounds', definitions)
    self.assertEqual(defined_more_than_once(sources), [])
    self.assertEqual(
        [path for path, _ in definitions['rounds']],
        [os.path.join('experiments', 'common', 'shared_flags.py')])

  def test_a_second_definition_is_found(self):
    first = ("from absl import flags\n"
             "R = flags.DEFINE_integer('rounds', 1, 'R.')\n")
    second = ("from absl import flags\n\n"
              "def define():\n"
              "  return flags.DEFINE_integer(\n"
              "      'rounds', 40, 'Rounds.', lower_bound=1)\n"
              "S = flags.DEFINE_string('output_dir', 'out', 'Outputs.')\n")
    self.assertEqual(defined_more_than_once({'a.py': first}), [])
    self.assertEqual(
        defined_more_than_once({'a.py': first, 'b.py': second}),
        ['--rounds: a.py:2, b.py:4'])
    # Twice in one file counts as well.
    self.assertEqual(defined_more_than_once({'a.py': first + first}),
                     ['--rounds: a.py:2, a.py:4'])


if __name__ == '__main__':
  absltest.main()
