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
"""Runs TFF computations on TFF's own remote workers, chosen by address.

TFF 0.87 no longer exports a remote execution context, but its local C++
runtime is itself a gRPC service: `set_sync_local_cpp_execution_context`
starts the `worker_binary` shipped in the TFF wheel on a free port and talks
to it through a `RemoteExecutor` over a gRPC stub
(`tensorflow_federated/python/core/impl/executor_stacks/executor_factory.py`).
This module builds the same context for workers at addresses we are given:

* one address: a `tff.framework.SyncExecutionContext` over a
  `tff.framework.RemoteExecutor` talking to that worker;
* several addresses (or `num_subrounds`): TFF's mergeable-computation context
  (`tff.backends.native.create_mergeable_comp_execution_context`) over one
  `tff.framework.AsyncExecutionContext` per worker. Each computation is
  compiled to `MergeableCompForm` (up to the aggregation, merge, after the
  aggregation), the round's CLIENTS-placed arguments are split into
  contiguous slices, one slice per worker, and the partial aggregates are
  merged with the aggregation's own merge function.

`restore_local_execution_context` puts TFF's local runtime back.
`remote_execution` installs the workers' context for a `with` block and puts
the local runtime back after it (what a binary's `--worker_addresses` does);
`check_worker_addresses` checks the addresses' form without connecting.
`start_local_workers` / `local_workers` (from `worker_processes`, importable
here as well) start `worker_binary --port=P` processes on 127.0.0.1 for tests
and demos.

This is the ONE module of tff_mixed that touches TFF's execution internals
(`tff.framework` executors and contexts, the compiler and argument transforms
the native backend uses); `worker_processes` knows where the TFF wheel keeps
`worker_binary`. They are not a stable API: when TFF is upgraded, these are the
places that break, and `tests/remote_test.py` says so.

Limits (TFF's, not ours): a computation runs across several workers only if it
has at most one "layer" of aggregation (parallel aggregations are fine, an
aggregation that depends on another is not), which holds for every
`LearningProcess.next` in this library and in `tff.learning`. A worker that
dies while a computation is running is retried by TFF; the readiness check
below turns that into a `ConnectionError` after `connect_timeout_s`.
"""

from collections.abc import Iterator, Sequence
import contextlib
import re
import threading
import time
from typing import Optional
import weakref

import grpc
import tensorflow_federated as tff

from tff_mixed import worker_processes

# Local workers (re-exported: `remote.local_workers` etc. keep working).
WorkerHandle = worker_processes.WorkerHandle
worker_binary_path = worker_processes.worker_binary_path
start_local_workers = worker_processes.start_local_workers
stop_workers = worker_processes.stop_workers
local_workers = worker_processes.local_workers

# As TFF's own local runtime (executor_factory.py): allow 2 GB messages.
_GRPC_MAX_MESSAGE_LENGTH_BYTES = 2 * 1000 * 1000 * 1000
_GRPC_CHANNEL_OPTIONS = (
    ('grpc.max_message_length', _GRPC_MAX_MESSAGE_LENGTH_BYTES),
    ('grpc.max_receive_message_length', _GRPC_MAX_MESSAGE_LENGTH_BYTES),
    ('grpc.max_send_message_length', _GRPC_MAX_MESSAGE_LENGTH_BYTES),
)

# `host:port` with a DNS name or IPv4 host, or `[ipv6]:port`.
_ADDRESS_RE = re.compile(
    r'^(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]'
    r'|(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?))'
    r':(?P<port>[0-9]{1,5})$')

_DEFAULT_CONNECT_TIMEOUT_S = 10.0


# ---------------------------------------------------------------------------
# Argument validation.
# ---------------------------------------------------------------------------


def check_worker_addresses(worker_addresses: Sequence[str]) -> list[str]:
  """Checks the form of `worker_addresses` without connecting to anything.

  The check `set_remote_execution_context` makes first; a program can make it
  before loading data (a flag validator, say) so a typo fails in seconds.

  Args:
    worker_addresses: Non-empty sequence of distinct `"host:port"` strings.

  Returns:
    The addresses as a list.

  Raises:
    ValueError: Naming the malformed argument or element.
  """
  if isinstance(worker_addresses, (str, bytes)):
    raise ValueError(
        '`worker_addresses` must be a sequence of "host:port" strings, not a '
        f'single string; got {worker_addresses!r}. Wrap it in a list.')
  try:
    addresses = list(worker_addresses)
  except TypeError:
    raise ValueError(
        '`worker_addresses` must be a sequence of "host:port" strings; got '
        f'{type(worker_addresses).__name__}.') from None
  if not addresses:
    raise ValueError('`worker_addresses` must name at least one TFF worker '
                     '("host:port"); got an empty sequence.')
  for i, address in enumerate(addresses):
    if not isinstance(address, str):
      raise ValueError(
          f'`worker_addresses[{i}]` must be a "host:port" string; got '
          f'{address!r} of type {type(address).__name__}.')
    match = _ADDRESS_RE.match(address)
    if match is None or not 1 <= int(match.group('port')) <= 65535:
      raise ValueError(
          f'`worker_addresses[{i}]` is not a valid "host:port" address (a '
          'host name, IPv4 address or [IPv6] address, then a port in 1..65535'
          f', no scheme or spaces); got {address!r}.')
  seen = {}
  for i, address in enumerate(addresses):
    if address in seen:
      raise ValueError(
          f'`worker_addresses` lists {address!r} twice (indices {seen[address]}'
          f' and {i}); list each worker once.')
    seen[address] = i
  return addresses


def _check_non_negative_int(value, name: str) -> None:
  if isinstance(value, bool) or not isinstance(value, int) or value < 0:
    raise ValueError(f'`{name}` must be a non-negative int; got {value!r}.')


# ---------------------------------------------------------------------------
# Remote execution contexts.
# ---------------------------------------------------------------------------


# Seconds between dropping a channel's connectivity subscriptions and closing
# it. grpc's polling thread may still be in one last connectivity check (it
# wakes every 0.2 s); closing under it prints a "Channel closed!" traceback.
_CHANNEL_CLOSE_DELAY_S = 1.0


class _SubscriptionTrackingChannel:
  """Forwards to a `grpc.Channel`, remembering connectivity subscriptions.

  TFF's `RemoteExecutorGrpcStub` subscribes to its channel's connectivity and
  never unsubscribes; tracking the callback lets us drop it before closing.
  """

  def __init__(self, channel: grpc.Channel):
    self._channel = channel
    self.callbacks = []

  def subscribe(self, callback, try_to_connect=False):
    self.callbacks.append(callback)
    self._channel.subscribe(callback, try_to_connect=try_to_connect)

  def __getattr__(self, name):
    return getattr(self._channel, name)


class _WorkerConnection:
  """A gRPC channel to one TFF worker and the executors created over it."""

  def __init__(self, address: str, index: int, connect_timeout_s: float):
    self.address = address
    self.index = index
    self.connect_timeout_s = connect_timeout_s
    self.channel = grpc.insecure_channel(address, _GRPC_CHANNEL_OPTIONS)
    # Starts connecting now, so several workers are dialled in parallel.
    self._ready = grpc.channel_ready_future(self.channel)
    self._tracking_channel = _SubscriptionTrackingChannel(self.channel)
    self.stub = tff.framework.RemoteExecutorGrpcStub(self._tracking_channel)
    self._executors = weakref.WeakSet()
    self._lock = threading.Lock()
    # The CLIENTS cardinality of every executor made here (for tests: shows
    # how a round's clients were split across workers).
    self.clients_per_executor: list[int] = []

  def wait_ready(self, timeout_s: Optional[float] = None) -> None:
    """Blocks until the worker answers; raises ConnectionError on timeout."""
    timeout_s = self.connect_timeout_s if timeout_s is None else timeout_s
    try:
      if self._ready.done():
        # A ready future stays done; re-check the live channel state.
        self._ready = grpc.channel_ready_future(self.channel)
      self._ready.result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
      raise ConnectionError(
          f'No TFF worker answered at {self.address!r} '
          f'(`worker_addresses[{self.index}]`) within '
          f'{self.connect_timeout_s:g} s (`connect_timeout_s`). Start '
          f'one there (`worker_binary --port=PORT`, shipped at '
          f'{worker_binary_path()}), or check the address.') from None

  def executor_factory(
      self, default_num_clients: int) -> tff.framework.ExecutorFactory:
    """An executor factory like TFF's local one, for a worker we don't own."""

    def stack_fn(cardinalities):
      if cardinalities.get(tff.CLIENTS) is None:
        cardinalities[tff.CLIENTS] = default_num_clients
      # TFF retries UNAVAILABLE forever; a new executor (its retry path after a
      # failed call) first checks the worker is alive, and fails clearly.
      self.wait_ready()
      executor = tff.framework.RemoteExecutor(self.stub)
      executor.set_cardinalities(cardinalities)
      with self._lock:
        self._executors.add(executor)
        self.clients_per_executor.append(cardinalities[tff.CLIENTS])
      return executor

    return tff.framework.ResourceManagingExecutorFactory(
        executor_stack_fn=stack_fn)

  def close(self) -> None:
    """Frees the executors' state on the worker and closes the channel."""
    with self._lock:
      executors = list(self._executors)
      self._executors = weakref.WeakSet()
    for executor in executors:
      try:
        executor.close()  # A DisposeExecutor RPC; errors are swallowed.
      except Exception:  # pylint: disable=broad-except
        pass
    self._ready.cancel()
    for callback in self._tracking_channel.callbacks:
      self.channel.unsubscribe(callback)
    closer = threading.Timer(_CHANNEL_CLOSE_DELAY_S, self.channel.close)
    closer.daemon = True
    closer.start()


def _context_args(connection: _WorkerConnection, default_num_clients: int):
  # The compiler and argument transforms of TFF's native C++ contexts
  # (backends/native/execution_contexts.py), shared by both context kinds.
  return dict(
      executor_fn=connection.executor_factory(default_num_clients),
      compiler_fn=tff.backends.native.desugar_and_transform_to_native,
      transform_args=tff.tensorflow.transform_args,
      transform_result=tff.tensorflow.transform_result)


def _async_context(connection: _WorkerConnection, default_num_clients: int):
  return tff.framework.AsyncExecutionContext(
      **_context_args(connection, default_num_clients))


def _sync_context(connection: _WorkerConnection, default_num_clients: int):
  return tff.framework.SyncExecutionContext(
      **_context_args(connection, default_num_clients))


_state_lock = threading.Lock()
_active_connections: list[_WorkerConnection] = []


def _replace_active_connections(connections: list[_WorkerConnection]) -> None:
  global _active_connections
  with _state_lock:
    old, _active_connections = _active_connections, connections
  for connection in old:
    connection.close()


def set_remote_execution_context(
    worker_addresses: Sequence[str],
    *,
    default_num_clients: int = 0,
    num_subrounds: Optional[int] = None,
    connect_timeout_s: float = _DEFAULT_CONNECT_TIMEOUT_S,
) -> None:
  """Makes TFF run computations on the TFF workers at `worker_addresses`.

  Installs TFF's default execution context. Every worker must be a TFF 0.87
  `worker_binary` (the same version as this process's TFF) serving at
  `host:port`; see `start_local_workers` to start some on this machine.

  With one address (and no `num_subrounds`), computations run on that worker
  exactly as on TFF's local runtime. With several, each computation is split
  across the workers: CLIENTS-placed arguments are cut into contiguous slices,
  one per subround, the slices run in parallel, and their aggregates are
  merged (`tff.backends.native.create_mergeable_comp_execution_context`).
  Results equal a single worker's up to floating-point summation order.

  Every worker is checked to answer before anything is installed; on any error
  the previous default context stays in place. Call
  `restore_local_execution_context` to go back to TFF's local runtime.

  Args:
    worker_addresses: Non-empty sequence of distinct `"host:port"` strings
      (`"[ipv6]:port"` for IPv6 literals).
    default_num_clients: The number of clients per worker for computations
      whose arguments do not determine it (TFF's `default_num_clients`).
    num_subrounds: How many slices a round's clients are cut into (at most one
      per client). Defaults to one per worker; more than the number of workers
      runs the extra slices sequentially (bounding a worker's memory). Giving
      it with one address also uses the splitting context.
    connect_timeout_s: Seconds to wait for each worker to answer, at set-up
      and whenever a new executor is created (e.g. after a failed call).

  Raises:
    ValueError: If an argument is malformed (the message names it).
    ConnectionError: If a worker does not answer within `connect_timeout_s`.
  """
  addresses = check_worker_addresses(worker_addresses)
  _check_non_negative_int(default_num_clients, 'default_num_clients')
  if num_subrounds is not None and (
      isinstance(num_subrounds, bool) or not isinstance(num_subrounds, int)
      or num_subrounds < 1):
    raise ValueError(
        '`num_subrounds` must be None or a positive int; got '
        f'{num_subrounds!r}.')
  worker_processes.check_positive_number(connect_timeout_s,
                                         'connect_timeout_s')

  connections = [
      _WorkerConnection(address, i, connect_timeout_s)
      for i, address in enumerate(addresses)
  ]
  try:
    deadline = time.monotonic() + connect_timeout_s
    for connection in connections:  # They dial in parallel; one deadline.
      connection.wait_ready(max(deadline - time.monotonic(), 1e-3))
    if len(connections) == 1 and num_subrounds is None:
      context = _sync_context(connections[0], default_num_clients)
    else:
      context = tff.backends.native.create_mergeable_comp_execution_context(
          [_async_context(c, default_num_clients) for c in connections],
          num_subrounds=num_subrounds)
  except BaseException:
    for connection in connections:
      connection.close()
    raise
  tff.framework.set_default_context(context)
  _replace_active_connections(connections)


def restore_local_execution_context() -> None:
  """Puts TFF's local C++ runtime back as the default context.

  Also frees this process's executors on the remote workers and closes the
  channels to them (the workers themselves keep running).
  """
  tff.backends.native.set_sync_local_cpp_execution_context()
  _replace_active_connections([])


@contextlib.contextmanager
def remote_execution(worker_addresses: Sequence[str],
                     **kwargs) -> Iterator[None]:
  """Runs the block's TFF computations on the workers at `worker_addresses`.

  `set_remote_execution_context(worker_addresses, **kwargs)` on entry and
  `restore_local_execution_context()` on exit, however the block ends. With
  no addresses it changes nothing: the block runs on the current context.
  This is what a binary's `--worker_addresses` does around its `main`.

  Args:
    worker_addresses: A sequence of `"host:port"` strings, or empty.
    **kwargs: `set_remote_execution_context`'s keyword arguments.

  Raises:
    ValueError: If an argument is malformed (before anything is installed).
    ConnectionError: If a worker does not answer.
  """
  if isinstance(worker_addresses, (str, bytes)) or worker_addresses:
    set_remote_execution_context(worker_addresses, **kwargs)
    try:
      yield
    finally:
      restore_local_execution_context()
  else:
    yield
