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
"""The LM experiment's scenarios and hyperparameters.

The mixed FL paper's section 4.2 and appendix B.4.5 (arXiv:2205.13655):
federated Stack Overflow mixed with a central corpus (Wikipedia).

Scenarios:

*   `fl_only`: FedAvg on the clients (K local steps).
*   `parallel_training`, `one_way_gt`, `two_way_gt`: the mixed algorithms,
    with w_f, w_c weighting the two losses.
*   `oracle`: figure 1b's oracle, both corpora pooled and trained
    centrally: K clipped SGD steps per round, each on S |B_i| sequences
    drawn w_f : w_c from Stack Overflow and the central corpus
    (`central_training`).
*   `central_then_fl`: central SGD on the central corpus (K steps of a
    central batch per round) until `switch_round`, then FedAvg.
*   `fl_then_central`: FedAvg until `switch_round`, then central SGD.

Defaults are the paper's tables 7-8 (S = 100, batch 8, K = 16, eta = 2.0
(2-way GT: 1.0), central batch 800 (PT, 2-way GT) or 6400 (1-way GT),
w_f = 0.75, w_c = 0.25, central clip 0.2, embedding 256, GRU 1024); smaller
flags train on a CPU. Every scenario is evaluated on the mixed,
federated-only and central-only evaluation sets (`EVAL_SETS`).
"""

from typing import NamedTuple, Optional

from experiments.common import grouping
from experiments.common import scenarios as scenarios_lib
from tff_mixed.tasks import char_sequences

FL_ONLY = scenarios_lib.FL_ONLY
PARALLEL_TRAINING = scenarios_lib.PARALLEL_TRAINING
ONE_WAY_GT = scenarios_lib.ONE_WAY_GT
TWO_WAY_GT = scenarios_lib.TWO_WAY_GT
CENTRAL_THEN_FL = 'central_then_fl'
FL_THEN_CENTRAL = 'fl_then_central'
ORACLE = scenarios_lib.ORACLE
MIXED = (PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT)
TRANSFER = (CENTRAL_THEN_FL, FL_THEN_CENTRAL)
# Trained round by round (`lm_runs.run_sequential`) rather than by one TFF
# process.
SEQUENTIAL = (ORACLE, *TRANSFER)
SCENARIOS = (FL_ONLY, *MIXED, ORACLE, *TRANSFER)
EVAL_SETS = ('mixed', 'federated', 'central')
# The metrics CSV's columns; a run reads its evaluations back by them.
CSV_COLUMNS = ('scenario', 'round', *(f'{s}_{m}' for s in EVAL_SETS
                                      for m in ('accuracy', 'loss')),
               'seconds')


class Config(NamedTuple):
  """Hyperparameters (defaults: the paper's tables 7-8)."""

  rounds: int = 500
  clients_per_round: int = 100
  client_batch_size: int = 8
  client_steps: int = 16
  client_lr: float = 2.0
  two_way_client_lr: float = 1.0
  central_batch_size: int = 800
  one_way_central_batch_size: int = 6400
  federated_weight: float = 0.75
  central_weight: float = 0.25
  central_clip_norm: float = 0.2
  adaptive_clipping: bool = True
  embedding_dim: int = 256
  gru_units: int = 1024
  sequence_length: int = char_sequences.DEFAULT_SEQUENCE_LENGTH
  switch_round: Optional[int] = None  # Transfer: rounds // 2 by default.
  eval_every: int = 10
  seed: int = 0
  # Clients per CLIENTS member (`experiments.common.grouping`): 0 = one
  # group per core, 1 = the per-client path; the same results either way.
  clients_per_group: int = grouping.AUTO
  # A group's members training at once in lockstep, from their batches
  # padded to one shape (0: the whole group); the same results.
  members_at_once: int = 0
  # The mixed algorithms also report G~_t^2 and B~_t^2 (table 4).
  with_diagnostics: bool = False

  def switch(self) -> int:
    return self.switch_round if self.switch_round else max(1,
                                                           self.rounds // 2)
