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
r"""Seconds per round of the hybrid experiment's FedBuff and Feddle beside
their floor.

`fedbuff` and `feddle_id` as hybrid_async_main runs them at its defaults
(`hybrid_config.Config`: 500 clients, 10 a round, delays of std 5, one
epoch of Adam on the clients, a buffer of 10, Feddle's search of 10 steps
on the server's 1,000 images; the CNN on 32x32x3 images), through
`hybrid_runs.run_method` itself, each beside its compute floor from the
same run (`benchmarks/hybrid_floor.py`: the round's client training and
merges in one plain `tf.function`, the clients one after another).

A round merges 0, 1 or 2 buffers as the delayed updates arrive, so each
floor round trains its process round's clients on their batches and makes
its merges; s/round is the mean of the timed rounds (a median of seconds
would pick one round's merges), the ratio the median over the timed rounds
of a round's seconds over its floor round's. The timed rounds follow
`_WARMUP_ROUNDS` untimed ones: the first traces, and by then updates
arrive about as fast as clients are sampled and Feddle's atlas is full.
Each round's clients' training (the TFF call that trains them, with
their data read by the groups or, one client per member, built in Python,
and their updates read back) is timed apart too: the
part of the round that the floor's client training compares with. The
run keeps the binary's 200-round schedule and stops after the timed
rounds: a schedule as short as the benchmark would not train the clients
whose updates could not arrive before its end.

The data are generated with the shapes that set a round's arithmetic (the
image size, the classes, CIFAR-10's 50,000 training and 10,000 test images
split as `make results-hybrid-cifar10` splits them, about 100 images a
client): a round's work does not depend on the pixels. The clients train
in groups, one per core, as the binary and that target run them
(`--clients_per_group`, default 0), each group reading its members'
images from the split's client store (`hybrid_client_store`).

  python -m benchmarks.hybrid_rounds    # writes its BENCHMARKS.md section
"""

import collections
from collections.abc import Sequence
import contextlib
import json
import os
import statistics
import sys
import time

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
import numpy as np

from benchmarks import benchmark_flags
from benchmarks import hybrid_floor
from experiments.common import grouping
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_runs
import tff_mixed
from tff_mixed.asynchronous import async_round
from tff_mixed.tasks import cifar10_pngs
from tff_mixed.training import reports

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# hybrid_async_main's defaults and `make results-hybrid-cifar10`'s data:
# CIFAR-10's training images to the clients, its test images held out for
# the server, validation and evaluation, at 32x32.
CONFIG = hybrid_config.Config(validation_size=1000)
_SEED = 0
_TRAIN_IMAGES = 50000
_TEST_IMAGES = 10000
_IMAGE_SHAPE = (32, 32, 3)
_CLASSES = 10
_WARMUP_ROUNDS = 10
# The target ratio of a paper binary's round to its floor.
_FLOOR_GOAL = 1.5
# The timed rounds end long before the binary's schedule: near its end the
# sampled clients whose updates could not arrive are not trained.
_MAX_ROUNDS = CONFIG.rounds // 2
_ROUNDS = shared_flags.define_rounds_flag(
    5, f'Timed rounds per method, after {_WARMUP_ROUNDS} untimed ones.')
flags.register_validator(
    _ROUNDS.name, lambda rounds: rounds <= _MAX_ROUNDS,
    message=f'--rounds must be at most {_MAX_ROUNDS} (the binary\'s '
    f'schedule runs {CONFIG.rounds} rounds, and its last ones train fewer '
    'clients).')
_ALGORITHMS = shared_flags.define_algorithms_flag(
    hybrid_floor.METHODS, 'The hybrid binary\'s method names.')
shared_flags.require_choices(_ALGORITHMS, hybrid_floor.METHODS)
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md', 'Its section: hybrid_rounds.')
_OUTPUT_JSON = benchmark_flags.define_output_json_flag(
    'benchmarks/results/hybrid_rounds.json')


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


def generated_data() -> hybrid_config.Data:
  """Random images of CIFAR-10's sizes, split as hybrid_async_main splits
  CIFAR-10's training and test images (`load_data` with `--cifar10_dir`).

  Pixels as `cifar10_pngs` loads them, uint8 values over 255 in float32,
  so that the client store holds them as bytes, as it holds CIFAR-10's.
  """
  rng = np.random.default_rng(_SEED)
  count = _TRAIN_IMAGES + _TEST_IMAGES
  images = np.divide(rng.integers(0, 256, (count, *_IMAGE_SHAPE), np.uint8),
                     255.0, dtype=np.float32)
  labels = np.tile(np.arange(_CLASSES), count // _CLASSES)
  split = cifar10_pngs.build_full_split(
      images, labels, _TRAIN_IMAGES, num_clients=CONFIG.num_clients,
      alpha=CONFIG.alpha, server_size=CONFIG.server_size, seed=_SEED,
      validation_size=CONFIG.validation_size)
  return hybrid_config.Data(split, None, None, split.description)


class _Stop(Exception):
  """Ends a run after its timed rounds."""


class _TrainingTimer:
  """Seconds the run spends training its clients, round by round.

  `timing()` wraps `AsyncProcess._train` (the TFF call that trains the
  round's clients, with their data, and their updates read back): the
  part of a round the floor's client training compares with. `take()`
  gives the seconds since the last `take()`.
  """

  def __init__(self):
    self._pending = 0.0

  @contextlib.contextmanager
  def timing(self):
    original = async_round.AsyncProcess._train

    def timed(process, *args, **kwargs):
      start = time.perf_counter()
      try:
        return original(process, *args, **kwargs)
      finally:
        self._pending += time.perf_counter() - start

    async_round.AsyncProcess._train = timed
    try:
      yield self
    finally:
      async_round.AsyncProcess._train = original

  def take(self) -> float:
    seconds, self._pending = self._pending, 0.0
    return seconds


class _Clock(tff_mixed.AsyncObserver):
  """Each round's seconds, its clients' training seconds and its merges,
  from one round's end to the next."""

  def __init__(self, label: str, rounds: int, training: _TrainingTimer):
    super().__init__()
    self.seconds, self.training_seconds, self.merges = [], [], []
    self._label, self._rounds, self._training = label, rounds, training
    self._last = time.perf_counter()

  def on_round(self, event) -> None:
    self.seconds.append(time.perf_counter() - self._last)
    self.training_seconds.append(self._training.take())
    self.merges.append(event.num_merges)
    print(f'[{self._label}] round {event.round_num}: '
          f'{self.seconds[-1]:.2f} s, {event.num_merges} merge(s)',
          file=sys.stderr, flush=True)
    if event.round_num == self._rounds:
      raise _Stop()
    self._last = time.perf_counter()


def _time_process(method: str, data: hybrid_config.Data):
  """`(clock, model)` of the binary's run of `method`, stopped after the
  timed rounds."""
  seen = {}
  training = _TrainingTimer()

  def observer_fn(model):
    seen['model'] = model
    seen['clock'] = _Clock(f'hybrid_rounds {method}',
                           _WARMUP_ROUNDS + _ROUNDS.value, training)
    return seen['clock']

  # Evaluated before round 1 only: the rounds' times are their own.
  config = CONFIG._replace(eval_every=CONFIG.rounds)
  try:
    with training.timing():
      hybrid_runs.run_method(method, data, config, _SEED,
                             clients_per_group=_CLIENTS_PER_GROUP.value,
                             observer_fn=observer_fn)
  except _Stop:
    pass
  return seen['clock'], seen['model']


def _trained_clients(schedule, round_num: int) -> list[int]:
  """The clients `AsyncProcess.next` trains in `round_num`: the sampled
  ones whose updates can arrive within the run."""
  sampled = schedule.sample(round_num)
  never = {a.client for a in schedule.never_arriving()
           if a.sampled_round == round_num}
  schedule.arrivals(round_num)  # Frees the clients that arrive.
  return [c for c in sampled if c not in never]


def _floor_batches(method: str, data: hybrid_config.Data,
                   num_rounds: int) -> list[hybrid_floor.ClientBatches]:
  """Each round's trained clients' batches, as the process's schedule
  samples them; read before the timed rounds: data movement is not the
  floor's."""
  schedule = tff_mixed.AsyncSchedule(
      CONFIG.num_clients, CONFIG.clients_per_round,
      hybrid_config.delay_of(method, CONFIG.delay_std), CONFIG.rounds,
      seed=_SEED)
  return [hybrid_floor.client_batches([
      hybrid_runs.client_dataset(method, data, CONFIG, _SEED, c, round_num)
      for c in _trained_clients(schedule, round_num)])
          for round_num in range(1, num_rounds + 1)]


def _time_floor(method: str, data: hybrid_config.Data, model,
                rounds: Sequence[hybrid_floor.ClientBatches],
                merges: Sequence[int],
                with_diagnostics: bool = False) -> list[float]:
  """Each floor round's seconds: the clients of the process round
  (`rounds`) and its merges (`merges`, per round), with Feddle's diagnostic
  losses or without."""
  runner = hybrid_floor.FloorRunner(model, method, data, CONFIG, _SEED,
                                    with_diagnostics)
  label = 'floor with diagnostics' if with_diagnostics else 'floor'
  seconds = []
  for round_num, (batches, count) in enumerate(zip(rounds, merges), 1):
    start = time.perf_counter()
    runner.run_round(batches, count)
    seconds.append(time.perf_counter() - start)
    print(f'[hybrid_rounds {method} {label}] round {round_num}: '
          f'{seconds[-1]:.2f} s, {count} merge(s)', file=sys.stderr,
          flush=True)
  return seconds


def _paired_ratio(seconds: Sequence[float],
                  floor_seconds: Sequence[float]) -> float:
  """The median over rounds of a round's seconds over its floor round's.

  A process round and its floor round train the same clients and make the
  same merges, so their ratio is the overhead of that round; the median
  keeps one slow round (a clients' draw of 700 images, a pause of the
  machine) from deciding it, as it would a ratio of means.
  """
  return statistics.median(s / f for s, f in zip(seconds, floor_seconds))


def _timings(method: str, data: hybrid_config.Data) -> dict:
  clock, model = _time_process(method, data)
  rounds = _floor_batches(method, data, len(clock.merges))
  floor = _time_floor(method, data, model, rounds, clock.merges)
  timed = slice(_WARMUP_ROUNDS, None)
  seconds = statistics.mean(clock.seconds[timed])
  floor_seconds = statistics.mean(floor[timed])
  result = dict(
      seconds_per_round=seconds, floor_seconds_per_round=floor_seconds,
      x_floor=_paired_ratio(clock.seconds[timed], floor[timed]),
      merges_per_round=statistics.mean(clock.merges[timed]),
      training_seconds_per_round=statistics.mean(
          clock.training_seconds[timed]),
      round_seconds=clock.seconds, floor_round_seconds=floor,
      round_training_seconds=clock.training_seconds,
      round_merges=clock.merges)
  if method == hybrid_config.FEDDLE_ID:
    # The binary computes Feddle's diagnostic losses at every merge: the
    # floor of that arithmetic too.
    with_losses = _time_floor(method, data, model, rounds, clock.merges,
                              with_diagnostics=True)
    losses_seconds = statistics.mean(with_losses[timed])
    result.update(
        diagnostics_floor_seconds_per_round=losses_seconds,
        x_diagnostics_floor=_paired_ratio(clock.seconds[timed],
                                          with_losses[timed]),
        diagnostics_floor_round_seconds=with_losses)
  return result


def _setting_lines(report: dict) -> list[str]:
  c = CONFIG
  steps = hybrid_methods.server_steps(c, c.server_size, feddle_search=True)
  per_group = report['clients_per_group']
  groups = {0: 'in groups, one per core', 1: 'one per CLIENTS member'}.get(
      per_group, f'in groups of {per_group}')
  return [
      f'* Setting: hybrid_async_main\'s defaults (`hybrid_config.Config`): '
      f'{c.num_clients} clients, {c.clients_per_round} a round, delays '
      f'|N(0, {c.delay_std:g}^2)| rounds, Dir({c.alpha:g}); each client '
      f'trains {c.client_epochs} epoch of batch {c.client_batch_size} with '
      f'Adam at {c.client_lr:g}; the CNN (convolutions '
      f'{"/".join(map(str, c.conv_filters))}, dense {c.dense_units}) on '
      f'{"x".join(map(str, _IMAGE_SHAPE))} images of {_CLASSES} classes; '
      f'FedBuff\'s buffer {c.buffer_size}; Feddle in domain: an atlas of '
      f'{hybrid_config.feddle_atlas_size(c)}, {steps} Adam steps at '
      f'{c.feddle_search_lr:g} on server batches of {c.server_batch_size}; '
      f'the clients {groups} (`--clients_per_group={per_group}`; the '
      'binary\'s default, 0, runs groups, each reading its members\' images '
      'from the split\'s client store).',
      '* Data: generated random images (uint8 pixels over 255, as '
      'CIFAR-10\'s are loaded and stored), split as `make '
      'results-hybrid-cifar10` splits CIFAR-10\'s training and test '
      f'images: {report["data"]} A round\'s arithmetic depends on these '
      'shapes, not on the pixels.',
      '* Compute floor (`benchmarks/hybrid_floor.py`): the round\'s client '
      'training (the binary\'s Adam steps on each client\'s batches, one '
      'client after another) and its merges (FedBuff\'s mean; Feddle\'s '
      'atlas, normalization and coefficient search) as one plain '
      '`tf.function`: no TFF, metrics, schedule, data reading or Feddle '
      'diagnostics. "With diagnostics": Feddle\'s floor adding the '
      'diagnostic losses the binary computes at every merge (the merged '
      'model\'s loss over the server set at c\' and at the searched c: two '
      'forward passes over it).',
      f'* Timing: {_ROUNDS.value} rounds after {_WARMUP_ROUNDS} untimed ones '
      '(the first traces; by then updates arrive about as fast as clients '
      'are sampled and Feddle\'s atlas is full); each floor round trains its '
      'process round\'s clients and makes its merges. s/round: the mean of '
      'the timed rounds; "x floor": the median over them of a round\'s '
      'seconds over its floor round\'s. Load average (1 min) at start / '
      'end '
      f'{report["load_average"]["start"]:.2f} / '
      f'{report["load_average"]["end"]:.2f}.',
  ]


def _markdown(report: dict) -> str:
  timings = report['timings']
  lines = [
      '## The hybrid experiment\'s asynchronous rounds beside their floor '
      '(benchmarks/hybrid_rounds.py)',
      '',
      f'Generated on {report["date"]} by `{report["command"]}` on '
      f'{report["machine"]}; raw numbers in `{_OUTPUT_JSON.value}`.',
      '',
      *_setting_lines(report),
      '',
      '| method | s/round | of which clients\' training | floor s/round '
      '| x floor | floor with diagnostics s/round | x that | merges/round |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for method, t in timings.items():
    with_losses = ('- | -' if 'x_diagnostics_floor' not in t else
                   f'{t["diagnostics_floor_seconds_per_round"]:.2f} | '
                   f'{t["x_diagnostics_floor"]:.2f}')
    lines.append(f'| {method} | {t["seconds_per_round"]:.2f} | '
                 f'{t["training_seconds_per_round"]:.2f} | '
                 f'{t["floor_seconds_per_round"]:.2f} | '
                 f'{t["x_floor"]:.2f} | {with_losses} | '
                 f'{t["merges_per_round"]:.1f} |')
  ratios = {m: t['x_floor'] for m, t in timings.items()}
  above = [m for m, r in ratios.items() if r > _FLOOR_GOAL]
  lines += ['', f'**Against the compute floor:** '
            f'{min(ratios.values()):.2f}x-{max(ratios.values()):.2f}x; '
            + (f'above {_FLOOR_GOAL:g}x: {", ".join(above)}.' if above else
               f'every method within {_FLOOR_GOAL:g}x.')]
  if any('x_diagnostics_floor' in t for t in timings.values()):
    lines[-1] += ' Against the floor with Feddle\'s diagnostics: ' + ', '.join(
        f'{m} {t["x_diagnostics_floor"]:.2f}x' for m, t in timings.items()
        if 'x_diagnostics_floor' in t) + '.'
  parts = []
  for method, t in timings.items():
    training = t['training_seconds_per_round']
    parts.append(f'{method} {training:.2f} s of '
                 f'{t["seconds_per_round"]:.2f} s, '
                 f'{training / t["floor_seconds_per_round"]:.2f}x the '
                 'floor\'s whole round')
  lines += ['', '**Where a round goes:** the clients\' training (the TFF '
            'call that trains them, with their data, and their updates read '
            'back) takes ' + '; '.join(parts) + '; the rest is '
            'the schedule and the merges (Feddle\'s search and '
            'diagnostics).']

  return '\n'.join(lines)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  load_start = os.getloadavg()[0]
  data = generated_data()
  timings = collections.OrderedDict(
      (method, _timings(method, data)) for method in _ALGORITHMS.value)
  report = dict(
      date=results_lib.utc_now(),
      command=results_lib.command_line('benchmarks.hybrid_rounds'),
      config=CONFIG._asdict(),
      images=dict(train=_TRAIN_IMAGES, test=_TEST_IMAGES), seed=_SEED,
      data=data.description, warmup_rounds=_WARMUP_ROUNDS,
      timed_rounds=_ROUNDS.value,
      clients_per_group=_CLIENTS_PER_GROUP.value,
      load_average=dict(start=load_start, end=os.getloadavg()[0]),
      timings=timings, machine=results_lib.machine_description())
  reports.atomic_write_text(_resolve(_OUTPUT_JSON.value),
                            json.dumps(report, indent=2) + '\n')
  markdown = _markdown(report)
  markdown_sections.write_section(_resolve(_OUTPUT_MARKDOWN.value),
                                  'hybrid_rounds', markdown,
                                  title='Benchmarks', after='lm_rounds')
  print(markdown, flush=True)


if __name__ == '__main__':
  cli.run(main)
