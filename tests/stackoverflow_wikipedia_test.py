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
"""Tests for the Stack Overflow + Wikipedia task (tff_mixed.tasks)."""

import shutil
import tempfile

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.models import char_lm
from tff_mixed.tasks import char_sequences
from tff_mixed.tasks import stackoverflow_wikipedia

task = stackoverflow_wikipedia
cs = char_sequences


def _sequences(n, length=5, value=4):
  inputs = np.full([n, length], value, np.int32) + np.arange(n)[:, None]
  return cs.Sequences(inputs, inputs + 1, n * length, 0, n, 0)


class StackOverflowWikipediaTest(absltest.TestCase):

  def test_missing_database_says_how_to_get_it(self):
    directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, directory)
    with self.assertRaisesRegex(task.DataNotFoundError,
                                'convert_posts_main') as raised:
      task.load_stackoverflow(directory)
    self.assertIn(f'{directory}/stackoverflow.sqlite', str(raised.exception))

  def test_evaluation_mix_keeps_the_papers_proportion_without_repeats(self):
    sets = task.evaluation_sets(_sequences(300), _sequences(40, value=1000),
                                seed=3)
    inputs, _ = sets['mixed']
    from_federated = int(np.sum(inputs[:, 0] < 1000))
    from_central = len(inputs) - from_federated
    # All 40 central sequences and the 120 federated ones they allow.
    self.assertEqual((from_federated, from_central), (120, 40))
    self.assertLen({tuple(row) for row in inputs}, 160)
    self.assertLen(sets['federated'][0], 300)
    self.assertLen(sets['central'][0], 40)
    with self.assertRaisesRegex(ValueError, 'need sequences'):
      task.evaluation_sets(_sequences(3), _sequences(0))
    with self.assertRaisesRegex(ValueError, '`federated_share`'):
      task.evaluation_sets(_sequences(3), _sequences(3), federated_share=1.0)

  def test_evaluate_equals_the_models_token_weighted_metrics(self):
    model = char_lm.build_char_lm(embedding_dim=4, gru_units=6,
                                  sequence_length=8, seed=2)
    sequences = cs.text_sequences(
        ['The quick brown fox', 'jumps over', 'the lazy dog.'], 8)
    weights = model.initial_weights[0]
    got = task.evaluate(weights, sequences.inputs, sequences.targets,
                        batch_size=2)

    @tf.function
    def metrics():
      output = model.predict_on_batch(model.initial_weights,
                                      sequences.inputs)
      state = model.update_metrics_state(
          model.initialize_metrics_state(), labels=sequences.targets,
          batch_output=tff.learning.models.BatchOutput(
              predictions=output, loss=model.loss(output, sequences.targets),
              num_examples=len(sequences.inputs)))
      return model.finalize_metrics(state)

    want = metrics()
    self.assertAlmostEqual(got['loss'], float(want['loss']), places=5)
    self.assertAlmostEqual(got['accuracy'], float(want['accuracy']),
                           places=6)

  def test_client_datasets_built_in_tff_hold_the_clients_sequences(self):
    client_data = tff.simulation.datasets.stackoverflow.get_synthetic()
    client_id = client_data.client_ids[0]
    want = task.client_sequences(client_data, [client_id], 12)
    computation = task.dataset_computation(client_data, batch_size=3,
                                           sequence_length=12, seed=1)
    batches = list(computation(f'7|{client_id}'))
    got = np.concatenate([b[0] for b in batches])
    self.assertLessEqual(max(len(b[0]) for b in batches), 3)
    # Shuffled: the same rows in another order.
    self.assertEqual(sorted(map(tuple, got)),
                     sorted(map(tuple, want.inputs)))
    fixed = task.dataset_computation(client_data, batch_size=3, num_steps=5,
                                     sequence_length=12, seed=1)
    self.assertLen(list(fixed(f'7|{client_id}')), 5)
    self.assertEqual(task.round_client_ids(['a', 'b'], 4), ['4|a', '4|b'])

  def test_client_dataset_fn_traces_in_a_group_loop(self):
    # How a group of clients reads its members' data (`ClientGroups`): the
    # function is called on an id tensor in a `tf.while_loop` body.
    client_data = tff.simulation.datasets.stackoverflow.get_synthetic()
    ids = [f'3|{c}' for c in client_data.client_ids[:2]]
    kwargs = dict(batch_size=3, num_steps=4, sequence_length=12, seed=1)
    dataset_fn = task.client_dataset_fn(client_data, **kwargs)

    @tf.function
    def input_sums(group):
      def body(i, sums):
        total = dataset_fn(group[i]).reduce(
            tf.constant(0, tf.int64),
            lambda s, batch: s + tf.reduce_sum(tf.cast(batch[0], tf.int64)))
        return i + 1, tf.concat([sums, [total]], 0)

      return tf.while_loop(
          lambda i, _: i < tf.size(group), body,
          (tf.constant(0), tf.zeros([0], tf.int64)),
          shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))[1]

    computation = task.dataset_computation(client_data, **kwargs)
    want = [sum(int(np.sum(b[0])) for b in computation(i)) for i in ids]
    self.assertEqual(input_sums(tf.constant(ids)).numpy().tolist(), want)


if __name__ == '__main__':
  absltest.main()
