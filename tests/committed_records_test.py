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
it was made (then it runs again). Kept apart from those binaries' tests
because these read the repository's files: under Bazel they need the records
as `data` (//:hybrid_async_records), and CI's Bazel check runs the tests that
read files through `data` (scripts/bazel_test.sh check).
"""

import json
import os

from absl.testing import absltest

from experiments.hybrid_async import async_study_lib as study
from experiments.hybrid_async import hybrid_async_lib as lib

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class HybridAsyncRecordsTest(absltest.TestCase):

  def test_committed_runs_of_fedasync_and_feddf_are_outdated(self):
    # Every run kept under docs/results by hybrid_async_main and tune_main:
    # FedAsync's (a > 0) and FedDF's made before their change (their records
    # lack the field that names it) are run again, all others read back,
    # those rerun since included.
    methods = sorted(lib.METHODS, key=len, reverse=True)
    counts, rerun = {}, 0
    for root, _, names in os.walk(os.path.join(_REPO, 'docs', 'results')):
      for name in names:
        method = next((m for m in methods if name.startswith(
            (m + '_alpha', m + '_identities'))), None)
        if (method is None or '_delay' not in name
            or not name.endswith('.json')):
          continue
        with open(os.path.join(root, name)) as f:
          kept = json.load(f)['fingerprint']
        fields = {k: v for k, v in kept.items() if k in lib.Config._fields}
        fields['conv_filters'] = tuple(fields['conv_filters'])
        config = lib.Config(**fields)
        want = lib._fingerprint(config, kept['data'], method)
        changed = (
            method in (lib.FEDDF_ID, lib.FEDDF_OOD)
            and 'feddf_teachers' not in kept) or (
                method == lib.FEDASYNC and config.fedasync_a > 0
                and 'fedasync_staleness_unit' not in kept)
        status = lib.kept_config_status(kept, want, every_field=True)
        self.assertEqual(status, lib.OUTDATED if changed else lib.MATCHES,
                         os.path.join(root, name))
        counts[changed] = counts.get(changed, 0) + 1
        rerun += 'feddf_teachers' in kept or 'fedasync_staleness_unit' in kept
    self.assertGreater(counts.get(True, 0), 0)
    self.assertGreater(counts.get(False, 0), 0)
    self.assertGreater(rerun, 0)


class StudyRecordsTest(absltest.TestCase):

  def test_only_fedasync_and_feddf_records_are_outdated(self):
    # FedAsync's staleness unit (issue 32, item 2) and FedDF's teacher set
    # (item 1) changed their runs: their committed records, made before,
    # are run again; every other variant's, and FedAsync's without a
    # staleness discount (a = 0), are still read back.
    records_dir = os.path.join(_REPO, 'docs', 'results', 'hybrid_async_study')
    statuses = {}
    for record in study.read_records(records_dir):
      variant = study.VARIANTS_BY_NAME[record.variant]
      config = study.config_of(variant, study.BASE,
                               lib.Setting(record.alpha, record.delay_std))
      status = lib.kept_config_status(
          record.config, lib.config_record(config, variant.method))
      changed = variant.method in (lib.FEDDF_ID, lib.FEDDF_OOD) or (
          variant.method == lib.FEDASYNC and config.fedasync_a > 0)
      self.assertEqual(status, lib.OUTDATED if changed else lib.MATCHES,
                       record.variant)
      statuses.setdefault(record.variant, set()).add(status)
    self.assertEqual(statuses['fedasync'], {lib.OUTDATED})
    self.assertEqual(statuses['fedasync_alpha0.5_a0'], {lib.MATCHES})
    self.assertEqual(statuses['feddf_id_adam'], {lib.OUTDATED})
    self.assertEqual(statuses['fedbuff_lr1_staleness'], {lib.MATCHES})


if __name__ == '__main__':
  absltest.main()
