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
r"""Seconds per round of the movie task: federated_select, broadcast, floor.

The same mixed FL algorithm (Parallel Training, 1-way and 2-way GT) on the
same clients, once sending each client only its rows of the embedding table
(`embedding_selection`) and once broadcasting the whole table, plus the
all-on-client baseline (TFF's FedAvg with the spreadout on every client);
beside each, its compute floor from the same run: the round's arithmetic on
the same clients' batches as one plain `tf.function`
(`benchmarks/movielens_floor.py`).
Each process runs per-client (one client per CLIENTS member, datasets built
from id strings in TFF's worker) and grouped (`tff_mixed.ClientGroups`: one
group per core by default; each group reads its members' data and, with
`federated_select`, takes each member's rows of the table inside the group
computation). Bytes per client come from the per-client process, which is
what a deployment runs. Uses MovieLens 100K from `../shared/data/movielens_100k/u.data` when present
(`--ratings_file`), else a generated ratings file of the same shape.

  python -m benchmarks.movielens_select    # writes its BENCHMARKS.md section
"""

import collections
from collections.abc import Sequence
import datetime
import json
import os
import sys
import tempfile

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from experiments.common import grouping
from absl import app
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from benchmarks import benchmark_flags
from benchmarks import movielens_floor
from benchmarks import round_timer
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.movielens import movielens_config
from experiments.movielens import movielens_process
import tff_mixed
from tff_mixed.core import communication
from tff_mixed.tasks import movielens
from tff_mixed.training import reports

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RATINGS_FILE = shared_flags.define_ratings_file_flag(
    '../shared/data/movielens_100k/u.data',
    'A relative path is relative to the repository root; a generated file '
    'of the same shape is used if it does not exist.')
_CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(100)
_ROUNDS = shared_flags.define_rounds_flag(8, 'The first is not timed.')
shared_flags.require_at_least(_ROUNDS, 2)
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md', 'Its section: movielens_select.')
_OUTPUT_JSON = benchmark_flags.define_output_json_flag(
    'benchmarks/results/movielens_select.json')
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


def _sizes(groups: Sequence[int]) -> str:
  """Group sizes as `n` or `min-max`."""
  low, high = min(groups), max(groups)
  return str(low) if low == high else f'{low}-{high}'


def _generated_ratings(path: str) -> str:
  """943 users, 1,682 movies, ~100 ratings each, Zipf-like popularity."""
  rng = np.random.default_rng(0)
  popularity = 1.0 / np.arange(1, 1683) ** 0.8
  popularity /= popularity.sum()
  with open(path, 'w') as f:
    for user in range(1, 944):
      count = int(rng.integers(20, 200))
      movies = rng.choice(np.arange(1, 1683), count, replace=False,
                          p=popularity)
      for t, movie in enumerate(movies):
        f.write(f'{user}\t{movie}\t3\t{880000000 + t}\n')
  return path


def _process_rounds(process, client_ids_fn):
  """`run_round(round_num)` of `process` on `client_ids_fn(round_num)`."""
  state = process.initialize()

  def run_round(round_num):
    nonlocal state
    state = process.next(state, client_ids_fn(round_num)).state

  return run_round


def _floor_rounds(scenario, data, config, client_ids):
  """`run_round` of the scenario's floor on round 1's clients' batches."""
  runner = movielens_floor.build_floor_runner(scenario, data.num_movies + 1,
                                              config)
  runner.set_clients(
      *movielens_floor.client_batches(data, config, client_ids),
      central=movielens_floor.central_inputs(scenario, config))
  return lambda unused_round: runner.run_round()


# The grouped Parallel Training round with federated_select taken apart
# (`_profile`): per variant, what its members read and how many there are.
_PROFILE = collections.OrderedDict(
    as_run=('the round as the binary runs it', 'task', 'all'),
    constant=('members train on K constant batches: no shuffle, nothing '
              'read', 'constant', 'all'),
    no_data=('members hold no data (no step)', 'empty', 'all'),
    no_data_one_per_group=('one member per group, without data', 'empty',
                           'groups'),
)


def _profile_rounds(data, config, client_ids_fn):
  """`{key: run_round}` of each `_PROFILE` variant of the grouped PT round.

  The same process and cohort as the grouped Parallel Training
  (federated_select) row; the variants differ only in their members' data
  and count: as run, members on one real batch repeated K times (the round
  without the shuffled per-member pipeline), members without data (what a
  round costs beyond training), one such member per group (the round apart
  from its members: TFF's calls, the table to the groups and back, the
  server's spreadout steps).
  """
  task_fn = movielens_process.client_dataset_fn(data, config, fedavg=True,
                                                fresh_shuffle=True)
  # One real batch of 16 examples, as a constant member dataset repeats it.
  batch = tf.nest.map_structure(
      np.asarray, next(iter(task_fn(tf.constant(client_ids_fn(1)[0])))))
  dataset_fns = dict(
      task=task_fn,
      constant=lambda unused_id: tf.data.Dataset.from_tensors(batch).repeat(
          config.client_steps),
      empty=lambda unused_id: tf.data.Dataset.from_tensors(batch).take(0))
  num_groups = len(grouping.group_ids(client_ids_fn(1),
                                      _CLIENTS_PER_GROUP.value, np.str_))

  def ids_fn_of(members):
    if members == 'groups':
      return lambda r: grouping.group_ids(client_ids_fn(r)[:num_groups], 1,
                                          np.str_)
    return lambda r: grouping.group_ids(client_ids_fn(r),
                                        _CLIENTS_PER_GROUP.value, np.str_)

  return collections.OrderedDict(
      (key, _process_rounds(movielens_process.build_process(
          movielens_config.PARALLEL_TRAINING, data, config, select=True,
          client_groups=tff_mixed.ClientGroups(dataset_fns[kind], np.str_)),
                            ids_fn_of(members)))
      for key, (_, kind, members) in _PROFILE.items())


def _profile_lines(profile, clients_per_round):
  """The profile's Markdown: its table and the shares of the round."""
  floor = profile['floor']['seconds_per_round']
  lines = ['', '### Where a grouped federated_select round goes', '',
           'The Parallel Training (federated_select) process and cohort of '
           'the grouped row above, its members given other data; each the '
           'median of its timed rounds.', '',
           '| variant | s/round (median) | x floor |', '|---|---:|---:|']
  for entry in profile.values():
    t = entry['seconds_per_round']
    lines.append(f'| {entry["label"]} | {t:.3f} | {t / floor:.2f} |')
  s = {k: v['seconds_per_round'] for k, v in profile.items()}
  run = s['as_run']
  parts = [
      ('the round apart from its members (TFF\'s calls, the table to the '
       'groups and back, the server\'s spreadout steps)',
       s['no_data_one_per_group']),
      (f'the {clients_per_round} members\' work without a step (each its '
       'dataset, keys, rows, delta and scatter into the sums)',
       s['no_data'] - s['no_data_one_per_group']),
      ('their K steps on the constant batches', s['constant'] - s['no_data']),
      ('each member\'s shuffled pipeline over its ratings, drawn twice (for '
       'its keys and for its steps)', run - s['constant']),
  ]
  lines += ['', f'Of the {run:.3f} s of a round as run (differences of '
            'medians, so estimates): ' + '; '.join(
                f'{name} {value:.3f} s ({value / run:.0%})'
                for name, value in parts)
            + f'. The floor trains the same clients in {floor:.3f} s with '
            'none of these per-member parts: its batches are given.']
  return lines


def _rows(data, config, client_ids_fn, group_ids_fn, client_groups):
  """The timed rows: `({name: run_round}, {process name: (scenario,
  per-client communication)})`.

  Per scenario its floor (`floor <scenario>`) and, per process (with
  federated_select and broadcasting the table; the baseline broadcasts),
  its per-client rounds (`<process> per-client`) and, with `group_ids_fn`,
  its grouped ones (`<process> grouped`).
  """
  rows, costs = collections.OrderedDict(), collections.OrderedDict()
  for scenario in (movielens_config.PARALLEL_TRAINING,
                   movielens_config.ONE_WAY_GT, movielens_config.TWO_WAY_GT,
                   movielens_config.BASELINE):
    rows['floor ' + scenario] = _floor_rounds(scenario, data, config,
                                              client_ids_fn(1))
    for selected in ((True, False) if scenario != movielens_config.BASELINE
                     else (False,)):
      # Unselected: the same algorithm, broadcasting the whole table.
      inner = movielens_process.build_process(scenario, data, config,
                                              select=selected)
      name = (f'{scenario} ({"federated_select" if selected else "broadcast"})'
              if scenario != movielens_config.BASELINE else
              'baseline (broadcast, spreadout on clients)')
      # What a deployment moves: the per-client process's messages.
      costs[name] = (scenario, communication.per_client_communication(inner))
      rows[name + ' per-client'] = _process_rounds(
          tff.simulation.compose_dataset_computation_with_learning_process(
              movielens_process.dataset_computation(
                  data, config,
                  fedavg=scenario == movielens_config.BASELINE), inner),
          client_ids_fn)
      if group_ids_fn is not None:
        rows[name + ' grouped'] = _process_rounds(
            movielens_process.build_process(scenario, data, config,
                                            select=selected,
                                            client_groups=client_groups),
            group_ids_fn)
  return rows, costs


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  ratings = _resolve(_RATINGS_FILE.value)
  source = os.path.relpath(ratings, _REPO_ROOT)
  if not os.path.exists(ratings):
    ratings = _generated_ratings(os.path.join(tempfile.mkdtemp(), 'u.data'))
    source = 'a generated u.data (943 users, 1,682 movies)'
  # 160 rows, the paper's n: the budget at which selecting saves the most
  # against the broadcast table.
  config = movielens_config.Config(clients_per_round=_CLIENTS_PER_ROUND.value,
                                   keys_per_client=160)
  data = movielens.load_movielens(
      ratings, context_length=config.context_length)
  users = [str(u) for u in data.train_user_ids if int(u) in data.examples]
  sample = tff.simulation.build_uniform_sampling_fn(users, random_seed=0)
  clients_per_round = min(config.clients_per_round, len(users))

  def client_ids_fn(round_num):
    return [f'{round_num}|{u}' for u in sample(round_num - 1,
                                               clients_per_round)]

  grouped = grouping.is_grouped(_CLIENTS_PER_GROUP.value, clients_per_round)
  # A group reads its members' data as the per-client path does, K batches
  # taken by the training loop (the baseline included).
  # Each member's first K batches, reshuffled alike on every pass: what the
  # binary's groups read (movielens_process.client_groups_for).
  client_groups = tff_mixed.ClientGroups(
      movielens_process.client_dataset_fn(data, config, fedavg=True,
                                          fresh_shuffle=True), np.str_)

  def group_ids_fn(round_num):
    return grouping.group_ids(client_ids_fn(round_num),
                              _CLIENTS_PER_GROUP.value, np.str_)

  load_start = os.getloadavg()[0]
  rows, costs = _rows(data, config, client_ids_fn,
                      group_ids_fn if grouped else None, client_groups)
  if grouped:
    rows.update(('profile ' + key, run_round) for key, run_round in
                _profile_rounds(data, config, client_ids_fn).items())
  # Every row's round r before any row's round r + 1: a row and its floor
  # are timed in the same minutes of a shared machine.
  medians = {name: round_timer.median_of_timed(seconds) for name, seconds
             in round_timer.round_robin(rows, _ROUNDS.value,
                                        'movielens_select').items()}
  timings = collections.OrderedDict()
  for name, (scenario, cost) in costs.items():
    timings[name] = dict(
        seconds_per_round=medians[name + ' per-client'],
        floor_seconds_per_round=medians['floor ' + scenario],
        down_bytes=cost.down_bytes, up_bytes=cost.up_bytes)
    if grouped:
      timings[name]['grouped_seconds_per_round'] = medians[name + ' grouped']
  groups = [len(g) for g in group_ids_fn(1)]
  profile = None
  if grouped:
    profile = collections.OrderedDict(
        (key, dict(label=label, seconds_per_round=medians['profile ' + key]))
        for key, (label, _, _) in _PROFILE.items())
    profile['floor'] = dict(
        label='compute floor (Parallel Training)',
        seconds_per_round=medians['floor ' +
                                  movielens_config.PARALLEL_TRAINING])

  date = datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')
  report = dict(date=date, data=source, clients_per_round=clients_per_round,
                groups=groups, clients_per_group=_CLIENTS_PER_GROUP.value,
                load_average=dict(start=load_start, end=os.getloadavg()[0]),
                config=config._asdict(), timings=timings, profile=profile,
                machine=results_lib.machine_description())
  reports.atomic_write_text(_resolve(_OUTPUT_JSON.value),
                            json.dumps(report, indent=2) + '\n')
  lines = [
      '## Movie task: federated_select vs broadcast '
      '(benchmarks/movielens_select.py)',
      '',
      f'Generated on {date} by `python -m benchmarks.movielens_select '
      f'{" ".join(sys.argv[1:])}`'.rstrip() + f' on {report["machine"]}; raw '
      f'numbers in `{_OUTPUT_JSON.value}`.',
      '',
      f'* Data: {source}; {data.num_movies} movies, S = {clients_per_round}, '
      f'K = {config.client_steps}, batch {config.client_batch_size}, d = '
      f'{config.embedding_dim}, {config.keys_per_client} keys per client.',
      f'* Timing: median of {_ROUNDS.value - 1} rounds after one untimed '
      'round, every row\'s (the floors\' and the profile\'s included) round '
      'r run before any row\'s round r + 1, in a new seeded order every '
      'round; bytes per client and round from the compiled computation; '
      'load average (1 min) at start / end '
      f'{load_start:.2f} / {report["load_average"]["end"]:.2f}, on a '
      'machine shared with other work.',
      '* Modes: per-client, one client per CLIENTS member, where TFF\'s '
      'simulation runtime runs `select_fn` once per key (S x keys calls a '
      'round); grouped, `tff_mixed.ClientGroups` '
      f'(`--clients_per_group={_CLIENTS_PER_GROUP.value}`, {len(groups)} '
      f'groups of {_sizes(groups)} clients), where each group '
      'gathers its members\' rows of the table inside its computation, with '
      'no `select_fn` call per key. Same model and metrics either way. Bytes '
      'per client are the per-client process\'s, what a deployment moves: '
      'grouping changes how the simulation runs, not what a client sends.',
      '* Compute floor (`benchmarks/movielens_floor.py`): the scenario\'s '
      'round on round 1\'s clients\' batches as one plain `tf.function` '
      '(no TFF, metrics, data reading or selection), the clients training '
      'the whole table as the broadcast rows do; for the federated_select '
      'rows it is an upper bound of their floor (a client\'s slice is '
      'smaller). "x floor" is the mode the binary runs (grouped by '
      'default) over the floor.',
      '* Reading: what `federated_select` saves is the bytes each client '
      'moves (and, against the baseline, the spreadout on every client).',
      '',
      '| process | s/round per-client | s/round grouped | floor s/round | '
      'x floor | down KB | up KB |',
      '|---|---:|---:|---:|---:|---:|---:|',
  ]
  ratios = {}
  for name, t in timings.items():
    grouped_s = t.get('grouped_seconds_per_round')
    ratios[name] = ((t['seconds_per_round'] if grouped_s is None
                     else grouped_s) / t['floor_seconds_per_round'])
    lines.append(
        f'| {name} | {t["seconds_per_round"]:.2f} | '
        + ('-' if grouped_s is None else f'{grouped_s:.2f}') + ' | '
        f'{t["floor_seconds_per_round"]:.3f} | {ratios[name]:.1f} | '
        f'{t["down_bytes"] / 1e3:.1f} | {t["up_bytes"] / 1e3:.1f} |')
  speedups = [t['seconds_per_round'] / t['grouped_seconds_per_round']
              for t in timings.values() if 'grouped_seconds_per_round' in t]
  if speedups:
    lines += ['', f'**Grouped vs per-client at S = {clients_per_round}:** '
              'per-client / grouped seconds per round '
              f'{min(speedups):.1f}x-{max(speedups):.1f}x, the same bytes per '
              'client.']
  lines += ['', f'**Against the compute floor at S = {clients_per_round}:** '
            f'{min(ratios.values()):.1f}x-{max(ratios.values()):.1f}x '
            f'({min(ratios, key=ratios.get)} to '
            f'{max(ratios, key=ratios.get)}).']
  if profile:
    lines += _profile_lines(profile, clients_per_round)
  markdown = '\n'.join(lines)
  markdown_sections.write_section(_resolve(_OUTPUT_MARKDOWN.value),
                                  'movielens_select', markdown,
                                  title='Benchmarks')
  print(markdown, flush=True)


if __name__ == '__main__':
  cli.run(main)
