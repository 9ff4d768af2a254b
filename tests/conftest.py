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
"""pytest's hooks for the tests.

*   The TFF workers of a test process end with it. Importing `tff_mixed` no
    longer registers the clean-up of TFF's worker processes
    (tff_mixed/runtime.py); programs call
    `tff_mixed.register_worker_cleanup()`. A pytest process (and each of
    pytest-xdist's) makes that call once its test files are imported, if
    they loaded TFF, so the workers its tests start end with it, as in a
    binary.
*   The tests that run binaries (`binary_runs.runs_binaries`) run first:
    pytest-xdist's `--dist loadscope` hands out whole classes, and these,
    the longest, left for last kept one worker busy for minutes while the
    other waited. `make test` passes `--no-loadscope-reorder`: by default
    pytest-xdist sorts the classes by their number of tests, which undoes
    this order (a class of two 15-second binary runs went after every class
    of many short tests).
"""

import sys


def _runs_binaries(item) -> bool:
  return bool(getattr(getattr(item, 'cls', None), 'runs_binaries', False) or
              getattr(getattr(item, 'obj', None), 'runs_binaries', False))


def pytest_collection_modifyitems(session, config, items):
  del session, config  # Unused.
  items.sort(key=lambda item: not _runs_binaries(item))  # Stable.


def pytest_collection_finish(session):
  del session  # Unused.
  if 'tensorflow_federated' in sys.modules:
    # pylint: disable=g-import-not-at-top
    from tff_mixed import runtime
    runtime.register_worker_cleanup()
