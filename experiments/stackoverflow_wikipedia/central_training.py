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
"""Centralized training rounds of the LM baselines (pure TF and numpy).

Two baselines of arXiv:2205.13655 train at the datacenter with no clients:

*   the oracle of figure 1b: both corpora pooled and trained centrally. A
    round is K SGD steps, each on a batch of S |B_i| sequences (the examples
    a FedAvg round's clients would take per local step) drawn
    w_f : w_c from the federated and the central corpus, the proportion the
    mixed algorithms weight their losses with (table 8: 600 : 200);
*   the central phase of sequential transfer learning (appendix B.4.5,
    figure 13): K SGD steps on central batches per round.

Central gradients are clipped to a fixed L2 norm, as in the mixed
algorithms' central steps (table 8's runs clip at 0.2). Batches are drawn
from a generator seeded by `(seed, round)`, so a resumed run draws what an
uninterrupted one would.
"""

from typing import Callable

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff


def round_rng(seed: int, round_num: int) -> np.random.Generator:
  """The generator of round `round_num`'s batches (independent of earlier
  rounds, so that a resumed run draws the same batches)."""
  return np.random.default_rng([seed, round_num])


def oracle_batch_split(clients_per_round: int, client_batch_size: int,
                       federated_weight: float) -> tuple[int, int]:
  """`(federated, central)` sequences per pooled batch of S |B_i|.

  The federated share is `federated_weight` of the batch, rounded, and at
  least one sequence of each corpus (table 8: S |B_i| = 800, w_f = 0.75 ->
  600 : 200).

  Raises:
    ValueError: If the batch cannot hold one sequence of each corpus or the
      weight is not in (0, 1).
  """
  total = clients_per_round * client_batch_size
  if total < 2:
    raise ValueError(f'A pooled batch of S |B_i| = {total} cannot hold both '
                     'corpora; it needs at least 2 sequences.')
  if not 0.0 < federated_weight < 1.0:
    raise ValueError('`federated_weight` must be in (0, 1), got '
                     f'{federated_weight}.')
  federated = min(total - 1, max(1, int(round(total * federated_weight))))
  return federated, total - federated


def sample_rows(rng: np.random.Generator, num_rows: int, steps: int,
                batch_size: int) -> np.ndarray:
  """`[steps, batch_size]` row indices, each step's without replacement
  (with replacement only if the corpus has fewer rows than a batch)."""
  return np.stack([rng.choice(num_rows, batch_size,
                              replace=batch_size > num_rows)
                   for _ in range(steps)])


def pooled_batches(rng: np.random.Generator, federated: tuple[np.ndarray,
                                                              np.ndarray],
                   central: tuple[np.ndarray, np.ndarray], *, steps: int,
                   federated_per_batch: int, central_per_batch: int
                  ) -> tuple[np.ndarray, np.ndarray]:
  """`(inputs, targets)`, each `[steps, f + c, T]`: per step `f` federated
  sequences followed by `c` central ones (the oracle's pooled batches)."""
  f_rows = sample_rows(rng, len(federated[0]), steps, federated_per_batch)
  c_rows = sample_rows(rng, len(central[0]), steps, central_per_batch)
  return tuple(np.concatenate([f[f_rows], c[c_rows]], axis=1)
               for f, c in zip(federated, central))


def central_batches(rng: np.random.Generator,
                    central: tuple[np.ndarray, np.ndarray], *, steps: int,
                    batch_size: int) -> tuple[np.ndarray, np.ndarray]:
  """`(inputs, targets)`, each `[steps, batch_size, T]`, from one corpus."""
  rows = sample_rows(rng, len(central[0]), steps, batch_size)
  return central[0][rows], central[1][rows]


def build_clipped_sgd_steps(
    model: tff.learning.models.FunctionalModel, learning_rate: float,
    clip_norm: float) -> Callable[..., list[tf.Tensor]]:
  """`steps(weights, inputs, targets)`: one SGD step per leading index.

  Step k takes the gradient of the model's loss on `(inputs[k],
  targets[k])`, clips it to global L2 norm `clip_norm` and moves the
  trainable weights by `-learning_rate` times it.

  Args:
    model: The `FunctionalModel` (no non-trainable weights).
    learning_rate: eta (the paper's eta_c = eta).
    clip_norm: The fixed clip of each step's gradient.

  Returns:
    A `tf.function` returning the new trainable weights (a list).
  """
  if not learning_rate > 0 or not clip_norm > 0:
    raise ValueError('`learning_rate` and `clip_norm` must be positive, got '
                     f'{learning_rate} and {clip_norm}.')

  @tf.function
  def steps(weights, inputs, targets):
    weights = [tf.convert_to_tensor(w) for w in weights]
    # A graph loop, not an unrolled one: K = 16 unrolled GRU scans and their
    # gradients took about a minute and a half to trace on 2 cores.
    for k in tf.range(tf.shape(inputs)[0]):
      with tf.GradientTape() as tape:
        tape.watch(weights)
        output = model.predict_on_batch((weights, ()), inputs[k])
        loss = model.loss(output, targets[k])
      gradients = [tf.convert_to_tensor(g)
                   for g in tape.gradient(loss, weights)]
      gradients, _ = tf.clip_by_global_norm(gradients, clip_norm)
      weights = [w - learning_rate * g for w, g in zip(weights, gradients)]
    return weights

  return steps
