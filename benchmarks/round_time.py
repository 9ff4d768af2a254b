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
"""Seconds per round and peak memory of the mixed FL processes vs. FedAvg.

For each algorithm and each `--clients_per_round` this binary measures:

* seconds per round: the median over `--timed_rounds` rounds that follow
  `--warmup_rounds` rounds (the first of which includes compiling the
  computation, i.e. tracing). All algorithms run in one process, interleaved
  round-robin with a rotating order, so that load from other processes on the
  machine hits them alike;
* CPU seconds per round: of this process plus TFF's `worker_binary` child,
  where TFF's local runtime executes computations. CPU time is much less
  sensitive than wall time to other load on a shared machine;
* peak memory: peak RSS never decreases within a process, so one process
  cannot attribute it to interleaved algorithms. Each (algorithm, cohort
  size) therefore runs once more in a fresh subprocess (`--algorithm`), which
  reports the increase of peak RSS (Linux VmHWM, reset through
  /proc/PID/clear_refs) over the RSS just before the process is built, for
  itself and for its TFF worker.

The algorithms: TFF's `tff.learning.algorithms.build_weighted_fed_avg` (the
reference), the four mixed FL processes of `tff_mixed`, and the compute floor:
the same clients x K local SGD steps of the same model on the same batches,
plus the server average, in one plain `tf.function` without TFF. All share one
model, one synthetic cohort per size (every client takes K steps of
`--client_batch_size` examples, like the paper's CelebA setup with K = 2 and
batch 5) and one central data set.

The results go to a generated BENCHMARKS.md at the repository root and to a
JSON file with the raw per-round numbers.

Usage, from the repository root:

  .venv/bin/python -m benchmarks.round_time
  .venv/bin/python -m benchmarks.round_time --clients_per_round=10 \\
      --timed_rounds=20 --nomeasure_memory
"""

import collections
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, NamedTuple, Optional

# pylint: disable=g-bad-import-order
# First: quiets TensorFlow's C++ logs (grappler INFO lines on every
# compilation, also in TFF's worker, would bury the progress output) before
# TensorFlow loads; see experiments/tf_log_level.py.
from experiments import tf_log_level  # pylint: disable=unused-import
from tff_mixed.experiment import cli
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

# Imported for its side effect too: it kills, at exit, the TFF worker process
# that this process starts (see tff_mixed/runtime.py).
import tff_mixed
from tff_mixed.algorithms import registry
from tff_mixed.models import dense
from tff_mixed import runtime
from tff_mixed.training import reports as reports_lib
# pylint: enable=g-bad-import-order

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FEDAVG = registry.FEDAVG
FLOOR = 'compute_floor'
_DISPLAY_NAMES = collections.OrderedDict([
    (FEDAVG, 'FedAvg (TFF `build_weighted_fed_avg`)'),
    ('parallel_training', 'Parallel Training'),
    ('one_way_gt', '1-way Gradient Transfer'),
    ('two_way_gt', '2-way Gradient Transfer'),
    ('example_transfer', 'Example Transfer'),
    (FLOOR, 'Compute floor (plain `tf.function`)'),
])
_ALL_ALGORITHMS = list(_DISPLAY_NAMES)

_CLIENTS_PER_ROUND = flags.DEFINE_list(
    'clients_per_round', ['10', '100'], 'Cohort sizes to benchmark.')
_ALGORITHMS = flags.DEFINE_list(
    'algorithms', _ALL_ALGORITHMS,
    f'Algorithms to benchmark, a subset of {_ALL_ALGORITHMS}. Ratios need '
    f'{FEDAVG} and {FLOOR}.')
_WARMUP_ROUNDS = flags.DEFINE_integer(
    'warmup_rounds', 3,
    'Untimed rounds per algorithm and cohort size; the first one compiles.')
_TIMED_ROUNDS = flags.DEFINE_integer(
    'timed_rounds', 5, 'Timed rounds per algorithm and cohort size.')
_INPUT_DIM = flags.DEFINE_integer('input_dim', 64, 'Input features.')
_HIDDEN_UNITS = flags.DEFINE_list(
    'hidden_units', ['64'],
    'Hidden layer widths of the binary classifier (the paper\'s smile '
    'classifier has one hidden layer of 64 units).')
_CLIENT_STEPS = flags.DEFINE_integer(
    'client_steps', 2, 'K: local steps per client (each client holds exactly '
    'K batches, so FedAvg\'s one pass is also K steps).')
_CLIENT_BATCH_SIZE = flags.DEFINE_integer(
    'client_batch_size', 5, 'Examples per local step.')
_CENTRAL_EXAMPLES = flags.DEFINE_integer(
    'central_examples', 2000, 'Examples in the central data set.')
_CENTRAL_BATCH_SIZE = flags.DEFINE_integer(
    'central_batch_size', 500, 'Examples per central batch.')
_TRANSFER_EXAMPLES = flags.DEFINE_integer(
    'transfer_examples', 5,
    'Example Transfer: central examples sent to each client per round.')
_CLIENT_LEARNING_RATE = flags.DEFINE_float(
    'client_learning_rate', 0.05, 'Client (and central) SGD learning rate.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seeds data, model and processes.')
_GOAL_RATIO = flags.DEFINE_float(
    'goal_ratio', 1.15,
    'Mixed algorithms should take at most this times FedAvg\'s round time.')
_MEASURE_MEMORY = flags.DEFINE_bool(
    'measure_memory', True,
    'Also measure peak memory, one subprocess per algorithm and cohort size.')
_MEMORY_ROUNDS = flags.DEFINE_integer(
    'memory_rounds', 3, 'Rounds each memory subprocess runs.')
_MEMORY_TIMEOUT = flags.DEFINE_integer(
    'memory_timeout', 600, 'Seconds before a memory subprocess is killed.')
_OUTPUT_MARKDOWN = flags.DEFINE_string(
    'output_markdown', 'BENCHMARKS.md',
    'Markdown report; a relative path is relative to the repository root.')
_OUTPUT_JSON = flags.DEFINE_string(
    'output_json', os.path.join('benchmarks', 'results', 'round_time.json'),
    'Raw numbers; a relative path is relative to the repository root.')
_ALGORITHM = flags.DEFINE_enum(
    'algorithm', None, _ALL_ALGORITHMS,
    'Internal (memory subprocess): measure the peak memory of this one '
    'algorithm at the single --clients_per_round, write it as JSON to '
    '--memory_output, and measure nothing else.')
_MEMORY_OUTPUT = flags.DEFINE_string(
    'memory_output', None, 'Internal: where --algorithm writes its JSON.')

# Flags that define the workload; memory subprocesses get the parent's values.
_WORKLOAD_FLAGS = (_INPUT_DIM, _HIDDEN_UNITS, _CLIENT_STEPS,
                   _CLIENT_BATCH_SIZE, _CENTRAL_EXAMPLES, _CENTRAL_BATCH_SIZE,
                   _TRANSFER_EXAMPLES, _CLIENT_LEARNING_RATE, _SEED,
                   _MEMORY_ROUNDS)

flags.register_validator(
    'algorithms', lambda v: bool(v) and set(v) <= set(_ALL_ALGORITHMS),
    f'--algorithms must be a non-empty subset of {_ALL_ALGORITHMS}.')
flags.register_validator(
    'clients_per_round',
    lambda v: bool(v) and all(s.isdigit() and int(s) > 0 for s in v),
    '--clients_per_round must be a list of positive ints.')
flags.register_validator(
    'hidden_units', lambda v: all(s.isdigit() and int(s) > 0 for s in v),
    '--hidden_units must be a list of positive ints.')
for _flag in (_WARMUP_ROUNDS, _TIMED_ROUNDS, _INPUT_DIM, _CLIENT_STEPS,
              _CLIENT_BATCH_SIZE, _CENTRAL_EXAMPLES, _CENTRAL_BATCH_SIZE,
              _TRANSFER_EXAMPLES, _MEMORY_ROUNDS, _MEMORY_TIMEOUT):
  flags.register_validator(_flag.name, lambda v: v is not None and v > 0,
                           f'--{_flag.name} must be positive.')
del _flag
flags.register_validator(
    'client_learning_rate', lambda v: v > 0,
    '--client_learning_rate must be positive.')
flags.register_validator('seed', lambda v: v >= 0, '--seed must be >= 0.')

_MIB = 1024.0 * 1024.0
_CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


# --- Workload. ---


class Workload(NamedTuple):
  """What every algorithm trains: one model, central data, hyperparameters."""

  model: tff.learning.models.FunctionalModel
  objective: tff_mixed.CentralObjective
  teacher: np.ndarray
  client_steps: int
  client_batch_size: int
  central_batch_size: int
  transfer_examples: int
  learning_rate: float
  seed: int


class Cohort(NamedTuple):
  """One round's clients: the same batches as TFF datasets and as tensors.

  Attributes:
    datasets: One `tf.data.Dataset` per client, of exactly K batches.
    x: float32[clients, K, batch, input_dim], the same examples.
    y: float32[clients, K, batch, 1].
  """

  datasets: list[tf.data.Dataset]
  x: np.ndarray
  y: np.ndarray


def _labels(x: np.ndarray, teacher: np.ndarray) -> np.ndarray:
  # A fixed linear teacher makes the task learnable, so the weights stay
  # finite and every round does the same (accepted-update) work.
  return (x @ teacher > 0.0).astype(np.float32)


def make_workload() -> Workload:
  """Builds the model and central data set from the flags."""
  input_dim = _INPUT_DIM.value
  rng = np.random.default_rng(_SEED.value)
  teacher = rng.normal(size=(input_dim, 1)).astype(np.float32)
  central_x = rng.normal(
      size=(_CENTRAL_EXAMPLES.value, input_dim)).astype(np.float32)
  objective = tff_mixed.central_data_objective(
      (central_x, _labels(central_x, teacher)))
  model = dense.build_binary_classifier(
      input_dim, hidden_units=tuple(int(u) for u in _HIDDEN_UNITS.value),
      seed=_SEED.value)
  return Workload(
      model=model,
      objective=objective,
      teacher=teacher,
      client_steps=_CLIENT_STEPS.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      central_batch_size=_CENTRAL_BATCH_SIZE.value,
      transfer_examples=_TRANSFER_EXAMPLES.value,
      learning_rate=_CLIENT_LEARNING_RATE.value,
      seed=_SEED.value,
  )


def make_cohort(workload: Workload, num_clients: int) -> Cohort:
  """Synthetic clients, each holding exactly K batches."""
  rng = np.random.default_rng([workload.seed, num_clients])
  k, batch = workload.client_steps, workload.client_batch_size
  input_dim = workload.teacher.shape[0]
  x = rng.normal(size=(num_clients, k, batch, input_dim)).astype(np.float32)
  y = _labels(x, workload.teacher)
  datasets = [
      tf.data.Dataset.from_tensor_slices(
          (x[c].reshape(k * batch, input_dim), y[c].reshape(k * batch, 1))
      ).batch(batch)
      for c in range(num_clients)
  ]
  return Cohort(datasets=datasets, x=x, y=y)


def build_process(name: str, workload: Workload):
  """Builds the TFF `LearningProcess` of algorithm `name` (the registry's)."""
  # Mixed algorithms take exactly K local steps (2-way GT requires it); with
  # K batches per client FedAvg's one pass is the same K steps.
  return registry.build(
      name, workload.model, workload.objective,
      client_lr=workload.learning_rate, client_steps=workload.client_steps,
      seed=workload.seed, central_batch_size=workload.central_batch_size,
      examples_per_client=workload.transfer_examples,
      client_batch_size=workload.client_batch_size)


def build_floor_round(model: tff.learning.models.FunctionalModel,
                      learning_rate: float):
  """The compute floor: one FedAvg round as a single plain `tf.function`.

  Every client takes its K SGD steps from the global weights and the server
  adds the mean update (server learning rate 1). Clients hold equal numbers
  of examples, so FedAvg's example-weighted mean is the plain mean. Clients
  run one after another: this is the floor of the work, which TFF's worker
  may spread over several threads. No metrics, no TFF.

  Args:
    model: The `FunctionalModel`.
    learning_rate: The client SGD learning rate.

  Returns:
    A `tf.function` `(trainable, x, y) -> new trainable`, with `x`, `y` as
    in `Cohort`.
  """
  non_trainable = tuple(tf.constant(w) for w in model.initial_weights[1])

  @tf.function
  def floor_round(trainable, x, y):
    trainable = tuple(trainable)
    num_clients = tf.shape(x)[0]
    total_update = tuple(tf.zeros_like(w) for w in trainable)
    for c in tf.range(num_clients):
      local = trainable
      for k in tf.range(tf.shape(x)[1]):
        with tf.GradientTape() as tape:
          tape.watch(local)
          output = model.predict_on_batch((local, non_trainable), x[c, k],
                                          training=True)
          loss = model.loss(output=output, label=y[c, k])
        gradient = tape.gradient(loss, local)
        local = tuple(
            w - learning_rate * g for w, g in zip(local, gradient))
      total_update = tuple(
          t + (w0 - w) for t, w0, w in zip(total_update, trainable, local))
    scale = 1.0 / tf.cast(num_clients, tf.float32)
    return tuple(w - scale * t for w, t in zip(trainable, total_update))

  return floor_round


class _ProcessRunner:
  """Runs rounds of a TFF `LearningProcess`."""

  def __init__(self, name: str, workload: Workload):
    self._name = name
    self._workload = workload
    self._process = None
    self._state = None
    self._data = None

  def build(self) -> None:
    self._process = build_process(self._name, self._workload)

  def initialize(self, cohort: Cohort) -> None:
    self._data = cohort.datasets
    self._state = self._process.initialize()

  def run_round(self) -> None:
    # TFF's synchronous context returns materialized (numpy) values, so the
    # round has finished when `next` returns.
    self._state = self._process.next(self._state, self._data).state


class _FloorRunner:
  """Runs rounds of the compute floor."""

  def __init__(self, workload: Workload):
    self._workload = workload
    self._round_fn = None
    self._trainable = None
    self._x = self._y = None

  def build(self) -> None:
    # Traced on first call (and per cohort shape), as TFF compiles on first
    # call: the first round of each cohort includes tracing.
    self._round_fn = build_floor_round(self._workload.model,
                                       self._workload.learning_rate)

  def initialize(self, cohort: Cohort) -> None:
    self._x = tf.constant(cohort.x)
    self._y = tf.constant(cohort.y)
    self._trainable = tuple(
        tf.constant(w) for w in self._workload.model.initial_weights[0])

  def run_round(self) -> None:
    # Eager CPU execution is synchronous: the result is computed on return.
    self._trainable = self._round_fn(self._trainable, self._x, self._y)


def make_runner(name: str, workload: Workload):
  if name == FLOOR:
    return _FloorRunner(workload)
  return _ProcessRunner(name, workload)


# --- Process measurements (Linux /proc). ---


def _cpu_seconds(pid: int) -> float:
  """User + system CPU seconds of process `pid` (0 if it is gone)."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      stat = f.read()
  except OSError:
    return 0.0
  # After the parenthesized command name, fields resume at field 3 of
  # proc(5); utime and stime are fields 14 and 15.
  fields = stat.rsplit(')', 1)[-1].split()
  return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _status_bytes(pid: int, key: str) -> Optional[float]:
  """A `kB` line of /proc/PID/status (e.g. VmRSS, VmHWM) in bytes."""
  try:
    with open(f'/proc/{pid}/status') as f:
      for line in f:
        if line.startswith(key + ':'):
          return float(line.split()[1]) * 1024.0
  except OSError:
    pass
  return None


def _reset_peak_rss(pid: int) -> bool:
  """Resets VmHWM to the current RSS (Linux >= 4.0); False if refused."""
  try:
    with open(f'/proc/{pid}/clear_refs', 'w') as f:
      f.write('5')
    return True
  except OSError:
    return False


class RoundSample(NamedTuple):
  """One round of one algorithm.

  Attributes:
    wall_s: Elapsed seconds.
    python_cpu_s: CPU seconds of this process (all its threads).
    worker_cpu_s: CPU seconds of its TFF workers, in clock ticks (10 ms).
  """

  wall_s: float
  python_cpu_s: float
  worker_cpu_s: float


def _timed_round(runner) -> RoundSample:
  # Listing workers scans /proc: done outside the timed region.
  workers = runtime.own_worker_pids()
  worker_cpu_start = sum(_cpu_seconds(p) for p in workers)
  cpu_start = time.process_time()
  start = time.perf_counter()
  runner.run_round()
  wall = time.perf_counter() - start
  cpu = time.process_time() - cpu_start
  worker_cpu = sum(_cpu_seconds(p) for p in workers) - worker_cpu_start
  return RoundSample(wall, cpu, worker_cpu)


# --- Timing: all algorithms interleaved in this process. ---


def _summarize(samples: list[RoundSample], warmup: int) -> dict[str, Any]:
  timed = samples[warmup:]
  walls = [s.wall_s for s in timed]
  return collections.OrderedDict(
      first_round_s=samples[0].wall_s,
      median_wall_s=statistics.median(walls),
      min_wall_s=min(walls),
      max_wall_s=max(walls),
      median_cpu_s=statistics.median(
          s.python_cpu_s + s.worker_cpu_s for s in timed),
      median_python_cpu_s=statistics.median(s.python_cpu_s for s in timed),
      median_worker_cpu_s=statistics.median(s.worker_cpu_s for s in timed),
  )


def time_algorithms(names: list[str], clients_per_round: list[int],
                    workload: Workload) -> dict[str, Any]:
  """Times every algorithm at every cohort size, interleaved round-robin."""
  warmup, timed = _WARMUP_ROUNDS.value, _TIMED_ROUNDS.value
  runners = collections.OrderedDict()
  build_s = collections.OrderedDict()
  for name in names:
    runner = make_runner(name, workload)
    start = time.perf_counter()
    runner.build()
    build_s[name] = time.perf_counter() - start
    runners[name] = runner
    _progress(f'built {name} in {build_s[name]:.2f}s')

  cohorts = []
  for num_clients in clients_per_round:
    cohort = make_cohort(workload, num_clients)
    for runner in runners.values():
      runner.initialize(cohort)
    samples = {name: [] for name in names}
    for r in range(warmup + timed):
      # Rotating the order keeps any effect of the position in the cycle
      # (e.g. following a memory-hungry algorithm) from favoring one.
      shift = r % len(names)
      for name in names[shift:] + names[:shift]:
        samples[name].append(_timed_round(runners[name]))
      phase = 'warm-up' if r < warmup else 'timed'
      times = ', '.join(f'{n} {samples[n][-1].wall_s:.3f}s' for n in names)
      _progress(f'{num_clients} clients, {phase} round {r + 1}/'
                f'{warmup + timed}: {times}')
    algorithms = collections.OrderedDict()
    for name in names:
      algorithms[name] = _summarize(samples[name], warmup)
      algorithms[name]['rounds'] = [s._asdict() for s in samples[name]]
    _add_ratios(algorithms)
    cohorts.append(collections.OrderedDict(
        clients_per_round=num_clients, algorithms=algorithms))
  return collections.OrderedDict(build_s=build_s, cohorts=cohorts)


def _add_ratios(algorithms: dict[str, Any]) -> None:
  for reference, suffix in ((FEDAVG, 'fedavg'), (FLOOR, 'floor')):
    if reference not in algorithms:
      continue
    ref = algorithms[reference]
    for summary in algorithms.values():
      summary[f'wall_vs_{suffix}'] = (
          summary['median_wall_s'] / ref['median_wall_s'])
      summary[f'cpu_vs_{suffix}'] = (
          summary['median_cpu_s'] / ref['median_cpu_s']
          if ref['median_cpu_s'] > 0 else None)


# --- Memory: one subprocess per algorithm and cohort size. ---


def measure_memory_here(name: str, num_clients: int,
                        workload: Workload) -> dict[str, Any]:
  """Peak RSS increase of building and running `name` in this process."""
  runner = make_runner(name, workload)
  cohort = make_cohort(workload, num_clients)
  if name != FLOOR:
    # Start TFF's worker with a trivial computation first, so that the
    # worker's own start-up is in the baseline, not in the algorithm's peak.
    tff.tensorflow.computation(lambda: tf.constant(0))()
  workers = runtime.own_worker_pids() if name != FLOOR else []
  pids = [os.getpid()] + workers
  baseline = {p: _status_bytes(p, 'VmRSS') for p in pids}
  reset = all(_reset_peak_rss(p) for p in pids)
  if not reset:
    # Without a reset the peak so far (TF's import) may hide a smaller
    # algorithm peak; the baseline then is that earlier peak.
    baseline = {p: _status_bytes(p, 'VmHWM') for p in pids}
  runner.build()
  runner.initialize(cohort)
  for _ in range(_MEMORY_ROUNDS.value):
    runner.run_round()
  peak = {p: _status_bytes(p, 'VmHWM') for p in pids}
  me = os.getpid()
  return collections.OrderedDict(
      algorithm=name,
      clients_per_round=num_clients,
      rounds=_MEMORY_ROUNDS.value,
      peak_reset=reset,
      python_baseline_mib=baseline[me] / _MIB,
      python_peak_mib=peak[me] / _MIB,
      python_increase_mib=(peak[me] - baseline[me]) / _MIB,
      worker_baseline_mib=sum(baseline[p] for p in workers) / _MIB,
      worker_peak_mib=sum(peak[p] for p in workers) / _MIB,
      worker_increase_mib=sum(peak[p] - baseline[p] for p in workers) / _MIB,
  )


def _run_memory_subprocess(name: str, num_clients: int,
                           work_dir: str) -> dict[str, Any]:
  """Runs `measure_memory_here` in a fresh interpreter; returns its JSON."""
  output = os.path.join(work_dir, f'{name}_{num_clients}.json')
  log = os.path.join(work_dir, f'{name}_{num_clients}.log')
  command = [
      sys.executable, '-m', 'benchmarks.round_time', f'--algorithm={name}',
      f'--clients_per_round={num_clients}', f'--memory_output={output}',
  ] + [flags.FLAGS[flag.name].serialize() for flag in _WORKLOAD_FLAGS]
  # Output goes to a file, not a pipe: an orphaned TFF worker would hold a
  # pipe open and hang the read.
  with open(log, 'w') as log_file:
    try:
      completed = subprocess.run(
          command, cwd=_REPO_ROOT, stdout=log_file, stderr=subprocess.STDOUT,
          timeout=_MEMORY_TIMEOUT.value, check=False)
      returncode = completed.returncode
    except subprocess.TimeoutExpired:
      returncode = 'timeout'
  if returncode == 0 and os.path.exists(output):
    with open(output) as f:
      return json.load(f)
  with open(log) as f:
    tail = f.read()[-2000:]
  _progress(f'memory subprocess {name} ({num_clients} clients) failed '
            f'({returncode}):\n{tail}')
  return collections.OrderedDict(error=f'exit status {returncode}',
                                 log_tail=tail)


def measure_memory(names: list[str], clients_per_round: list[int],
                   results: dict[str, Any]) -> None:
  """Adds a `memory` entry to every algorithm of every cohort."""
  with tempfile.TemporaryDirectory(prefix='round_time_memory_') as work_dir:
    for cohort in results['cohorts']:
      num_clients = cohort['clients_per_round']
      for name in names:
        start = time.perf_counter()
        memory = _run_memory_subprocess(name, num_clients, work_dir)
        cohort['algorithms'][name]['memory'] = memory
        if 'error' not in memory:
          _progress(
              f'memory {name}, {num_clients} clients: +'
              f'{memory["python_increase_mib"]:.0f} MiB Python, +'
              f'{memory["worker_increase_mib"]:.0f} MiB worker '
              f'({time.perf_counter() - start:.0f}s)')


# --- Reporting. ---


def _cpu_model() -> str:
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or 'unknown'


def _memory_total_gib() -> Optional[float]:
  total = _meminfo_bytes('MemTotal')
  return None if total is None else total / _MIB / 1024.0


def _meminfo_bytes(key: str) -> Optional[float]:
  try:
    with open('/proc/meminfo') as f:
      for line in f:
        if line.startswith(key + ':'):
          return float(line.split()[1]) * 1024.0
  except OSError:
    pass
  return None


def machine_info() -> dict[str, Any]:
  return collections.OrderedDict(
      cpu_model=_cpu_model(),
      cpu_count=os.cpu_count(),
      usable_cores=len(os.sched_getaffinity(0)),
      memory_gib=_memory_total_gib(),
      platform=platform.platform(),
      python=platform.python_version(),
      tensorflow=tf.__version__,
      tensorflow_federated=tff.__version__,
      tff_mixed=tff_mixed.__version__,
  )


def _command_line() -> str:
  python = sys.executable
  relative = os.path.relpath(python, _REPO_ROOT)
  if not relative.startswith('..'):
    python = relative
  return shlex.join([python, '-m', 'benchmarks.round_time'] + sys.argv[1:])


def _fmt(value: Optional[float], digits: int = 3, suffix: str = '') -> str:
  return 'n/a' if value is None else f'{value:.{digits}f}{suffix}'


def _memory_cell(memory: Optional[dict[str, Any]]) -> str:
  if not memory:
    return 'not measured'
  if 'error' in memory:
    return 'failed'
  if memory['algorithm'] == FLOOR:
    return f'{memory["python_increase_mib"]:.0f} (no worker)'
  total = memory['python_increase_mib'] + memory['worker_increase_mib']
  return (f'{total:.0f} = {memory["python_increase_mib"]:.0f} + '
          f'{memory["worker_increase_mib"]:.0f}')


def _goal_cell(name: str, summary: dict[str, Any], goal: float) -> str:
  if name == FEDAVG:
    return 'reference'
  if name == FLOOR or 'wall_vs_fedavg' not in summary:
    return '-'
  return 'yes' if summary['wall_vs_fedavg'] <= goal else '**no**'


def render_markdown(report: dict[str, Any]) -> str:
  """The BENCHMARKS.md text for a report (as written to the JSON file)."""
  config = report['config']
  machine = report['machine']
  goal = config['goal_ratio']
  lines = [
      '## Round times of every algorithm (benchmarks/round_time.py)',
      '',
      f'Generated by `{report["command"]}` on {report["date"]}, from the '
      f'raw numbers in `{config["output_json"]}`.',
      '',
      f'* Machine: {machine["cpu_model"]}, {machine["cpu_count"]} cores '
      f'({machine["usable_cores"]} usable), '
      f'{_fmt(machine["memory_gib"], 0)} GiB RAM, {machine["platform"]}.',
      f'* Software: Python {machine["python"]}, TensorFlow '
      f'{machine["tensorflow"]}, TensorFlow Federated '
      f'{machine["tensorflow_federated"]}, tff_mixed {machine["tff_mixed"]}.',
      f'* Load average (1 min) at start / end: '
      f'{_fmt(report["load_average"]["start"], 2)} / '
      f'{_fmt(report["load_average"]["end"], 2)}; other processes on the '
      'machine slow wall times, less so CPU times.',
      f'* Model: binary classifier, input {config["input_dim"]}, hidden '
      f'layers {config["hidden_units"]} '
      '(`tff_mixed.models.dense.build_binary_classifier`)'
      '.',
      f'* Clients: K = {config["client_steps"]} local SGD steps of batch '
      f'{config["client_batch_size"]} (every client holds exactly K batches; '
      'mixed algorithms run with `client_steps=K`). Central data: '
      f'{config["central_examples"]} examples, central batch '
      f'{config["central_batch_size"]}; Parallel Training and 2-way GT take '
      f'K_c = K central steps; Example Transfer sends '
      f'{config["transfer_examples"]} central examples per client.',
      f'* Timing: {config["warmup_rounds"]} warm-up rounds (the first '
      'includes compilation) then the median over '
      f'{config["timed_rounds"]} timed rounds, all algorithms interleaved '
      'round-robin (rotating order) in one process. CPU s = this process + '
      'its TFF `worker_binary` (where TFF executes computations; counted in '
      '10 ms ticks); it can exceed wall time, as the worker uses all cores.',
      '* Compute floor: the same clients x K SGD steps on the same batches '
      'and the server mean, in one plain `tf.function` (no TFF, no metrics).',
      f'* Peak memory: one fresh subprocess per algorithm and cohort size, '
      f'{config["memory_rounds"]} rounds; the increase of peak RSS (VmHWM, '
      'reset after start-up) over RSS before the process is built, as '
      'total = Python process + TFF worker, in MiB.',
      f'* Goal: every mixed algorithm within {goal:g}x FedAvg\'s wall time '
      'per round.',
      '',
      '### Build time (Python tracing, once per process)',
      '',
      '| Algorithm | Build (s) |',
      '|---|---:|',
  ]
  for name, seconds in report['timing']['build_s'].items():
    lines.append(f'| {_DISPLAY_NAMES[name]} | {seconds:.2f} |')
  over_goal = []
  for cohort in report['timing']['cohorts']:
    n = cohort['clients_per_round']
    lines += [
        '',
        f'### {n} clients per round',
        '',
        '| Algorithm | s/round (median) | min-max | x FedAvg | x floor | '
        'CPU s/round | CPU x FedAvg | first round (s) | peak RSS increase '
        f'(MiB) | within {goal:g}x |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|',
    ]
    for name, s in cohort['algorithms'].items():
      lines.append(
          f'| {_DISPLAY_NAMES[name]} | {s["median_wall_s"]:.3f} | '
          f'{s["min_wall_s"]:.3f}-{s["max_wall_s"]:.3f} | '
          f'{_fmt(s.get("wall_vs_fedavg"), 2)} | '
          f'{_fmt(s.get("wall_vs_floor"), 1)} | '
          f'{s["median_cpu_s"]:.3f} | {_fmt(s.get("cpu_vs_fedavg"), 2)} | '
          f'{s["first_round_s"]:.2f} | {_memory_cell(s.get("memory"))} | '
          f'{_goal_cell(name, s, goal)} |')
      if _goal_cell(name, s, goal) == '**no**':
        fedavg = cohort['algorithms'][FEDAVG]
        # The ranges let a reader tell a real slowdown from a burst of other
        # load on the machine during a few rounds.
        over_goal.append(
            f'{_DISPLAY_NAMES[name]} at {n} clients: '
            f'{s["wall_vs_fedavg"]:.2f}x wall, '
            f'{_fmt(s.get("cpu_vs_fedavg"), 2)}x CPU (timed rounds '
            f'{s["min_wall_s"]:.3f}-{s["max_wall_s"]:.3f}s vs. FedAvg '
            f'{fedavg["min_wall_s"]:.3f}-{fedavg["max_wall_s"]:.3f}s)')
  lines += ['', '### Summary', '']
  if over_goal:
    lines.append(f'Above {goal:g}x FedAvg (wall time):')
    lines.append('')
    lines += [f'* {entry}' for entry in over_goal]
  else:
    lines.append(f'Every mixed algorithm is within {goal:g}x FedAvg.')
  lines.append('')
  return '\n'.join(lines)


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


def _progress(message: str) -> None:
  print(f'[round_time {time.strftime("%H:%M:%S")}] {message}', flush=True)


def _config() -> dict[str, Any]:
  return collections.OrderedDict(
      algorithms=list(_ALGORITHMS.value),
      clients_per_round=[int(c) for c in _CLIENTS_PER_ROUND.value],
      warmup_rounds=_WARMUP_ROUNDS.value,
      timed_rounds=_TIMED_ROUNDS.value,
      input_dim=_INPUT_DIM.value,
      hidden_units=[int(u) for u in _HIDDEN_UNITS.value],
      client_steps=_CLIENT_STEPS.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      central_examples=_CENTRAL_EXAMPLES.value,
      central_batch_size=_CENTRAL_BATCH_SIZE.value,
      transfer_examples=_TRANSFER_EXAMPLES.value,
      learning_rate=_CLIENT_LEARNING_RATE.value,
      seed=_SEED.value,
      goal_ratio=_GOAL_RATIO.value,
      measure_memory=_MEASURE_MEMORY.value,
      memory_rounds=_MEMORY_ROUNDS.value,
      output_json=_OUTPUT_JSON.value,
  )


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  clients_per_round = [int(c) for c in _CLIENTS_PER_ROUND.value]
  workload = make_workload()

  if _ALGORITHM.value is not None:
    if len(clients_per_round) != 1 or not _MEMORY_OUTPUT.value:
      raise app.UsageError('--algorithm needs exactly one --clients_per_round '
                           'and --memory_output.')
    memory = measure_memory_here(_ALGORITHM.value, clients_per_round[0],
                                 workload)
    reports_lib.atomic_write_text(_MEMORY_OUTPUT.value,
                                  json.dumps(memory, indent=2))
    return

  # A fixed order, whatever the flag's: the tables list FedAvg first.
  names = [n for n in _ALL_ALGORITHMS if n in _ALGORITHMS.value]
  load_start = os.getloadavg()[0]
  start = time.perf_counter()
  _progress(f'timing {names} at {clients_per_round} clients per round')
  timing = time_algorithms(names, clients_per_round, workload)
  if _MEASURE_MEMORY.value:
    _progress('measuring peak memory, one subprocess per algorithm and '
              'cohort size')
    measure_memory(names, clients_per_round, timing)
  report = collections.OrderedDict(
      command=_command_line(),
      date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
      machine=machine_info(),
      load_average=collections.OrderedDict(start=load_start,
                                           end=os.getloadavg()[0]),
      config=_config(),
      total_s=time.perf_counter() - start,
      timing=timing,
  )
  json_path = _resolve(_OUTPUT_JSON.value)
  markdown_path = _resolve(_OUTPUT_MARKDOWN.value)
  reports_lib.atomic_write_text(json_path, json.dumps(report, indent=2) + '\n')
  markdown = render_markdown(report)
  # Its own section of BENCHMARKS.md: other benchmarks keep theirs.
  reports_lib.write_markdown_section(markdown_path, 'round_time', markdown,
                                     title='Benchmarks')
  print(markdown, flush=True)
  _progress(f'wrote {markdown_path} and {json_path} in '
            f'{report["total_s"]:.0f}s')


if __name__ == '__main__':
  cli.run(main)
