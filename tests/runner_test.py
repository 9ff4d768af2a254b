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
"""The shared runner: resume after SIGKILL and Ctrl-C, determinism, metrics,
validation.

Runs the digits label-imbalance trainer (`experiments/label_imbalance/
train_lib.py`) on a tiny configuration, in processes of their own where a
run must be killed for real (forked from an interpreter that has TF loaded,
`tests/preloaded_python.py`).
"""

import csv
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from unittest import mock

from absl.testing import absltest
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.label_imbalance import train_lib
from tests import binary_runs
from tests import preloaded_python
from tests import script_modules
from tests import testing_utils as tu
from tff_mixed import remote as remote_lib
import tff_mixed
from tff_mixed.simulation import multi_round
from tff_mixed.training import checkpoints as checkpoints_lib
from tff_mixed.training import run_lock
from tff_mixed.training import runner as runner_lib

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CARRY_SCRIPT = os.path.join(_REPO_ROOT, 'scripts', 'carry_run.py')
_TINY = dict(total_rounds=4, clients_per_round=3, client_steps=2,
             num_clients=6, rounds_per_evaluation=2, progress=False)

_KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from experiments.label_imbalance import train_lib
    from tff_mixed import runtime

    def kill_after(round_num):
      if round_num == int(sys.argv[2]):
        # A SIGKILL skips our exit hook, so TFF's worker is orphaned: leave
        # its PID for the test to end.
        with open(sys.argv[3], 'w') as f:
          f.write(' '.join(map(str, runtime.own_worker_pids())))
        os.kill(os.getpid(), signal.SIGKILL)

    train_lib.train(scenario='two_way_gt', root_output_dir=sys.argv[1],
                    experiment_name='run', total_rounds=4,
                    clients_per_round=3, client_steps=2, num_clients=6,
                    rounds_per_evaluation=2, progress=False,
                    round_end_fn=kill_after)
""")


# train_main on `_TINY`, as a user types it, but Ctrl-C'd (SIGINT) from the
# end of the round argv[1], right after its checkpoint: the binary's own
# `main` and `cli.run`, with `train_lib.train` given the hook.
_INTERRUPTED_BINARY = textwrap.dedent("""
    import os, signal, sys
    from experiments import tf_log_level
    from experiments.label_imbalance import train_lib
    from experiments.label_imbalance import train_main
    from experiments.common import cli

    last_round = int(sys.argv[1])

    def interrupt_after(round_num):
      if round_num == last_round:
        os.kill(os.getpid(), signal.SIGINT)

    train = train_lib.train
    train_lib.train = lambda **kw: train(round_end_fn=interrupt_after, **kw)
    sys.argv = ['train_main'] + sys.argv[2:]
    cli.run(train_main.main)
""")
_TINY_FLAGS = ('--total_rounds=4', '--clients_per_round=3',
               '--client_steps=2', '--num_clients=6',
               '--rounds_per_evaluation=2', '--scenario=two_way_gt',
               '--experiment_name=run')


def _read_csv(path):
  with open(path) as f:
    return list(csv.DictReader(f))


def _final_weights(result):
  leaves = tf.nest.flatten(result.state.global_model_weights.trainable)
  return [np.asarray(w) for w in leaves]


class ResumeTest(absltest.TestCase):

  # The uninterrupted run, trained at most once per class set-up, in the
  # set-up's own directory. pytest may set the class up more than once in
  # a process (its tests run apart when others are ordered between them,
  # or when pytest-xdist splits the class), so the run belongs to the
  # set-up, never to the class for the life of the process: one kept past
  # `tearDownClass` would point into a deleted directory.
  _reference = None

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls._reference = None
    cls.reference_root = tempfile.mkdtemp()

  @classmethod
  def tearDownClass(cls):
    cls._reference = None
    shutil.rmtree(cls.reference_root)
    super().tearDownClass()

  def reference(self):
    cls = type(self)
    if cls._reference is None:
      cls._reference = train_lib.train(
          scenario='two_way_gt', root_output_dir=self.reference_root,
          experiment_name='run', **_TINY)
    return cls._reference

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root)

  def assert_resumes_as_reference(self, root, resumed_from, **args):
    """Resumes the run under `root`; it must end as the uninterrupted one."""
    reference = self.reference()
    resumed = train_lib.train(scenario='two_way_gt', root_output_dir=root,
                              experiment_name='run', **(args or _TINY))
    self.assertEqual(resumed.resumed_from, resumed_from)
    for got, want in zip(_final_weights(resumed), _final_weights(reference)):
      np.testing.assert_array_equal(got, want)
    self.assertEqual(
        _read_csv(resumed.metrics_path), _read_csv(reference.metrics_path))
    return resumed

  def test_killed_and_resumed_run_equals_uninterrupted_run(self):
    killed_root = os.path.join(self.root, 'b')
    pid_file = os.path.join(self.root, 'worker_pids')
    log_path = os.path.join(self.root, 'killed.log')
    # Output to a file, not a pipe: the orphaned worker would hold a pipe.
    returncode = preloaded_python.shared().start(
        None, [killed_root, '2', pid_file], cwd=_REPO_ROOT,
        stderr_path=log_path, stdout_path=log_path,
        code=_KILLED_RUN).wait(300)
    with open(pid_file) as f:
      for pid in f.read().split():
        try:
          os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
          pass
    with open(log_path) as f:
      log_tail = f.read()[-2000:]
    self.assertEqual(returncode, -signal.SIGKILL, log_tail)
    partial = _read_csv(os.path.join(killed_root, 'results', 'run',
                                     'metrics.csv'))
    self.assertEqual([r['round_num'] for r in partial], ['1', '2'])
    resumed = self.assert_resumes_as_reference(killed_root, 2)
    self.assertEqual([h['round_num'] for h in resumed.history], [3, 4])

  def test_ctrl_c_saves_the_last_round_and_the_run_resumes_from_it(self):
    # Checkpoints only at round 4; Ctrl-C after round 3 saves round 3.
    root = os.path.join(self.root, 'interrupted')
    args = dict(_TINY, rounds_per_checkpoint=4)

    def ctrl_c_after(round_num):
      if round_num == 3:
        raise KeyboardInterrupt()

    with self.assertRaises(runner_lib.RunInterrupted) as raised:
      train_lib.train(scenario='two_way_gt', root_output_dir=root,
                      experiment_name='run', round_end_fn=ctrl_c_after,
                      **args)
    self.assertIn('interrupted after round 3 of run; run the same command',
                  str(raised.exception))
    checkpoints = runner_lib.output_dirs(root, 'run')['checkpoints']
    self.assertIn('program_state_3', os.listdir(checkpoints))
    self.assert_resumes_as_reference(root, 3, **args)

  def test_carried_run_resumes_elsewhere(self):
    # scripts/carry_run.py moves a run stopped after its round-2 checkpoint
    # to a new root (another checkout), where it ends as the uninterrupted
    # run does.
    first, carried, second = (os.path.join(self.root, d)
                              for d in ('first', 'carried', 'second'))

    class Stop(Exception):
      pass

    def stop_after(round_num):
      if round_num == 2:
        raise Stop()

    with self.assertRaises(Stop):
      train_lib.train(scenario='two_way_gt', root_output_dir=first,
                      experiment_name='run', round_end_fn=stop_after,
                      **_TINY)
    def carry(*args):
      subprocess.run([sys.executable, _CARRY_SCRIPT, *args], check=True,
                     capture_output=True, timeout=600)

    carry('save', first, 'run', carried)
    # Committed and checked out again, the carried state loses its empty
    # directories (a SavedModel's `assets`): git keeps only files.
    for directory, subdirs, files in os.walk(carried, topdown=False):
      if not subdirs and not files:
        os.rmdir(directory)
    carry('restore', carried, second, 'run')
    self.assert_resumes_as_reference(second, 2)

  def test_carry_script_knows_the_runners_layout(self):
    carry = script_modules.load('carry_run')
    dirs = runner_lib.output_dirs('root', 'name')
    self.assertEqual(dirs['checkpoints'],
                     os.path.join('root', carry.CHECKPOINTS, 'name'))
    self.assertEqual(dirs['results'],
                     os.path.join('root', carry.RESULTS, 'name'))
    self.assertEqual(carry.FINGERPRINT_FILE, checkpoints_lib.FINGERPRINT_FILE)
    self.assertEqual(carry.LOCK_FILE, run_lock.LOCK_FILE)
    self.assertIsNotNone(carry._FINISHED.fullmatch(
        checkpoints_lib._PREFIX + '12'))

  @binary_runs.runs_binaries
  def test_ctrl_c_prints_one_line_and_the_same_command_resumes(self):
    root = os.path.join(self.root, 'b')
    flags = (*_TINY_FLAGS, f'--root_output_dir={root}')
    # Output to files, not pipes: a TFF worker left behind would hold one.
    # Each run gets SIGINT as Python's default handler, even where the test
    # process was started in the background (`make test &`) with SIGINT
    # ignored (`preloaded_python`).
    log_path = os.path.join(self.root, 'interrupted.log')
    interrupted = preloaded_python.shared().start(
        None, ['2', *flags], cwd=_REPO_ROOT, stderr_path=log_path,
        code=_INTERRUPTED_BINARY).wait(300)
    with open(log_path) as f:
      stderr = f.read()
    self.assertNotIn('Traceback', stderr, stderr[-3000:])
    self.assertEqual(interrupted, 130, stderr[-3000:])
    # The last line (TensorFlow's C++ start-up lines may come before it).
    lines = stderr.splitlines()
    self.assertEqual(
        lines[-1:],
        ['interrupted after round 2 of run; run the same command to resume'])
    self.assertLen([l for l in lines if 'interrupted' in l], 1, stderr)
    checkpoint_dir = os.path.join(root, 'checkpoints', 'run')
    self.assertEqual(
        sorted(n for n in os.listdir(checkpoint_dir)
               if n.startswith('program_state_')),
        ['program_state_1', 'program_state_2'])
    resumed = preloaded_python.shared().run(
        'experiments.label_imbalance.train_main', list(flags),
        cwd=_REPO_ROOT, stderr_path=log_path)
    with open(log_path) as f:
      stderr = f.read()
    self.assertEqual(resumed, 0, stderr[-3000:])
    self.assertIn('resuming after round 2', stderr)
    self.assertEqual(
        _read_csv(os.path.join(root, 'results', 'run', 'metrics.csv')),
        _read_csv(self.reference().metrics_path))

  def test_same_seed_same_metrics_and_csv_layout(self):
    a = train_lib.train(scenario='example_transfer',
                        root_output_dir=os.path.join(self.root, 'a'),
                        experiment_name='run', **_TINY)
    b = train_lib.train(scenario='example_transfer',
                        root_output_dir=os.path.join(self.root, 'b'),
                        experiment_name='run', **_TINY)
    rows = _read_csv(a.metrics_path)
    self.assertEqual(rows, _read_csv(b.metrics_path))
    self.assertEqual([r['round_num'] for r in rows], ['1', '2', '3', '4'])
    self.assertContainsSubset(
        ['round_num', 'train/client_work/train/loss',
         'train/client_work/train/accuracy', 'train/finalizer/update_non_finite',
         'eval/accuracy', 'eval/auc', 'eval/loss', 'eval/positive_accuracy',
         'eval/negative_accuracy'], list(rows[0]))
    # Evaluation every 2 rounds.
    self.assertEqual([r['eval/auc'] != '' for r in rows],
                     [False, True, False, True])
    self.assertTrue(os.path.exists(os.path.join(
        self.root, 'a', 'results', 'run', 'hparams.json')))
    self.assertNotEmpty(os.listdir(os.path.join(self.root, 'a', 'logdir',
                                                'run')))


class CheckpointSafetyTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root)

  def test_refuses_checkpoints_of_another_experiment(self):
    train_lib.train(scenario='one_way_gt', root_output_dir=self.root,
                    experiment_name='run', **dict(_TINY, total_rounds=1))
    with self.assertRaisesRegex(tff_mixed.CheckpointMismatchError,
                                'client_lr'):
      train_lib.train(scenario='one_way_gt', root_output_dir=self.root,
                      experiment_name='run', client_lr=0.1,
                      **dict(_TINY, total_rounds=2))

  def test_corrupt_latest_checkpoint_falls_back(self):
    result = train_lib.train(scenario='one_way_gt', root_output_dir=self.root,
                             experiment_name='run',
                             **dict(_TINY, total_rounds=2))
    latest = os.path.join(result.checkpoint_dir, 'program_state_2')
    shutil.rmtree(latest)
    os.makedirs(latest)  # An empty, unreadable "checkpoint".
    # The warning as the checkpoints module logs it, not as the root logger
    # receives it: whether absl's logger passes a warning on depends on what
    # earlier tests in this process did to logging (a CI run once saw none).
    with mock.patch.object(checkpoints_lib.logging, 'warning',
                           wraps=checkpoints_lib.logging.warning) as warning:
      resumed = train_lib.train(scenario='one_way_gt',
                                root_output_dir=self.root,
                                experiment_name='run', **_TINY)
    self.assertEqual(resumed.resumed_from, 1)
    warnings = [call.args[0] % call.args[1:] for call in warning.call_args_list]
    self.assertTrue(any('unreadable' in w for w in warnings), warnings)
    # Kept for inspection, out of the way of the rounds saved again.
    self.assertTrue(os.path.isdir(latest + '.unreadable'))

  def test_fallback_keeps_an_earlier_unreadable_checkpoint(self):
    directory = os.path.join(self.root, 'c')
    checkpointer = checkpoints_lib.Checkpointer(
        directory, fingerprint={'a': 1})
    checkpointer.check_or_write_fingerprint()
    checkpointer.save((np.arange(3, dtype=np.float32),), 1)
    # An earlier fallback already moved an unreadable round 2 aside; the
    # resumed run wrote round 2 again, and it is unreadable again.
    earlier = os.path.join(directory, 'program_state_2.unreadable')
    os.makedirs(earlier)
    with open(os.path.join(earlier, 'kept'), 'w') as f:
      f.write('evidence')
    os.makedirs(os.path.join(directory, 'program_state_2'))
    state, round_num = checkpointer.restore((np.zeros([3], np.float32),))
    self.assertEqual(round_num, 1)
    np.testing.assert_array_equal(state[0], [0.0, 1.0, 2.0])
    self.assertTrue(os.path.exists(os.path.join(earlier, 'kept')))
    self.assertTrue(os.path.isdir(
        os.path.join(directory, 'program_state_2.unreadable.2')))
    self.assertFalse(os.path.exists(
        os.path.join(directory, 'program_state_2')))

  def test_resumed_run_clears_a_save_cut_off_by_a_kill(self):
    # TFF saves into program_state_N_tempXXXX, then renames it: a kill -9
    # in between leaves the temp directory. The next run of the experiment
    # holds its lock, so no one else can be saving: it is litter.
    dirs = runner_lib.prepare_run(self.root, 'run', {'a': 1})
    checkpointer = checkpoints_lib.Checkpointer(
        dirs['checkpoints'], fingerprint={'a': 1})
    checkpointer.save((np.arange(3, dtype=np.float32),), 1)
    cut_off = os.path.join(dirs['checkpoints'], 'program_state_2_temp4821')
    os.makedirs(os.path.join(cut_off, 'variables'))
    runner_lib.prepare_run(self.root, 'run', {'a': 1})  # The resumed run.
    self.assertFalse(os.path.exists(cut_off), 'the cut-off save is still there')
    state, round_num = checkpointer.restore((np.zeros([3], np.float32),))
    self.assertEqual(round_num, 1)
    np.testing.assert_array_equal(state[0], [0.0, 1.0, 2.0])

  def test_incompatible_structure_is_refused(self):
    checkpointer = checkpoints_lib.Checkpointer(
        os.path.join(self.root, 'c'), fingerprint={'a': 1})
    checkpointer.check_or_write_fingerprint()
    checkpointer.save((np.zeros([2], np.float32),), 1)
    with self.assertRaisesRegex(tff_mixed.CheckpointMismatchError,
                                'do not match'):
      checkpointer.restore((np.zeros([3], np.float32),))


class DivergenceAndValidationTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root)

  def test_divergence_names_round_and_keeps_checkpoint(self):
    # Our processes already drop non-finite client updates, so the loss of a
    # mixed algorithm stays finite; the guard watches every released metric,
    # here an evaluation that blows up in round 3.
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        central_batch_size=4)
    datasets = tu.to_datasets(tu.client_arrays(), 2)
    rounds_seen = []

    def evaluation_fn(weights):
      del weights
      rounds_seen.append(len(rounds_seen) + 1)
      return {'loss': float('nan') if len(rounds_seen) == 3 else 1.0}

    with self.assertRaisesRegex(
        tff_mixed.DivergenceError,
        r'round 3: non-finite eval/loss\. Last good checkpoint: checkpoint 2'):
      tff_mixed.run_training(
          process, client_data_fn=lambda r: datasets, total_rounds=5,
          root_output_dir=self.root, experiment_name='run', hparams={},
          evaluation_fn=evaluation_fn, progress=False)
    versions = os.listdir(os.path.join(self.root, 'checkpoints', 'run'))
    self.assertIn('program_state_2', versions)
    self.assertNotIn('program_state_3', versions)
    rows = _read_csv(os.path.join(self.root, 'results', 'run', 'metrics.csv'))
    self.assertEqual([r['round_num'] for r in rows], ['1', '2'])

  def test_rounds_per_call_gives_the_same_run(self):
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        central_batch_size=4)
    datasets = tu.to_datasets(tu.client_arrays(sizes=(4, 6, 2)), 2)

    def evaluation_fn(weights):
      return {'weight_sum': float(sum(np.sum(w) for w in weights.trainable))}

    built = []
    build = multi_round.build_multi_round_next

    def counting_build(next_fn, rounds):
      built.append(rounds)
      return build(next_fn, rounds)

    runs = {}
    for rounds_per_call in (1, 3):
      root = os.path.join(self.root, str(rounds_per_call))
      with mock.patch.object(multi_round, 'build_multi_round_next',
                             counting_build):
        result = tff_mixed.run_training(
            process, client_data_fn=lambda r: datasets, total_rounds=9,
            root_output_dir=root, experiment_name='run', hparams={},
            rounds_per_checkpoint=4, evaluation_fn=evaluation_fn,
            rounds_per_evaluation=4, progress=False,
            rounds_per_call=rounds_per_call)
      runs[rounds_per_call] = (
          result, _read_csv(os.path.join(root, 'results', 'run',
                                         'metrics.csv')),
          sorted(os.listdir(os.path.join(root, 'checkpoints', 'run'))))
    # Calls stop where the state is needed (rounds 4 and 8 are checkpointed
    # and evaluated): rounds 1-3, 4, 5-7, 8, 9; one chained computation.
    self.assertEqual(built, [3])
    (one, one_rows, one_saved), (three, three_rows, three_saved) = (
        runs[1], runs[3])
    self.assertEqual(one_saved, three_saved)
    self.assertEqual([r['round_num'] for r in three_rows],
                     [str(r) for r in range(1, 10)])
    for a, b in zip(one_rows, three_rows):
      self.assertEqual(sorted(a), sorted(b))
      for key in a:
        if a[key]:
          np.testing.assert_allclose(float(b[key]), float(a[key]),
                                     rtol=1e-6, err_msg=key)
        else:
          self.assertEqual(b[key], '', key)
    for a, b in zip(_final_weights(one), _final_weights(three)):
      np.testing.assert_allclose(b, a, rtol=1e-6)

  def test_bad_arguments(self):
    process = tff.learning.algorithms.build_weighted_fed_avg(
        tu.linear_model(), client_optimizer_fn=tu.sgd(0.1))
    common = dict(client_data_fn=lambda r: [], root_output_dir=self.root,
                  experiment_name='x', hparams={})
    with self.assertRaisesRegex(ValueError, '`total_rounds`'):
      tff_mixed.run_training(process, total_rounds=0, **common)
    with self.assertRaisesRegex(ValueError, '`rounds_per_call`'):
      tff_mixed.run_training(process, total_rounds=1, rounds_per_call=0,
                             **common)
    with self.assertRaisesRegex(ValueError, '`rounds_per_checkpoint`'):
      tff_mixed.run_training(process, total_rounds=1, rounds_per_checkpoint=-1,
                             **common)
    with self.assertRaisesRegex(ValueError, '`experiment_name`'):
      tff_mixed.run_training(process, total_rounds=1,
                             **dict(common, experiment_name='a/b'))
    with self.assertRaisesRegex(TypeError, '`process`'):
      tff_mixed.run_training(object(), total_rounds=1, **common)
    unwritable = os.path.join(self.root, 'ro')
    os.makedirs(unwritable)
    os.chmod(unwritable, 0o500)
    if os.access(unwritable, os.W_OK):  # Root ignores permissions.
      blocker = os.path.join(self.root, 'file')
      with open(blocker, 'w') as f:
        f.write('')
      unwritable = os.path.join(blocker, 'sub')
    with self.assertRaisesRegex(ValueError, 'not writable'):
      tff_mixed.run_training(process, total_rounds=1,
                             **dict(common, root_output_dir=unwritable))
    with self.assertRaisesRegex(ValueError, '`clients_per_round`'):
      train_lib.train(scenario='fl_only', root_output_dir=self.root,
                      experiment_name='run', **dict(_TINY,
                                                    clients_per_round=7))
    with self.assertRaisesRegex(ValueError, '`scenario`'):
      train_lib.train(scenario='fedprox', root_output_dir=self.root,
                      experiment_name='run', **_TINY)
    with self.assertRaisesRegex(ValueError, '`dp_clip_norm`'):
      train_lib.train(scenario='fl_only', root_output_dir=self.root,
                      experiment_name='run', dp_clip_norm=1.0, **_TINY)


class RemoteTrainingTest(absltest.TestCase):

  def test_training_on_two_loopback_workers_equals_local(self):
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root)
    tiny = dict(_TINY, total_rounds=2)
    local = train_lib.train(scenario='two_way_gt',
                            root_output_dir=os.path.join(root, 'local'),
                            experiment_name='run', **tiny)
    with remote_lib.local_workers(2) as workers:
      remote = train_lib.train(
          scenario='two_way_gt', root_output_dir=os.path.join(root, 'remote'),
          experiment_name='run',
          worker_addresses=[w.address for w in workers], **tiny)
    for got, want in zip(_final_weights(remote), _final_weights(local)):
      np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    local_rows = _read_csv(local.metrics_path)
    remote_rows = _read_csv(remote.metrics_path)
    self.assertEqual([r['round_num'] for r in remote_rows], ['1', '2'])
    for a, b in zip(local_rows, remote_rows):
      for key in a:
        if a[key]:
          self.assertAlmostEqual(float(a[key]), float(b[key]), places=5,
                                 msg=key)
    for worker in workers:
      self.assertFalse(worker.running())

  def test_bad_worker_address_fails_fast(self):
    with self.assertRaisesRegex(ValueError, 'worker_addresses'):
      train_lib.train(scenario='fl_only', root_output_dir=tempfile.mkdtemp(),
                      experiment_name='run', worker_addresses=['nohost'],
                      **_TINY)


class DifferentialPrivacyTest(absltest.TestCase):

  def test_dp_aggregator_composes_with_mixed_algorithms(self):
    datasets = tu.to_datasets(tu.client_arrays(), 2)
    objective = tff_mixed.central_data_objective(tu.central_arrays())
    results = {}
    for noise in (0.5, 2.0):
      aggregator = train_lib.build_dp_aggregator(noise, 1.0, 3)
      process = tff_mixed.build_two_way_gradient_transfer(
          tu.linear_model(), objective, tu.sgd(0.1), tu.sgd(0.1),
          central_batch_size=4, client_steps=2, model_aggregator=aggregator)
      output = process.next(process.initialize(), datasets)
      self.assertIn('dp', output.metrics['aggregator'])
      results[noise] = np.concatenate(
          [w.ravel() for w in tu.trainable(process, output.state)])
    self.assertGreater(np.abs(results[0.5] - results[2.0]).max(), 1e-4)
    adaptive = train_lib.build_dp_aggregator(1.0, 0.0, 100)
    self.assertIsInstance(adaptive,
                          tff.aggregators.UnweightedAggregationFactory)
    self.assertIsNone(train_lib.build_dp_aggregator(0.0, 0.0, 3))


if __name__ == '__main__':
  absltest.main()
