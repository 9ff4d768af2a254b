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
r"""Where the wall time of one TFF FedAvg round goes, and TFF's own knobs.

`benchmarks/round_time.py` finds TFF's FedAvg round (
`tff.learning.algorithms.build_weighted_fed_avg`) 40-60x slower than the same
SGD steps in one plain `tf.function`. This binary takes that round apart on
the same workload (`round_time.make_workload` / `make_cohort`, the same
flags), at each of `--cohort_sizes`, timing separately:

* the full round as `round_time` runs it (client datasets built in Python
  with `tf.data.Dataset.from_tensor_slices`, passed to `next`);
* the same round with client-id composed data
  (`tff.simulation.compose_dataset_computation_with_learning_process`): the
  worker builds each client's dataset from its int id by slicing a constant;
* per-client dispatch: `federated_sum(federated_map(f, x))` over N small
  tensors (f adds one) and over the N datasets (f counts the elements): the
  executor's per-client cost without training, with and without datasets;
* Python-side: building the N datasets (`make_cohort`) and serializing them
  as TFF does before a call (`value_serialization.serialize_value` with the
  round's `SequenceType`), without executing anything;
* aggregation: `federated_mean` of N model-sized structures sent from
  Python, and `federated_mean(federated_broadcast(w))` (the round's
  communication with no training);
* tracing: the process's build time and its first round minus the median;
* the compute floor (`round_time.build_floor_round`);
* TFF's knob: the local C++ execution context's
  `max_concurrent_computation_calls` (`--concurrency`) and `stream_structs`,
  each a fresh context (and `worker_binary`) running the full round; these
  rounds interleave among themselves.

Every timing is the median over `--timed_rounds` calls after
`--warmup_rounds` (the first compiles), in wall seconds and in CPU seconds
of this process plus its TFF worker (less sensitive to other load on a
shared machine); the measurements under TFF's default
context run interleaved round-robin with a rotating order, as in
`round_time`, so that other load on the machine hits them alike. The results
go to their section of BENCHMARKS.md and to a JSON file of raw numbers.

With `stream_structs=True`, TFF 0.87 prints a few harmless "Exception
ignored ... cannot dispose" tracebacks from value finalizers; the run goes
on.

Usage, from the repository root:

  .venv/bin/python -m benchmarks.round_profile
  .venv/bin/python -m benchmarks.round_profile --cohort_sizes=100 \
      --concurrency=-1,2
"""

import collections
import gc
import json
import os
import statistics
import time
from typing import Any, Callable, NamedTuple

# pylint: disable=g-bad-import-order
# First: quiets TensorFlow's C++ logs before TensorFlow loads.
from experiments import tf_log_level  # pylint: disable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from tensorflow_federated.python.core.impl.executors import value_serialization

# Defines the workload flags (--cohort_sizes, --warmup_rounds,
# --timed_rounds, --input_dim, ...) that this binary shares with round_time.
from benchmarks import round_time
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from tff_mixed import runtime
from tff_mixed.training import reports as reports_lib
# pylint: enable=g-bad-import-order

_SECTION = 'round_profile'
_CONCURRENCY = flags.DEFINE_list(
    'concurrency', ['-1', '1', '2', '4'],
    'Values of the C++ execution context\'s max_concurrent_computation_calls '
    'to try on the full round (-1: no limit, TFF\'s default).')
_STREAM_STRUCTS = flags.DEFINE_bool(
    'stream_structs', True,
    'Also try the context\'s stream_structs=True (with no concurrency limit).')
flags.register_validator(
    'concurrency',
    lambda v: bool(v) and all(s.lstrip('-').isdigit() for s in v),
    '--concurrency must be a non-empty list of ints.')
# The shared flags, with this binary's own outputs and more timed rounds.
flags.FLAGS.set_default('output_json',
                        os.path.join('benchmarks', 'results',
                                     'round_profile.json'))
flags.FLAGS.set_default('timed_rounds', 7)

_LABELS = collections.OrderedDict([
    ('fedavg_round', 'FedAvg round, datasets from Python (as round_time)'),
    ('composed_round', 'FedAvg round, client-id composed data'),
    ('dispatch_tensors', 'dispatch: sum(map(+1)) over N float32[1]'),
    ('dispatch_datasets', 'dispatch: sum(map(count)) over the N datasets'),
    ('python_datasets', 'Python: build the N datasets (make_cohort)'),
    ('python_serialize', 'Python: serialize_value of the N datasets'),
    ('aggregate_from_python', 'aggregation: mean of N model-sized values '
     'from Python'),
    ('broadcast_mean', 'aggregation: mean(broadcast(model)), no training'),
    ('floor', 'compute floor (plain tf.function)'),
])


class _Probe(NamedTuple):
  """One measured call: `run()` does it once; `build_s` is its set-up time."""

  key: str
  run: Callable[[], Any]
  build_s: float = 0.0


def _timed(fn: Callable[[], Any]) -> float:
  start = time.perf_counter()
  fn()
  return time.perf_counter() - start


def _round_probe(key: str, build: Callable[[], Any], data) -> _Probe:
  """A `LearningProcess` built by `build`; each run is one `next` on `data`."""
  holder = {}
  build_s = _timed(lambda: holder.update(process=build()))
  process = holder['process']
  holder['state'] = process.initialize()

  def run():
    # TFF's synchronous context returns materialized values: the round is
    # over when `next` returns.
    holder['state'] = process.next(holder['state'], data).state

  return _Probe(key, run, build_s)


def _dataset_computation(cohort: round_time.Cohort, batch_size: int):
  """int32 client id -> that client's dataset, sliced from a constant.

  The data lives in the computation's graph, so only the id crosses from
  Python to the worker, and the worker builds the dataset.
  """
  x = cohort.x.reshape(cohort.x.shape[0], -1, cohort.x.shape[-1])
  y = cohort.y.reshape(cohort.y.shape[0], -1, cohort.y.shape[-1])

  @tff.tensorflow.computation(tf.int32)
  def client_dataset(client_id):
    return tf.data.Dataset.from_tensor_slices(
        (tf.gather(tf.constant(x), client_id),
         tf.gather(tf.constant(y), client_id))).batch(batch_size)

  return client_dataset


def _dispatch_probes(cohort: round_time.Cohort,
                     sequence_type: tff.SequenceType) -> list[_Probe]:
  """Trivial federated computations over N client values (no training)."""
  n = len(cohort.datasets)
  tensor_type = tff.TensorType(np.float32, [1])

  @tff.tensorflow.computation(tensor_type)
  def plus_one(x):
    return x + 1.0

  @tff.federated_computation(tff.FederatedType(tensor_type, tff.CLIENTS))
  def map_tensors(values):
    return tff.federated_sum(tff.federated_map(plus_one, values))

  @tff.tensorflow.computation(sequence_type)
  def count(dataset):
    return dataset.reduce(np.int32(0), lambda n, _: n + 1)

  @tff.federated_computation(tff.FederatedType(sequence_type, tff.CLIENTS))
  def map_datasets(datasets):
    return tff.federated_sum(tff.federated_map(count, datasets))

  tensors = [np.ones([1], np.float32) for _ in range(n)]
  return [
      _Probe('dispatch_tensors', lambda: map_tensors(tensors)),
      _Probe('dispatch_datasets', lambda: map_datasets(cohort.datasets)),
  ]


def _python_probes(workload: round_time.Workload, n: int,
                   sequence_type) -> list[_Probe]:
  """Dataset creation and TFF's serialization of them, nothing executed."""
  datasets = round_time.make_cohort(workload, n).datasets

  def serialize():
    for dataset in datasets:
      value_serialization.serialize_value(dataset, sequence_type)

  return [
      _Probe('python_datasets', lambda: round_time.make_cohort(workload, n)),
      _Probe('python_serialize', serialize),
  ]


def _aggregation_probes(workload: round_time.Workload,
                        n: int) -> list[_Probe]:
  """Means of model-sized values: sent from Python, or broadcast from SERVER."""
  weights = tuple(np.asarray(w) for w in workload.model.initial_weights[0])
  model_type = tff.StructWithPythonType(
      [tff.TensorType(w.dtype, w.shape) for w in weights], tuple)

  @tff.federated_computation(tff.FederatedType(model_type, tff.CLIENTS))
  def mean_of_clients(values):
    return tff.federated_mean(values)

  @tff.federated_computation(
      tff.FederatedType(model_type, tff.SERVER),
      tff.FederatedType(np.int32, tff.CLIENTS))
  def broadcast_mean(model, clients):
    # `clients` only sets the cohort size, as the datasets do in a round.
    del clients
    return tff.federated_mean(tff.federated_broadcast(model))

  client_values = [weights] * n
  markers = [np.int32(0)] * n
  return [
      _Probe('aggregate_from_python', lambda: mean_of_clients(client_values)),
      _Probe('broadcast_mean', lambda: broadcast_mean(weights, markers)),
  ]


def _floor_probe(workload: round_time.Workload,
                 cohort: round_time.Cohort) -> _Probe:
  floor_round = round_time.build_floor_round(workload.model,
                                             workload.learning_rate)
  trainable = tuple(tf.constant(w) for w in workload.model.initial_weights[0])
  x, y = tf.constant(cohort.x), tf.constant(cohort.y)
  # Eager CPU execution is synchronous: the result exists on return.
  return _Probe('floor', lambda: floor_round(trainable, x, y))


def _build_probes(workload: round_time.Workload, n: int) -> list[_Probe]:
  """Every measurement under the default context, at cohort size `n`."""
  cohort = round_time.make_cohort(workload, n)
  fedavg = _round_probe(
      'fedavg_round',
      lambda: round_time.build_process(round_time.FEDAVG, workload),
      cohort.datasets)
  composed = _round_probe(
      'composed_round',
      lambda: tff.simulation.compose_dataset_computation_with_learning_process(
          _dataset_computation(cohort, workload.client_batch_size),
          round_time.build_process(round_time.FEDAVG, workload)),
      list(range(n)))
  # The clients' data type, with which `next` serializes its argument.
  sequence_type = tff.SequenceType(
      tff.types.tensorflow_to_type(cohort.datasets[0].element_spec))
  return [fedavg, composed, *_dispatch_probes(cohort, sequence_type),
          *_python_probes(workload, n, sequence_type),
          *_aggregation_probes(workload, n), _floor_probe(workload, cohort)]


def _cpu_now() -> float:
  """CPU seconds so far of this process and its TFF worker(s)."""
  # pylint: disable=protected-access
  return sum(round_time._cpu_seconds(pid)
             for pid in (os.getpid(), *runtime.own_worker_pids()))
  # pylint: enable=protected-access


def _summary(wall: list[float], cpu: list[float],
             first_s: float) -> dict[str, Any]:
  median = statistics.median(wall)
  return collections.OrderedDict(
      median_s=median, min_s=min(wall), max_s=max(wall),
      median_cpu_s=statistics.median(cpu), first_s=first_s,
      first_minus_median_s=first_s - median, times_s=wall, cpu_s=cpu)


def _time_interleaved(probes: list[_Probe], warmup: int,
                      timed: int) -> dict[str, dict[str, Any]]:
  """Warm-up then timed calls, round-robin over `probes`, rotating order.

  Wall and CPU seconds (this process + its worker; CPU in 10 ms ticks, so
  only its median over calls means much for short calls).
  """
  first = {p.key: _timed(p.run) for p in probes}
  for _ in range(warmup - 1):
    for probe in probes:
      probe.run()
  wall = {p.key: [] for p in probes}
  cpu = {p.key: [] for p in probes}
  for i in range(timed):
    shift = i % len(probes)
    for probe in probes[shift:] + probes[:shift]:
      cpu_start = _cpu_now()
      wall[probe.key].append(_timed(probe.run))
      cpu[probe.key].append(_cpu_now() - cpu_start)
  return {p.key: _summary(wall[p.key], cpu[p.key], first[p.key])
          for p in probes}


def _knob_settings() -> list[tuple[int, bool]]:
  """(max_concurrent_computation_calls, stream_structs); TFF's default first."""
  settings = [(-1, False)] + [(int(c), False) for c in _CONCURRENCY.value
                              if int(c) > 0]
  if _STREAM_STRUCTS.value:
    settings.append((-1, True))
  return settings


def _in_context(context, fn: Callable[[], Any]) -> Callable[[], Any]:
  """`fn` run with `context` as TFF's current execution context."""

  def run():
    with tff.framework.get_context_stack().install(context):
      return fn()

  return run


def _knob_rows(workload: round_time.Workload, n: int, warmup: int,
               timed: int) -> tuple[list[dict[str, Any]], set[int]]:
  """The full round under each context setting, interleaved.

  One fresh local C++ context (and `worker_binary`) per setting, all alive
  at once, so that their rounds interleave round-robin like the probes' and
  load from other processes hits them alike. Returns the rows and the PIDs
  of the workers these contexts started (those running at the end but not
  before: the default context keeps its own); the contexts die with this
  frame.
  """
  cohort = round_time.make_cohort(workload, n)
  settings = _knob_settings()
  probes = []
  before = set(runtime.own_worker_pids())
  for i, (concurrency, stream_structs) in enumerate(settings):
    context = tff.backends.native.create_sync_local_cpp_execution_context(
        max_concurrent_computation_calls=concurrency,
        stream_structs=stream_structs)
    probe = _in_context(context, lambda: _round_probe(
        f'setting_{i}',
        lambda: round_time.build_process(round_time.FEDAVG, workload),
        cohort.datasets))()
    probes.append(probe._replace(run=_in_context(context, probe.run)))
  timings = _time_interleaved(probes, warmup, timed)
  rows = []
  for probe, (concurrency, stream_structs) in zip(probes, settings):
    rows.append(timings[probe.key])
    rows[-1].update(max_concurrent_computation_calls=concurrency,
                    stream_structs=stream_structs, build_s=probe.build_s)
  return rows, set(runtime.own_worker_pids()) - before


def _time_knobs(workload: round_time.Workload, n: int, warmup: int,
                timed: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
  """`_knob_rows`, then its workers ended: the rows and a worker count.

  The count: workers running during (`during`) and still after (`left_after`,
  0 when each context's ServiceManager stopped its worker on collection).
  TFF's default context, which lives on, keeps its own worker.
  """
  rows, workers = _knob_rows(workload, n, warmup, timed)
  gc.collect()
  return rows, collections.OrderedDict(
      during=len(workers),
      left_after=len(workers & set(runtime.own_worker_pids())))


def profile_cohort(workload: round_time.Workload, n: int, warmup: int,
                   timed: int) -> dict[str, Any]:
  """All measurements at cohort size `n`, as the JSON's per-cohort entry."""
  _progress(f'{n} clients: building and timing the probes')
  load_start = os.getloadavg()[0]
  probes = _build_probes(workload, n)
  build_s = {p.key: p.build_s for p in probes if p.build_s}
  probes_timed = _time_interleaved(probes, warmup, timed)
  floor = probes_timed['floor']['median_s']
  for summary in probes_timed.values():
    summary['x_floor'] = summary['median_s'] / floor
  _progress(f'{n} clients: the context knobs {_knob_settings()}')
  knobs, knob_workers = _time_knobs(workload, n, warmup, timed)
  for row in knobs:
    row['x_floor'] = row['median_s'] / floor
    row['x_default'] = row['median_s'] / knobs[0]['median_s']
  return collections.OrderedDict(
      clients_per_round=n, build_s=build_s, probes=probes_timed, knobs=knobs,
      knob_workers=knob_workers,
      load_average=[load_start, os.getloadavg()[0]])


def _shares_line(cohort: dict[str, Any]) -> str:
  """One sentence on where the round's time goes, from the medians."""
  wall = {k: v['median_s'] for k, v in cohort['probes'].items()}
  cpu = {k: v['median_cpu_s'] for k, v in cohort['probes'].items()}

  def pct(key):
    # Wall and CPU shares of the round (CPU shares resist other load).
    return (f'{100.0 * wall[key] / wall["fedavg_round"]:.0f}% / '
            f'{100.0 * cpu[key] / max(cpu["fedavg_round"], 1e-9):.0f}%')

  parts = ('dispatch_datasets', 'broadcast_mean', 'floor')
  rest_wall = 1.0 - sum(wall[k] for k in parts) / wall['fedavg_round']
  rest_cpu = 1.0 - sum(cpu[k] for k in parts) / max(cpu['fedavg_round'],
                                                     1e-9)
  return (
      f'Where the time goes (share of FedAvg\'s round, wall / CPU): handing '
      f'the N datasets to a trivial per-client map and back '
      f'{pct("dispatch_datasets")} (Python-side serialization alone '
      f'{pct("python_serialize")}; N small tensors instead of datasets '
      f'{pct("dispatch_tensors")}), broadcast + mean of the model '
      f'{pct("broadcast_mean")}, the SGD arithmetic (floor) {pct("floor")}; '
      f'the remaining {100.0 * rest_wall:.0f}% / {100.0 * rest_cpu:.0f}% is '
      'the per-client training computation in the worker beyond those (an '
      'estimate: the parts overlap). Client-id composed data: '
      f'{wall["composed_round"] / wall["fedavg_round"]:.2f}x the round\'s '
      f'wall time, {cpu["composed_round"] / max(cpu["fedavg_round"], 1e-9):.2f}'
      f'x its CPU. {_knobs_sentence(cohort["knobs"])}')


def _knobs_sentence(knobs: list[dict[str, Any]]) -> str:
  """The context settings vs TFF's default (the first row)."""
  default = knobs[0]
  best = min(knobs, key=lambda r: r['median_s'])
  if best is default:
    return 'No context setting beat TFF\'s default (median wall time).'
  # Faster on every timed round than the default on any: not load noise.
  clear = best['max_s'] < default['min_s']
  return (
      f'Fastest context setting: {_knob_name(best)}, '
      f'{best["x_default"]:.2f}x the default\'s wall time '
      f'({best["median_cpu_s"] / max(default["median_cpu_s"], 1e-9):.2f}x '
      f'its CPU); its timed rounds '
      f'{"all beat" if clear else "overlap"} the default\'s'
      f'{"" if clear else " (within the noise)"}.')


def _knob_name(row: dict[str, Any]) -> str:
  concurrency = row['max_concurrent_computation_calls']
  name = f'max_concurrent_computation_calls={concurrency}'
  return name + (', stream_structs=True' if row['stream_structs'] else '')


def header_lines(title: str, report: dict[str, Any]) -> list[str]:
  """A profile section's title, provenance and load-average lines."""
  return [
      title,
      '',
      f'Generated on {report["date"]} by `{report["command"]}` on '
      f'{report["machine"]}; raw numbers in '
      f'`{report["config"]["output_json"]}`.',
      '',
      f'* Load average (1 min) at start / end: '
      f'{report["load_average"]["start"]:.2f} / '
      f'{report["load_average"]["end"]:.2f} (the machine is shared; other '
      'load slows wall times).',
  ]


def probe_table(probes: dict[str, dict[str, Any]],
                labels: dict[str, str]) -> list[str]:
  """A markdown table of timed probes (`_time_interleaved`, `x_floor`)."""
  lines = ['| measurement | s/call (median) | min-max | x floor | '
           'CPU s/call | first call (s) |', '|---|---:|---:|---:|---:|---:|']
  for key, s in probes.items():
    lines.append(f'| {labels[key]} | {s["median_s"]:.4f} | '
                 f'{s["min_s"]:.4f}-{s["max_s"]:.4f} | '
                 f'{s["x_floor"]:.1f} | {s["median_cpu_s"]:.3f} | '
                 f'{s["first_s"]:.2f} |')
  return lines


def write_report(report: dict[str, Any], section: str,
                 render: Callable[[dict[str, Any]], str]) -> None:
  """Writes the JSON report and its BENCHMARKS.md section (the flags')."""
  flag_values = flags.FLAGS
  json_path = _resolve(flag_values.output_json)
  reports_lib.atomic_write_text(json_path, json.dumps(report, indent=2) + '\n')
  markdown = render(report)
  markdown_sections.write_section(_resolve(flag_values.output_markdown),
                                  section, markdown, title='Benchmarks')
  print(markdown, flush=True)
  print(f'[{section} {time.strftime("%H:%M:%S")}] wrote '
        f'{flag_values.output_markdown} and {json_path} in '
        f'{report["total_s"]:.0f} s', flush=True)


def render_markdown(report: dict[str, Any]) -> str:
  """The BENCHMARKS.md section, from the report only."""
  config = report['config']
  lines = header_lines(
      '## Where a FedAvg round\'s time goes (benchmarks/round_profile.py)',
      report) + [
      f'* Workload as round_time: input {config["input_dim"]}, hidden '
      f'{[int(u) for u in config["hidden_units"]]}, K = '
      f'{config["client_steps"]} SGD steps of batch '
      f'{config["client_batch_size"]} per client.',
      f'* Timing: wall seconds per call, median of {config["timed_rounds"]} '
      f'after {config["warmup_rounds"]} warm-up calls (the first compiles), '
      'the default-context rows interleaved round-robin, and so the context '
      'rows among themselves; "x floor" divides '
      'by the compute floor\'s median. CPU s: this process + its TFF '
      '`worker_binary`, in 10 ms ticks (median per call). Context rows: '
      'each a fresh `create_sync_local_cpp_execution_context(...)` (its own '
      'worker) running the full round from Python datasets; compare them '
      'with the context row of the default setting (-1), not with the rows '
      'above, which ran in another interleaving.',
      '',
  ]
  for cohort in report['cohorts']:
    n = cohort['clients_per_round']
    load = cohort['load_average']
    lines += [f'### {n} clients per round', '',
              f'Load average (1 min) at this cohort\'s start / end: '
              f'{load[0]:.2f} / {load[1]:.2f}.', '',
              *probe_table(cohort['probes'], _LABELS)]
    for row in cohort['knobs']:
      lines.append(f'| context {_knob_name(row)} | {row["median_s"]:.4f} | '
                   f'{row["min_s"]:.4f}-{row["max_s"]:.4f} | '
                   f'{row["x_floor"]:.1f} | {row["median_cpu_s"]:.3f} | '
                   f'{row["first_s"]:.2f} |')
    build = ', '.join(f'{k} {v:.2f} s' for k, v in cohort['build_s'].items())
    fedavg = cohort['probes']['fedavg_round']
    rebuilds = [row['build_s'] for row in cohort['knobs']]
    lines += ['', f'Tracing: process build {build} (the first build in the '
              'process also pays one-time set-up; FedAvg rebuilt in each '
              f'fresh context: {min(rebuilds):.2f}-{max(rebuilds):.2f} s); '
              f'FedAvg\'s first round {fedavg["first_s"]:.2f} s, '
              f'{fedavg["first_minus_median_s"]:.2f} s over the median.', '',
              _shares_line(cohort), '']
  return '\n'.join(lines)


def _progress(message: str) -> None:
  print(f'[round_profile {time.strftime("%H:%M:%S")}] {message}', flush=True)


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(
      os.path.dirname(os.path.dirname(os.path.abspath(__file__))), path)


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  flag_values = flags.FLAGS
  workload = round_time.make_workload()
  load_start = os.getloadavg()[0]
  start = time.perf_counter()
  cohorts = [
      profile_cohort(workload, int(n), flag_values.warmup_rounds,
                     flag_values.timed_rounds)
      for n in flag_values.cohort_sizes]
  config = round_time.flags_config((
      'cohort_sizes', 'warmup_rounds', 'timed_rounds', 'input_dim',
      'hidden_units', 'client_steps', 'client_batch_size',
      'client_lr', 'seed', 'concurrency', 'stream_structs',
      'output_json'))
  report = collections.OrderedDict(
      command=results_lib.command_line('benchmarks.round_profile'),
      date=results_lib.utc_now(), machine=results_lib.machine_description(),
      load_average=collections.OrderedDict(start=load_start,
                                           end=os.getloadavg()[0]),
      config=config, total_s=time.perf_counter() - start, cohorts=cohorts)
  write_report(report, _SECTION, render_markdown)


if __name__ == '__main__':
  cli.run(main)
