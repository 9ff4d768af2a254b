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
"""benchmarks/round_time.py runs end to end at a tiny size; its floors.

The binary runs as a user runs it, in a subprocess from the repository root
(it sets TFF's execution context, which this test process keeps out of),
writing into a temporary directory: per-client and grouped rows, each
algorithm's floor, the ratios to them, and the closing lines computed from
them.

Each algorithm's compute floor (`benchmarks/compute_floor.py`) does the
work of its process's round: two floor rounds give the weights of two
rounds of the TFF process that round_time builds (`registry.build`), from
the same initial weights on the same client and central batches.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

import tff_mixed
from benchmarks import compute_floor
from benchmarks import round_time
from tff_mixed.algorithms import registry
from tff_mixed.models import dense
from tests import benchmark_testing
from tests import binary_runs

# Tiny: 3 clients of K = 2 batches of 2 examples, 4 inputs, 4 hidden units;
# central batches of 4 of 12 examples (sampled, not the whole set).
_CLIENTS, _K, _BATCH, _DIM = 3, 2, 2, 4
_CENTRAL_EXAMPLES, _CENTRAL_BATCH, _TRANSFER = 12, 4, 2
_LR, _SEED, _ROUNDS = 0.1, 3, 2


def _floor_workload():
  """The model, f_c and the clients' batches, as round_time makes them."""
  rng = np.random.default_rng(0)
  teacher = rng.normal(size=(_DIM, 1)).astype(np.float32)
  x = rng.normal(size=(_CLIENTS, _K, _BATCH, _DIM)).astype(np.float32)
  central_x = rng.normal(size=(_CENTRAL_EXAMPLES, _DIM)).astype(np.float32)
  objective = tff_mixed.central_data_objective(
      (central_x, (central_x @ teacher > 0).astype(np.float32)))
  model = dense.build_binary_classifier(_DIM, hidden_units=(4,), seed=1)
  return model, objective, x, (x @ teacher > 0).astype(np.float32)


def _floor_rounds(name, model, objective, x, y, part):
  """The trainable weights after `_ROUNDS` rounds of a floor.

  Each round reads that round's central batches and, for Example Transfer,
  its clients' merged batches, as the process draws them.
  """
  round_fn = compute_floor.build_algorithm_floor(model, _LR, part)
  state = compute_floor.initial_state(model, part)
  for r in range(_ROUNDS):
    central = compute_floor.central_batches(
        objective, _CENTRAL_BATCH, _SEED, r, part.num_central_batches(_K))
    client_x, client_y = x, y
    if name == registry.EXAMPLE_TRANSFER:
      client_x, client_y = compute_floor.transferred_batches(
          objective, x, y, examples_per_client=_TRANSFER, seed=_SEED,
          round_num=r)
    state = round_fn(state, client_x, client_y, *(central or (None, None)))
  return [w.numpy() for w in state.trainable]


class ComputeFloorTest(parameterized.TestCase):

  def test_every_synchronous_algorithm_has_a_floor(self):
    self.assertCountEqual(compute_floor.FLOOR_PARTS,
                          registry.SYNCHRONOUS_NAMES)
    with self.assertRaisesRegex(ValueError, 'fedbuff.*parallel_training'):
      compute_floor.central_part(registry.FEDBUFF)

  @parameterized.named_parameters(
      (name, name) for name in registry.SYNCHRONOUS_NAMES)
  def test_floor_rounds_give_the_process_weights(self, name):
    model, objective, x, y = _floor_workload()
    # As round_time builds it; the per-client FedAvg row is TFF's FedAvg.
    process = registry.build(
        name, model, objective, client_lr=_LR,
        client_steps=None if name == registry.FEDAVG else _K, seed=_SEED,
        central_batch_size=_CENTRAL_BATCH, examples_per_client=_TRANSFER,
        client_batch_size=_BATCH)
    datasets = [tf.data.Dataset.from_tensor_slices(
        (x[c].reshape(-1, _DIM), y[c].reshape(-1, 1))).batch(_BATCH)
                for c in range(_CLIENTS)]
    state = process.initialize()
    for _ in range(_ROUNDS):
      state = process.next(state, datasets).state
    expected = process.get_model_weights(state).trainable

    floor = _floor_rounds(name, model, objective, x, y,
                          compute_floor.central_part(name))
    for want, got in zip(expected, floor):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if name != registry.FEDAVG:
      # The central part (or Example Transfer's batches) matters: FedAvg's
      # floor on the clients' own batches ends elsewhere.
      fedavg = _floor_rounds(registry.FEDAVG, model, objective, x, y,
                             compute_floor.CentralPart())
      self.assertGreater(
          max(np.abs(f - w).max() for f, w in zip(fedavg, expected)), 1e-3)



@binary_runs.runs_binaries
class RoundTimeTest(absltest.TestCase):

  def test_tiny_run_times_both_modes_and_each_floor(self):
    report, text = benchmark_testing.run_benchmark(self, 'round_time', [
        '--models=small', '--clients_per_round=2,4', '--clients_per_group=2',
        '--algorithms=fedavg,parallel_training,compute_floor',
        '--warmup_rounds=1', '--timed_rounds=1', '--input_dim=4',
        '--hidden_units=4'])

    self.assertEqual(list(report['models']), ['small'])
    self.assertEqual(report['config']['floor_goal'], 1.5)
    cohorts = report['models']['small']['cohorts']
    self.assertEqual([c['clients_per_round'] for c in cohorts], [2, 4])
    self.assertEqual([c['groups'] for c in cohorts], [[2], [2, 2]])
    for cohort in cohorts:
      rows = cohort['algorithms']
      self.assertEqual(list(rows), [
          'fedavg', 'fedavg@grouped', 'parallel_training',
          'parallel_training@grouped', 'fedavg@floor',
          'parallel_training@floor'])
      for name, summary in rows.items():
        with self.subTest(f'{cohort["clients_per_round"]} {name}'):
          self.assertGreater(summary['median_wall_s'], 0.0)
          algorithm = name.split('@')[0]
          if name.endswith('@floor'):
            # A floor against FedAvg's floor: what its central work adds.
            self.assertNotIn('wall_vs_floor', summary)
            self.assertAlmostEqual(
                summary['wall_vs_fedavg'], summary['median_wall_s']
                / rows['fedavg@floor']['median_wall_s'])
            continue
          # Each row against its own algorithm's floor.
          floor = rows[f'{algorithm}@floor']['median_wall_s']
          self.assertEqual(summary['floor_wall_s'], floor)
          self.assertAlmostEqual(summary['wall_vs_floor'],
                                 summary['median_wall_s'] / floor)
      # Each mode against its own FedAvg.
      self.assertAlmostEqual(
          rows['parallel_training@grouped']['wall_vs_fedavg'],
          rows['parallel_training@grouped']['median_wall_s']
          / rows['fedavg@grouped']['median_wall_s'])

    self.assertIn('<!-- BEGIN round_time -->', text)
    self.assertIn('## Round times of every algorithm', text)
    self.assertEqual(report['config']['section'], 'round_time')
    # --section (make benchmark-scale) names its cohorts in its heading.
    scale = round_time.render_markdown(
        dict(report, config=dict(report['config'], section='scale')))
    self.assertStartsWith(scale, '## Round times at 2, 4 clients per round '
                          '(benchmarks/round_time.py, scale)\n')
    self.assertIn('Parallel Training, grouped (2 x 2)', text)
    self.assertIn('FedAvg (TFF `build_weighted_fed_avg`), per-client', text)
    self.assertIn('Compute floor of Parallel Training (plain `tf.function`)',
                  text)
    self.assertIn('Where the time goes', text)
    self.assertIn('| Algorithm | small, per-client, 4 clients | small, '
                  'grouped, 4 clients |', text)
    section = text.split('<!-- END round_time -->')[0].rstrip()
    last = section.splitlines()[-1]
    self.assertStartsWith(
        last, '**Every algorithm against its own compute floor at the '
        'largest cohort (its faster mode):** small model at 4 clients: ')
    largest = cohorts[-1]['algorithms']
    for algorithm, label in (('fedavg', 'FedAvg'),
                             ('parallel_training', 'Parallel Training')):
      ratio, mode = min(
          (largest[algorithm]['wall_vs_floor'], 'per-client'),
          (largest[f'{algorithm}@grouped']['wall_vs_floor'], 'grouped'))
      self.assertIn(f'{label} {ratio:.2f}x ({mode})', last)
    self.assertRegex(
        last, r'\. [0-2] of 2 within 1\.5x\. This (meets|partly meets|does '
        r'not meet) the goal of 1\.5x its floor\.$')


if __name__ == '__main__':
  absltest.main()
