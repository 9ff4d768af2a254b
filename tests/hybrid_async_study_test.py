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
"""Tests for the asynchronous-baselines study (`async_study_lib`): its
variants, records, comparisons, arrival statistics and FedDF probes, on
tiny real digits."""

import json
import os
import tempfile

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import async_study_lib as study
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_records
from tff_mixed.tasks import hybrid_images


# Tiny runs: the study's variants change this as they change `BASE`.
_BASE = study.BASE._replace(
    rounds=4, num_clients=12, clients_per_round=2, buffer_size=2,
    server_size=30, eval_size=80, client_steps=2, client_batch_size=4,
    server_steps=2, conv_filters=(2, 4, 4), dense_units=8, eval_every=1)


def _digits(seed, alpha):
  x, y = hybrid_images.load_digits_images(size=8, channels=3)
  split = hybrid_images.build_hybrid_split(
      x[:300], y[:300], num_clients=12, alpha=alpha, server_size=30,
      eval_size=80, seed=seed)
  return hybrid_config.Data(split, None, None, 'digits')


def _record(variant, alpha, delay, seed, accuracies, probes=()):
  return study.RunRecord(variant, alpha, delay, seed, {},
                         [[k, a, 1.0] for k, a in enumerate(accuracies)],
                         [list(p) for p in probes], 1.0)


class ArrivalStatsTest(absltest.TestCase):

  def test_no_delay_delivers_everything_in_its_round(self):
    stats = study.arrival_stats(10, 2, 0.0, 5, seeds=(0,))
    self.assertEqual(stats, study.ArrivalStats(10.0, 1.0, 1.0, 0.0, 5.0))

  def test_delays_lose_the_last_updates_and_make_them_stale(self):
    short = study.arrival_stats(150, 5, 20.0, 70)
    long = study.arrival_stats(500, 10, 20.0, 200)
    # Half-normal sigma 20: mean delay 20 sqrt(2/pi) ~ 16 rounds, so a
    # 70-round run loses about a quarter of its updates, 200 rounds far less.
    self.assertLess(short.arrived, long.arrived)
    self.assertBetween(long.staleness, 10.0, 18.0)
    # P(|z| < 0.5) for sigma 20: about 2% arrive in their own round.
    self.assertBetween(long.on_time, 0.005, 0.04)


class ComparisonTest(absltest.TestCase):

  def test_pair_difference_is_paired_over_common_seeds(self):
    s = hybrid_config.Setting(0.1, 5.0)
    records = [
        _record('fedbuff', 0.1, 5.0, 0, [0.1, 0.20]),
        _record('fedbuff', 0.1, 5.0, 1, [0.1, 0.30]),
        _record('fedbuff_lr1', 0.1, 5.0, 0, [0.1, 0.25]),
        _record('fedbuff_lr1', 0.1, 5.0, 2, [0.1, 0.90]),  # No partner.
    ]
    pair = study.Pair('fedbuff', 'fedbuff_lr1', 'x')
    (diff,) = study.pair_differences(records, pair, [s])
    self.assertAlmostEqual(diff, 5.0)  # Seed 0 only: 25% - 20%.

  def test_delay_free_variant_stands_in_for_every_delay(self):
    records = [_record('fedavg', 0.3, 5.0, 0, [0.4]),
               _record('fedavg_delayed', 0.3, 20.0, 0, [0.1])]
    pair = study.Pair('fedavg', 'fedavg_delayed', 'x')
    diffs = study.pair_differences(
        records, pair,
        [hybrid_config.Setting(0.3, 5.0), hybrid_config.Setting(0.3, 20.0)])
    self.assertIsNone(diffs[0])  # No delayed run at N(5).
    self.assertAlmostEqual(diffs[1], -30.0)

  def test_sweep_follows_fedbuff_over_the_recorded_delays(self):
    records = [_record('fedbuff_lr1_nodelay', 0.3, 5.0, 0, [0.3]),
               _record('fedbuff_lr1', 0.3, 1.0, 0, [0.25]),
               _record('fedbuff_lr1', 0.3, 5.0, 0, [0.1]),
               _record('fedbuff_lr1', 0.3, 5.0, 1, [0.2])]
    lines = study.sweep_table(records, seeds=2).splitlines()
    self.assertEqual(lines[0], '| variant | label skew | N(0) | N(1) | N(5) |')
    self.assertEqual(lines[2], '| fedbuff_lr1 | Dir(0.3) | 30.0 ± 0.0 (n = 1) '
                     '| 25.0 ± 0.0 (n = 1) | 15.0 ± 5.0 |')

  def test_report_has_every_table(self):
    settings = [hybrid_config.Setting(0.1, 5.0)]
    records = [_record('feddf_id', 0.1, 5.0, 0, [0.1, 0.2],
                       probes=[(1, 0.3, 0.1, 0.2), (2, 0.4, 0.1, 0.2)])]
    text = study.results_markdown(records, settings, [0], command='cmd',
                                  machine='m', date='d',
                                  data_description='digits', base=_BASE)
    self.assertIn('| feddf_id | Dir(0.1), N(5) | 40.0 | 10.0 | 20.0 | 100% |',
                  text)
    self.assertIn('| fedbuff -> feddf_id |', text)
    self.assertIn('ours: 12 clients, 2 a round, 4 rounds', text)
    self.assertIn('paper: 500 clients, 10 a round, 200 rounds', text)


class RunStudyTest(absltest.TestCase):

  def test_runs_records_and_resumes(self):
    settings = [hybrid_config.Setting(0.5, 0.0),
                hybrid_config.Setting(0.5, 0.8)]
    variants = [study.VARIANTS_BY_NAME[v] for v in (
        'fedavg', 'fedavg_deadline', 'fedbuff_lr1_weighted', 'feddf_id')]
    with tempfile.TemporaryDirectory() as d:
      records = study.run_study(_digits, variants, settings, [0], d,
                                base=_BASE)
      # FedAvg without delays runs once for both delay levels.
      self.assertLen(records, 7)
      by_name = {(r.variant, r.delay_std): r for r in records}
      self.assertNotIn(('fedavg', 0.8), by_name)
      # Without delays the deadline changes nothing: it is FedAvg exactly.
      np.testing.assert_allclose(
          np.array(by_name['fedavg_deadline', 0.0].rows),
          np.array(by_name['fedavg', 0.0].rows), rtol=1e-6)
      # FedDF probes: one per distillation (M = 2: one a round without
      # delays), accuracies in [0, 1].
      probes = np.array(by_name['feddf_id', 0.0].probes)
      self.assertEqual(probes.shape, (4, 4))
      self.assertTrue(np.all((probes[:, 1:] >= 0) & (probes[:, 1:] <= 1)))
      # Resuming reads the records back instead of training.
      again = study.run_study(None, variants, settings, [0], d, base=_BASE)
      self.assertEqual(sorted(r.rows for r in again),
                       sorted(r.rows for r in records))
      # A FedDF record made before its teacher set changed is run again.
      path = os.path.join(d, study.record_name('feddf_id', settings[0], 0)
                          + '.json')
      with open(path) as f:
        kept = json.load(f)
      del kept['config']['feddf_teachers']
      kept['rows'] = []
      with open(path, 'w') as f:
        json.dump(kept, f)
      study.run_study(_digits, variants, settings, [0], d, base=_BASE)
      with open(path) as f:
        rerun = json.load(f)
      self.assertEqual(rerun['config']['feddf_teachers'],
                       hybrid_records.FEDDF_TEACHERS)
      self.assertEqual(rerun['rows'], by_name['feddf_id', 0.0].rows)
      # A record made with another configuration is refused.
      path = os.path.join(d, study.record_name('fedavg', settings[0], 0)
                          + '.json')
      with open(path) as f:
        kept = json.load(f)
      kept['config']['client_lr'] = 0.5
      with open(path, 'w') as f:
        json.dump(kept, f)
      with self.assertRaisesRegex(ValueError, 'other settings'):
        study.run_study(None, variants, settings, [0], d, base=_BASE)


if __name__ == '__main__':
  absltest.main()
