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
"""The compute floor of a MovieLens dual encoder round, per scenario.

The floor of `benchmarks/compute_floor.py` for the movie task of
movielens_main (Augenstein et al., arXiv:2205.13655, section 4.3): the
round's arithmetic as one plain `tf.function`, with no TFF runtime, no
metrics, and no reading, sampling or selection of data.

*   The baseline: FedAvg of the whole-table model whose loss is `w_f`
    client loss + `w_c` spreadout (`movielens_process.client_model`), K SGD
    steps on every client.
*   Parallel Training, 1-way and 2-way GT: the clients' K steps on the
    client loss, and the server's part with f_c = the spreadout of the
    table (a data-free f_c: `central_loss_fn`), K_c = K central steps, as
    `movielens_process.build_process` builds them.

The clients train the whole table, as the broadcast processes do
(`build_process(select=False)`; tests/movielens_floor_test.py checks that
floor rounds give their weights). A federated_select client trains only
its rows of the table: its step's dense update is smaller, so for the
select processes this floor is an upper bound of theirs.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks import compute_floor
from experiments.movielens import movielens_config as config_lib
from experiments.movielens import movielens_process
from tff_mixed.algorithms import registry
from tff_mixed.models import dual_encoder

# The paper's four scenarios and the registry algorithm each one runs.
ALGORITHMS = {
    config_lib.BASELINE: registry.FEDAVG,
    config_lib.PARALLEL_TRAINING: registry.PARALLEL_TRAINING,
    config_lib.ONE_WAY_GT: registry.ONE_WAY_GT,
    config_lib.TWO_WAY_GT: registry.TWO_WAY_GT,
}


def build_floor_runner(scenario: str, num_rows: int,
                       config: config_lib.Config
                       ) -> compute_floor.FloorRunner:
  """A `FloorRunner` of `scenario`'s rounds on a table of `num_rows` rows.

  Raises:
    ValueError: For a scenario without a floor here.
  """
  if scenario not in ALGORITHMS:
    raise ValueError(f'No MovieLens floor for {scenario!r}; there are '
                     f'floors for {list(ALGORITHMS)}.')
  learning_rate = config_lib.client_lr_of(config, scenario)
  if scenario == config_lib.BASELINE:
    return compute_floor.FloorRunner(
        dual_encoder.build_dual_encoder(
            num_rows, hinge_weight=config.federated_weight,
            spreadout_weight=config.central_weight,
            **config_lib.model_kwargs(config)), learning_rate)
  part = compute_floor.central_part(
      ALGORITHMS[scenario], federated_weight=config.federated_weight,
      central_weight=config.central_weight)
  spreadout = dual_encoder.build_spreadout_loss_fn(config.spreadout_form,
                                                   config.spreadout_lambda)
  return compute_floor.FloorRunner(
      dual_encoder.build_dual_encoder(num_rows,
                                      **config_lib.model_kwargs(config)),
      learning_rate, part,
      central_loss_fn=lambda trainable, x, y: spreadout((trainable, ()), x))


def central_inputs(scenario: str, config: config_lib.Config
                   ) -> Any:
  """`FloorRunner.set_clients`' `central`: the spreadout reads no data, so
  its batches only count the central steps (None: no central part)."""
  count = compute_floor.central_part(
      ALGORITHMS[scenario]).num_central_batches(config.client_steps)
  if not count:
    return None
  return np.zeros([count], np.float32), np.zeros([count], np.float32)


def client_batches(data, config: config_lib.Config,
                   client_ids: Sequence[str]):
  """Each client's K batches of the round, as the processes read them.

  `client_ids` are the binary's `'<round>|<user>'` names; each client's
  batches are those of `movielens_process.client_dataset_fn`. A batch
  shorter than |B_i| (a client's data running out before it cycles) is
  filled up with its own rows, so that the clients stack into arrays: the
  floor then computes at most a few rows more than the processes do.

  Returns:
    `(x, y)`: `x = (context int32[clients, K, B, N], label int32[clients,
    K, B])`, `y = label`, as `build_floor_runner`'s rounds take them.
  """
  dataset_fn = movielens_process.client_dataset_fn(data, config,
                                                   fedavg=True)
  size = config.client_batch_size
  contexts, labels = [], []
  for client_id in client_ids:
    steps = [(np.resize(context, (size, context.shape[1])),
              np.resize(label, (size,)))
             for (context, label), _ in dataset_fn(client_id).as_numpy_iterator()]
    contexts.append(np.stack([c for c, _ in steps]))
    labels.append(np.stack([lab for _, lab in steps]))
  label = np.stack(labels).astype(np.int32)
  return (np.stack(contexts).astype(np.int32), label), label
