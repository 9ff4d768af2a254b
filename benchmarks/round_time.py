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
"""Seconds per round of the mixed FL processes vs. FedAvg and their floors.

For each model (`--models`: the small one of `--input_dim` and
`--hidden_units`, and the CelebA-size one, 84x84x3 = 21168 inputs -> 64 ->
1, the smile classifier of arXiv:2205.13655, section 4.1), each algorithm,
each mode (per-client: one client per CLIENTS member; grouped: client groups,
`tff_mixed.ClientGroups`, `--clients_per_group` clients per member, by
default one group per core) and each cohort size (`--cohort_sizes`: clients
per round) this binary measures:

* seconds per round: the median over `--timed_rounds` rounds (or more,
  until they took `--min_timed_seconds`) that follow `--warmup_rounds`
  rounds (the first of which includes compiling the computation, i.e.
  tracing). All algorithms run in one process, interleaved
  round-robin in a new seeded shuffle of the rows every cycle, so that load
  from other processes on the machine, and whatever a row leaves behind for
  the next one, hits them alike;
* CPU seconds per round: of this process plus TFF's `worker_binary` child,
  where TFF's local runtime executes computations. CPU time is much less
  sensitive than wall time to other load on a shared machine. On workers of
  `--worker_addresses` (recorded in the JSON's config), whose CPU time is
  not counted, wall time is the measure, and `--measure_memory`'s
  subprocesses still run on the local runtime. `--local_workers=N` starts N
  TFF workers on this machine and runs on them the same way, their CPU time
  counted (children of this process); the config's `workers` is the count,
  0 for the local runtime (`benchmarks/workers_report.py` compares runs);
* peak memory: peak RSS never decreases within a process, so one process
  cannot attribute it to interleaved algorithms. Each (algorithm, cohort
  size) therefore runs once more in a fresh subprocess (`--algorithm`), which
  reports the increase of peak RSS (Linux VmHWM, reset through
  /proc/PID/clear_refs) over the RSS just before the process is built, for
  itself and for its TFF worker. Off by default (`--measure_memory`): one
  subprocess per row takes longer than the timing itself.

The algorithms: FedAvg (per-client: TFF's
`tff.learning.algorithms.build_weighted_fed_avg`, the reference; grouped:
`tff_mixed.build_fedavg`, equal to it) and the four mixed FL processes of
`tff_mixed`; with `compute_floor`, each one's compute floor
(`benchmarks/compute_floor.py`): the same arithmetic in one plain
`tf.function` without TFF, the clients x K local SGD steps of the same model
on the same batches and the server average, plus the algorithm's own central
work on the same central batches (Parallel Training's K_c central steps and
merge; 1-way GT's central gradient, added to every client step; 2-way GT's
K_c central steps with g~_f, both augmenting gradients and the merge; Example
Transfer's clients train on their merged batches). Each row's "x its floor"
divides by its algorithm's floor, timed in the same round-robin; the closing
line gives every algorithm's ratio at the largest cohort. All share one model,
one synthetic cohort per size (every client takes K steps of
`--client_batch_size` examples, like the paper's CelebA setup with K = 2 and
batch 5) and one central data set. Grouped processes read their members'
batches inside the group computation, from an `ExampleStore` of the cohort,
and central batches from one of the central set: packed (one file, read
whole) for the small model, a file per example for the CelebA-size one (85
MB of clients at 100, 169 MB of central images). Held as constants instead,
the data would travel in the computation, which TFF's execution context sends
to its worker on every call: for the small model that cost its rows
0.06-0.38x their floor (one process, interleaved, 2026-11-28).

The results go to a generated BENCHMARKS.md at the repository root and to a
JSON file with the raw per-round numbers.

Usage, from the repository root:

  .venv/bin/python -m benchmarks.round_time
  .venv/bin/python -m benchmarks.round_time --models=small \\
      --cohort_sizes=10 --timed_rounds=20 --measure_memory
"""

import atexit
import collections
from collections.abc import Iterator, Sequence
import contextlib
import datetime
import json
import os
import platform
import shutil
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
from experiments.common import cli
from experiments.common import shared_flags
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

import tff_mixed
from benchmarks import benchmark_flags
from benchmarks import compute_floor
from benchmarks import round_reports
from tff_mixed.algorithms import registry
from tff_mixed.core import example_store
from tff_mixed.simulation import fused_round
from tff_mixed.simulation import lockstep
from tff_mixed.simulation import multi_round
from experiments.common import grouping
from experiments.common import markdown_sections
from experiments.common import shared_flags
from tff_mixed import remote
from tff_mixed import runtime
from tff_mixed.models import dense
from tff_mixed.training import reports as reports_lib
# pylint: enable=g-bad-import-order

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FEDAVG = round_reports.FEDAVG
FLOOR = round_reports.FLOOR
_DISPLAY_NAMES = round_reports.DISPLAY_NAMES
GROUPED = round_reports.GROUPED
FLOOR_ROW = round_reports.FLOOR_ROW
algorithm_of = round_reports.algorithm_of
is_floor = round_reports.is_floor
_mode = round_reports.mode
_fmt = round_reports.fmt
_row_name = round_reports.row_name
_ALL_ALGORITHMS = list(_DISPLAY_NAMES)
_TIMED_ALGORITHMS = [n for n in _ALL_ALGORITHMS if n != FLOOR]
_ALL_ROWS = ([r for n in _TIMED_ALGORITHMS for r in (n, n + GROUPED)]
             + [n + FLOOR_ROW for n in _TIMED_ALGORITHMS])


# The CelebA smile classifier: 84x84x3 images, one hidden layer of 64.
_MODELS_DIMS = collections.OrderedDict(
    small=None, celeba=(84 * 84 * 3, (64,)))

_COHORT_SIZES = flags.DEFINE_list(
    'cohort_sizes', ['10', '100'],
    'Cohort sizes to benchmark (clients per round), comma-separated: every '
    'row is timed at each.')
_MODELS = flags.DEFINE_list(
    'models', list(_MODELS_DIMS),
    'Models to benchmark, in this order: small (--input_dim, '
    '--hidden_units) and celeba (84x84x3 = 21168 inputs -> 64 -> 1).')
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
_ROUNDS_PER_CALL = grouping.define_rounds_per_call_flag(
    'Here the grouped rows only (`multi_round.build_multi_round_next`), '
    'timed per round; per-client rows always run one round a call.')
_FUSED_ROUNDS = flags.DEFINE_bool(
    'fused_rounds', False,
    'Grouped rows: each round with its stages fused into one TF computation '
    'each (`fused_round.build_fused_next`, TFF\'s MapReduceForm: the same '
    'numbers, tests/fused_round_test.py); rounds that form cannot hold '
    '(e.g. a federated_select) run as composed, and the report names '
    'them.')
_MEMBERS_AT_ONCE_PER_MODEL = flags.DEFINE_list(
    'members_at_once_per_model', ['small=0', 'celeba=1'],
    'Per model, `model=n` (the experiment binaries\' --members_at_once, '
    'model by model): grouped rows train their members from tensors '
    '(`ClientGroups.batches_fn`: small, from its arrays; celeba, read from '
    'its `ExampleStore` for the whole group at once), n at once in '
    'lockstep (0: the whole group; 1: one after another, without '
    '`tf.vectorized_map`); a model not listed reads a dataset per member '
    '(`ClientGroups.dataset_fn` only).')
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
_LOCAL_WORKERS = flags.DEFINE_integer(
    'local_workers', 0,
    'Start this many TFF workers on this machine (worker_binary on loopback '
    'ports), run every TFF computation on them as --worker_addresses would '
    "(a round's clients or client groups split across them), and stop them "
    'at the end. 0: none (the local runtime, or --worker_addresses).',
    lower_bound=0)
flags.register_multi_flags_validator(
    ['local_workers', 'worker_addresses'],
    lambda f: not (f['local_workers'] and f['worker_addresses']),
    '--local_workers starts its own TFF workers; give it or '
    '--worker_addresses, not both.')
_ALGORITHMS = shared_flags.define_algorithms_flag(
    _ALL_ALGORITHMS,
    'Each is timed per-client and (unless --clients_per_group=1) grouped; '
    f'{FLOOR} adds the compute floor of each. Ratios need {FEDAVG} and '
    f'{FLOOR}.')
_WARMUP_ROUNDS = flags.DEFINE_integer(
    'warmup_rounds', 2,
    'Untimed rounds per algorithm and cohort size; the first one compiles.')
_TIMED_ROUNDS = flags.DEFINE_integer(
    'timed_rounds', 4, 'Timed rounds per algorithm and cohort size.')
_MIN_TIMED_SECONDS = flags.DEFINE_float(
    'min_timed_seconds', 0.0,
    'More timed rounds than --timed_rounds, until the timed rounds of a '
    'cohort (every row once per round) have taken at least this many '
    'seconds: cohorts of short rounds get more samples for their medians, '
    'those of long rounds no more. 0: exactly --timed_rounds.',
    lower_bound=0.0)
_INPUT_DIM = flags.DEFINE_integer(
    'input_dim', 64, 'Input features of the small model.')
_HIDDEN_UNITS = shared_flags.define_hidden_units_flag(
    (64,), "Here: the small model's (the paper's smile classifier has one "
    'hidden layer of 64 units).')
_CLIENT_STEPS = shared_flags.define_client_steps_flag(
    2, "Each client holds exactly K batches, so FedAvg's one pass is also K "
    'steps.')
shared_flags.require_at_least(_CLIENT_STEPS, 1)
_CLIENT_BATCH_SIZE = shared_flags.define_client_batch_size_flag(5)
_CENTRAL_EXAMPLES = flags.DEFINE_integer(
    'central_examples', 2000, 'Examples in the central data set.')
_CENTRAL_BATCH_SIZE = shared_flags.define_central_batch_size_flag(500)
_TRANSFER_EXAMPLES = flags.DEFINE_integer(
    'transfer_examples', 5,
    'Example Transfer: central examples sent to each client per round.')
_CLIENT_LR = shared_flags.define_client_lr_flag(
    0.05, 'SGD, also the central one.')
_SEED = shared_flags.define_seed_flag(0)
_GOAL_RATIO = flags.DEFINE_float(
    'goal_ratio', 1.15,
    'Mixed algorithms should take at most this times the round time of '
    'FedAvg in the same mode.')
_FLOOR_GOAL = benchmark_flags.define_floor_goal_flag(
    1.5, 'Here: every algorithm, in its faster mode at the largest cohort, '
    'against its own compute floor.')
_MEASURE_MEMORY = flags.DEFINE_bool(
    'measure_memory', False,
    'Also measure peak memory, one subprocess per row, model and cohort size '
    '(slow: each starts TensorFlow and TFF).')
_MEMORY_ROUNDS = flags.DEFINE_integer(
    'memory_rounds', 3, 'Rounds each memory subprocess runs.')
_MEMORY_TIMEOUT = flags.DEFINE_integer(
    'memory_timeout', 600, 'Seconds before a memory subprocess is killed.')
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md')
_PER_CLIENT = flags.DEFINE_bool(
    'per_client', True,
    'Also time each algorithm one client per CLIENTS member (TFF builds and '
    'sends a dataset per client); false: grouped rows and floors only (at '
    '1,000 CelebA-size clients the per-client runtime\'s worker outgrows 23 '
    'GiB of memory).')
flags.register_multi_flags_validator(
    ['per_client', 'clients_per_group'],
    lambda f: f['per_client'] or f['clients_per_group'] != 1,
    '--per_client=false with --clients_per_group=1 leaves no process to time.')
_SECTION = benchmark_flags.define_section_flag(
    'round_time', 'Another name leaves the default one as it is, e.g. a cost '
    'curve over larger cohorts (make benchmark-scale).')
_OUTPUT_JSON = benchmark_flags.define_output_json_flag(
    os.path.join('benchmarks', 'results', 'round_time.json'))
_ALGORITHM = flags.DEFINE_enum(
    'algorithm', None, _ALL_ROWS,
    'Internal (memory subprocess): measure the peak memory of this one row '
    'at the single --models and --cohort_sizes, write it as JSON to '
    '--memory_output, and measure nothing else.')
_MEMORY_OUTPUT = flags.DEFINE_string(
    'memory_output', None, 'Internal: where --algorithm writes its JSON.')

# Flags that define the workload; memory subprocesses get the parent's values.
_WORKLOAD_FLAGS = (_INPUT_DIM, _HIDDEN_UNITS, _CLIENT_STEPS,
                   _CLIENTS_PER_GROUP, _MEMBERS_AT_ONCE_PER_MODEL,
                   _ROUNDS_PER_CALL,
                   _CLIENT_BATCH_SIZE,
                   _CENTRAL_EXAMPLES, _CENTRAL_BATCH_SIZE,
                   _TRANSFER_EXAMPLES, _CLIENT_LR, _SEED,
                   _MEMORY_ROUNDS)

flags.register_validator(
    'algorithms',
    lambda v: bool(set(v) - {FLOOR}) and set(v) <= set(_ALL_ALGORITHMS),
    f'--algorithms must be a subset of {_ALL_ALGORITHMS} with at least one '
    f'algorithm besides {FLOOR}.')
flags.register_validator(
    'models', lambda v: bool(v) and set(v) <= set(_MODELS_DIMS),
    f'--models must be a non-empty subset of {list(_MODELS_DIMS)}.')
flags.register_validator(
    'cohort_sizes',
    lambda v: bool(v) and all(s.isdigit() and int(s) > 0 for s in v),
    '--cohort_sizes must be a list of positive ints.')
flags.register_validator(
    'hidden_units', lambda v: all(s.isdigit() and int(s) > 0 for s in v),
    '--hidden_units must be a list of positive ints.')
for _flag in (_WARMUP_ROUNDS, _TIMED_ROUNDS, _INPUT_DIM, _CENTRAL_EXAMPLES,
              _TRANSFER_EXAMPLES, _MEMORY_ROUNDS, _MEMORY_TIMEOUT):
  flags.register_validator(_flag.name, lambda v: v is not None and v > 0,
                           f'--{_flag.name} must be positive.')
del _flag
flags.register_validator('client_lr', lambda v: v > 0,
                         '--client_lr must be positive.')

# Kept here for benchmarks that share this one's workload.
build_floor_round = compute_floor.build_floor_round

_MIB = 1024.0 * 1024.0
_CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


# --- Workload. ---


class Workload(NamedTuple):
  """What every algorithm trains: one model, central data, hyperparameters."""

  model_name: str
  model: tff.learning.models.FunctionalModel
  objective: tff_mixed.CentralObjective
  teacher: np.ndarray
  client_steps: int
  client_batch_size: int
  central_batch_size: int
  transfer_examples: int
  learning_rate: float
  clients_per_group: int
  members_at_once: Optional[int]
  rounds_per_call: int
  seed: int
  fused_rounds: bool = False


class Cohort(NamedTuple):
  """One round's clients: the same batches as TFF datasets and as tensors.

  Attributes:
    datasets: One `tf.data.Dataset` per client, of exactly K batches.
    x: float32[clients, K, batch, input_dim], the same examples.
    y: float32[clients, K, batch, 1].
    store: The same examples in an `ExampleStore`, client by client, which
      groups read (packed for the small model).
  """

  datasets: list[tf.data.Dataset]
  x: np.ndarray
  y: np.ndarray
  store: example_store.ExampleStore


def _labels(x: np.ndarray, teacher: np.ndarray) -> np.ndarray:
  # A fixed linear teacher makes the task learnable, so the weights stay
  # finite and every round does the same (accepted-update) work.
  return (x @ teacher > 0.0).astype(np.float32)


def model_dims(model_name: str) -> tuple[int, tuple[int, ...]]:
  """`(input_dim, hidden_units)` of model `model_name`."""
  dims = _MODELS_DIMS[model_name]
  if dims is None:
    return _INPUT_DIM.value, tuple(int(u) for u in _HIDDEN_UNITS.value)
  return dims


def members_at_once(model_name: str) -> Optional[int]:
  """`--members_at_once_per_model` of `model_name`; `None`: not listed."""
  for item in _MEMBERS_AT_ONCE_PER_MODEL.value:
    name, _, value = item.partition('=')
    if name == model_name:
      try:
        count = int(value)
      except ValueError:
        count = -1
      if count < 0:
        raise app.UsageError(f'--members_at_once_per_model: {item!r} is not '
                             'model=n with n >= 0.')
      return count
  return None


def _rounds_per_call_text(rounds: int) -> str:
  """The Modes line's words for `--rounds_per_call`."""
  if rounds == 1:
    return ''
  return (f'; {rounds} rounds in each TFF call '
          '(`multi_round.build_multi_round_next`, the state left in TFF\'s '
          'worker between them; tests/multi_round_test.py), its times '
          f'divided by {rounds}')


def _members_at_once_text(settings: list[str]) -> str:
  """The Modes line's words for `--members_at_once_per_model`."""
  if not settings:
    return '; each member through a dataset (`ClientGroups.dataset_fn`)'
  listed = ', '.join(
      f'{name}: {"the whole group" if value == "0" else value} at once'
      for name, _, value in (item.partition('=') for item in settings))
  return ('; members read as tensors (`ClientGroups.batches_fn`, every '
          'member the same K batches) and trained in lockstep by '
          f'`tf.vectorized_map` (`--members_at_once_per_model`: {listed}), '
          "Example Transfer's with their transferred examples merged into "
          'those tensors (`merged_batches.py`)')


def make_workload(model_name: str = 'small') -> Workload:
  """Builds the model and central data set of `model_name` from the flags."""
  input_dim, hidden_units = model_dims(model_name)
  rng = np.random.default_rng(_SEED.value)
  teacher = rng.normal(size=(input_dim, 1)).astype(np.float32)
  central_x = rng.normal(
      size=(_CENTRAL_EXAMPLES.value, input_dim)).astype(np.float32)
  # Like the CelebA task's central images: 2000 x 21168 floats (169 MB) in
  # a file per example. The small model's 0.5 MB fit in one packed file.
  central = _write_store('central', (central_x, _labels(central_x, teacher)),
                         packed=_is_small(model_name))
  objective = tff_mixed.central_data_objective(central)
  model = dense.build_binary_classifier(
      input_dim, hidden_units=hidden_units, seed=_SEED.value)
  return Workload(
      model_name=model_name,
      model=model,
      objective=objective,
      teacher=teacher,
      client_steps=_CLIENT_STEPS.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      central_batch_size=_CENTRAL_BATCH_SIZE.value,
      transfer_examples=_TRANSFER_EXAMPLES.value,
      learning_rate=_CLIENT_LR.value,
      clients_per_group=_CLIENTS_PER_GROUP.value,
      members_at_once=members_at_once(model_name),
      rounds_per_call=_ROUNDS_PER_CALL.value,
      seed=_SEED.value,
      fused_rounds=_FUSED_ROUNDS.value,
  )


def _is_small(model_name: str) -> bool:
  return _MODELS_DIMS[model_name] is None


def _write_store(name: str, arrays, packed: bool) -> example_store.ExampleStore:
  """`arrays` (one row per example) as an `ExampleStore`, removed at exit."""
  directory = tempfile.mkdtemp(prefix=f'round_time_{name}_')
  atexit.register(shutil.rmtree, directory, ignore_errors=True)
  return example_store.write_example_store(
      os.path.join(directory, 'store'), [arrays], packed=packed)


def make_cohort(workload: Workload, num_clients: int) -> Cohort:
  """Synthetic clients, each holding exactly K batches."""
  rng = np.random.default_rng([workload.seed, num_clients])
  k, batch = workload.client_steps, workload.client_batch_size
  input_dim = workload.teacher.shape[0]
  x = rng.normal(size=(num_clients, k, batch, input_dim)).astype(np.float32)
  y = _labels(x, workload.teacher)
  datasets = [
      tf.data.Dataset.from_tensor_slices(client_arrays(x, y, c)).batch(batch)
      for c in range(num_clients)
  ]
  # Each group reads only its members' rows, as a deployment reads local
  # storage: for the CelebA-size model (85 MB at 100 clients) from a file
  # per example, for the small one (0.26 MB) from one packed file.
  store = _write_store(f'clients{num_clients}', (
      x.reshape(num_clients * k * batch, input_dim),
      y.reshape(num_clients * k * batch, 1)),
                       packed=_is_small(workload.model_name))
  return Cohort(datasets=datasets, x=x, y=y, store=store)


def client_arrays(x: np.ndarray, y: np.ndarray,
                  client: int) -> tuple[np.ndarray, np.ndarray]:
  """Client `client`'s examples, one row each, in training order."""
  k, batch = x.shape[1], x.shape[2]
  return (x[client].reshape(k * batch, -1), y[client].reshape(k * batch, 1))


def groups_of(workload: Workload, num_clients: int) -> list[np.ndarray]:
  """The grouped rows' CLIENTS values: ids 0..n-1 in groups."""
  return grouping.group_ids(np.arange(num_clients),
                            workload.clients_per_group, np.int32)


def build_process(name: str, workload: Workload,
                  cohort: Optional[Cohort] = None):
  """The TFF `LearningProcess` of row `name` (the registry's algorithm).

  Args:
    name: An algorithm, or an algorithm and `GROUPED`.
    workload: The workload.
    cohort: For a grouped row, the clients its groups read (its
      `dataset_fn` holds their arrays); ignored otherwise.
  """
  client_groups = None
  if name.endswith(GROUPED):
    name = name[:-len(GROUPED)]
    client_groups = tff_mixed.ClientGroups(
        _group_dataset_fn(workload, cohort), np.int32,
        batches_fn=(_group_batches_fn(workload, cohort)
                    if workload.members_at_once is not None else None),
        members_at_once=workload.members_at_once or 0)
  # Mixed algorithms take exactly K local steps (2-way GT requires it). The
  # per-client FedAvg row is TFF's FedAvg, the reference: it gets no
  # client_steps (the registry would build the composed FedAvg), and with
  # K batches per client its one pass is the same K steps.
  steps = workload.client_steps
  if name == FEDAVG and client_groups is None:
    steps = None
  return registry.build(
      name, workload.model, workload.objective,
      client_lr=workload.learning_rate, client_steps=steps,
      seed=workload.seed, central_batch_size=workload.central_batch_size,
      examples_per_client=workload.transfer_examples,
      client_batch_size=workload.client_batch_size,
      client_groups=client_groups)


def _group_dataset_fn(workload: Workload, cohort: Cohort):
  """`dataset_fn(client id)` of a grouped row: the client's K batches."""
  batch = workload.client_batch_size
  rows = workload.client_steps * batch

  def dataset_fn(client_id):
    start = tf.cast(client_id, tf.int64) * rows
    return tf.data.Dataset.range(start, start + rows).batch(batch).map(
        cohort.store.read)

  return dataset_fn


def _group_batches_fn(workload: Workload, cohort: Cohort):
  """`batches_fn(ids)` of a grouped row: its members' K batches at once.

  From the cohort's `ExampleStore`, the group's rows in one read
  (`lockstep.store_batches_fn`;
  client `c` holds rows `c K B` to `(c + 1) K B - 1`, as `make_cohort`
  writes them). Trained one member at a time, the CelebA-size FedAvg round
  took 1.22x its floor against 1.49x through a dataset per member (one
  process, interleaved, 2026-11-28); `tf.vectorized_map` of one or two
  members took 1.8-2.2x.
  """
  batch = workload.client_batch_size
  rows = workload.client_steps * batch
  return lockstep.store_batches_fn(
      cohort.store, np.arange(len(cohort.x) * rows).reshape(-1, rows), batch)


class _ProcessRunner:
  """Runs rounds of a TFF `LearningProcess`, per client or in groups.

  Grouped rows run `workload.rounds_per_call` rounds in each TFF call
  (`multi_round.build_multi_round_next`); `rounds` says how many a
  `run_round` runs, so that times are per round.
  """

  def __init__(self, name: str, workload: Workload):
    self._name = name
    self._workload = workload
    self._grouped = name.endswith(GROUPED)
    self._process = None
    self._next = None
    self._state = None
    self._data = None
    self.rounds = workload.rounds_per_call if self._grouped else 1
    self.fused = False  # Whether its rounds run fused (`fused_round`).

  def build(self, cohort: Cohort) -> bool:
    """Builds the process for `cohort`; False if the one built serves."""
    if self._process is not None and not self._grouped:
      return False
    # A group's dataset_fn holds its cohort's arrays: one process a cohort.
    self._process = build_process(self._name, self._workload, cohort)
    process = self._process
    next_fn = process.next
    self.fused = False
    if self._grouped and self._workload.fused_rounds:
      try:
        next_fn = fused_round.build_fused_next(process.next)
        self.fused = True
      except ValueError:
        pass  # E.g. a federated_select: run as composed (reported).
    self._next = lambda state, data: next_fn(state, data).state
    if self.rounds > 1:
      multi = multi_round.build_multi_round_next(next_fn, self.rounds)
      self._next = lambda state, data: multi(
          state, [data] * self.rounds)['state']
    return True

  def initialize(self, cohort: Cohort) -> None:
    self._data = (groups_of(self._workload, len(cohort.x)) if self._grouped
                  else cohort.datasets)
    self._state = self._process.initialize()

  def run_round(self) -> None:
    # TFF's synchronous context returns materialized (numpy) values, so the
    # round has finished when `next` returns.
    self._state = self._next(self._state, self._data)


class _FloorRunner:
  """Runs rounds of an algorithm's compute floor.

  On round 0's batches, as its process draws them: its central batches
  (`compute_floor.central_batches`, K_c = K of them with central steps, one
  for 1-way GT's central gradient) and, for Example Transfer, the clients'
  batches with their transferred examples merged in. Drawing them is not
  timed, as it is not part of the floor.
  """

  rounds = 1  # Rounds per `run_round`.
  fused = False  # No TFF round to fuse.

  def __init__(self, name: str, workload: Workload):
    self._algorithm = algorithm_of(name)
    self._part = compute_floor.central_part(self._algorithm)
    self._workload = workload
    self._floor = None
    self._central = None

  def build(self, cohort: Cohort) -> bool:
    del cohort  # Traced on the first round of each cohort shape.
    if self._floor is not None:
      return False
    w = self._workload
    self._floor = compute_floor.FloorRunner(w.model, w.learning_rate,
                                            self._part)
    self._central = compute_floor.central_batches(
        w.objective, w.central_batch_size, w.seed, 0,
        self._part.num_central_batches(w.client_steps))
    return True

  def initialize(self, cohort: Cohort) -> None:
    x, y = cohort.x, cohort.y
    if self._algorithm == registry.EXAMPLE_TRANSFER:
      w = self._workload
      x, y = compute_floor.transferred_batches(
          w.objective, x, y, examples_per_client=w.transfer_examples,
          seed=w.seed, round_num=0)
    self._floor.set_clients(x, y, self._central)

  def run_round(self) -> None:
    self._floor.run_round()


def make_runner(name: str, workload: Workload):
  if is_floor(name):
    return _FloorRunner(name, workload)
  return _ProcessRunner(name, workload)


# --- Process measurements (Linux /proc). ---


# The CPU seconds of a process that has ended.
_GONE = 0.0


def _cpu_seconds(pid: int) -> float:
  """User + system CPU seconds of process `pid` (0 if it is gone)."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      stat = f.read()
  except OSError:
    return _GONE
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
  # Per round, where one call runs several.
  rounds = runner.rounds
  return RoundSample(wall / rounds, cpu / rounds, worker_cpu / rounds)


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
  """Times every row at every cohort size, interleaved round-robin.

  Returns:
    `{'cohorts': [{'clients_per_round', 'groups', 'algorithms': {row:
    summary}}]}`; a summary's `build_s` is the build of the process it ran
    (per-client processes are built once, grouped ones per cohort).
  """
  warmup, timed = _WARMUP_ROUNDS.value, _TIMED_ROUNDS.value
  runners = collections.OrderedDict(
      (name, make_runner(name, workload)) for name in names)
  build_s = {}
  cohorts = []
  for num_clients in clients_per_round:
    cohort = make_cohort(workload, num_clients)
    for name, runner in runners.items():
      start = time.perf_counter()
      if runner.build(cohort):
        build_s[name] = time.perf_counter() - start
        _progress(f'{workload.model_name}: built {name} in '
                  f'{build_s[name]:.2f}s')
      runner.initialize(cohort)
    samples = {name: [] for name in names}
    timed_start = None
    r = 0
    while r < warmup + timed or (
        time.perf_counter() - timed_start < _MIN_TIMED_SECONDS.value):
      if r == warmup:
        timed_start = time.perf_counter()
      for name in round_reports.cycle_order(names, r, workload.seed):
        samples[name].append(_timed_round(runners[name]))
      phase = 'warm-up' if r < warmup else 'timed'
      times = ', '.join(f'{n} {samples[n][-1].wall_s:.3f}s' for n in names)
      _progress(f'{workload.model_name}, {num_clients} clients, {phase} '
                f'round {r + 1}/{max(r + 1, warmup + timed)}: {times}')
      r += 1
    algorithms = collections.OrderedDict()
    for name in names:
      algorithms[name] = _summarize(samples[name], warmup)
      algorithms[name]['build_s'] = build_s[name]
      algorithms[name]['fused'] = runners[name].fused
      algorithms[name]['rounds'] = [s._asdict() for s in samples[name]]
    _add_ratios(algorithms)
    cohorts.append(collections.OrderedDict(
        clients_per_round=num_clients,
        timed_rounds=r - warmup,
        groups=[len(g) for g in groups_of(workload, num_clients)],
        algorithms=algorithms))
  return collections.OrderedDict(cohorts=cohorts)


def _add_ratios(algorithms: dict[str, Any]) -> None:
  """Adds the ratios to each row's floor and to FedAvg of the same mode.

  A process row gets `floor_wall_s` (its algorithm's floor) and
  `wall_vs_floor`; every row gets `wall_vs_fedavg` and `cpu_vs_fedavg`, a
  floor row against FedAvg's floor (what its central work adds).
  """
  for name, summary in algorithms.items():
    floor = algorithms.get(algorithm_of(name) + FLOOR_ROW)
    if floor is not None and not is_floor(name):
      summary['floor_wall_s'] = floor['median_wall_s']
      summary['wall_vs_floor'] = (
          summary['median_wall_s'] / floor['median_wall_s'])
    fedavg = algorithms.get(FEDAVG + _mode(name))
    if fedavg is None:
      continue
    summary['wall_vs_fedavg'] = (
        summary['median_wall_s'] / fedavg['median_wall_s'])
    summary['cpu_vs_fedavg'] = (
        summary['median_cpu_s'] / fedavg['median_cpu_s']
        if fedavg['median_cpu_s'] > 0 else None)


# --- Memory: one subprocess per algorithm and cohort size. ---


def measure_memory_here(name: str, num_clients: int,
                        workload: Workload) -> dict[str, Any]:
  """Peak RSS increase of building and running `name` in this process."""
  runner = make_runner(name, workload)
  cohort = make_cohort(workload, num_clients)
  if not is_floor(name):
    # Start TFF's worker with a trivial computation first, so that the
    # worker's own start-up is in the baseline, not in the algorithm's peak.
    tff.tensorflow.computation(lambda: tf.constant(0))()
  workers = runtime.own_worker_pids() if not is_floor(name) else []
  pids = [os.getpid()] + workers
  baseline = {p: _status_bytes(p, 'VmRSS') for p in pids}
  reset = all(_reset_peak_rss(p) for p in pids)
  if not reset:
    # Without a reset the peak so far (TF's import) may hide a smaller
    # algorithm peak; the baseline then is that earlier peak.
    baseline = {p: _status_bytes(p, 'VmHWM') for p in pids}
  runner.build(cohort)
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


def _run_memory_subprocess(model_name: str, name: str, num_clients: int,
                           work_dir: str) -> dict[str, Any]:
  """Runs `measure_memory_here` in a fresh interpreter; returns its JSON."""
  output = os.path.join(work_dir, f'{model_name}_{name}_{num_clients}.json')
  log = os.path.join(work_dir, f'{model_name}_{name}_{num_clients}.log')
  command = [
      sys.executable, '-m', 'benchmarks.round_time', f'--algorithm={name}',
      f'--models={model_name}', f'--cohort_sizes={num_clients}',
      f'--memory_output={output}',
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


def measure_memory(model_name: str, names: list[str],
                   results: dict[str, Any]) -> None:
  """Adds a `memory` entry to every row of every cohort."""
  with tempfile.TemporaryDirectory(prefix='round_time_memory_') as work_dir:
    for cohort in results['cohorts']:
      num_clients = cohort['clients_per_round']
      for name in names:
        start = time.perf_counter()
        memory = _run_memory_subprocess(model_name, name, num_clients,
                                        work_dir)
        cohort['algorithms'][name]['memory'] = memory
        if 'error' not in memory:
          _progress(
              f'memory {model_name} {name}, {num_clients} clients: +'
              f'{memory["python_increase_mib"]:.0f} MiB Python, +'
              f'{memory["worker_increase_mib"]:.0f} MiB worker '
              f'({time.perf_counter() - start:.0f}s)')


# --- Reporting. ---


def machine_info() -> dict[str, Any]:
  return collections.OrderedDict(
      **round_reports.hardware_info(),
      python=platform.python_version(),
      tensorflow=tf.__version__,
      tensorflow_federated=tff.__version__,
      tff_mixed=tff_mixed.__version__,
  )


def _memory_cell(memory: Optional[dict[str, Any]]) -> str:
  if not memory:
    return 'not measured'
  if 'error' in memory:
    return 'failed'
  if is_floor(memory['algorithm']):
    return f'{memory["python_increase_mib"]:.0f} (no worker)'
  total = memory['python_increase_mib'] + memory['worker_increase_mib']
  return (f'{total:.0f} = {memory["python_increase_mib"]:.0f} + '
          f'{memory["worker_increase_mib"]:.0f}')


def _goal_cell(name: str, summary: dict[str, Any], goal: float) -> str:
  if name == FEDAVG:
    return 'reference'
  if name == FEDAVG + GROUPED:
    return 'reference (grouped)'
  if is_floor(name) or 'wall_vs_fedavg' not in summary:
    return '-'
  return 'yes' if summary['wall_vs_fedavg'] <= goal else '**no**'


def _linear_cost(cohorts: list[dict[str, Any]],
                 name: str) -> Optional[tuple[float, float]]:
  """`(fixed s, s per client)` of row `name`, through the extreme cohorts."""
  small, large = cohorts[0], cohorts[-1]
  n0, n1 = small['clients_per_round'], large['clients_per_round']
  if n1 == n0 or name not in small['algorithms']:
    return None
  t0 = small['algorithms'][name]['median_wall_s']
  t1 = large['algorithms'][name]['median_wall_s']
  per_client = (t1 - t0) / (n1 - n0)
  return t0 - per_client * n0, per_client


def best_vs_floor(cohort: dict[str, Any],
                  algorithm: str) -> Optional[tuple[str, float]]:
  """`algorithm`'s faster mode in a cohort: `(row, ratio to its floor)`."""
  rows = [(s['wall_vs_floor'], n) for n, s in cohort['algorithms'].items()
          if algorithm_of(n) == algorithm and 'wall_vs_floor' in s]
  if not rows:
    return None
  ratio, name = min(rows)
  return name, ratio


def _model_lines(model_name: str, result: dict[str, Any],
                 config: dict[str, Any], over_goal: list[str]) -> list[str]:
  """The tables of one model; appends rows over the FedAvg goal."""
  goal = config['goal_ratio']
  memory = config['measure_memory']
  lines = []
  for cohort in result['cohorts']:
    n, groups = cohort['clients_per_round'], cohort['groups']
    lines += [
        '',
        f'### {model_name} model (input {result["input_dim"]}, hidden '
        f'{result["hidden_units"]}): {n} clients per round'
        + (f', {cohort["timed_rounds"]} timed rounds'
           if config.get('min_timed_seconds') else ''),
        '',
        '| Row | s/round (median) | min-max | x FedAvg (same mode) | '
        'x its floor | CPU s/round | first round (s) | build (s) | '
        + ('peak RSS increase (MiB) | ' if memory else '')
        + f'within {goal:g}x |',
        '|---|---:|---:|---:|---:|---:|---:|---:|'
        + ('---:|' if memory else '') + ':---:|',
    ]
    for name, s in cohort['algorithms'].items():
      lines.append(
          f'| {_row_name(name, groups)} | {s["median_wall_s"]:.3f} | '
          f'{s["min_wall_s"]:.3f}-{s["max_wall_s"]:.3f} | '
          f'{_fmt(s.get("wall_vs_fedavg"), 2)} | '
          f'{"-" if is_floor(name) else _fmt(s.get("wall_vs_floor"), 2)} | '
          f'{s["median_cpu_s"]:.3f} | {s["first_round_s"]:.2f} | '
          f'{s["build_s"]:.2f} | '
          + (f'{_memory_cell(s.get("memory"))} | ' if memory else '')
          + f'{_goal_cell(name, s, goal)} |')
      if _goal_cell(name, s, goal) == '**no**':
        # The ranges let a reader tell a real slowdown from a burst of other
        # load on the machine during a few rounds.
        over_goal.append(
            f'{model_name}, {_row_name(name, groups)} at {n} clients: '
            f'{s["wall_vs_fedavg"]:.2f}x wall, '
            f'{_fmt(s.get("cpu_vs_fedavg"), 2)}x CPU (timed rounds '
            f'{s["min_wall_s"]:.3f}-{s["max_wall_s"]:.3f}s)')
  costs = []
  for name in (FEDAVG, FEDAVG + GROUPED, FEDAVG + FLOOR_ROW):
    cost = _linear_cost(result['cohorts'], name)
    if cost is not None:
      groups = result['cohorts'][-1]['groups']
      costs.append(f'{_row_name(name, groups)} {cost[0] * 1e3:.0f} ms + '
                   f'{cost[1] * 1e3:.2f} ms per client')
  if costs:
    sizes = [c['clients_per_round'] for c in result['cohorts']]
    lines += ['', f'Where the time goes ({model_name} model; a line through '
              f'{sizes[0]} and {sizes[-1]} clients, fixed per round + per '
              'client): ' + '; '.join(costs) + '.']
  return lines


def _unfused_text(report: dict[str, Any]) -> str:
  """The grouped rows that ran composed although fusing was asked for."""
  unfused = sorted({
      f'{model} {_DISPLAY_NAMES[algorithm_of(name)]}'
      for model, result in report['models'].items()
      for cohort in result['cohorts']
      for name, row in cohort['algorithms'].items()
      if name.endswith(GROUPED) and row.get('fused') is False})
  if not unfused:
    return ''
  return (', but ' + ', '.join(unfused) + ', whose rounds that form cannot '
          'hold (run as composed)')


def render_markdown(report: dict[str, Any]) -> str:
  """The BENCHMARKS.md text for a report (as written to the JSON file)."""
  config = report['config']
  machine = report['machine']
  goal = config['goal_ratio']
  sizes = ', '.join(f'{n:,}' for n in config['clients_per_round'])
  lines = [
      '## Round times of every algorithm (benchmarks/round_time.py)'
      if config.get('section', 'round_time') == 'round_time' else
      f'## Round times at {sizes} clients per round '
      f'(benchmarks/round_time.py, {config["section"]})',
      '',
      f'Generated by `{report["command"]}` on {report["date"]}, from the '
      f'raw numbers in `{config["output_json"]}`.',
      '',
      *round_reports.machine_lines(machine),
      *round_reports.workers_lines(config),
      '* Load average (1 min) at start / end: ' + '; '.join(
          f'{m} model {_fmt(r["load_average"]["start"], 2)} / '
          f'{_fmt(r["load_average"]["end"], 2)}'
          for m, r in report['models'].items())
      + '. Other processes on the machine slow wall times, less so CPU '
      'times.',
      '* Models: binary classifiers '
      '(`tff_mixed.models.dense.build_binary_classifier`): ' + '; '.join(
          f'{m}: input {r["input_dim"]}, hidden layers {r["hidden_units"]}'
          for m, r in report['models'].items()) + '.',
      f'* Clients: K = {config["client_steps"]} local SGD steps of batch '
      f'{config["client_batch_size"]} (every client holds exactly K batches; '
      'mixed algorithms run with `client_steps=K`). Central data: '
      f'{config["central_examples"]} examples in an `ExampleStore` read in '
      'the worker (packed into one file for the small model; a file per '
      'example for the CelebA-size one, as the CelebA task holds its '
      'central images), '
      f'central batch {config["central_batch_size"]}; Parallel Training and '
      '2-way GT take K_c = K central steps, 1-way GT one central gradient; '
      f'Example Transfer sends {config["transfer_examples"]} central '
      'examples per client.',
      '* Modes: per-client, one client per CLIENTS member (TFF builds and '
      'sends a dataset per client); grouped, `tff_mixed.ClientGroups` with '
      f'`--clients_per_group={config["clients_per_group"]}` (0: one group '
      'per core), each group training its members in one TF computation '
      'that reads their batches itself from an `ExampleStore` of the cohort '
      '(small model: packed, one file; CelebA-size: a file per example)'
      + _members_at_once_text(config.get('members_at_once', []))
      + _rounds_per_call_text(config.get('rounds_per_call', 1))
      + ('; each round\'s stages fused into one TF computation each '
         '(`fused_round.build_fused_next`, TFF\'s MapReduceForm; the same '
         'numbers, tests/fused_round_test.py)' + _unfused_text(report)
         if config.get('fused_rounds') else '') +
      '. The same model and metrics either way '
      '(tests/client_groups_test.py).'
      + ('' if config.get('per_client', True) else
         ' Per-client rows not timed here (`--per_client=false`; the '
         'Makefile\'s `benchmark-scale` says why).'),
      f'* Timing: {config["warmup_rounds"]} warm-up rounds (the first '
      'includes compilation) then the median over '
      + (f'at least {config["timed_rounds"]} timed rounds, more until a '
         f'cohort\'s timed rounds took {config["min_timed_seconds"]:g} s '
         '(`--min_timed_seconds`; each cohort\'s count in its heading)'
         if config.get('min_timed_seconds') else
         f'{config["timed_rounds"]} timed rounds') +
      ', all rows interleaved '
      'round-robin (a new seeded shuffle of the rows every cycle, '
      '`round_reports.cycle_order`) in one process. CPU s = this process + '
      'its TFF `worker_binary` (where TFF executes computations; counted in '
      '10 ms ticks); it can exceed wall time, as the worker uses all cores. '
      'Build: tracing the process (per-client processes once per model, '
      'grouped ones per cohort, as their groups hold the cohort\'s arrays).',
      '* Compute floors (`benchmarks/compute_floor.py`): for each '
      'algorithm, the arithmetic of its round in one plain `tf.function` '
      '(no TFF, no metrics, no sampling or reading of data) on the batches '
      'its process trains on: every client\'s K SGD steps, one client after '
      'another, and the server mean, plus its own central work on central '
      f'batches of {config["central_batch_size"]} (round 0\'s, sampled as '
      'the process samples them). Parallel Training: K_c central SGD steps '
      'from x^(t) and the merge of x_f and x_c; 1-way GT: the central '
      'gradient at x^(t), `w_c g~_c` added to every client step; 2-way GT: '
      'the clients\' `w_c g~_c`, K_c central steps with `w_f g~_f`, the '
      'merge, and both augmenting gradients for the next round (g~_f from '
      'the mean update, eq. 10); Example Transfer: no central work, its '
      'clients\' batches holding their transferred examples (FedAvg\'s '
      'arithmetic). tests/round_time_test.py checks that each floor\'s '
      'rounds give its process\'s weights. "x its floor" divides a row by '
      'its algorithm\'s floor, timed in the same round-robin; a floor row\'s '
      '"x FedAvg" is against FedAvg\'s floor: what its central work adds.',
  ]
  if config['measure_memory']:
    lines.append(
        f'* Peak memory: one fresh subprocess per row and cohort size, '
        f'{config["memory_rounds"]} rounds; the increase of peak RSS (VmHWM, '
        'reset after start-up) over RSS before the process is built, as '
        'total = Python process + TFF worker, in MiB.')
  lines.append(
      f'* Goals: every mixed algorithm within {goal:g}x the wall time per '
      'round of FedAvg in the same mode; every algorithm, in its faster mode '
      f'at the largest cohort, within {config["floor_goal"]:g}x its own '
      'compute floor.')
  over_goal = []
  for model_name, result in report['models'].items():
    lines += _model_lines(model_name, result, config, over_goal)
  lines += ['', '### Summary', '']
  if over_goal:
    lines.append(f'Above {goal:g}x FedAvg of the same mode (wall time):')
    lines.append('')
    lines += [f'* {entry}' for entry in over_goal]
  else:
    lines.append(f'Every mixed algorithm is within {goal:g}x FedAvg of the '
                 'same mode.')
  lines += _floor_table(report)
  lines += ['', _floor_verdict(report)]
  lines.append('')
  return '\n'.join(lines)


def _floor_table(report: dict[str, Any]) -> list[str]:
  """Every process row's ratio to its own floor at the largest cohort."""
  columns = []
  for model_name, result in report['models'].items():
    cohort = result['cohorts'][-1]
    for mode, label in (('', 'per-client'), (GROUPED, 'grouped')):
      if any(_mode(n) == mode and 'wall_vs_floor' in s
             for n, s in cohort['algorithms'].items()):
        columns.append((f'{model_name}, {label}, '
                        f'{cohort["clients_per_round"]} clients', mode,
                        cohort['algorithms']))
  if not columns:
    return []
  lines = ['', 'Each algorithm against its own compute floor at the largest '
           'cohort (wall time, x its floor):', '',
           '| Algorithm | ' + ' | '.join(c[0] for c in columns) + ' |',
           '|---|' + '---:|' * len(columns)]
  for algorithm in _TIMED_ALGORITHMS:
    cells = [rows.get(algorithm + mode, {}).get('wall_vs_floor')
             for _, mode, rows in columns]
    if any(c is not None for c in cells):
      lines.append(f'| {_DISPLAY_NAMES[algorithm]} | '
                   + ' | '.join(_fmt(c, 2, 'x') for c in cells) + ' |')
  return lines


def _floor_verdict(report: dict[str, Any]) -> str:
  """The closing line: each algorithm's ratio to its own floor.

  At the largest cohort, in the algorithm's faster mode, against
  `--floor_goal`.
  """
  target = report['config']['floor_goal']
  parts, met = [], []
  for model_name, result in report['models'].items():
    cohort = result['cohorts'][-1]
    ratios = []
    for algorithm in _TIMED_ALGORITHMS:
      best = best_vs_floor(cohort, algorithm)
      if best is None:
        continue
      row, ratio = best
      met.append(ratio <= target)
      mode = 'grouped' if row.endswith(GROUPED) else 'per-client'
      ratios.append(f'{_DISPLAY_NAMES[algorithm]} {ratio:.2f}x ({mode})')
    if ratios:
      parts.append(f'{model_name} model at {cohort["clients_per_round"]} '
                   'clients: ' + ', '.join(ratios))
  if not parts:
    return 'No ratio to a compute floor: the floors were not timed.'
  verdict = ('meets' if all(met) else
             'does not meet' if not any(met) else 'partly meets')
  return ('**Every algorithm against its own compute floor at the largest '
          'cohort (its faster mode):** ' + '; '.join(parts)
          + f'. {sum(met)} of {len(met)} within {target:g}x. This {verdict} '
          f'the goal of {target:g}x its floor.')


def _progress(message: str) -> None:
  print(f'[round_time {time.strftime("%H:%M:%S")}] {message}', flush=True)


def _config() -> dict[str, Any]:
  return collections.OrderedDict(
      algorithms=list(_ALGORITHMS.value),
      models=list(_MODELS.value),
      clients_per_round=[int(c) for c in _COHORT_SIZES.value],
      clients_per_group=_CLIENTS_PER_GROUP.value,
      members_at_once=list(_MEMBERS_AT_ONCE_PER_MODEL.value),
      rounds_per_call=_ROUNDS_PER_CALL.value,
      fused_rounds=_FUSED_ROUNDS.value,
      warmup_rounds=_WARMUP_ROUNDS.value,
      timed_rounds=_TIMED_ROUNDS.value,
      min_timed_seconds=_MIN_TIMED_SECONDS.value,
      input_dim=_INPUT_DIM.value,
      hidden_units=[int(u) for u in _HIDDEN_UNITS.value],
      client_steps=_CLIENT_STEPS.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      central_examples=_CENTRAL_EXAMPLES.value,
      central_batch_size=_CENTRAL_BATCH_SIZE.value,
      transfer_examples=_TRANSFER_EXAMPLES.value,
      learning_rate=_CLIENT_LR.value,
      seed=_SEED.value,
      goal_ratio=_GOAL_RATIO.value,
      floor_goal=_FLOOR_GOAL.value,
      measure_memory=_MEASURE_MEMORY.value,
      memory_rounds=_MEMORY_ROUNDS.value,
      output_json=_OUTPUT_JSON.value,
      per_client=_PER_CLIENT.value,
      section=_SECTION.value,
      worker_addresses=list(_WORKER_ADDRESSES.value),
      local_workers=_LOCAL_WORKERS.value,
      # TFF workers the rounds ran on; 0: TFF's local runtime.
      workers=_LOCAL_WORKERS.value or len(_WORKER_ADDRESSES.value),
  )


# The key of a flag in the reports' config where it differs from the flag's
# name: the cohort sizes are `clients_per_round`, as in every report since
# the first.
# The reports' JSON keeps the keys it has always had.
_CONFIG_KEYS = {'cohort_sizes': 'clients_per_round',
                'client_lr': 'client_learning_rate'}


def flags_config(names: Sequence[str]) -> dict[str, Any]:
  """The values of the flags `names`, each under its reports' config key."""
  return collections.OrderedDict(
      (_CONFIG_KEYS.get(name, name), flags.FLAGS[name].value)
      for name in names)


def _rows() -> list[str]:
  """The rows to time, FedAvg first: per-client and grouped, then floors."""
  grouped = _CLIENTS_PER_GROUP.value != 1
  floors = FLOOR in _ALGORITHMS.value
  return [r for r in _ALL_ROWS
          if algorithm_of(r) in _ALGORITHMS.value
          and (grouped or not r.endswith(GROUPED))
          and (_PER_CLIENT.value or r.endswith(GROUPED) or is_floor(r))
          and (floors or not is_floor(r))]


def time_model(model_name: str, names: list[str],
               clients_per_round: list[int]) -> dict[str, Any]:
  """Times (and optionally measures the memory of) every row of a model."""
  workload = make_workload(model_name)
  input_dim, hidden_units = model_dims(model_name)
  load_start = os.getloadavg()[0]
  start = time.perf_counter()
  _progress(f'{model_name} model: timing {names} at {clients_per_round} '
            'clients per round')
  timing = time_algorithms(names, clients_per_round, workload)
  if _MEASURE_MEMORY.value:
    _progress('measuring peak memory, one subprocess per row and cohort size')
    measure_memory(model_name, names, timing)
  return collections.OrderedDict(
      input_dim=input_dim, hidden_units=list(hidden_units),
      load_average=collections.OrderedDict(start=load_start,
                                           end=os.getloadavg()[0]),
      total_s=time.perf_counter() - start,
      cohorts=timing['cohorts'])


@contextlib.contextmanager
def _on_local_workers(num_workers: int) -> Iterator[None]:
  """Runs the block on `num_workers` new local TFF workers (0: as it is)."""
  if not num_workers:
    yield
    return
  # Children of this process, so their CPU time counts as the worker's does.
  with remote.local_workers(num_workers) as workers:
    addresses = [w.address for w in workers]
    _progress(f'started {num_workers} local TFF workers at {addresses}')
    with remote.remote_execution(addresses):
      yield


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  clients_per_round = [int(c) for c in _COHORT_SIZES.value]

  if _ALGORITHM.value is not None:
    if (len(clients_per_round) != 1 or len(_MODELS.value) != 1
        or not _MEMORY_OUTPUT.value):
      raise app.UsageError('--algorithm needs exactly one --models, one '
                           '--cohort_sizes and --memory_output.')
    memory = measure_memory_here(_ALGORITHM.value, clients_per_round[0],
                                 make_workload(_MODELS.value[0]))
    reports_lib.atomic_write_text(_MEMORY_OUTPUT.value,
                                  json.dumps(memory, indent=2))
    return

  names = _rows()
  start = time.perf_counter()
  with _on_local_workers(_LOCAL_WORKERS.value):
    models = collections.OrderedDict(
        (m, time_model(m, names, clients_per_round)) for m in _MODELS.value)
  report = collections.OrderedDict(
      command=round_reports.command_line('benchmarks.round_time'),
      date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
      machine=machine_info(),
      config=_config(),
      total_s=time.perf_counter() - start,
      models=models,
  )
  json_path = round_reports.resolve(_OUTPUT_JSON.value)
  markdown_path = round_reports.resolve(_OUTPUT_MARKDOWN.value)
  reports_lib.atomic_write_text(json_path, json.dumps(report, indent=2) + '\n')
  markdown = render_markdown(report)
  # Its own section of BENCHMARKS.md: other benchmarks keep theirs.
  markdown_sections.write_section(markdown_path, _SECTION.value, markdown,
                                  title='Benchmarks')
  print(markdown, flush=True)
  _progress(f'wrote {markdown_path} and {json_path} in '
            f'{report["total_s"]:.0f}s')


if __name__ == '__main__':
  cli.run(main)
