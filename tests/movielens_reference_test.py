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
"""Tests of the MovieLens reference rows, the evaluation they share with
the scenarios, and the model's forms in the records' settings.

On hand-made arrays and a small generated ratings file: seconds each.
"""

import collections
import math
import os
from unittest import mock

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from experiments.movielens import movielens_config
from experiments.movielens import movielens_lib
from experiments.movielens import movielens_process
from experiments.movielens import movielens_records as records_lib
from experiments.movielens import movielens_reference as reference
from tests import movielens_testing
from tests import temp_dirs
from tff_mixed.models import dual_encoder

# Tiny settings: the generated file's 40 movies, short contexts.
_CONFIG = movielens_config.Config(embedding_dim=4, context_length=3,
                                  clients_per_round=2)


def _data(test: absltest.TestCase):
  """`(data, description)` of a small generated u.data file."""
  path = movielens_testing.write_ratings(
      os.path.join(temp_dirs.temp_dir(test), 'u.data'))
  data = movielens_lib.load_data(path, _CONFIG)
  return data, movielens_lib.data_description(path, data)


class PopularityTest(absltest.TestCase):

  def test_ranking_and_recall_by_hand(self):
    # Counts: 2 four times, 3 three times, 5 twice, 7 and 9 once.
    train = np.array([3, 3, 3, 5, 5, 7, 2, 2, 2, 2, 9])
    np.testing.assert_array_equal(reference.popularity_ranking(train, 3),
                                  [2, 3, 5])
    # 7 and 9 tie: the smaller id first.
    np.testing.assert_array_equal(reference.popularity_ranking(train, 4),
                                  [2, 3, 5, 7])
    # Top 2 = {2, 3}: two of the four test labels.
    self.assertEqual(reference.popularity_recall(train, [2, 5, 3, 9], k=2),
                     0.5)
    self.assertEqual(reference.popularity_recall(train, [9, 9], k=4), 0.0)
    with self.assertRaisesRegex(ValueError, 'No test label'):
      reference.popularity_recall(train, [])

  def test_row_on_data_is_a_direct_count(self):
    data, description = _data(self)
    counts = collections.Counter()
    for user in data.train_user_ids:
      if int(user) in data.examples:
        counts.update(int(y) for y in data.examples[int(user)][1])
    top = [m for m, _ in sorted(counts.items(),
                                key=lambda item: (-item[1], item[0]))[:10]]
    test_labels = [int(y) for user in data.test_user_ids
                   if int(user) in data.examples
                   for y in data.examples[int(user)][1]]
    expected = sum(y in top for y in test_labels) / len(test_labels)
    row = reference.popularity_row(data, _CONFIG, {'data': description})
    self.assertEqual(row.top_movies, top)
    self.assertAlmostEqual(row.recall_at_10, expected)
    self.assertEqual((row.train_examples, row.test_examples),
                     (sum(counts.values()), len(test_labels)))
    # Some test label is outside the top 10 and some inside: the number
    # is not a trivial 0 or 1 on this file.
    self.assertBetween(row.recall_at_10, 0.01, 0.99)


# 12 movies on the unit circle at these angles (degrees), in d = 2, at no
# symmetry that would tie two scores at the cut-off.
_ANGLES = (0, 20, 45, 70, 100, 130, 160, 190, 215, 250, 290, 330)


def _circle_weights():
  """Movie r (1-12) at `_ANGLES[r - 1]`; row 0 padding; the context layer
  the identity (kernel I, bias 0)."""
  angles = np.radians(_ANGLES)
  table = np.concatenate([[[0.0, 0.0]],
                          np.stack([np.cos(angles), np.sin(angles)], 1)])
  return (table.astype(np.float32), np.eye(2, dtype=np.float32),
          np.zeros(2, np.float32))


class EvaluationTest(absltest.TestCase):

  def test_recall_at_10_and_loss_against_a_hand_ranking(self):
    # A context of movie 1 (0 degrees) scores movies by the cosine of
    # their angle: the two farthest, 7 and 8 (160 and 190 degrees), are
    # out of its top 10. Of movie 8 (190 degrees): 1 and 2 (both 170
    # degrees away) are out.
    weights = (_circle_weights(), ())
    contexts = np.array([[1, 0, 0], [1, 0, 0], [8, 0, 0], [8, 0, 0]])
    labels = np.array([6, 7, 3, 2])
    cosines = np.cos(np.radians([130.0, 160.0, 145.0, 170.0]))
    for loss, margin, expected in (
        (dual_encoder.HINGE, None, np.mean(1.0 - cosines)),
        (dual_encoder.SQUARED_HINGE, None, np.mean((0.9 - cosines)**2)),
        (dual_encoder.SQUARED_HINGE, 0.5, np.mean((0.5 - cosines)**2))):
      config = movielens_config.Config(
          context_layer=dual_encoder.IDENTITY_LINEAR, client_loss=loss,
          margin=margin)
      result = movielens_process.evaluate(weights, contexts, labels, config)
      self.assertAlmostEqual(result['recall_at_10'], 0.5, places=6)
      self.assertAlmostEqual(result['hinge_loss'], expected, places=5)

  def test_the_context_layer_is_the_configs(self):
    # Movie 7 (160 degrees) as the context: the linear layer keeps its
    # direction (out of the top 10: 1 and 12, 160 and 170 degrees away);
    # the ReLU drops its negative x, leaving 90 degrees (out: 10 and 11,
    # both 160 degrees away).
    weights = (_circle_weights(), ())
    contexts = np.array([[7, 0, 0]])
    for layer, label, expected in ((dual_encoder.IDENTITY_LINEAR, 12, 0.0),
                                   (dual_encoder.IDENTITY_LINEAR, 10, 1.0),
                                   (dual_encoder.RELU_DENSE, 12, 1.0),
                                   (dual_encoder.RELU_DENSE, 10, 0.0)):
      config = movielens_config.Config(context_layer=layer)
      self.assertEqual(movielens_process.evaluate(
          weights, contexts, np.array([label]), config)['recall_at_10'],
                       expected, (layer, label))


class CentralTest(absltest.TestCase):

  def test_training_lowers_the_loss_and_its_record_round_trips(self):
    data, description = _data(self)
    records_dir = temp_dirs.temp_dir(self)
    with mock.patch.object(reference, 'train_central',
                           wraps=reference.train_central) as train:
      made = reference.reference_rows(data, _CONFIG, description,
                                      records_dir, epochs=2)
    # The ceiling (Adam at the launcher's rate) and the paper's SGD at eta.
    self.assertEqual(train.call_count, 2)
    self.assertEqual(
        [(c.kwargs.get('optimizer', reference.ADAM), c.kwargs['learning_rate'])
         for c in train.call_args_list],
        [(reference.ADAM, reference.LEARNING_RATE),
         (reference.SGD, _CONFIG.client_lr)])
    self.assertEqual(made.central_sgd.settings['central_optimizer'],
                     reference.SGD)
    self.assertEqual(made.central_sgd.settings['central_learning_rate'],
                     _CONFIG.client_lr)
    self.assertNotEqual(made.central_sgd.rows, made.central.rows)
    rows = made.central.rows
    self.assertEqual([r['epoch'] for r in rows], [0, 1, 2])
    self.assertIsNone(rows[0]['train_loss'])
    # The second epoch's steps have a lower mean loss than the first's,
    # and the test client loss fell from the initial model's.
    self.assertLess(rows[2]['train_loss'], rows[1]['train_loss'])
    self.assertLess(rows[2]['hinge_loss'], rows[0]['hinge_loss'])
    self.assertEqual(made.central.settings['spreadout_lambda'],
                     _CONFIG.spreadout_lambda)
    self.assertEqual(made.central.settings['central_epochs'], 2)
    self.assertEqual(made.central.settings['context_layer'],
                     dual_encoder.RELU_DENSE)
    # Written, read back equal, and not made again for the same settings.
    read = records_lib.read_references(records_dir)
    self.assertEqual(read, made)
    with mock.patch.object(reference, 'train_central',
                           side_effect=AssertionError('retrained')):
      self.assertEqual(reference.reference_rows(
          data, _CONFIG, description, records_dir, epochs=2), made)
    # Another lambda is another model: the ceiling and the SGD row are made
    # again, the popularity floor (no model) is not.
    with mock.patch.object(reference, 'train_central',
                           return_value=rows) as train:
      again = reference.reference_rows(
          data, _CONFIG._replace(spreadout_lambda=0.1), description,
          records_dir, epochs=2)
    self.assertEqual(train.call_count, 2)
    self.assertEqual(again.central.settings['spreadout_lambda'], 0.1)
    self.assertEqual(again.popularity, made.popularity)
    self.assertEqual(records_lib.read_references(records_dir).central,
                     again.central)

  def test_best_row_is_the_best_epoch_after_training(self):
    rows = [dict(epoch=e, recall_at_10=r) for e, r in
            enumerate([0.9, 0.1, 0.3, 0.3, 0.2])]
    record = records_lib.CentralRecord(rows, {}, 1.0, 'm', 'd', 'c')
    # Epoch 0 (the initial model) is no ceiling; among equals, the first.
    self.assertEqual(reference.best_row(record)['epoch'], 2)

  def test_bad_arguments(self):
    data, _ = _data(self)
    arrays = movielens_process.evaluation_arrays(data, _CONFIG)
    with self.assertRaisesRegex(ValueError, 'epochs'):
      reference.train_central(data, _CONFIG, arrays, epochs=0)
    with self.assertRaisesRegex(ValueError, 'learning_rate'):
      reference.train_central(data, _CONFIG, arrays, learning_rate=0.0)
    with self.assertRaisesRegex(ValueError, 'optimizer'):
      reference.train_central(data, _CONFIG, arrays, optimizer='adagrad')

  def test_sgd_takes_plain_gradient_steps(self):
    # One epoch of one batch: the weights move by -lr times the loss's
    # gradient at the initial weights, computed here directly.
    data, _ = _data(self)
    arrays = movielens_process.evaluation_arrays(data, _CONFIG)
    model = movielens_process.client_model(movielens_config.BASELINE, data,
                                           _CONFIG)
    contexts, labels = reference._train_arrays(data)
    batch = dual_encoder.model_batch(dict(context=contexts, label=labels))
    initial = [tf.constant(w) for w in model.initial_weights[0]]
    with tf.GradientTape() as tape:
      tape.watch(initial)
      loss = model.loss(model.predict_on_batch((initial, ()), batch[0]),
                        batch[1])
    want = [w - 0.5 * g for w, g in zip(initial, tape.gradient(loss,
                                                                 initial))]
    got = {}
    real = movielens_process.evaluate

    def evaluate(weights, *args):
      got['weights'] = weights[0]
      return real(weights, *args)

    with mock.patch.object(movielens_process, 'evaluate', side_effect=evaluate):
      reference.train_central(data, _CONFIG, arrays, epochs=1,
                              learning_rate=0.5, batch_size=len(labels),
                              optimizer=reference.SGD)
    for g, w in zip(got['weights'], want):
      np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


class LambdaSearchTest(absltest.TestCase):

  def test_selects_the_best_score_and_the_smaller_lambda_of_a_tie(self):
    scores = {1e-2: 0.3, 1e-4: 0.1, 1e-3: 0.3, 1e-1: 0.2}
    selected, found = reference.select_lambda(list(scores), scores.get)
    # 1e-3 and 1e-2 tie; the grid lists 1e-2 first, the smaller wins.
    self.assertEqual(selected, 1e-3)
    self.assertEqual(found, list(scores.values()))
    self.assertEqual(reference.select_lambda(
        [0.1, 0.2], {0.1: 0.2, 0.2: 0.25}.get)[0], 0.2)
    # A diverged run loses to every finite score.
    self.assertEqual(reference.select_lambda(
        [0.0, 1.0], {0.0: math.nan, 1.0: 0.01}.get)[0], 1.0)
    for bad in ([], [0.1, 0.1], [-1.0], [math.inf]):
      with self.assertRaisesRegex(ValueError, 'lambdas'):
        reference.select_lambda(bad, lambda x: 0.0)

  def test_search_scores_on_validation_users_and_is_recorded(self):
    data, description = _data(self)
    records_dir = temp_dirs.temp_dir(self)
    validation = movielens_process.evaluation_arrays(data, _CONFIG,
                                                     data.validation_user_ids)
    scores = {1e-3: 0.2, 1e-2: 0.4, 1e-1: 0.4}

    def stub(data_arg, config, arrays, *, epochs, learning_rate):
      del data_arg, learning_rate
      for got, expected in zip(arrays, validation):
        np.testing.assert_array_equal(got, expected)
      return [dict(epoch=e, recall_at_10=scores[config.spreadout_lambda] * e
                   / epochs) for e in range(epochs + 1)]

    with mock.patch.object(reference, 'train_central', side_effect=stub):
      record = reference.search_lambda(
          data, _CONFIG, description, records_dir, [1e-1, 1e-3, 1e-2],
          epochs=2)
    self.assertEqual(record.selected, 1e-2)
    self.assertEqual(record.scores, [0.4, 0.2, 0.4])
    self.assertEqual(record.validation_recalls[1], [0.0, 0.1, 0.2])
    self.assertNotIn('spreadout_lambda', record.settings)
    self.assertEqual(record.settings['spreadout_lambdas'],
                     [1e-1, 1e-3, 1e-2])
    self.assertEqual(records_lib.read_reference(
        records_dir, records_lib.LAMBDA_SEARCH), record)
    # A rerun reads it back; another grid searches again.
    with mock.patch.object(reference, 'train_central',
                           side_effect=AssertionError('searched again')):
      self.assertEqual(reference.search_lambda(
          data, _CONFIG, description, records_dir, [1e-1, 1e-3, 1e-2],
          epochs=2), record)
    with mock.patch.object(reference, 'train_central', side_effect=stub):
      self.assertEqual(reference.search_lambda(
          data, _CONFIG, description, records_dir, [1e-3], epochs=2
      ).selected, 1e-3)


class SettingsTest(absltest.TestCase):

  def test_settings_name_the_forms_and_the_margin_used(self):
    settings = movielens_lib.record_settings(movielens_config.Config(), 'd')
    self.assertEqual(
        {k: settings[k] for k in records_lib.EARLIER_FORMS},
        dict(context_layer=dual_encoder.RELU_DENSE,
             client_loss=dual_encoder.SQUARED_HINGE, margin=0.9,
             spreadout_form=dual_encoder.FROBENIUS, spreadout_lambda=0.001))
    self.assertEqual(movielens_lib.record_settings(movielens_config.Config(
        client_loss=dual_encoder.HINGE), 'd')['margin'], 1.0)

  def test_a_record_of_the_earlier_forms_is_not_read_as_current(self):
    directory = temp_dirs.temp_dir(self)
    earlier = movielens_config.Config(
        context_layer=dual_encoder.IDENTITY_LINEAR,
        client_loss=dual_encoder.HINGE,
        spreadout_form=dual_encoder.MEAN_SQUARED, spreadout_lambda=1.0)
    # The earlier forms, by the library's names.
    self.assertEqual(
        {k: v for k, v in movielens_lib.record_settings(earlier, 'd').items()
         if k in records_lib.EARLIER_FORMS}, records_lib.EARLIER_FORMS)
    # A record written before the settings had the forms.
    old = movielens_lib.record_settings(movielens_config.Config(), 'd')
    for key in records_lib.EARLIER_FORMS:
      del old[key]
    old['margin'] = 1.0
    records_lib.write_record(directory, records_lib.ScenarioRecord(
        scenario='baseline', rounds=1,
        rows=[dict(round=0, recall_at_10=0.0, hinge_loss=1.0),
              dict(round=1, recall_at_10=0.1, hinge_loss=0.9)],
        settings=old, costs={}, mean_keys=1.0, seconds=1.0,
        seconds_complete=True, seconds_per_round=1.0, machine='m',
        date='d', command='c'))
    read = records_lib.read_record(directory, 'baseline')
    self.assertEqual(read.settings['context_layer'],
                     dual_encoder.IDENTITY_LINEAR)
    current = movielens_lib.record_settings(movielens_config.Config(), 'd')
    with self.assertRaisesRegex(
        ValueError, r'baseline\.json.*client_loss: .hinge. there, '
        r'.squared_hinge. now.*context_layer.*margin: 1\.0 there, 0\.9 now'
        r'.*spreadout_form.*spreadout_lambda'):
      records_lib.check_settings(directory, current)
    # It stands for a run of the earlier forms.
    records_lib.check_settings(
        directory, movielens_lib.record_settings(earlier, 'd'))


if __name__ == '__main__':
  absltest.main()
