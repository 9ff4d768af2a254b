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
second. `PreloadedPython` starts one interpreter that imports both once
(with `tff_mixed` and matplotlib's pyplot, about a second more per run that
draws a figure), then forks a new process for each run, which runs the
module as `__main__` with `runpy` (what `python -m` does), or a script as
`python -c` does, and exits with its status. Each run is still a process of
its own: its own pid, flags, exit status, stderr, signals, atexit hooks and
TFF workers; several can run at once (`start`).

What differs from a new interpreter, and how it is made not to matter:

*   TensorFlow has loaded before the binary's `experiments.tf_log_level`
    runs, so its C++ log level is the one that module sets by default (it
    runs here first, without `--verbose`); `--verbose` cannot turn it on in
    such a run.
*   TFF's import starts its execution context on a thread of its own, which a
    fork does not copy: each run installs a new default context first, as
    TFF's import does.
*   SIGINT raises `KeyboardInterrupt` in each run, as in an interpreter
    started with SIGINT's default action (the interpreter here may have been
    started with it ignored, by a job started with `&`).
"""

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The interpreter's loop: one JSON request per stdin line, `{"module",
# "code", "args", "cwd", "stdout", "stderr", "env"}` (module or code; stdout
# may be null: /dev/null; env is added to the environment). For each it
# answers `start <pid>` at once and `exit <pid> <status>` when the run ends,
# from a thread that waits for it, so runs overlap; answers are whole lines
# written with one `os.write` (no lock a fork could copy held).
_SERVER = r'''
import json, os, runpy, signal, sys, threading, traceback
from experiments import tf_log_level  # The binaries' default, before TF.
import tensorflow
import tensorflow_federated as tff
import tff_mixed  # Side-effect free (tests/import_side_effects_test.py).
from experiments.common import plots
plots.pyplot()  # What the binaries import at their first figure.

ANSWERS = os.dup(1)


def answer(line):
  os.write(ANSWERS, (line + '\n').encode())


def run(request):
  os.chdir(request['cwd'])
  with open(os.devnull, 'rb') as null_in:
    os.dup2(null_in.fileno(), 0)
  with open(request['stdout'] or os.devnull, 'wb') as out:
    os.dup2(out.fileno(), 1)
  with open(request['stderr'], 'wb') as err:
    os.dup2(err.fileno(), 2)
  os.environ.update(request['env'])
  tff.backends.native.set_sync_local_cpp_execution_context()
  try:
    if request.get('code') is not None:
      sys.argv = ['-c', *request['args']]
      exec(compile(request['code'], '<string>', 'exec'),
           {'__name__': '__main__', '__builtins__': __builtins__})
    else:
      sys.argv = [request['module'], *request['args']]
      runpy.run_module(request['module'], run_name='__main__',
                       alter_sys=True)
    code = 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      code = e.code or 0
    else:
      print(e.code, file=sys.stderr)
      code = 1
  except KeyboardInterrupt:  # As the interpreter: killed by SIGINT.
    traceback.print_exc()
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    code = 1
  except BaseException:  # What the interpreter prints, then status 1.
    traceback.print_exc()
    code = 1
  import atexit
  atexit._run_exitfuncs()
  sys.stdout.flush()
  sys.stderr.flush()
  return code


def wait(pid):
  _, status = os.waitpid(pid, 0)
  answer(f'exit {pid} {os.waitstatus_to_exitcode(status)}')


waiters = []
for line in sys.stdin:
  request = json.loads(line)
  pid = os.fork()
  if pid == 0:
    os.close(ANSWERS)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os._exit(run(request))
  answer(f'start {pid}')
  waiters.append(threading.Thread(target=wait, args=(pid,)))
  waiters[-1].start()
for waiter in waiters:
  waiter.join()
os._exit(0)
'''


class Run:
  """A run started by `PreloadedPython.start`: a `subprocess.Popen`'s
  `pid`, `returncode`, `poll`, `wait`, `send_signal` and `kill`."""

  def __init__(self, interpreter: 'PreloadedPython', pid: int):
    self._interpreter = interpreter
    self.pid = pid
    self.returncode: Optional[int] = None

  def poll(self) -> Optional[int]:
    if self.returncode is None:
      self.returncode = self._interpreter.exit_status(self.pid, timeout=0)
    return self.returncode

  def wait(self, timeout: Optional[float] = None) -> int:
    """Its exit status; raises `subprocess.TimeoutExpired` after `timeout`
    seconds (None: no limit)."""
    if self.returncode is None:
      self.returncode = self._interpreter.exit_status(self.pid, timeout)
      if self.returncode is None:
        raise subprocess.TimeoutExpired(f'pid {self.pid}', timeout)
    return self.returncode

  def send_signal(self, sig: int) -> None:
    if self.poll() is None:
      try:
        os.kill(self.pid, sig)
      except ProcessLookupError:
        pass

  def kill(self) -> None:
    self.send_signal(signal.SIGKILL)


class PreloadedPython:
  """One interpreter with TensorFlow and TFF loaded that runs binaries.

  `run(module, args, cwd, stderr_path)` is `python -m module args` with
  stdin on /dev/null, stdout into `stdout_path` (or /dev/null) and stderr
  into `stderr_path`, in a process forked for it; `start` starts such a run
  (or a `python -c` script) and returns at once; `close()` ends the
  interpreter.
  """

  def __init__(self, log_path: str):
    """Starts the interpreter; its own stderr goes to `log_path`."""
    with open(log_path, 'w') as log:
      self._process = subprocess.Popen(
          [sys.executable, '-c', _SERVER], cwd=_REPO,
          env=dict(os.environ, PYTHONPATH=_REPO), stdin=subprocess.PIPE,
          stdout=subprocess.PIPE, stderr=log, text=True)
    self._exits: dict[int, int] = {}

  def _answer(self, timeout: Optional[float]) -> Optional[list[str]]:
    """The next answer's words, or None after `timeout` seconds."""
    ready, _, _ = select.select([self._process.stdout], [], [], timeout)
    if not ready:
      return None
    line = self._process.stdout.readline()
    if not line:
      raise RuntimeError('the preloaded interpreter ended')
    return line.split()

  def exit_status(self, pid: int, timeout: Optional[float]) -> Optional[int]:
    """The exit status of run `pid`, waiting up to `timeout` seconds (None:
    no limit) for it to end; None if it has not."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while pid not in self._exits:
      left = None if deadline is None else max(0., deadline - time.monotonic())
      words = self._answer(left)
      if words is None:
        return None
      if words[0] == 'exit':
        self._exits[int(words[1])] = int(words[2])
    return self._exits.pop(pid)

  def start(self, module: Optional[str], args: list[str], cwd: str,
            stderr_path: str, stdout_path: Optional[str] = None,
            env: Optional[dict[str, str]] = None,
            code: Optional[str] = None, timeout: float = 300) -> Run:
    """Starts `module` as `__main__` (or `code`, as `python -c` runs it)
    with `args`; returns the running `Run`.

    Args:
      module: The module, as `python -m` takes it, or None with `code`.
      args: Its command line arguments.
      cwd: The directory it runs in.
      stderr_path: The file its stderr goes to.
      stdout_path: The file its stdout goes to, or `None`: /dev/null.
      env: Variables set in its environment, over this process's.
      code: A script, as `python -c` takes it (instead of `module`).
      timeout: Seconds to wait for the interpreter to start it (the first
        start includes TF's import).

    Raises:
      TimeoutError: If the interpreter does not answer.
    """
    self._process.stdin.write(json.dumps(dict(
        module=module, code=code, args=list(args), cwd=cwd,
        stdout=stdout_path, stderr=stderr_path, env=env or {})) + '\n')
    self._process.stdin.flush()
    deadline = time.monotonic() + timeout
    while True:
      words = self._answer(max(0., deadline - time.monotonic()))
      if words is None:
        raise TimeoutError('the preloaded interpreter did not start '
                           f'{module or "a script"}')
      if words[0] == 'start':
        return Run(self, int(words[1]))
      self._exits[int(words[1])] = int(words[2])

  def run(self, module: str, args: list[str], cwd: str, stderr_path: str,
          stdout_path: Optional[str] = None,
          env: Optional[dict[str, str]] = None, timeout: float = 300) -> int:
    """Runs `module` as `__main__` with `args`; returns its exit status.

    Arguments as `start`'s.

    Raises:
      TimeoutError: If the run takes longer than `timeout` seconds (it is
        killed) or the interpreter does not answer.
    """
    started = self.start(module, args, cwd, stderr_path, stdout_path, env,
                         timeout=timeout)
    try:
      return started.wait(timeout)
    except subprocess.TimeoutExpired:
      started.kill()
      started.wait(10)
      raise TimeoutError(f'{module} {args} ran over {timeout} s') from None

  def close(self) -> None:
    self._process.stdin.close()
    try:
      self._process.wait(30)
    except subprocess.TimeoutExpired:
      self._process.kill()
      self._process.wait()
    self._process.stdout.close()


_shared = None


def shared() -> PreloadedPython:
  """This process's `PreloadedPython`, started at the first call.

  It ends when this process does (stdin's end stops its loop).
  """
  global _shared
  if _shared is None:
    log_dir = tempfile.mkdtemp()
    _shared = PreloadedPython(os.path.join(log_dir, 'preloaded.txt'))
    atexit.register(_shared.close)
    atexit.register(shutil.rmtree, log_dir, ignore_errors=True)
  return _shared


def run_module(module: str, *args: str, timeout: float = 900,
               env: Optional[dict[str, str]] = None
              ) -> subprocess.CompletedProcess:
  """`subprocess.run([python, '-m', module, *args], capture_output=True)`.

  The same result (exit status, stdout and stderr as text), from the
  repository root, by `shared()`'s forked process; the output goes through
  files, so a TFF worker left behind cannot hold a pipe open.
  """
  with tempfile.TemporaryDirectory() as d:
    out, err = os.path.join(d, 'stdout.txt'), os.path.join(d, 'stderr.txt')
    returncode = shared().run(module, list(args), cwd=_REPO, stderr_path=err,
                              stdout_path=out, env=env, timeout=timeout)
    with open(out) as stdout, open(err) as stderr:
      return subprocess.CompletedProcess(
          [sys.executable, '-m', module, *args], returncode, stdout.read(),
          stderr.read())
