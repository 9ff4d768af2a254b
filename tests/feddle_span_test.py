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
"""Tests for the study of Feddle's atlas span (`feddle_span_lib`): the
projection, each probe's numbers against direct computations, the probed
runs' records and the report, on tiny real digits."""

import json
import os

from absl.testing import absltest
import numpy as np

from experiments.hybrid_async import feddle_span_lib as span
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from tests import binary_runs
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.asynchronous import coefficient_search
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import server_data as server_data_lib
from tff_mixed.models import cnn
from tff_mixed.tasks import hybrid_images

_CONFIG = hybrid_config.Config(
    rounds=6, num_clients=12, clients_per_round=2, buffer_size=2,
    server_size=30, eval_size=100, validation_size=30, client_steps=2,
    client_batch_size=4, server_steps=2, conv_filters=(2, 4, 4),
    dense_units=8, eval_every=2, feddle_search_steps=2, delay_std=0.0,
    alpha=0.3)


def _digits(seed, alpha):
  x, y = hybrid_images.load_digits_images(size=8, channels=3)
  split = hybrid_images.build_hybrid_split(
      x[:300], y[:300], num_clients=12, alpha=alpha, server_size=30,
      eval_size=100, seed=seed, validation_size=30)
  return hybrid_config.Data(split, None, None, 'digits')


class ProjectTest(absltest.TestCase):

  def test_by_hand(self):
    basis = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    np.testing.assert_allclose(span.project(np.array([3.0, -2.0, 5.0]),
                                            basis), [3.0, -2.0, 0.0])
    np.testing.assert_allclose(span.project(np.array([0.0, 0.0, 4.0]),
                                            basis), [0.0, 0.0, 0.0])


class ProbeMergeTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    split = _digits(0, 0.3).split
    self.model = cnn.build_cnn(input_shape=split.images.shape[1:],
                               num_classes=10, conv_filters=(2, 4, 4),
                               dense_units=8, seed=0)
    self.weights = [np.asarray(w) for w in self.model.initial_weights[0]]
    rng = np.random.default_rng(0)
    self.anchors = [[0.05 * rng.standard_normal(w.shape).astype(np.float32)
                     for w in self.weights] for _ in range(3)]
    self.c_prior = np.array([0.5, 0.5, 0.0], np.float32)
    self.sets = span.Sets((split.server_x, split.server_y),
                          (split.validation_x, split.validation_y),
                          (split.eval_x, split.eval_y))

  def _probe(self, finetune):
    return span.probe_merge(self.model, self.weights, self.anchors,
                            self.c_prior, self.sets, finetune, batch_size=8,
                            seed=3, search_lrs=(1e-2,), search_epochs=2)

  def test_numbers_match_direct_computations(self):
    start = feddle.merge_anchors(self.weights, self.anchors, self.c_prior)
    # Fine-tuning that moves along the second anchor lies wholly in the span.
    along = lambda w: [a + 0.3 * b for a, b in zip(w, self.anchors[1])]
    probe = self._probe(along)
    evaluate = hybrid_runs.evaluate_fn(*self.sets.evaluation)
    self.assertAlmostEqual(probe['fedbuff']['evaluation'],
                           evaluate(start)['accuracy'])
    self.assertAlmostEqual(
        probe['fedbuff']['server_loss'],
        hybrid_runs.evaluate_fn(*self.sets.server)(start)['loss'], places=5)
    self.assertAlmostEqual(probe['finetune']['in_span'], 1.0, places=5)
    self.assertAlmostEqual(probe['projected']['evaluation'],
                           probe['finetune']['evaluation'])
    # The server search is Feddle's own search from c', Adam, 2 epochs.
    batches = server_data_lib.shuffled_batches(*self.sets.server, 8, 3)
    direct = coefficient_search.search_coefficients(
        feddle.model_loss_fn(self.model), self.weights, self.anchors,
        self.c_prior, batches, steps=2 * len(batches), learning_rate=1e-2,
        optimizer='adam')
    self.assertAlmostEqual(probe['search']['0.01']['evaluation'],
                           evaluate(direct.weights)['accuracy'])
    self.assertAlmostEqual(
        probe['search']['0.01']['move'],
        float(np.max(np.abs(direct.coefficients - self.c_prior))), places=6)
    # The bound searches on the evaluation images: it lowers their loss.
    self.assertGreater(probe['oracle']['move'], 0.0)

  def test_a_step_outside_the_span_projects_to_nothing(self):
    # A step in a direction no anchor has: only the last bias array, which
    # every anchor leaves at zero here.
    for anchor in self.anchors:
      anchor[-1] = np.zeros_like(anchor[-1])

    def bias_only(w):
      return [*w[:-1], w[-1] + 1.0]

    probe = self._probe(bias_only)
    self.assertAlmostEqual(probe['finetune']['in_span'], 0.0, places=6)
    self.assertAlmostEqual(probe['projected']['evaluation'],
                           probe['fedbuff']['evaluation'])


def _probe_dict(fedbuff, oracle, finetune, projected, val, in_span=0.5):
  def s(acc, v=0.1, loss=2.0):
    return {'evaluation': acc, 'validation': v, 'server_loss': loss}
  return dict(merge=1, atlas=4, staleness=2.0, run_move=0.001, prior=0.1,
              fedbuff=s(fedbuff), oracle=dict(s(oracle), move=0.2),
              finetune=dict(s(finetune), in_span=in_span),
              projected=s(projected),
              search={'0.001': dict(s(fedbuff, val, 1.5), move=0.1,
                                    negative=0.0)})


class ReportTest(absltest.TestCase):

  def test_summary_means_differences_in_points(self):
    probes = [_probe_dict(0.10, 0.14, 0.30, 0.11, 0.12),
              _probe_dict(0.20, 0.22, 0.40, 0.21, 0.10, in_span=0.3)]
    got = span.summary(probes)
    self.assertAlmostEqual(got['fedbuff'], 15.0)
    self.assertAlmostEqual(got['oracle'], 3.0)
    self.assertAlmostEqual(got['finetune'], 20.0)
    self.assertAlmostEqual(got['projected'], 1.0)
    self.assertAlmostEqual(got['in_span'], 0.4)
    self.assertAlmostEqual(got['val_0.001'], 1.0)  # (+2 + 0) / 2 points.
    self.assertAlmostEqual(got['loss_0.001'], -0.5)

  def test_reading_names_the_span_when_the_bound_is_small(self):
    s = hybrid_config.Setting(0.1, 5.0)
    records = [span.RunRecord(0.1, 5.0, 0, {}, [_probe_dict(
        0.10, 0.12, 0.30, 0.11, 0.10)], 0.2, 1.0, 'digits')]
    text = '\n'.join(span.reading(records, [s]))
    # Bound +2 against fine-tuning's +20 points; the server search +0.
    self.assertIn('is the first limit: its best model, chosen on the test '
                  'images, gains 10% of what fine-tuning the same merge '
                  'gains; the probe searches on the server images reach 0% '
                  'of that bound', text)
    # The run's own search moved c by 1% of |c'|: it stayed at c'.
    self.assertIn('the search at the selected rate almost none of it', text)
    records[0].probes[0]['run_move'] = 0.05
    self.assertNotIn('almost none', '\n'.join(span.reading(records, [s])))
    records[0].probes[0]['oracle']['evaluation'] = 0.35
    text = '\n'.join(span.reading(records, [s]))
    self.assertIn('the span holds a model as good as fine-tuning\'s', text)
    self.assertEqual(span.variant(records), '')
    pretrained = records[0]._replace(
        data='digits; start: pretrained on 10 images',
        config={'feddle_atlas_size': 40})
    self.assertEqual(span.variant([pretrained]),
                     '; from the pretrained start; atlas of 40')
    table = span.span_table(records, [s])
    self.assertIn('| Dir(0.1), N(5) |', table)
    self.assertIn('+25.0', table)  # The bound: 35% - 10%.


class RunStudyTest(absltest.TestCase):

  def test_records_resume_and_refuse_another_configuration(self):
    out = temp_dirs.temp_dir(self)
    settings = [hybrid_config.Setting(0.3, 0.0)]
    records = span.run_study(_digits, _CONFIG, _CONFIG, settings, [0], out,
                             probe_every=1)
    (record,) = records
    self.assertNotEmpty(record.probes)
    self.assertEqual([p['merge'] for p in record.probes],
                     list(range(1, len(record.probes) + 1)))
    self.assertEqual(record.data, 'digits')
    path = os.path.join(out, span.record_name(settings[0], 0) + '.json')
    before = os.path.getmtime(path)
    span.run_study(_digits, _CONFIG, _CONFIG, settings, [0], out, 1)
    self.assertEqual(os.path.getmtime(path), before)  # Kept, not rerun.
    with self.assertRaisesRegex(ValueError,
                                r'other settings \(feddle_search_lr\)'):
      span.run_study(_digits, _CONFIG._replace(feddle_search_lr=0.5),
                     _CONFIG, settings, [0], out, 1)
    with open(path) as f:
      self.assertEqual(json.load(f)['seed'], 0)


@binary_runs.runs_binaries
class BinaryTest(absltest.TestCase):

  def test_runs_at_the_selected_values_and_rebuilds_from_records(self):
    d = temp_dirs.temp_dir(self)
    selected = os.path.join(d, 'selected.json')
    with open(selected, 'w') as f:
      json.dump({'client': {'client_lr': 0.001, 'client_epochs': 1},
                 # Feddle and Fed+FT take FedBuff's buffer: 2 updates.
                 'methods': {'fedbuff': {'buffer_size': 2, 'server_lr': 1.0},
                             'feddle_id': {'feddle_search_lr': 0.01,
                                           'feddle_search_epochs': 1},
                             'fed_ft': {'server_sgd_lr': 0.001,
                                        'server_epochs': 1}},
                 'searched': {}}, f)
    args = ['--data=digits', '--cifar10_npz=', '--image_size=8',
            '--rounds=4', '--num_clients=12', '--clients_per_round=2',
            '--alphas=0.5', '--delay_stds=0', '--server_size=30',
            '--eval_size=100', '--validation_size=20',
            '--client_batch_size=8', '--conv_filters=2,4,4',
            '--dense_units=8', '--eval_every=1', '--seeds=0',
            '--probe_every=1', f'--selected_json={selected}',
            f'--span_records_dir={d}/rec', f'--results_markdown={d}/R.md']

    def run(*extra):
      return preloaded_python.run_module(
          'experiments.hybrid_async.feddle_span_main', *args, *extra)

    done = run()
    self.assertEqual(done.returncode, 0, done.stderr[-3000:])
    (record,) = span.read_records(os.path.join(d, 'rec'))
    self.assertEqual(record.config['feddle_search_lr'], 0.01)
    self.assertEqual(record.config['buffer_size'], 2)
    self.assertEqual(record.config['client_epochs'], 1)
    self.assertNotEmpty(record.probes)
    with open(os.path.join(d, 'R.md')) as f:
      first = f.read()
    self.assertIn('<!-- BEGIN hybrid_async_feddle_span -->', first)
    self.assertIn('| Dir(0.5), N(0) |', first)
    again = run('--report_only')
    self.assertEqual(again.returncode, 0, again.stderr[-3000:])
    with open(os.path.join(d, 'R.md')) as f:
      table = lambda text: text[text.index('| |'):text.index('* The tuned')]
      self.assertEqual(table(f.read()), table(first))


if __name__ == '__main__':
  absltest.main()
