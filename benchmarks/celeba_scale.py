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
r"""Round time of the CelebA smile experiment at the paper's scale.

The CelebA data cannot ship with the repository and are not downloadable
here, so this benchmark times the real pipeline (TFF's CelebA loader over a
`celeba.sqlite`, the composite clients, the central `ExampleStore`, the
21168-64-1 model) on a synthetic database with CelebA's schema and image
size. The numbers measure speed, not accuracy.

  python -m benchmarks.celeba_scale            # writes its BENCHMARKS.md section

Per scenario and mode (per-client: one client per CLIENTS member, datasets
built from id strings in TFF's worker; grouped: `tff_mixed.ClientGroups`,
one group per core by default, each group reading its members' data from
their id strings, `task.dataset_for_id`, inside its computation): build time,
the first round (tracing), the median of the timed rounds, and the ratios to
FL-only (TFF's FedAvg on the same clients) and to its algorithm's compute
floor (the same clients' K = 2 SGD steps on the same kind of batches, the
server mean and the algorithm's central work in one plain `tf.function`,
`benchmarks/compute_floor.py`); plus the one-time pass over the database and
an evaluation. The grouped FL-only round is then taken apart: the same
process with its members training on constant batches (no reading),
holding no data (no step), and one such member per group (the round apart
from its members), beside the floor. Every row's rounds, the floors' and
the profile's included, are interleaved round by round, so that their
ratios compare rounds of the same minutes on a machine whose speed drifts.
"""

import collections
from collections.abc import Callable, Mapping, Sequence
import datetime
import json
import os
import shutil
import sys
import time
from typing import NamedTuple

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from benchmarks import benchmark_flags
from benchmarks import compute_floor
from benchmarks import round_timer
from experiments.celeba_smile import celeba_smile_lib
from experiments.celeba_smile import celeba_sqlite
from experiments.common import comparison
from experiments.common import grouping
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from experiments.common import scenarios as scenarios_lib
from experiments.common import shared_flags
import tff_mixed
from tff_mixed.models import dense
from tff_mixed.tasks import celeba_smile
from tff_mixed.training import reports

celeba = celeba_smile
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_DATA_DIR = flags.DEFINE_string(
    'data_dir', 'outputs/celeba_scale_data', 'Where the synthetic '
    'celeba.sqlite is built (once) and read.')
_TRAIN_CLIENTS = flags.DEFINE_integer(
    'train_clients', 600, 'Synthetic training celebrities.', lower_bound=3)
_TEST_CLIENTS = flags.DEFINE_integer(
    'test_clients', 60, 'Synthetic evaluation celebrities.', lower_bound=1)
_IMAGES_PER_CLIENT = flags.DEFINE_integer(
    'images_per_client', 21, 'Images per synthetic celebrity (CelebA: ~21).',
    lower_bound=1)
_CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(
    100, 'The paper: 100.')
_ROUNDS = shared_flags.define_rounds_flag(6, 'The first is not timed.')
shared_flags.require_at_least(_ROUNDS, 2)
_SCENARIOS = shared_flags.define_scenarios_flag(
    celeba_smile_lib.SCENARIOS, 'The ones to time.')
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
_FLOOR_GOAL = benchmark_flags.define_floor_goal_flag(
    1.5, 'Here: every scenario in the mode the binary runs.')
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md', 'Its section: celeba_scale.')
_OUTPUT_JSON = benchmark_flags.define_output_json_flag(
    'benchmarks/results/celeba_scale.json')


class _SyntheticClients(Mapping):
  """Celebrity id -> its images and attributes, generated on demand."""

  def __init__(self, num_clients: int, images_per_client: int):
    self._num_clients = num_clients
    self._images = images_per_client
    # A few smooth base pictures; smiling brightens the lower half.
    rng = np.random.default_rng(0)
    coarse = rng.integers(30, 200, (8, 6, 6, 3)).astype(np.float32)
    self._bases = np.repeat(np.repeat(coarse, 14, axis=1), 14, axis=2)

  def __getitem__(self, client_id):
    rng = np.random.default_rng(int(client_id))
    examples = []
    for _ in range(self._images):
      smiling = bool(rng.random() < 0.48)
      image = self._bases[rng.integers(len(self._bases))] + rng.normal(
          0, 8, (84, 84, 3))
      if smiling:
        image[42:] += 40
      attributes = {a: bool(rng.integers(2))
                    for a in celeba_sqlite.ATTRIBUTE_NAMES}
      attributes['smiling'] = smiling
      examples.append((np.clip(image, 0, 255).astype(np.uint8), attributes))
    return examples

  def __iter__(self):
    return (str(i) for i in range(self._num_clients))

  def __len__(self):
    return self._num_clients


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


_CLIENT_STEPS = 2  # K, the paper's.
_CLIENT_LR = 0.01
# A grouped row's key is the scenario's name and this suffix.
_GROUPED = '@grouped'
_FLOOR = 'compute_floor'


class _Runner(NamedTuple):
  """One timed row: its name, build seconds and `run_round(round_num)`."""

  name: str
  build_s: float
  run_round: Callable[[int], None]


def _round_robin(runners, rounds):
  """`{name: summary}` of every runner's rounds 1..`rounds`, interleaved
  (`round_timer.round_robin`)."""
  round_s = round_timer.round_robin(
      {r.name: r.run_round for r in runners}, rounds, 'celeba_scale')
  return collections.OrderedDict(
      (r.name, _summary(r.build_s, round_s[r.name])) for r in runners)


def _summary(build_s, round_s):
  return collections.OrderedDict(
      build_s=build_s, first_round_s=round_s[0],
      median_round_s=round_timer.median_of_timed(round_s),
      timed_rounds=len(round_s) - 1)


def _scenario_runner(scenario, task, model, comparison_task,
                     clients_per_round, grouped, dataset_fn=None,
                     members=None, clients_per_group=None, name=None):
  """One scenario's `_Runner`, per client or (`grouped`) in client groups.

  Grouped, `dataset_fn` replaces the members' datasets (`task.dataset_for_id`
  by default), `members` keeps each round's first that many clients
  (default: all) and `clients_per_group` replaces `--clients_per_group`,
  for the round's profile (`_profile_runners`).
  """
  if clients_per_group is None:
    clients_per_group = _CLIENTS_PER_GROUP.value
  batch_sizes = scenarios_lib.paper_central_batch_sizes(
      clients_per_round, _CLIENT_STEPS, task.client_batch_size,
      task.central_store.num_examples)
  kwargs = dict(
      client_lr=_CLIENT_LR, client_steps=_CLIENT_STEPS,
      central_batch_sizes=batch_sizes,
      examples_per_client=round(comparison_task.mean_client_examples),
      client_batch_size=task.client_batch_size, seed=0)
  client_data_fn, _ = comparison.round_functions(
      scenario, comparison_task, clients_per_round=clients_per_round,
      client_steps=_CLIENT_STEPS, seed=0)
  start = time.perf_counter()
  if grouped:
    # Ids are the task's id strings: each group builds its members'
    # datasets from them inside its computation, as the binary's groups do
    # (`client_groups`), or from the profile's `dataset_fn`.
    groups = (task.client_groups(scenario == scenarios_lib.ORACLE)
              if dataset_fn is None else
              tff_mixed.ClientGroups(dataset_fn, np.str_))
    process = scenarios_lib.build_process(
        scenario, model, comparison_task.central_objective,
        client_groups=groups, **kwargs)
    data_fn = lambda r: grouping.group_ids(  # pylint: disable=g-long-lambda
        client_data_fn(r)[:members], clients_per_group, np.str_)
  else:
    process = comparison.scenario_process(scenario, comparison_task, model,
                                          **kwargs)
    data_fn = client_data_fn
  state = process.initialize()
  build_s = time.perf_counter() - start

  def run_round(round_num):
    nonlocal state
    state = process.next(state, data_fn(round_num)).state

  if name is None:
    name = scenario + (_GROUPED if grouped else '')
  return _Runner(name, build_s, run_round)


# The grouped FL-only round taken apart (`_profile_runners`): each variant's
# members and data.
_PROFILE = collections.OrderedDict(
    as_run=('the round as the binary runs it', None, None),
    constant_batches=('members train on K constant batches of 5 images, '
                      'nothing read', None, 'constant'),
    no_data=('members hold no data (no step)', None, 'empty'),
    no_data_one_per_group=('one member per group, without data', 'groups',
                           'empty'),
)


_PROFILE_PREFIX = 'profile '


def _profile_dataset_fn(kind):
  """A member's dataset for a profile variant: `None` (the task's), K
  constant batches of 5 images, or none (the task's element shapes)."""
  # Made where the group computation traces them.
  if kind == 'constant':
    return lambda unused_id: tf.data.Dataset.from_tensors(
        (tf.fill([5, celeba.NUM_FEATURES], 0.5),
         tf.ones([5, 1]))).repeat(_CLIENT_STEPS)
  if kind == 'empty':
    return lambda unused_id: tf.data.Dataset.from_tensor_slices(
        (tf.zeros([0, celeba.NUM_FEATURES]), tf.zeros([0, 1]))).batch(5)
  return None


def _profile_runners(task, model, comparison_task, clients_per_round):
  """`_Runner`s of `_PROFILE`'s variants of the grouped FL-only round.

  The same process and cohort as the FL-only grouped row; the variants
  differ only in their members' data: the round as run, members on
  constant batches (the round without reading), members without data (what
  a round costs beyond its training), and one such member per group (the
  round's cost apart from its members: TFF's calls, moving the model to the
  groups and back, the server update).
  """
  num_groups = len(grouping.group_ids(np.arange(clients_per_round),
                                      _CLIENTS_PER_GROUP.value))
  return [
      _scenario_runner(
          scenarios_lib.FL_ONLY, task, model, comparison_task,
          clients_per_round, True, dataset_fn=_profile_dataset_fn(kind),
          members=num_groups if members == 'groups' else None,
          clients_per_group=1 if members == 'groups' else None,
          name=_PROFILE_PREFIX + key)
      for key, (_, members, kind) in _PROFILE.items()]


def _floor_batches(task, client_ids):
  """`(x, y)` of `compute_floor`: K batches of each client, from its data.

  The same positives a federated client trains on, cycled if a client has
  fewer than K batches' worth, so every client takes exactly K full steps.
  """
  k, batch = _CLIENT_STEPS, task.client_batch_size
  xs, ys = [], []
  for client_id in client_ids:
    dataset = task.dataset_for_id(client_id).unbatch().repeat().take(
        k * batch).batch(batch)
    x, y = zip(*((bx.numpy(), by.numpy()) for bx, by in dataset))
    xs.append(np.stack(x))
    ys.append(np.stack(y))
  return np.stack(xs), np.stack(ys)


def _floor_name(algorithm: str) -> str:
  return f'{_FLOOR}@{algorithm}'


def _floor_runners(task, model, comparison_task, scenarios, rounds,
                   clients_per_round):
  """`_Runner`s of the compute floor of each algorithm among `scenarios`.

  Every floor trains on each round's FL-only clients' batches (the oracle's
  clients take the same arithmetic on other examples). Its central part is
  the algorithm's (`compute_floor.central_part`): K_c = K central steps of
  the paper's |B_c| for Parallel Training and 2-way GT, one central gradient
  of |B_c| = K S |B_i| for 1-way GT, and for Example Transfer the clients'
  batches with their transferred central images merged in, drawn as the
  process draws them. Reading and drawing the batches is outside the timed
  rounds: the floor is the work.
  """
  client_data_fn, _ = comparison.round_functions(
      scenarios_lib.FL_ONLY, comparison_task,
      clients_per_round=clients_per_round, client_steps=_CLIENT_STEPS,
      seed=0)
  batches = [_floor_batches(task, client_data_fn(r))
             for r in range(1, rounds + 1)]
  batch_sizes = scenarios_lib.paper_central_batch_sizes(
      clients_per_round, _CLIENT_STEPS, task.client_batch_size,
      task.central_store.num_examples)
  objective = comparison_task.central_objective
  runners = []
  for algorithm in dict.fromkeys(scenarios_lib.ALGORITHM_OF[s]
                                 for s in scenarios):
    part = compute_floor.central_part(algorithm)
    count = part.num_central_batches(_CLIENT_STEPS)
    inputs = []
    for round_num, (x, y) in enumerate(batches, start=1):
      central = (compute_floor.central_batches(
          objective, getattr(batch_sizes, algorithm), 0, round_num, count)
                 if count else None)
      if algorithm == tff_mixed.registry.EXAMPLE_TRANSFER:
        x, y = compute_floor.transferred_batches(
            objective, x, y,
            examples_per_client=round(comparison_task.mean_client_examples),
            seed=0, round_num=round_num)
      # As tensors now, so that the timed rounds copy no arrays.
      inputs.append((tf.constant(x), tf.constant(y), None if central is None
                     else tuple(tf.constant(a) for a in central)))
    floor = compute_floor.FloorRunner(model, _CLIENT_LR, part)

    def run_round(round_num, floor=floor, inputs=inputs):
      floor.set_clients(*inputs[round_num - 1])
      floor.run_round()

    runners.append(_Runner(_floor_name(algorithm), 0.0, run_round))
  return runners


def _profile_lines(profile, floor, clients_per_round, num_groups):
  """The profile's table and its reading, as Markdown lines."""
  median = {k: t['median_round_s'] for k, t in profile.items()}
  lines = [
      '### Where a grouped FL-only round goes',
      '',
      'The FL-only process and cohort of the grouped row above, its members '
      'given other data (`--clients_per_group` as above); each the median of '
      'its timed rounds.',
      '',
      '| variant | s/round (median) | x floor |',
      '|---|---:|---:|',
  ]
  for key, (label, _, _) in _PROFILE.items():
    lines.append(f'| {label} | {median[key]:.3f} | '
                 f'{median[key] / floor["median_round_s"]:.2f} |')
  lines.append(f'| compute floor (FedAvg) | {floor["median_round_s"]:.3f} '
               '| 1.00 |')
  whole = median['as_run']
  share = lambda seconds: f'{seconds:.3f} s ({100 * seconds / whole:.0f}%)'
  fixed = median['no_data_one_per_group']
  members = median['constant_batches'] - fixed
  stepless = median['no_data'] - fixed
  reading = whole - median['constant_batches']
  lines += [
      '',
      f'Of the {whole:.3f} s of a round as run (differences of medians, so '
      f'estimates): the round apart from its members (TFF\'s calls, the '
      f'model to {num_groups} groups and back, the server update) '
      f'{share(fixed)}; the {clients_per_round} members\' work on batches '
      'held constant (each its dataset, K steps, delta, guard and share of '
      f'the weighted sum) {share(members)}, '
      f'{members / floor["median_round_s"]:.2f}x the floor\'s '
      f'{floor["median_round_s"]:.3f} s for the same steps, deltas and mean, '
      f'of which {share(stepless)} without a step '
      f'({1000 * stepless / clients_per_round:.2f} ms a member); reading '
      f'their images from the client store {share(reading)}.',
  ]
  return lines


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  unknown = set(_SCENARIOS.value) - set(celeba_smile_lib.SCENARIOS)
  if unknown:
    raise app.UsageError(f'Unknown --scenarios {sorted(unknown)}.')
  data_dir = reports.make_directory(_resolve(_DATA_DIR.value), '--data_dir')
  spec = dict(train_clients=_TRAIN_CLIENTS.value,
              test_clients=_TEST_CLIENTS.value,
              images_per_client=_IMAGES_PER_CLIENT.value)
  spec_path = os.path.join(data_dir, 'synthetic_spec.json')
  database = os.path.join(data_dir, celeba.DATABASE_FILENAME)
  try:
    with open(spec_path) as f:
      reuse = json.load(f) == spec and os.path.exists(database)
  except (OSError, ValueError):
    reuse = False
  if not reuse:
    print(f'[celeba_scale] writing a synthetic {database}', file=sys.stderr)
    num = spec['train_clients'] + spec['test_clients']
    celeba_sqlite.write_celeba_database(
        database, _SyntheticClients(num, spec['images_per_client']),
        [str(i) for i in range(spec['train_clients'], num)])
    reports.atomic_write_text(spec_path, json.dumps(spec))

  work_dir = os.path.join(data_dir, 'work')
  # The one-time pass is part of what is measured: start without its cache.
  shutil.rmtree(work_dir, ignore_errors=True)
  start = time.perf_counter()
  task = celeba.build_task(data_dir, work_dir=work_dir)
  task_s = time.perf_counter() - start
  model = dense.build_binary_classifier(
      celeba.NUM_FEATURES, hidden_units=celeba_smile_lib.HIDDEN_UNITS)
  comparison_task = celeba_smile_lib.comparison_task(task, model)
  start = time.perf_counter()
  task.evaluate(model, model.initial_weights)
  eval_s = time.perf_counter() - start
  clients_per_round = min(_CLIENTS_PER_ROUND.value, task.num_clients)
  modes = ((False, True) if grouping.is_grouped(_CLIENTS_PER_GROUP.value,
                                                 clients_per_round)
           else (False,))
  load_start = os.getloadavg()[0]
  runners = [_scenario_runner(s, task, model, comparison_task,
                              clients_per_round, grouped)
             for s in _SCENARIOS.value for grouped in modes]
  if any(r.name == scenarios_lib.FL_ONLY + _GROUPED for r in runners):
    runners += _profile_runners(task, model, comparison_task,
                                clients_per_round)
  runners += _floor_runners(task, model, comparison_task, _SCENARIOS.value,
                            _ROUNDS.value, clients_per_round)
  timed = _round_robin(runners, _ROUNDS.value)
  load_end = os.getloadavg()[0]
  floors = collections.OrderedDict(
      (n, t) for n, t in timed.items() if n.startswith(_FLOOR))
  profile = collections.OrderedDict(
      (n[len(_PROFILE_PREFIX):], t) for n, t in timed.items()
      if n.startswith(_PROFILE_PREFIX))
  timings = collections.OrderedDict(
      (n, t) for n, t in timed.items() if n not in floors
      and not n.startswith(_PROFILE_PREFIX))
  groups = [len(g) for g in grouping.group_ids(
      np.arange(clients_per_round), _CLIENTS_PER_GROUP.value)]

  report = collections.OrderedDict(
      command=' '.join(['python -m benchmarks.celeba_scale', *sys.argv[1:]]),
      date=datetime.datetime.now(datetime.timezone.utc).strftime(
          '%Y-%m-%d %H:%M UTC'),
      machine=results_lib.machine_description(),
      data=dict(spec, federated_clients=task.num_clients,
                central_examples=task.central_store.num_examples,
                eval_examples=len(task.eval_labels),
                database_mib=os.path.getsize(database) / 2**20),
      clients_per_round=clients_per_round, groups=groups,
      clients_per_group=_CLIENTS_PER_GROUP.value,
      load_average=dict(start=load_start, end=load_end),
      task_build_s=task_s, eval_s=eval_s, floor_goal=_FLOOR_GOAL.value,
      timings=timings, floors=floors, profile=profile)
  reports.atomic_write_text(_resolve(_OUTPUT_JSON.value),
                            json.dumps(report, indent=2) + '\n')
  base = timings.get('fl_only', {}).get('median_round_s')

  def floor_of(name):
    scenario = name.partition('@')[0]
    return floors[_floor_name(scenarios_lib.ALGORITHM_OF[scenario])][
        'median_round_s']

  sizes = (str(min(groups)) if min(groups) == max(groups) else
           f'{min(groups)}-{max(groups)}')
  lines = [
      '## CelebA smile pipeline at the paper\'s scale '
      '(benchmarks/celeba_scale.py)',
      '',
      f'Generated on {report["date"]} by `{report["command"]}` on '
      f'{report["machine"]}; raw numbers in `{_OUTPUT_JSON.value}`.',
      '',
      f'* Data: a synthetic `celeba.sqlite` with CelebA\'s schema and 84x84x3 '
      f'images ({spec["train_clients"]} training and {spec["test_clients"]} '
      f'evaluation celebrities of {spec["images_per_client"]} images, '
      f'{report["data"]["database_mib"]:.0f} MiB), read by TFF\'s CelebA '
      f'loader: {task.num_clients} composite clients, '
      f'{task.central_store.num_examples} central images in the '
      f'ExampleStore, {len(task.eval_labels)} eval images. Speed only: real '
      'CelebA is not reachable from this machine.',
      f'* Setting: the paper\'s S = {clients_per_round}, K = 2, batch 5, '
      'central batch 1000 (1-way GT) / 500 (PT, 2-way GT), model '
      '21168-64-1.',
      f'* One-time passes over the database (central and client stores, '
      f'label counts, eval arrays): {task_s:.1f} s; one evaluation: '
      f'{eval_s:.2f} s.',
      f'* Modes: per-client (datasets built from id strings in TFF\'s '
      f'worker, one client per CLIENTS member) and grouped '
      f'(`tff_mixed.ClientGroups`, {len(groups)} groups of {sizes} clients, '
      f'`--clients_per_group={_CLIENTS_PER_GROUP.value}`; each group reads '
      'its members\' data from their id strings inside its computation). '
      'Compute floors (`benchmarks/compute_floor.py`), one per algorithm, '
      'each its round in one plain `tf.function` (no TFF, metrics or data '
      'reading) on the same round\'s FL-only clients: K = 2 SGD steps of '
      'batch 5 each and the server mean, plus the algorithm\'s central '
      'work on central batches drawn as its process draws them (K_c = 2 '
      'steps of 500 images for Parallel Training and 2-way GT, one gradient '
      'on 1000 for 1-way GT), and for Example Transfer the clients\' '
      'batches with their transferred images merged in. "x floor" is a '
      'scenario\'s s/round over its algorithm\'s floor (FedAvg\'s for '
      'FL-only and the oracle).',
      f'* Timing: the median of {_ROUNDS.value - 1} rounds after one untimed '
      'round (tracing), every row\'s (the floors\' and the profile\'s '
      'included) round r run before any row\'s round r + 1, in a new '
      'seeded order every round; load average (1 min) at start / end '
      f'{load_start:.2f} / {load_end:.2f}, on a machine shared with other '
      'work.',
      '',
      '| scenario | mode | build (s) | first round (s) | s/round (median) | '
      'x FL-only | x floor |',
      '|---|---|---:|---:|---:|---:|---:|',
  ]
  def row(name, t, mode, ratio, floor_ratio):
    return (f'| {name} | {mode} | {t["build_s"]:.1f} | '
            f'{t["first_round_s"]:.1f} | {t["median_round_s"]:.2f} | '
            f'{ratio} | {floor_ratio} |')

  for name, t in timings.items():
    ratio = f'{t["median_round_s"] / base:.2f}' if base else '-'
    scenario, _, mode = name.partition('@')
    lines.append(row(scenario, t, mode or 'per-client', ratio,
                     f'{t["median_round_s"] / floor_of(name):.2f}'))
  for name, t in floors.items():
    ratio = f'{t["median_round_s"] / base:.2f}' if base else '-'
    algorithm = name.partition('@')[2]
    lines.append(row(f'compute floor ({algorithm})', t, '-', ratio, '1.00'))
  # The binary runs its clients in groups where it can: those rows are what
  # `make results-celeba` takes a round.
  ran = [n for n in timings if n.endswith(_GROUPED)] or list(timings)
  ratios = {n: timings[n]['median_round_s'] / floor_of(n) for n in ran}
  worst = max(ratios, key=ratios.get)
  verdict = ('meets' if ratios[worst] <= _FLOOR_GOAL.value
             else 'does not meet')
  lines += [
      '',
      f'**Against each algorithm\'s compute floor at {clients_per_round} '
      f'clients, {"grouped" if ran[0].endswith(_GROUPED) else "per-client"} '
      f'(as the binary runs):** {min(ratios.values()):.2f}x-'
      f'{ratios[worst]:.2f}x; the highest, '
      f'{worst.replace(_GROUPED, "")}, {verdict} the goal of '
      f'{_FLOOR_GOAL.value:g}x.',
  ]
  # The seconds of one process alone: the results target runs its seeds
  # as concurrent processes, which share the cores better than one does.
  lines += [
      '', 'These are the rounds of one process at a time. `make '
      'results-celeba` runs the scenarios on real faces, its three seeds as '
      'concurrent processes; its wall time, timed whole, is in the '
      'target_times section.']
  if profile:
    lines += ['', *_profile_lines(
        profile, floors[_floor_name(tff_mixed.registry.FEDAVG)],
        clients_per_round, len(groups))]
  markdown = '\n'.join(lines)
  markdown_sections.write_section(_resolve(_OUTPUT_MARKDOWN.value),
                                  'celeba_scale', markdown,
                                  title='Benchmarks')
  print(markdown, flush=True)


if __name__ == '__main__':
  cli.run(main)
