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
r"""The CelebA smile results of arXiv:2205.13655 at the paper's settings.

Every scenario (FL-only, PT, 1-w GT, 2-w GT, Example Transfer, oracle) with
every seed for `--rounds` (default 1,000) at tables 5-6's hyperparameters
(S = 100 or all the clients if fewer, |B_i| = 5, K = 2, eta = 0.01, |B_c| =
1000 for 1-w GT and 500 for PT and 2-w GT, w_f = w_c = 0.5), then table 4's
diagnostics runs (K = 1, `--diagnostic_rounds`), then the report: tables over
seeds beside the paper's numbers, the AUC plot and each claim marked
reproduced or not (see `reproduce_lib` and `reproduce_report`).

  python -m experiments.celeba_smile.reproduce_main --cache_dir=DIR \
      --seeds=0,1,2 --results_markdown=RESULTS.md

Rerunning the same command resumes: finished runs are read back, an
interrupted one continues from its last checkpoint. `make results-celeba`
builds DIR from the real CelebA subset and runs this.
"""

from collections.abc import Sequence
import os
import time

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
from absl import logging

from experiments.celeba_smile import celeba_flags
from experiments.celeba_smile import reproduce_lib
from experiments.celeba_smile import reproduce_report
from experiments.common import results as results_lib
from experiments.common import shared_flags
from tff_mixed.training import reports as reports_lib

_SEEDS = shared_flags.define_seeds_flag(['0', '1', '2'], 'Replaces --seed.')
_SCENARIOS = celeba_flags.define_scenarios_flag()
_DIAGNOSTIC_ROUNDS = shared_flags.define_diagnostic_rounds_flag(100)
_PLOT = shared_flags.define_plot_flag(
    '', f'The AUC plot (default: <output_dir>/{reproduce_report.PLOT_FILE}).')
_DATA_NOTE = shared_flags.define_data_note_flag('')

# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()

# This binary's horizon is 1,000 rounds (the single-run binary keeps 100);
# the table's gain of the last quarter's AUC shows whether it has plateaued.
flags.set_default(celeba_flags.ROUNDS, 1000)


def _seeds() -> list[int]:
  if flags.FLAGS['seed'].present:
    raise ValueError('This binary takes --seeds (a list), not --seed.')
  return reproduce_lib.parse_seeds(_SEEDS.value)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  start = time.perf_counter()
  seeds = _seeds()
  kwargs = celeba_flags.experiment_kwargs()
  del kwargs['seed']
  output_dir = kwargs.pop('output_dir')
  clients_per_round = kwargs.pop('clients_per_round')
  target_auc = kwargs.pop('target_auc')
  central_batch_size = kwargs.pop('central_batch_size')
  reproduction = reproduce_lib.reproduce(
      _SCENARIOS.value, seeds, output_dir=output_dir,
      clients_per_round=clients_per_round,
      diagnostic_rounds=_DIAGNOSTIC_ROUNDS.value,
      central_batch_sizes=None if central_batch_size is None else {
          s: central_batch_size for s in reproduce_lib.MIXED},
      target_auc=target_auc, **kwargs)
  plot = _PLOT.value or os.path.join(output_dir, reproduce_report.PLOT_FILE)
  reports_lib.make_directory(os.path.dirname(os.path.abspath(plot)),
                             '--plot directory')
  reproduce_report.plot_auc_over_seeds(plot, reproduction.runs, target_auc)
  settings = dict(kwargs, clients_per_round=clients_per_round,
                  diagnostic_rounds=_DIAGNOSTIC_ROUNDS.value,
                  data_note=_DATA_NOTE.value, output_dir=output_dir)
  command = results_lib.command_line('experiments.celeba_smile.reproduce_main')
  machine, date = results_lib.machine_description(), results_lib.utc_now()
  wall_seconds = time.perf_counter() - start

  def section(markdown_path: str) -> str:
    return reproduce_report.results_markdown(
        reproduction, settings=settings, target_auc=target_auc,
        command=command, machine=machine, date=date,
        plot_link=_relative(plot, markdown_path), wall_seconds=wall_seconds)

  report_path = os.path.join(output_dir, 'report.md')
  reports_lib.atomic_write_text(report_path, section(report_path))
  print(section(report_path), end='', flush=True)
  if celeba_flags.RESULTS_MARKDOWN.value:
    results_lib.write_results_section(
        celeba_flags.RESULTS_MARKDOWN.value, reproduce_report.RESULTS_SECTION,
        section(celeba_flags.RESULTS_MARKDOWN.value))
    logging.info('Wrote %s', celeba_flags.RESULTS_MARKDOWN.value)
  logging.info('Wrote %s and %s', report_path, plot)


def _relative(path: str, markdown_path: str) -> str:
  """`path` as a link from the Markdown file `markdown_path`."""
  return os.path.relpath(os.path.abspath(path), os.path.dirname(
      os.path.abspath(markdown_path)))


if __name__ == '__main__':
  cli.run(main)
