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
same name in another module raises DuplicateFlagError.
"""

from absl import flags

from experiments.celeba_smile import celeba_smile_lib
from experiments.common import cli
from experiments.common import grouping

CACHE_DIR = flags.DEFINE_string(
    'cache_dir', None, "Directory of TFF's celeba.sqlite (default: ~/.tff). "
    'Build it offline with experiments.celeba_smile.convert_raw_celeba_main.')
WORK_DIR = flags.DEFINE_string(
    'work_dir', None, 'Cache of the central store, label counts and eval '
    'arrays (default: <cache_dir>/tff_mixed_celeba_<label>).')
DOWNLOAD = flags.DEFINE_bool(
    'download', False, 'Let TFF download CelebA (~500 MB) if it is missing.')
LABEL = flags.DEFINE_string(
    'label', 'smiling', 'The CelebA attribute used as the label: clients '
    'keep the images that have it, the datacenter those that do not.')
ROUNDS = flags.DEFINE_integer('rounds', 100, 'Training rounds per scenario.',
                              lower_bound=1)
CLIENTS_PER_ROUND = flags.DEFINE_integer(
    'clients_per_round', 100, 'S, clients per round.', lower_bound=1)
CLIENT_STEPS = flags.DEFINE_integer(
    'client_steps', 2, 'K, local SGD steps per client per round.',
    lower_bound=1)
CLIENT_BATCH_SIZE = flags.DEFINE_integer(
    'client_batch_size', 5, '|B_i|, client batch size.', lower_bound=1)
CLIENT_LR = flags.DEFINE_float(
    'client_lr', 0.01, 'eta, client (and central) learning rate.',
    lower_bound=0.0)
CENTRAL_BATCH_SIZE = flags.DEFINE_integer(
    'central_batch_size', None, '|B_c| for every mixed algorithm; unset: the '
    "paper's 1000 (1-way GT) / 500 (PT, 2-way GT), i.e. K*S*|B_i| and "
    'S*|B_i|.', lower_bound=1)
EXAMPLES_PER_CLIENT = flags.DEFINE_integer(
    'examples_per_client', None, 'Example Transfer: central examples per '
    'client per round; unset: the mean federated client size.',
    lower_bound=1)
RAW_CLIENTS_PER_CLIENT = flags.DEFINE_integer(
    'raw_clients_per_client', 3, 'Celebrities per composite client.',
    lower_bound=1)
HIDDEN_UNITS = flags.DEFINE_list(
    'hidden_units', [str(u) for u in celeba_smile_lib.HIDDEN_UNITS],
    'Hidden layer widths of the classifier.')
EVAL_EVERY = flags.DEFINE_integer(
    'eval_every', 5, 'Evaluate every this many rounds (and at the end).',
    lower_bound=1)
TARGET_AUC = flags.DEFINE_float(
    'target_auc', 0.9, 'Eval AUC whose first crossing the table reports.',
    lower_bound=0.0, upper_bound=1.0)
MAX_EVAL_EXAMPLES = flags.DEFINE_integer(
    'max_eval_examples', None, 'Evaluate on a seeded sample of this many '
    'evaluation images (faster); unset: all.', lower_bound=1)
SEED = flags.DEFINE_integer('seed', 0, 'Seed of grouping, initialization and '
                            'sampling.', lower_bound=0,
                            upper_bound=cli.MAX_SEED)
OUTPUT_DIR = flags.DEFINE_string(
    'output_dir', 'outputs/celeba_smile', 'Directory for the outputs.')
CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
RESULTS_MARKDOWN = flags.DEFINE_string(
    'results_markdown', '', 'If set, also write this run\'s section of a '
    'Markdown report (table, data, machine, date), e.g. RESULTS.md.')


def define_scenarios_flag() -> flags.FlagHolder:
  """Defines `--scenarios` (all by default): known names, without repeats.

  Only the binaries that choose scenarios call it (not the sweep driver,
  whose points fix theirs).
  """
  scenarios = flags.DEFINE_list(
      'scenarios', list(celeba_smile_lib.SCENARIOS),
      f'Comma-separated scenarios, from {list(celeba_smile_lib.SCENARIOS)}.')
  flags.register_validator(
      'scenarios',
      lambda names: (bool(names)
                     and set(names) <= set(celeba_smile_lib.SCENARIOS)
                     and len(set(names)) == len(names)),
      message='--scenarios must name one or more of '
      f'{list(celeba_smile_lib.SCENARIOS)}, without repeats.')
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
      clients_per_group=CLIENTS_PER_GROUP.value)
