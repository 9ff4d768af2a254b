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
"""Trains one scenario of the digits label-imbalance task, resumably.

    python -m experiments.label_imbalance.train_main \
        --experiment_name=two_way --scenario=two_way_gt --total_rounds=40

Kill it at any time and run the same command again: it resumes from the last
checkpoint and ends with the same weights and metrics as an uninterrupted run.
Outputs go to <root_output_dir>/{checkpoints,results,logdir}/<experiment_name>.
"""

from collections.abc import Sequence

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
from absl import logging

from experiments.common import scenarios as scenarios_lib
from experiments.label_imbalance import common_flags
from experiments.label_imbalance import train_lib

# Run and output flags.
_EXPERIMENT_NAME = flags.DEFINE_string(
    'experiment_name', None, 'Name of the run (its output subdirectory).')
_ROOT_OUTPUT_DIR = flags.DEFINE_string(
    'root_output_dir', 'outputs/runs', 'Root of checkpoints/, results/ and '
    'logdir/.')
_ROUNDS_PER_CHECKPOINT = flags.DEFINE_integer(
    'rounds_per_checkpoint', 1, 'Save a checkpoint every this many rounds.',
    lower_bound=1)
_ROUNDS_PER_EVALUATION = flags.DEFINE_integer(
    'rounds_per_evaluation', 5, 'Evaluate every this many rounds.',
    lower_bound=1)

# Training flags.
_SCENARIO = flags.DEFINE_enum(
    'scenario', scenarios_lib.TWO_WAY_GT,
    list(scenarios_lib.SCENARIOS), 'Algorithm / scenario to train.')
_TOTAL_ROUNDS = flags.DEFINE_integer('total_rounds', 40, 'Rounds to reach.',
                                     lower_bound=1)

# Differential privacy of the federated part (DP-FedAvg aggregation).
_DP_NOISE_MULTIPLIER = flags.DEFINE_float(
    'dp_noise_multiplier', 0.0, 'Noise multiplier of DP aggregation of client '
    'updates; 0 turns DP off.', lower_bound=0.0)
_DP_CLIP_NORM = flags.DEFINE_float(
    'dp_clip_norm', 0.0, 'Fixed L2 clip of client updates under DP; 0 uses '
    'adaptive clipping.', lower_bound=0.0)

# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()

flags.register_multi_flags_validator(
    ['dp_noise_multiplier', 'dp_clip_norm'],
    lambda v: v['dp_clip_norm'] == 0 or v['dp_noise_multiplier'] > 0,
    message='--dp_clip_norm needs --dp_noise_multiplier > 0.')


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  result = train_lib.train(
      scenario=_SCENARIO.value,
      root_output_dir=_ROOT_OUTPUT_DIR.value,
      experiment_name=_EXPERIMENT_NAME.value,
      total_rounds=_TOTAL_ROUNDS.value,
      rounds_per_checkpoint=_ROUNDS_PER_CHECKPOINT.value,
      rounds_per_evaluation=_ROUNDS_PER_EVALUATION.value,
      dp_noise_multiplier=_DP_NOISE_MULTIPLIER.value,
      dp_clip_norm=_DP_CLIP_NORM.value,
      rounds_per_call=common_flags.ROUNDS_PER_CALL.value,
      **common_flags.values(),
  )
  last = result.history[-1] if result.history else {}
  logging.info('Done: %s (resumed after round %d). Final eval: %s',
               result.metrics_path, result.resumed_from,
               {k: v for k, v in last.items() if k.startswith('eval/')})


if __name__ == '__main__':
  flags.mark_flag_as_required('experiment_name')
  cli.run(main)
