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
"""The hybrid asynchronous binary end to end on generated CIFAR-format data.

A small npz of random JPEG images in the CIFAR-10 file format stands in for
the client images; scikit-learn's digits are the out-of-domain server set.
The binary runs in a subprocess (absl flags are process-global).
"""

import csv
import gc
import json
import os
import shutil
from unittest import mock

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import hybrid_async_lib
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_report
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
from experiments.hybrid_async import paper_tables
from tests import binary_runs
from tests import cifar10_testing
from tests import preloaded_python
from tests import temp_dirs
import tff_mixed
from tff_mixed.asynchronous import hybrid_baselines
from tff_mixed.tasks import hybrid_images



def _run(*args, timeout=900):
  return preloaded_python.run_module(
      'experiments.hybrid_async.hybrid_async_main', *args, timeout=timeout)


_SMALL = ('--rounds=2', '--num_clients=12', '--clients_per_round=2',
          '--alphas=0.5', '--delay_stds=0,0.5', '--server_size=30',
          '--eval_size=80', '--image_size=16', '--loadaboost_epochs=2',
          '--client_steps=2', '--client_batch_size=4', '--server_steps=1',
          '--feddle_search_steps=1', '--conv_filters=2,4,4',
          '--dense_units=8', '--eval_every=1', '--buffer_size=2')


# A tiny run's settings (the tests change what they need).
_TINY_CONFIG = hybrid_config.Config(
    rounds=2, num_clients=12, clients_per_round=2, delay_std=0.0, alpha=0.5,
    server_size=30, eval_size=80, client_steps=2, client_batch_size=4,
    client_optimizer='sgd', client_lr=0.05, loadaboost_epochs=2, server_steps=1,
    feddle_search_steps=1, conv_filters=(2, 4, 4), dense_units=8, eval_every=1,
    buffer_size=2)


def _digits_data(num_images, num_clients, server_size, seed):
  """Tiny real data: the first digits, upsampled to 8x8 RGB."""
  x, y = hybrid_images.load_digits_images(size=8, channels=3)
  split = hybrid_images.build_hybrid_split(
      x[:num_images], y[:num_images], num_clients=num_clients, alpha=0.5,
      server_size=server_size, eval_size=80, seed=seed)
  return hybrid_config.Data(split, None, None, 'digits')


def _rows(method, alpha, delay, seed, accuracies):
  return [hybrid_runs.RunRow(method, alpha, delay, seed, 10 * k, a, 1.0, 0.0)
          for k, a in enumerate(accuracies)]


class ClientGroupsTest(absltest.TestCase):
  """Client groups give the per-client runs' numbers, method by method."""

  def test_groups_equal_per_client(self):
    data = _digits_data(400, num_clients=10, server_size=30, seed=1)
    config = _TINY_CONFIG._replace(rounds=3, num_clients=10,
                                   clients_per_round=3, delay_std=0.8)
    cache = {}
    # K steps (SGD), and the paper's protocol: epochs of Adam.
    epochs = config._replace(client_steps=0, client_epochs=2,
                             client_optimizer='adam', client_lr=1e-3)
    for method, c in ((hybrid_config.FEDASYNC, config),
                      (hybrid_config.FEDBUFF, config),
                      (hybrid_config.CA2FL, config),
                      (hybrid_config.FEDDLE_ID, config),
                      (hybrid_config.FEDBUFF, epochs)):
      per_client, grouped = (hybrid_runs.run_method(method, data, c, 1, cache,
                                                    clients_per_group=k)
                             for k in (1, 2))
      for got, want in zip(grouped.rows, per_client.rows, strict=True):
        self.assertEqual(got.round, want.round)
        np.testing.assert_allclose(
            [got.accuracy, got.loss], [want.accuracy, want.loss], rtol=1e-4,
            err_msg=method)
      self.assertEqual(grouped.notes, per_client.notes)
    # The groups read the split's client store, written once for every
    # method, and removed with the cache.
    stores = [entry[2].store.directory for key, entry in cache.items()
              if key[0] == 'client_store']
    self.assertLen(stores, 1)
    self.assertTrue(os.path.isdir(stores[0]))
    cache.clear()
    gc.collect()
    self.assertFalse(os.path.exists(os.path.dirname(stores[0])))


class _Killed(Exception):
  """Stands in for a run killed during a round."""


class ResumeTest(absltest.TestCase):
  """A run interrupted mid-way resumes from its checkpoint and ends as the
  uninterrupted run, Feddle's diagnostics included."""

  def setUp(self):
    super().setUp()
    self.data = _digits_data(300, num_clients=8, server_size=30, seed=2)
    # Delays keep updates in flight at the checkpoint; 4 merges of Feddle.
    self.config = _TINY_CONFIG._replace(rounds=4, num_clients=8,
                                        clients_per_round=2, delay_std=0.8)
    self.cache = {}

  def _killer(self, model):
    del model

    def on_round(event):
      if event.round_num == 3:
        raise _Killed()
    return tff_mixed.AsyncObserver(on_round=on_round)

  def test_killed_feddle_run_resumes_to_the_uninterrupted_one(self):
    want = hybrid_runs.run_method(hybrid_config.FEDDLE_ID, self.data,
                                  self.config, 1, self.cache)
    self.assertNotEmpty(want.diagnostics)
    path = os.path.join(temp_dirs.temp_dir(self), 'run.pkl')
    with self.assertRaises(_Killed):
      hybrid_runs.run_method(hybrid_config.FEDDLE_ID, self.data, self.config, 1,
                             self.cache, observer_fn=self._killer,
                             checkpoint_path=path)
    self.assertTrue(os.path.exists(path))
    got = hybrid_runs.run_method(hybrid_config.FEDDLE_ID, self.data,
                                 self.config, 1, self.cache,
                                 checkpoint_path=path)
    self.assertEqual([r.round for r in got.rows],
                     [r.round for r in want.rows])
    np.testing.assert_allclose([(r.accuracy, r.loss) for r in got.rows],
                               [(r.accuracy, r.loss) for r in want.rows],
                               rtol=1e-6)
    # The rounds before the kill come from the checkpoint's observer.
    np.testing.assert_equal(got.diagnostics, want.diagnostics)  # NaN == NaN

  def test_kept_run_names_its_checkpoint_by_config_and_removes_it(self):
    out = temp_dirs.temp_dir(self)
    checkpoints = os.path.join(out, hybrid_async_lib.CHECKPOINTS_DIR)
    config = self.config._replace(rounds=2, delay_std=0.0)
    seen = []
    original = hybrid_runs.run_method

    def run_method(*args, checkpoint_path=None, **kwargs):
      seen.append(checkpoint_path)
      return original(*args, checkpoint_path=checkpoint_path, **kwargs)
    with mock.patch.object(hybrid_runs, 'run_method', run_method):
      for c in (config, config._replace(client_lr=0.1)):
        hybrid_records.kept_run(
            out, f'fedbuff_{c.client_lr}', hybrid_config.FEDBUFF, self.data,
            c, 1, self.cache,
            checkpoint_dir=checkpoints)
    self.assertLen(seen, 2)
    self.assertNotEqual(os.path.basename(seen[0]).split('-')[-1],
                        os.path.basename(seen[1]).split('-')[-1])
    self.assertTrue(all(os.path.dirname(p) == checkpoints for p in seen))
    # Both runs finished, so no checkpoint is left behind.
    self.assertEmpty(os.listdir(checkpoints))


class ProtocolTest(absltest.TestCase):
  """The paper's units: server epochs, FedAsync's a, weighted FedAvg."""

  def test_server_epochs_are_passes_over_the_server_set(self):
    c = _TINY_CONFIG._replace(server_batch_size=32, server_steps=7,
                              feddle_search_steps=3)
    # 0 epochs: the batch counts.
    self.assertEqual(hybrid_methods.server_steps(c, 100), 7)
    self.assertEqual(hybrid_methods.server_steps(c, 100, feddle_search=True), 3)
    c = c._replace(server_epochs=2, feddle_search_epochs=10)
    # ceil(100 / 32) = 4 batches an epoch.
    self.assertEqual(hybrid_methods.server_steps(c, 100), 8)
    self.assertEqual(hybrid_methods.server_steps(c, 100, feddle_search=True),
                     40)

  def test_methods_get_their_protocol_values(self):
    data = _digits_data(200, num_clients=6, server_size=40, seed=0)
    c = _TINY_CONFIG._replace(fedasync_a=0.9, fedasync_alpha=0.4,
                              server_epochs=3, server_batch_size=16)
    model = mock.Mock()
    fedasync = hybrid_methods.build_method(hybrid_config.FEDASYNC, model, data,
                                           c, 0)
    self.assertAlmostEqual(fedasync.mixing_weight(3), 0.4 * 4 ** -0.9)
    center = hybrid_methods.build_method(hybrid_config.CENTER, model, data, c,
                                         0)
    # 3 epochs of ceil(40 / 16) = 3 batches, with Adam by default.
    self.assertEqual(center._training.steps, 9)
    self.assertEqual(center._training.optimizer, 'adam')
    # HFCL's server trains as a client: K steps of the clients' optimizer.
    hfcl = hybrid_methods.build_method(hybrid_config.HFCL, model, data, c, 0)
    self.assertEqual(hfcl._training, hybrid_baselines.ServerTraining(
        steps=2, batch_size=4, learning_rate=0.05, optimizer='sgd'))
    self.assertEqual(
        hybrid_methods.hfcl_training(
            c._replace(client_steps=0, client_epochs=2, client_lr=1e-3,
                       client_optimizer='adam'), 40),
        hybrid_baselines.ServerTraining(steps=20, batch_size=4,
                                        learning_rate=1e-3, optimizer='adam'))
    fedavg = hybrid_methods.build_method(hybrid_config.FEDAVG, model, data, c,
                                         0)
    self.assertEqual((fedavg.weighting, fedavg.learning_rate,
                      fedavg.buffer_size), ('num_examples', 1.0, 2))
    self.assertEqual(hybrid_methods.client_epochs(hybrid_config.FEDBUFF, c),
                     None)
    c = c._replace(client_steps=0, client_epochs=3)
    self.assertEqual(hybrid_methods.client_epochs(hybrid_config.FEDBUFF, c), 3)
    self.assertIsNone(hybrid_methods.client_epochs(hybrid_config.LOADABOOST, c))
    self.assertEqual(hybrid_methods.loadaboost_epoch_steps(c),
                     c.loadaboost_steps // 2)
    # Feddle's atlas: twice the clients per round unless its size is set.
    feddle = hybrid_methods.build_method(hybrid_config.FEDDLE_ID, model, data,
                                         c, 0)
    self.assertEqual(feddle._config.max_anchors, 2 * c.clients_per_round)
    feddle = hybrid_methods.build_method(hybrid_config.FEDDLE_ID, model, data,
                                         c._replace(feddle_atlas_size=7), 0)
    self.assertEqual(feddle._config.max_anchors, 7)


class FedBuffSourceTest(absltest.TestCase):
  """Every method built on FedBuff runs at FedBuff's selected values."""

  def test_fedbuff_values_reach_every_method_built_on_it(self):
    data = _digits_data(200, num_clients=6, server_size=40, seed=0)
    model = mock.Mock()
    # The global default buffer is 2 (_TINY_CONFIG); FedBuff selected 4.
    selected = {hybrid_config.FEDBUFF: dict(buffer_size=4, server_lr=0.5),
                hybrid_config.FEDDLE_ID: dict(feddle_search_lr=0.1),
                hybrid_config.FED_FT: dict(server_sgd_lr=1e-3)}
    for method in hybrid_config.FEDBUFF_BASED:
      config = hybrid_methods.method_config(_TINY_CONFIG, method, selected)
      self.assertEqual((config.buffer_size, config.server_lr), (4, 0.5))
    # The in-domain ones built (this data has no out-of-domain set).
    for method in (hybrid_config.FED_FT, hybrid_config.FEDDF_ID,
                   hybrid_config.FEDDLE_ID):
      with self.subTest(method=method):
        config = hybrid_methods.method_config(_TINY_CONFIG, method, selected)
        built = hybrid_methods.build_method(method, model, data, config, 0)
        if method in hybrid_config.FEDDLE_METHODS:
          # Its fallback c' is FedBuff's merge at FedBuff's buffer; the
          # atlas holds at least that buffer.
          self.assertEqual(built._buffer_size, 4)
          self.assertEqual(built._config.server_lr, 0.5)
          self.assertGreaterEqual(built._config.max_anchors, 4)
        else:
          self.assertEqual(built._fedbuff.buffer_size, 4)
          self.assertEqual(built._fedbuff.learning_rate, 0.5)
    self.assertEqual(
        hybrid_methods.method_config(_TINY_CONFIG, hybrid_config.FEDDLE_ID,
                                     selected).feddle_search_lr, 0.1)
    # CA2FL, a method of its own, keeps its values.
    self.assertEqual(
        hybrid_methods.method_config(_TINY_CONFIG, hybrid_config.CA2FL,
                                     selected).buffer_size, 2)
    with self.assertRaisesRegex(ValueError, 'built on FedBuff'):
      hybrid_methods.method_config(_TINY_CONFIG, hybrid_config.FED_FT,
                                   dict(selected, fed_ft=dict(buffer_size=3)))
    with self.assertRaisesRegex(ValueError, 'cannot hold a buffer of 4'):
      hybrid_config.validate(
          _TINY_CONFIG._replace(buffer_size=4, feddle_atlas_size=3),
          [hybrid_config.FEDDLE_ID])

  def test_kept_runs_record_fedbuffs_values(self):
    out = temp_dirs.temp_dir(self)
    data = _digits_data(200, num_clients=12, server_size=30, seed=0)
    hybrid_async_lib.run_experiment(
        lambda seed, alpha: data, _TINY_CONFIG, methods=[hybrid_config.FED_FT],
        seeds=[0], output_dir=out,
        overrides={hybrid_config.FEDBUFF: dict(buffer_size=4, server_lr=0.5)})
    setting = hybrid_config.Setting(_TINY_CONFIG.alpha, _TINY_CONFIG.delay_std)
    key = hybrid_records.run_key(hybrid_config.FED_FT, setting, 0)
    with open(os.path.join(out, hybrid_async_lib.RUNS_DIR,
                           key + '.json')) as f:
      fingerprint = json.load(f)['fingerprint']
    self.assertEqual((fingerprint['buffer_size'], fingerprint['server_lr']),
                     (4, 0.5))

  def test_a_search_at_rate_zero_is_fedbuff_round_by_round(self):
    # In the experiment's own configuration: Feddle's merges at c' are
    # FedBuff's, however many search steps it takes.
    data = _digits_data(300, num_clients=12, server_size=30, seed=0)
    config = _TINY_CONFIG._replace(rounds=6, delay_std=1.5, clients_per_round=3,
                                   buffer_size=4, feddle_search_steps=3,
                                   feddle_search_lr=0.0,
                                   feddle_search_optimizer='scaled_sgd')
    runs = {method: hybrid_runs.run_method(method, data, config, 0)
            for method in (hybrid_config.FEDBUFF, hybrid_config.FEDDLE_ID)}
    feddle_rows, fedbuff_rows = runs[hybrid_config.FEDDLE_ID].rows, runs[
        hybrid_config.FEDBUFF].rows
    self.assertLen(feddle_rows, config.rounds + 1)
    for got, want in zip(feddle_rows, fedbuff_rows):
      self.assertAlmostEqual(got.accuracy, want.accuracy, places=5)
      self.assertAlmostEqual(got.loss, want.loss, places=4)
    moves = hybrid_tables.merge_values(
        runs[hybrid_config.FEDDLE_ID].diagnostics, 'coefficient_move')
    self.assertNotEmpty(moves)
    np.testing.assert_array_equal(moves, 0.0)


class ReportTest(absltest.TestCase):
  """Table, final metric and ranking from hand-made runs."""

  def setUp(self):
    super().setUp()
    self.settings = [hybrid_config.Setting(0.1, 5.0),
                     hybrid_config.Setting(0.1, 20.0)]
    self.rows = (
        # Best of the last 5 evaluations: 0.5 (not the early 0.9).
        _rows('fedbuff', 0.1, 5.0, 0, [0.9, 0.1, 0.2, 0.5, 0.3, 0.2])
        + _rows('fedbuff', 0.1, 5.0, 1, [0.0, 0.3, 0.3, 0.3, 0.3, 0.3])
        + _rows('fedbuff', 0.1, 20.0, 0, [0.1] * 6)
        # Delay-free: run once (delay 0), shown in both delay columns.
        + _rows('center', 0.1, 0.0, 0, [0.2] * 6)
        + _rows('center', 0.1, 0.0, 1, [0.4] * 6)
        + _rows('feddle_id', 0.1, 5.0, 0, [0.6] * 6)
        + _rows('feddle_id', 0.1, 5.0, 1, [0.6] * 6)
        + _rows('feddle_id', 0.1, 20.0, 0, [0.05] * 6))
    self.methods = ['fedbuff', 'center', 'feddle_id']

  def test_final_metrics_and_table(self):
    finals = hybrid_tables.final_metrics(self.rows, self.methods, self.settings)
    self.assertEqual(finals[('fedbuff', self.settings[0])], [0.5, 0.3])
    self.assertEqual(finals[('center', self.settings[1])], [0.2, 0.4])
    table = hybrid_tables.format_table(self.rows, self.methods, self.settings)
    lines = table.splitlines()
    self.assertEqual(lines[0], '| method | server data | Dir(0.1), N(5) | '
                     'Dir(0.1), N(20) |')
    self.assertEqual(lines[2], '| fedbuff | none | 40.0 ± 10.0 | '
                     '10.0 ± 0.0 (n = 1) |')
    self.assertEqual(lines[3], '| center * | in-domain | 30.0 ± 10.0 | '
                     '**30.0 ± 10.0** |')
    self.assertEqual(lines[4], '| feddle_id | in-domain | **60.0 ± 0.0** | '
                     '5.0 ± 0.0 (n = 1) |')

  def test_ranking_summary_says_where_the_paper_is_not_reproduced(self):
    lines = hybrid_tables.ranking_summary(self.rows, self.methods,
                                          self.settings)
    # Both metrics on the means over seeds; a gap beyond the spread is one
    # larger than the two methods' standard deviations added.
    self.assertEqual(lines[0], (
        'Dir(0.1), N(5): best of the last 5: best feddle_id (60.0%), '
        'feddle_id ranks 1 of 3 (+20.0 points vs fedbuff, beyond the spread '
        '(10.0)); above Center: feddle_id, fedbuff; mean of the last half: '
        'best feddle_id (60.0%), feddle_id ranks 1 of 3 (+28.3 points vs '
        'fedbuff, beyond the spread (1.7)); paper\'s ranking (Feddle first, '
        'by the mean over seeds) reproduced.'))
    self.assertIn('feddle_id ranks 3 of 3', lines[1])
    self.assertIn('NOT reproduced', lines[1])

  def test_ranking_without_a_feddle_run_is_undecided(self):
    # A table being run method by method: Feddle's run not kept yet.
    rows = [r for r in self.rows if r.method != hybrid_config.FEDDLE_ID]
    lines = hybrid_tables.ranking_summary(rows, self.methods, self.settings)
    self.assertLen(lines, 2)
    for line in lines:
      self.assertIn('paper\'s ranking (Feddle first, by the mean over '
                    'seeds) undecided (no Feddle run kept)', line)
      self.assertNotIn('reproduced', line)

  def test_what_changed_from_an_earlier_protocol(self):
    runs_dir = temp_dirs.temp_dir(self)
    setting = self.settings[0]
    # The earlier protocol's Feddle run: Adam at 1e-5, 20% throughout.
    earlier_config = _TINY_CONFIG._replace(
        feddle_search_optimizer='adam', feddle_search_lr=1e-5)
    key = hybrid_records.run_key(hybrid_config.FEDDLE_ID, setting, 0)
    hybrid_records.save_run(
        runs_dir, key, hybrid_records.run_fingerprint(earlier_config, 'd',
                                       hybrid_config.FEDDLE_ID),
        hybrid_runs.MethodRun(_rows('feddle_id', 0.1, 5.0, 0, [0.2] * 6), [],
                              {}))
    path = os.path.join(runs_dir, 'earlier.json')
    self.assertEqual(
        hybrid_records.save_earlier_runs(runs_dir, [hybrid_config.FEDDLE_ID],
                                         path), 1)
    with open(path) as f:
      earlier = json.load(f)
    result = hybrid_async_lib.ExperimentResult(
        self.rows, [], {}, '', {}, _TINY_CONFIG, tuple(self.settings), 'd',
        (0, 1), {hybrid_config.FEDDLE_ID: dict(
            feddle_search_optimizer='scaled_sgd', feddle_search_lr=0.01)},
        tuple(self.methods))
    lines = hybrid_report.earlier_protocol_lines(earlier, result, [setting])
    self.assertEqual(lines, [
        'feddle_id (then feddle_search_optimizer adam, feddle_search_lr '
        '1e-05, now feddle_search_optimizer scaled_sgd, feddle_search_lr '
        '0.01): best of the last 5 20.0% -> 60.0% (+40.0 points); mean of '
        'the last half 20.0% -> 60.0% (+40.0 points).'])
    # A method not run again yet keeps its earlier number, said as such.
    not_rerun = result._replace(
        rows=[r for r in self.rows if r.method != hybrid_config.FEDDLE_ID])
    self.assertEqual(
        hybrid_report.earlier_protocol_lines(earlier, not_rerun, [setting]),
        [lines[0].split(':')[0] + ': best of the last 5 20.0% then, not run '
         'again yet; mean of the last half 20.0% then, not run again yet.'])

  def test_wall_time_per_method_and_the_runs_not_kept(self):
    # Each run's time is its last round's clock, not the largest or a sum.
    rows = [r._replace(seconds=60.0 * r.round) for r in self.rows]
    rows[0], rows[1] = rows[1], rows[0]  # Out of order: the last round wins.
    line = hybrid_tables.wall_time_line(rows, ['fedbuff', 'fedavg', 'center'])
    # fedbuff: 3 runs of 50 rounds at 60 s each, 50 min each.
    self.assertEqual(line, (
        'Wall time per run (training and evaluation, from each run\'s last '
        'round; resumed runs count every part): fedbuff 50.0 min (3 runs, '
        'mean), center 50.0 min (2 runs, mean); 4.17 h in all. A further '
        'seed of the methods kept: about 2.50 h. Not run yet: fedavg.'))
    # A further seed: each (method, setting)'s mean over its seeds, summed
    # (fedbuff N(5) and N(20), center once), not the total over seeds.
    uneven = [r._replace(seconds=r.seconds * (1 + r.seed)) for r in rows]
    self.assertIn('5.83 h in all. A further seed of the methods kept: about '
                  '3.33 h.',
                  hybrid_tables.wall_time_line(uneven, ['fedbuff', 'center']))
    one = [r._replace(seconds=12.0) for r in rows if r.method == 'center'
           and r.seed == 0]
    self.assertEqual(
        hybrid_tables.wall_time_line(one, ['center']),
        ('Wall time per run (training and evaluation, from each run\'s last '
         'round; resumed runs count every part): center 12 s; 12 s in all. '
         'A further seed of the methods kept: about 12 s.'))
    self.assertIn('none kept; 0 s in all. Not run yet: center.',
                  hybrid_tables.wall_time_line([], ['center']))

  def test_results_markdown_compares_with_the_paper_point_by_point(self):
    result = hybrid_async_lib.ExperimentResult(
        self.rows, [], {},
        hybrid_tables.format_table(self.rows, self.methods, self.settings), {},
        hybrid_config.Config(), tuple(self.settings),
        'clients: CIFAR-10 at 16x16 (made up)', (0, 1), {},
        tuple(self.methods) + ('fedavg',))
    text = hybrid_report.results_markdown(result, 'cmd', 'machine', 'today')
    self.assertIn('* Wall time per run (', text)
    self.assertIn('Not run yet: fedavg.', text)
    # Table 7, Dir(0.1): fedbuff 33.2 / 26.8, center 42.1, feddle_id 52.9 /
    # 51.2. Ours: fedbuff 40 / 10, center 30, feddle_id 60 / 5. Gaps N(5):
    # +6.8, -12.1, +7.1 (median +6.8); N(20): -16.8, -12.1, -46.2 (median
    # -16.8). Beyond the median: center -18.9 and +4.7, feddle_id +0.3 and
    # -29.4. Ranks at N(20): ours center, fedbuff, feddle_id; the paper's
    # feddle_id, center, fedbuff: sum of d^2 = 1 + 1 + 4, rho = -0.5.
    self.assertIn('| fedbuff | +6.8 (2 / 3 of 3) | -16.8 (2 / 3 of 3) | '
                  '+0.0 |', text)
    self.assertIn('| center | -12.1 (3 / 2 of 3) | -12.1 (1 / 2 of 3) | '
                  '-7.1 |', text)
    self.assertIn('| feddle_id | +7.1 (1 / 1 of 3) | -46.2 (3 / 1 of 3) | '
                  '-14.5 |', text)
    self.assertIn('* Dir(0.1), N(20): median gap -16.8 points; rank '
                  'correlation -0.50 over 3 methods; feddle_id ranks 3 '
                  '(paper: 1)', text)

  def test_report_only_reads_the_kept_runs_and_runs_nothing(self):
    d = temp_dirs.temp_dir(self)
    config = hybrid_config.Config(rounds=30, eval_every=10)
    setting = hybrid_config.Setting(0.1, 5.0)
    data = hybrid_config.Data(None, None, None, 'made up', None)
    fingerprint = hybrid_records.run_fingerprint(
        config._replace(alpha=0.1, delay_std=5.0), 'made up',
        hybrid_config.FEDBUFF)
    key = hybrid_records.run_key(hybrid_config.FEDBUFF, setting, 0)
    rows = _rows(hybrid_config.FEDBUFF, 0.1, 5.0, 0, [0.1, 0.4, 0.2])
    with open(os.path.join(d, key + '.json'), 'w') as f:
      json.dump(dict(fingerprint=fingerprint, diagnostics=[], notes={},
                     rows=[r._asdict() for r in rows]), f)
    with mock.patch.object(hybrid_runs, 'run_method',
                           side_effect=AssertionError('a run was made')):
      result = hybrid_async_lib.run_experiment(
          lambda seed, alpha: data, config,
          methods=[hybrid_config.FEDBUFF, hybrid_config.FEDAVG], seeds=[0, 1],
          output_dir=d, settings=[setting], runs_dir=d, report_only=True)
    self.assertEqual({(r.method, r.seed) for r in result.rows},
                     {(hybrid_config.FEDBUFF, 0)})
    self.assertIn('| fedbuff | none | **40.0 ± 0.0** |', result.table)
    self.assertIn('| fedavg * | none | n/a |', result.table)
    with self.assertRaisesRegex(ValueError, 'No kept run'):
      hybrid_async_lib.run_experiment(lambda seed, alpha: data, config,
                                      methods=[hybrid_config.FEDAVG], seeds=[0],
                                      output_dir=d, settings=[setting],
                                      runs_dir=d, report_only=True)

  def test_center_once_is_in_center_runs_fingerprints_only(self):
    # Runs of the other methods kept before the field existed stay valid.
    config = hybrid_config.Config()
    self.assertTrue(
        hybrid_records.run_fingerprint(config, 'd',
                                       hybrid_config.CENTER)['center_once'])
    self.assertNotIn(
        'center_once',
        hybrid_records.run_fingerprint(config, 'd', hybrid_config.FEDBUFF))
    self.assertFalse(
        hybrid_records.run_fingerprint(config._replace(center_once=False), 'd',
                                       hybrid_config.CENTER)['center_once'])
    # The atlas size only away from its default.
    self.assertNotIn(
        'feddle_atlas_size',
        hybrid_records.run_fingerprint(config, 'd', hybrid_config.FEDDLE_ID))
    self.assertEqual(
        hybrid_records.run_fingerprint(
            config._replace(feddle_atlas_size=40), 'd',
            hybrid_config.FEDDLE_ID)['feddle_atlas_size'], 40)

  def test_fedasync_staleness_unit_reaches_fedasync(self):
    data = _digits_data(200, num_clients=6, server_size=40, seed=0)
    model = mock.Mock()
    # FedAsync counts server steps by default (Xie et al.), rounds on demand.
    self.assertEqual(
        hybrid_methods.build_method(hybrid_config.FEDASYNC, model, data,
                                    _TINY_CONFIG, 0).staleness_unit,
        'server_steps')
    c = _TINY_CONFIG._replace(fedasync_staleness_unit='rounds')
    self.assertEqual(
        hybrid_methods.build_method(hybrid_config.FEDASYNC, model, data, c,
                                    0).staleness_unit, 'rounds')
    with self.assertRaisesRegex(ValueError, 'fedasync_staleness_unit'):
      hybrid_config.validate(c._replace(fedasync_staleness_unit='arrivals'),
                             [hybrid_config.FEDASYNC])

  def test_fedbuff_staleness_exponent_reaches_fedbuff_merges(self):
    data = _digits_data(200, num_clients=6, server_size=40, seed=0)
    model = mock.Mock()
    self.assertEqual(
        hybrid_methods.build_method(hybrid_config.FEDBUFF, model, data,
                                    _TINY_CONFIG, 0).staleness_exponent, 0.0)
    c = _TINY_CONFIG._replace(fedbuff_staleness_exponent=0.5)
    # FedBuff's merge, alone and under Fed+FT and FedDF, weighs an update
    # tau rounds stale by 1/sqrt(1 + tau) (Nguyen et al. 2022).
    fedbuff = hybrid_methods.build_method(hybrid_config.FEDBUFF, model, data, c,
                                          0)
    self.assertEqual(fedbuff.staleness_exponent, 0.5)
    for method in (hybrid_config.FED_FT, hybrid_config.FEDDF_ID):
      built = hybrid_methods.build_method(method, model, data, c, 0)
      self.assertEqual(built._fedbuff.staleness_exponent, 0.5)
    x0 = [np.zeros(1)]
    updates = [hybrid_baselines.ClientUpdate(i, [np.array([1.0])], tau)
               for i, tau in enumerate((0, 3, 8, 0))]
    c = c._replace(buffer_size=4, server_lr=1.0)
    weighted = hybrid_methods.build_method(hybrid_config.FEDBUFF, model, data,
                                           c, 0)
    _, got = weighted.apply(fedbuff.initial_state(), x0, updates)
    np.testing.assert_allclose(got[0], [(1 + 1 / 2 + 1 / 3 + 1) / 4])
    with self.assertRaisesRegex(ValueError, 'fedbuff_staleness_exponent'):
      hybrid_config.validate(c._replace(fedbuff_staleness_exponent=-1.0),
                             [hybrid_config.FEDBUFF])

  def _old_record(self, config, method):
    """The fingerprint of a kept run of `method` from an earlier version."""
    fingerprint = hybrid_records.run_fingerprint(config, 'd', method)
    fingerprint.pop('fedasync_staleness_unit', None)
    fingerprint.pop('feddf_teachers', None)
    return fingerprint

  def test_kept_fedasync_and_feddf_runs_from_before_are_run_again(self):
    d = temp_dirs.temp_dir(self)
    config = hybrid_config.Config(rounds=30, eval_every=10)
    rows = [r._asdict()
            for r in _rows(hybrid_config.FEDBUFF, 0.1, 5.0, 0, [0.1])]

    def load(method, kept_config, want_config):
      path = os.path.join(d, method + '.json')
      with open(path, 'w') as f:
        json.dump(dict(fingerprint=self._old_record(kept_config, method),
                       diagnostics=[], notes={}, rows=rows), f)
      return hybrid_records.load_run(
          d, method, hybrid_records.run_fingerprint(want_config, 'd', method))

    for method in (hybrid_config.FEDASYNC, hybrid_config.FEDDF_ID,
                   hybrid_config.FEDDF_OOD):
      self.assertIsNone(load(method, config, config), method)
    for method in (hybrid_config.FEDBUFF, hybrid_config.FED_FT,
                   hybrid_config.CENTER, hybrid_config.FEDDLE_ID):
      self.assertIsNotNone(load(method, config, config), method)
    # FedAsync without a staleness discount, or asked to count rounds, is
    # the run it was.
    a0 = config._replace(fedasync_a=0.0)
    self.assertIsNotNone(load(hybrid_config.FEDASYNC, a0, a0))
    rounds = config._replace(fedasync_staleness_unit='rounds')
    self.assertIsNotNone(load(hybrid_config.FEDASYNC, config, rounds))
    # Made before, it is run again whatever else differs (a new search
    # may select other values for it); a run made since with other
    # settings is still an error.
    self.assertIsNone(
        load(hybrid_config.FEDDF_ID, config._replace(client_lr=0.5), config))
    with self.assertRaisesRegex(ValueError, r'other settings \(client_lr\)'):
      load(hybrid_config.FEDASYNC, config._replace(client_lr=0.5),
           config._replace(fedasync_staleness_unit='rounds'))
    # FedBuff's staleness weights enter only away from the plain mean.
    self.assertNotIn(
        'fedbuff_staleness_exponent',
        hybrid_records.run_fingerprint(config, 'd', hybrid_config.FEDBUFF))
    with self.assertRaisesRegex(ValueError, 'fedbuff_staleness_exponent'):
      load(hybrid_config.FEDBUFF, config,
           config._replace(fedbuff_staleness_exponent=0.5))

  def test_paper_reference_table(self):
    table = paper_tables.paper_table(
        ['fedbuff', 'loadaboost'],
        [hybrid_config.Setting(0.1, 5.0), hybrid_config.Setting(0.2, 5.0)])
    self.assertEqual(table.splitlines()[2:], ['| fedbuff | 33.2 | n/a |',
                                              '| loadaboost | n/a | n/a |'])
    self.assertIsNone(
        paper_tables.paper_table(['fedbuff'],
                                 [hybrid_config.Setting(0.5, 1.0)]))

  def test_paper_table_of_the_data(self):
    celeba = [hybrid_config.Setting(hybrid_config.IDENTITIES, 20.0),
              hybrid_config.Setting(hybrid_config.IDENTITIES, 5.0)]
    table, text = paper_tables.reference(
        ['feddle_id', 'loadaboost'], celeba,
        'clients: CelebA, label Smiling; out-of-domain server set: digits')
    self.assertEqual(table.name, 'table 2')
    self.assertEqual(text.splitlines(), [
        '| method (paper, table 2) | identities, N(20) | identities, N(5) |',
        '| --- | --- | --- |', '| feddle_id | 90.2 ± 0.1 | n/a |',
        '| loadaboost | n/a | n/a |'])
    # Table 7 is CIFAR-10's: not for digits clients, whatever the server.
    cifar = [hybrid_config.Setting(0.1, 20.0)]
    self.assertEqual(paper_tables.reference(
        ['fedavg'], cifar, 'clients: CIFAR-10 at 16x16 (...)')[0].name,
                     'table 7')
    # A pretrained start: the ResNet18 columns of table 6 (Dir(0.1), N(20):
    # Feddle-ID 86.3 ± 0.4).
    table, text = paper_tables.reference(
        ['feddle_id'], cifar, 'clients: CIFAR-10 at 16x16 (...); start: '
        'pretrained on 10 disjoint training images')
    self.assertEqual(table.name, 'table 6')
    self.assertIn('| feddle_id | 86.3 ± 0.4 |', text)
    self.assertIsNone(paper_tables.reference(
        ['fedavg'], cifar, 'clients: scikit-learn digits; out-of-domain '
        'server set: CIFAR-10'))
    self.assertIsNone(paper_tables.reference(
        ['fedavg'], celeba, 'clients: CIFAR-10 at 16x16'))
    for t in paper_tables.TABLES:
      self.assertContainsSubset(t.values, hybrid_config.METHODS)


@binary_runs.runs_binaries
class HybridAsyncBinaryTest(absltest.TestCase):

  def test_two_round_smoke_run_of_every_method(self):
    directory = temp_dirs.temp_dir(self)
    npz = cifar10_testing.write_fake_npz(os.path.join(directory, 'cifar.npz'))
    output_dir = os.path.join(directory, 'out')
    results = os.path.join(directory, 'RESULTS.md')
    run = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
               f'--output_dir={output_dir}', f'--results_markdown={results}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    for method in hybrid_config.METHODS:
      self.assertIn(method, run.stdout)
      method_rows = [r for r in rows if r['method'] == method]
      # The delay-free methods run once and stand in both delay columns.
      delays = (['0'] if method in hybrid_config.DELAY_FREE else ['0', '0.5'])
      self.assertEqual([(r['delay_std'], int(r['round']))
                        for r in method_rows],
                       [(d, k) for d in delays for k in (0, 1, 2)])
      for r in method_rows:
        self.assertEqual(r['alpha'], '0.5')
        self.assertBetween(float(r['accuracy']), 0.0, 1.0)
    with open(os.path.join(output_dir, 'feddle_diagnostics.csv')) as f:
      diagnostics = list(csv.DictReader(f))
    self.assertEqual({d['method'] for d in diagnostics},
                     {'feddle_id', 'feddle_ood'})
    # Out-of-domain merges carry the gradient-alignment cosines.
    cosines = [float(d['id_ood_cosine']) for d in diagnostics
               if d['method'] == 'feddle_ood']
    self.assertNotEmpty(cosines)
    for cosine in cosines:
      self.assertBetween(cosine, -1.0, 1.0)
    self.assertIn('Dir(0.5), N(0.5)', run.stdout)
    with open(results) as f:
      report = f.read()
    self.assertIn('Feddle and baselines', report)
    self.assertIn('LoAdaBoost clients trained', report)
    self.assertIn("paper's ranking", report)
    for name in ('accuracy.png', 'feddle_diagnostics.png', 'results.md'):
      self.assertTrue(os.path.exists(os.path.join(output_dir, name)), name)

    # Running it again reuses every kept run: the same table, no run file
    # rewritten (13 methods + 10 delay-dependent ones for the second delay).
    runs_dir = os.path.join(output_dir, 'runs')
    kept = {name: os.stat(os.path.join(runs_dir, name)).st_mtime_ns
            for name in os.listdir(runs_dir)}
    self.assertLen(kept, 23)
    again = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
                 f'--output_dir={output_dir}')
    self.assertEqual(again.returncode, 0, again.stderr[-3000:])
    self.assertEqual(again.stdout, run.stdout)
    self.assertEqual(
        {name: os.stat(os.path.join(runs_dir, name)).st_mtime_ns
         for name in os.listdir(runs_dir)}, kept)
    # Kept runs elsewhere (--runs_dir, e.g. committed records) serve a new
    # output directory without training.
    moved = os.path.join(directory, 'records')
    shutil.copytree(runs_dir, moved)
    elsewhere = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
                     f'--output_dir={directory}/out2', f'--runs_dir={moved}')
    self.assertEqual(elsewhere.returncode, 0, elsewhere.stderr[-3000:])
    self.assertEqual(elsewhere.stdout, run.stdout)
    self.assertFalse(os.path.exists(os.path.join(directory, 'out2', 'runs')))
    self.assertLen(os.listdir(moved), 23)
    # Other settings must not silently mix with the kept runs.
    other = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
                 '--client_lr=0.5', f'--output_dir={output_dir}')
    self.assertEqual(other.returncode, 1)
    self.assertIn('other settings (client_lr)', other.stderr)

  def test_bad_settings_fail_before_training(self):
    # The binary's own checks (image size, the data flags); `validate`'s
    # checks are tested in-process in ValidateTest. Each run costs
    # TensorFlow's import, so only what the binary alone checks runs here.
    directory = temp_dirs.temp_dir(self)
    npz = cifar10_testing.write_fake_npz(os.path.join(directory, 'cifar.npz'), num_images=120)
    cases = [
        (['--image_size=12'], 'image_size'),
        # CIFAR-10 requested but not given.
        (['--data=cifar10', '--cifar10_npz='], 'cifar10_npz'),
        # Out-of-domain methods without an out-of-domain set.
        (['--data=digits', '--cifar10_npz=', '--methods=feddle_ood'],
         'out-of-domain'),
        # A `validate` error reaches the user as an error line too.
        (['--delay_stds=5'], 'delay'),
    ]
    for extra, message in cases:
      run = _run(f'--cifar10_npz={npz}', '--seeds=0', *_SMALL,
                 f'--output_dir={directory}/out', *extra, timeout=300)
      self.assertEqual(run.returncode, 1, (extra, run.stderr[-2000:]))
      self.assertIn('error:', run.stderr)
      self.assertIn(message, run.stderr)
      self.assertNotIn('Traceback', run.stderr)


class ValidateTest(absltest.TestCase):
  """`validate` refuses settings that cannot run, before any training."""

  def test_bad_settings_raise_naming_the_setting(self):
    config = _TINY_CONFIG
    hybrid_config.validate(config, hybrid_config.METHODS,
                           [hybrid_config.Setting(0.5, 0.5)], [0])
    cases = [
        # Delays that would never arrive within the run.
        (dict(), [hybrid_config.Setting(0.5, 5.0)], 'delay'),
        # More clients busy than there are (long delays, few clients).
        (dict(rounds=20, num_clients=3), [hybrid_config.Setting(0.5, 0.5)],
         'idle clients'),
        (dict(client_optimizer='rmsprop'), [], 'client_optimizer'),
        (dict(server_optimizer='rmsprop'), [], 'server_optimizer'),
        (dict(loadaboost_epochs=3), [], 'even int'),
        # More clients per round than clients.
        (dict(clients_per_round=20), [], 'clients_per_round'),
        (dict(), [hybrid_config.Setting(0.0, 0.5)], 'alpha'),
    ]
    for changes, settings, message in cases:
      with self.assertRaisesRegex(ValueError, message, msg=str(changes)):
        hybrid_config.validate(config._replace(**changes),
                               hybrid_config.METHODS, settings, [0])


if __name__ == '__main__':
  absltest.main()
