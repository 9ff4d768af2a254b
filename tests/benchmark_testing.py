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
"""Runs a benchmark binary end to end for its test.

The binary runs as a user runs it, `python -m benchmarks.<name>` in a
process of its own from the repository root (`preloaded_python.run_module`):
it sets TFF's execution context (and runs TFF workers) that the test process
keeps out of. This module imports neither TensorFlow nor TFF for that
reason.
"""

import json
import os
import shutil
import tempfile

from absl.testing import absltest

from tests import preloaded_python


def run_benchmark(test_case: absltest.TestCase, name: str,
                  args: list[str]) -> tuple[dict, str]:
  """Runs `benchmarks.<name>` with `args`; its JSON report and markdown.

  The outputs go to a temporary directory removed after the test
  (`--output_markdown`, `--output_json` are added to `args`); the test fails
  with the end of the binary's stderr if it exits non-zero.

  Args:
    test_case: The running test (for cleanup and the exit status check).
    name: The module under `benchmarks/`, e.g. `'round_time'`.
    args: The binary's flags.

  Returns:
    (the parsed `--output_json` file, the `--output_markdown` file's text).
  """
  # Not `create_tempdir`: under pytest absl's flags are unparsed.
  d = tempfile.mkdtemp()
  test_case.addCleanup(shutil.rmtree, d, ignore_errors=True)
  markdown = os.path.join(d, 'BENCHMARKS.md')
  raw = os.path.join(d, f'{name}.json')
  completed = preloaded_python.run_module(
      f'benchmarks.{name}', *args, f'--output_markdown={markdown}',
      f'--output_json={raw}', timeout=300)
  test_case.assertEqual(completed.returncode, 0, completed.stderr[-3000:])
  with open(raw) as f:
    report = json.load(f)
  with open(markdown) as f:
    text = f.read()
  return report, text
