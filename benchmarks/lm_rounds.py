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
r"""Seconds per round of the character LM's processes beside their floor.

FL-only, Parallel Training, 1-way and 2-way GT as stackoverflow_wikipedia_main
runs them at `make results-lm-sites`' settings (tables 7-8 with GRU 64 and
embedding 16: S = 100, K = 16 steps of batch 8, central batches 800 / 6400,
adaptive clipping, clients in groups), each beside its compute floor from
the same run (`benchmarks/lm_floor.py`: the clients' and the central
arithmetic on round 1's batches in one plain `tf.function`, the clients'
steps vectorized as the binary's lockstep groups run them).

The data are generated with the shapes that set a round's arithmetic (the
sequence length, the vocabulary, every client holding at least K batches):
a round's work does not depend on which characters the posts hold.

  python -m benchmarks.lm_rounds    # writes its BENCHMARKS.md section
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
from absl import app
import numpy as np

from benchmarks import benchmark_flags
from benchmarks import lm_floor
from benchmarks import round_timer
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import lm_runs
from experiments.stackoverflow_wikipedia import posts_xml_lib
from tff_mixed.training import reports

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROUNDS = shared_flags.define_rounds_flag(4, 'The first is not timed.')
shared_flags.require_at_least(_ROUNDS, 2)
_OUTPUT_MARKDOWN = benchmark_flags.define_output_markdown_flag(
    'BENCHMARKS.md', 'Its section: lm_rounds.')
_OUTPUT_JSON = benchmark_flags.define_output_json_flag(
    'benchmarks/results/lm_rounds.json')

# `make results-lm-sites`' settings (tables 7-8 but the GRU's size).
CONFIG = lm_config.Config(embedding_dim=16, gru_units=64)
_USERS = 300
_WORDS = ('the of and to in is that for it with as was on be by this are '
          'or from at which an have not has but were they beer hops malt '
          'yeast brew ale stout lager').split()


def _resolve(path: str) -> str:
  return path if os.path.isabs(path) else os.path.join(_REPO_ROOT, path)


def _text(rng, words: int) -> str:
  return ' '.join(rng.choice(_WORDS, words))


def generated_data(directory: str) -> lm_data.Data:
  """`_USERS` users of a Stack Exchange-style site, each with enough text
  for K batches of sequences, and a central corpus; loaded as the binary
  loads its data."""
  rng = np.random.default_rng(0)
  rows = []
  for user in range(1, _USERS + 1):
    for post in range(6):
      post_id = 6 * user + post
      rows.append(
          f'  <row Id="{post_id}" PostTypeId="2" CreationDate="2015-0'
          f'{post % 9 + 1}-01T10:00:00.000" Score="1" Body="&lt;p&gt;'
          f'{_text(rng, 120)}&lt;/p&gt;" OwnerUserId="{user}" />')
  posts = os.path.join(directory, 'Posts.xml')
  with open(posts, 'w') as f:
    f.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n'
            + '\n'.join(rows) + '\n</posts>\n')
  cache_dir = os.path.join(directory, 'so')
  posts_xml_lib.convert_posts(posts, cache_dir, test_cutoff='2015-06-01')
  central = [[_text(rng, 200) for _ in range(200)], [_text(rng, 200)
                                                      for _ in range(20)]]
  return lm_data.load_data(cache_dir, *central,
                           sequence_length=CONFIG.sequence_length,
                           max_eval_sequences=100)


def _time_process(scenario: str, data: lm_data.Data) -> float:
  process, client_ids = lm_runs.compose(scenario, data, CONFIG)
  state = process.initialize()

  def run_round(round_num):
    nonlocal state
    state = process.next(state, client_ids(round_num)).state

  return round_timer.median_round(run_round, _ROUNDS.value,
                                  f'lm_rounds {scenario}')


def _time_floor(scenario: str, data: lm_data.Data) -> float:
  runner = lm_floor.build_floor_runner(scenario, CONFIG)
  ids = lm_runs.client_ids_fn(data, CONFIG, grouped=False)(1)
  runner.set_clients(*lm_floor.client_batches(data, CONFIG, ids),
                     central=lm_floor.central_inputs(scenario, data, CONFIG))
  return round_timer.median_round(lambda _: runner.run_round(),
                                  _ROUNDS.value, f'lm_rounds {scenario} floor')


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  load_start = os.getloadavg()[0]
  timings = collections.OrderedDict()
  # The clients' posts are read from the database while the rounds run.
  with tempfile.TemporaryDirectory() as directory:
    data = generated_data(directory)
    for scenario in lm_floor.ALGORITHMS:
      timings[scenario] = dict(
          floor_seconds_per_round=_time_floor(scenario, data),
          seconds_per_round=_time_process(scenario, data))
    clients_per_round = lm_runs.cohort_size(data, CONFIG)
  date = datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')
  config = CONFIG._asdict()
  report = dict(date=date, config=config, users=_USERS,
                clients_per_round=clients_per_round,
                load_average=dict(start=load_start, end=os.getloadavg()[0]),
                timings=timings, machine=results_lib.machine_description())
  reports.atomic_write_text(_resolve(_OUTPUT_JSON.value),
                            json.dumps(report, indent=2) + '\n')
  ratios = {s: t['seconds_per_round'] / t['floor_seconds_per_round']
            for s, t in timings.items()}
  lines = [
      '## The character LM\'s rounds beside their floor '
      '(benchmarks/lm_rounds.py)',
      '',
      f'Generated on {date} by `python -m benchmarks.lm_rounds '
      f'{" ".join(sys.argv[1:])}`'.rstrip() + f' on {report["machine"]}; raw '
      f'numbers in `{_OUTPUT_JSON.value}`.',
      '',
      f'* Setting: `make results-lm-sites`\' (tables 7-8 with GRU '
      f'{CONFIG.gru_units} and embedding {CONFIG.embedding_dim}): S = '
      f'{report["clients_per_round"]}, K = {CONFIG.client_steps} steps of '
      f'batch {CONFIG.client_batch_size}, sequences of '
      f'{CONFIG.sequence_length} characters, central batches '
      f'{CONFIG.central_batch_size} (PT, 2-way GT) / '
      f'{CONFIG.one_way_central_batch_size} (1-way GT), adaptive clipping; '
      'the clients in groups (one per core), as the binary runs them.',
      f'* Data: generated, {_USERS} users each holding at least K batches, '
      'and a generated central corpus: a round\'s arithmetic depends on '
      'these shapes, not on the characters.',
      '* Compute floor (`benchmarks/lm_floor.py`): the round\'s client and '
      'central SGD steps on round 1\'s batches as one plain `tf.function` '
      '(no TFF, metrics, data reading or clipping), every client\'s step '
      'k taken at once (`tf.vectorized_map` over the clients, as the '
      'binary\'s lockstep groups take them).',
      f'* Timing: median of {_ROUNDS.value - 1} rounds after one untimed '
      'round; load average (1 min) at start / end '
      f'{load_start:.2f} / {report["load_average"]["end"]:.2f}.',
      '',
      '| scenario | s/round | floor s/round | x floor |',
      '|---|---:|---:|---:|',
  ]
  for scenario, t in timings.items():
    lines.append(f'| {scenario} | {t["seconds_per_round"]:.2f} | '
                 f'{t["floor_seconds_per_round"]:.2f} | '
                 f'{ratios[scenario]:.2f} |')
  lines += ['', f'**Against the compute floor at S = '
            f'{report["clients_per_round"]}:** '
            f'{min(ratios.values()):.2f}x-{max(ratios.values()):.2f}x.']
  markdown = '\n'.join(lines)
  markdown_sections.write_section(_resolve(_OUTPUT_MARKDOWN.value),
                                  'lm_rounds', markdown, title='Benchmarks')
  print(markdown, flush=True)


if __name__ == '__main__':
  cli.run(main)
