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
"""Simulations on TFF workers at given addresses equal local simulations.

Two `worker_binary` processes are started on 127.0.0.1; rounds of 2-way
gradient transfer and of TFF's FedAvg run with the clients split across both
workers (and on one worker), then on TFF's local runtime, and must give the
same weights and metrics; so must the CelebA experiment's entry point (what
its binary runs with `--worker_addresses`), its client groups split across
the two workers. Bad addresses and unreachable workers must fail
clearly and fast, and every worker started here must be gone afterwards.
"""

import signal
import time

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.celeba_smile import celeba_smile_lib
import tff_mixed
from tff_mixed import remote
from tff_mixed import runtime
from tests import celeba_testing
from tests import refused_ports
from tests import temp_dirs
from tests import testing_utils as tu

_ROUNDS = 3
_SIZES = (4, 6, 2)  # Three clients: split 2 + 1 over two workers.
# What "fails fast" bounds: a wait that would otherwise never end. Generous,
# so that a loaded machine cannot fail the test; the timeouts under test are
# 10 s.
_NOT_FOREVER_S = 120.0


def _two_way_gt():
  return tff_mixed.build_two_way_gradient_transfer(
      tu.linear_model(), tff_mixed.central_data_objective(tu.central_arrays()),
      tu.sgd(0.1), tu.sgd(0.1), central_batch_size=4, client_steps=2,
      federated_weight=0.5, central_weight=0.5, seed=3)


def _fed_avg():
  return tff.learning.algorithms.build_weighted_fed_avg(
      tu.linear_model(), client_optimizer_fn=tu.sgd(0.1),
      server_optimizer_fn=tu.sgd(1.0))


def _run(process, rounds=_ROUNDS):
  """Runs `rounds` rounds in the current default context."""
  datasets = tu.to_datasets(tu.client_arrays(sizes=_SIZES), batch_size=2)
  state = process.initialize()
  metrics = None
  for _ in range(rounds):
    output = process.next(state, datasets)
    state, metrics = output.state, output.metrics
  return tu.trainable(process, state), metrics


def _connections():
  """The connections to the workers of the installed remote context."""
  return remote._active_connections  # pylint: disable=protected-access


class RemoteExecutionTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.workers = remote.start_local_workers(2)
    cls.addresses = [w.address for w in cls.workers]
    # Built once: a computation does not depend on the context it runs in.
    cls.processes = {'two_way_gt': _two_way_gt(), 'fed_avg': _fed_avg()}
    cls.local_runs = {}

  @classmethod
  def tearDownClass(cls):
    remote.restore_local_execution_context()
    remote.stop_workers(cls.workers)
    still_alive = [w.pid for w in cls.workers if runtime.process_alive(w.pid)]
    super().tearDownClass()
    if still_alive:
      raise AssertionError(f'workers {still_alive} outlived the test')

  def setUp(self):
    super().setUp()
    self.addCleanup(remote.restore_local_execution_context)

  def run_remotely(self, name, worker_addresses, rounds=_ROUNDS, **kwargs):
    remote.set_remote_execution_context(worker_addresses, **kwargs)
    try:
      return _run(self.processes[name], rounds)
    finally:
      remote.restore_local_execution_context()

  def local_run(self, name, rounds=_ROUNDS):
    """The same rounds on TFF's local runtime (memoized)."""
    if (name, rounds) not in self.local_runs:
      self.local_runs[name, rounds] = _run(self.processes[name], rounds)
    return self.local_runs[name, rounds]

  def assert_same_run(self, remote_run, local_run):
    (remote_weights, remote_metrics), (local_weights, local_metrics) = (
        remote_run, local_run)
    for got, want in zip(remote_weights, local_weights, strict=True):
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    tf.nest.assert_same_structure(remote_metrics, local_metrics)
    for got, want in zip(tf.nest.flatten(remote_metrics),
                         tf.nest.flatten(local_metrics), strict=True):
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)

  def test_two_way_gt_on_two_workers_equals_local(self):
    remote.set_remote_execution_context(self.addresses)
    on_workers = _run(self.processes['two_way_gt'])
    # The three clients of each round were split 2 + 1 across the workers
    # (initialize, with no clients, made a 0-client executor on each).
    connections = remote._active_connections  # pylint: disable=protected-access
    self.assertEqual([c.address for c in connections], self.addresses)
    self.assertIn(2, connections[0].clients_per_executor)
    self.assertIn(1, connections[1].clients_per_executor)
    remote.restore_local_execution_context()
    self.assert_same_run(on_workers, self.local_run('two_way_gt'))

  def test_fed_avg_on_two_workers_equals_local(self):
    self.assert_same_run(self.run_remotely('fed_avg', self.addresses),
                         self.local_run('fed_avg'))

  def test_two_way_gt_on_one_worker_equals_local(self):
    self.assert_same_run(self.run_remotely('two_way_gt', self.addresses[1:]),
                         self.local_run('two_way_gt'))

  def test_more_subrounds_than_workers_equals_local(self):
    # Three subrounds (one client each) on two workers: one runs twice.
    self.assert_same_run(
        self.run_remotely('fed_avg', self.addresses, num_subrounds=3),
        self.local_run('fed_avg'))

  def test_celeba_groups_on_two_workers_equal_the_local_runtime(self):
    # Four clients a round in groups of two: one group per worker.
    cache_dir = celeba_testing.make_fake_celeba_cache(
        temp_dirs.temp_dir(self), num_train_clients=12, num_test_clients=2,
        images_per_client=6, seed=5)

    def run():
      return celeba_smile_lib.run_experiment(
          cache_dir=cache_dir, scenarios=['two_way_gt'], rounds=2,
          clients_per_round=4, clients_per_group=2, client_batch_size=2,
          client_lr=0.05, hidden_units=(4,), eval_every=1, progress=False,
          output_dir=temp_dirs.temp_dir(self))

    with remote.remote_execution(self.addresses):
      connections = _connections()
      on_workers = run()
    for connection in connections:
      self.assertIn(1, connection.clients_per_executor)  # One group each.
    local = run()
    self.assertEqual([r.round for r in on_workers.comparison.rows], [0, 1, 2])
    for want, got in zip(local.comparison.rows, on_workers.comparison.rows,
                         strict=True):
      self.assertEqual(got[:2], want[:2])
      np.testing.assert_allclose(
          got[2:-1], want[2:-1], rtol=1e-5, atol=1e-6,
          err_msg=f'{want.scenario} round {want.round}')

  def test_remote_execution_restores_the_context_however_it_ends(self):
    before = tff.framework.get_context_stack().current
    with remote.remote_execution([]):  # No workers: nothing changes.
      self.assertIs(tff.framework.get_context_stack().current, before)
    with self.assertRaisesRegex(RuntimeError, 'inside'):
      with remote.remote_execution(self.addresses[:1]):
        inside = tff.framework.get_context_stack().current
        self.assertIsNot(inside, before)
        self.assertLen(_connections(), 1)
        raise RuntimeError('inside')
    # TFF's local runtime is back, the worker's channel closed.
    self.assertIsNot(tff.framework.get_context_stack().current, inside)
    self.assertEmpty(_connections())

  def test_bad_addresses_raise_naming_the_argument(self):
    good = self.addresses[0]
    cases = {
        'empty': [],
        'single string': good,
        'no port': ['127.0.0.1'],
        'port zero': ['127.0.0.1:0'],
        'port too large': ['127.0.0.1:65536'],
        'scheme': [f'grpc://{good}'],
        'spaces': [f' {good}'],
        'not a string': [good, 8000],
        'unbracketed ipv6': ['::1:8000'],
        'duplicate': [good, good],
    }
    for name, addresses in cases.items():
      with self.subTest(name):
        with self.assertRaisesRegex(ValueError, 'worker_addresses'):
          remote.set_remote_execution_context(addresses)
        with self.assertRaisesRegex(ValueError, 'worker_addresses'):
          remote.check_worker_addresses(addresses)  # Connects to nothing.
        if name != 'empty':
          with self.assertRaisesRegex(ValueError, 'worker_addresses'):
            with remote.remote_execution(addresses):
              self.fail('ran the block')
    for name, kwargs in {
        'default_num_clients': dict(default_num_clients=-1),
        'num_subrounds': dict(num_subrounds=0),
        'connect_timeout_s': dict(connect_timeout_s=0),
    }.items():
      with self.subTest(name):
        with self.assertRaisesRegex(ValueError, name):
          remote.set_remote_execution_context([good], **kwargs)

  def test_unreachable_worker_fails_fast_and_keeps_the_context(self):
    before = tff.framework.get_context_stack().current
    port, holder = refused_ports.refused_port()
    self.addCleanup(holder.close)
    dead = f'127.0.0.1:{port}'
    start = time.monotonic()
    # The live worker must answer within the timeout even on a loaded
    # machine; the dead one is given up on after it.
    with self.assertRaisesRegex(
        ConnectionError, rf"{dead}.*worker_addresses\[1\].*within 10 s"):
      remote.set_remote_execution_context([self.addresses[0], dead],
                                          connect_timeout_s=10.0)
    # Far below "forever", whatever the load.
    self.assertLess(time.monotonic() - start, _NOT_FOREVER_S)
    self.assertIs(tff.framework.get_context_stack().current, before)

  def test_worker_dying_mid_run_fails_fast(self):
    with remote.local_workers(1) as (worker,):
      process = self.processes['fed_avg']
      remote.set_remote_execution_context(
          [self.addresses[0], worker.address], connect_timeout_s=10.0)
      datasets = tu.to_datasets(tu.client_arrays(sizes=_SIZES), batch_size=2)
      state = process.next(process.initialize(), datasets).state
      worker.stop()
      start = time.monotonic()
      # TFF alone would retry the dead worker forever.
      with self.assertRaisesRegex(ConnectionError, worker.address):
        process.next(state, datasets)
      self.assertLess(time.monotonic() - start, _NOT_FOREVER_S)

  def test_local_workers_are_stopped_on_exit(self):
    with remote.local_workers(2) as workers:
      pids = [w.pid for w in workers]
      self.assertTrue(all(runtime.process_alive(pid) for pid in pids))
      self.assertTrue(all(w.address.startswith('127.0.0.1:') for w in workers))
    self.assertFalse(any(runtime.process_alive(pid) for pid in pids))

  def test_local_workers_get_default_sigint(self):
    # Started by a process that a shell's `cmd &` left with SIGINT and
    # SIGQUIT ignored, which a worker would inherit.
    old = [signal.signal(s, signal.SIG_IGN)
           for s in (signal.SIGINT, signal.SIGQUIT)]
    try:
      with remote.local_workers(1) as workers:
        with open(f'/proc/{workers[0].pid}/status') as f:
          ignored = [int(l.split()[1], 16) for l in f
                     if l.startswith('SigIgn:')][0]
    finally:
      signal.signal(signal.SIGINT, old[0])
      signal.signal(signal.SIGQUIT, old[1])
    for signum in (signal.SIGINT, signal.SIGQUIT):
      self.assertFalse(ignored & (1 << (signum - 1)),
                       f'the worker ignores {signal.Signals(signum).name}')

  def test_start_local_workers_rejects_bad_arguments(self):
    for kwargs, name in ((dict(num_workers=0), 'num_workers'),
                         (dict(num_workers=1, log_dir='/nonexistent/dir'),
                          'log_dir')):
      with self.subTest(name):
        with self.assertRaisesRegex(ValueError, name):
          remote.start_local_workers(**kwargs)


if __name__ == '__main__':
  absltest.main()
