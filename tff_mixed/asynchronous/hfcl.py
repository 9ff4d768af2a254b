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
"""HFCL: the server joins the aggregation as one more, size-weighted client.

HFCL (Elbir et al., "Hybrid Federated and Centralized Learning", 2021), one
of the hybrid baselines of the guided-model-merging paper (Zhu et al.,
section 5): the server trains its own copy of the current model on its data
and takes part in the aggregation as one more participant, weighted, like
every client, by its number of examples,

    delta_S = SGD(x; D_S) - x,
    x <- x + (sum_i n_i delta_i + n_S delta_S) / (sum_i n_i + n_S).

HFCL has no notion of staleness: stale client updates are merged as they are.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import server_data
from tff_mixed.asynchronous import server_sgd
from tff_mixed.core import validation

Weights = Sequence[Any]


def hfcl_merge(weights: Weights, client_deltas: Sequence[Weights],
               client_weights: Sequence[float], server_delta: Weights,
               server_weight: float) -> list[np.ndarray]:
  """HFCL's aggregation: the server's update joins the clients' updates.

  In HFCL (Elbir et al. 2021) the server trains on the data it holds and
  the global model is the dataset-size weighted average over all
  participants, the server included. As an update to the current model:

      x <- x + (sum_i n_i delta_i + n_S delta_S) / (sum_i n_i + n_S),

  with n_i = `client_weights[i]` (the clients' example counts, for HFCL's
  size weighting) and n_S = `server_weight` (the server's number of
  examples). Arithmetic is in float64.

  Args:
    weights: The current model weights x.
    client_deltas: The clients' updates (client model - model it started
      from), each shaped like `weights`; may be empty.
    client_weights: One weight >= 0 per client update.
    server_delta: The server's update `server_sgd(x) - x`.
    server_weight: The server's weight n_S >= 0 (its dataset size).

  Returns:
    The merged weights, a new list of numpy arrays with `weights`' dtypes.

  Raises:
    TypeError: If a weights argument is not a sequence of arrays.
    ValueError: If shapes differ, the numbers of updates and weights differ,
      a weight is negative or not finite, or all weights are zero.
  """
  base = validation.as_arrays(weights, 'weights')
  if isinstance(client_deltas, (np.ndarray, tf.Tensor)) or not isinstance(
      client_deltas, Sequence):
    raise TypeError('`client_deltas` must be a sequence of updates, got '
                    f'{type(client_deltas).__name__}.')
  client_weights = list(client_weights)
  if len(client_weights) != len(client_deltas):
    raise ValueError(f'Got {len(client_deltas)} client updates but '
                     f'{len(client_weights)} client weights.')
  client_weights = [validation.check_float(f'client_weights[{i}]', w, 0.0,
                                           strict=False)
                    for i, w in enumerate(client_weights)]
  server_weight = validation.check_float('server_weight', server_weight,
                                         0.0, strict=False)
  total = sum(client_weights) + server_weight
  if total <= 0.0:
    raise ValueError('The client and server weights sum to 0; HFCL needs at '
                     'least one participant with a positive weight.')
  deltas = [validation.check_like(d, base, f'client_deltas[{i}]',
                                  '`weights`')
            for i, d in enumerate(client_deltas)]
  deltas.append(validation.check_like(server_delta, base, 'server_delta',
                                      '`weights`'))
  coefficients = [w / total for w in client_weights + [server_weight]]
  merged = []
  for j, w in enumerate(base):
    step = sum(c * d[j].astype(np.float64)
               for c, d in zip(coefficients, deltas))
    merged.append((w.astype(np.float64) + step).astype(w.dtype))
  return merged


def hfcl_round(model: Any, weights: Weights,
               client_deltas: Sequence[Weights],
               client_weights: Sequence[float], server_x: Any,
               server_y: Any, *, steps: int, batch_size: int,
               learning_rate: float, seed: int = 0,
               optimizer: str = server_sgd.SGD) -> list[np.ndarray]:
  """One HFCL server round: `server_sgd` from x, then `hfcl_merge`.

  The server's weight is its number of examples, `len(server_y)`, so pass
  the clients' example counts as `client_weights`.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    weights: The current model weights x.
    client_deltas: The updates that arrived this round (possibly none).
    client_weights: Their weights (example counts).
    server_x: Server inputs.
    server_y: Server labels.
    steps: The server's SGD steps (see `server_sgd.server_sgd`).
    batch_size: The server's batch size.
    learning_rate: The server's SGD step size.
    seed: Seeds the server's batch order.
    optimizer: The server's optimizer (`server_sgd.server_sgd`).

  Returns:
    The new weights, a new list of numpy arrays.

  Raises:
    TypeError, ValueError: As `server_sgd` and `hfcl_merge`.
  """
  trained = server_sgd.server_sgd(
      model, weights, server_x, server_y, steps=steps, batch_size=batch_size,
      learning_rate=learning_rate, seed=seed, optimizer=optimizer)
  base = server_sgd.model_weights(model, weights, 'weights')
  server_delta = [t - w for t, w in zip(trained, base)]
  _, num_examples = server_data.server_arrays(model, server_x, server_y)
  return hfcl_merge(base, client_deltas, client_weights, server_delta,
                    float(num_examples))

