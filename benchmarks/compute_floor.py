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
"""The compute floor of a FedAvg round: the same SGD steps without TFF.

Benchmarks report a process's seconds per round against this floor: every
client's K local SGD steps on the same batches and the server's mean
update, in one plain `tf.function`, with no TFF runtime, no metrics, no
serialization. What a process takes beyond it is the cost of simulating the
round (dispatch, data movement, aggregation, metrics).
"""

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff


def build_floor_round(model: tff.learning.models.FunctionalModel,
                      learning_rate: float):
  """The compute floor: one FedAvg round as a single plain `tf.function`.

  Every client takes its K SGD steps from the global weights and the server
  adds the mean update (server learning rate 1). Clients hold equal numbers
  of examples, so FedAvg's example-weighted mean is the plain mean. Clients
  run one after another: this is the floor of the work, which TFF's worker
  may spread over several threads. No metrics, no TFF.

  Args:
    model: The `FunctionalModel`.
    learning_rate: The client SGD learning rate.

  Returns:
    A `tf.function` `(trainable, x, y) -> new trainable`, with
    `x: float32[clients, K, batch, ...]` and `y: float32[clients, K, batch,
    1]`.
  """
  non_trainable = tuple(tf.constant(w) for w in model.initial_weights[1])

  @tf.function
  def floor_round(trainable, x, y):
    trainable = tuple(trainable)
    num_clients = tf.shape(x)[0]
    total_update = tuple(tf.zeros_like(w) for w in trainable)
    for c in tf.range(num_clients):
      local = trainable
      for k in tf.range(tf.shape(x)[1]):
        with tf.GradientTape() as tape:
          tape.watch(local)
          output = model.predict_on_batch((local, non_trainable), x[c, k],
                                          training=True)
          loss = model.loss(output=output, label=y[c, k])
        gradient = tape.gradient(loss, local)
        local = tuple(
            w - learning_rate * g for w, g in zip(local, gradient))
      total_update = tuple(
          t + (w0 - w) for t, w0, w in zip(total_update, trainable, local))
    scale = 1.0 / tf.cast(num_clients, tf.float32)
    return tuple(w - scale * t for w, t in zip(trainable, total_update))

  return floor_round


class FloorRunner:
  """Runs rounds of the compute floor from the model's initial weights."""

  def __init__(self, model: tff.learning.models.FunctionalModel,
               learning_rate: float):
    # Traced on first call (and per cohort shape), as TFF compiles on first
    # call: the first round of each cohort includes tracing.
    self._round_fn = build_floor_round(model, learning_rate)
    self._initial = tuple(tf.constant(w) for w in model.initial_weights[0])
    self._trainable = self._initial
    self._x = self._y = None

  def set_clients(self, x: np.ndarray, y: np.ndarray) -> None:
    """Restarts from the initial weights, training on these batches.

    Args:
      x: float32[clients, K, batch, ...], as `build_floor_round` takes.
      y: float32[clients, K, batch, 1].
    """
    self._x, self._y = tf.constant(x), tf.constant(y)
    self._trainable = self._initial

  def run_round(self) -> None:
    # Eager CPU execution is synchronous: the result is computed on return.
    self._trainable = self._round_fn(self._trainable, self._x, self._y)
