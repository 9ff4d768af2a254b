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
"""Tests of the CelebA smile task and its experiment binaries.

All on small generated `celeba.sqlite` files read through TFF's real CelebA
loader; CelebA itself is never needed (nor shipped: its licence forbids it).
"""

import csv
import os
import shutil
import sqlite3
import tempfile

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.celeba_smile import celeba_smile_lib
from tests import binary_runs
from tests import celeba_testing
from tests import preloaded_python
from tests import temp_dirs
from tff_mixed.core import transfer_select
from tff_mixed.models import dense
from tff_mixed.tasks import celeba_smile as celeba
from tff_mixed.tasks import digits_label_imbalance


def _rows(images) -> list[bytes]:
  """Images as sorted byte strings: compares multisets of images."""
  return sorted(np.asarray(i, np.uint8).tobytes() for i in images)


def _loader_images(client_data, client_ids, label=None):
  """Images (uint8) of `client_ids` from TFF's loader, optionally by label."""
  images = []
  for cid in client_ids:
    for e in client_data.create_tf_dataset_for_client(cid):
      if label is None or bool(e['smiling'].numpy()) == label:
        images.append(e['image'].numpy().astype(np.uint8))
  return images


def _features_to_images(x) -> list[np.ndarray]:
  pixels = np.rint(np.asarray(x) * 255.0).astype(np.uint8)
  return list(pixels.reshape(-1, *celeba.IMAGE_SHAPE))


def _loader_dataset(task, client_id, oracle=False, num_steps=None):
  """A client's dataset through TFF's SQL loader: the reference order.

  The client's celebrities' serialized examples as TFF's loader gives them,
  filtered by label unless `oracle`, shuffled with `dataset_for_id`'s seed,
  parsed and batched: what `dataset_for_id` reads from its client store.
  """
  label = task.label
  celebrities = client_id.split('|')[1].split('+')
  dataset = tf.data.Dataset.from_tensor_slices(celebrities).flat_map(
      task.serialized_train_data.serializable_dataset_fn)
  if not oracle:
    dataset = dataset.filter(lambda proto: tf.io.parse_single_example(
        proto, {label: tf.io.FixedLenFeature([], tf.int64)})[label] > 0)
  seed = tf.strings.to_hash_bucket_fast(
      tf.strings.join([client_id, str(task.seed)], '#'), 2**31 - 1)

  def parse(proto):
    example = tf.io.parse_single_example(proto, {
        'image': tf.io.FixedLenFeature(celeba.IMAGE_SHAPE, tf.int64),
        label: tf.io.FixedLenFeature([], tf.int64)})
    return (celeba.to_features(example['image']),
            tf.reshape(tf.cast(example[label] > 0, tf.float32), [1]))

  dataset = dataset.shuffle(1024, seed=seed).map(parse).batch(
      task.client_batch_size)
  if num_steps is not None:
    dataset = dataset.repeat().take(num_steps)
  return dataset


def _assert_same_batches(test, dataset, reference):
  batches, expected = list(dataset), list(reference)
  test.assertLen(batches, len(expected))
  for (x, y), (ex, ey) in zip(batches, expected):
    np.testing.assert_array_equal(x, ex)
    np.testing.assert_array_equal(y, ey)


class CelebASmileTaskTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.cache_dir = tempfile.mkdtemp()
    celeba_testing.make_fake_celeba_cache(
        cls.cache_dir, num_train_clients=10, num_test_clients=3,
        images_per_client=6, seed=5)
    cls.train, cls.test = tff.simulation.datasets.celeba.load_data(
        cache_dir=cls.cache_dir)
    cls.task = celeba.build_task(cls.cache_dir, client_batch_size=4, seed=1)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.cache_dir, ignore_errors=True)
    super().tearDownClass()

  def test_composite_clients_group_three_raw_training_clients(self):
    task = self.task
    raw = [c for group in task.clients for c in group]
    self.assertLen(set(raw), len(raw))  # Disjoint.
    self.assertTrue(set(raw) <= set(self.train.client_ids))
    # 10 raw clients in 3 groups of 3-4; only a group without any smiling
    # image could be left out.
    for group in task.clients:
      self.assertIn(len(group), (3, 4))
    left_out = set(self.train.client_ids) - set(raw)
    self.assertEmpty(_loader_images(self.train, sorted(left_out), True))
    self.assertLen(task.clients, 3)

  def test_federated_clients_hold_only_their_smiling_images(self):
    task = self.task
    for index, group in enumerate(task.clients):
      xs, ys = zip(*task.client_dataset(index))
      labels = np.concatenate(ys)
      np.testing.assert_array_equal(labels, 1.0)
      self.assertEqual(len(labels), task.num_client_examples[index])
      self.assertEqual(
          _rows(_features_to_images(np.concatenate(xs))),
          _rows(_loader_images(self.train, group, label=True)))

  def test_oracle_clients_hold_all_their_images(self):
    task = self.task
    for index, group in enumerate(task.clients):
      xs, ys = zip(*task.client_dataset(index, oracle=True))
      self.assertEqual(len(np.concatenate(ys)),
                       task.num_oracle_client_examples[index])
      self.assertEqual(_rows(_features_to_images(np.concatenate(xs))),
                       _rows(_loader_images(self.train, group)))

  def test_central_store_holds_every_non_smiling_training_image(self):
    store = self.task.central_store
    x, y = store.read(tf.range(store.num_examples))
    np.testing.assert_array_equal(y, 0.0)
    self.assertEqual(x.shape[1], celeba.NUM_FEATURES)
    self.assertEqual(
        _rows(_features_to_images(x)),
        _rows(_loader_images(self.train, self.train.client_ids, False)))

  def test_eval_set_is_every_image_of_the_evaluation_clients(self):
    task = self.task
    self.assertEqual(_rows(task.eval_images),
                     _rows(_loader_images(self.test, self.test.client_ids)))
    positives = _loader_images(self.test, self.test.client_ids, True)
    self.assertEqual(int(task.eval_labels.sum()), len(positives))
    self.assertBetween(float(task.eval_labels.mean()), 0.01, 0.99)

  def test_client_order_varies_by_round_and_is_reproducible(self):
    task = self.task

    def order(round_num):
      return np.concatenate([x for x, _ in task.client_dataset(
          0, oracle=True, round_num=round_num)])

    np.testing.assert_array_equal(order(3), order(3))
    self.assertFalse(np.array_equal(order(3), order(4)))

  def test_client_datasets_are_the_loaders_batches_in_its_order(self):
    # The client store and its rows give, batch for batch, what shuffling
    # TFF's loader's examples gives: every client, two rounds, both kinds of
    # client, with and without a fixed number of steps (cycling).
    task = self.task
    for index in range(task.num_clients):
      for round_num in (0, 3):
        client_id = task.client_id(index, round_num)
        for oracle in (False, True):
          for num_steps in (None, 5):
            _assert_same_batches(
                self, task.dataset_for_id(client_id, oracle, num_steps),
                _loader_dataset(task, client_id, oracle, num_steps))

  def test_client_groups_give_each_datasets_fingerprint(self):
    # From the store's row hashes, what a pass over the dataset gives.
    task = self.task
    for oracle in (False, True):
      fingerprint_fn = task.client_groups(oracle).fingerprint_fn
      fingerprints = set()
      for index in range(task.num_clients):
        client_id = task.client_id(index, round_num=2)
        want = int(transfer_select.data_fingerprint(
            task.dataset_for_id(client_id, oracle)))
        self.assertEqual(int(fingerprint_fn(tf.constant(client_id))), want)
        fingerprints.add(want)
      self.assertLen(fingerprints, task.num_clients)

  def test_client_datasets_follow_the_loader_when_clients_interleave(self):
    # A table whose rows mix the celebrities: each client's rows are still
    # read in the order TFF's loader gives its examples. Few smiles, so
    # that some composite clients hold a celebrity without one.
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=9, num_test_clients=2,
        images_per_client=4, seed=4, smiling_fraction=0.25)
    connection = sqlite3.connect(
        os.path.join(cache_dir, celeba.DATABASE_FILENAME))
    rows = connection.execute('SELECT split_name, client_id, '
                              'serialized_example_proto FROM examples'
                              ).fetchall()
    connection.execute('DELETE FROM examples')
    connection.executemany(
        'INSERT INTO examples (split_name, client_id, '
        'serialized_example_proto) VALUES (?, ?, ?)',
        [rows[i] for i in np.random.default_rng(0).permutation(len(rows))])
    connection.commit()
    connection.close()
    task = celeba.build_task(cache_dir, client_batch_size=3, seed=2)
    self.assertIn(0, [len(_loader_images(task.train_data, [c], True))
                      for group in task.clients for c in group])
    for index in range(task.num_clients):
      client_id = task.client_id(index, 1)
      for oracle in (False, True):
        _assert_same_batches(self, task.dataset_for_id(client_id, oracle),
                             _loader_dataset(task, client_id, oracle))

  def test_evaluation_counts_both_labels(self):
    model = dense.build_binary_classifier(celeba.NUM_FEATURES,
                                          hidden_units=(4,))
    metrics = self.task.evaluate(model, model.initial_weights, batch_size=7)
    self.assertEqual(metrics.num_examples, len(self.task.eval_labels))
    self.assertBetween(metrics.auc, 0.0, 1.0)
    whole = digits_label_imbalance.evaluate(
        model, model.initial_weights,
        (celeba.to_features(self.task.eval_images), self.task.eval_labels))
    self.assertAlmostEqual(metrics.auc, whole.auc)
    self.assertAlmostEqual(metrics.loss, whole.loss, places=5)

  def test_max_eval_examples_samples_the_eval_set(self):
    task = celeba.build_task(self.cache_dir, max_eval_examples=5, seed=1)
    self.assertLen(task.eval_labels, 5)
    self.assertTrue(set(_rows(task.eval_images))
                    <= set(_rows(self.task.eval_images)))


class CacheTest(absltest.TestCase):

  def test_cache_is_reused_then_rebuilt_when_the_database_changes(self):
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=3, num_test_clients=1,
        images_per_client=5, seed=2)
    work_dir = os.path.join(temp_dirs.temp_dir(self), 'work')
    first = celeba.build_task(cache_dir, work_dir=work_dir)
    manifest = os.path.join(work_dir, 'central_store', 'manifest.json')
    built = os.stat(manifest).st_mtime_ns
    celeba.build_task(cache_dir, work_dir=work_dir)
    self.assertEqual(os.stat(manifest).st_mtime_ns, built)  # Reused.
    celeba_testing.make_fake_celeba_cache(
        cache_dir, num_train_clients=3, num_test_clients=1,
        images_per_client=9, seed=3)
    second = celeba.build_task(cache_dir, work_dir=work_dir)
    self.assertNotEqual(first.central_store.num_examples + len(
        first.eval_labels), second.central_store.num_examples + len(
            second.eval_labels))
    self.assertEqual(second.central_store.num_examples + sum(
        second.num_client_examples), 3 * 9)


def _write_database(path, image_values=celeba.NUM_FEATURES, tables=True):
  connection = sqlite3.connect(path)
  if tables:
    connection.execute('CREATE TABLE examples (split_name TEXT, client_id '
                       'TEXT, serialized_example_proto BLOB)')
    connection.execute('CREATE TABLE client_metadata (client_id TEXT, '
                       'split_name TEXT, num_examples INTEGER)')
    feature = {n: tf.train.Feature(int64_list=tf.train.Int64List(value=[0]))
               for n in celeba.ATTRIBUTE_NAMES}
    feature['image'] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=[0] * image_values))
    proto = tf.train.Example(features=tf.train.Features(
        feature=feature)).SerializeToString()
    for split in (celeba.TRAIN_SPLIT, celeba.TEST_SPLIT):
      connection.execute('INSERT INTO examples VALUES (?, ?, ?)',
                         (split, split, proto))
      connection.execute('INSERT INTO client_metadata VALUES (?, ?, 1)',
                         (split, split))
  else:
    connection.execute('CREATE TABLE other (a TEXT)')
  connection.commit()
  connection.close()


class BadInputTest(absltest.TestCase):

  def test_missing_data_says_how_to_get_them(self):
    with self.assertRaisesRegex(
        celeba.DataNotFoundError,
        r'does not exist.*load_data.*convert_raw_celeba_main'):
      celeba.build_task(os.path.join(temp_dirs.temp_dir(self), 'nowhere'))

  def test_corrupt_database(self):
    cache_dir = temp_dirs.temp_dir(self)
    with open(os.path.join(cache_dir, 'celeba.sqlite'), 'wb') as f:
      f.write(os.urandom(5000))
    with self.assertRaisesRegex(ValueError, 'is not an SQLite database'):
      celeba.build_task(cache_dir)

  def test_wrong_schema(self):
    cache_dir = temp_dirs.temp_dir(self)
    _write_database(os.path.join(cache_dir, 'celeba.sqlite'), tables=False)
    with self.assertRaisesRegex(ValueError, "has no table 'examples'"):
      celeba.build_task(cache_dir)

  def test_images_of_the_wrong_shape(self):
    cache_dir = temp_dirs.temp_dir(self)
    _write_database(os.path.join(cache_dir, 'celeba.sqlite'),
                    image_values=28 * 28)
    with self.assertRaisesRegex(ValueError, '784 values, expected 84x84x3'):
      celeba.build_task(cache_dir)

  def test_unknown_attribute(self):
    with self.assertRaisesRegex(ValueError, "40 CelebA attributes.*'grinning'"):
      celeba.build_task(temp_dirs.temp_dir(self), label='grinning')

  def test_more_clients_per_round_than_clients(self):
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=6, num_test_clients=1,
        images_per_client=5, seed=2)
    with self.assertRaisesRegex(ValueError, r'`clients_per_round` \(5\) must '
                                r'be at most the number of clients \(2\)'):
      celeba_smile_lib.run_experiment(
          cache_dir=cache_dir, clients_per_round=5, rounds=1,
          output_dir=temp_dirs.temp_dir(self))


class ClientGroupsTest(absltest.TestCase):

  def test_client_groups_give_the_per_client_metrics(self):
    # Three clients a round in groups of 2 and 1, against one client per
    # CLIENTS member (datasets built from the id strings in TFF's worker).
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=12, num_test_clients=2,
        images_per_client=6, seed=3)
    kwargs = dict(cache_dir=cache_dir,
                  scenarios=['fl_only', 'oracle', 'two_way_gt',
                             'example_transfer'], rounds=2,
                  clients_per_round=3, client_batch_size=2, client_lr=0.05,
                  hidden_units=(4,), eval_every=1, progress=False)
    per_client, grouped = (
        celeba_smile_lib.run_experiment(
            clients_per_group=n, output_dir=temp_dirs.temp_dir(self), **kwargs)
        for n in (1, 2))
    self.assertLen(grouped.comparison.rows, len(per_client.comparison.rows))
    for want, got in zip(per_client.comparison.rows, grouped.comparison.rows):
      self.assertEqual(got[:2], want[:2])
      np.testing.assert_allclose(
          got[2:-1], want[2:-1], rtol=1e-4, atol=1e-6,
          err_msg=f'{want.scenario} round {want.round}')


def _run_binary(module, *args, timeout=600):
  return preloaded_python.run_module(module, *args, timeout=timeout)


class AdviceTest(absltest.TestCase):

  def test_run_advice_takes_run_experiment_arguments(self):
    # The binary passes `run_experiment`'s keyword arguments; the ones only
    # the comparison reads (rounds, eval_every, scenarios) are ignored.
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=9, num_test_clients=2,
        images_per_client=6, seed=4)
    output_dir = temp_dirs.temp_dir(self)
    advice, files = celeba_smile_lib.run_advice(
        2, cache_dir=cache_dir, rounds=50, eval_every=7,
        scenarios=['fl_only'], clients_per_round=2, hidden_units=(8,),
        output_dir=output_dir, progress=False)
    self.assertEqual(advice.rounds, (1, 2))
    self.assertEqual(advice.settings.cohort_size, 2)
    self.assertEqual(advice.settings.client_steps, 2)  # The paper's K.
    self.assertEqual(advice.settings.client_learning_rate, 0.01)
    for path in files.values():
      self.assertTrue(os.path.exists(path), path)
    self.assertEqual(os.path.dirname(files['advice_json']), output_dir)


@binary_runs.runs_binaries
class BinaryTest(absltest.TestCase):

  def test_two_round_smoke_run_of_every_scenario(self):
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=9, num_test_clients=2,
        images_per_client=6, seed=4)
    output_dir = temp_dirs.temp_dir(self)
    results = os.path.join(output_dir, 'RESULTS.md')
    with open(results, 'w') as f:
      f.write('# Results\n\n<!-- BEGIN other -->\nkept\n<!-- END other -->\n')
    run = _run_binary(
        'experiments.celeba_smile.celeba_smile_main', f'--cache_dir={cache_dir}',
        '--rounds=2', '--clients_per_round=2', '--eval_every=1',
        '--with_diagnostics', '--hidden_units=8', f'--output_dir={output_dir}',
        f'--results_markdown={results}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    for scenario in celeba_smile_lib.SCENARIOS:
      self.assertIn(scenario, run.stdout)
    with open(os.path.join(output_dir, 'metrics.csv')) as f:
      rows = list(csv.DictReader(f))
    for scenario in celeba_smile_lib.SCENARIOS:
      self.assertEqual([int(r['round']) for r in rows
                        if r['scenario'] == scenario], [0, 1, 2])
    for row in rows:
      self.assertBetween(float(row['eval_auc']), 0.0, 1.0)
    with open(os.path.join(output_dir, 'diagnostics.txt')) as f:
      diagnostics = f.read()
    for scenario in ('parallel_training', 'one_way_gt', 'two_way_gt'):
      self.assertIn(scenario, diagnostics)
    self.assertGreater(
        os.path.getsize(os.path.join(output_dir, 'auc_accuracy.png')), 1000)
    with open(results) as f:
      report = f.read()
    self.assertIn('kept', report)  # Other sections survive.
    self.assertIn('<!-- BEGIN celeba_smile -->', report)
    self.assertIn('non-smiling training images at the server', report)

  def test_sweep_driver_runs_each_point(self):
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=6, num_test_clients=1,
        images_per_client=5, seed=4)
    output_dir = temp_dirs.temp_dir(self)
    run = _run_binary(
        'experiments.celeba_smile.sweep_main', f'--cache_dir={cache_dir}',
        '--sweep=central_batch_size', '--central_batch_sizes=2,4',
        '--rounds=1', '--clients_per_round=2', '--hidden_units=4',
        f'--output_dir={output_dir}')
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    for label in ('one_way_gt |B_c|=2', 'one_way_gt |B_c|=4',
                  'two_way_gt |B_c|=2', 'two_way_gt |B_c|=4'):
      self.assertIn(label, run.stdout)
    self.assertTrue(os.path.exists(os.path.join(
        output_dir, 'central_batch_size', 'auc_accuracy.png')))

  def test_missing_data_is_a_clear_message_not_a_traceback(self):
    run = _run_binary('experiments.celeba_smile.celeba_smile_main',
                      f'--cache_dir={temp_dirs.temp_dir(self)}/none', '--rounds=1',
                      f'--output_dir={temp_dirs.temp_dir(self)}', timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn('error: The CelebA database', run.stderr)
    self.assertIn('convert_raw_celeba_main', run.stderr)
    self.assertNotIn('Traceback', run.stderr)

  def test_bad_flags_are_clear_messages(self):
    run = _run_binary('experiments.celeba_smile.sweep_main',
                      '--sweep=lr_steps', '--lr_steps=fast',
                      f'--output_dir={temp_dirs.temp_dir(self)}', timeout=300)
    self.assertEqual(run.returncode, 1)
    self.assertIn("eta:K pair must look like 0.01:2, got 'fast'", run.stderr)
    self.assertNotIn('Traceback', run.stderr)


if __name__ == '__main__':
  absltest.main()
