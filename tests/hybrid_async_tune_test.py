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
"""The hybrid experiment's hyperparameter search (`tune_lib`, `tune_main`).

The search logic runs against a stand-in `run_method` whose accuracy is a
known function of the hyperparameters, so the selection is known; the
binaries run once end to end on a tiny real run.
"""

import json
import math
import os
from unittest import mock

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import tune_lib
from tests import binary_runs
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.tasks import hybrid_images


def _accuracy(method: str, c: hybrid_config.Config) -> float:
  """A known validation accuracy per point (peaks given below)."""
  if method == hybrid_config.FEDAVG:
    # Peak at client lr 1e-3, 2 epochs.
    peak = 0.5
    return peak - 0.1 * abs(math.log10(c.client_lr) + 3) - 0.01 * abs(
        c.client_epochs - 2)
  # FedBuff: peak at server lr 0.1, buffer 20; lower unless the client
  # values selected above are used.
  bonus = 0.2 if (c.client_lr, c.client_epochs) == (1e-3, 2) else 0.0
  return bonus + 0.3 - abs(c.server_lr - 0.1) - 0.001 * abs(
      c.buffer_size - 20)


class TuneTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    x, y = hybrid_images.load_digits_images(size=8, channels=3)
    # The runs are stood in for: only the sizes must pass validation.
    self.config = hybrid_config.Config(
        rounds=3, num_clients=12, clients_per_round=2, server_size=30,
        eval_size=80, validation_size=20, delay_std=0.5, alpha=0.5)
    self.calls = []
    self.splits = {}

    def data_fn(seed, alpha):
      split = hybrid_images.build_hybrid_split(
          x[:300], y[:300], num_clients=12, alpha=alpha, server_size=30,
          eval_size=80, seed=seed, validation_size=20)
      self.splits[seed] = split
      return hybrid_config.Data(split, None, None, f'digits seed {seed}')

    self.data_fn = data_fn

    def fake_run(method, data, config, seed, cache, clients_per_group,
                 checkpoint_path=None):
      del cache, clients_per_group, checkpoint_path
      self.calls.append((method, config, seed, data.split.eval_indices))
      accuracy = _accuracy(method, config)
      # The final metric is the best of the last 5 evaluations.
      return hybrid_runs.MethodRun(
          [hybrid_runs.RunRow(method, config.alpha, config.delay_std, seed, k,
                              accuracy - (0.05 if k < 3 else 0.0), 1.0, 0.0)
           for k in range(4)], [], {})

    patcher = mock.patch.object(hybrid_runs, 'run_method',
                                side_effect=fake_run)
    patcher.start()
    self.addCleanup(patcher.stop)

  def _tune(self, output_dir, methods, **kwargs):
    return tune_lib.tune(self.data_fn, self.config, methods=methods,
                         seeds=[0, 1],
                         settings=[hybrid_config.Setting(0.5, 0.5)],
                         output_dir=output_dir, **kwargs)

  def test_selects_the_best_point_client_stage_first_on_validation(self):
    output_dir = temp_dirs.temp_dir(self)
    selected, searches = self._tune(
        output_dir, [hybrid_config.FEDBUFF, hybrid_config.FEDAVG])
    self.assertEqual(selected.client, dict(client_lr=1e-3, client_epochs=2))
    self.assertEqual(selected.methods,
                     {'fedbuff': dict(server_lr=0.1, buffer_size=20)})
    self.assertEqual([s.method for s in searches], ['fedavg', 'fedbuff'])
    # 9 client points + 9 FedBuff points, 2 seeds each.
    self.assertLen(self.calls, 36)
    for method, config, seed, eval_indices in self.calls:
      # Scored on the validation set, never the test set.
      np.testing.assert_array_equal(eval_indices,
                                    self.splits[seed].validation_indices)
      if method == hybrid_config.FEDBUFF:
        self.assertEqual((config.client_lr, config.client_epochs),
                         (1e-3, 2))
    best = searches[1].points[searches[1].selected]
    self.assertAlmostEqual(best.score, 0.5)
    self.assertEqual(best.runs, 2)
    with open(os.path.join(output_dir, tune_lib.SELECTED_FILE)) as f:
      self.assertEqual(tune_lib.Selected(**json.load(f)), selected)
    with open(os.path.join(output_dir, tune_lib.TABLE_FILE)) as f:
      table = f.read()
    self.assertIn('client_lr (our choice): whole grid', table)
    self.assertIn('server_lr (paper): whole grid', table)
    # The tie-breaking second score beside it: the mean over the runs'
    # last half (rounds 2 and 3 of 1-3).
    self.assertIn('| **0.1** | **20** | **50.0** | **47.5** | 2 |', table)

    # Again: every point is read back, none runs.
    self.calls.clear()
    again, _ = self._tune(output_dir,
                          [hybrid_config.FEDAVG, hybrid_config.FEDBUFF])
    self.assertEqual(again, selected)
    self.assertEmpty(self.calls)

  def test_a_stated_subset_and_method_by_method(self):
    output_dir = temp_dirs.temp_dir(self)
    self._tune(output_dir, [hybrid_config.FEDAVG],
               only={'client_lr': [1e-3], 'client_epochs': [1, 2]})
    self.assertLen(self.calls, 4)
    # A later search of FedBuff alone keeps the client selection; a
    # method-qualified restriction applies to that method only.
    selected, searches = self._tune(
        output_dir, [hybrid_config.FEDBUFF],
        only={'buffer_size': [10, 50], 'fedbuff:server_lr': [0.1, 1.0]})
    self.assertEqual(selected.client, dict(client_lr=1e-3, client_epochs=2))
    self.assertEqual(selected.methods['fedbuff'],
                     dict(server_lr=0.1, buffer_size=10))
    self.assertLen(searches[0].points, 4)
    self.assertEqual(selected.searched['fedbuff']['server_lr'], dict(
        values=[0.1, 1.0], grid=[0.01, 0.1, 1.0], source='paper'))
    with open(os.path.join(output_dir, tune_lib.TABLE_FILE)) as f:
      self.assertIn("buffer_size (paper): searched ['10', '50'] of "
                    "['10', '20', '50']", f.read())

  def test_methods_built_on_fedbuff_are_tuned_at_its_selection(self):
    output_dir = temp_dirs.temp_dir(self)
    with self.assertRaisesRegex(ValueError, 'tune fedbuff first'):
      self._tune(output_dir, [hybrid_config.FED_FT])
    self.assertEmpty(self.calls)
    # Listed after it or not, FedBuff is tuned first, and Fed+FT's points
    # run at FedBuff's selected buffer and server lr.
    self._tune(output_dir, [hybrid_config.FED_FT, hybrid_config.FEDBUFF],
               only={'server_epochs': [1], 'server_sgd_lr': [1e-3]})
    self.assertEqual([m for m, *_ in self.calls][:1], [hybrid_config.FEDBUFF])
    fine_tuned = [c for m, c, *_ in self.calls if m == hybrid_config.FED_FT]
    self.assertNotEmpty(fine_tuned)
    for config in fine_tuned:
      self.assertEqual((config.buffer_size, config.server_lr), (20, 0.1))

  def test_a_search_starts_from_a_base_selection(self):
    # Another protocol's selection: its client values and other methods
    # stand; the methods searched here replace theirs.
    base = tune_lib.Selected(
        dict(client_lr=1e-3, client_epochs=2),
        dict(fedbuff=dict(server_lr=1.0, buffer_size=50),
             center=dict(server_epochs=10, server_sgd_lr=1e-3)), {})
    selected, _ = self._tune(temp_dirs.temp_dir(self), [hybrid_config.FEDBUFF],
                             base_selected=base)
    self.assertEqual(selected.client, base.client)
    self.assertEqual(selected.methods, dict(
        fedbuff=dict(server_lr=0.1, buffer_size=20),
        center=dict(server_epochs=10, server_sgd_lr=1e-3)))
    for _, config, _, _ in self.calls:
      self.assertEqual((config.client_lr, config.client_epochs), (1e-3, 2))

  def test_bad_arguments(self):
    output_dir = temp_dirs.temp_dir(self)
    with self.assertRaisesRegex(ValueError, 'validation_size'):
      tune_lib.tune(self.data_fn, self.config._replace(validation_size=0),
                    methods=[hybrid_config.FEDAVG], seeds=[0],
                    settings=[hybrid_config.Setting(0.5, 0.5)],
                    output_dir=output_dir)
    with self.assertRaisesRegex(ValueError, 'has a grid'):
      self._tune(output_dir, [hybrid_config.HFCL])
    with self.assertRaisesRegex(ValueError, 'no value'):
      self._tune(output_dir, [hybrid_config.FEDBUFF],
                 only={'buffer_size': [15]})
    with self.assertRaisesRegex(ValueError, 'names no method'):
      self._tune(output_dir, [hybrid_config.FEDBUFF],
                 only={'center:server_lr': [1]})
    self.assertEmpty(self.calls)
    path = os.path.join(output_dir, 'selected.json')
    with open(path, 'w') as f:
      json.dump(dict(client={}, methods={'fedbuff': {'lr': 1}}), f)
    with self.assertRaisesRegex(ValueError, 'unknown'):
      tune_lib.read_selected(path)
    with self.assertRaisesRegex(ValueError, 'No selected'):
      tune_lib.read_selected(path + '.missing')


def _run(module, *args, timeout=900):
  return preloaded_python.run_module(module, *args, timeout=timeout)


_TINY = ('--data=digits', '--cifar10_npz=', '--image_size=8', '--rounds=2',
         '--num_clients=12', '--clients_per_round=2', '--alphas=0.5',
         '--delay_stds=0.5', '--server_size=30', '--eval_size=100',
         '--validation_size=20', '--client_batch_size=8',
         '--conv_filters=2,4,4', '--dense_units=8', '--eval_every=1',
         '--buffer_size=2', '--seeds=0', '--server_steps=1')


@binary_runs.runs_binaries
class TuneBinaryTest(absltest.TestCase):

  def test_tune_then_final_runs_at_the_selected_values(self):
    directory = temp_dirs.temp_dir(self)
    tuning_dir = os.path.join(directory, 'tuning')
    tuned = _run('experiments.hybrid_async.tune_main', *_TINY,
                 '--methods=fedavg,fedasync', '--tune_methods=fedavg,fedasync',
                 '--only=client_lr=0.001', '--only=client_epochs=1',
                 '--only=fedasync_a=0.5', f'--output_dir={tuning_dir}')
    self.assertEqual(tuned.returncode, 0, tuned.stderr[-3000:])
    selected = tune_lib.read_selected(
        os.path.join(tuning_dir, 'selected.json'))
    self.assertEqual(selected.client, dict(client_lr=1e-3, client_epochs=1))
    self.assertEqual(selected.methods['fedasync']['fedasync_a'], 0.5)
    self.assertIn(selected.methods['fedasync']['fedasync_alpha'],
                  (0.2, 0.4, 0.8))
    results = os.path.join(directory, 'RESULTS.md')
    final = _run('experiments.hybrid_async.hybrid_async_main', *_TINY,
                 '--methods=fedavg,fedasync',
                 f'--selected_json={tuning_dir}/selected.json',
                 f'--output_dir={directory}/final',
                 f'--results_markdown={results}')
    self.assertEqual(final.returncode, 0, final.stderr[-3000:])
    with open(results) as f:
      report = f.read()
    alpha = selected.methods['fedasync']['fedasync_alpha']
    self.assertIn(f'| fedasync | fedasync_a = 0.5, fedasync_alpha = '
                  f'{alpha:g} | fedasync_a: [0.5] of the grid [0.1, 0.5, '
                  '0.9]; fedasync_alpha: the whole grid |', report)
    self.assertIn('| fedavg | client_epochs = 1, client_lr = 0.001 | '
                  'client_epochs: [1] of the grid [1, 2, 5], '
                  'our choice; client_lr: [0.001] of the grid [0.0001, '
                  '0.001, 0.01], our choice |', report)
    self.assertIn('E = 1 local epochs of adam', report)
    bad = _run('experiments.hybrid_async.tune_main', *_TINY,
               '--only=buffer_size', f'--output_dir={tuning_dir}',
               timeout=300)
    self.assertEqual(bad.returncode, 1)
    self.assertIn('error: --only', bad.stderr)
    self.assertNotIn('Traceback', bad.stderr)


if __name__ == '__main__':
  absltest.main()
