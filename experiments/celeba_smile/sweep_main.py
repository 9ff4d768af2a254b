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
r"""Sweeps of the CelebA smile classifier (arXiv:2205.13655, appendix B.4).

*   `--sweep=central_batch_size`: 1-way and 2-way GT with each
    `--central_batch_sizes` (the paper's figures 7-8: 1-way GT is the more
    sensitive to central gradient variance).
*   `--sweep=lr_steps`: PT, 1-way and 2-way GT with each eta:K pair of
    `--lr_steps`, eta shrinking as K grows (figure 9).

  python -m experiments.celeba_smile.sweep_main --cache_dir=DIR \
      --sweep=central_batch_size --central_batch_sizes=1,5,25,100,500,1000

Every other flag (rounds, S, seed, ...) is the experiment binary's. Writes
one subdirectory per point plus a combined `metrics.csv`, `results.txt` and
`auc_accuracy.png` to `--output_dir`.
"""

from collections.abc import Sequence
import os
import sys

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.celeba_smile import celeba_flags
from experiments.celeba_smile import celeba_smile_lib
from experiments.common import results as results_lib

_SWEEP = flags.DEFINE_enum('sweep', 'central_batch_size',
                           ['central_batch_size', 'lr_steps'],
                           'Which sweep to run.')
_CENTRAL_BATCH_SIZES = flags.DEFINE_list(
    'central_batch_sizes', ['1', '5', '25', '100', '500', '1000'],
    '|B_c| values of the central batch size sweep.')
_LR_STEPS = flags.DEFINE_list(
    'lr_steps', ['0.02:1', '0.01:2', '0.005:4', '0.0025:8'],
    'eta:K pairs of the learning rate vs local steps sweep.')

# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  kwargs = celeba_flags.experiment_kwargs()
  if _SWEEP.value == 'central_batch_size':
    try:
      sizes = [int(b) for b in _CENTRAL_BATCH_SIZES.value]
    except ValueError:
      raise ValueError('--central_batch_sizes must be positive ints, got '
                       f'{_CENTRAL_BATCH_SIZES.value}.') from None
    if not sizes or min(sizes) < 1:
      raise ValueError('--central_batch_sizes must be positive ints, got '
                       f'{_CENTRAL_BATCH_SIZES.value}.')
    points = celeba_smile_lib.central_batch_sweep(sizes)
  else:
    points = celeba_smile_lib.lr_steps_sweep(
        celeba_smile_lib.parse_lr_steps(_LR_STEPS.value))
  output_dir = os.path.join(kwargs.pop('output_dir'), _SWEEP.value)
  table, plot_path = celeba_smile_lib.run_sweep(
      points, output_dir=output_dir, **kwargs)
  print(table, end='', flush=True)
  print(f'Plot: {plot_path}')
  if celeba_flags.RESULTS_MARKDOWN.value:
    command = ('python -m experiments.celeba_smile.sweep_main '
               + ' '.join(sys.argv[1:]))
    results_lib.write_results_section(
        celeba_flags.RESULTS_MARKDOWN.value,
        f'{celeba_smile_lib.SWEEP_RESULTS_SECTION}_{_SWEEP.value}',
        f'## CelebA smile sweep: {_SWEEP.value}\n\nGenerated on '
        f'{results_lib.utc_now()} by `{command}` on '
        f'{results_lib.machine_description()}.\n\n```\n'
        f'{table.rstrip()}\n```\n')


if __name__ == '__main__':
  cli.run(main)
