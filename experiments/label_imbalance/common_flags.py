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
both) must share one definition of each common flag. Those that other
experiments' binaries take too come from `experiments.common.shared_flags`,
with the label-imbalance defaults.
"""

import math

from absl import flags

from experiments.common import grouping
from experiments.common import shared_flags

CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(
    10, 'The same clients in every scenario.')
CLIENT_STEPS = shared_flags.define_client_steps_flag(10)
CLIENT_BATCH_SIZE = shared_flags.define_client_batch_size_flag(8)
CLIENT_LR = shared_flags.define_client_lr_flag(
    0.25, 'Also the central one; must be positive.')
NUM_CLIENTS = shared_flags.define_num_clients_flag(60)
SEED = shared_flags.define_seed_flag(0)
CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
ROUNDS_PER_CALL = grouping.define_rounds_per_call_flag()


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


# The shared bounds are the loosest any binary takes; these binaries train
# K >= 1 local steps at a learning rate > 0.
shared_flags.require_at_least(CLIENT_STEPS, 1)
flags.register_validator('client_lr', _check_client_lr)
flags.register_multi_flags_validator(
    ['clients_per_round', 'num_clients'],
    lambda v: v['clients_per_round'] <= v['num_clients'],
    message='--clients_per_round must be at most --num_clients.')
