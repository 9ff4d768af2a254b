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
"""Simulating a round's cohort fast: clients in groups, members in lockstep.

TFF's local runtime builds, serializes and trains one dataset per CLIENTS
member. For simulation this library can instead hand a process groups of
client ids (`ClientGroups`, the `client_groups` argument of every
builder): each group trains all its members inside one TensorFlow
computation, reading their data from their ids, and several members at once
in lockstep (one batched computation). The model, the metrics and the
numbers are those of one client per member (tests/client_groups_test.py,
tests/lockstep_test.py compare them); only the simulation is faster. A
deployment runs the per-client process.

*   `ClientGroups`: how a group reads its members' data (`dataset_fn`,
    and optionally `batches_fn` for lockstep training from tensors, and
    `fingerprint_fn` for Example Transfer's draws without a pass over the
    data); `example_hashes` and `fingerprint_of_hashes` give a
    `fingerprint_fn` from examples hashed once.
*   `clients_per_group_for`, `split_cohort`: a round's cohort as groups
    (`AUTO`: one group per core), `check_clients_per_group` the check.
*   `array_dataset_fn`: a `dataset_fn` over in-memory clients;
    `array_batches_fn`, `store_batches_fn`: a `batches_fn` for clients of
    equal shape, from arrays or an `ExampleStore`; `padded_batches_fn`:
    one for clients of unequal size, padded with rows of zeros that the
    model's loss and metrics ignore (`PaddedBatches`).
*   `build_multi_round_next`: several rounds in one TFF call (the state
    stays in TFF's worker between them); `build_fused_process`,
    `build_fused_next`: a round compiled into one TF computation per stage
    by TFF's MapReduceForm compiler. Both give the same states and metrics
    as round-by-round calls of `next` (tests/multi_round_test.py,
    tests/fused_round_test.py).

The package is a layer over the processes' components (`tff_mixed.core`),
which hold no group code: the group client work (`group_work.py`) trains
the members with the per-client client work's own steps, and the group
adapters of the per-client distributors and aggregators
(`group_distribution.py`, `group_aggregation.py`) give it what its members
need; the process composes their per-client parts
(`group_work.build_group_components`), so a round's federated wiring is the
same in both modes.

The asynchronous simulation (arrivals on a schedule) is
`tff_mixed.run_async`.
"""

from tff_mixed.core.transfer_select import example_hashes
from tff_mixed.core.transfer_select import fingerprint_of_hashes
from tff_mixed.simulation.client_groups import array_dataset_fn
from tff_mixed.simulation.client_groups import AUTO
from tff_mixed.simulation.client_groups import check_clients_per_group
from tff_mixed.simulation.client_groups import ClientGroups
from tff_mixed.simulation.client_groups import clients_per_group_for
from tff_mixed.simulation.client_groups import split_cohort
from tff_mixed.simulation.fused_round import build_fused_next
from tff_mixed.simulation.fused_round import build_fused_process
from tff_mixed.simulation.lockstep import array_batches_fn
from tff_mixed.simulation.lockstep import padded_batches_fn
from tff_mixed.simulation.lockstep import PaddedBatches
from tff_mixed.simulation.lockstep import store_batches_fn
from tff_mixed.simulation.multi_round import build_multi_round_next

__all__ = [
    'AUTO',
    'ClientGroups',
    'PaddedBatches',
    'array_batches_fn',
    'array_dataset_fn',
    'build_fused_next',
    'build_fused_process',
    'build_multi_round_next',
    'check_clients_per_group',
    'clients_per_group_for',
    'example_hashes',
    'fingerprint_of_hashes',
    'padded_batches_fn',
    'split_cohort',
    'store_batches_fn',
]
