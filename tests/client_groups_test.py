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
"""Groups of clients (the fast simulation mode) equal the per-client process.

For every algorithm, the same process is built twice, per client and with
`client_groups`, and run for three rounds on clients of different sizes
split into uneven groups; the model, the training metrics and the central
metrics must agree to float32 rounding after every round. FedAvg's composed
builder is also checked against TFF's `build_weighted_fed_avg`. Aggregation
a group cannot reproduce (noise or secure sums on each client) must be
refused; adaptive clipping and zeroing (`tff.learning.robust_aggregator`)
and DP run in groups.
"""

import collections
import shutil
import tempfile
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
import tensorflow_privacy as tfp

import tff_mixed
from tff_mixed.algorithms import fedavg
from tff_mixed.algorithms import registry
from tff_mixed.core import example_store
from tff_mixed.core import model_types
from tff_mixed.core import transfer_select
from tff_mixed.models import char_lm
from tff_mixed.models import dual_encoder
from tff_mixed.simulation import client_groups
from tff_mixed.simulation import lockstep
from tff_mixed.training import round_loop
from tff_mixed.training import runner

from tests import testing_utils as tu

_SIZES = (4, 6, 1, 7, 3)
# Uneven groups, one of them a single client.
_GROUPS = ((0, 1, 2), (3,), (4,))
_ROWS, _DIM, _CONTEXT, _KEYS = 30, 4, 3, 8


def _linear_clients():
  fn = client_groups.array_dataset_fn(tu.client_arrays(sizes=_SIZES),
                                      lambda d: d.batch(2))
  return client_groups.ClientGroups(fn, np.int32)


def _movie_clients(reshuffle=False, sizes=_SIZES):
  rng = np.random.default_rng(4)
  arrays = []
  for n in sizes:
    movies = rng.choice(np.arange(1, _ROWS), 5, replace=False)
    context = rng.choice(movies, (n, _CONTEXT)).astype(np.int32)
    context[rng.random((n, _CONTEXT)) < 0.3] = 0
    arrays.append(collections.OrderedDict(
        context=context, label=rng.choice(movies, n).astype(np.int32)))

  def to_batches(d):
    if reshuffle:
      # A new order on every pass: keys and training must still see the
      # same first pass, as in the per-client process.
      d = d.shuffle(8, seed=5, reshuffle_each_iteration=True)
    return d.map(dual_encoder.model_batch).batch(2)

  fn = client_groups.array_dataset_fn(arrays, to_batches)
  return client_groups.ClientGroups(fn, np.int32)


def _dp_fixed(noise_multiplier=0.0):
  # Noise 0 makes the runs comparable; the clip is below the updates' norms.
  return tff.aggregators.DifferentiallyPrivateFactory.gaussian_fixed(
      noise_multiplier=noise_multiplier, clients_per_round=len(_SIZES),
      clip=0.3)


def _dp_adaptive():
  return tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
      noise_multiplier=0.0, clients_per_round=len(_SIZES),
      initial_l2_norm_clip=0.3, target_unclipped_quantile=0.5,
      learning_rate=0.2)


def _adaptive_clipping(initial=0.05):
  # TFF's no-noise adaptive clipping (as in `tff.learning.robust_aggregator`)
  # from a norm below the updates', so that clipping binds and the norm moves.
  return tff.aggregators.clipping_factory(
      tff.aggregators.PrivateQuantileEstimationProcess.no_noise(
          initial_estimate=initial, target_quantile=0.5, learning_rate=0.5),
      tff.aggregators.MeanFactory())


def _adaptive_zeroing(inner):
  # TFF's default zeroing (an affine map of the quantile estimate, the
  # infinity norm) with an estimate that zeroes some updates.
  return tff.aggregators.zeroing_factory(
      tff.aggregators.PrivateQuantileEstimationProcess.no_noise(
          initial_estimate=0.3, target_quantile=0.5, learning_rate=0.5,
          multiplier=2.0, increment=0.01), inner)


def _linear_process(name, groups, **kwargs):
  model = tu.linear_model()
  central = tff_mixed.central_data_objective(tu.central_arrays())
  sgd = tu.sgd(0.1)
  common = dict(client_steps=3, client_groups=groups)
  if name == 'fedavg':
    return fedavg.build_fedavg(model, sgd, **common, **kwargs)
  if name == 'uniform_weighting':
    return tff_mixed.build_one_way_gradient_transfer(
        model, central, sgd, central_batch_size=3,
        client_weighting=tff.learning.ClientWeighting.UNIFORM, **common)
  if name == 'example_transfer':
    return tff_mixed.build_example_transfer(
        model, central, sgd, examples_per_client=3, client_batch_size=2,
        **common, **kwargs)
  if name == 'fedavg_shared_data':
    return tff_mixed.build_fedavg_with_shared_data(
        model, central, sgd, beta=0.3, alpha=0.5, num_client_examples=21,
        client_batch_size=2, warmup_steps=2, warmup_learning_rate=0.1,
        warmup_batch_size=2, **common, **kwargs)
  return registry.build(name, model, central, client_lr=0.1,
                        central_batch_size=3, **common, **kwargs)


def _movie_process(name, groups, **kwargs):
  model = dual_encoder.build_dual_encoder(_ROWS, _DIM, _CONTEXT, seed=1)
  selection = dual_encoder.build_embedding_selection(_ROWS, _KEYS, _DIM,
                                                     _CONTEXT)
  spreadout = tff_mixed.central_regularizer(dual_encoder.spreadout_loss_fn,
                                            name='spreadout')
  return registry.build(name, model, spreadout, client_lr=0.3,
                        central_batch_size=1, client_steps=2,
                        embedding_selection=selection, client_groups=groups,
                        **kwargs)


def _run_both(build, groups, rounds=3):
  """Per round: (per-client weights, grouped weights, both metrics)."""
  per_client, grouped = build(None), build(groups)
  s1, s2 = per_client.initialize(), grouped.initialize()
  ids = [np.asarray(g, np.int32) for g in _GROUPS]
  datasets = [groups.dataset_fn(i) for g in _GROUPS for i in g]
  history = []
  for _ in range(rounds):
    o1, o2 = per_client.next(s1, datasets), grouped.next(s2, ids)
    s1, s2 = o1.state, o2.state
    history.append((tu.trainable(per_client, s1),
                    tu.trainable(grouped, s2), o1.metrics, o2.metrics))
  return history


def _flat(metrics):
  return round_loop.flatten_metrics(metrics)


def _counts(metrics):
  """The round's client counts: [count, non_finite, without_data]."""
  flat = _flat(metrics)
  return [flat[f'client_work/clients/{name}']
          for name in ('count', 'non_finite', 'without_data')]


class _SameRuns(parameterized.TestCase):
  """`_assert_same`: two runs' models and metrics agree, and they trained."""

  def _assert_same(self, history):
    initial = history[0][0]
    for round_num, (a, b, m1, m2) in enumerate(history, start=1):
      for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6,
                                   err_msg=f'round {round_num}')
      f1, f2 = _flat(m1), _flat(m2)
      self.assertEqual(sorted(f1), sorted(f2))
      self.assertIn('client_work/train/loss', f1)
      for key in f1:
        np.testing.assert_allclose(f1[key], f2[key], rtol=1e-5, atol=1e-6,
                                   err_msg=f'{key}, round {round_num}')
    # The runs train: the comparison is not between two frozen models.
    self.assertFalse(all(np.allclose(x, y) for x, y in zip(
        initial, history[-1][0])))


class GroupedEqualsPerClientTest(_SameRuns):

  @parameterized.named_parameters(
      ('fedavg', 'fedavg', {}),
      ('parallel_training', registry.PARALLEL_TRAINING, {}),
      ('parallel_training_diagnostics', registry.PARALLEL_TRAINING,
       dict(with_diagnostics=True)),
      ('one_way_gt', registry.ONE_WAY_GT, {}),
      ('one_way_gt_diagnostics', registry.ONE_WAY_GT,
       dict(with_diagnostics=True)),
      ('two_way_gt', registry.TWO_WAY_GT, {}),
      ('two_way_gt_fresh', registry.TWO_WAY_GT,
       dict(augmenting_central_gradient='fresh')),
      ('example_transfer', 'example_transfer', {}),
      ('fedavg_shared_data', 'fedavg_shared_data', {}),
      ('uniform_weighting', 'uniform_weighting', {}),
      ('dp_fixed_clipping', registry.PARALLEL_TRAINING,
       dict(model_aggregator=_dp_fixed())),
      ('dp_adaptive_clipping', registry.ONE_WAY_GT,
       dict(model_aggregator=_dp_adaptive())),
      ('dp_fixed_clipping_fedavg', 'fedavg',
       dict(model_aggregator=_dp_fixed())),
      ('robust_clipping_fedavg', 'fedavg', dict(
          model_aggregator=tff.learning.robust_aggregator(zeroing=False))),
      ('robust_zeroing_clipping_fedavg', 'fedavg',
       dict(model_aggregator=tff.learning.robust_aggregator())),
      ('adaptive_clipping_two_way_gt', registry.TWO_WAY_GT,
       dict(model_aggregator=_adaptive_clipping())),
      ('adaptive_clipping_example_transfer', 'example_transfer',
       dict(model_aggregator=_adaptive_clipping())),
      ('adaptive_zeroing_clipping_parallel_training',
       registry.PARALLEL_TRAINING,
       dict(model_aggregator=_adaptive_zeroing(_adaptive_clipping()))),
      ('dp_aggregator_no_noise', registry.ONE_WAY_GT,
       dict(model_aggregator=tff.learning.dp_aggregator(0.0, len(_SIZES)))),
  )
  def test_dense_algorithms(self, name, kwargs):
    self._assert_same(self._dense_history(self._testMethodName, name,
                                          kwargs))

  # Runs shared by the tests of this class (one pytest-xdist worker runs a
  # class): `test_dp_clipping_is_active` reads two of the runs above.
  _histories = {}

  def _dense_history(self, key, name, kwargs):
    if key not in self._histories:
      groups = _linear_clients()
      self._histories[key] = _run_both(
          lambda g: _linear_process(name, g, **kwargs), groups)
    return self._histories[key]

  @parameterized.named_parameters(
      ('fedavg', 'fedavg', {}, 1),
      ('two_way_gt', registry.TWO_WAY_GT, {}, 1),
      # The client without data of its own trains on its central examples.
      ('example_transfer', 'example_transfer', {}, 0),
      ('dp_fixed_clipping', registry.PARALLEL_TRAINING,
       dict(model_aggregator=_dp_fixed()), 1),
  )
  def test_drop_counts_as_per_client(self, name, kwargs, without_data):
    # In the first group, a member with NaN features (its update dropped)
    # and one without examples: the group sums its members' counts, and
    # the cohort's are the per-client process's.
    arrays = tu.client_arrays(sizes=(4, 6, 0, 7, 3))
    x, y = arrays[1]
    arrays[1] = (np.full_like(x, np.nan), y)
    groups = client_groups.ClientGroups(
        client_groups.array_dataset_fn(arrays, lambda d: d.batch(2)),
        np.int32)
    history = _run_both(lambda g: _linear_process(name, g, **kwargs), groups,
                        rounds=2)
    self._assert_same(history)
    for _, _, per_client, grouped in history:
      self.assertEqual(_counts(per_client), [5, 1, without_data])
      self.assertEqual(_counts(grouped), [5, 1, without_data])

  def test_dp_clipping_is_active_and_state_types_match(self):
    clipped = self._dense_history(
        'test_dense_algorithms_dp_adaptive_clipping', registry.ONE_WAY_GT,
        dict(model_aggregator=_dp_adaptive()))
    plain = self._dense_history('test_dense_algorithms_one_way_gt',
                                registry.ONE_WAY_GT, {})
    # The clip (0.3 at first) binds: clipped and plain models differ.
    self.assertFalse(all(np.allclose(a, b, atol=1e-4) for a, b in zip(
        clipped[0][0], plain[0][0])))
    clip = [float(m['aggregator']['dp_query_metrics']['clip'])
            for _, _, m, _ in clipped]
    self.assertNotEqual(clip[0], clip[-1])  # Adaptive: the clip moves.
    groups = _linear_clients()
    per_client = _linear_process(registry.ONE_WAY_GT, None,
                                 model_aggregator=_dp_fixed())
    grouped = _linear_process(registry.ONE_WAY_GT, groups,
                              model_aggregator=_dp_fixed())
    self.assertTrue(per_client.initialize.type_signature.result.is_equivalent_to(
        grouped.initialize.type_signature.result))

  @parameterized.named_parameters(
      ('parallel_training', registry.PARALLEL_TRAINING, False),
      ('one_way_gt', registry.ONE_WAY_GT, False),
      ('two_way_gt', registry.TWO_WAY_GT, False),
      ('one_way_gt_reshuffling_data', registry.ONE_WAY_GT, True),
  )
  def test_federated_select(self, name, reshuffle):
    groups = _movie_clients(reshuffle)
    self._assert_same(_run_both(lambda g: _movie_process(name, g), groups))

  def test_federated_select_counts_a_client_without_data(self):
    groups = _movie_clients(sizes=(4, 6, 0, 7, 3))
    history = _run_both(lambda g: _movie_process(registry.TWO_WAY_GT, g),
                        groups, rounds=2)
    self._assert_same(history)
    for _, _, per_client, grouped in history:
      self.assertEqual(_counts(per_client), [5, 0, 1])
      self.assertEqual(_counts(grouped), [5, 0, 1])


# Equal clients for the tensor path: 4 examples in 2 batches each, so the
# 3 local steps cycle back to a client's first batch.
_EQUAL_SIZES = (4,) * len(_SIZES)


def _equal_clients(members_at_once=0, non_finite_client=None):
  arrays = tu.client_arrays(sizes=_EQUAL_SIZES)
  if non_finite_client is not None:
    x, y = arrays[non_finite_client]
    arrays[non_finite_client] = (np.full_like(x, np.inf), y)
  return client_groups.ClientGroups(
      client_groups.array_dataset_fn(arrays, lambda d: d.batch(2)), np.int32,
      batches_fn=lockstep.array_batches_fn(arrays, 2),
      members_at_once=members_at_once)


class KnownFingerprintsTest(_SameRuns):

  def test_example_transfer_members_draw_from_their_fingerprints(self):
    # Members whose fingerprints the simulation gives (`fingerprint_fn`)
    # draw what a pass over their data draws: the per-client numbers. A
    # wrong fingerprint draws other examples: the given ones are used.
    groups = _linear_clients()
    table = np.array([
        int(transfer_select.data_fingerprint(groups.dataset_fn(i)))
        for i in range(len(_SIZES))], np.int64)

    def build(fingerprint_fn):
      known = groups._replace(fingerprint_fn=fingerprint_fn)
      return _run_both(
          lambda g: _linear_process(
              'example_transfer', None if g is None else known), known)

    self._assert_same(build(lambda i: tf.gather(tf.constant(table), i)))
    wrong = build(
        lambda i: tf.gather(tf.constant(table), (i + 1) % len(_SIZES)))
    per_client, grouped = wrong[-1][:2]
    self.assertFalse(all(np.allclose(x, y)
                         for x, y in zip(per_client, grouped)))


class BatchesEqualPerClientTest(_SameRuns):
  """Members trained from `batches_fn` tensors, in lockstep, as per client."""

  # Members 0 (the whole group), 1 or 2 at once: groups of 3, 1 and 1
  # clients make chunks of every size, a remainder among them.
  @parameterized.named_parameters(
      ('fedavg', 'fedavg', 0, {}),
      ('one_way_gt_diagnostics_one_at_once', registry.ONE_WAY_GT, 1,
       dict(with_diagnostics=True)),
      ('two_way_gt', registry.TWO_WAY_GT, 2, {}),
      ('uniform_weighting', 'uniform_weighting', 0, {}),
      ('adaptive_zeroing_clipping_parallel_training',
       registry.PARALLEL_TRAINING, 2,
       dict(model_aggregator=_adaptive_zeroing(_adaptive_clipping()))),
      # Merged with central examples as tensors (`merged_batches.py`): 4
      # local and 3 transferred examples make 3 full batches of 2 and a
      # partial one, which the 3 steps do not reach.
      ('example_transfer', 'example_transfer', 2, {}),
      ('fedavg_shared_data', 'fedavg_shared_data', 0, {}),
  )
  def test_batches(self, name, members_at_once, kwargs):
    groups = _equal_clients(members_at_once)
    self._assert_same(_run_both(
        lambda g: _linear_process(name, g, **kwargs), groups))

  @parameterized.named_parameters(
      # One member at a time trains without `tf.vectorized_map`.
      ('fedavg', 'fedavg', False),
      ('example_transfer', 'example_transfer', False),
      # Every client's rows in one file (round_time's small model).
      ('example_transfer_packed', 'example_transfer', True),
  )
  def test_store_batches_one_member_at_once(self, name, packed):
    arrays = tu.client_arrays(sizes=_EQUAL_SIZES)
    directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
    store = example_store.write_example_store(
        directory + '/store',
        [tuple(np.concatenate(leaf) for leaf in zip(*arrays))], packed=packed)
    self.assertEqual(store.packed, packed)
    size = _EQUAL_SIZES[0]
    rows = np.arange(len(arrays) * size).reshape(len(arrays), size)
    batches_fn = lockstep.store_batches_fn(store, rows, 2)
    ids = tf.constant([2, 0], tf.int32)
    for got, want in zip(batches_fn(ids),
                         lockstep.array_batches_fn(arrays, 2)(ids)):
      np.testing.assert_array_equal(got, want)
    groups = client_groups.ClientGroups(
        client_groups.array_dataset_fn(arrays, lambda d: d.batch(2)),
        np.int32, batches_fn=batches_fn, members_at_once=1)
    self._assert_same(_run_both(lambda g: _linear_process(name, g), groups))

  def test_store_batches_refuse_unequal_rows(self):
    with self.assertRaisesRegex(ValueError, 'multiple of the batch size'):
      lockstep.store_batches_fn(None, np.zeros((3, 5), np.int64), 2)

  @parameterized.named_parameters(
      ('from_batches', True, 'fedavg'),
      # The member loop over datasets adds its members unchecked first and
      # retrains them checking each when their sum is not finite.
      ('from_datasets', False, 'fedavg'),
      ('from_datasets_two_way_gt', False, registry.TWO_WAY_GT),
  )
  def test_non_finite_member_is_left_out_as_per_client(self, from_batches,
                                                       name):
    groups = _equal_clients(non_finite_client=1)
    if not from_batches:
      groups = groups._replace(batches_fn=None)
    history = _run_both(lambda g: _linear_process(name, g), groups)
    self._assert_same(history)
    # The infinite client reports no examples: 4 clients' 8 examples x 3
    # steps' batches of 2 (one pass and a step) = 24 per round.
    examples = _flat(history[0][3])['client_work/train/num_examples']
    self.assertEqual(examples, 24)
    # And is counted as dropped, in its group as per client.
    self.assertEqual(_counts(history[0][3]), [5, 1, 0])

  def test_padded_members_of_unequal_size_as_per_client(self):
    # Character-LM clients of 4, 3, 0, 5 and 1 sequences, in batches of 2
    # reshuffled on every pass, 3 local steps: partial batches, a client
    # that repeats its data, one without data; `padded_batches_fn` pads
    # them with rows of padding targets, which carry no loss. 2-way GT (its
    # augmenting gradients), one member at a time: `tf.vectorized_map` of
    # the GRU took 30-40 s to trace here. The LM binary's test
    # (stackoverflow_wikipedia_experiment_test) runs whole groups of FedAvg
    # and 2-way GT in lockstep from `padded_batches_fn`; `test_batches` runs
    # chunks of 2 and 1 with the linear model.
    rng = np.random.default_rng(7)
    arrays = []
    for n in (4, 3, 0, 5, 1):
      inputs = rng.integers(1, 6, (n, 4)).astype(np.int32)
      targets = rng.integers(1, 6, (n, 4)).astype(np.int32)
      targets[:, 3] = 0  # Padding targets inside real rows too.
      arrays.append((inputs, targets))
    dataset_fn = client_groups.array_dataset_fn(
        arrays, lambda d: d.shuffle(8, seed=5).batch(2))
    groups = client_groups.ClientGroups(
        dataset_fn, np.int32,
        batches_fn=lockstep.padded_batches_fn(dataset_fn, 3, 2),
        members_at_once=1)
    model = char_lm.build_char_lm(vocab_size=6, embedding_dim=3, gru_units=4,
                                  sequence_length=4, seed=0)
    central = tff_mixed.central_data_objective(
        (rng.integers(1, 6, (6, 4)).astype(np.int32),
         rng.integers(0, 6, (6, 4)).astype(np.int32)))

    history = _run_both(
        lambda g: registry.build(registry.TWO_WAY_GT, model, central,
                                 client_lr=0.5, central_batch_size=3,
                                 client_steps=3, client_groups=g), groups)
    self._assert_same(history)
    # Each client's 3 steps of up to 2 sequences, cycling: 2+2+2, 2+1+2, 0,
    # 2+2+1 and 1+1+1 rows (padding rows not counted).
    examples = _flat(history[0][3])['client_work/train/num_examples']
    self.assertEqual(examples, 19)
    # The padded member without a real row counts as without data.
    self.assertEqual(_counts(history[0][3]), [5, 0, 1])
    batches = lockstep.padded_batches_fn(dataset_fn, 3, 2)(
        tf.constant([2, 4], tf.int32))
    np.testing.assert_array_equal(batches.num_rows, [[0, 0, 0], [1, 1, 1]])

  def test_members_are_not_read_through_datasets(self):
    groups = _equal_clients()

    def no_dataset(client_id):
      raise AssertionError(f'dataset_fn called for {client_id}')

    # Traced without a call of dataset_fn: the batches path is taken.
    process = _linear_process(registry.ONE_WAY_GT,
                              groups._replace(dataset_fn=no_dataset))
    state = process.next(process.initialize(),
                         [np.asarray(g, np.int32) for g in _GROUPS]).state
    self.assertTrue(np.all(np.isfinite(tu.trainable(process, state)[0])))
    # Example Transfer merges its examples into the tensors too...
    _linear_process('example_transfer', groups._replace(dataset_fn=no_dataset))
    # ...but not when its 3 steps would reach a partial batch (4 local and
    # 3 transferred examples in batches of 6): members then read datasets.
    with self.assertRaisesRegex(AssertionError, 'dataset_fn called'):
      tff_mixed.build_example_transfer(
          tu.linear_model(), tff_mixed.central_data_objective(
              tu.central_arrays()), tu.sgd(0.1), examples_per_client=3,
          client_batch_size=6, client_steps=3,
          client_groups=groups._replace(dataset_fn=no_dataset))

  def test_batches_fn_of_unequal_clients_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'same number of examples'):
      lockstep.array_batches_fn(tu.client_arrays(sizes=(4, 6)), 2)
    with self.assertRaisesRegex(ValueError, 'multiple of the batch size'):
      lockstep.array_batches_fn(tu.client_arrays(sizes=(3, 3)), 2)

  def test_bad_batches_settings_are_refused(self):
    arrays = tu.client_arrays(sizes=(4, 4))
    fn = client_groups.array_dataset_fn(arrays, lambda d: d.batch(2))
    with self.assertRaisesRegex(TypeError, 'batches_fn'):
      client_groups.check_client_groups(
          client_groups.ClientGroups(fn, np.int32, batches_fn=3))
    with self.assertRaisesRegex(ValueError, 'members_at_once'):
      client_groups.check_client_groups(
          client_groups.ClientGroups(fn, np.int32, members_at_once=-1))


class DifferentialPrivacyTest(absltest.TestCase):

  def test_noise_runs_in_groups(self):
    groups = _linear_clients()
    process = _linear_process(registry.ONE_WAY_GT, groups,
                              model_aggregator=_dp_fixed(1.0))
    state = process.initialize()
    ids = [np.asarray(g, np.int32) for g in _GROUPS]
    noised = [process.next(state, ids).state for _ in range(2)]
    # Fresh Gaussian noise each call: two runs from one state differ.
    self.assertFalse(np.allclose(tu.trainable(process, noised[0])[0],
                                 tu.trainable(process, noised[1])[0]))


class AdaptiveClippingTest(absltest.TestCase):

  def test_clipping_and_zeroing_bind_and_states_match(self):
    groups = _linear_clients()
    build = lambda g: _linear_process(
        registry.PARALLEL_TRAINING, g,
        model_aggregator=_adaptive_zeroing(_adaptive_clipping()))
    per_client, grouped = build(None), build(groups)
    self.assertEqual(per_client.initialize.type_signature,
                     grouped.initialize.type_signature)
    self.assertEqual(per_client.next.type_signature.result,
                     grouped.next.type_signature.result)
    s1, s2 = per_client.initialize(), grouped.initialize()
    ids = [np.asarray(g, np.int32) for g in _GROUPS]
    data = [groups.dataset_fn(i) for g in _GROUPS for i in g]
    norms = []
    for _ in range(3):
      o1, o2 = per_client.next(s1, data), grouped.next(s2, ids)
      s1, s2 = o1.state, o2.state
      m = _flat(o1.metrics['aggregator'])
      # Some updates zeroed, some clipped, some neither (5 clients).
      self.assertBetween(m['zeroed_count'], 1, 4)
      self.assertBetween(m['zeroing/clipped_count'], 1, 4)
      norms.append(m['zeroing/clipping_norm'])
    # The estimators' states (the norms' next estimates) agree, and moved.
    for x, y in zip(tf.nest.flatten(s1.aggregator),
                    tf.nest.flatten(s2.aggregator)):
      np.testing.assert_allclose(x, y, rtol=1e-6)
    self.assertNotAlmostEqual(norms[0], norms[-1])


class FedAvgTest(absltest.TestCase):

  def test_composed_fedavg_equals_tff_fedavg(self):
    groups = _linear_clients()
    model = tu.linear_model()
    ours = fedavg.build_fedavg(model, tu.sgd(0.1), tu.sgd(0.7))
    theirs = tff.learning.algorithms.build_weighted_fed_avg(
        model, client_optimizer_fn=tu.sgd(0.1),
        server_optimizer_fn=tu.sgd(0.7))
    data = [groups.dataset_fn(i) for i in range(len(_SIZES))]
    s1, s2 = ours.initialize(), theirs.initialize()
    for _ in range(3):
      o1, o2 = ours.next(s1, data), theirs.next(s2, data)
      s1, s2 = o1.state, o2.state
      for x, y in zip(tu.trainable(ours, s1), tu.trainable(theirs, s2)):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
      self.assertAlmostEqual(
          float(o1.metrics['client_work']['train']['loss']),
          float(o2.metrics['client_work']['train']['loss']), places=5)


  def test_grouped_registry_fedavg_equals_tff_fedavg_per_client(self):
    groups = _linear_clients()
    model = tu.linear_model()
    grouped = registry.build(registry.FEDAVG, model, client_lr=0.1,
                             client_groups=groups)
    theirs = registry.build(registry.FEDAVG, model, client_lr=0.1)
    # TFF's own FedAvg, against the composed one in groups.
    self.assertIsInstance(theirs.initialize(),
                          tff.learning.templates.LearningAlgorithmState)
    ids = [np.asarray(g, np.int32) for g in _GROUPS]
    data = [groups.dataset_fn(i) for g in _GROUPS for i in g]
    s1, s2 = grouped.initialize(), theirs.initialize()
    for _ in range(3):
      s1, s2 = grouped.next(s1, ids).state, theirs.next(s2, data).state
    for x, y in zip(tu.trainable(grouped, s1), tu.trainable(theirs, s2)):
      np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


class RefusedTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('noise_on_each_client', lambda: tff.learning.ddp_secure_aggregator(
          noise_multiplier=0.5, expected_clients_per_round=100,
          zeroing=False), 'noise added on each client'),
      ('secure_count', lambda: tff.learning.ddp_secure_aggregator(
          noise_multiplier=0.5, expected_clients_per_round=100),
       'other than a plain one'),
      ('secure', tff.learning.secure_aggregator, 'secure sum'),
      ('secure_mean', lambda: tff.aggregators.MeanFactory(
          tff.aggregators.SecureSumFactory(100.0)), 'secure sums'),
      ('arithmetic_estimator', lambda: tff.aggregators.clipping_factory(
          tff.aggregators.PrivateQuantileEstimationProcess(
              tfp.NoPrivacyQuantileEstimatorQuery(1.0, 0.5, 0.2, False)),
          tff.aggregators.MeanFactory()), 'no-noise quantile estimator'),
  )
  def test_per_client_aggregation_is_refused(self, factory, why):
    with self.assertRaisesRegex(ValueError,
                                f'cannot run in client groups.*{why}'):
      _linear_process(registry.ONE_WAY_GT, _linear_clients(),
                      model_aggregator=factory())

  def test_other_metrics_aggregator_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'sum_then_finalize'):
      fedavg.build_fedavg(
          tu.linear_model(), tu.sgd(0.1), client_groups=_linear_clients(),
          metrics_aggregator=tff.learning.metrics.secure_sum_then_finalize)

  def test_plain_mean_is_accepted(self):
    process = _linear_process(
        registry.ONE_WAY_GT, _linear_clients(),
        model_aggregator=tff.aggregators.MeanFactory())
    self.assertEqual(str(process.next.type_signature.parameter[1]),
                     '{int32[?]}@CLIENTS')

  def test_bad_groups_are_refused(self):
    with self.assertRaisesRegex(TypeError, 'fingerprint_fn'):
      fedavg.build_fedavg(
          tu.linear_model(), tu.sgd(0.1),
          client_groups=_linear_clients()._replace(fingerprint_fn=3))
    with self.assertRaisesRegex(TypeError, 'ClientGroups'):
      fedavg.build_fedavg(tu.linear_model(), tu.sgd(0.1),
                          client_groups=lambda i: i)
    with self.assertRaisesRegex(TypeError, 'id_dtype'):
      fedavg.build_fedavg(
          tu.linear_model(), tu.sgd(0.1),
          client_groups=client_groups.ClientGroups(lambda i: i, np.float32))


class RunnerTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)

  def test_runner_groups_a_flat_cohort_like_the_per_client_run(self):
    groups = _linear_clients()
    ids = list(range(len(_SIZES)))
    results = []
    for client_groups_arg, data_fn in (
        (None, lambda r: [groups.dataset_fn(i) for i in ids]),
        (groups, lambda r: ids)):
      process = _linear_process(registry.ONE_WAY_GT, client_groups_arg)
      result = runner.run_training(
          process, client_data_fn=data_fn, total_rounds=3,
          root_output_dir=tempfile.mkdtemp(dir=self.root),
          experiment_name='run', hparams={}, progress=False,
          clients_per_group=2)
      results.append(tu.trainable(process, result.state))
    for a, b in zip(*results):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with self.assertRaisesRegex(ValueError, '`clients_per_group`'):
      runner.run_training(
          process, client_data_fn=lambda r: ids, total_rounds=1,
          root_output_dir=tempfile.mkdtemp(dir=self.root),
          experiment_name='run', hparams={}, clients_per_group=-1)


_SMALL_CHUNK = 8


class ReduceDatasetTest(parameterized.TestCase):
  """`model_types.reduce_dataset` is `Dataset.reduce`, faster."""

  @parameterized.named_parameters(
      ('batches', lambda: tf.data.Dataset.range(11).batch(3)),
      ('empty', lambda: tf.data.Dataset.range(0).batch(3)),
      ('seeded_shuffle', lambda: tf.data.Dataset.range(20).shuffle(
          20, seed=3, reshuffle_each_iteration=False).batch(4)),
      ('repeat_take', lambda: tf.data.Dataset.range(5).batch(2).repeat()
       .take(7)),
      # More elements than one padded batch of the drawn-at-once path
      # (chunks of 8 here, `_SMALL_CHUNK`: three of them, the last partial).
      ('more_than_a_chunk', lambda: tf.data.Dataset.range(21).map(
          lambda x: x % 3)),
      # Dicts, strings and a partial last batch (padded, then cut again).
      ('dict_of_strings', lambda: tf.data.Dataset.from_tensor_slices(
          {'a': tf.range(7, dtype=tf.int64),
           's': tf.strings.as_string(tf.range(7) * 137)}).batch(3)),
      # Not dense tensors: drawn from an iterator.
      ('ragged', lambda: tf.data.Dataset.from_tensor_slices(
          tf.ragged.constant([[1, 2], [3], [4, 5, 6]], tf.int64)).batch(2)),
  )
  def test_same_result_as_dataset_reduce(self, make):
    def step(state, batch):
      # Order-sensitive: a weighted running sum and a step counter.
      total, count = state
      if isinstance(batch, dict):
        batch = tf.concat([batch['a'], tf.cast(
            tf.strings.length(batch['s']), tf.int64)], 0)
      if isinstance(batch, tf.RaggedTensor):
        batch = batch.flat_values
      return total % 1_000_003 * 2 + tf.reduce_sum(batch), count + 1

    def initial():
      return (tf.constant(0, tf.int64), tf.constant(0))

    expected = make().reduce(initial(), step)
    # Small chunks, so that a few elements span several (the real size,
    # 2**16, would take 70,000 elements and 20 s for the same paths).
    with mock.patch.object(model_types, '_CHUNK', _SMALL_CHUNK):
      got_eager = model_types.reduce_dataset(make(), initial(), step)

      @tff.tensorflow.computation
      def in_a_tff_graph():
        return model_types.reduce_dataset(make(), initial(), step)

      got_tff = in_a_tff_graph()
    for got in (got_eager, got_tff):
      self.assertEqual(int(got[0]), int(expected[0]))
      self.assertEqual(int(got[1]), int(expected[1]))


class CohortTest(absltest.TestCase):

  def test_split_cohort_keeps_every_client_once_in_order(self):
    groups = client_groups.split_cohort(list(range(10)), 4)
    self.assertEqual([len(g) for g in groups], [4, 3, 3])
    np.testing.assert_array_equal(np.concatenate(groups), np.arange(10))
    self.assertLen(client_groups.split_cohort([7], 4), 1)
    self.assertLen(client_groups.split_cohort(list(range(5)), 1), 5)
    with self.assertRaisesRegex(ValueError, 'clients_per_group'):
      client_groups.split_cohort([1, 2], 0)

  def test_default_clients_per_group_is_one_group_per_core(self):
    self.assertEqual(client_groups.default_clients_per_group(100, 2), 50)
    self.assertEqual(client_groups.default_clients_per_group(5, 2), 3)
    self.assertEqual(client_groups.default_clients_per_group(1, 8), 1)

  def test_clients_per_group_for_reads_zero_as_one_group_per_core(self):
    self.assertEqual(
        client_groups.clients_per_group_for(client_groups.AUTO, 100),
        client_groups.default_clients_per_group(100))
    self.assertEqual(client_groups.clients_per_group_for(3, 100), 3)
    self.assertEqual(client_groups.clients_per_group_for(1, 100), 1)
    for bad in (-1, 1.5, True, '2'):
      with self.assertRaisesRegex(ValueError, '`clients_per_group`'):
        client_groups.clients_per_group_for(bad, 100)

  def test_array_dataset_fn_gives_each_client_its_rows(self):
    arrays = tu.client_arrays(sizes=(3, 1, 2))
    fn = client_groups.array_dataset_fn(arrays, lambda d: d.batch(2))
    for i, (x, y) in enumerate(arrays):
      got = list(fn(tf.constant(i)).unbatch().as_numpy_iterator())
      np.testing.assert_array_equal(np.stack([g[0] for g in got]), x)
      np.testing.assert_array_equal(np.stack([g[1] for g in got]), y)


if __name__ == '__main__':
  absltest.main()
