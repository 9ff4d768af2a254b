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

Per scenario: build time, the first round (tracing), the median of the
timed rounds, and the ratio to FL-only (TFF's FedAvg on the same clients);
plus the one-time pass over the database and an evaluation.
"""

import collections
from collections.abc import Mapping, Sequence
import datetime
import json
import os
import shutil
import statistics
import sys
import time

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from tff_mixed.experiment import cli
from absl import app
from absl import flags
import numpy as np

from experiments.celeba_smile import celeba_smile_lib
from experiments.celeba_smile import raw_celeba_lib
from tff_mixed.experiment import comparison
from tff_mixed.experiment import results as results_lib
from tff_mixed.experiment import scenarios as scenarios_lib
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
_CLIENTS_PER_ROUND = flags.DEFINE_integer(
    'clients_per_round', 100, 'S (the paper: 100).', lower_bound=1)
_ROUNDS = flags.DEFINE_integer(
    'rounds', 4, 'Rounds per scenario; the first is not timed.',
    lower_bound=2)
_SCENARIOS = flags.DEFINE_list(
    'scenarios', list(celeba_smile_lib.SCENARIOS), 'Scenarios to time.')
_OUTPUT_MARKDOWN = flags.DEFINE_string(
    'output_markdown', 'BENCHMARKS.md', 'Markdown file; this benchmark owns '
    'its `celeba_scale` section.')
_OUTPUT_JSON = flags.DEFINE_string(
    'output_json', 'benchmarks/results/celeba_scale.json', 'Raw numbers.')


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
                    for a in raw_celeba_lib.ATTRIBUTE_NAMES}
      attributes['smiling'] = smiling
      examples.append((np.clip(image, 0, 255).astype(np.uint8), attributes))
    return examples

  def __iter__(self):
    return (str(i) for i in range(self._num_clients))

  def __len__(self):
    return self._num_clients


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


def _time_scenario(scenario, task, model, comparison_task, rounds,
                   clients_per_round):
  batch_sizes = scenarios_lib.paper_central_batch_sizes(
      clients_per_round, 2, task.client_batch_size,
      task.central_store.num_examples)
  start = time.perf_counter()
  process = comparison.scenario_process(
      scenario, comparison_task, model, client_lr=0.01, client_steps=2,
      central_batch_sizes=batch_sizes,
      examples_per_client=round(comparison_task.mean_client_examples),
      client_batch_size=task.client_batch_size, seed=0)
  state = process.initialize()
  build_s = time.perf_counter() - start
  client_data_fn, _ = comparison.round_functions(
      scenario, comparison_task, clients_per_round=clients_per_round,
      client_steps=2, seed=0)
  round_s = []
  for round_num in range(1, rounds + 1):
    start = time.perf_counter()
    state = process.next(state, client_data_fn(round_num)).state
    round_s.append(time.perf_counter() - start)
    print(f'[celeba_scale] {scenario} round {round_num}: '
          f'{round_s[-1]:.2f} s', file=sys.stderr, flush=True)
  return collections.OrderedDict(
      build_s=build_s, first_round_s=round_s[0],
      median_round_s=statistics.median(round_s[1:]),
      timed_rounds=len(round_s) - 1)


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
    raw_celeba_lib.write_celeba_database(
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
  timings = collections.OrderedDict(
      (s, _time_scenario(s, task, model, comparison_task, _ROUNDS.value,
                         clients_per_round))
      for s in _SCENARIOS.value)

  report = collections.OrderedDict(
      command=' '.join(['python -m benchmarks.celeba_scale', *sys.argv[1:]]),
      date=datetime.datetime.now(datetime.timezone.utc).strftime(
          '%Y-%m-%d %H:%M UTC'),
      machine=results_lib.machine_description(),
      data=dict(spec, federated_clients=task.num_clients,
                central_examples=task.central_store.num_examples,
                eval_examples=len(task.eval_labels),
                database_mib=os.path.getsize(database) / 2**20),
      clients_per_round=clients_per_round, task_build_s=task_s,
      eval_s=eval_s, timings=timings)
  reports.atomic_write_text(_resolve(_OUTPUT_JSON.value),
                            json.dumps(report, indent=2) + '\n')
  base = timings.get('fl_only', {}).get('median_round_s')
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
      f'* One-time pass over the database (central store, label counts, eval '
      f'arrays): {task_s:.1f} s; one evaluation: {eval_s:.2f} s.',
      '',
      '| scenario | build (s) | first round (s) | s/round (median) | '
      'x FL-only |',
      '|---|---:|---:|---:|---:|',
  ]
  for scenario, t in timings.items():
    ratio = f'{t["median_round_s"] / base:.2f}' if base else '-'
    lines.append(f'| {scenario} | {t["build_s"]:.1f} | '
                 f'{t["first_round_s"]:.1f} | {t["median_round_s"]:.2f} | '
                 f'{ratio} |')
  markdown = '\n'.join(lines)
  reports.write_markdown_section(_resolve(_OUTPUT_MARKDOWN.value),
                                 'celeba_scale', markdown,
                                 title='Benchmarks')
  print(markdown, flush=True)


if __name__ == '__main__':
  cli.run(main)
