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
"""A mixed FL algorithm written in one file from tff_mixed's public parts.

Parallel Training (Augenstein et al., arXiv:2205.13655, Algorithm 1, green
steps), composed from the public components of `tff_mixed.components` with
no change to the library; `tests/custom_algorithm_test.py` checks that it
equals `tff_mixed.build_parallel_training`. Each round t, from x^(t):

1. distributor: broadcast x^(t) to the clients;
2. client work: K steps of CLIENTOPTIMIZER on each client's own loss;
3. aggregator: the weighted mean client update;
4. central work: K_c steps of CENTRALOPTIMIZER on f_c from x^(t), giving x_c;
5. finalizer: SERVEROPTIMIZER on the mean update gives x_f, and
   `x^(t+1) = MERGEOPTIMIZER(x^(t), -(w_f (x_f - x^(t)) + w_c (x_c - x^(t))))`.

Another algorithm is another choice. 1-way Gradient Transfer, for one, is
`sends_central_gradient=True`, `step_gradient=components.MixedGradient(w_f,
w_c)`, central work with `augmenting_gradient=components.GradientAtModel()`
and no steps, and a finalizer without a merge; a rule of one's own (a new
client step, say) is any object with the rule's call signature
(docs/COMPOSING.md).

Usage:

  process = build_my_parallel_training(
      model, tff_mixed.central_data_objective((x_c, y_c)),
      client_optimizer, central_optimizer, central_batch_size=32,
      client_steps=5)
  state = process.initialize()
  state, metrics = process.next(state, client_datasets)
"""

from typing import Optional

import tensorflow_federated as tff

from tff_mixed import CentralObjective
from tff_mixed import components
from tff_mixed import compose_mixed_process


def build_my_parallel_training(
    model: tff.learning.models.FunctionalModel,
    central_objective: CentralObjective,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    central_batch_size: int,
    client_steps: int,
    central_steps: Optional[int] = None,
    federated_weight: float = 0.5,
    central_weight: float = 0.5,
    seed: int = 0,
) -> tff.learning.templates.LearningProcess:
  """Parallel Training as a composition of public components.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    central_objective: f_c (`tff_mixed.central_data_objective`).
    client_optimizer: CLIENTOPTIMIZER.
    central_optimizer: CENTRALOPTIMIZER.
    server_optimizer: SERVEROPTIMIZER; `None` means SGD with rate 1.
    merge_optimizer: MERGEOPTIMIZER; `None` means SGD with rate 1.
    central_batch_size: Central examples per central step.
    client_steps: K, local steps per client.
    central_steps: K_c; `None` means K.
    federated_weight: w_f.
    central_weight: w_c.
    seed: Seeds the sampling of central batches.

  Returns:
    A `tff.learning.templates.LearningProcess` with `next: (<MixedFLState@
    SERVER, {B*}@CLIENTS> -> <state=MixedFLState@SERVER, metrics@SERVER>)`.
  """
  weights = dict(federated_weight=federated_weight,
                 central_weight=central_weight)
  # 1. x^(t) to every client; nothing else is sent.
  distributor = components.build_broadcast_distributor(model)
  # 2. Plain FedAvg local training: the default rules.
  client_work = components.build_client_work(
      model, distributor, client_optimizer, client_steps=client_steps)
  # 3. The weighted mean of the updates (tff.aggregators.MeanFactory).
  aggregator = components.build_mean_aggregator(model)
  # 4. K_c central steps on f_c's own gradient; the clients get no g~_c.
  central_work = components.build_central_work(
      model, central_objective, central_optimizer,
      central_steps=client_steps if central_steps is None else central_steps,
      central_batch_size=central_batch_size, seed=seed,
      step_rule=components.PlainCentralSteps(), augmenting_gradient=None,
      **weights)
  # 5. SERVEROPTIMIZER, then the merge of x_f and x_c.
  finalizer = components.build_finalizer(
      model, central_work, server_optimizer, merge_optimizer, **weights)
  return compose_mixed_process(model, components.Components(
      distributor=distributor, client_work=client_work,
      aggregator=aggregator, central_work=central_work, finalizer=finalizer))
