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
r"""The CelebA smile classifier: mixed FL vs FL-only vs oracle on CelebA.

Federated clients hold only smiling faces, the datacenter only non-smiling
ones (arXiv:2205.13655, section 4.1; see `celeba_smile_lib`). Data: TFF's
CelebA `celeba.sqlite` in `--cache_dir` (TFF downloads it with `--download`;
or build it offline from a raw CelebA copy with `convert_raw_celeba_main`).

The paper's setting (6 scenarios, 100 rounds each, ~20,000 eval images):

  python -m experiments.celeba_smile.celeba_smile_main --cache_dir=DIR

With the (G, B)-BGD diagnostics of the paper's table 4 (K = 1):

  python -m experiments.celeba_smile.celeba_smile_main --cache_dir=DIR \
      --client_steps=1 --with_diagnostics \
      --scenarios=parallel_training,one_way_gt,two_way_gt

Writes `metrics.csv`, `auc_accuracy.png` (eval AUC vs round, every
scenario), `results.txt`, `config.json` (and `diagnostics.txt`) to
`--output_dir` and prints the tables.
"""

from collections.abc import Sequence
import sys

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
from absl import logging

from experiments.celeba_smile import celeba_flags
from experiments.celeba_smile import celeba_smile_lib
from experiments.common import advising
from experiments.common import results as results_lib

_SCENARIOS = celeba_flags.define_scenarios_flag()
_WITH_DIAGNOSTICS = flags.DEFINE_bool(
    'with_diagnostics', False, 'Report the (G, B)-BGD estimates G~^2, B~^2 '
    '(eq. 7) of PT and GT; costs an extra client upload per round.')
_ADVISE = advising.define_advise_flags()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  if _ADVISE.rounds.value:
    advice, files = celeba_smile_lib.run_advice(
        _ADVISE.rounds.value, **celeba_flags.experiment_kwargs())
    if not advising.report(advice, files, _ADVISE.then.value):
      return
  result = celeba_smile_lib.run_experiment(
      scenarios=_SCENARIOS.value, with_diagnostics=_WITH_DIAGNOSTICS.value,
      **celeba_flags.experiment_kwargs())
  print(result.comparison.table, end='', flush=True)
  if result.diagnostics:
    print(celeba_smile_lib.format_diagnostics(result.diagnostics), end='',
          flush=True)
  if celeba_flags.RESULTS_MARKDOWN.value:
    results_lib.write_results_section(
        celeba_flags.RESULTS_MARKDOWN.value,
        celeba_smile_lib.RESULTS_SECTION,
        celeba_smile_lib.results_markdown(
            result, command='python -m '
            'experiments.celeba_smile.celeba_smile_main '
            + ' '.join(sys.argv[1:])))
    logging.info('Wrote %s', celeba_flags.RESULTS_MARKDOWN.value)
  for kind, path in result.comparison.files.items():
    logging.info('Wrote %s: %s', kind, path)


if __name__ == '__main__':
  cli.run(main)
