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
"""The installed tff_mixed imports cleanly and trains: scripts/check_wheel_install.sh.

Run with the interpreter of a virtualenv where the wheel was installed, from a
directory outside the repository. Checks that `tff_mixed` comes from that
environment's site-packages, ships no experiments/tests/benchmarks and adds
no exit hook at import; prints one line per check and exits 1 at the first
failure. Then, given a path, runs that script (the README's quickstart) as
`__main__` in the same interpreter, which saves a second start of
TensorFlow and TFF:

  python wheel_smoke_check.py [QUICKSTART.py]
"""

import atexit
import importlib.util
import os
import runpy
import sys
import sysconfig


def check(condition, what):
  print(('ok   ' if condition else 'FAIL ') + what, flush=True)
  if not condition:
    sys.exit(1)


def main():
  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff
  hooks = atexit._ncallbacks()  # pylint: disable=protected-access
  import tff_mixed
  check(atexit._ncallbacks() == hooks,  # pylint: disable=protected-access
        'import tff_mixed adds no exit hook')
  site = os.path.realpath(sysconfig.get_paths()['purelib'])
  where = os.path.realpath(os.path.dirname(tff_mixed.__file__))
  check(where == os.path.join(site, 'tff_mixed'),
        f'tff_mixed {tff_mixed.__version__} from {where}')
  check(tff.__version__ == '0.87.0', f'TFF {tff.__version__}')
  for name in ('experiments', 'tests', 'benchmarks'):
    check(importlib.util.find_spec(name) is None, f'no {name!r} package')
  check(all(hasattr(tff_mixed, n) for n in tff_mixed.__all__),
        f'__all__ ({len(tff_mixed.__all__)} names) all defined')


if __name__ == '__main__':
  main()
  if len(sys.argv) > 1:
    print(f'running {sys.argv[1]}', flush=True)
    runpy.run_path(sys.argv[1], run_name='__main__')
