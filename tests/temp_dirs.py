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
"""A scratch directory per test, removed when the test ends.

Not absltest's `create_tempdir`: under pytest absl's flags are unparsed, so
it cannot find its root. Pure standard library, so tests that never load
TensorFlow stay light.
"""

import shutil
import tempfile
import unittest


def temp_dir(test: unittest.TestCase) -> str:
  """A new empty directory, deleted (with its contents) at `test`'s end."""
  path = tempfile.mkdtemp()
  test.addCleanup(shutil.rmtree, path, ignore_errors=True)
  return path
