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
them. `--local_workers` with `--worker_addresses` is refused in
tests/bad_inputs_test.py; tests/remote_test.py checks that 2 workers give
the local runtime's rounds.

benchmarks/workers_report.py, from synthetic round_time reports at 0, 1 and
2 workers: its table, speedups and cost model against the same numbers
computed here (`np.polyfit` of the medians on 1/N).

Each algorithm's compute floor (`benchmarks/compute_floor.py`) does the
work of its process's round: two floor rounds give the weights of two
rounds of the TFF process that round_time builds (`registry.build`), from
the same initial weights on the same client and central batches.
"""

import io
import json
import os
import shutil
import sys
import tempfile
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf

import tff_mixed
from benchmarks import compute_floor
from benchmarks import round_reports
from benchmarks import round_timer
from tff_mixed.algorithms import registry
from tff_mixed.models import dense
from tests import benchmark_testing
from tests import binary_runs
from tests import preloaded_python

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
    self.assertCountEqual(compute_floor.FLOOR_PARTS, registry.NAMES)
    with self.assertRaisesRegex(ValueError, 'fedbuff.*parallel_training'):
      compute_floor.central_part(tff_mixed.async_registry.FEDBUFF)

  @parameterized.named_parameters(
      (name, name) for name in registry.NAMES)
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
        '--models=small', '--cohort_sizes=2,4', '--clients_per_group=2',
        '--algorithms=fedavg,parallel_training,compute_floor',
        '--warmup_rounds=1', '--timed_rounds=1', '--input_dim=4',
        '--hidden_units=4', '--section=scale', '--rounds_per_call=2',
        '--min_timed_seconds=2'])

    self.assertEqual(list(report['models']), ['small'])
    self.assertEqual(report['config']['floor_goal'], 1.5)
    cohorts = report['models']['small']['cohorts']
    self.assertEqual([c['clients_per_round'] for c in cohorts], [2, 4])
    self.assertEqual([c['groups'] for c in cohorts], [[2], [2, 2]])
    self.assertIn(f'4 clients per round, {cohorts[1]["timed_rounds"]} '
                  'timed rounds', text)
    for cohort in cohorts:
      rows = cohort['algorithms']
      # Timed rounds past --timed_rounds=1 until they took 2 s (a round of
      # every row here takes well under 1 s), each row timed in each.
      self.assertGreater(cohort['timed_rounds'], 1)
      for summary in rows.values():
        self.assertLen(summary['rounds'], 1 + cohort['timed_rounds'])
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

    # --section (make benchmark-scale): a section of its own, whose heading
    # names its cohorts.
    self.assertEqual(report['config']['section'], 'scale')
    self.assertIn('<!-- BEGIN scale -->\n## Round times at 2, 4 clients per '
                  'round (benchmarks/round_time.py, scale)\n', text)
    self.assertIn('Parallel Training, grouped (2 x 2)', text)
    self.assertIn('FedAvg (TFF `build_weighted_fed_avg`), per-client', text)
    self.assertIn('Compute floor of Parallel Training (plain `tf.function`)',
                  text)
    self.assertIn('Where the time goes', text)
    # Grouped rows: members from tensors in lockstep, 2 rounds a TFF call.
    self.assertEqual(report['config']['rounds_per_call'], 2)
    self.assertIn('small: the whole group at once', text)
    self.assertIn('2 rounds in each TFF call', text)
    self.assertIn('| Algorithm | small, per-client, 4 clients | small, '
                  'grouped, 4 clients |', text)
    section = text.split('<!-- END scale -->')[0].rstrip()
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


def _synthetic_report(workers, medians):
  """A round_time JSON report at `workers` workers: row -> median s/round."""
  rows = {name: dict(median_wall_s=t, min_wall_s=0.9 * t, max_wall_s=1.2 * t,
                     median_cpu_s=1.5 * t) for name, t in medians.items()}
  return dict(
      command='round_time', date='2026-01-01',
      machine=dict(cpu_model='Test CPU', cpu_count=2, usable_cores=2,
                   memory_gib=4.0, platform='Linux', python='3.11',
                   tensorflow='2.14', tensorflow_federated='0.87',
                   tff_mixed='0.1'),
      config=dict(workers=workers, local_workers=workers, worker_addresses=[],
                  models=['celeba'], clients_per_round=[100],
                  clients_per_group=0, algorithms=['fedavg'], input_dim=64,
                  hidden_units=[64], client_steps=2, client_batch_size=5,
                  seed=0, warmup_rounds=2, timed_rounds=4),
      models=dict(celeba=dict(
          load_average=dict(start=0.5, end=0.75),
          cohorts=[dict(clients_per_round=100, groups=[50, 50],
                        algorithms=rows)])))


class CycleOrderTest(absltest.TestCase):

  def test_each_cycle_is_a_seeded_shuffle_with_changing_neighbours(self):
    names = [f'{a}{mode}' for a in 'abcde' for mode in ('', '@grouped')]
    orders = [round_reports.cycle_order(names, c, seed=0) for c in range(60)]
    for order in orders:
      self.assertCountEqual(order, names)
    self.assertEqual(orders[3], round_reports.cycle_order(names, 3, seed=0))
    self.assertNotEqual(orders[3], round_reports.cycle_order(names, 3, 1))
    # A rotation always put 'a' right before 'a@grouped'; a shuffle gives
    # each row many different predecessors.
    before = {o[o.index('a@grouped') - 1] for o in orders
              if o.index('a@grouped') > 0}
    self.assertGreater(len(before), 5)


class RoundRobinTest(absltest.TestCase):

  def test_every_rows_round_runs_before_any_rows_next_round(self):
    calls = []
    run_rounds = {name: (lambda r, name=name: calls.append((r, name)))
                  for name in ('floor', 'grouped', 'per-client')}
    with mock.patch.object(sys, 'stderr', io.StringIO()):
      seconds = round_timer.round_robin(run_rounds, 4, 'test')
    self.assertEqual(list(seconds), ['floor', 'grouped', 'per-client'])
    for name in run_rounds:
      self.assertLen(seconds[name], 4)
    self.assertEqual([r for r, _ in calls], sorted(r for r, _ in calls))
    orders = [[n for r, n in calls if r == round_num]
              for round_num in range(1, 5)]
    for round_num, order in enumerate(orders, start=1):
      self.assertEqual(order, round_reports.cycle_order(
          list(run_rounds), round_num, seed=0))
    self.assertEqual(round_timer.median_of_timed([9.0, 1.0, 3.0, 2.0]), 2.0)

  def test_needs_a_timed_round(self):
    with self.assertRaisesRegex(ValueError, 'at least 2'):
      round_timer.round_robin({'a': lambda r: None}, 1, 'test')


# Median s/round of the per-client and grouped FedAvg rows by worker count.
_MEDIANS = {0: (10.0, 4.0), 1: (12.0, 5.0), 2: (7.0, 3.0), 4: (4.0, 2.5)}


@binary_runs.runs_binaries
class WorkersReportTest(absltest.TestCase):

  def _run_report(self, counts, expect_error=None):
    d = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, d, ignore_errors=True)
    paths = []
    for count in counts:
      paths.append(os.path.join(d, f'w{count}.json'))
      with open(paths[-1], 'w') as f:
        json.dump(_synthetic_report(count, dict(zip(
            ('fedavg', 'fedavg@grouped'), _MEDIANS[count]))), f)
    markdown = os.path.join(d, 'BENCHMARKS.md')
    completed = preloaded_python.run_module(
        'benchmarks.workers_report', f'--reports={",".join(paths)}',
        f'--output_markdown={markdown}', timeout=600)
    if expect_error:
      self.assertEqual(completed.returncode, 1, completed.stderr[-3000:])
      self.assertEqual(completed.stderr.splitlines(), [
          line for line in completed.stderr.splitlines()
          if line.startswith('error: ')])
      self.assertIn(expect_error, completed.stderr)
      return None
    self.assertEqual(completed.returncode, 0, completed.stderr[-3000:])
    with open(markdown) as f:
      return f.read()

  def _assert_cost_model(self, text, row, index, counts):
    workers = [c for c in counts if c >= 1]
    work, fixed = np.polyfit([1.0 / c for c in workers],
                             [_MEDIANS[c][index] for c in workers], 1)
    self.assertIn(
        f'* {row}: fixed {fixed:.3f} s + work {work:.3f} s / N '
        f'({work / 100 * 1e3:.2f} ms per client); predicts '
        f'N = 4: {fixed + work / 4:.3f} s, N = 8: {fixed + work / 8:.3f} s',
        text)

  def test_table_speedups_and_cost_model_at_0_1_2_workers(self):
    # Given in another order: the report sorts the runs by worker count.
    text = self._run_report([2, 0, 1])
    self.assertIn('<!-- BEGIN workers -->', text)
    self.assertIn('## Round time on TFF workers', text)
    self.assertIn('* Machine: Test CPU, 2 cores (2 usable)', text)
    self.assertIn('2 workers share them with each other and with the driver',
                  text)
    self.assertIn('each worker trains up to 100 clients or 2 groups on 1 '
                  'worker, up to 50 clients or 1 group on 2 workers.', text)
    per_client = 'FedAvg (TFF `build_weighted_fed_avg`), per-client'
    grouped = 'FedAvg (`tff_mixed.build_fedavg`), grouped (2 x 50)'
    for index, row in enumerate((per_client, grouped)):
      t0, t1, t2 = (_MEDIANS[c][index] for c in (0, 1, 2))
      self.assertIn(f'| {row} | local runtime | {t0:.3f} | '
                    f'{0.9 * t0:.3f}-{1.2 * t0:.3f} | {1.5 * t0:.3f} | - | - |',
                    text)
      self.assertIn(f'| {row} | 1 worker | {t1:.3f} |', text)
      self.assertIn(f'| {row} | 2 workers | {t2:.3f} | '
                    f'{0.9 * t2:.3f}-{1.2 * t2:.3f} | {1.5 * t2:.3f} | '
                    f'{t1 / t2:.2f}x | {t0 / t2:.2f}x |', text)
      self._assert_cost_model(text, row, index, [0, 1, 2])
    self.assertIn('an extrapolation of the fit', text)
    self.assertIn('ignore network cost', text)
    self.assertIn('"Running on several TFF workers"', text)

  def test_cost_model_is_a_least_squares_fit_over_worker_counts(self):
    text = self._run_report([1, 2, 4])
    self.assertIn('fitted on the medians at 1 worker, 2 workers, 4 workers',
                  text)
    self._assert_cost_model(
        text, 'FedAvg (TFF `build_weighted_fed_avg`), per-client', 0,
        [1, 2, 4])

  def test_two_runs_at_one_worker_count_are_refused(self):
    self._run_report([1, 1], expect_error='must be runs at different worker '
                     'counts')

  def test_row_keys_agree_with_the_registry(self):
    self.assertEqual(round_reports.FEDAVG, registry.FEDAVG)


if __name__ == '__main__':
  absltest.main()
