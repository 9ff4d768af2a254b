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
"""Marks the tests that run a binary as a user does (`python -m` a module).

Those tests start the binary from the source tree with the test's own
interpreter, never through Bazel's `py_binary` targets, so under `bazel test`
they repeat exactly what the pytest run checks, at a TensorFlow import (5-6 s
of CPU) per run. CI runs them once, under pytest, and tells Bazel to skip them
with `--test_env=TFF_MIXED_SKIP_BINARY_RUNS=1` (see `.ci/run`); by default
both runners run them.
"""

import os
import unittest

SKIP_ENV = 'TFF_MIXED_SKIP_BINARY_RUNS'

_skip_under_bazel = unittest.skipIf(
    os.environ.get(SKIP_ENV) == '1',
    f'{SKIP_ENV}=1: this test runs binaries from the source tree with '
    '`python -m`, which the pytest run covers.')


def runs_binaries(test):
  """Marks a test class or method that runs binaries (see above).

  It also gets the attribute `runs_binaries`, by which `tests/conftest.py`
  hands these tests out first: they are the longest units pytest-xdist
  schedules, and one left for last keeps a worker busy while the other idles.
  """
  test.runs_binaries = True
  return _skip_under_bazel(test)
