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
"""The compute floor of a character LM round, per scenario.

The floor of `benchmarks/compute_floor.py` for stackoverflow_wikipedia_main
(Augenstein et al., arXiv:2205.13655, section 4.2): FL-only's and the mixed
algorithms' round on the binary's character GRU (`lm_runs.model_for`) as
one plain `tf.function`, the clients' K SGD steps on their batches and the
central part on batches of the central corpus, with no TFF runtime, no
metrics, and no reading or sampling of data. It leaves out what the
binary adds around the arithmetic: adaptive clipping of the client updates
and the clipping of central gradients (a norm per update or step); with
both off, tests/lm_floor_test.py checks that floor rounds give the
processes' weights.
"""

from collections.abc import Sequence

import numpy as np

from benchmarks import compute_floor
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import lm_runs
import tff_mixed
from tff_mixed.algorithms import registry

# The scenarios with a TFF process and the registry algorithm each runs.
ALGORITHMS = {
    lm_config.FL_ONLY: registry.FEDAVG,
    lm_config.PARALLEL_TRAINING: registry.PARALLEL_TRAINING,
    lm_config.ONE_WAY_GT: registry.ONE_WAY_GT,
    lm_config.TWO_WAY_GT: registry.TWO_WAY_GT,
}


def _part(scenario: str, config: lm_config.Config) -> compute_floor.CentralPart:
  if scenario not in ALGORITHMS:
    raise ValueError(f'No LM floor for {scenario!r}; there are floors for '
                     f'{list(ALGORITHMS)}.')
  return compute_floor.central_part(
      ALGORITHMS[scenario], federated_weight=config.federated_weight,
      central_weight=config.central_weight)


def floor_parts(scenario: str, config: lm_config.Config):
  """`(model, eta, part)`: `compute_floor.build_algorithm_floor`'s
  arguments for `scenario` (eta: 2-way GT's own).

  Raises:
    ValueError: For a scenario without a TFF process (the oracle and the
      transfer baselines step in Python).
  """
  part = _part(scenario, config)
  learning_rate = (config.two_way_client_lr
                   if scenario == lm_config.TWO_WAY_GT else config.client_lr)
  return lm_runs.model_for(config), learning_rate, part


def build_floor_runner(scenario: str, config: lm_config.Config
                       ) -> compute_floor.FloorRunner:
  """A `FloorRunner` of `scenario`'s rounds (see `floor_parts`), every
  client's step taken at once as the binary's lockstep groups take them:
  one client after another, the GRU's small operations on batches of 8
  cost several times the round in lockstep."""
  return compute_floor.FloorRunner(*floor_parts(scenario, config),
                                   clients_at_once=True)


def central_inputs(scenario: str, data: lm_data.Data,
                   config: lm_config.Config, round_num: int = 0):
  """The central batches `scenario`'s process draws in its round
  `round_num` (0: the first; `compute_floor.central_batches`), or None
  where it reads none."""
  part = _part(scenario, config)
  count = part.num_central_batches(config.client_steps)
  if not count:
    return None
  batch_size = getattr(lm_runs.central_batch_sizes(data, config), scenario)
  objective = tff_mixed.central_data_objective(
      (data.central.inputs, data.central.targets), name='central_corpus')
  return compute_floor.central_batches(objective, batch_size, config.seed,
                                       round_num, count)


def client_batches(data: lm_data.Data, config: lm_config.Config,
                   client_ids: Sequence[str]):
  """Each client's K batches of the round, as FL-only's datasets give them.

  `client_ids` are the binary's `'<round>|<client>'` names. A batch shorter
  than |B_i| is filled up with its own rows, so that the clients stack into
  arrays: the floor then computes at most a few rows more than the
  processes do.

  Returns:
    `(x, y)`: int32[clients, K, B, sequence_length] inputs and targets, as
    `build_floor_runner`'s rounds take them.
  """
  dataset_fn = lm_runs.dataset_fn(lm_config.FL_ONLY, data, config)
  size = config.client_batch_size
  xs, ys = [], []
  for client_id in client_ids:
    steps = [(np.resize(x, (size, x.shape[1])), np.resize(y, (size,
                                                                y.shape[1])))
             for x, y in dataset_fn(client_id).as_numpy_iterator()]
    xs.append(np.stack([x for x, _ in steps]))
    ys.append(np.stack([y for _, y in steps]))
  return np.stack(xs).astype(np.int32), np.stack(ys).astype(np.int32)
