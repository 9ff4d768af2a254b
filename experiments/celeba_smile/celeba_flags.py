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
"""Flags shared by the CelebA smile binaries (experiment and sweep driver).

Defined once: absl flags are process-global, so a second definition of the
same name in another module raises DuplicateFlagError. The flags that other
experiments' binaries take too (`--rounds`, `--seed`, ...) come from
`experiments.common.shared_flags`, with the CelebA binaries' defaults.
"""

from absl import flags

from experiments.celeba_smile import celeba_smile_lib
from experiments.common import grouping
from experiments.common import shared_flags

CACHE_DIR = shared_flags.define_cache_dir_flag(
    None, 'Here: celeba.sqlite (default: ~/.tff), built offline by '
    'experiments.celeba_smile.convert_raw_celeba_main.')
WORK_DIR = flags.DEFINE_string(
    'work_dir', None, 'Cache of the central store, label counts and eval '
    'arrays (default: <cache_dir>/tff_mixed_celeba_<label>).')
DOWNLOAD = flags.DEFINE_bool(
    'download', False, 'Let TFF download CelebA (~500 MB) if it is missing.')
LABEL = flags.DEFINE_string(
    'label', 'smiling', 'The CelebA attribute used as the label: clients '
    'keep the images that have it, the datacenter those that do not.')
ROUNDS = shared_flags.define_rounds_flag(100)
CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(100)
CLIENT_STEPS = shared_flags.define_client_steps_flag(2)
CLIENT_BATCH_SIZE = shared_flags.define_client_batch_size_flag(5)
CLIENT_LR = shared_flags.define_client_lr_flag(0.01, 'Also the central one.')
CENTRAL_BATCH_SIZE = shared_flags.define_central_batch_size_flag(
    None, "Unset: the paper's 1000 (1-way GT) / 500 (PT, 2-way GT), i.e. "
    'K*S*|B_i| and S*|B_i|.')
EXAMPLES_PER_CLIENT = shared_flags.define_examples_per_client_flag(None)
RAW_CLIENTS_PER_CLIENT = flags.DEFINE_integer(
    'raw_clients_per_client', 3, 'Celebrities per composite client.',
    lower_bound=1)
HIDDEN_UNITS = shared_flags.define_hidden_units_flag(
    celeba_smile_lib.HIDDEN_UNITS)
EVAL_EVERY = shared_flags.define_eval_every_flag(5)
TARGET_AUC = shared_flags.define_target_auc_flag(0.9)
MAX_EVAL_EXAMPLES = shared_flags.define_max_eval_examples_flag(None)
SEED = shared_flags.define_seed_flag(0)
OUTPUT_DIR = shared_flags.define_output_dir_flag('outputs/celeba_smile')
CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
ROUNDS_PER_CALL = grouping.define_rounds_per_call_flag()
RESULTS_MARKDOWN = shared_flags.define_results_markdown_flag()
# The shared bounds are the loosest any binary takes; these binaries train
# K >= 1 local steps at a learning rate >= 0.
shared_flags.require_at_least(CLIENT_STEPS, 1)
shared_flags.require_at_least(CLIENT_LR, 0.0)


def define_scenarios_flag() -> flags.FlagHolder:
  """Defines `--scenarios` (all by default): known names, without repeats.

  Only the binaries that choose scenarios call it (not the sweep driver,
  whose points fix theirs).
  """
  scenarios = shared_flags.define_scenarios_flag(celeba_smile_lib.SCENARIOS)
  shared_flags.require_choices(scenarios, celeba_smile_lib.SCENARIOS)
  return scenarios


def hidden_units() -> tuple[int, ...]:
  """--hidden_units as ints; raises ValueError naming the flag."""
  try:
    units = tuple(int(u) for u in HIDDEN_UNITS.value)
  except ValueError:
    raise ValueError('--hidden_units must be comma-separated positive ints, '
                     f'got {",".join(HIDDEN_UNITS.value)!r}.') from None
  if not units or min(units) < 1:
    raise ValueError('--hidden_units must be comma-separated positive ints, '
                     f'got {",".join(HIDDEN_UNITS.value)!r}.')
  return units


def experiment_kwargs() -> dict:
  """`run_experiment` keyword arguments from the shared flags."""
  if CLIENT_LR.value <= 0:
    raise ValueError(f'--client_lr must be positive, got {CLIENT_LR.value}.')
  if not OUTPUT_DIR.value:
    raise ValueError('--output_dir must not be empty.')
  return dict(
      cache_dir=CACHE_DIR.value, work_dir=WORK_DIR.value,
      download=DOWNLOAD.value, label=LABEL.value, rounds=ROUNDS.value,
      clients_per_round=CLIENTS_PER_ROUND.value,
      client_steps=CLIENT_STEPS.value,
      client_batch_size=CLIENT_BATCH_SIZE.value, client_lr=CLIENT_LR.value,
      central_batch_size=CENTRAL_BATCH_SIZE.value,
      examples_per_client=EXAMPLES_PER_CLIENT.value,
      raw_clients_per_client=RAW_CLIENTS_PER_CLIENT.value,
      hidden_units=hidden_units(), eval_every=EVAL_EVERY.value,
      target_auc=TARGET_AUC.value,
      max_eval_examples=MAX_EVAL_EXAMPLES.value, seed=SEED.value,
      output_dir=OUTPUT_DIR.value,
      clients_per_group=CLIENTS_PER_GROUP.value,
      rounds_per_call=ROUNDS_PER_CALL.value)
