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
"""The run loop's fingerprint, rows and round loop (the studies' tests run
it end to end: resumed, grouped and several rounds a call)."""

import os
import shutil
import tempfile

from absl.testing import absltest
import numpy as np

from experiments.common import run_loop


class RunLoopTest(absltest.TestCase):

  def test_fingerprint_leaves_out_rounds(self):
    self.assertEqual(
        run_loop.fingerprint(dict(rounds=10, lr=0.1), 'pt', switch_round=3),
        dict(lr=0.1, scenario='pt', switch_round=3))
    self.assertEqual(run_loop.fingerprint(dict(lr=0.1), 'pt'),
                     dict(lr=0.1, scenario='pt'))

  def test_eval_rows_keep_the_evaluated_rounds(self):
    directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
    path = os.path.join(directory, 'metrics.csv')
    with open(path, 'w') as f:
      # The runner's CSV: every round, an evaluation every other one.
      f.write('round_num,train/loss,eval/auc,eval/loss\n'
              '1,0.9,,\n'
              '2,0.8,0.75,0.5\n'
              '3,0.7,,\n'
              '4,0.6,0.875,0.25\n')
    self.assertEqual(
        run_loop.eval_rows(path, ('auc', 'loss'), ('train/loss',)),
        [dict(round=2, auc=0.75, loss=0.5, **{'train/loss': 0.8}),
         dict(round=4, auc=0.875, loss=0.25, **{'train/loss': 0.6})])
    self.assertEqual(run_loop.eval_rows(path, ('loss',)),
                     [dict(round=2, loss=0.5), dict(round=4, loss=0.25)])

  def test_run_rounds_evaluates_keeps_and_stops_on_non_finite_weights(self):
    kept = []

    def next_fn(state, round_num):
      weights = [np.array([state + round_num], np.float32)]
      return state + round_num, {}, weights

    final = run_loop.run_rounds(
        next_fn, 0, first_round=1, rounds=5, name='sum', eval_every=2,
        evaluation_fn=lambda w: dict(value=float(w[0][0])),
        finish_round_fn=lambda r, s, m: kept.append((r, s, dict(m))),
        diverged=lambda r, bad: ValueError(f'round {r}: {bad}'))
    # Rounds 2-5 after round 1; evaluated at 2, 4 and the last, 5.
    self.assertEqual(final, 2 + 3 + 4 + 5)
    self.assertEqual(kept, [(2, 2, dict(value=2.0)), (3, 5, {}),
                            (4, 9, dict(value=9.0)),
                            (5, 14, dict(value=14.0))])

    def bad_fn(state, round_num):
      return state, {}, [np.array([np.nan if round_num == 2 else 0.0])]

    kept.clear()
    with self.assertRaisesRegex(ValueError, r"round 2: \['model weights'\]"):
      run_loop.run_rounds(
          bad_fn, 0, first_round=0, rounds=3, name='nan', eval_every=1,
          evaluation_fn=lambda w: {}, diverged=lambda r, bad: ValueError(
              f'round {r}: {bad}'),
          finish_round_fn=lambda r, s, m: kept.append(r))
    self.assertEqual(kept, [1])  # The bad round is never kept.

  def test_train_steps_resumes_to_the_uninterrupted_run(self):
    directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, directory, ignore_errors=True)

    def next_fn(state, round_num):
      weights = [state[0][0] * 0.5 + round_num]
      return (weights,), {}, weights

    def train(run_dir, rounds, hparams=None):
      return run_loop.train_steps(
          next_fn, ([np.zeros(2, np.float32)],), name='halve',
          run_dir=os.path.join(directory, run_dir),
          hparams=hparams or dict(rate=0.5), rounds=rounds, eval_every=2,
          evaluation_fn=lambda w: dict(value=float(w[0][0])),
          metric_names=('value',), rounds_per_checkpoint=2,
          weights_of=lambda state: state[0],
          diverged=lambda r, bad: ValueError(bad))

    whole = train('whole', 5)
    self.assertEqual([r['round'] for r in whole.rows], [0, 2, 4, 5])
    value = 0.0
    for round_num in range(1, 6):
      value = value * 0.5 + round_num
      if round_num == 4:
        self.assertAlmostEqual(whole.rows[2]['value'], value)
    self.assertAlmostEqual(whole.rows[-1]['value'], value)
    self.assertEqual(whole.resumed_from, 0)
    train('parts', 3)
    resumed = train('parts', 5)
    self.assertEqual(resumed.resumed_from, 3)
    # The shorter run's last evaluation (round 3) stays; the others are
    # the uninterrupted run's.
    self.assertEqual([r['round'] for r in resumed.rows], [0, 2, 3, 4, 5])
    self.assertEqual([r for r in resumed.rows if r['round'] != 3],
                     whole.rows)
    with self.assertRaisesRegex(ValueError, 'other settings'):
      train('parts', 6, dict(rate=0.25))


if __name__ == '__main__':
  absltest.main()
