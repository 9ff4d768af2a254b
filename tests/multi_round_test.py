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
"""Several rounds in one TFF call equal as many calls of `next`."""

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.algorithms import registry
from tff_mixed.simulation import client_groups
from tff_mixed.simulation import multi_round
from tff_mixed.training import round_loop

from tests import testing_utils as tu

# Each round its own cohort: three groups of different clients.
_COHORTS = (((0, 1), (2,), (3, 4)), ((5,), (1, 6), (7,)),
            ((2, 3), (0,), (6, 7)))


def _process():
  arrays = tu.client_arrays(sizes=(4,) * 8)
  groups = client_groups.ClientGroups(
      client_groups.array_dataset_fn(arrays, lambda d: d.batch(2)), np.int32)
  return registry.build(
      registry.TWO_WAY_GT, tu.linear_model(),
      tff_mixed.central_data_objective(tu.central_arrays()), client_lr=0.1,
      central_batch_size=3, client_steps=3, client_groups=groups)


def _ids(cohort):
  return [np.asarray(g, np.int32) for g in cohort]


class MultiRoundTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.process = _process()  # Built once: tracing is most of the time.

  def test_rounds_in_one_call_equal_one_call_each(self):
    process = self.process
    state = process.initialize()
    one_by_one = []
    for cohort in _COHORTS:
      output = process.next(state, _ids(cohort))
      state = output.state
      one_by_one.append(round_loop.flatten_metrics(output.metrics))
    expected = tu.trainable(process, state)

    multi = multi_round.build_multi_round_next(process.next, len(_COHORTS))
    output = multi(process.initialize(), [_ids(c) for c in _COHORTS])
    for want, got in zip(expected, tu.trainable(process, output['state'])):
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    self.assertLen(output['metrics'], len(_COHORTS))
    for want, got in zip(one_by_one, output['metrics']):
      got = round_loop.flatten_metrics(got)
      self.assertEqual(sorted(want), sorted(got))
      for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6,
                                   err_msg=key)
    # The rounds differ (each its own cohort and model): not one round
    # repeated.
    losses = [m['client_work/train/loss'] for m in one_by_one]
    self.assertLen(set(np.round(losses, 6)), len(_COHORTS))

  def test_type_signature_chains_the_state(self):
    process = self.process
    multi = multi_round.build_multi_round_next(process.next, 2)
    state_type, data_type = process.next.type_signature.parameter
    self.assertEqual(multi.type_signature.parameter[0], state_type)
    self.assertEqual(multi.type_signature.parameter[1],
                     tff.StructType([data_type, data_type]))
    self.assertEqual(multi.type_signature.result.state, state_type)
    self.assertLen(multi.type_signature.result.metrics, 2)

  def test_a_call_stops_where_the_state_is_needed(self):
    last = lambda r: multi_round.last_round_of_call(r, 3, 9, [4, 6])
    # Rounds 1-3, 4 (a multiple of 4), 5-6 (of 6), 7-8 (of 4), 9 (the end).
    self.assertEqual([last(r) for r in (1, 4, 5, 7, 9)], [3, 4, 6, 8, 9])
    self.assertEqual(multi_round.last_round_of_call(5, 1, 9, []), 5)

  def test_bad_arguments_are_refused(self):
    process = self.process
    for rounds in (0, -1, 1.5, True):
      with self.assertRaisesRegex(ValueError, 'rounds'):
        multi_round.build_multi_round_next(process.next, rounds)
    with self.assertRaisesRegex(TypeError, 'next_fn'):
      multi_round.build_multi_round_next(process.initialize, 2)


if __name__ == '__main__':
  absltest.main()
