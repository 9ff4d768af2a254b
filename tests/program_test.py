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
"""The processes run under TFF's program layer, and resume from its state.

`examples/train_with_tff_program.py` runs Parallel Training through
`tff.learning.programs.train_model` with a `FileProgramStateManager` and
TFF's release managers; its rounds must equal the process's `next` called
directly on the same clients, and a second run must continue from the saved
round. `tff_mixed.ArrayDataSource`, the data source it needs, selects seeded,
distinct clients and survives the deep copies and saves `train_model` makes.
"""

import asyncio
import copy
import csv
import os

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

from examples import train_with_tff_program as example
import tff_mixed
from tests import temp_dirs


def _run(coroutine):
  loop = asyncio.new_event_loop()
  try:
    return loop.run_until_complete(coroutine)
  finally:
    loop.close()


def _trainable(process, state):
  return [np.asarray(w) for w in process.get_model_weights(state).trainable]


class ArrayDataSourceTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(0)
    self.clients = [
        (rng.normal(size=(n, 2)).astype(np.float32),
         np.arange(n, dtype=np.int64)) for n in (3, 5, 2, 4)]
    self.source = tff_mixed.ArrayDataSource(self.clients, batch_size=2, seed=3)

  def _selected_arrays(self, datasets):
    """Each selected client's examples, unbatched, as numpy arrays."""
    return [tuple(np.concatenate(leaf) for leaf in zip(*ds.as_numpy_iterator()))
            for ds in datasets]

  def test_selects_distinct_clients_batched_as_typed(self):
    iterator = self.source.iterator()
    self.assertEqual(str(self.source.federated_type),
                     '{<float32[?,2],int64[?]>*}@CLIENTS')
    datasets = iterator.select(3)
    self.assertLen(datasets, 3)
    chosen = []
    for x, y in self._selected_arrays(datasets):
      match = [i for i, (cx, _) in enumerate(self.clients)
               if cx.shape == x.shape and np.array_equal(cx, x)]
      self.assertLen(match, 1)
      np.testing.assert_array_equal(y, self.clients[match[0]][1])
      chosen += match
    self.assertLen(set(chosen), 3)
    self.assertTrue(all(len(b[1]) <= 2 for b in datasets[0]))

  def test_selection_is_seeded_and_resumes_from_bytes_and_copies(self):
    iterator = self.source.iterator()
    first = [self._selected_arrays(iterator.select(2)) for _ in range(4)]
    replay = self.source.iterator()
    replay.select(2)
    copied = copy.deepcopy(replay)
    restored = type(replay).from_bytes(replay.to_bytes())
    self.assertEqual(restored, replay)
    self.assertEqual(restored.selections, 1)
    for resumed in (replay, copied, restored):
      for expected in first[1:]:
        got = self._selected_arrays(resumed.select(2))
        for (gx, gy), (ex, ey) in zip(got, expected):
          np.testing.assert_array_equal(gx, ex)
          np.testing.assert_array_equal(gy, ey)
    # Different rounds pick different cohorts (seeded per selection).
    self.assertGreater(len({tuple(len(c[1]) for c in s) for s in first}), 1)

  def test_tff_dataset_source_cannot_be_deep_copied(self):
    # Why ArrayDataSource exists: train_model deep-copies its data iterator,
    # which TF 2.14's datasets refuse. If this starts passing, TFF's own
    # DatasetDataSource works with train_model.
    iterator = tff.program.DatasetDataSource(
        [tf.data.Dataset.range(3)]).iterator()
    with self.assertRaisesRegex(TypeError, 'pickle'):
      copy.deepcopy(iterator)

  def test_bad_arguments_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'client_arrays'):
      tff_mixed.ArrayDataSource([], batch_size=2)
    with self.assertRaisesRegex(TypeError, 'Client 0'):
      tff_mixed.ArrayDataSource([[np.zeros(2)]], batch_size=2)
    with self.assertRaisesRegex(ValueError, 'Client 1 has arrays'):
      tff_mixed.ArrayDataSource(
          [(np.zeros((2, 2)),), (np.zeros((2, 3)),)], batch_size=2)
    with self.assertRaisesRegex(ValueError, 'one row per example'):
      tff_mixed.ArrayDataSource([(np.zeros(2), np.zeros(3))], batch_size=2)
    with self.assertRaisesRegex(ValueError, 'batch_size'):
      tff_mixed.ArrayDataSource(self.clients, batch_size=0)
    with self.assertRaisesRegex(ValueError, '`k`'):
      self.source.iterator().select(5)


class TrainModelTest(absltest.TestCase):

  def test_train_model_matches_next_saves_releases_and_resumes(self):
    root = temp_dirs.temp_dir(self)
    example.main(['--root_dir', root, '--total_rounds', '2'])

    # The reference: the same process's `next` on the same selections.
    process = example.build_process()
    reference = example.build_data_source().iterator()
    state, states, losses = process.initialize(), [], []
    for _ in range(3):
      output = process.next(state, reference.select(3))
      state = output.state
      states.append(state)
      losses.append(float(output.metrics['client_work']['train']['loss']))

    state_manager = tff.program.FileProgramStateManager(
        os.path.join(root, 'program_state'))
    structure = tff.learning.programs.ProgramState(
        process.initialize(), 0, 0, example.build_data_source().iterator())

    def check_saved(last_round):
      self.assertEqual(_run(state_manager.get_versions()),
                       list(range(last_round + 1)))
      saved, version = _run(state_manager.load_latest(structure))
      self.assertEqual((version, saved.round_number), (last_round, last_round))
      self.assertEqual(saved.data_iterator.selections, last_round)
      self.assertIsInstance(saved.state, tff_mixed.MixedFLState)
      for got, expected in zip(_trainable(process, saved.state),
                               _trainable(process, states[last_round - 1])):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
      self.assertTrue(os.path.isdir(os.path.join(
          root, 'model', f'release_training_checkpoint_round_{last_round}')))

    check_saved(2)
    with open(os.path.join(root, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    self.assertEqual([int(r['round_num']) for r in rows], [1, 2])
    np.testing.assert_allclose(
        [float(r['model_metrics/loss']) for r in rows], losses[:2], rtol=1e-5)

    # More rounds: only round 3 runs, from the saved state and iterator.
    released = tff.program.MemoryReleaseManager()
    example.train(root, total_rounds=3, metrics_managers=[released])
    self.assertEqual(list(released.values()), [3])
    self.assertAlmostEqual(
        float(released.values()[3]['model_metrics']['loss']), losses[2],
        places=5)
    check_saved(3)


if __name__ == '__main__':
  absltest.main()
