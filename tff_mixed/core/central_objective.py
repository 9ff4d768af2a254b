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
"""The centralized objective f_c of mixed FL, and how the server samples it.

Mixed FL (Augenstein et al., "Mixed Federated Learning: Joint Decentralized
and Centralized Learning", arXiv:2205.13655, eq. 1 and 3) trains one model on
f = w_f f_f + w_c f_c, where f_c is computed only at the server: either the
model's loss on datacenter examples, or a data-free regularizer of the weights
(the spreadout regularizer of the movie task).

This module is pure TensorFlow: no federated types. Small central sets are
held as numpy arrays and become constants of the server-side TF computations
that use them (see docs/DESIGN.md, "where does the central data enter?"),
so the processes keep the two-argument
`tff.learning.templates.LearningProcess` contract. Large ones live in an
`ExampleStore` (one file per example) that the computations read by index.
Batches are drawn by stateless sampling from `(seed, round, step)`, so a
round's central batches are reproducible and independent of how many rounds
ran before.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional
import weakref

import numpy as np
import tensorflow as tf

from tff_mixed.core import example_store as example_store_lib
from tff_mixed.core import inputs

# A structure of tensors holding one batch of central examples, or `None` for a
# data-free regularizer.
Batch = Any
# The trainable weights of a model: a tuple of tensors.
TrainableWeights = Any


class CentralObjective(NamedTuple):
  """The centralized loss f_c of mixed FL.

  Build it with `central_data_objective` or `central_regularizer` rather than
  directly: those validate their arguments.

  Attributes:
    data: A structure (tuple or mapping) of numpy arrays with a common leading
      dimension (one row per central example), an `ExampleStore` (examples
      on disk, read by index), or `None` for a regularizer.
    loss_fn: `None` to use the trained model's own loss on the central
      examples, or a callable `loss_fn(model_weights, batch) -> scalar tensor`
      where `model_weights` is the FunctionalModel's `(trainable,
      non_trainable)` pair and `batch` is a batch of `data` (or `None`).
    name: A short name used in metrics and error messages.
  """

  data: Optional[Any]
  loss_fn: Optional[Callable[[Any, Batch], tf.Tensor]]
  name: str

  @property
  def has_data(self) -> bool:
    return self.data is not None

  @property
  def num_examples(self) -> int:
    if self.data is None:
      count = 0  # A regularizer reads no examples.
    elif isinstance(self.data, example_store_lib.ExampleStore):
      count = self.data.num_examples
    else:
      count = int(tf.nest.flatten(self.data)[0].shape[0])
    return count


def central_data_objective(
    data: Any,
    loss_fn: Optional[Callable[[Any, Batch], tf.Tensor]] = None,
    name: str = 'central',
) -> CentralObjective:
  """Creates an f_c backed by datacenter examples.

  Args:
    data: The central examples: a tuple `(x, y)` or a mapping with keys `'x'`
      and `'y'` (the structure of the model's `input_spec`) of numpy arrays
      sharing their first dimension; or, for central sets too large to travel
      inside a computation, an `example_store.ExampleStore` whose batches (after
      its `map_fn`) have that structure; or a finite `tf.data.Dataset` of
      such `(x, y)` / `{'x': ..., 'y': ...}` elements, single examples or
      batches, read once here into numpy arrays (`inputs.central_data`
      says how).
    loss_fn: Optional `loss_fn(model_weights, batch) -> scalar`. `None` (the
      default) uses the model's own `predict_on_batch` and `loss`.
    name: Name used in metrics and error messages.

  Returns:
    A `CentralObjective`.

  Raises:
    TypeError: If `data` is not a structure of numpy arrays, an
      `ExampleStore` or a dataset of dense tensors, or `loss_fn` is not
      callable.
    ValueError: If `data` is empty or infinite, or its arrays disagree on
      their length.
  """
  if data is None:
    raise TypeError('`data` must be a structure of numpy arrays, an '
                    '`ExampleStore` or a `tf.data.Dataset`, got None; use '
                    '`central_regularizer` for a data-free central loss.')
  data = inputs.central_data(data)
  if loss_fn is not None and not callable(loss_fn):
    raise TypeError(f'`loss_fn` must be callable, got {type(loss_fn).__name__}.')
  if isinstance(data, example_store_lib.ExampleStore):
    return CentralObjective(data=data, loss_fn=loss_fn, name=name)
  leaves = tf.nest.flatten(data)
  if not leaves:
    raise ValueError('`data` has no arrays.')
  for leaf in leaves:
    if not isinstance(leaf, np.ndarray):
      raise TypeError('`data` must hold numpy arrays (or be an '
                      '`ExampleStore` or a `tf.data.Dataset`), found '
                      f'{type(leaf).__name__}.')
  lengths = {leaf.shape[0] if leaf.ndim else None for leaf in leaves}
  if len(lengths) != 1 or None in lengths:
    raise ValueError('The arrays of `data` must share their first dimension '
                     f'(one row per example); got lengths {sorted(map(str, lengths))}.')
  if lengths == {0}:
    raise ValueError('`data` holds no examples.')
  return CentralObjective(data=data, loss_fn=loss_fn, name=name)


def central_regularizer(
    loss_fn: Callable[[Any, Batch], tf.Tensor], name: str = 'regularizer'
) -> CentralObjective:
  """Creates a data-free f_c: a regularizer of the model weights.

  Args:
    loss_fn: `loss_fn(model_weights, None) -> scalar tensor`, differentiable in
      the trainable weights.
    name: Name used in metrics and error messages.

  Returns:
    A `CentralObjective` with no data.

  Raises:
    TypeError: If `loss_fn` is not callable.
  """
  if not callable(loss_fn):
    raise TypeError(f'`loss_fn` must be callable, got {type(loss_fn).__name__}.')
  return CentralObjective(data=None, loss_fn=loss_fn, name=name)


# Per graph, the constants holding each objective's data: every central step,
# gradient and sample of one computation then shares one copy of the data.
# Without it each call embedded its own copy, and the serialized computation
# (sent to the TFF worker every round) grew with K_c times the data.
_DATA_CONSTANTS = weakref.WeakKeyDictionary()


def _data_constants(objective: CentralObjective):
  graph = tf.compat.v1.get_default_graph()
  per_graph = _DATA_CONSTANTS.setdefault(graph, {})
  key = id(objective.data)
  if key not in per_graph:
    per_graph[key] = (objective.data,
                      tf.nest.map_structure(tf.constant, objective.data))
  return per_graph[key][1]


# Keeps the per-step seed below 2**31 for any realistic number of central
# steps per round (the paper uses at most a few dozen).
_MAX_STEPS_PER_ROUND = 1 << 16


def sample_batch(
    objective: CentralObjective,
    batch_size: int,
    seed: int,
    round_num: tf.Tensor,
    step: tf.Tensor,
) -> Batch:
  """Samples batch `step` of round `round_num` without replacement.

  Must be called inside a TF graph (a `tff.tensorflow.computation`): numpy
  data become constants of that graph, an `ExampleStore` is read from disk by
  index. A `batch_size` at least the number of examples returns the whole
  central set (full-batch gradients).

  Args:
    objective: The `CentralObjective`.
    batch_size: Examples per batch.
    seed: The process seed.
    round_num: Scalar int32 tensor, the round.
    step: Scalar int32 tensor, the central step within the round.

  Returns:
    A structure like `objective.data` of tensors with `min(batch_size, n)`
    rows, or `None` for a data-free objective.
  """
  if not objective.has_data:
    return None
  n = objective.num_examples
  store = (objective.data if isinstance(
      objective.data, example_store_lib.ExampleStore) else None)
  if batch_size >= n:
    return store.read(tf.range(n)) if store else _data_constants(objective)
  round_step = (
      tf.cast(round_num, tf.int64) * _MAX_STEPS_PER_ROUND
      + tf.cast(step, tf.int64))
  stateless_seed = tf.stack([tf.constant(seed, tf.int64), round_step])
  # A random permutation's prefix is a uniform sample without replacement.
  scores = tf.random.stateless_uniform([n], seed=stateless_seed)
  indices = tf.math.top_k(scores, k=batch_size, sorted=False).indices
  if store:
    return store.read(indices)
  return tf.nest.map_structure(lambda t: tf.gather(t, indices),
                               _data_constants(objective))


def model_loss_fn(model) -> Callable[[Any, Batch], tf.Tensor]:
  """Returns `loss(model_weights, batch)` for a `FunctionalModel`."""

  def loss(model_weights, batch):
    x, y = split_batch(batch)
    output = model.predict_on_batch(model_weights, x, training=True)
    return model.loss(output=output, label=y)

  return loss


def split_batch(batch):
  """Returns `(x, y)` from a tuple batch or a mapping with `'x'` and `'y'`."""
  if isinstance(batch, dict) or hasattr(batch, 'keys'):
    return batch['x'], batch['y']
  x, y = batch
  return x, y


def loss_and_gradient(
    loss_fn: Callable[[Any, Batch], tf.Tensor],
    trainable: TrainableWeights,
    non_trainable: Any,
    batch: Batch,
) -> tuple[tf.Tensor, TrainableWeights]:
  """Returns f_c(x; batch) and its gradient in the trainable weights."""
  with tf.GradientTape() as tape:
    tape.watch(trainable)
    loss = loss_fn((trainable, non_trainable), batch)
  return loss, dense_gradients(tape.gradient(loss, trainable), trainable)


def dense_gradients(gradients, weights) -> TrainableWeights:
  """Gradients as dense tensors of their weights' static shapes.

  Embedding lookups give sparse `IndexedSlices`, whose dense form can lose
  the static shape (`[?, d]`); the mixing with w_c g~_c, the optimizers and
  TFF's types need dense tensors shaped like the weights. A weight the loss
  does not touch gets zeros, not None, so it can still be added and merged.
  """
  dense = []
  for w, g in zip(weights, gradients):
    if g is None:
      dense.append(tf.zeros_like(w))
    else:
      g = tf.convert_to_tensor(g)
      g.set_shape(w.shape)
      dense.append(g)
  return tuple(dense)
