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
"""What the binaries' `--rounds_per_call` tests share.

A run with several rounds a TFF call must give the numbers of one round a
call: every round's training metrics in the runner's `metrics.csv`, and the
evaluations. `chained_calls` proves the faster path ran (a test where every
call held one round would compare the reference with itself).
"""

import contextlib
import csv
from unittest import mock

import numpy as np

from tff_mixed.simulation import multi_round


@contextlib.contextmanager
def chained_calls():
  """Yields a spy on `multi_round.build_multi_round_next`: its calls' round
  counts are `[c.args[1] for c in spy.call_args_list]`."""
  with mock.patch.object(
      multi_round, 'build_multi_round_next',
      wraps=multi_round.build_multi_round_next) as spy:
    yield spy


def metrics_rows(metrics_path: str) -> list[dict[str, float]]:
  """Every round's numeric columns of a runner's `metrics.csv`."""
  with open(metrics_path) as f:
    return [{k: float(v) for k, v in row.items() if v}
            for row in csv.DictReader(f)]


def assert_same_metrics(test, want_path: str, got_path: str,
                        rtol: float = 1e-5):
  """The two runs' `metrics.csv` hold the same rounds, columns and values."""
  want, got = metrics_rows(want_path), metrics_rows(got_path)
  test.assertLen(got, len(want))
  test.assertGreater(len(want), 1)
  for want_row, got_row in zip(want, got):
    test.assertEqual(sorted(got_row), sorted(want_row))
    for key, value in want_row.items():
      np.testing.assert_allclose(got_row[key], value, rtol=rtol, atol=1e-7,
                                 err_msg=f'{key} at {want_row}')
