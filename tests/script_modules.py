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
"""The repository's scripts (`scripts/*.py`) as modules, for their tests.

The scripts are run as files, not imported as a package, so a test loads one
from its path.
"""

import importlib.util
import os
import types

_SCRIPTS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scripts')


def load(name: str) -> types.ModuleType:
  """`scripts/<name>.py`, loaded as the module `name`."""
  spec = importlib.util.spec_from_file_location(
      name, os.path.join(_SCRIPTS, f'{name}.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module
