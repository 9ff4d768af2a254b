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
"""benchmarks/paper_runs.py: s/round of the paper binaries from their records."""

import json
import os

from absl.testing import absltest

from benchmarks import paper_runs
from tests import temp_dirs


def _write(directory, name, record):
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, name), 'w') as f:
    json.dump(record, f)


def _movielens_record(scenario, seconds, cohort=100, complete=True):
  # The MovieLens binary's record: rounds at the top level.
  return dict(scenario=scenario, rounds=2000, seconds=seconds,
              seconds_per_round=seconds / 2000, seconds_complete=complete,
              date='2026-11-27 10:00 UTC', machine='Machine A',
              settings=dict(clients_per_round=cohort, client_steps=10,
                            embedding_dim=16))


def _lm_record(name, seconds_per_round, resumed_from=0, **settings):
  # The LM binary's record: rounds in the settings, `name` beside it.
  return dict(name=name, scenario=name.replace('_diagnostics', ''),
              seconds=seconds_per_round * 200,
              seconds_per_round=seconds_per_round,
              resumed_from=resumed_from, date='2026-11-27 11:00 UTC',
              machine='Machine B',
              settings=dict(dict(rounds=200, clients_per_round=10,
                                 client_steps=16, gru_units=64,
                                 embedding_dim=32), **settings))


class PaperRunsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = temp_dirs.temp_dir(self)
    self.movielens = os.path.join(self.root, 'movielens')
    _write(self.movielens, 'baseline.json',
           _movielens_record('baseline', 2000.0))
    _write(self.movielens, 'two_way_gt.json',
           _movielens_record('two_way_gt', 4000.0, complete=False))
    # A metrics CSV and table 4's records in a subdirectory are not runs.
    _write(self.movielens, 'baseline_metrics.csv', {})
    _write(os.path.join(self.movielens, 'diagnostics'), 'x.json',
           _movielens_record('parallel_training', 10.0))
    self.lm = os.path.join(self.root, 'lm')
    _write(self.lm, 'fl_only.json', _lm_record('fl_only', 4.5))
    _write(self.lm, 'parallel_training_diagnostics.json',
           _lm_record('parallel_training_diagnostics', 9.0,
                      with_diagnostics=True))
    _write(self.lm, 'oracle.json', _lm_record('oracle', 0.5, resumed_from=50))
    self.sources = [
        paper_runs.Source('Movies', self.movielens, 'make movies'),
        paper_runs.Source('LM', self.lm, 'make lm'),
        paper_runs.Source('Sites', os.path.join(self.root, 'none'),
                          'make sites')]

  def test_reads_training_runs_not_diagnostics(self):
    runs = paper_runs.read_runs(self.movielens)
    self.assertEqual([r.scenario for r in runs], ['baseline', 'two_way_gt'])
    self.assertEqual(runs[0].seconds_per_round, 1.0)
    self.assertEqual((runs[0].cohort, runs[0].client_steps, runs[0].rounds),
                     (100, 10, 2000))
    self.assertEqual(runs[0].model, 'embedding dimension 16')
    self.assertEqual([r.partial for r in runs], [False, True])
    runs = paper_runs.read_runs(self.lm)
    self.assertEqual([r.scenario for r in runs], ['fl_only', 'oracle'])
    self.assertEqual(runs[0].rounds, 200)
    self.assertEqual(runs[0].model, 'GRU 64, embedding 32')
    self.assertEqual([r.partial for r in runs], [False, True])

  def test_section_tables_summary_and_missing_records(self):
    text = paper_runs.build_section(self.sources, 'python -m x')
    self.assertIn('`python -m x`', text)
    self.assertIn('| baseline | 100 | 10 | embedding dimension 16 | 2000 | '
                  '1.00 | 0.56 | 2026-11-27 10:00 UTC |', text)
    self.assertIn('| two_way_gt | 100 | 10 | embedding dimension 16 | 2000 | '
                  '2.00 | 1.11 (partial) |', text)
    self.assertIn('| fl_only | 10 | 16 | GRU 64, embedding 32 | 200 | 4.50 |',
                  text)
    self.assertNotIn('diagnostics |', text)
    self.assertIn('Machine: Machine A.', text)
    self.assertIn('No run recorded yet: `make sites` makes them.', text)
    self.assertIn(
        "**At the papers' S = 100:** Movies: 2 scenario(s), 1.00-2.00 "
        's/round (median 1.50); LM: none (runs at S = 10); Sites: none.',
        text)
    # One timed scenario: its s/round, not a range.
    one = paper_runs.Run('fl_only', 100, 16, 'GRU 1024', 1, 819.9, 819.9,
                         False, 'd', 'm')
    self.assertEqual(
        paper_runs.summary_line(self.sources[:1], [[one]]),
        "**At the papers' S = 100:** Movies: 1 scenario(s), 819.90 s/round.")

  def test_bad_record_and_bad_sources_flag(self):
    with open(os.path.join(self.lm, 'broken.json'), 'w') as f:
      f.write('{')
    with self.assertRaisesRegex(ValueError, 'broken.json cannot be read'):
      paper_runs.read_runs(self.lm)
    _write(self.movielens, 'other.json', {'rows': []})
    with self.assertRaisesRegex(ValueError, 'other.json is not a run record'):
      paper_runs.read_runs(self.movielens)
    self.assertEqual(paper_runs.parse_sources(['T=d=make t']),
                     [paper_runs.Source('T', 'd', 'make t')])
    self.assertEqual(paper_runs.parse_sources(None), list(paper_runs.SOURCES))
    with self.assertRaisesRegex(ValueError, 'not TITLE=DIR=COMMAND'):
      paper_runs.parse_sources(['T=d'])

  def test_default_sources_are_the_make_targets_records_dirs(self):
    with open(os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'Makefile')) as f:
      makefile = f.read()
    for source in paper_runs.SOURCES:
      # `make TARGET [VARIABLE=VALUE ...]`: the records directory is the
      # target's once the variables are set.
      _, target, *assignments = source.command.split()
      self.assertIn(f'\n{target}:', makefile)
      expanded = makefile
      for assignment in assignments:
        name, value = assignment.split('=')
        expanded = expanded.replace(f'$({name})', value)
      self.assertIn(source.records_dir.split('/')[-1], expanded)


if __name__ == '__main__':
  absltest.main()
