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
"""Starts and stops TFF `worker_binary` processes on this machine.

TFF 0.87 ships its C++ runtime as a gRPC service, `worker_binary`, inside the
wheel (`tensorflow_federated/data/`). `start_local_workers` / `local_workers`
start `worker_binary --port=P` processes on 127.0.0.1 for tests and demos;
`tff_mixed.remote.set_remote_execution_context` then runs computations on
them by address. Their names are importable from `tff_mixed.remote` as well.

Besides `remote.py`, this is the one module that knows where TFF keeps its
worker binary, which is not a stable API (`tests/remote_test.py` checks it).
"""

from collections.abc import Iterator, Sequence
import contextlib
import dataclasses
import os
import subprocess
import threading
import time
from typing import Optional

import grpc
import portpicker
import tensorflow_federated as tff

from tff_mixed import runtime

_LOCALHOST = '127.0.0.1'


def worker_binary_path() -> str:
  """Returns the path of the `worker_binary` shipped in the TFF wheel."""
  # TFF 0.87 keeps it in `tensorflow_federated/data/` (see
  # `local_cpp_executor_factory` in executor_stacks/executor_factory.py).
  return os.path.join(os.path.dirname(tff.__file__), 'data', 'worker_binary')


def check_positive_number(value, name: str) -> None:
  """Raises ValueError naming `name` unless `value` is a positive number.

  Also checks `tff_mixed.remote`'s timeouts.
  """
  if (isinstance(value, bool) or not isinstance(value, (int, float))
      or not value > 0):
    raise ValueError(f'`{name}` must be a positive number; got {value!r}.')


@dataclasses.dataclass(frozen=True)
class WorkerHandle:
  """A `worker_binary` process started by `start_local_workers`."""

  address: str
  port: int
  process: subprocess.Popen
  log_path: Optional[str] = None

  @property
  def pid(self) -> int:
    return self.process.pid

  def running(self) -> bool:
    return self.process.poll() is None

  def stop(self, timeout_s: float = 5.0) -> None:
    """Ends the worker (SIGTERM, then SIGKILL) and reaps it; idempotent."""
    if self.process.poll() is not None:
      return
    self.process.terminate()
    try:
      self.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
      self.process.kill()
      self.process.wait()


def stop_workers(workers: Sequence[WorkerHandle]) -> None:
  """Stops every worker in `workers` (by PID)."""
  for worker in workers:
    worker.stop()


def _log_tail(path: Optional[str], limit: int = 2000) -> str:
  if path is None:
    return ''
  try:
    with open(path, errors='replace') as f:
      return '\nWorker log tail:\n' + f.read()[-limit:]
  except OSError:
    return ''


def start_local_workers(
    num_workers: int,
    *,
    max_concurrent_computation_calls: int = -1,
    log_dir: Optional[str] = None,
    ready_timeout_s: float = 60.0,
) -> list[WorkerHandle]:
  """Starts `num_workers` TFF workers on 127.0.0.1 and waits until they answer.

  Each is `worker_binary --port=P` on a free port. Their stdout and stderr go
  to `log_dir/worker_<port>.log`, or to /dev/null, never to the caller's
  streams (so `python x.py | tail` cannot hang on them). Stop them with
  `stop_workers` or `WorkerHandle.stop`, or use `local_workers`; any left
  running at interpreter exit are killed by tff_mixed's exit hook
  (`tff_mixed/runtime.py`), as they are children of this process. Started
  from the main thread on Linux, they also die if this process is killed.

  Note: `worker_binary` has no flag for its bind address; it listens on every
  interface (`[::]:P`). Clients here only ever dial 127.0.0.1.

  Args:
    num_workers: How many workers to start (at least 1).
    max_concurrent_computation_calls: Passed to each worker; non-positive means
      no limit.
    log_dir: Optional existing directory for the workers' logs.
    ready_timeout_s: Seconds to wait for each worker to answer.

  Returns:
    One `WorkerHandle` per worker; `handle.address` is its `"127.0.0.1:P"`.

  Raises:
    ValueError: If an argument is malformed.
    RuntimeError: If the worker binary is missing, or a worker exits or does
      not answer in time (all workers started are stopped first).
  """
  if (isinstance(num_workers, bool) or not isinstance(num_workers, int)
      or num_workers < 1):
    raise ValueError(
        f'`num_workers` must be a positive int; got {num_workers!r}.')
  if (isinstance(max_concurrent_computation_calls, bool)
      or not isinstance(max_concurrent_computation_calls, int)):
    raise ValueError('`max_concurrent_computation_calls` must be an int; got '
                     f'{max_concurrent_computation_calls!r}.')
  if log_dir is not None and not os.path.isdir(log_dir):
    raise ValueError(
        f'`log_dir` must be an existing directory; got {log_dir!r}.')
  check_positive_number(ready_timeout_s, 'ready_timeout_s')
  binary = worker_binary_path()
  if not os.path.isfile(binary):
    raise RuntimeError(
        f"Expected TFF's worker binary at {binary}; is TFF 0.87 installed?")

  # Linux ends a worker when the thread that started it ends: only the main
  # thread lives as long as this process. Either way the worker gets the
  # default SIGINT back (`runtime.worker_command`).
  die_with_parent = threading.current_thread() is threading.main_thread()
  workers = []
  try:
    for _ in range(num_workers):
      port = portpicker.pick_unused_port()
      log_path = (None if log_dir is None else
                  os.path.join(log_dir, f'worker_{port}.log'))
      with contextlib.ExitStack() as stack:
        if log_path is None:
          out = subprocess.DEVNULL
        else:
          out = stack.enter_context(open(log_path, 'wb'))
        process = subprocess.Popen(
            runtime.worker_command(
                [binary, f'--port={port}',
                 f'--max_concurrent_computation_calls='
                 f'{max_concurrent_computation_calls}'],
                die_with_parent=die_with_parent),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            close_fds=True)
      workers.append(
          WorkerHandle(f'{_LOCALHOST}:{port}', port, process, log_path))
    for worker in workers:
      _wait_for_local_worker(worker, ready_timeout_s)
  except BaseException:
    stop_workers(workers)
    raise
  return workers


def _wait_for_local_worker(worker: WorkerHandle, timeout_s: float) -> None:
  """Waits until `worker` answers; raises RuntimeError if it exits or stalls."""
  deadline = time.monotonic() + timeout_s
  with grpc.insecure_channel(worker.address) as channel:
    ready = grpc.channel_ready_future(channel)
    while True:
      try:
        ready.result(timeout=0.2)
        return
      except grpc.FutureTimeoutError:
        pass
      code = worker.process.poll()
      if code is not None:
        raise RuntimeError(
            f'TFF worker on port {worker.port} exited with code {code} before '
            f'serving.{_log_tail(worker.log_path)}')
      if time.monotonic() > deadline:
        raise RuntimeError(
            f'TFF worker on port {worker.port} (pid {worker.pid}) did not '
            f'answer within {timeout_s:g} s.{_log_tail(worker.log_path)}')


@contextlib.contextmanager
def local_workers(num_workers: int, **kwargs) -> Iterator[list[WorkerHandle]]:
  """`start_local_workers` as a context manager that stops them on exit."""
  workers = start_local_workers(num_workers, **kwargs)
  try:
    yield workers
  finally:
    stop_workers(workers)
