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
"""Tiny problems and numpy oracles shared by the tests.

Linear regression with mean squared error, small enough that every algorithm's
round can be replayed by hand in numpy: the oracle the TFF processes must
match.
"""

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.models import dense

INPUT_DIM = 2


def client_arrays(seed: int = 0, sizes=(4, 6, 2)):
  """Returns one (x, y) pair of float32 arrays per client."""
  rng = np.random.default_rng(seed)
  arrays = []
  for n in sizes:
    x = rng.normal(size=(n, INPUT_DIM)).astype(np.float32)
    y = (x @ np.array([[1.0], [2.0]], np.float32) + 0.5
         + 0.1 * rng.normal(size=(n, 1))).astype(np.float32)
    arrays.append((x, y))
  return arrays


# `central_arrays`' examples by default: a central batch of this many is the
# whole set (full-batch central gradients, which the oracles compute).
CENTRAL_EXAMPLES = 8


def central_arrays(seed: int = 1, n: int = CENTRAL_EXAMPLES):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, INPUT_DIM)).astype(np.float32)
  y = (x @ np.array([[-1.0], [0.5]], np.float32) - 1.0).astype(np.float32)
  return x, y


def to_datasets(arrays, batch_size: int):
  return [
      tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)
      for x, y in arrays
  ]


def initial_weights():
  return (np.array([[0.3], [-0.2]], np.float32), np.array([0.1], np.float32))


def linear_model():
  return dense.build_linear_regression(INPUT_DIM, initial_weights())


def sgd(lr: float):
  return tff.learning.optimizers.build_sgdm(learning_rate=lr)


def trainable(process, state):
  weights = process.get_model_weights(state)
  return [np.asarray(w) for w in weights.trainable]


# --- the asynchronous simulation's clients ---

ASYNC_DIM = 3


def async_client_arrays(client: int, seed: int, min_examples: int,
                        size_cycle: int):
  """Client `client`'s (x, y), float32, for the asynchronous tests.

  `min_examples + client % size_cycle` rows of x drawn with seed
  `seed + client`, and y = x [1, -2, 0.5]^T + 0.1 client: every client has
  its own optimum, so which updates a method applies shows in the model.
  """
  rng = np.random.default_rng(seed + client)
  x = rng.normal(size=(min_examples + client % size_cycle,
                       ASYNC_DIM)).astype(np.float32)
  y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
       + client * 0.1).astype(np.float32)
  return x, y


def mse_loss(weights, arrays, mean_over_clients: bool = False):
  """`{'loss': ...}` of linear weights (w, b) on per-client (x, y) arrays.

  The mean squared error over all examples, or with `mean_over_clients` the
  mean of the clients' own mean squared errors (each client counts once).
  """
  w, b = weights
  if mean_over_clients:
    losses = [float(np.mean((x @ w + b - y) ** 2)) for x, y in arrays]
    return {'loss': float(np.mean(losses))}
  x, y = map(np.concatenate, zip(*arrays))
  return {'loss': float(np.mean((x @ w + b - y) ** 2))}


# --- numpy oracle ---


def mse_gradient(params, x, y):
  """Gradient of mean((x w + b - y)^2) in (w, b)."""
  w, b = params
  residual = x @ w + b - y
  n = x.shape[0]
  return [2.0 / n * x.T @ residual, 2.0 / n * residual.sum(axis=0)]


def batches(x, y, batch_size, num_steps=None):
  """The batches a client iterates: one pass, or `num_steps` cycling."""
  all_batches = [(x[i:i + batch_size], y[i:i + batch_size])
                 for i in range(0, x.shape[0], batch_size)]
  if num_steps is None:
    return all_batches
  return [all_batches[k % len(all_batches)] for k in range(num_steps)]


def client_update(params, client_batches, lr, augmenting=None, w_f=1.0,
                  w_c=0.0):
  """Local SGD; returns (update x0 - xK, examples, list of per-step grads)."""
  current = [p.copy() for p in params]
  grads = []
  examples = 0
  for bx, by in client_batches:
    g = mse_gradient(current, bx, by)
    grads.append(g)
    if augmenting is not None:
      g = [w_f * gi + w_c * ai for gi, ai in zip(g, augmenting)]
    current = [c - lr * gi for c, gi in zip(current, g)]
    examples += bx.shape[0]
  return [p - c for p, c in zip(params, current)], examples, grads


def weighted_mean(updates, weights):
  total = float(sum(weights))
  return [sum(w * u[i] for u, w in zip(updates, weights)) / total
          for i in range(len(updates[0]))]


def intrinsics(computation):
  """Every intrinsic building block in a computation's compiled form."""
  found = []

  def visit(block):
    if isinstance(block, tff.framework.Intrinsic):
      found.append(block)
    for child in block.children():
      visit(child)

  visit(computation.to_building_block())
  return found
