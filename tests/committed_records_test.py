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
"""The hybrid-data experiments' committed runs under docs/results read back.

Every run `hybrid_async_main`, `tune_main` and the asynchronous-baselines
study keep is read back by its make target unless the method changed since
it was made (then it runs again). Every method built on FedBuff in a table
shares its FedBuff's values, and the committed search selection moves
Feddle's coefficients. Kept apart from those binaries' tests
because these read the repository's files: under Bazel they need the records
as `data` (//:hybrid_async_records), and CI's Bazel check runs the tests that
read files through `data` (scripts/bazel_test.sh check).
"""

import json
import os

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import async_study_lib as study
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
from tff_mixed.tasks import hybrid_images

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A tiny run of the experiment on real data (scikit-learn's digits) whose
# search takes as many steps an epoch as the experiment's (250 server
# images in batches of 32: 8).
_TINY_CONFIG = hybrid_config.Config(
    rounds=6, num_clients=12, clients_per_round=3, delay_std=0.0, alpha=0.5,
    server_size=64, eval_size=144, server_batch_size=8, client_steps=2,
    client_batch_size=4, client_optimizer='sgd', client_lr=0.05,
    conv_filters=(2, 4, 4), dense_units=8, eval_every=1, buffer_size=3)


def _digits_data():
  x, y = hybrid_images.load_digits_images(size=8, channels=3)
  split = hybrid_images.build_hybrid_split(
      x[:400], y[:400], num_clients=12, alpha=0.5, server_size=64,
      eval_size=144, seed=0)
  return hybrid_config.Data(split, None, None, 'digits')


class HybridAsyncRecordsTest(absltest.TestCase):

  def test_every_committed_run_is_read_back(self):
    # Every run kept under docs/results by hybrid_async_main and tune_main
    # matches what its make target would run now: none is run again.
    # FedAsync's (a > 0) and FedDF's were all run again after their methods
    # changed (staleness counted in server steps, one distillation per
    # merged buffer), and their records name the change.
    counts = {}
    for root, _, names in os.walk(os.path.join(_REPO, 'docs', 'results')):
      for name in names:
        method = hybrid_records.method_of_record(name)
        if (method is None or '_delay' not in name
            or not name.endswith('.json')):
          continue
        with open(os.path.join(root, name)) as f:
          kept = json.load(f)['fingerprint']
        fields = {k: v for k, v in kept.items()
                  if k in hybrid_config.Config._fields}
        fields['conv_filters'] = tuple(fields['conv_filters'])
        config = hybrid_config.Config(**fields)
        want = hybrid_records.run_fingerprint(config, kept['data'], method)
        status = hybrid_records.kept_config_status(kept, want, every_field=True)
        self.assertEqual(status, hybrid_records.MATCHES,
                         os.path.join(root, name))
        if method in (hybrid_config.FEDDF_ID, hybrid_config.FEDDF_OOD):
          self.assertIn('feddf_teachers', kept, name)
        if method == hybrid_config.FEDASYNC and config.fedasync_a > 0:
          self.assertIn('fedasync_staleness_unit', kept, name)
        counts[method] = counts.get(method, 0) + 1
    for method in (hybrid_config.FEDASYNC, hybrid_config.FEDDF_ID,
                   hybrid_config.FEDDF_OOD, hybrid_config.FEDBUFF):
      self.assertGreater(counts.get(method, 0), 0, method)


class FedBuffValuesTest(absltest.TestCase):

  def test_methods_built_on_fedbuff_share_its_values_in_every_table(self):
    # Feddle's fallback, Fed+FT's and FedDF's FedBuff are the FedBuff of
    # their table: the same buffer and server lr in every runs directory
    # that holds a FedBuff run.
    checked = 0
    for root, _, names in os.walk(os.path.join(_REPO, 'docs', 'results')):
      values = {}
      for name in sorted(names):
        method = hybrid_records.method_of_record(name)
        if method not in (hybrid_config.FEDBUFF,) + hybrid_config.FEDBUFF_BASED:
          continue
        with open(os.path.join(root, name)) as f:
          kept = json.load(f)['fingerprint']
        values[name] = (method, kept['buffer_size'], kept['server_lr'])
      fedbuff = {(b, lr) for m, b, lr in values.values()
                 if m == hybrid_config.FEDBUFF}
      if not fedbuff:
        continue  # A study of Feddle alone.
      self.assertLen(fedbuff, 1, root)
      for name, (method, buffer_size, server_lr) in values.items():
        self.assertIn((buffer_size, server_lr), fedbuff,
                      os.path.join(root, name))
        checked += method != hybrid_config.FEDBUFF
    self.assertGreater(checked, 0)


class SelectedSearchTest(absltest.TestCase):
  """The search the tuning selected moves the coefficients; the earlier
  selection (Adam at 1e-5) did not."""

  def _median_move(self, values):
    run = hybrid_runs.run_method(hybrid_config.FEDDLE_ID, _digits_data(),
                                 _TINY_CONFIG._replace(**values), 0)
    moves = hybrid_tables.merge_values(run.diagnostics, 'coefficient_move')
    self.assertLen(moves, 6)  # A merge a round: real client updates.
    losses = [hybrid_tables.merge_values(run.diagnostics, k)
              for k in ('prior_loss', 'final_loss')]
    return float(np.median(moves)), losses

  def test_the_selected_rate_moves_the_coefficients_on_a_real_merge(self):
    with open(os.path.join(_REPO, 'docs', 'results', 'hybrid_tuning',
                           'cifar10_16_merge', 'selected.json')) as f:
      selected = json.load(f)['methods'][hybrid_config.FEDDLE_ID]
    self.assertEqual(selected['feddle_search_optimizer'], 'scaled_sgd')
    move, (prior, final) = self._median_move(selected)
    self.assertGreater(move, 0.05)
    # Downhill on the server data, as a search should go.
    self.assertLess(np.mean(final), np.mean(prior))
    earlier, _ = self._median_move(dict(
        feddle_search_optimizer='adam', feddle_search_lr=1e-5,
        feddle_search_epochs=selected['feddle_search_epochs']))
    self.assertLess(earlier, 0.02)



class StudyRecordsTest(absltest.TestCase):

  def test_every_record_is_read_back(self):
    # The study's FedAsync (a > 0) and FedDF variants were run again after
    # their methods changed (staleness unit, distillation per buffer);
    # every variant's record now matches what `async_study_main` would
    # run, so the command reads them all back.
    records_dir = os.path.join(_REPO, 'docs', 'results', 'hybrid_async_study')
    statuses = {}
    for record in study.read_records(records_dir):
      variant = study.VARIANTS_BY_NAME[record.variant]
      config = study.config_of(
          variant, study.BASE,
          hybrid_config.Setting(record.alpha, record.delay_std))
      status = hybrid_records.kept_config_status(
          record.config, hybrid_records.config_record(config, variant.method))
      self.assertEqual(status, hybrid_records.MATCHES, record.variant)
      statuses.setdefault(record.variant, set()).add(status)
    for variant in ('fedasync', 'fedasync_alpha0.5_a0', 'feddf_id_adam',
                    'fedbuff_lr1_staleness'):
      self.assertEqual(statuses[variant], {hybrid_records.MATCHES}, variant)


if __name__ == '__main__':
  absltest.main()
