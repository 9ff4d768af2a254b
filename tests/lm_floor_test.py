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
"""The character LM's floor (`benchmarks/lm_floor.py`) does a round's work.

With the binary's clipping off (adaptive clipping of client updates and the
central gradients' clip norm), two floor rounds give the weights of two
rounds of the process stackoverflow_wikipedia_main builds
(`lm_runs.build_process`), from the same initial weights on the same client
batches (the binary's datasets, `lm_floor.client_batches`) and the central
batches its process draws each round; and the central part bites.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from benchmarks import compute_floor
from benchmarks import lm_floor
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_runs
from tests import lm_testing
from tests import temp_dirs

_ROUNDS = 2


def _tiny(test):
  data = lm_testing.load_tiny(temp_dirs.temp_dir(test))
  config = lm_config.Config(
      rounds=_ROUNDS, clients_per_round=3, client_steps=2,
      client_batch_size=2, central_batch_size=4,
      one_way_central_batch_size=8, embedding_dim=4, gru_units=8,
      sequence_length=20, adaptive_clipping=False, central_clip_norm=1e9,
      clients_per_group=1)
  ids = [f'1|{c}' for c in data.train_client_ids[:config.clients_per_round]]
  return data, config, ids


def _floor_weights(scenario, data, config, batches, clients_at_once=False):
  """The weights after `_ROUNDS` floor rounds, each on the central batches
  its process round draws."""
  model, learning_rate, part = lm_floor.floor_parts(scenario, config)
  round_fn = compute_floor.build_algorithm_floor(
      model, learning_rate, part, clients_at_once=clients_at_once)
  state = compute_floor.initial_state(model, part)
  for r in range(_ROUNDS):
    central = lm_floor.central_inputs(scenario, data, config, round_num=r)
    state = round_fn(state, *batches, *(central or (None, None)))
  return [w.numpy() for w in state.trainable]


class LMFloorTest(parameterized.TestCase):

  @parameterized.named_parameters(
      (scenario, scenario) for scenario in lm_floor.ALGORITHMS)
  def test_floor_rounds_give_the_process_weights(self, scenario):
    data, config, client_ids = _tiny(self)
    x, y = lm_floor.client_batches(data, config, client_ids)
    self.assertEqual(x.shape, (3, config.client_steps,
                               config.client_batch_size,
                               config.sequence_length))
    process = lm_runs.build_process(scenario, data, config)
    datasets = [tf.data.Dataset.from_tensor_slices(
        (x[c].reshape(-1, x.shape[-1]), y[c].reshape(-1, y.shape[-1])))
                .batch(config.client_batch_size) for c in range(len(x))]
    state = process.initialize()
    for _ in range(_ROUNDS):
      state = process.next(state, datasets).state
    want = process.get_model_weights(state).trainable

    # One client after another, and every client's step at once (the
    # benchmark's floor; the GRU's conversion for `tf.vectorized_map` costs
    # about 30 s, so two scenarios).
    modes = ((False, True) if scenario in (lm_config.FL_ONLY,
                                          lm_config.TWO_WAY_GT) else (False,))
    for clients_at_once in modes:
      got = _floor_weights(scenario, data, config, (x, y), clients_at_once)
      for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6,
                                   err_msg=f'at once: {clients_at_once}')
    if scenario != lm_config.FL_ONLY:
      # The central part matters: FL-only's floor ends elsewhere.
      fl_only = _floor_weights(lm_config.FL_ONLY, data, config, (x, y))
      self.assertGreater(max(np.abs(a - b).max()
                             for a, b in zip(fl_only, want)), 1e-4)

  def test_a_scenario_without_a_process_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'oracle'):
      lm_floor.build_floor_runner(lm_config.ORACLE, lm_config.Config())


if __name__ == '__main__':
  absltest.main()
