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
"""What a round drops is counted in its metrics and said on the console.

Through the public API: an empty cohort, clients with non-finite data, a
round skipped for non-finite central data, each in the process's metrics
and, once per run, as a warning (`tff_mixed.DropReport`, which the runner
uses); and a central batch larger than the central data, refused when the
process is built.
"""

import os
from unittest import mock

from absl.testing import absltest
import numpy as np
import tensorflow as tf

import tff_mixed
from tff_mixed.algorithms import components
from tff_mixed.core import example_store
from tff_mixed.training import drop_report
from tff_mixed.training import round_loop
from tff_mixed.training import runner

from tests import temp_dirs
from tests import testing_utils as tu

_SIZES = (4, 6, 2, 4)


def _datasets(non_finite_clients=()):
  """`_SIZES` clients, those in `non_finite_clients` with NaN features."""
  arrays = tu.client_arrays(sizes=_SIZES)
  for i in non_finite_clients:
    x, y = arrays[i]
    arrays[i] = (np.full_like(x, np.nan), y)
  return tu.to_datasets(arrays, 2)


def _parallel_training(central):
  return tff_mixed.build_parallel_training(
      tu.linear_model(), tff_mixed.central_data_objective(central),
      tu.sgd(0.1), tu.sgd(0.1), central_batch_size=4, client_steps=2)


def _logged(fn):
  """`fn()`'s result and the warnings `drop_report` logged, formatted."""
  with mock.patch.object(drop_report.logging, 'warning',
                         wraps=drop_report.logging.warning) as warning:
    result = fn()
  return result, [c.args[0] % c.args[1:] for c in warning.call_args_list]


def _observed(metrics, round_num=1, prefix='train/'):
  """A fresh report's kinds and warnings on one round's metrics."""
  report = tff_mixed.DropReport('run')
  return _logged(lambda: report.observe(
      round_num, round_loop.flatten_metrics(metrics, prefix)))


class ProcessDropsTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.process = _parallel_training(tu.central_arrays())

  def _clients(self, metrics):
    return {k: int(v) for k, v in metrics['client_work']['clients'].items()}

  def _finalizer(self, metrics):
    return {k: int(v) for k, v in metrics['finalizer'].items()}

  def test_empty_cohort_is_counted_and_warned(self):
    state = self.process.initialize()
    output = self.process.next(state, [])
    self.assertEqual(self._clients(output.metrics),
                     dict(count=0, non_finite=0, without_data=0))
    # The mean of no update is 0/0: the round is skipped, for that reason.
    self.assertEqual(self._finalizer(output.metrics),
                     dict(update_non_finite=1, aggregate_non_finite=1,
                          central_non_finite=0))
    for got, want in zip(tu.trainable(self.process, output.state),
                         tu.trainable(self.process, state)):
      np.testing.assert_array_equal(got, want)
    kinds, warnings = _observed(output.metrics)
    self.assertEqual(kinds, [drop_report.EMPTY_COHORT,
                             drop_report.SKIPPED_ROUND])
    self.assertIn('run: round 1 had no clients: it took no federated step',
                  warnings[0])
    self.assertIn('aggregated update was non-finite', warnings[1])

  def test_non_finite_clients_are_counted_and_warned(self):
    output = self.process.next(self.process.initialize(),
                               _datasets(non_finite_clients=(0, 1, 2)))
    self.assertEqual(self._clients(output.metrics),
                     dict(count=4, non_finite=3, without_data=0))
    self.assertEqual(self._finalizer(output.metrics)['update_non_finite'], 0)
    # Only the finite client's examples count: 2 steps of 2.
    self.assertEqual(
        int(output.metrics['client_work']['train']['num_examples']), 4)
    kinds, warnings = _observed(output.metrics)
    self.assertEqual(kinds, [drop_report.NON_FINITE_CLIENTS])
    self.assertLen(warnings, 1)
    self.assertIn('round 1: 3 of 4 clients were dropped: their updates were '
                  'non-finite', warnings[0])

  def test_client_without_data_is_counted(self):
    empty = tf.data.Dataset.from_tensor_slices(
        (np.zeros([0, 2], np.float32), np.zeros([0, 1], np.float32))).batch(2)
    output = self.process.next(self.process.initialize(),
                               _datasets() + [empty])
    self.assertEqual(self._clients(output.metrics),
                     dict(count=5, non_finite=0, without_data=1))
    _, warnings = _observed(output.metrics, prefix='')
    self.assertLen(warnings, 1)
    self.assertIn('1 of 5 clients had no examples', warnings[0])

  def test_non_finite_central_data_skip_the_round_and_say_why(self):
    x, y = tu.central_arrays()
    process = _parallel_training((np.full_like(x, np.nan), y))
    state = process.initialize()
    output = process.next(state, _datasets())
    self.assertEqual(self._clients(output.metrics),
                     dict(count=4, non_finite=0, without_data=0))
    self.assertEqual(self._finalizer(output.metrics),
                     dict(update_non_finite=1, aggregate_non_finite=0,
                          central_non_finite=1))
    for got, want in zip(tu.trainable(process, output.state),
                         tu.trainable(process, state)):
      np.testing.assert_array_equal(got, want)
    kinds, warnings = _observed(output.metrics)
    self.assertEqual(kinds, [drop_report.SKIPPED_ROUND])
    self.assertIn('round 1 was skipped', warnings[0])
    self.assertIn('server-side step', warnings[0])

  def test_run_training_warns_once_and_sums_up(self):
    root = temp_dirs.temp_dir(self)
    data = _datasets(non_finite_clients=(0, 1, 2))
    result, warnings = _logged(lambda: runner.run_training(
        self.process, client_data_fn=lambda r: data, total_rounds=2,
        root_output_dir=root, experiment_name='drops', hparams={},
        progress=False))
    self.assertEqual(
        [h['train/client_work/clients/non_finite'] for h in result.history],
        [3.0, 3.0])
    self.assertLen([w for w in warnings if 'were dropped' in w], 1)
    self.assertEqual(
        warnings[-1], 'drops: clients dropped as non-finite: 6 in 2 rounds '
        '(first in round 1)')
    with open(os.path.join(root, 'results', 'drops',
                           runner.METRICS_FILE)) as f:
      self.assertIn('train/client_work/clients/non_finite', f.readline())


class CentralBatchSizeTest(absltest.TestCase):

  def _build(self, central, batch_size):
    return tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(), tff_mixed.central_data_objective(central),
        tu.sgd(0.1), central_batch_size=batch_size)

  def test_batch_larger_than_the_central_data_is_refused(self):
    x, y = tu.central_arrays(n=8)
    store = example_store.write_example_store(
        os.path.join(temp_dirs.temp_dir(self), 'store'), [(x, y)])
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(3)
    for name, central in (('numpy', (x, y)), ('store', store),
                          ('dataset', dataset)):
      with self.subTest(name):
        with self.assertRaisesRegex(
            ValueError, r'`central_batch_size` is 9.*holds 8 examples'):
          self._build(central, 9)
    with self.assertRaisesRegex(ValueError, 'holds 8 examples'):
      components.build_central_work(
          tu.linear_model(), tff_mixed.central_data_objective((x, y)),
          tu.sgd(0.1), central_steps=1, central_batch_size=9)
    # The whole set is a batch: full-batch central gradients.
    self._build((x, y), 8)


class DropReportTest(absltest.TestCase):

  def test_first_of_each_kind_is_warned_later_ones_counted(self):
    report = drop_report.DropReport('run')
    dropped = {'train/client_work/clients/count': 4.0,
               'train/client_work/clients/non_finite': 1.0,
               'train/client_work/clients/without_data': 0.0,
               'train/finalizer/update_non_finite': 0.0}
    clean = dict(dropped, **{'train/client_work/clients/non_finite': 0.0})
    _, warnings = _logged(lambda: [
        report.observe(r, m) for r, m in ((1, clean), (2, dropped),
                                          (3, dropped), (4, clean))])
    self.assertEqual(warnings, [
        'run: round 2: 1 of 4 clients were dropped: their updates were '
        'non-finite (weight 0, their metrics not counted); later ones in '
        'this run are only counted.'])
    self.assertEqual(report.summary(), [
        'run: clients dropped as non-finite: 2 in 2 rounds (first in round '
        '2)'])
    self.assertEqual(drop_report.DropReport().summary(), [])

  def test_tff_fedavg_metrics_say_what_they_hold(self):
    # TFF's FedAvg has no counts and no reason: the skip is still said.
    kinds, warnings = _logged(lambda: drop_report.DropReport().observe(
        3, {'finalizer/update_non_finite': 1.0,
            'client_work/train/loss': 0.5}))
    self.assertEqual(kinds, [drop_report.SKIPPED_ROUND])
    self.assertIn('round 3 was skipped', warnings[0])

  def test_run_rounds_logs_the_summary_at_the_end(self):
    metrics = {'train/client_work/clients/count': 0.0,
               'train/finalizer/update_non_finite': 1.0,
               'train/finalizer/aggregate_non_finite': 1.0}
    _, warnings = _logged(lambda: round_loop.run_rounds(
        lambda state, round_num: (state, metrics, [np.zeros(1)]), None,
        first_round=0, total_rounds=3, name='fake', diverged=None,
        progress=False))
    self.assertLen(warnings, 4)  # Two kinds, then their totals.
    self.assertEqual(warnings[2:], [
        'fake: rounds without clients: 3 rounds (first in round 1)',
        'fake: rounds skipped: 3 rounds (first in round 1)'])


if __name__ == '__main__':
  absltest.main()
