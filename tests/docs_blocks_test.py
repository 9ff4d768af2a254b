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
"""The code of the user guides runs as written, outside the repository.

Each guide's ```python blocks, in order, form one program (a later block
goes on from the names an earlier one made, as the text says), which a new
interpreter runs from a temporary directory with only this checkout's
`tff_mixed` package put on its path (as tests/quickstart_test.py runs the
README's). A block that only shows the form of a call is marked with an
HTML comment `<!-- not run: ... -->` on the line before it and skipped.
"""

import os
import re

from absl.testing import absltest

from tests import binary_runs
from tests import outside_repo

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The guides whose blocks run (docs/COMPOSING.md's complete algorithm is
# examples/custom_algorithm.py, which tests/custom_algorithm_test.py runs).
GUIDES = ('docs/LIBRARY.md', 'docs/COMPOSING.md')
_BLOCK = re.compile(r'^(?:(<!-- not run[^\n]*-->)\n)?```python\n(.*?)^```',
                    re.M | re.S)


def runnable_blocks(markdown: str) -> list[str]:
  """The ```python blocks of `markdown` not marked `<!-- not run -->`."""
  return [code for marker, code in _BLOCK.findall(markdown) if not marker]


class DocsBlocksTest(absltest.TestCase):

  def test_marked_blocks_are_skipped(self):
    text = ('Intro.\n\n```python\na = 1\n```\n\n<!-- not run: a fragment -->'
            '\n```python\nb = f(...)\n```\n\n```sh\nls\n```\n'
            '```python\nprint(a)\n```\n')
    self.assertEqual(runnable_blocks(text), ['a = 1\n', 'print(a)\n'])

  # A new interpreter runs the guide's code from the source tree: under
  # Bazel it would repeat the pytest run (tests/binary_runs.py).
  @binary_runs.runs_binaries
  def test_the_guides_run_outside_the_repository(self):
    for guide in GUIDES:
      with self.subTest(guide):
        with open(os.path.join(_REPO, guide)) as f:
          blocks = runnable_blocks(f.read())
        self.assertNotEmpty(blocks)
        out, _ = outside_repo.run_python(self, '\n'.join(blocks),
                                         'guide.py')
        if guide == 'docs/LIBRARY.md':
          # The asynchronous run's last line: every update trained and
          # merged is counted.
          self.assertRegex(out.splitlines()[-1],
                           r'^\d+ updates trained, \d+ merged$')
        else:
          # The float16 distributor's second round and its training loss.
          self.assertRegex(out.splitlines()[-1], r'^1 0\.\d+$')


if __name__ == '__main__':
  absltest.main()
