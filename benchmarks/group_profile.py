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
r"""Where the time of a grouped FedAvg round goes (client groups).

`benchmarks/round_time.py` finds the grouped FedAvg round
(`tff_mixed.build_fedavg` with `tff_mixed.ClientGroups`, one group per core)
about 5x the compute floor at 100 clients. This binary takes that round apart
on round_time's workloads (`round_time.make_workload` / `make_cohort`, the
same flags: the small model, whose groups slice constants, and the
CelebA-size one, whose groups read an `ExampleStore`), at each
`--cohort_sizes`, timing:

* the grouped round through TFF, as round_time runs it;
* the group's computation alone (`group_work.build_group_work`, what the
  round maps over its groups) called directly, once per group, the groups
  in parallel threads and one after another: the round without federated
  dispatch, aggregation and server update; and called with no members
  (moving the model in and the sums out);
* per member, without training: nothing (the member loop and its call
  alone); its dataset as the group's client work builds it (`dataset_fn`
  and the client's training pipeline), not iterated; the same iterated
  to its end (`model_types.reduce_dataset`, the client loop's iteration);
  its batches drawn without an iterator
  (`Dataset.get_single_element` of them all); its rows as tensors, without
  tf.data (constant slices, or `ExampleStore.read`);
* the member loop from those tensors: the client work's local step, model
  reset, metrics, non-finite guard and weighted sums, no dataset per member;
* the compute floor (`compute_floor.build_floor_round`) in this process, all
  clients in one call and one call per group in parallel threads;
* TFF's fixed cost for the groups: `federated_mean(federated_broadcast(w))`
  over as many members as groups (`round_profile`'s aggregation probe).

Every probe but the floor is a TFF computation, run where the round runs
its groups: in TFF's worker (the same TF in this process's eager runtime
takes up to 3x longer there, as each per-member iterator instantiates its
dataset's functions anew under the eager runtime's graph optimizations).
Every timing is the median of `--timed_rounds` calls after
`--warmup_rounds` (the first traces), wall seconds and CPU seconds of this
process plus its TFF worker, interleaved round-robin with a rotating order
as in `round_profile`. The shares of the grouped round (its "Where a grouped
round's time goes" paragraph) are differences of these medians. The results
go to their section of BENCHMARKS.md and to a JSON file of raw numbers.

Usage, from the repository root:

  .venv/bin/python -m benchmarks.group_profile
  .venv/bin/python -m benchmarks.group_profile --models=small \
      --cohort_sizes=100
"""

import collections
import os
import threading
import time
from typing import Any, Callable

# pylint: disable=g-bad-import-order
# First: quiets TensorFlow's C++ logs before TensorFlow loads.
from experiments import tf_log_level  # pylint: disable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

# round_time defines the workload flags (--models, --cohort_sizes,
# --warmup_rounds, --timed_rounds, ...); round_profile its timing harness.
from benchmarks import compute_floor
from benchmarks import round_profile
from benchmarks import round_time
from experiments.common import results as results_lib
from tff_mixed.core import client_work
from tff_mixed.core import distributors
from tff_mixed.core import model_types
from tff_mixed.simulation import client_groups as client_groups_lib
from tff_mixed.simulation import group_work as group_work_lib
# pylint: enable=g-bad-import-order

_Probe = round_profile._Probe  # pylint: disable=protected-access

_SECTION = 'group_profile'
flags.FLAGS.set_default('output_json',
                        os.path.join('benchmarks', 'results',
                                     'group_profile.json'))
flags.FLAGS.set_default('timed_rounds', 7)
# The dataset path taken apart: groups read each member through a dataset.
flags.FLAGS.set_default('members_at_once_per_model', [])

_LABELS = collections.OrderedDict([
    ('grouped_round', 'grouped FedAvg round through TFF (as round_time)'),
    ('group_work_threads', 'group computation called directly, the groups '
     'in parallel threads'),
    ('group_work_sequential', 'group computation called directly, one group '
     'after another'),
    ('group_call', 'group computation called with no members, one per group '
     '(the model in, the sums out)'),
    ('member_loop', 'per member: nothing (the member loop and its call '
     'alone)'),
    ('member_datasets', 'per member: its dataset built, not iterated'),
    ('member_iterators', 'per member: its dataset iterated to the end (no '
     'training)'),
    ('member_batches_no_iterator', 'per member: its batches drawn without '
     'an iterator (get_single_element)'),
    ('member_rows', 'per member: its rows as tensors, no tf.data'),
    ('group_tensors', 'member loop from those tensors (no dataset per '
     'member)'),
    ('floor', 'compute floor (this process), all clients in one call'),
    ('floor_threads', 'compute floor (this process), one call per group in '
     'parallel threads'),
    ('tff_fixed', 'TFF: mean(broadcast(model)) over the groups, no '
     'training'),
    ('floor_in_tff', "compute floor in TFF's worker (the same graph as a "
     'TFF computation, the clients\' batches its arguments)'),
    ('floor_in_tff_arguments', "TFF's worker: those arguments in, a scalar "
     'out, no training'),
])


def _fedavg_pieces(workload: round_time.Workload):
  """The distributor, client config and optimizer of the grouped FedAvg.

  As `tff_mixed.build_fedavg` builds them for round_time's grouped FedAvg
  (registry 'fedavg' with `client_groups`): broadcast, K exact steps,
  example weighting, SGD at the client learning rate.
  """
  distributor = distributors.build_broadcast_distributor(
      workload.model, with_gradient=False)
  config = client_work.ClientWorkConfig(
      weighting=tff.learning.ClientWeighting.NUM_EXAMPLES,
      num_steps=workload.client_steps)
  optimizer = tff.learning.optimizers.build_sgdm(
      learning_rate=workload.learning_rate)
  return distributor, config, optimizer


def _in_threads(fn: Callable[..., Any],
                args_per_call: list[tuple[Any, ...]]) -> Callable[[], None]:
  """Calls `fn` once per args, all at once in threads.

  TFF's execution context is per thread: each thread installs the caller's.
  """
  context = tff.framework.get_context_stack().current

  def call(args):
    with tff.framework.get_context_stack().install(context):
      fn(*args)

  def run():
    threads = [threading.Thread(target=call, args=(a,))
               for a in args_per_call]
    for thread in threads:
      thread.start()
    for thread in threads:
      thread.join()

  return run


def _one_by_one(fn: Callable[..., Any],
                args_per_call: list[tuple[Any, ...]]) -> Callable[[], None]:

  def run():
    for args in args_per_call:
      fn(*args)

  return run


def _member_loop(per_member: Callable[[tf.Tensor], tf.Tensor]):
  """`(int32[?] -> float32)` in TFF's worker: the sum of `per_member(id)`.

  The members in a `tf.while_loop`, as the group's client work runs them.
  """

  @tff.tensorflow.computation(tff.TensorType(np.int32, [None]))
  def loop(ids):
    _, total = tf.while_loop(
        lambda i, _: i < tf.size(ids),
        lambda i, total: (i + 1, total + per_member(ids[i])),
        (tf.constant(0), tf.constant(0.0)))
    return total

  return loop


def _label_sum(batch) -> tf.Tensor:
  """A float32 scalar that needs the batch (so nothing is pruned)."""
  return tf.reduce_sum(tf.cast(batch[1], tf.float32))


def _rows_fn(workload, cohort) -> Callable[[tf.Tensor], tuple[Any, Any]]:
  """`id -> (x[K, batch, ...], y[K, batch, 1])`: a member's rows, no tf.data.

  From where the group's `dataset_fn` reads them: the cohort's
  `ExampleStore`, one read per batch as the dataset's `map` reads.
  """
  k, batch = workload.client_steps, workload.client_batch_size

  def read(client_id):
    start = tf.cast(client_id, tf.int64) * k * batch
    reads = [cohort.store.read(tf.range(start + j * batch,
                                        start + (j + 1) * batch))
             for j in range(k)]
    return tuple(tf.stack(leaves) for leaves in zip(*reads))

  return read


def _data_probes(workload, cohort, config, ids: list[np.ndarray]):
  """Per member: datasets, iterators, iterator-free draws, rows as tensors."""
  # pylint: disable=protected-access
  dataset_fn = round_time._group_dataset_fn(workload, cohort)
  # pylint: enable=protected-access

  def pipeline(client_id):
    # pylint: disable=protected-access
    # The client's training pipeline, exactly as client_update builds it.
    return client_work._training_dataset(config, dataset_fn(client_id), (),
                                         tf.constant(0, tf.int64))
    # pylint: enable=protected-access

  rows = _rows_fn(workload, cohort)
  per_member = collections.OrderedDict(
      member_loop=lambda i: tf.constant(0.0),
      member_datasets=lambda i: tf.cast(pipeline(i).cardinality(),
                                        tf.float32),
      member_iterators=lambda i: model_types.reduce_dataset(
          pipeline(i), tf.constant(0.0), lambda s, b: s + _label_sum(b)),
      # Every member holds K batches of one size: they stack.
      member_batches_no_iterator=lambda i: _label_sum(
          pipeline(i).batch(workload.client_steps).get_single_element()),
      member_rows=lambda i: _label_sum(rows(i)),
  )
  return [_Probe(key, _one_by_one(_member_loop(fn), [(g,) for g in ids]))
          for key, fn in per_member.items()]


def _tensor_group_work(workload, cohort, config, optimizer):
  """The member loop with each member's K batches as tensors, in TFF.

  `(<ModelWeights, int32[?]> -> GroupOutput)` of sums: per member, its rows
  (`_rows_fn`) and the client work's own local step, model reset, metrics,
  non-finite guard and weighted sums, with no dataset or iterator.
  """
  model = workload.model
  rows = _rows_fn(workload, cohort)
  # pylint: disable=protected-access

  @tff.tensorflow.computation(model_types.weights_type(model),
                              tff.TensorType(np.int32, [None]))
  def group(weights, ids):
    trainable = tuple(weights.trainable)
    non_trainable = tuple(weights.non_trainable)
    specs = tuple(tf.TensorSpec.from_tensor(w) for w in trainable)
    step = client_work._build_step(model, config, optimizer, non_trainable, ())

    def member(i, sums):
      x, y = rows(ids[i])
      state = (trainable, optimizer.initialize(specs),
               model.initialize_metrics_state(),
               tf.constant(0, tf.int64), tf.constant(0, tf.int64), ())
      for k in range(workload.client_steps):
        state = step(state, (x[k], y[k]))
      output = client_work._client_output(model, config, trainable, state[0],
                                          state[2], state[3], state[5])
      return i + 1, group_work_lib._add_member(sums, output, None, None,
                                                  None)

    _, sums = tf.while_loop(
        lambda i, _: i < tf.size(ids), member,
        (tf.constant(0),
         group_work_lib._zero_sums(model, config, None, None)))
    return sums

  # pylint: enable=protected-access
  return group


def _group_probes(workload, cohort, groups: list[np.ndarray]) -> list[_Probe]:
  """The group computation, its data taken apart, and the floor."""
  distributor, config, optimizer = _fedavg_pieces(workload)
  # pylint: disable=protected-access
  dataset_fn = round_time._group_dataset_fn(workload, cohort)
  # pylint: enable=protected-access
  group_work = group_work_lib.build_group_work(
      workload.model, distributor, config, optimizer,
      client_groups_lib.ClientGroups(dataset_fn, np.int32))
  trainable = tuple(np.asarray(w) for w in workload.model.initial_weights[0])
  weights = tff.learning.models.ModelWeights(
      trainable, tuple(np.asarray(w)
                       for w in workload.model.initial_weights[1]))
  # What the round's broadcast hands each group: <weights=...>.
  message = collections.OrderedDict(weights=weights)
  group_args = [([message, g],) for g in groups]
  no_members = [([message, np.zeros([0], np.int32)],) for _ in groups]
  tensor_work = _tensor_group_work(workload, cohort, config, optimizer)
  floor_fn = compute_floor.build_floor_round(workload.model,
                                             workload.learning_rate)
  x, y = tf.constant(cohort.x), tf.constant(cohort.y)
  group_arrays = [
      (trainable, tf.constant(cohort.x[g]), tf.constant(cohort.y[g]))
      for g in groups]
  batches_type = (tff.TensorType(np.float32, cohort.x.shape),
                  tff.TensorType(np.float32, cohort.y.shape))
  trainable_type = tff.to_type(tuple(
      tff.TensorType(w.dtype, w.shape) for w in trainable))

  @tff.tensorflow.computation(trainable_type, *batches_type)
  def floor_in_tff(weights, x, y):
    return floor_fn(tuple(weights), x, y)

  @tff.tensorflow.computation(trainable_type, *batches_type)
  def arguments_in_tff(weights, x, y):
    # Reads a value of each argument, so that all of them are delivered.
    return (tf.reduce_sum(weights[0][0]) + tf.reduce_sum(x[0, 0, 0])
            + tf.reduce_sum(y[0, 0, 0]))

  return [
      _Probe('floor_in_tff',
             lambda: floor_in_tff(trainable, cohort.x, cohort.y)),
      _Probe('floor_in_tff_arguments',
             lambda: arguments_in_tff(trainable, cohort.x, cohort.y)),
      _Probe('group_work_threads', _in_threads(group_work, group_args)),
      _Probe('group_work_sequential', _one_by_one(group_work, group_args)),
      _Probe('group_call', _one_by_one(group_work, no_members)),
      *_data_probes(workload, cohort, config, groups),
      _Probe('group_tensors', _one_by_one(
          tensor_work, [(weights, g) for g in groups])),
      # Eager CPU execution is synchronous: the result exists on return.
      _Probe('floor', lambda: floor_fn(trainable, x, y)),
      _Probe('floor_threads', _in_threads(floor_fn, group_arrays)),
  ]


def _build_probes(workload: round_time.Workload, n: int) -> list[_Probe]:
  """Every measurement of the grouped round at cohort size `n`."""
  cohort = round_time.make_cohort(workload, n)
  groups = round_time.groups_of(workload, n)
  # pylint: disable=protected-access
  grouped = round_profile._round_probe(
      'grouped_round',
      lambda: round_time.build_process(round_time.FEDAVG + round_time.GROUPED,
                                       workload, cohort),
      groups)
  (fixed,) = [p for p in round_profile._aggregation_probes(
      workload, len(groups)) if p.key == 'broadcast_mean']
  # pylint: enable=protected-access
  return [grouped, *_group_probes(workload, cohort, groups),
          fixed._replace(key='tff_fixed')]


def _shares(probes: dict[str, Any], measure: str) -> dict[str, float]:
  """The grouped round's parts as fractions of it, from `measure` medians.

  Differences of medians (estimates: the parts overlap, and other load
  moves each median). Calls of group computations from Python also move
  the model in and the sums out (`group_call`), which the round does not
  per group: that is taken off them. The parts: the floor's arithmetic;
  the member loop from tensors beyond it and the rows (model reset,
  metrics, guard, sums); the rows (beyond the bare member loop); the
  per-member tf.data (the group
  computation beyond the loop from tensors); TFF's federated part (the
  round beyond its group computations: one after another for CPU, in
  parallel threads for wall).
  """
  m = {k: v[measure] for k, v in probes.items()}
  wall = measure == 'median_s'
  # In wall time the round runs its groups in parallel: the sequential
  # group parts shrink by the measured speed-up of the groups in threads.
  speedup = (m['group_work_sequential'] / max(m['group_work_threads'], 1e-9)
             if wall else 1.0)
  group = m['group_work_sequential'] - m['group_call']
  rows = m['member_rows'] - m['member_loop']
  parts = collections.OrderedDict(
      arithmetic=m['floor'] * speedup,
      bookkeeping=m['group_tensors'] - m['group_call'] - rows - m['floor'],
      member_rows=rows,
      member_tf_data=m['group_work_sequential'] - m['group_tensors'],
      member_iterators=m['member_iterators'] - m['member_datasets'],
      federated=m['grouped_round'] * speedup - group,
      tff_fixed=m['tff_fixed'] * speedup,
  )
  total = max(m['grouped_round'] * speedup, 1e-9)
  return collections.OrderedDict((k, v / total) for k, v in parts.items())


def profile_cohort(workload: round_time.Workload, n: int, warmup: int,
                   timed: int) -> dict[str, Any]:
  """All measurements at cohort size `n`, as the JSON's per-cohort entry."""
  _progress(f'{workload.model_name} model, {n} clients: building and timing')
  load_start = os.getloadavg()[0]
  probes = _build_probes(workload, n)
  build_s = {p.key: p.build_s for p in probes if p.build_s}
  # pylint: disable=protected-access
  timings = round_profile._time_interleaved(probes, warmup, timed)
  # pylint: enable=protected-access
  floor = timings['floor']['median_s']
  for summary in timings.values():
    summary['x_floor'] = summary['median_s'] / floor
  return collections.OrderedDict(
      clients_per_round=n,
      groups=[len(g) for g in round_time.groups_of(workload, n)],
      build_s=build_s, probes=timings,
      shares=collections.OrderedDict(
          wall=_shares(timings, 'median_s'),
          cpu=_shares(timings, 'median_cpu_s')),
      load_average=[load_start, os.getloadavg()[0]])


def _pct(shares: dict[str, dict[str, float]], key: str) -> str:
  return (f'{100.0 * shares["wall"][key]:.0f}% / '
          f'{100.0 * shares["cpu"][key]:.0f}%')


def _cores(name: str, wall_s: float, cpu_s: float) -> str:
  """How many cores a row keeps busy, if its CPU time is countable."""
  if cpu_s < 0.05:
    # Fewer than 5 ticks of 10 ms: the ratio would be noise.
    return f'{name} is too short to count its cores in 10 ms ticks'
  return f'{name} keeps {cpu_s / max(wall_s, 1e-9):.1f} cores busy'


def _where_line(cohort: dict[str, Any]) -> str:
  """The "Where a grouped round's time goes" paragraph, from the medians."""
  p = {k: v['median_s'] for k, v in cohort['probes'].items()}
  cpu = {k: v['median_cpu_s'] for k, v in cohort['probes'].items()}
  shares = cohort['shares']
  n, groups = cohort['clients_per_round'], len(cohort['groups'])
  iterator_ms = 1e3 * (p['member_iterators'] - p['member_datasets']) / n
  free_ms = 1e3 * p['member_batches_no_iterator'] / n
  speedup = p['group_work_sequential'] / max(p['group_work_threads'], 1e-9)
  one_group = _cores('one group', p['group_work_sequential'],
                     cpu['group_work_sequential'])
  floor_cores = _cores('the floor', p['floor'], cpu['floor'])
  floor_speedup = p['floor'] / max(p['floor_threads'], 1e-9)
  without_data = p['grouped_round'] * (
      1.0 - shares['wall']['member_tf_data'])
  floor = max(p['floor'], 1e-9)
  in_tff = p['floor_in_tff'] - p['floor_in_tff_arguments']
  return (
      'Where a grouped round\'s time goes (shares of the grouped round, '
      f'wall / CPU; {groups} groups of ~{n / max(groups, 1):.0f}): the SGD '
      f'arithmetic (floor) {_pct(shares, "arithmetic")}; model reset, '
      'metrics, non-finite guard and weighted sums (the member loop from '
      f'tensors beyond the floor and the rows) {_pct(shares, "bookkeeping")}; '
      f'the members\' rows as tensors {_pct(shares, "member_rows")}; a '
      'tf.data dataset and iterator per member (the group computation beyond '
      f'the loop from tensors) {_pct(shares, "member_tf_data")}, of which '
      'making and draining the iterators '
      f'{_pct(shares, "member_iterators")}; TFF\'s federated part (the round '
      'beyond its group computations: dispatch, broadcast, aggregation, '
      f'server update) {_pct(shares, "federated")}, against '
      f'{_pct(shares, "tff_fixed")} for a bare broadcast + mean of the model '
      f'over the groups. Per member, an iterator costs {iterator_ms:.2f} ms '
      f'(wall, in TFF\'s worker), drawing its batches without one '
      f'{free_ms:.2f} ms. Parallelism: the group computations in {groups} '
      f'threads take {1.0 / max(speedup, 1e-9):.2f}x the wall time of one '
      f'after another ({one_group}); the floor in threads per group '
      f'{1.0 / max(floor_speedup, 1e-9):.2f}x its one call ({floor_cores}). '
      'Without a dataset per member the round would take about '
      f'{without_data:.3f} s ({without_data / floor:.1f}x the floor, vs '
      f'{p["grouped_round"] / floor:.1f}x now): the round less its share '
      'of per-member tf.data. A call of a group computation from Python '
      f'with no members takes {p["group_call"] / groups:.4f} s (taken off '
      'the called rows above). The floor\'s own graph run in TFF\'s worker '
      f'takes {in_tff:.4f} s beyond delivering its arguments, '
      f'{in_tff / floor:.2f}x the floor in this process: what the worker '
      'adds to the same arithmetic, before any TFF wiring.')


def _cohort_lines(model_name: str, result: dict[str, Any]) -> list[str]:
  lines = []
  for cohort in result['cohorts']:
    n, load = cohort['clients_per_round'], cohort['load_average']
    lines += [
        f'### {model_name} model (input {result["input_dim"]}, hidden '
        f'{result["hidden_units"]}): {n} clients per round, '
        f'{len(cohort["groups"])} groups', '',
        f'Load average (1 min) at this cohort\'s start / end: {load[0]:.2f} '
        f'/ {load[1]:.2f}.', '',
        *round_profile.probe_table(cohort['probes'], _LABELS),
        '', _where_line(cohort), '']
  return lines


def render_markdown(report: dict[str, Any]) -> str:
  """The BENCHMARKS.md section, from the report only."""
  config = report['config']
  lines = round_profile.header_lines(
      '## Where a grouped round\'s time goes (benchmarks/group_profile.py)',
      report) + [
      f'* Workload as round_time: K = {config["client_steps"]} SGD steps of '
      f'batch {config["client_batch_size"]} per client; grouped FedAvg '
      f'(`tff_mixed.build_fedavg` with `ClientGroups`, '
      f'`--clients_per_group={config["clients_per_group"]}`, 0: one group '
      'per core); the small model\'s groups slice constants '
      '(`client_groups.array_dataset_fn`), the CelebA-size model\'s read an '
      '`ExampleStore`.',
      '* Rows: the round through TFF; the group computation '
      '(`group_work.build_group_work`) called directly; per member, its '
      'dataset as the client work builds it (`dataset_fn` and the training '
      'pipeline), iterated as the client loop does '
      '(`model_types.reduce_dataset`) or drawn at once, and its rows as '
      'tensors (constant slices; store reads); the member loop from those '
      'tensors (the client work\'s local step, reset, metrics, guard and '
      'sums, no dataset); the compute floor (`benchmarks/compute_floor.py`); '
      'TFF\'s broadcast + mean over the groups. All but the floor run in '
      'TFF\'s worker, as the round\'s groups do; "per member" rows and the '
      'loop from tensors run the groups one after another.',
      f'* Timing: median of {config["timed_rounds"]} calls after '
      f'{config["warmup_rounds"]} warm-up calls (the first traces), all rows '
      'interleaved round-robin with a rotating order; "x floor" divides by '
      'the floor\'s median wall time. CPU s: this process + its TFF '
      '`worker_binary`, in 10 ms ticks. Shares are differences of medians '
      '(estimates: other load moves each median, and the parts overlap); '
      'in wall time the groups\' sequential rows are divided by the group '
      'computations\' speed-up in threads, as the round runs its groups in '
      'parallel; calls from Python of a group computation pay its "no '
      'members" row, taken off them.',
      '',
  ]
  for model_name, result in report['models'].items():
    lines += _cohort_lines(model_name, result)
  return '\n'.join(lines)


def _progress(message: str) -> None:
  print(f'[{_SECTION} {time.strftime("%H:%M:%S")}] {message}', flush=True)


def _config() -> dict[str, Any]:
  return round_time.flags_config((
      'models', 'cohort_sizes', 'clients_per_group', 'warmup_rounds',
      'timed_rounds', 'input_dim', 'hidden_units', 'client_steps',
      'client_batch_size', 'client_lr', 'seed', 'output_json'))


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  flag_values = flags.FLAGS
  load_start = os.getloadavg()[0]
  start = time.perf_counter()
  models = collections.OrderedDict()
  for model_name in flag_values.models:
    workload = round_time.make_workload(model_name)
    input_dim, hidden_units = round_time.model_dims(model_name)
    models[model_name] = collections.OrderedDict(
        input_dim=input_dim, hidden_units=list(hidden_units),
        cohorts=[profile_cohort(workload, int(n), flag_values.warmup_rounds,
                                flag_values.timed_rounds)
                 for n in flag_values.cohort_sizes])
  report = collections.OrderedDict(
      command=results_lib.command_line('benchmarks.group_profile'),
      date=results_lib.utc_now(), machine=results_lib.machine_description(),
      load_average=collections.OrderedDict(start=load_start,
                                           end=os.getloadavg()[0]),
      config=_config(), total_s=time.perf_counter() - start,
      models=models)
  round_profile.write_report(report, _SECTION, render_markdown)


if __name__ == '__main__':
  cli.run(main)
