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
"""The public modules say what they export.

`tff_mixed` and the modules it re-exports as namespaces (`components`,
`costs`, `simulation`, `registry`, `async_registry`) list their public names in `__all__`: `from
tff_mixed.components import *` and API documentation tools then see exactly
those, each name exists, and none of the module's own public functions or
classes is left out.
"""

import inspect

from absl.testing import absltest

import tff_mixed

# The namespaces `tff_mixed` re-exports as modules.
PUBLIC_MODULES = ('components', 'costs', 'simulation', 'registry',
                  'async_registry')


def _missing(module):
  """Names in `module.__all__` it lacks, and its own public definitions
  (functions and classes defined in it) that `__all__` leaves out."""
  exported = set(module.__all__)
  absent = sorted(n for n in exported if not hasattr(module, n))
  own = sorted(
      name for name, value in vars(module).items()
      if not name.startswith('_')
      and (inspect.isfunction(value) or inspect.isclass(value))
      and value.__module__ == module.__name__ and name not in exported)
  return absent, own


class PublicModulesTest(absltest.TestCase):

  def test_every_public_module_has_a_complete_all(self):
    for name in ('',) + PUBLIC_MODULES:
      module = getattr(tff_mixed, name) if name else tff_mixed
      with self.subTest(module.__name__):
        self.assertTrue(hasattr(module, '__all__'), module.__name__)
        self.assertEqual(_missing(module), ([], []))

  def test_the_check_can_fail(self):
    module = type(tff_mixed)('fake')
    exec('__all__ = ["gone"]\ndef kept(): pass\n', vars(module))  # pylint: disable=exec-used
    self.assertEqual(_missing(module), (['gone'], ['kept']))

  def test_components_names_are_the_components(self):
    self.assertIn('compose_mixed_process', tff_mixed.components.__all__)
    self.assertIn('build_client_work', tff_mixed.components.__all__)


if __name__ == '__main__':
  absltest.main()
