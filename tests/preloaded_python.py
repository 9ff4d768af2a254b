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
"""Runs binaries as `python -m` does, from an interpreter that has TF loaded.

Most of a binary's run on a bad input is the import of TensorFlow and TFF
(5-15 s of CPU on the CI machines); its checks then fail in well under a
second. `PreloadedPython` starts one interpreter that imports both once,
then forks a new process for each run, which runs the module as `__main__`
with `runpy` (what `python -m` does) and exits with its status. Each run is
still a process of its own: its own flags, exit status, stderr, atexit hooks
and TFF workers.

What differs from a new interpreter, and how it is made not to matter:

*   TensorFlow has loaded before the binary's `experiments.tf_log_level`
    runs, so its C++ log level is the one that module sets by default
    (`TF_CPP_MIN_LOG_LEVEL=3`, set before the import here); `--verbose`
    cannot turn it on in such a run.
*   TFF's import starts its execution context on a thread of its own, which a
    fork does not copy: each run installs a new default context first, as
    TFF's import does.
"""

import json
import os
import select
import signal
import subprocess
import sys
from typing import Optional

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The interpreter's loop: one JSON request per stdin line, `{"module",
# "args", "cwd", "stderr"}`; for each it answers the child's pid, then its
# exit status, one line each.
_SERVER = r'''
import atexit, json, os, runpy, signal, sys, traceback
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
import tensorflow
import tensorflow_federated as tff


def run(request):
  os.chdir(request['cwd'])
  with open(os.devnull, 'rb') as null_in, open(os.devnull, 'wb') as null_out:
    os.dup2(null_in.fileno(), 0)
    os.dup2(null_out.fileno(), 1)
  with open(request['stderr'], 'wb') as err:
    os.dup2(err.fileno(), 2)
  tff.backends.native.set_sync_local_cpp_execution_context()
  sys.argv = [request['module'], *request['args']]
  try:
    runpy.run_module(request['module'], run_name='__main__', alter_sys=True)
    code = 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      code = e.code or 0
    else:
      print(e.code, file=sys.stderr)
      code = 1
  except BaseException:  # What the interpreter prints, then status 1.
    traceback.print_exc()
    code = 1
  atexit._run_exitfuncs()
  sys.stdout.flush()
  sys.stderr.flush()
  return code


answers = os.fdopen(os.dup(1), 'w')
for line in sys.stdin:
  request = json.loads(line)
  pid = os.fork()
  if pid == 0:
    answers.close()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os._exit(run(request))
  print(pid, file=answers, flush=True)
  _, status = os.waitpid(pid, 0)
  print(os.waitstatus_to_exitcode(status), file=answers, flush=True)
os._exit(0)
'''


class PreloadedPython:
  """One interpreter with TensorFlow and TFF loaded that runs binaries.

  `run(module, args, cwd, stderr_path)` is `python -m module args` with
  stdin and stdout on /dev/null and stderr into `stderr_path`, in a process
  forked for it; `close()` ends the interpreter.
  """

  def __init__(self, log_path: str):
    """Starts the interpreter; its own stderr goes to `log_path`."""
    with open(log_path, 'w') as log:
      self._process = subprocess.Popen(
          [sys.executable, '-c', _SERVER], cwd=_REPO,
          env=dict(os.environ, PYTHONPATH=_REPO), stdin=subprocess.PIPE,
          stdout=subprocess.PIPE, stderr=log, text=True)

  def _answer(self, timeout: float) -> Optional[str]:
    ready, _, _ = select.select([self._process.stdout], [], [], timeout)
    return self._process.stdout.readline().strip() if ready else None

  def run(self, module: str, args: list[str], cwd: str, stderr_path: str,
          timeout: float = 300) -> int:
    """Runs `module` as `__main__` with `args`; returns its exit status.

    Raises:
      TimeoutError: If the run takes longer than `timeout` seconds (it is
        killed) or the interpreter does not answer.
    """
    self._process.stdin.write(json.dumps(dict(
        module=module, args=args, cwd=cwd, stderr=stderr_path)) + '\n')
    self._process.stdin.flush()
    pid = self._answer(timeout)  # The first start includes TF's import.
    if not pid:
      raise TimeoutError(f'the preloaded interpreter did not start {module}')
    status = self._answer(timeout)
    if status is None:
      os.kill(int(pid), signal.SIGKILL)
      self._answer(10)
      raise TimeoutError(f'{module} {args} ran over {timeout} s')
    return int(status)

  def close(self) -> None:
    self._process.stdin.close()
    try:
      self._process.wait(30)
    except subprocess.TimeoutExpired:
      self._process.kill()
      self._process.wait()
    self._process.stdout.close()
