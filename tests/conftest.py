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
"""pytest's hooks for the tests: the TFF workers of a test process end with it.

Importing `tff_mixed` no longer registers the clean-up of TFF's worker
processes (tff_mixed/runtime.py); programs call
`tff_mixed.register_worker_cleanup()`. A pytest process (and each of
pytest-xdist's) makes that call once its test files are imported, if they
loaded TFF, so the workers its tests start end with it, as in a binary.
"""

import sys


def pytest_collection_finish(session):
  del session  # Unused.
  if 'tensorflow_federated' in sys.modules:
    # pylint: disable=g-import-not-at-top
    from tff_mixed import runtime
    runtime.register_worker_cleanup()
