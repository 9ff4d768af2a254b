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
"""Tests of the MovieLens dual-encoder experiment binary.

On small generated ratings files (MovieLens files may not be shipped).
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
import numpy as np

from experiments.movielens import movielens_lib

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _temp_dir(test: absltest.TestCase) -> str:
  # Not `create_tempdir`: under pytest absl's flags are unparsed.
  path = tempfile.mkdtemp()
  test.addCleanup(shutil.rmtree, path, ignore_errors=True)
  return path


def _write_ratings(path: str, num_users=70, num_movies=40, seed=0,
                   extra_line=None):
  """A u.data-style file: users rate 6-14 movies, popular ones more often."""
  rng = np.random.default_rng(seed)
  popularity = 1.0 / np.arange(1, num_movies + 1)
  popularity /= popularity.sum()
  lines = []
  for user in range(1, num_users + 1):
    count = int(rng.integers(6, 15))
    movies = rng.choice(np.arange(1, num_movies + 1), count, replace=False,
                        p=popularity)
    for t, movie in enumerate(movies):
      lines.append(f'{user}\t{movie}\t{int(rng.integers(1, 6))}\t'
                   f'{880000000 + 1000 * t}')
  if extra_line is not None:
    lines.insert(3, extra_line)
  with open(path, 'w') as f:
    f.write('\n'.join(lines) + '\n')
  return path


def _run(*args, timeout=600):
  return subprocess.run(
      [sys.executable, '-m', 'experiments.movielens.movielens_main', *args],
      cwd=_REPO, capture_output=True, text=True, timeout=timeout,
      check=False)


def _training_metrics(output_dir: str, scenario: str) -> list[dict]:
  """The runner's per-round training metrics (`client_work/train/*`)."""
  with open(os.path.join(output_dir, 'results', scenario,
                         'metrics.csv')) as f:
    return [{k: float(v) for k, v in row.items()
             if k.startswith('train/client_work/train/') and v}
            for row in csv.DictReader(f)]


class GroupedEqualsPerClientTest(absltest.TestCase):

  def test_every_scenario_runs_in_groups_with_the_per_client_numbers(self):
    directory = _temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    results = {}
    # 5 clients in groups of 2: uneven groups (3 + 2, `split_cohort`).
    for clients_per_group in (1, 2):
      config = movielens_lib.Config(
          rounds=2, clients_per_round=5, client_steps=2, client_batch_size=4,
          embedding_dim=8, context_length=3, keys_per_client=8,
          eval_every=1, clients_per_group=clients_per_group)
      output_dir = os.path.join(directory, f'out{clients_per_group}')
      results[clients_per_group] = (movielens_lib.run_experiment(
          ratings, config=config, output_dir=output_dir,
          progress=False), output_dir)
    (per_client, per_client_dir), (grouped, grouped_dir) = (results[1],
                                                            results[2])
    for a, b in zip(per_client.results, grouped.results):
      self.assertEqual(a.scenario, b.scenario)
      self.assertEqual([r['round'] for r in a.rows], [0, 1, 2])
      for row_a, row_b in zip(a.rows, b.rows):
        for key in ('recall_at_10', 'hinge_loss'):
          np.testing.assert_allclose(row_a[key], row_b[key], rtol=1e-4,
                                     err_msg=f'{a.scenario} {key}')
      # The models train: round 2 is not round 0.
      self.assertNotEqual(a.rows[0]['hinge_loss'], a.rows[-1]['hinge_loss'])
      train_a = _training_metrics(per_client_dir, a.scenario)
      train_b = _training_metrics(grouped_dir, b.scenario)
      self.assertLen(train_b, len(train_a))
      for round_a, round_b in zip(train_a, train_b):
        self.assertIn('train/client_work/train/loss', round_a)
        for key, value in round_a.items():
          np.testing.assert_allclose(value, round_b[key], rtol=1e-4,
                                     err_msg=f'{a.scenario} {key}')
      # Costs are a client's, not a group's, in both modes.
      self.assertEqual(a.costs, b.costs)


class MovieLensBinaryTest(absltest.TestCase):

  def test_two_round_smoke_run_of_every_scenario(self):
    directory = _temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'))
    output_dir = os.path.join(directory, 'out')
    results = os.path.join(directory, 'RESULTS.md')
    run = _run(f'--ratings_file={ratings}', '--rounds=2',
               '--clients_per_round=3', '--client_steps=2',
               '--client_batch_size=4', '--embedding_dim=8',
               '--context_length=3', '--keys_per_client=8',
               '--eval_every=1', f'--output_dir={output_dir}',
               f'--results_markdown={results}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    for scenario in movielens_lib.SCENARIOS:
      self.assertIn(scenario, run.stdout)
      scenario_rows = [r for r in rows if r['scenario'] == scenario]
      self.assertEqual([int(r['round']) for r in scenario_rows], [0, 1, 2])
      for r in scenario_rows:
        self.assertBetween(float(r['recall_at_10']), 0.0, 1.0)
    with open(os.path.join(output_dir, 'costs.txt')) as f:
      costs = {line.split()[0]: line.split() for line in f
               if line.split() and line.split()[0] in
               movielens_lib.SCENARIOS}
    baseline_down = float(costs['baseline'][1])
    for scenario in ('parallel_training', 'one_way_gt', 'two_way_gt'):
      # 8 of 41 rows travel instead of the whole table.
      self.assertLess(float(costs[scenario][1]), baseline_down)
      self.assertIn('less', ' '.join(costs[scenario]))
      # Client Mflop: the slice's hinge steps against the whole table's
      # spreadout on every client.
      self.assertLess(float(costs[scenario][5]),
                      float(costs['baseline'][4]))
    with open(results) as f:
      self.assertIn('MovieLens dual encoder', f.read())
    self.assertTrue(os.path.exists(os.path.join(output_dir, 'recall.png')))

  def test_missing_file_is_a_clear_message(self):
    run = _run(f'--ratings_file={_temp_dir(self)}/ratings.dat', '--rounds=1',
               timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn('error:', run.stderr)
    self.assertIn('ratings.dat', run.stderr)
    self.assertNotIn('Traceback', run.stderr)

  def test_malformed_line_names_file_and_line_or_is_skipped(self):
    directory = _temp_dir(self)
    ratings = _write_ratings(os.path.join(directory, 'u.data'),
                             extra_line='7\tnot-a-movie\t3\t881250949')
    run = _run(f'--ratings_file={ratings}', '--rounds=1',
               f'--output_dir={directory}/out', timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn(f'{ratings}: line 4', run.stderr)
    self.assertNotIn('Traceback', run.stderr)
    flags = [f'--ratings_file={ratings}', '--skip_malformed',
             '--scenarios=one_way_gt', '--clients_per_round=2',
             '--client_steps=1', '--embedding_dim=4', '--context_length=3',
             '--keys_per_client=8', '--eval_every=1',
             f'--output_dir={directory}/out2']
    run = _run('--rounds=1', *flags)
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    # A finished run is extended by a larger --rounds: it resumes.
    run = _run('--rounds=2', *flags)
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    self.assertIn('one_way_gt: resuming after round 1', run.stderr)
    with open(os.path.join(directory, 'out2', 'metrics.csv')) as f:
      self.assertEqual([int(r['round']) for r in csv.DictReader(f)],
                       [0, 1, 2])


if __name__ == '__main__':
  absltest.main()
