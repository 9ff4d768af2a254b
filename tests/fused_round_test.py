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
"""A fused round (`simulation/fused_round.py`) is the process's round."""

import shutil
import tempfile

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed
from tff_mixed.algorithms import registry
from tff_mixed.models import dual_encoder
from tff_mixed.simulation import client_groups
from tff_mixed.simulation import fused_round
from tff_mixed.training import round_loop
from tff_mixed.training import runner

from tests import testing_utils as tu

_GROUPS = ((0, 1, 2), (3, 4))


def _leaves(value, path=''):
  """`(path, array)` of every leaf, by field name (containers may differ)."""
  if hasattr(value, '_asdict'):
    value = value._asdict()
  if isinstance(value, dict):
    for key in value:
      yield from _leaves(value[key], f'{path}/{key}')
  elif isinstance(value, (list, tuple)):
    for i, item in enumerate(value):
      yield from _leaves(item, f'{path}/{i}')
  else:
    yield path, np.asarray(value)


class FusedRoundTest(absltest.TestCase):

  def _assert_same_rounds(self, process, data, rounds=3):
    """Returns the last fused round's metrics."""
    fused = fused_round.build_fused_process(process)
    self.assertEqual(fused.next.type_signature, process.next.type_signature)
    s1 = s2 = process.initialize()
    for round_num in range(1, rounds + 1):
      o1, o2 = process.next(s1, data), fused.next(s2, data)
      s1, s2 = o1.state, o2.state
      # The same Python containers come back (e.g. `MixedFLState`).
      self.assertEqual(type(s1), type(s2))
      got, want = dict(_leaves((s2, o2.metrics))), dict(_leaves((s1,
                                                                 o1.metrics)))
      self.assertEqual(sorted(got), sorted(want))
      for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-7,
                                   err_msg=f'{key}, round {round_num}')
    self.assertIn('client_work/train/loss',
                  round_loop.flatten_metrics(o1.metrics))
    # The rounds trained: not two frozen models compared.
    self.assertFalse(np.allclose(
        tu.trainable(process, s1)[0],
        tu.trainable(process, process.initialize())[0]))
    return o2.metrics

  def test_two_way_gt_in_groups_equals_its_round(self):
    groups = client_groups.ClientGroups(
        client_groups.array_dataset_fn(tu.client_arrays(sizes=(4, 6, 1, 7, 3)),
                                       lambda d: d.batch(2)), np.int32)
    process = registry.build(
        registry.TWO_WAY_GT, tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()),
        client_lr=0.1, central_batch_size=3, client_steps=3,
        client_groups=groups)
    self._assert_same_rounds(process,
                             [np.asarray(g, np.int32) for g in _GROUPS])

  def test_drop_counts_of_groups_in_a_fused_round(self):
    # A member with NaN features and one without examples, in one group.
    arrays = tu.client_arrays(sizes=(4, 6, 0, 7, 3))
    x, y = arrays[1]
    arrays[1] = (np.full_like(x, np.nan), y)
    groups = client_groups.ClientGroups(
        client_groups.array_dataset_fn(arrays, lambda d: d.batch(2)), np.int32)
    process = registry.build(
        registry.PARALLEL_TRAINING, tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()),
        client_lr=0.1, central_batch_size=3, client_steps=3,
        client_groups=groups)
    metrics = self._assert_same_rounds(
        process, [np.asarray(g, np.int32) for g in _GROUPS], rounds=2)
    self.assertEqual(
        {k: int(v) for k, v in metrics['client_work']['clients'].items()},
        dict(count=5, non_finite=1, without_data=1))

  def test_tff_fedavg_per_client_equals_its_round(self):
    process = tff.learning.algorithms.build_weighted_fed_avg(
        tu.linear_model(), client_optimizer_fn=tu.sgd(0.1),
        server_optimizer_fn=tu.sgd(1.0))
    data = [tf.data.Dataset.from_tensor_slices(a).batch(2)
            for a in tu.client_arrays(sizes=(4, 6, 2))]
    self._assert_same_rounds(process, data, rounds=2)

  def test_run_training_takes_a_fused_process(self):
    # Example Transfer in groups: its examples are read inside the group,
    # so its round fuses. Through the runner, 2 rounds a call, the same
    # metrics and model as the composed process.
    groups = client_groups.ClientGroups(
        client_groups.array_dataset_fn(tu.client_arrays(sizes=(4, 6, 1, 7, 3)),
                                       lambda d: d.batch(2)), np.int32)
    process = tff_mixed.build_example_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        examples_per_client=3, client_batch_size=2, client_steps=3,
        client_groups=groups)
    results = []
    for name, run in (('composed', process),
                      ('fused', fused_round.build_fused_process(process))):
      root = tempfile.mkdtemp()
      self.addCleanup(shutil.rmtree, root, ignore_errors=True)
      results.append(runner.run_training(
          run,
          client_data_fn=lambda r: [np.asarray(g, np.int32) for g in _GROUPS],
          total_rounds=4, root_output_dir=root,
          experiment_name=name, hparams={}, rounds_per_checkpoint=4,
          progress=False, rounds_per_call=2))
    composed, fused = results
    self.assertLen(fused.history, 4)
    self.assertIn('train/client_work/train/loss', fused.history[-1])
    for want, got in zip(composed.history, fused.history):
      self.assertEqual(sorted(want), sorted(got))
      for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-7,
                                   err_msg=key)
    np.testing.assert_allclose(tu.trainable(process, fused.state)[0],
                               tu.trainable(process, composed.state)[0],
                               rtol=1e-6, atol=1e-7)

  def test_federated_select_is_refused_with_the_reason(self):
    # The movie task's embedding slices: not in TFF's MapReduceForm.
    process = registry.build(
        registry.PARALLEL_TRAINING,
        dual_encoder.build_dual_encoder(12, 4, 3, seed=1),
        tff_mixed.central_regularizer(dual_encoder.spreadout_loss_fn,
                                      name='spreadout'),
        client_lr=0.3, central_batch_size=1, client_steps=2,
        embedding_selection=dual_encoder.build_embedding_selection(
            12, 8, 4, 3))
    with self.assertRaisesRegex(ValueError,
                                'cannot be fused.*federated_select'):
      fused_round.build_fused_next(process.next)

  def test_not_a_round_is_refused(self):
    with self.assertRaisesRegex(TypeError, 'next_fn'):
      fused_round.build_fused_next(
          tff.tensorflow.computation(lambda x: x, np.float32))


if __name__ == '__main__':
  absltest.main()
