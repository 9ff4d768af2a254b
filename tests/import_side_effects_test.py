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
"""Importing tff_mixed has no side effects; `register_worker_cleanup` has.

In a fresh interpreter that has already imported TFF, `import tff_mixed` must
leave the interpreter's exit hooks, the `subprocess` module, TFF's modules
(every global of every TFF module loaded before) and TFF's execution context
as they were. The explicit call then registers one exit hook and hands TFF's
`executor_factory` its worker-starting `subprocess` (tff_mixed/runtime.py);
a binary's `cli.run` and a run's `prepare_run` make that call.
"""

import json
import os
import subprocess
import sys
import textwrap

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = textwrap.dedent("""
    import atexit, json, subprocess, sys, types
    import tensorflow_federated as tff
    from tensorflow_federated.python.core.impl.executor_stacks import (
        executor_factory)

    def snapshot():
      return {name: dict(vars(module)) for name, module in sys.modules.items()
              if name.split('.')[0] in ('tensorflow_federated', 'subprocess',
                                        'atexit', 'signal')
              and module is not None}

    def changed(before):
      # Globals of modules loaded before that differ now. Importing a new
      # submodule binds it in its package: that is no change of ours.
      out = []
      for name, old in before.items():
        new = vars(sys.modules[name])
        for key in set(old) | set(new):
          if key in old and key in new and old[key] is new[key]:
            continue
          if key not in old and isinstance(new[key], types.ModuleType):
            continue
          out.append(f'{name}.{key}')
      return sorted(out)

    context = tff.framework.get_context_stack().current
    hooks = atexit._ncallbacks()
    before = snapshot()
    import tff_mixed
    report = dict(
        hooks_added=atexit._ncallbacks() - hooks,
        changed=changed(before),
        subprocess_is_real=executor_factory.subprocess is subprocess,
        same_context=tff.framework.get_context_stack().current is context,
        sys_subprocess_is_real=sys.modules['subprocess'] is subprocess,
        all=getattr(tff_mixed, '__all__', None),
        all_missing=[n for n in getattr(tff_mixed, '__all__', ())
                     if not hasattr(tff_mixed, n)],
        version=tff_mixed.__version__)
    from tff_mixed import runtime
    runtime.register_worker_cleanup()
    runtime.register_worker_cleanup()  # Idempotent.
    report.update(
        hooks_after_call=atexit._ncallbacks() - hooks,
        subprocess_after_call=executor_factory.subprocess is subprocess,
        changed_after_call=changed(before),
        wait_after_call=executor_factory._LOCALHOST_SERVER_WAIT_TIME_SEC,
        options_after_call=executor_factory._GRPC_CHANNEL_OPTIONS)
    print('REPORT', json.dumps(report), flush=True)

    # The callers that own a process make the call: a run's `prepare_run`
    # (which `run_training` starts with) and a binary's `cli.run`. Both go
    # through `runtime.register_worker_cleanup`, counted here, in this same
    # interpreter (one TensorFlow import serves every check of this file).
    import tempfile
    from experiments.common import cli
    from tff_mixed.training import runner
    calls = []
    real = runtime.register_worker_cleanup
    def counted():
      calls.append(1)
      real()
    runtime.register_worker_cleanup = counted
    runner.prepare_run(tempfile.mkdtemp(), 'run', {})
    print('CALLED prepare_run', len(calls), flush=True)
    def report_cli(argv):
      print('CALLED cli', len(calls), flush=True)
    sys.argv = ['binary']
    cli.run(report_cli)
""")

def _run(script, *args):
  result = subprocess.run(
      [sys.executable, '-c', script, *args], capture_output=True, text=True,
      timeout=300, env=dict(os.environ, PYTHONPATH=_REPO), cwd=_REPO,
      stdin=subprocess.DEVNULL, check=False)
  if result.returncode:
    raise AssertionError(f'the script failed: {result.stderr[-3000:]}')
  return result.stdout


class ImportSideEffectsTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.output = _run(_SCRIPT)
    lines = [l for l in cls.output.splitlines() if l.startswith('REPORT ')]
    cls.report = json.loads(lines[0][len('REPORT '):])

  def test_import_adds_no_exit_hook(self):
    self.assertEqual(self.report['hooks_added'], 0)

  def test_import_leaves_tff_and_subprocess_untouched(self):
    self.assertTrue(self.report['subprocess_is_real'],
                    "importing tff_mixed replaced executor_factory's subprocess")
    self.assertTrue(self.report['sys_subprocess_is_real'])
    self.assertEqual(self.report['changed'], [])
    self.assertTrue(self.report['same_context'],
                    "importing tff_mixed changed TFF's execution context")

  def test_the_explicit_call_registers_once(self):
    self.assertEqual(self.report['hooks_after_call'], 1)
    self.assertFalse(self.report['subprocess_after_call'])
    module = 'tensorflow_federated.python.core.impl.executor_stacks.'
    self.assertEqual(
        self.report['changed_after_call'],
        [f'{module}executor_factory.{name}' for name in (
            '_GRPC_CHANNEL_OPTIONS', '_LOCALHOST_SERVER_WAIT_TIME_SEC',
            'subprocess', 'time')])

  def test_the_explicit_call_polls_a_new_worker(self):
    # TFF's fixed 1 s wait becomes 10 ms polls, and gRPC's first reconnect
    # backoff to the local worker 20 ms (runtime._make_tff_workers_start_fast),
    # once however often the call is made; TFF's own options are kept, and
    # gRPC's connect timeout and longest backoff stay its defaults.
    self.assertEqual(self.report['wait_after_call'], 0.01)
    options = [tuple(o) for o in self.report['options_after_call']]
    names = [name for name, _ in options]
    self.assertLen(names, len(set(names)))
    self.assertIn(('grpc.initial_reconnect_backoff_ms', 20), options)
    self.assertNotIn('grpc.min_reconnect_backoff_ms', names)
    self.assertNotIn('grpc.max_reconnect_backoff_ms', names)
    self.assertIn('grpc.max_receive_message_length', names)

  def test_binaries_and_runs_make_the_call(self):
    # One more call each: prepare_run's, then cli.run's.
    self.assertIn('CALLED prepare_run 1', self.output)
    self.assertIn('CALLED cli 2', self.output)

  def test_public_api(self):
    self.assertIsNotNone(self.report['all'], 'tff_mixed has no __all__')
    self.assertIn('register_worker_cleanup', self.report['all'])
    self.assertEqual(self.report['all_missing'], [])
    self.assertRegex(self.report['version'], r'^\d+\.\d+\.\d+')

if __name__ == '__main__':
  absltest.main()
