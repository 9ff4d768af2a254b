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
"""Tests of the measured differences from the paper (`gaps_lib`), on
hand-made run records."""

import json
import os

from absl.testing import absltest

from experiments.hybrid_async import gaps_lib
from experiments.hybrid_async import gaps_records
from experiments.hybrid_async import gaps_search
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import paper_tables
from tests import temp_dirs


def _rows(method, alpha, delay, seed, accuracies):
  return [hybrid_runs.RunRow(method, alpha, delay, seed, k, a, 1.0, 0.0)
          for k, a in enumerate(accuracies)]


def _write(path, rows):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w') as f:
    json.dump(dict(fingerprint={}, rows=[r._asdict() for r in rows],
                   diagnostics=[], notes={}), f)


class GapsTest(absltest.TestCase):

  def test_point_scores_average_a_points_runs(self):
    d = temp_dirs.temp_dir(self)
    point = os.path.join(d, 'points', 'fedavg', 'client_lr=0.001')
    # Finals (best of the last 5): 0.5 and 0.3 -> 40%.
    _write(os.path.join(point, 'a.json'),
           _rows('fedavg', 0.1, 0, 0, [0.9, 0.1, 0.5, 0.2, 0.2, 0.2]))
    _write(os.path.join(point, 'b.json'),
           _rows('fedavg', 0.1, 0, 1, [0.3] * 6))
    self.assertEqual(gaps_records.point_scores(d, 'fedavg'),
                     {'client_lr=0.001': 40.0})
    self.assertEqual(gaps_records.point_scores(d, 'center'), {})

  def test_scale_lines_set_both_scales_side_by_side(self):
    small, full = temp_dirs.temp_dir(self), temp_dirs.temp_dir(self)
    for d, scores in ((small, {'a': 0.1, 'b': 0.2}),
                      (full, {'a': 0.4, 'b': 0.1, 'c': 0.5})):
      for key, acc in scores.items():
        _write(os.path.join(d, 'points', 'fedavg', key, 'r.json'),
               _rows('fedavg', 0.1, 0, 0, [acc] * 5))
    _write(os.path.join(small, 'points', 'center', 'x', 'r.json'),
           _rows('center', 0.1, 0, 0, [0.35] * 5))
    text = '\n'.join(gaps_lib.scale_lines(small, full))
    self.assertIn('| a | 10.0 | 40.0 | +30.0 |', text)
    self.assertIn('| b | 20.0 | 10.0 | -10.0 |', text)
    self.assertNotIn('| c |', text)  # Only points searched at both scales.
    self.assertIn('+30.0 to +30.0 points more at the 1 of these 2 points',
                  text)
    self.assertIn('(+10.0 on average over all)', text)
    self.assertIn('at our scale 35.0 vs 20.0 (+15.0 points).', text)
    center = temp_dirs.temp_dir(self)
    _write(os.path.join(center, 'points', 'center', 'y', 'r.json'),
           _rows('center', 0.1, 0, 0, [0.3] * 5))
    text = '\n'.join(gaps_lib.scale_lines(small, full, center))
    # The paper's scale: Center 30 against FedAvg's best there, 50 (c).
    self.assertIn('at the paper\'s 30.0 vs 50.0 (-20.0; FedAvg\'s best of '
                  'the 3 client points', text)
    self.assertEqual(gaps_lib.scale_lines(small, temp_dirs.temp_dir(self)),
                     [])

  def test_tables_of_differences_ours_and_the_papers(self):
    n5, n20 = (0.1, 5.0), (0.1, 20.0)
    ours = {'fedavg': {n5: 30.0, n20: 30.0},
            'fedavg_delayed': {n5: 20.0, n20: 10.0},
            'fedbuff': {n5: 25.0}, 'feddle_id': {n5: 26.0, n20: 12.0},
            'center': {n5: 40.0, n20: 40.0}}
    table = paper_tables.TABLE7_CIFAR10_CNN
    delays = '\n'.join(gaps_lib.delay_lines(ours, table, [n5, n20],
                                            ['N(5)', 'N(20)']))
    self.assertIn('| ours: fedavg (no delays) - fedavg_delayed | +10.0 | '
                  '+20.0 |', delays)
    # Table 7, Dir(0.1): fedbuff 33.2 / 26.8, fedavg 35.0 / 31.0.
    self.assertIn('| ours: fedbuff - fedavg_delayed | +5.0 | n/a |', delays)
    self.assertIn('| paper: fedbuff - fedavg_delayed | -1.8 | -4.2 |',
                  delays)
    self.assertNotIn('ours: fedasync', delays)
    # The paper's FedAvg under delays (35.0 / 31.0) minus ours without.
    self.assertIn('| paper fedavg_delayed - ours: fedavg (no delays) | +5.0 | '
                  '+1.0 |', delays)
    merges = '\n'.join(gaps_lib.merge_gain_lines(ours, table, [n5, n20],
                                                 ['N(5)', 'N(20)']))
    # Table 7: feddle_id 52.9 / 51.2; center 42.1.
    self.assertIn('| ours: feddle_id - fedbuff | +1.0 | n/a |', merges)
    self.assertIn('| paper: feddle_id - fedbuff | +19.7 | +24.4 |', merges)
    self.assertIn('| ours: center - fedbuff | +15.0 | n/a |', merges)

  def test_settings_in_the_papers_column_order_and_the_section(self):
    rows = (_rows('fedbuff', 0.3, 5.0, 0, [0.2] * 5)
            + _rows('fedbuff', 0.1, 5.0, 0, [0.2] * 5)
            + _rows('fedbuff', 0.1, 20.0, 0, [0.2] * 5)
            + _rows('center', 0.1, 0.0, 0, [0.4] * 5))
    self.assertEqual(gaps_records.settings_of(rows), [
        hybrid_config.Setting(0.1, 20.0), hybrid_config.Setting(0.1, 5.0),
        hybrid_config.Setting(0.3, 5.0)])
    d = temp_dirs.temp_dir(self)
    _write(os.path.join(d, 'r.json'), rows)
    text = gaps_lib.results_markdown(
        command='cmd', machine='m', date='today', small_dir=d, full_dir=d,
        full_center_dir=None,
        tables=[('From scratch', gaps_records.kept_rows(d),
                 paper_tables.TABLE7_CIFAR10_CNN)])
    self.assertIn('### From scratch (against the paper\'s table 7; ours: '
                  'seeds [0])', text)
    # Center 40 against FedBuff 20 where Center ran (Dir(0.1) only).
    self.assertIn('| ours: center - fedbuff | +20.0 | +20.0 | n/a |', text)
    self.assertIn('No search points at both scales yet.', text)

  def test_search_lines_read_each_span_study(self):
    small, span, empty = (temp_dirs.temp_dir(self) for _ in range(3))
    _write(os.path.join(small, 'points', 'feddle_id',
                        'feddle_search_lr=1e-05,feddle_search_epochs=1',
                        'r.json'), _rows('feddle_id', 0.1, 5.0, 0, [0.2] * 5))

    def score(acc):
      return {'evaluation': acc, 'validation': acc, 'server_loss': 2.0}

    probe = dict(merge=3, atlas=10, staleness=4.0, run_move=0.001,
                 prior=0.1, fedbuff=score(0.1),
                 oracle=dict(score(0.12), move=0.3),
                 finetune=dict(score(0.2), in_span=0.3),
                 projected=score(0.1),
                 search={'0.001': dict(score(0.11), move=0.1,
                                       negative=0.0)})
    with open(os.path.join(span, 'feddle_id__a0.1_d5_s0.json'), 'w') as f:
      json.dump(dict(alpha=0.1, delay_std=5.0, seed=0,
                     config={'server_size': 250}, probes=[probe],
                     final_accuracy=0.2, seconds=1.0, data='tiny digits'),
                f)
    # A second point, kept with its validation size: 100 images at 20%
    # give a standard error of 4 points, so 17% lies within it.
    path = os.path.join(small, 'points', 'feddle_id',
                        'feddle_search_lr=0.001,feddle_search_epochs=1',
                        'r.json')
    _write(path, _rows('feddle_id', 0.1, 5.0, 0, [0.17] * 5))
    with open(path) as f:
      kept = json.load(f)
    with open(path, 'w') as f:
      json.dump(dict(kept, fingerprint={'validation_size': 100}), f)
    self.assertEqual(gaps_records.validation_size(small, 'feddle_id'), 100)
    text = '\n'.join(gaps_search.search_lines(small, [span, empty]))
    self.assertIn('one run scored on 100 validation images: a standard '
                  'error of about 4.0 points at the best score (20.0%), '
                  'within which lie 2 of the 2 points', text)
    # Points named without an optimizer were searched with Adam.
    self.assertIn('adam lr 1e-05: 20.0%, adam lr 0.001: 17.0%', text)
    self.assertNotIn('Selected', text)
    with open(os.path.join(small, 'selected.json'), 'w') as f:
      json.dump({'client': {}, 'methods': {'feddle_id': {
          'feddle_search_optimizer': 'scaled_sgd', 'feddle_search_lr': 0.03,
          'feddle_search_epochs': 1}}}, f)
    self.assertIn('Selected (by the tie rule of the search\'s tuning.md): '
                  'scaled_sgd lr 0.03, 1 epochs.',
                  '\n'.join(gaps_search.search_lines(small)))
    self.assertIn(f'(`{span}`, from scratch; settings Dir(0.1), N(5), '
                  'seeds [0])', text)
    # Bound +2 against fine-tuning's +10: the span is the limit.
    self.assertIn('span holds +2.0 points over FedBuff\'s merge', text)
    self.assertIn('is the first limit', text)
    self.assertNotIn(f'`{empty}`', text)

  def test_client_grid_lines_under_the_delays(self):
    grid = temp_dirs.temp_dir(self)
    for point, free, delayed in (('client_lr=0.001,client_epochs=5', 0.3,
                                  0.1), ('client_lr=0.0001,client_epochs=1',
                                         0.2, 0.25)):
      _write(os.path.join(grid, point, 'a.json'),
             _rows('fedavg', 0.1, 0.0, 0, [free] * 5))
      _write(os.path.join(grid, point, 'b.json'),
             _rows('fedavg_delayed', 0.1, 5.0, 0, [delayed] * 5))
    text = '\n'.join(gaps_lib.client_grid_lines(
        grid, 'client_lr=0.001,client_epochs=5',
        paper_tables.TABLE7_CIFAR10_CNN))
    self.assertIn('| client_lr=0.001,client_epochs=5 (selected) | 30.0 | '
                  '10.0 |', text)
    self.assertIn('| client_lr=0.0001,client_epochs=1 | 20.0 | 25.0 |', text)
    # The selected point's row comes first.
    self.assertLess(text.index('(selected)'), text.index('0.0001'))
    self.assertIn('Dir(0.1), N(5): best 25.0% (client_lr=0.0001,'
                  'client_epochs=1), the selected point 10.0%, the paper\'s '
                  'FedAvg 35.0%.', text)
    self.assertEqual(gaps_lib.client_grid_lines(
        os.path.join(grid, 'none'), None, paper_tables.TABLE7_CIFAR10_CNN),
                     [])

  def test_search_rate_lines(self):
    rates = temp_dirs.temp_dir(self)
    point = os.path.join(rates, 'feddle_search_lr=0.01')
    _write(os.path.join(point, 'a.json'),
           _rows('feddle_id', 0.1, 5.0, 0, [0.3] * 5))
    _write(os.path.join(point, 'b.json'),
           _rows('fedbuff', 0.1, 5.0, 0, [0.2] * 5))
    tuned = (_rows('feddle_id', 0.1, 5.0, 0, [0.18] * 5)
             + _rows('feddle_id', 0.3, 5.0, 0, [0.5] * 5))
    selected = dict(feddle_search_optimizer='scaled_sgd',
                    feddle_search_lr=0.03, feddle_search_epochs=1)
    text = '\n'.join(gaps_search.search_rate_lines(rates, tuned, selected))
    self.assertIn('| feddle_id, search scaled_sgd lr 0.03, 1 epochs '
                  '(selected; the tuned table) | 18.0 |', text)
    self.assertIn('| feddle_id, search feddle_search_lr 0.01 | 30.0 |', text)
    self.assertIn('| fedbuff at Feddle\'s fallback values | 20.0 |', text)
    self.assertNotIn('50.0', text)  # Only the settings run at every rate.
    self.assertIn('over its fallback FedBuff (points): search scaled_sgd lr '
                  '0.03, 1 epochs (selected; the tuned table) -2.0 to -2.0; '
                  'search feddle_search_lr 0.01 +10.0 to +10.0.', text)
    # A point whose runs record their search settings is named by them.
    _write(os.path.join(rates, 'feddle_search_lr=0.001', 'a.json'),
           _rows('feddle_id', 0.1, 5.0, 0, [0.25] * 5))
    path = os.path.join(rates, 'feddle_search_lr=0.001', 'a.json')
    with open(path) as f:
      kept = json.load(f)
    with open(path, 'w') as f:
      json.dump(dict(kept, config=dict(feddle_search_optimizer='adam',
                                       feddle_search_lr=0.001,
                                       feddle_search_epochs=20)), f)
    text = '\n'.join(gaps_search.search_rate_lines(rates, tuned, selected))
    self.assertIn('| feddle_id, search adam lr 0.001, 20 epochs | 25.0 |',
                  text)
    self.assertEqual(gaps_search.search_rate_lines(
        os.path.join(rates, 'none'), tuned, selected), [])

  def test_run_length_lines_both_lengths_beside_the_paper(self):
    def run(method, delay, accuracy, rounds):
      return [hybrid_runs.RunRow(method, 0.1, delay, 0, k, accuracy, 1.0, 0.0)
              for k in range(0, rounds + 1, rounds // 5)]

    short = (run('fedavg', 0.0, 0.30, 70) + run('fedavg_delayed', 5.0, 0.10,
                                                 70)
             + run('fedbuff', 5.0, 0.15, 70))
    long = (run('fedavg', 0.0, 0.40, 200) + run('fedavg_delayed', 5.0, 0.25,
                                                 200)
            + run('fedbuff', 5.0, 0.30, 200))
    text = '\n'.join(gaps_lib.run_length_lines(
        short, long, paper_tables.TABLE7_CIFAR10_CNN))
    self.assertIn('### Run length: 70 and 200 rounds', text)
    self.assertIn('| ours, 70 rounds: fedavg_delayed | 10.0 |', text)
    self.assertIn('| ours, 200 rounds: fedavg_delayed | 25.0 |', text)
    # Table 7, Dir(0.1) N(5): the paper's FedAvg (under delays) 35.0.
    self.assertIn('| paper: fedavg_delayed | 35.0 |', text)
    self.assertIn('| paper: fedavg | n/a |', text)
    self.assertIn('70 rounds +20.0 to +20.0; 200 rounds +15.0 to +15.0.',
                  text)
    self.assertEqual(gaps_lib.run_length_lines(
        short, [], paper_tables.TABLE7_CIFAR10_CNN), [])

  def test_pretrained_lines_start_gain_and_search(self):
    # Round 0 is where a run starts: 5% and 15% -> 10% pretrained.
    pretrained = (_rows('fedavg', 0.1, 0.0, 0, [0.05] + [0.35] * 5)
                  + _rows('fedbuff', 0.1, 5.0, 0, [0.15] + [0.2] * 5))
    scratch = (_rows('fedavg', 0.1, 0.0, 0, [0.1] + [0.25] * 5)
               + _rows('fedbuff', 0.1, 5.0, 0, [0.1] + [0.2] * 5))
    small, again = temp_dirs.temp_dir(self), temp_dirs.temp_dir(self)
    for d, scores in ((small, {'lr=1': 0.2, 'lr=2': 0.3}),
                      (again, {'lr=1': 0.4, 'lr=2': 0.35})):
      for key, acc in scores.items():
        _write(os.path.join(d, 'points', 'fedavg', key, 'r.json'),
               _rows('fedavg', 0.1, 0, 0, [acc] * 5))
    text = '\n'.join(gaps_lib.pretrained_lines(scratch, pretrained, small,
                                               again))
    self.assertIn('The runs start at 10.0% (round 0, mean over runs; from '
                  'scratch 10.0%)', text)
    self.assertIn('ends at 35.0% from the pretrained body against 25.0% '
                  'from scratch', text)
    self.assertIn('the body adds +10.0 points', text)
    self.assertIn('it selects lr=1 (40.0%), against lr=2 (30.0%) from '
                  'scratch', text)
    self.assertIn('| lr=1 | 20.0 | 40.0 | +20.0 |', text)
    self.assertEqual(gaps_lib.pretrained_lines(scratch, [], small, again), [])


if __name__ == '__main__':
  absltest.main()
