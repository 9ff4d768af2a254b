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
r"""Writes where the tuned hybrid tables differ from the paper, measured.

Reads the committed run records (`gaps_lib`): the searches' points at our
scale and the paper's, and the tuned tables' runs (from scratch, pretrained,
CelebA); runs nothing.

  python -m experiments.hybrid_async.gaps_main --results_markdown=RESULTS.md
"""

from collections.abc import Sequence

from experiments.common import cli
from absl import app
from absl import flags

from experiments.common import results as results_lib
from experiments.hybrid_async import gaps_lib
from experiments.hybrid_async import gaps_records
from experiments.hybrid_async import paper_tables

_SMALL = flags.DEFINE_string(
    'small_tuning', 'docs/results/hybrid_tuning/cifar10_16',
    'The search at our scale (tune_main --output_dir).')
_MERGE = flags.DEFINE_string(
    'merge_tuning', 'docs/results/hybrid_tuning/cifar10_16_merge',
    'The merge stage of the search at our scale (Feddle\'s coefficient '
    'search among its points).')
_FULL = flags.DEFINE_string(
    'full_tuning', 'docs/results/hybrid_tuning/cifar10_32_scratch',
    'The search at the paper\'s scale.')
_FULL_CENTER = flags.DEFINE_string(
    'full_center_tuning', 'docs/results/hybrid_tuning/cifar10_32_center',
    'Center\'s search at the paper\'s scale (it needs no client values, so '
    'it is made apart from the client stage).')
_SCRATCH = flags.DEFINE_string(
    'scratch_runs', 'docs/results/hybrid_async_tuned/scratch',
    'The tuned table\'s runs from scratch (hybrid_async_main --runs_dir).')
_LONG = flags.DEFINE_string(
    'long_runs', 'docs/results/hybrid_async_tuned/scratch_200',
    'FedAvg with and without the delays and FedBuff from scratch at 200 '
    'rounds (hybrid_async_main --rounds=200 --runs_dir).')
_CLIENT_GRID = flags.DEFINE_string(
    'client_grid_runs', 'docs/results/hybrid_async_tuned/client_grid_delayed',
    'FedAvg with and without the delays at each client point (one '
    'hybrid_async_main --runs_dir per point, named as tune_main\'s).')
_SEARCH_RATES = flags.DEFINE_string(
    'search_rate_runs', 'docs/results/hybrid_async_tuned/feddle_search_rates',
    'Feddle-ID at larger search rates than the selected one (one '
    'hybrid_async_main --runs_dir per rate, named feddle_search_lr=<lr>).')
_PRETRAINED = flags.DEFINE_string(
    'pretrained_runs', 'docs/results/hybrid_async_tuned/pretrained',
    'The tuned table\'s runs from the pretrained start.')
_CELEBA = flags.DEFINE_string(
    'celeba_runs', 'docs/results/hybrid_async_celeba',
    'The CelebA column\'s runs.')
_PRETRAINED_TUNING = flags.DEFINE_string(
    'pretrained_tuning', 'docs/results/hybrid_tuning/cifar10_16_pretrained',
    'The client grid searched from the pretrained start (tune_main '
    '--pretrain_size ... --tune_methods=fedavg).')
_SPAN = flags.DEFINE_list(
    'span_records', ['docs/results/feddle_span',
                     'docs/results/feddle_span_pretrained',
                     'docs/results/feddle_span_atlas40'],
    'What the span of Feddle\'s atlas holds (feddle_span_main\'s records: '
    'from scratch, from the pretrained start, with an atlas of 40).')
_RESULTS = results_lib.define_results_flags('hybrid_async_gaps')
_MODULE = 'experiments.hybrid_async.gaps_main'


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  tables = []
  for title, runs_dir, table in (
      ('CIFAR-10 from scratch', _SCRATCH.value,
       paper_tables.TABLE7_CIFAR10_CNN),
      ('CIFAR-10 pretrained', _PRETRAINED.value,
       paper_tables.TABLE6_CIFAR10_RESNET18),
      ('CelebA by identity', _CELEBA.value, paper_tables.TABLE2_CELEBA)):
    rows = gaps_records.kept_rows(runs_dir)
    if rows:
      tables.append((title, rows, table))
  if not tables:
    raise ValueError('No kept run in --scratch_runs, --pretrained_runs or '
                     '--celeba_runs.')
  markdown = gaps_lib.results_markdown(
      command=results_lib.command_line(_MODULE),
      machine=results_lib.machine_description(), date=results_lib.utc_now(),
      small_dir=_SMALL.value, full_dir=_FULL.value,
      full_center_dir=_FULL_CENTER.value, tables=tables,
      span_dirs=_SPAN.value, pretrained_dir=_PRETRAINED_TUNING.value,
      long_rows=gaps_records.kept_rows(_LONG.value),
      client_grid_dir=_CLIENT_GRID.value,
      search_rates_dir=_SEARCH_RATES.value, merge_dir=_MERGE.value)
  print(markdown, flush=True)
  if _RESULTS.markdown.value:
    results_lib.write_results_section(
        _RESULTS.markdown.value, _RESULTS.section.value, markdown,
        note=_RESULTS.note.value)


if __name__ == '__main__':
  cli.run(main)
