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
r"""Runs the digits label-imbalance comparison of mixed FL algorithms.

Federated clients hold only positive digits (0-4), the datacenter only
negative ones (5-9); see `experiments.common.scenarios` for the scenarios.
Uses scikit-learn's bundled digits, so nothing is downloaded.

Full run (about two minutes on a 2-core laptop, TFF tracing included):

  python -m experiments.label_imbalance.label_imbalance_main

Smoke run (under a minute):

  python -m experiments.label_imbalance.label_imbalance_main --quick

Writes `metrics.csv`, `auc_accuracy.png`, `results.txt` and `config.json` to
`--output_dir` and prints the results table.
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

from experiments.common import advising
from experiments.common import scenarios as scenarios_lib
from experiments.common import shared_flags
from experiments.label_imbalance import common_flags
from experiments.label_imbalance import label_imbalance_lib

# `--quick` replaces these defaults, unless the flag is given explicitly.
_QUICK_OVERRIDES = {
    'rounds': 6,
    'eval_every': 2,
    'output_dir': 'outputs/label_imbalance_quick',
}

_ROUNDS = shared_flags.define_rounds_flag(40)
_CENTRAL_BATCH_SIZE = shared_flags.define_central_batch_size_flag(
    None, "Unset: the paper's rule, S*|B_i| (PT, 2-way GT) and K*S*|B_i| "
    '(1-way GT), capped at the central data size.')
_EXAMPLES_PER_CLIENT = shared_flags.define_examples_per_client_flag(None)
_EVAL_EVERY = shared_flags.define_eval_every_flag(2)
_TARGET_AUC = shared_flags.define_target_auc_flag(0.95)
_SCENARIOS = shared_flags.define_scenarios_flag(scenarios_lib.SCENARIOS)
_OUTPUT_DIR = shared_flags.define_output_dir_flag('outputs/label_imbalance')
_RESULTS_MARKDOWN = shared_flags.define_results_markdown_flag()
_ADVISE = advising.define_advise_flags()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
_QUICK = flags.DEFINE_bool(
    'quick', False, 'Smoke run: '
    + ', '.join(f'--{k}={v}' for k, v in _QUICK_OVERRIDES.items())
    + ' unless given explicitly.')

shared_flags.require_choices(_SCENARIOS, scenarios_lib.SCENARIOS)


def _flag_value(holder: flags.FlagHolder):
  """The flag's value, or the `--quick` default if `--quick` and not given."""
  if (_QUICK.value and holder.name in _QUICK_OVERRIDES
      and not flags.FLAGS[holder.name].present):
    return _QUICK_OVERRIDES[holder.name]
  return holder.value


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  if common_flags.CLIENT_LR.value <= 0:
    raise app.UsageError(f'--client_lr must be positive, got '
                         f'{common_flags.CLIENT_LR.value}.')
  if _TARGET_AUC.value <= 0:
    raise app.UsageError(f'--target_auc must be in (0, 1], got '
                         f'{_TARGET_AUC.value}.')
  if not _OUTPUT_DIR.value:
    raise app.UsageError('--output_dir must not be empty.')
  if _ADVISE.rounds.value:
    advice, files = label_imbalance_lib.run_advice(
        rounds=_ADVISE.rounds.value,
        central_batch_size=_CENTRAL_BATCH_SIZE.value,
        output_dir=_flag_value(_OUTPUT_DIR), **common_flags.values())
    if not advising.report(advice, files, _ADVISE.then.value):
      return
  result = label_imbalance_lib.run_comparison(
      scenarios=_SCENARIOS.value,
      rounds=_flag_value(_ROUNDS),
      central_batch_size=_CENTRAL_BATCH_SIZE.value,
      examples_per_client=_EXAMPLES_PER_CLIENT.value,
      eval_every=_flag_value(_EVAL_EVERY),
      target_auc=_TARGET_AUC.value,
      output_dir=_flag_value(_OUTPUT_DIR),
      rounds_per_call=common_flags.ROUNDS_PER_CALL.value,
      **common_flags.values(),
  )
  print(result.table, end='', flush=True)
  if _RESULTS_MARKDOWN.value:
    label_imbalance_lib.write_results_markdown(
        _RESULTS_MARKDOWN.value, result,
        command='python -m experiments.label_imbalance.label_imbalance_main '
        + ' '.join(sys.argv[1:]))
    logging.info('Wrote %s', _RESULTS_MARKDOWN.value)
  for kind, path in result.files.items():
    logging.info('Wrote %s: %s', kind, path)


if __name__ == '__main__':
  cli.run(main)
