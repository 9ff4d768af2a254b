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
"""Flags shared by the label-imbalance binaries, defined once.

absl flags are process-global, so both binaries (and a test process importing
both) must share one definition of each common flag.
"""

import math

from absl import flags

from experiments.common import cli
from experiments.common import grouping

CLIENTS_PER_ROUND = flags.DEFINE_integer(
    'clients_per_round', 10, 'S: clients sampled per round (the same clients '
    'in every scenario).', lower_bound=1)
CLIENT_STEPS = flags.DEFINE_integer(
    'client_steps', 10, 'K: local SGD steps per client per round.',
    lower_bound=1)
CLIENT_BATCH_SIZE = flags.DEFINE_integer(
    'client_batch_size', 8, '|B_i|: client batch size.', lower_bound=1)
CLIENT_LR = flags.DEFINE_float(
    'client_lr', 0.25, 'eta: client (and central) SGD learning rate; must be '
    'positive.', lower_bound=0.0)
NUM_CLIENTS = flags.DEFINE_integer(
    'num_clients', 60, 'Number of federated clients.', lower_bound=1)
SEED = flags.DEFINE_integer(
    'seed', 0, 'The one seed: data split, model initialization, client and '
    'central sampling.', lower_bound=0, upper_bound=cli.MAX_SEED)
CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()


def values() -> dict:
  """The common flags' values, as the label-imbalance functions name them."""
  return dict(clients_per_round=CLIENTS_PER_ROUND.value,
              client_steps=CLIENT_STEPS.value,
              client_batch_size=CLIENT_BATCH_SIZE.value,
              client_lr=CLIENT_LR.value, num_clients=NUM_CLIENTS.value,
              seed=SEED.value, clients_per_group=CLIENTS_PER_GROUP.value)



def _check_client_lr(value: float) -> bool:
  if not math.isfinite(value):
    raise flags.ValidationError(f'--client_lr must be finite, got {value}.')
  if value <= 0:
    raise flags.ValidationError(f'--client_lr must be positive, got {value}.')
  return True


flags.register_validator('client_lr', _check_client_lr)
flags.register_multi_flags_validator(
    ['clients_per_round', 'num_clients'],
    lambda v: v['clients_per_round'] <= v['num_clients'],
    message='--clients_per_round must be at most --num_clients.')
