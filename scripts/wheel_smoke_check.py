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
environment's site-packages, ships no experiments/tests/benchmarks, adds no
exit hook at import, and that two rounds of 2-way gradient transfer run on
random data. Prints one line per check and exits 1 at the first failure.
"""

import atexit
import importlib.util
import os
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

  import numpy as np
  import tensorflow as tf
  from tff_mixed.models import dense
  tff_mixed.register_worker_cleanup()
  rng = np.random.default_rng(0)
  x = rng.normal(size=(60, 8)).astype(np.float32)
  y = (x[:, :1] > 0).astype(np.float32)
  clients = [tf.data.Dataset.from_tensor_slices((x[i::3], y[i::3])).batch(5)
             for i in range(3)]
  sgd = lambda lr: tff.learning.optimizers.build_sgdm(learning_rate=lr)
  process = tff_mixed.build_two_way_gradient_transfer(
      dense.build_binary_classifier(input_dim=8, hidden_units=(4,)),
      tff_mixed.central_data_objective((x, y)),
      client_optimizer=sgd(0.1), central_optimizer=sgd(0.1),
      central_batch_size=10, client_steps=2)
  state = process.initialize()
  for _ in range(2):
    output = process.next(state, clients)
    state = output.state
  loss = float(output.metrics['client_work']['train']['loss'])
  check(np.isfinite(loss), f'2 rounds of 2-way GT, client loss {loss:.4f}')


if __name__ == '__main__':
  main()
