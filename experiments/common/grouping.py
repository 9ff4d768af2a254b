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
"""How every binary simulates its rounds: the flags that change speed only.

By default the binaries run the fast simulation mode
(`tff_mixed.simulation`): a round's cohort is split into one group
of clients per core, each group trained in one TensorFlow computation, with
the same results as one client per CLIENTS member. `--clients_per_group=1`
gives that per-client path; any other value sets the group size.
`--members_at_once` trains a group's members in lockstep, and
`--rounds_per_call` runs several rounds in one TFF call between
evaluations and checkpoints; neither changes a number.
"""

from typing import Any, Optional

from absl import flags
import numpy as np

from tff_mixed import simulation

AUTO = simulation.AUTO


def define_clients_per_group_flag() -> flags.FlagHolder:
  """Defines `--clients_per_group` (0: one group per core)."""
  return flags.DEFINE_integer(
      'clients_per_group', AUTO,
      'Clients simulated in one CLIENTS member (one TF computation) per '
      'round: 0 (default) splits the cohort into one group per core, 1 runs '
      'one client per member (the per-client path; same results, slower).',
      lower_bound=0)


def define_members_at_once_flag() -> flags.FlagHolder:
  """Defines `--members_at_once` (0: a whole group at once)."""
  return flags.DEFINE_integer(
      'members_at_once', 0,
      'With groups of clients, how many of a group\'s members train at once '
      'in lockstep (one batched computation, '
      '`tff_mixed.simulation.lockstep`): 0 (default) the whole group; fewer '
      'take less memory. Same results.',
      lower_bound=0)


def define_rounds_per_call_flag(detail: str = '') -> flags.FlagHolder:
  """Defines `--rounds_per_call` (1: one round a TFF call); `detail`, a
  sentence of the binary's own after the shared help."""
  return flags.DEFINE_integer(
      'rounds_per_call', 1,
      ' '.join(filter(None, (
          'Rounds run in one TFF call, the state staying in TFF\'s worker '
          'between them (`tff_mixed.run_training`); a call ends at every '
          'evaluation and checkpoint. Same results, faster where a round '
          'is short. A run resumes with any value.', detail))),
      lower_bound=1)


def padded_groups(dataset_fn: Any, id_dtype: Any, *, num_batches: int,
                  batch_size: int,
                  members_at_once: int) -> simulation.ClientGroups:
  """`ClientGroups` whose members of unequal size train in lockstep.

  Each member's `num_batches` batches of `dataset_fn(id)`, padded to
  `batch_size` rows (`simulation.padded_batches_fn`), for a model whose loss
  and metrics ignore rows of zeros (the character LM's padding).
  """
  return simulation.ClientGroups(
      dataset_fn, id_dtype,
      batches_fn=simulation.padded_batches_fn(dataset_fn, num_batches,
                                              batch_size),
      members_at_once=members_at_once)


def check(clients_per_group: Any) -> int:
  """`clients_per_group` if an int >= 0, else a ValueError naming it."""
  return simulation.check_clients_per_group(clients_per_group)


def is_grouped(clients_per_group: int, cohort_size: int) -> bool:
  """Whether the cohort runs in groups (not one client per member)."""
  return simulation.clients_per_group_for(clients_per_group,
                                          cohort_size) > 1


def group_ids(client_ids: Any, clients_per_group: int,
              dtype: Optional[Any] = np.int32) -> list[np.ndarray]:
  """A round's client ids as `split_cohort` groups of `dtype` ids."""
  groups = simulation.split_cohort(
      client_ids,
      simulation.clients_per_group_for(clients_per_group, len(client_ids)))
  return [np.asarray(g, dtype) for g in groups]
