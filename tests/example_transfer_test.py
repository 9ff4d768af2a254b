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
"""Each client gets its own central examples (arXiv:2111.12150; Zhao 2018).

Example Transfer (arXiv:2111.12150, Algorithm 3, line 3) samples a batch of
central examples for every client of every round; FedAvg with shared data
(Zhao et al. 2018, arXiv:1806.00582) gives every client its own random
alpha-portion of the shared set G. The tests make the examples a client
trained on visible: central example j has input e_j (one-hot) and client
examples have input 0, so after one round from zero weights, weight w_j is
nonzero exactly when some client trained on central example j. Oracle tests
replay rounds in numpy with several local batches, a partial last batch and
the shuffle; they ask `transfer_select` only which examples each client drew
and the order of its shuffle.
"""

import asyncio
import functools
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

from tests import testing_utils as tu
import tff_mixed
from tff_mixed.algorithms import example_transfer
from tff_mixed.core import communication
from tff_mixed.core import example_store
from tff_mixed.core import store_hashes
from tff_mixed.core import transfer_select
from tff_mixed.models import dense

_NUM_CENTRAL = 8


def _one_hot_central():
  x = np.eye(_NUM_CENTRAL, dtype=np.float32)
  y = np.ones([_NUM_CENTRAL, 1], np.float32)
  return x, y


def _zero_input_client(labels):
  """A client whose examples carry no gradient to w, only to the bias."""
  y = np.asarray(labels, np.float32).reshape(-1, 1)
  x = np.zeros([y.shape[0], _NUM_CENTRAL], np.float32)
  return tf.data.Dataset.from_tensor_slices((x, y)).batch(2)


_CLIENT_A = [1.0, 2.0, 3.0]
_CLIENT_B = [5.0, 7.0]


def _drawn(labels, seed, round_num, num_keys, num_examples, redraw=True):
  """The indices the pure-TF draw gives the client holding `labels`."""
  drawn = transfer_select.draw(
      _zero_input_client(labels), tf.constant(round_num), seed=seed,
      num_keys=num_keys, num_examples=num_examples,
      redraw_each_round=redraw)
  return frozenset(drawn.keys.numpy().tolist())


def _build(algorithm, seed=3):
  model = dense.build_linear_regression(_NUM_CENTRAL)
  objective = tff_mixed.central_data_objective(_one_hot_central())
  if algorithm == 'example_transfer':
    return tff_mixed.build_example_transfer(
        model, objective, tu.sgd(0.1), tu.sgd(1.0), examples_per_client=3,
        client_batch_size=2, seed=seed)
  # |G| = 0.5 * 12 = 6 of the 8 central examples; alpha * |G| = 3 each.
  return tff_mixed.build_fedavg_with_shared_data(
      model, objective, tu.sgd(0.1), tu.sgd(1.0), beta=0.5, alpha=0.5,
      num_client_examples=12, client_batch_size=2, warmup_steps=0,
      warmup_learning_rate=0.1, warmup_batch_size=2, seed=seed)


def _trained_on(process, state, clients):
  """The central examples the round's clients trained on, and the new state."""
  new_state = process.next(state, [_zero_input_client(c) for c in clients])
  w = tu.trainable(process, new_state.state)[0].ravel()
  return frozenset(np.flatnonzero(w != 0.0).tolist()), new_state.state


def _run_subsets(algorithm, seed):
  """Round 0 and 1 subsets of clients A and B (each run alone), state 1."""
  process = _build(algorithm, seed)
  state = process.initialize()
  subsets = {}
  for name, labels in (('a', _CLIENT_A), ('b', _CLIENT_B)):
    subsets[name, 0], _ = _trained_on(process, state, [labels])
  _, state_1 = _trained_on(process, state, [_CLIENT_A, _CLIENT_B])
  # Round 1 from zero weights again, so w_j still shows who trained on j.
  state_1 = process.set_model_weights(
      state_1, process.get_model_weights(state))
  for name, labels in (('a', _CLIENT_A), ('b', _CLIENT_B)):
    subsets[name, 1], _ = _trained_on(process, state_1, [labels])
  return subsets, state_1


_cached_subsets = functools.lru_cache(_run_subsets)


class PerClientSubsetTest(absltest.TestCase):
  """The process's wiring: whose examples, which round, after a resume."""

  def _subsets(self, algorithm, seed=3):
    return _cached_subsets(algorithm, seed)

  def test_two_clients_of_one_round_train_on_different_examples(self):
    for algorithm in ('example_transfer', 'shared_data'):
      with self.subTest(algorithm):
        process = _build(algorithm)
        both, _ = _trained_on(process, process.initialize(),
                              [_CLIENT_A, _CLIENT_B])
        # Three examples each: more than three in all means they differ.
        self.assertGreater(len(both), 3, f'both clients trained on {both}')

  def test_subsets_per_client_and_round(self):
    for algorithm in ('example_transfer', 'shared_data'):
      with self.subTest(algorithm):
        subsets, _ = self._subsets(algorithm)
        for key, subset in subsets.items():
          self.assertLen(subset, 3, f'client/round {key}: {subset}')
        self.assertNotEqual(subsets['a', 0], subsets['b', 0])
        self.assertNotEqual(subsets['a', 1], subsets['b', 1])
        if algorithm == 'example_transfer':
          # Algorithm 3 draws a fresh batch every round.
          self.assertNotEqual(subsets['a', 0], subsets['a', 1])
          self.assertNotEqual(subsets['b', 0], subsets['b', 1])
        else:
          # Zhao et al. hand each client its portion of G once.
          self.assertEqual(subsets['a', 0], subsets['a', 1])
          self.assertEqual(subsets['b', 0], subsets['b', 1])

  def test_subsets_are_the_clients_draws(self):
    subsets, _ = self._subsets('example_transfer')
    for round_num in (0, 1):
      self.assertEqual(subsets['a', round_num],
                       _drawn(_CLIENT_A, 3, round_num, 3, _NUM_CENTRAL))
      self.assertEqual(subsets['b', round_num],
                       _drawn(_CLIENT_B, 3, round_num, 3, _NUM_CENTRAL))
    subsets, _ = self._subsets('shared_data')
    g = example_transfer.shared_set_indices(_NUM_CENTRAL, 6, seed=3)
    for name, labels in (('a', _CLIENT_A), ('b', _CLIENT_B)):
      portion = frozenset(
          g[sorted(_drawn(labels, 3, 7, 3, 6, redraw=False))].tolist())
      self.assertEqual(subsets[name, 0], portion)

  def test_subsets_are_seeded(self):
    for algorithm in ('example_transfer', 'shared_data'):
      with self.subTest(algorithm):
        first, _ = self._subsets(algorithm, seed=3)
        # A second process built with the same seed draws the same.
        again, _ = _run_subsets(algorithm, seed=3)
        other, _ = self._subsets(algorithm, seed=11)
        self.assertEqual(first, again)
        self.assertNotEqual(first, other)

  def test_resume_reproduces_round_one(self):
    for algorithm in ('example_transfer', 'shared_data'):
      with self.subTest(algorithm):
        subsets, state_1 = self._subsets(algorithm)
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        manager = tff.program.FileProgramStateManager(root)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.run_until_complete(manager.save(state_1, 1))
        # A new process, as after a restart, resumes from the saved state.
        resumed_process = _build(algorithm)
        loaded, version = loop.run_until_complete(
            manager.load_latest(resumed_process.initialize()))
        self.assertEqual(version, 1)
        for name, labels in (('a', _CLIENT_A), ('b', _CLIENT_B)):
          resumed, _ = _trained_on(resumed_process, loaded, [labels])
          self.assertEqual(resumed, subsets[name, 1])

  def test_each_client_downloads_the_model_and_only_its_examples(self):
    for algorithm in ('example_transfer', 'shared_data'):
      with self.subTest(algorithm):
        cost = communication.per_client_communication(_build(algorithm))
        row_bytes = (_NUM_CENTRAL + 1) * 4  # x and y float32 of one example.
        self.assertCountEqual(cost.down, [
            ('federated_broadcast', row_bytes),  # w and b.
            ('federated_broadcast', 4),  # The round number.
            ('federated_select', 3 * row_bytes),  # Its 3 examples.
        ])


class TransferSelectTest(absltest.TestCase):
  """The pure-TF fingerprint and draws."""

  def test_fingerprint_is_of_the_examples_not_their_batching(self):
    x, y = tu.client_arrays(sizes=(5,))[0]
    fingerprint = transfer_select.data_fingerprint
    base = int(fingerprint(tu.to_datasets([(x, y)], 2)[0]))
    rebatched = int(fingerprint(tu.to_datasets([(x, y)], 3)[0]))
    reordered = int(fingerprint(tu.to_datasets([(x[::-1], y[::-1])], 2)[0]))
    changed = y.copy()
    changed[0] += 1.0
    other = int(fingerprint(tu.to_datasets([(x, changed)], 2)[0]))
    self.assertEqual(base, rebatched)
    self.assertEqual(base, reordered)
    self.assertNotEqual(base, other)
    self.assertEqual(
        int(fingerprint(tu.to_datasets([(x[:0], y[:0])], 2)[0])), 0)

  def test_hashes_of_the_examples_give_their_fingerprint_and_draw(self):
    # A simulation that hashes each example once gives a client's
    # fingerprint, and so its draw, without a pass over its dataset.
    x, y = tu.client_arrays(sizes=(7,))[0]
    dataset = tu.to_datasets([(x, y)], 3)[0]
    hashes = transfer_select.example_hashes((x, y))
    self.assertEqual(hashes.shape.as_list(), [7])
    fingerprint = transfer_select.fingerprint_of_hashes(
        tf.gather(hashes, [6, 2, 0, 1, 5, 3, 4]))
    self.assertEqual(int(fingerprint),
                     int(transfer_select.data_fingerprint(dataset)))
    # One example fewer is another fingerprint.
    self.assertNotEqual(
        int(transfer_select.fingerprint_of_hashes(hashes[1:])),
        int(fingerprint))
    args = dict(seed=3, num_keys=4, num_examples=30, redraw_each_round=True)
    for round_num in (0, 2):
      want = transfer_select.draw(dataset, tf.constant(round_num), **args)
      got = transfer_select.draw_from_fingerprint(
          fingerprint, tf.constant(round_num), **args)
      self.assertEqual(got.keys.numpy().tolist(), want.keys.numpy().tolist())
      self.assertEqual(int(got.shuffle_seed), int(want.shuffle_seed))

  def test_store_hashes_give_the_fingerprint_of_rows(self):
    # Rows more than one chunk apart of the store's single pass, repeated.
    x = np.random.default_rng(2).normal(size=(1100, 3)).astype(np.float32)
    y = np.arange(1100, dtype=np.float32).reshape(-1, 1)
    directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
    store = example_store.write_example_store(
        os.path.join(directory, 'store'), [(x, y)])
    hashes = store_hashes.StoreHashes(store)
    rows = np.array([1099, 3, 600, 3, 0])
    want = transfer_select.data_fingerprint(
        tf.data.Dataset.from_tensor_slices((x[rows], y[rows])).batch(2))
    self.assertEqual(int(hashes.fingerprint(tf.constant(rows))), int(want))
    self.assertLen(hashes.array(), 1100)
    self.assertNotEqual(int(hashes.fingerprint(tf.constant(rows[1:]))),
                        int(want))

  def test_keys_are_distinct_in_range_and_seeded(self):
    keys = transfer_select.transfer_keys(tf.constant(123, tf.int64), 3,
                                         tf.constant(0), 5, 20)
    self.assertEqual(keys.shape.as_list(), [5])
    values = keys.numpy()
    self.assertLen(set(values.tolist()), 5)
    self.assertTrue(np.all((values >= 0) & (values < 20)))

    def draw(fingerprint=123, seed=3, round_num=0):
      return transfer_select.transfer_keys(
          tf.constant(fingerprint, tf.int64), seed, tf.constant(round_num),
          5, 20).numpy().tolist()

    self.assertEqual(draw(), values.tolist())
    self.assertNotEqual(draw(fingerprint=124), draw())
    self.assertNotEqual(draw(seed=4), draw())
    self.assertNotEqual(draw(round_num=1), draw())
    # All of a set of 5 is every index.
    all_keys = transfer_select.transfer_keys(
        tf.constant(1, tf.int64), 0, tf.constant(0), 5, 5)
    self.assertEqual(sorted(all_keys.numpy().tolist()), list(range(5)))

  def test_keys_are_floyds_sample_of_philox_numbers(self):
    # An independent oracle: TF's own Philox op for the numbers, Floyd's
    # sample and the sort by the order numbers in numpy.
    n, k = 20, 4
    for fingerprint, seed, round_num in ((123, 3, 0), (7, 0, 5), (2**40, 9, 1)):
      client_seed = transfer_select._client_seed(
          tf.constant(fingerprint, tf.int64), seed, tf.constant(round_num),
          'examples').numpy()
      words = tf.raw_ops.StatelessRandomUniformFullIntV2(
          shape=[4 * k], key=tf.constant([client_seed[0]], tf.uint64),
          counter=tf.constant([0, client_seed[1]], tf.uint64), alg=1,
          dtype=tf.uint32).numpy().astype(np.int64)
      numbers = ((words[1::2] & ((1 << 30) - 1)) << 32) | words[0::2]
      taken = []
      for s, j in enumerate(range(n - k, n)):
        t = int(numbers[s] % (j + 1))
        taken.append(j if t in taken else t)
      expected = [taken[i] for i in np.argsort(numbers[k:], kind='stable')]
      keys = transfer_select.transfer_keys(
          tf.constant(fingerprint, tf.int64), seed, tf.constant(round_num),
          k, n)
      self.assertEqual(keys.numpy().tolist(), expected)

  def test_draws_are_uniform_ordered_samples(self):
    # Every ordered 3 of 6 (120 outcomes) over 24,000 seeds: chi^2 / dof
    # is about 1 (sd 0.13) for a uniform draw; a draw that favours some
    # subsets or orders by a few percent lands far above 1.5.
    n, k, draws = 6, 3, 24_000
    seeds = np.random.RandomState(1).randint(0, 2**52, size=(draws, 2))
    keys = transfer_select._seeded_keys(tf.constant(seeds, tf.int64), k,
                                        n).numpy()
    self.assertTrue(all(len(set(row)) == k for row in keys))
    codes = (keys * n ** np.arange(k)).sum(axis=1)
    counts = np.bincount(codes, minlength=n ** k)
    outcomes = counts[counts > 0]
    self.assertLen(outcomes, 120)
    expected = draws / 120
    chi2 = ((outcomes - expected) ** 2 / expected).sum() / 119
    self.assertLess(chi2, 1.5)
    self.assertGreater(chi2, 0.5)

  def test_group_keys_of_any_member_count(self):
    seeds = tf.constant([[1, 2], [3, 4], [1, 2]], tf.int64)
    keys = transfer_select._seeded_keys(seeds, 3, 10).numpy()
    self.assertEqual(keys[0].tolist(), keys[2].tolist())
    self.assertEqual(
        keys[1].tolist(),
        transfer_select._seeded_keys(seeds[1], 3, 10).numpy().tolist())
    unknown = tf.function(
        lambda s: transfer_select._seeded_keys(s, 3, 10),
        input_signature=[tf.TensorSpec([None, 2], tf.int64)])
    self.assertEqual(unknown(seeds).numpy().tolist(), keys.tolist())
    self.assertEqual(
        transfer_select._seeded_keys(seeds[:0], 3, 10).shape.as_list(),
        [0, 3])
    self.assertEqual(
        transfer_select._seeded_keys(seeds, 0, 10).shape.as_list(), [3, 0])

  def test_fixed_portion_keeps_keys_but_reshuffles(self):
    def draw(round_num):
      return transfer_select.draw(
          _zero_input_client(_CLIENT_A), tf.constant(round_num), seed=3,
          num_keys=3, num_examples=8, redraw_each_round=False)

    first, later = draw(0), draw(4)
    self.assertEqual(first.keys.numpy().tolist(), later.keys.numpy().tolist())
    self.assertNotEqual(int(first.shuffle_seed), int(later.shuffle_seed))


def _shuffled_order(size, seed):
  """The order `client_update` visits `size` merged examples in."""
  order = tf.data.Dataset.range(size).shuffle(
      transfer_select.SHUFFLE_BUFFER_SIZE, seed=seed,
      reshuffle_each_iteration=False)
  return np.array(list(order.as_numpy_iterator()))


class HandComputedTransferTest(absltest.TestCase):
  """Rounds replayed in numpy: own examples per client, batches, shuffle."""

  def setUp(self):
    super().setUp()
    # Clients of 4, 6 and 2 examples with 3 central examples each: 7, 9 and
    # 5 merged examples in batches of 2, so every last batch is partial.
    self.clients = tu.client_arrays()
    self.datasets = tu.to_datasets(self.clients, batch_size=2)
    self.central = tu.central_arrays()
    self.lr, self.lr_s, self.seed = 0.1, 0.9, 5

  def _round(self, x, central, round_num, num_keys, redraw, steps):
    """One round in numpy; only keys and shuffle order come from the code."""
    updates, weights = [], []
    for (cx, cy), dataset in zip(self.clients, self.datasets):
      drawn = transfer_select.draw(
          dataset, tf.constant(round_num), seed=self.seed, num_keys=num_keys,
          num_examples=central[0].shape[0], redraw_each_round=redraw)
      keys = drawn.keys.numpy()
      mx = np.concatenate([cx, central[0][keys]])
      my = np.concatenate([cy, central[1][keys]])
      order = _shuffled_order(mx.shape[0], drawn.shuffle_seed)
      u, n, _ = tu.client_update(
          x, tu.batches(mx[order], my[order], 2, steps), self.lr)
      updates.append(u)
      weights.append(n)
    mean_update = tu.weighted_mean(updates, weights)
    return [xi - self.lr_s * u for xi, u in zip(x, mean_update)]

  def test_example_transfer_two_rounds(self):
    process = tff_mixed.build_example_transfer(
        tu.linear_model(), tff_mixed.central_data_objective(self.central),
        tu.sgd(self.lr), tu.sgd(self.lr_s), examples_per_client=3,
        client_batch_size=2, seed=self.seed)
    state = process.initialize()
    x = [w.copy() for w in tu.initial_weights()]
    for round_num in range(2):
      state = process.next(state, self.datasets).state
      x = self._round(x, self.central, round_num, num_keys=3, redraw=True,
                      steps=None)
      for got, want in zip(tu.trainable(process, state), x):
        np.testing.assert_allclose(got, want, atol=1e-5)

  def test_fedavg_with_shared_data_two_rounds(self):
    # |G| = 0.5 * 12 = 6 of 8 central examples, alpha * |G| = 3 per client,
    # K = 5 steps cycling through 3 to 5 shuffled batches.
    process = tff_mixed.build_fedavg_with_shared_data(
        tu.linear_model(), tff_mixed.central_data_objective(self.central),
        tu.sgd(self.lr), tu.sgd(self.lr_s), beta=0.5, alpha=0.5,
        num_client_examples=12, client_batch_size=2, warmup_steps=1,
        warmup_learning_rate=0.2, warmup_batch_size=100, client_steps=5,
        seed=self.seed)
    g = example_transfer.shared_set_indices(8, 6, self.seed)
    shared = (self.central[0][g], self.central[1][g])
    x = [w.copy() for w in tu.initial_weights()]
    x = [xi - 0.2 * gi for xi, gi in zip(x, tu.mse_gradient(x, *shared))]
    state = process.initialize()
    for got, want in zip(tu.trainable(process, state), x):
      np.testing.assert_allclose(got, want, atol=1e-6)
    for round_num in range(2):
      state = process.next(state, self.datasets).state
      x = self._round(x, shared, round_num, num_keys=3, redraw=False,
                      steps=5)
      for got, want in zip(tu.trainable(process, state), x):
        np.testing.assert_allclose(got, want, atol=1e-5)


if __name__ == '__main__':
  absltest.main()
