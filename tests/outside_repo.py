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
"""Runs Python code as a user of the installed package would.

The code is written to a temporary directory and run there by a new
interpreter whose path holds only this checkout's `tff_mixed` package (a
link to it) and the installed dependencies: its working directory is outside
the repository, so it can read no repository file and import nothing of the
repository but the package.
"""

import os
import subprocess
import sys
import tempfile
import unittest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(test: unittest.TestCase, code: str, filename: str,
               timeout: int = 900) -> tuple[str, str]:
  """Runs `code` as `filename` outside the repository; asserts exit 0.

  Returns `(stdout, path)`: what it printed, and the directory its
  `tff_mixed` came from (the link's), for checking where it was imported
  from. The temporary directory is removed when `test` ends.
  """
  tmp = tempfile.mkdtemp()
  test.addCleanup(lambda: subprocess.run(['rm', '-rf', tmp], check=False))
  path, run = os.path.join(tmp, 'path'), os.path.join(tmp, 'run')
  os.makedirs(path)
  os.makedirs(run)
  os.symlink(os.path.join(_REPO, 'tff_mixed'),
             os.path.join(path, 'tff_mixed'))
  with open(os.path.join(run, filename), 'w') as f:
    f.write(code)
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  env['PYTHONPATH'] = path
  result = subprocess.run(
      [sys.executable, filename], cwd=run, env=env, capture_output=True,
      text=True, timeout=timeout, check=False)
  test.assertEqual(result.returncode, 0, result.stderr[-3000:])
  return result.stdout, path
