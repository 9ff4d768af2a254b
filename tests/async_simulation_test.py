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
"""Tests for the asynchronous FL loop (`tff_mixed.asynchronous.simulation`)."""

import collections
import fcntl
import functools
import os
import pickle
import shutil
import signal
import tempfile
from unittest import mock

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import hybrid_baselines
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.asynchronous import server_strategies
from tff_mixed.asynchronous import simulation
from tff_mixed.asynchronous import strategy
from tff_mixed.models import dense
from tff_mixed.training import checkpoints
from tff_mixed.training import run_lock

from tests import preloaded_python
from tests import testing_utils as tu

_NUM_CLIENTS = 8
_DIM = tu.ASYNC_DIM
_client_arrays = functools.partial(tu.async_client_arrays, seed=100,
                                   min_examples=4, size_cycle=3)
_sgd = tu.sgd


def _dataset(client, round_num):
  del round_num  # The same data every round.
  return tf.data.Dataset.from_tensor_slices(_client_arrays(client)).batch(3)


def _model():
  return dense.build_linear_regression(_DIM)


def _loss(weights):
  return tu.mse_loss(weights, [_client_arrays(c) for c in range(_NUM_CLIENTS)],
                     mean_over_clients=True)


class RecordingDatasets:
  """`dataset_fn` that remembers who trained in which round."""

  def __init__(self):
    self.calls = []

  def __call__(self, client, round_num):
    self.calls.append((round_num, client))
    return _dataset(client, round_num)


class _Recording:
  """A method that records the updates it receives, then applies `inner`."""

  def __init__(self, inner):
    self.inner = inner
    self.received = []

  def initial_state(self):
    return self.inner.initial_state()

  def apply(self, state, weights, updates):
    self.received.extend(updates)
    return self.inner.apply(state, weights, updates)


def _eight_delayed_rounds(model, method, evaluate_fn=_loss, observer=None):
  """8 rounds of 2 clients a round, delays sigma 1, evaluated at the end."""
  return simulation.run_async(
      method, schedule_lib.AsyncSchedule(_NUM_CLIENTS, 2, 1.0, 8, seed=2),
      client_training.build_client_training(model, _sgd(0.05)), _dataset,
      model.initial_weights[0], evaluate_fn=evaluate_fn, eval_every=8,
      observer=observer)


class RunAsyncTest(absltest.TestCase):

  def test_zero_delay_fedbuff_equals_tffs_unweighted_fed_avg(self):
    # With no delays every update arrives in its own round; FedBuff with a
    # buffer of S and server lr 1 is then FedAvg with an unweighted mean.
    rounds, per_round = 3, 3
    model = _model()
    datasets = RecordingDatasets()
    result = simulation.run_async(
        server_strategies.FedBuff(learning_rate=1.0, buffer_size=per_round),
        schedule_lib.AsyncSchedule(_NUM_CLIENTS, per_round, 0.0, rounds,
                                   seed=3),
        client_training.build_client_training(model, _sgd(0.05)), datasets,
        model.initial_weights[0], evaluate_fn=_loss, eval_every=1)
    fed_avg = tff.learning.algorithms.build_unweighted_fed_avg(
        model, client_optimizer_fn=_sgd(0.05), server_optimizer_fn=_sgd(1.0))
    state = fed_avg.initialize()
    for round_num in range(1, rounds + 1):
      clients = [c for r, c in datasets.calls if r == round_num]
      self.assertLen(clients, per_round)
      state = fed_avg.next(state, [_dataset(c, round_num)
                                   for c in clients]).state
    want = fed_avg.get_model_weights(state).trainable
    for got, expected in zip(result.weights, want):
      np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    self.assertEqual((result.num_trained, result.num_applied), (9, 9))
    self.assertEqual([row['round'] for row in result.rows], [0, 1, 2, 3])
    self.assertLess(result.rows[-1]['loss'], result.rows[0]['loss'])

  def test_zero_delay_weighted_fedbuff_equals_tffs_weighted_fed_avg(self):
    # Clients hold 4 to 6 examples: weighting by example count is weighted
    # FedAvg, and differs from the unweighted mean.
    rounds, per_round = 3, 3
    model = _model()
    train = client_training.build_client_training(model, _sgd(0.05))
    schedule = functools.partial(schedule_lib.AsyncSchedule, _NUM_CLIENTS,
                                 per_round, 0.0, rounds, seed=3)
    datasets = RecordingDatasets()
    weighted, unweighted = (simulation.run_async(
        server_strategies.FedBuff(learning_rate=1.0, buffer_size=per_round,
                                  weighting=weighting),
        schedule(), train, d, model.initial_weights[0], evaluate_fn=_loss,
        eval_every=1) for weighting, d in (
            ('num_examples', datasets), ('uniform', RecordingDatasets())))
    fed_avg = tff.learning.algorithms.build_weighted_fed_avg(
        model, client_optimizer_fn=_sgd(0.05), server_optimizer_fn=_sgd(1.0))
    state = fed_avg.initialize()
    for round_num in range(1, rounds + 1):
      clients = [c for r, c in datasets.calls if r == round_num]
      state = fed_avg.next(state, [_dataset(c, round_num)
                                   for c in clients]).state
    want = fed_avg.get_model_weights(state).trainable
    for got, expected in zip(weighted.weights, want):
      np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    self.assertGreater(max(np.max(np.abs(w - u)) for w, u in zip(
        weighted.weights, unweighted.weights)), 1e-4)

  def test_stale_updates_carry_their_base_and_staleness(self):
    model = _model()
    train = client_training.build_client_training(model, _sgd(0.05))

    recorder = _Recording(server_strategies.FedAsync(alpha=0.5))
    weights_at = {0: [np.asarray(w) for w in model.initial_weights[0]]}

    def round_end(round_num, weights):
      weights_at[round_num] = weights

    schedule = schedule_lib.AsyncSchedule(_NUM_CLIENTS, 2, 2.0, 12, seed=5)
    datasets = RecordingDatasets()
    simulation.run_async(recorder, schedule, train, datasets,
                         model.initial_weights[0], evaluate_fn=_loss,
                         eval_every=4, round_end_fn=round_end)
    sampled_in = {}
    for round_num, client in datasets.calls:
      sampled_in.setdefault(client, []).append(round_num)
    self.assertNotEmpty(recorder.received)
    self.assertTrue(any(u.staleness > 0 for u in recorder.received))
    for update in recorder.received:
      # The update was computed from the model of its sampling round, whose
      # weights were those at the end of the previous round.
      sampled = [r for r in sampled_in[update.client]
                 if r + update.staleness <= 12]
      base_round = None
      for r in sampled:
        base = weights_at[r - 1]
        if all(np.array_equal(a, b) for a, b in zip(base, update.base)):
          base_round = r
      self.assertIsNotNone(base_round)
      again = train(
          tff.learning.models.ModelWeights(tuple(update.base), ()),
          [_dataset(update.client, base_round)])['update'][0]
      for got, want in zip(update.delta, again):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)

  def test_weight_zero_arrivals_are_discarded_and_counted(self):
    # Client 3's features are NaN: its updates are non-finite, which the
    # client training zeroes with weight 0. FedBuff by examples refuses a
    # weight of 0; the run leaves those updates out, counts them and says
    # so once, then in sum.
    model = _model()
    nan_client, trained = 3, []

    def dataset_fn(client, round_num):
      trained.append(client)
      x, y = _client_arrays(client)
      if client == nan_client:
        x = np.full_like(x, np.nan)
      del round_num  # The same data every round.
      return tf.data.Dataset.from_tensor_slices((x, y)).batch(3)

    method = _Recording(server_strategies.FedBuff(
        learning_rate=1.0, buffer_size=2, weighting='num_examples'))
    with mock.patch.object(simulation.logging, 'warning',
                           wraps=simulation.logging.warning) as warning:
      result = simulation.run_async(
          method, schedule_lib.AsyncSchedule(_NUM_CLIENTS, 2, 1.0, 8, seed=2),
          client_training.build_client_training(model, _sgd(0.05)),
          dataset_fn, model.initial_weights[0], evaluate_fn=_loss,
          eval_every=8)
    discarded = trained.count(nan_client)
    self.assertGreater(discarded, 0)
    self.assertEqual(result.num_discarded, discarded)
    self.assertEqual(result.num_applied + result.num_discarded,
                     result.num_trained)
    self.assertNotIn(nan_client, [u.client for u in method.received])
    self.assertTrue(all(np.all(np.isfinite(w)) for w in result.weights))
    self.assertLess(result.rows[-1]['loss'], result.rows[0]['loss'])
    messages = [c.args[0] % c.args[1:] for c in warning.call_args_list]
    self.assertLen([m for m in messages if 'only counted' in m], 1)
    self.assertEqual(messages[-1], (
        f'{discarded} arriving client update(s) of weight 0 were not given '
        f'to the method in this run (of {result.num_trained} trained).'))

  def test_a_state_saved_before_discards_were_counted_loads(self):
    # A checkpoint pickled when `AsyncState` had no `num_discarded`.
    fields = [f for f in simulation.AsyncState._fields
              if f != 'num_discarded']
    old = collections.namedtuple('AsyncState', fields)
    old.__module__ = simulation.__name__
    with mock.patch.object(simulation, 'AsyncState', old):
      saved = pickle.dumps(old([np.zeros(2)], None, {}, 0.5, 4, 3, 1))
    state = pickle.loads(saved)
    self.assertIsInstance(state, simulation.AsyncState)
    self.assertEqual((state.num_applied, state.num_dropped,
                      state.num_discarded), (3, 1, 0))

  def test_updates_that_cannot_arrive_are_not_trained(self):
    model = _model()
    schedule = schedule_lib.AsyncSchedule(
        _NUM_CLIENTS, 2, 3.0, 6, seed=1, allow_fewer=True,
        check_delays=False)
    result = simulation.run_async(
        server_strategies.FedBuff(learning_rate=1.0, buffer_size=1),
        schedule, client_training.build_client_training(model, _sgd(0.05)),
        _dataset, model.initial_weights[0], evaluate_fn=_loss, eval_every=3)
    self.assertGreater(result.num_dropped, 0)
    self.assertEqual(result.num_trained, result.num_applied)

  def test_methods_without_client_updates_train_no_client(self):

    class ServerOnly:
      """Moves the weights by one each round; ignores clients (Center)."""
      uses_client_updates = False

      def __init__(self):
        self.received = []

      def initial_state(self):
        return strategy.NO_ROUNDS_YET

      def apply(self, state, weights, updates):
        self.received.extend(updates)
        return state + 1, [w + 1.0 for w in weights]

    model = _model()
    method = ServerOnly()
    datasets = RecordingDatasets()
    result = simulation.run_async(
        method, schedule_lib.AsyncSchedule(_NUM_CLIENTS, 2, 0.0, 3, seed=0),
        client_training.build_client_training(model, _sgd(0.05)), datasets,
        model.initial_weights[0], evaluate_fn=_loss, eval_every=1)
    self.assertEqual(datasets.calls, [])
    self.assertEqual(method.received, [])
    self.assertEqual(result.num_trained, 0)
    for got, initial in zip(result.weights, model.initial_weights[0]):
      np.testing.assert_allclose(got, np.asarray(initial) + 3.0)

  def test_feddle_without_search_steps_is_fedbuff(self):
    model = _model()
    server_x, server_y = _client_arrays(0)
    runs = []
    for method in (
        server_strategies.FedBuff(learning_rate=0.8, buffer_size=2),
        feddle.FeddleMethod(
            model, feddle.FeddleConfig(max_anchors=4, server_lr=0.8,
                                       search_steps=0),
            (server_x, server_y), buffer_size=2)):
      runs.append(_eight_delayed_rounds(model, method))
    for got, want in zip(runs[1].weights, runs[0].weights):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

  def test_feddle_search_lowers_the_server_loss_against_fedbuff(self):
    model = _model()
    server_x, server_y = _client_arrays(0)
    final = []
    for steps in (0, 20):
      final.append(_eight_delayed_rounds(
          model, feddle.FeddleMethod(
              model, feddle.FeddleConfig(max_anchors=4, server_lr=1.0,
                                         search_steps=steps,
                                         search_lr=0.01),
              (server_x, server_y), buffer_size=2),
          evaluate_fn=lambda w: {'server_loss': float(np.mean(
              (server_x @ w[0] + w[1] - server_y) ** 2))}
          ).rows[-1]['server_loss'])
    self.assertLess(final[1], final[0])

  def test_feddle_probe_sees_each_merge_and_changes_nothing(self):
    model = _model()
    server_x, server_y = _client_arrays(0)
    config = feddle.FeddleConfig(max_anchors=4, server_lr=1.0,
                                 search_steps=3, search_lr=0.01)
    seen = []

    def probe(event):
      weights, batch = event.before, event.updates
      atlas, diagnostics = event.diagnostics
      # The merge is x + sum_m c-hat_m abar_m over the atlas it searched.
      normalized = feddle.normalize_anchors(atlas.anchors).anchors
      merged = feddle.merge_anchors(weights, normalized,
                                    diagnostics.coefficients)
      seen.append((merged, len(batch), len(atlas.anchors)))

    runs = []
    for observer in (None, strategy.AsyncObserver(on_merge=probe)):
      method = feddle.FeddleMethod(model, config, (server_x, server_y),
                                   buffer_size=2)
      runs.append(_eight_delayed_rounds(model, method, observer=observer))
    for got, want in zip(runs[1].weights, runs[0].weights):
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    self.assertNotEmpty(seen)
    self.assertTrue(all(n == 2 and 2 <= a <= 4 for _, n, a in seen))
    # The last probe's merge is the run's final model (no later merge).
    for got, want in zip(seen[-1][0], runs[1].weights):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

  def test_bad_arguments(self):
    model = _model()
    with self.assertRaisesRegex(ValueError, '`eval_every`'):
      simulation.run_async(
          server_strategies.FedBuff(learning_rate=1.0, buffer_size=1),
          schedule_lib.AsyncSchedule(_NUM_CLIENTS, 2, 0.0, 2, seed=0),
          client_training.build_client_training(model, _sgd(0.05)),
          _dataset, model.initial_weights[0], evaluate_fn=_loss,
          eval_every=0)
    with self.assertRaisesRegex(ValueError, '`buffer_size`'):
      feddle.FeddleMethod(model, feddle.FeddleConfig(max_anchors=2),
                              _client_arrays(0), buffer_size=3)


class _Killed(Exception):
  """Stands in for a run killed after a round."""


_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WAIT_S = 300
# `ResumeTest._run`'s FedBuff run, sent SIGTERM at the end of round 4;
# prints what stopped it and exits with status 3.
_SIGTERM_AFTER_ROUND_4 = """
import os, signal, sys
from tests import async_simulation_test as t
from tff_mixed.training import runner

test = t.ResumeTest()
test.setUp()

def sigterm_after_round_4(round_num, weights):
  if round_num == 4:
    os.kill(os.getpid(), signal.SIGTERM)

real_run_async = t.simulation.run_async
t.simulation.run_async = lambda *a, **kw: real_run_async(
    *a, **dict(kw, round_end_fn=sigterm_after_round_4))
try:
  test._run(lambda: t.server_strategies.FedBuff(learning_rate=1.0,
                                                buffer_size=2),
            path=sys.argv[1])
except runner.RunInterrupted as e:
  print(f'stopped: {e.signum}: {e}', file=sys.stderr)
  sys.exit(3)
"""


class ResumeTest(absltest.TestCase):
  """A killed run resumed from its checkpoint ends as if never killed."""

  _ROUNDS = 6

  def setUp(self):
    super().setUp()
    self.model = _model()
    self.training = client_training.build_client_training(self.model,
                                                          _sgd(0.05))
    self.path = os.path.join(tempfile.mkdtemp(), 'async.pkl')

  def _fed_ft(self):
    # Fed+FT: its merge counter (the seed of each fine-tuning) is state.
    x, y = _client_arrays(7)
    center = hybrid_baselines.CenterMethod(
        self.model, x, y, hybrid_baselines.ServerTraining(2, 3, 0.05),
        seed=5)
    return hybrid_baselines.FineTuneMethod(
        server_strategies.FedBuff(learning_rate=1.0, buffer_size=2), center)

  def _run(self, method_fn, kill_after=None, rounds=None, path=None,
           observer=None):
    def round_end_fn(round_num, weights):
      del weights
      if round_num == kill_after:
        raise _Killed()
    # Delays spread arrivals over rounds, so updates are in flight (and
    # pending) at every checkpoint.
    return simulation.run_async(
        method_fn(),
        schedule_lib.AsyncSchedule(_NUM_CLIENTS, 3, 1.5,
                                   rounds or self._ROUNDS, seed=2,
                                   allow_fewer=True, check_delays=False),
        self.training, _dataset, self.model.initial_weights[0],
        evaluate_fn=_loss, eval_every=2, round_end_fn=round_end_fn,
        checkpoint_path=path or self.path, observer=observer)

  def _assert_same_run(self, got, want):
    for g, w in zip(got.weights, want.weights):
      np.testing.assert_array_equal(g, w)
    # assert_equal counts round 0's NaN train loss as equal to itself.
    np.testing.assert_equal(
        [{k: v for k, v in row.items() if k != 'seconds'} for row in got.rows],
        [{k: v for k, v in row.items() if k != 'seconds'}
         for row in want.rows])
    self.assertEqual(
        (got.num_trained, got.num_applied, got.num_dropped),
        (want.num_trained, want.num_applied, want.num_dropped))

  def test_killed_and_resumed_equals_uninterrupted(self):
    for method_fn in (
        lambda: server_strategies.FedBuff(learning_rate=1.0, buffer_size=2),
        self._fed_ft):
      with self.subTest(method=type(method_fn()).__name__):
        want = self._run(method_fn,
                         path=os.path.join(tempfile.mkdtemp(), 'once.pkl'))
        with self.assertRaises(_Killed):
          self._run(method_fn, kill_after=4)
        got = self._run(method_fn)
        self._assert_same_run(got, want)
        os.remove(self.path)

  def test_an_observer_with_a_snapshot_is_restored(self):
    class Rounds(strategy.AsyncObserver):

      def __init__(self):
        super().__init__()
        self.seen = []

      def on_round(self, event):
        self.seen.append(event.round_num)

      def snapshot(self):
        return list(self.seen)

      def restore(self, snapshot):
        self.seen = list(snapshot)

    method_fn = lambda: server_strategies.FedBuff(learning_rate=1.0,
                                                  buffer_size=2)
    first, resumed = Rounds(), Rounds()
    with self.assertRaises(_Killed):
      self._run(method_fn, kill_after=4, observer=first)
    self.assertEqual(first.seen, [1, 2, 3, 4])
    self._run(method_fn, observer=resumed)
    self.assertEqual(resumed.seen, list(range(1, self._ROUNDS + 1)))

  def test_sigterm_saves_the_round_and_the_run_resumes(self):
    # SIGTERM used to kill the run where it stood, without a word. In a
    # process of its own: the test's process must not be the one signalled.
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    path, log_path = (os.path.join(root, n) for n in ('async.pkl', 'log'))
    status = preloaded_python.shared().start(
        None, [path], cwd=_REPO, stderr_path=log_path,
        code=_SIGTERM_AFTER_ROUND_4).wait(_WAIT_S)
    with open(log_path) as f:
      stderr = f.read()
    self.assertEqual(status, 3, stderr[-3000:])
    self.assertIn(f'stopped: {signal.SIGTERM}: stopped by SIGTERM after '
                  'round 4 of async.pkl; run the same command to resume',
                  stderr)
    method_fn = lambda: server_strategies.FedBuff(learning_rate=1.0,
                                                  buffer_size=2)
    want = self._run(method_fn, path=os.path.join(root, 'once.pkl'))
    self._assert_same_run(self._run(method_fn, path=path), want)

  def test_a_second_process_on_the_run_is_refused(self):
    # Both would write the one checkpoint file.
    lock = os.open(self.path + '.lock', os.O_RDWR | os.O_CREAT)
    self.addCleanup(os.close, lock)
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.pwrite(lock, b'4242\n', 0)
    method_fn = lambda: server_strategies.FedBuff(learning_rate=1.0,
                                                  buffer_size=2)
    with self.assertRaisesRegex(run_lock.DirectoryInUseError,
                                'in use by process 4242'):
      self._run(method_fn)
    self.assertFalse(os.path.exists(self.path))
    fcntl.flock(lock, fcntl.LOCK_UN)
    self._run(method_fn, rounds=2)  # Released: it runs.

  def test_a_damaged_checkpoint_is_named(self):
    method_fn = lambda: server_strategies.FedBuff(learning_rate=1.0,
                                                  buffer_size=2)
    for damaged in (b'', b'garbage', pickle.dumps(object())[:5]):
      with self.subTest(damaged=damaged):
        with open(self.path, 'wb') as f:
          f.write(damaged)
        with self.assertRaisesRegex(checkpoints.CheckpointMismatchError,
                                    f'{self.path} is damaged'):
          self._run(method_fn)

  def test_the_schedule_must_be_restored(self):
    # The test above can fail: a resumed run whose schedule starts afresh
    # (no `restore`) is refused rather than drawing other clients.
    method_fn = lambda: server_strategies.FedBuff(learning_rate=1.0,
                                                  buffer_size=2)
    with self.assertRaises(_Killed):
      self._run(method_fn, kill_after=4)
    original = schedule_lib.AsyncSchedule.restore
    try:
      schedule_lib.AsyncSchedule.restore = lambda self, snapshot: None
      with self.assertRaisesRegex(ValueError, r'sample\(4\) called out of '
                                  r'order'):
        self._run(method_fn)
    finally:
      schedule_lib.AsyncSchedule.restore = original

  def test_another_runs_checkpoint_is_refused(self):
    method_fn = lambda: server_strategies.FedBuff(learning_rate=1.0,
                                                  buffer_size=2)
    with self.assertRaises(_Killed):
      self._run(method_fn, kill_after=2)
    with self.assertRaisesRegex(checkpoints.CheckpointMismatchError,
                                'another asynchronous run'):
      self._run(method_fn, rounds=self._ROUNDS + 1)


if __name__ == '__main__':
  absltest.main()
