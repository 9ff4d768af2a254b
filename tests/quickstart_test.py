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
"""README.md's quickstart runs as written, outside the repository.

The README's "## Quickstart" block (as scripts/readme_blocks.py reads it) is
written to a temporary directory and run there by a new interpreter, with
this checkout's `tff_mixed` package put first on its path (a link to it in
the temporary directory) and its working directory outside the repository,
so the code can read no repository file. Installing the wheel into a fresh
virtualenv first, where no other package of the repository is importable,
is scripts/check_wheel_install.sh (`make wheel-check`).
"""

import math
import os

from absl.testing import absltest

from tests import binary_runs
from tests import outside_repo
from tests import script_modules

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_blocks():
  return script_modules.load('readme_blocks')


class QuickstartTest(absltest.TestCase):

  # A new interpreter runs the README's code from the source tree: under
  # Bazel it would repeat the pytest run (tests/binary_runs.py).
  @binary_runs.runs_binaries
  def test_the_readme_quickstart_runs_outside_the_repository(self):
    with open(os.path.join(_REPO, 'README.md')) as f:
      code = _readme_blocks().quickstart(f.read())
    # Short enough to read at a glance, and only the public package.
    self.assertLessEqual(len(code.splitlines()), 20)
    # After the README's code: where tff_mixed came from.
    stdout, path = outside_repo.run_python(
        self, code + '\nprint("tff_mixed from", tff_mixed.__file__)\n',
        'quickstart.py', timeout=600)
    lines = stdout.splitlines()
    self.assertEqual(lines[-1],
                     f'tff_mixed from {path}/tff_mixed/__init__.py')
    # One line a round: the round number, then the clients' training loss
    # and the central loss, both finite.
    rounds = [l.split() for l in lines[:-1]]
    self.assertEqual([r[0] for r in rounds], ['0', '1'])
    for r in rounds:
      self.assertLen(r, 3)
      self.assertTrue(all(math.isfinite(float(v)) for v in r[1:]), r)


if __name__ == '__main__':
  absltest.main()
