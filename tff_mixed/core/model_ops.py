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
"""A model's loss and plain gradient steps on its trainable weights.

Pure TensorFlow on a `tff.learning.models.FunctionalModel`, for the code that
differentiates or steps the trainable weights alone: the asynchronous
package's server-side searches and baselines (Feddle's coefficient search,
server SGD, FedDF distillation) and LoAdaBoost's client epochs. The loss is
the model's own, on a batch split by `central_objective.split_batch` (the f_c
of mixed FL, arXiv:2205.13655 eq. 1, uses the same pieces with the
`(trainable, non_trainable)` pair); gradients come from
`central_objective.loss_and_gradient`, so every caller gets dense gradients,
with zeros for the weights the loss does not reach.
"""

from collections.abc import Callable, Sequence
from typing import Any, Optional

import tensorflow as tf

from tff_mixed.core import central_objective

# loss(trainable_weights, batch) -> scalar loss tensor.
TrainableLossFn = Callable[[Sequence[tf.Tensor], Any], tf.Tensor]


def cast_to_spec(value: Any, spec: Any) -> Any:
  """`value`'s tensors cast to the dtypes of the matching specs in `spec`."""
  return tf.nest.map_structure(lambda t, s: tf.cast(t, s.dtype), value, spec)


def trainable_loss_fn(model: Any, non_trainable: Optional[Sequence[Any]] = None,
                      *, training: bool = True,
                      cast_inputs: bool = False) -> TrainableLossFn:
  """The model's loss on a batch as a function of its trainable weights.

  Args:
    model: A `tff.learning.models.FunctionalModel` (or an object with its
      `initial_weights`, `input_spec`, `predict_on_batch` and `loss`).
    non_trainable: The non-trainable weights held fixed; the model's initial
      ones if None.
    training: Passed to `predict_on_batch` (False for a deterministic loss,
      e.g. a search's objective).
    cast_inputs: Cast x and y to the dtypes of the model's input spec first
      (for batches of another dtype, e.g. numpy float64 server data).

  Returns:
    `loss(trainable_weights, batch) -> scalar`, where `batch` is `(x, y)` or a
    mapping with 'x' and 'y'.
  """
  if non_trainable is None:
    non_trainable = model.initial_weights[1]
  non_trainable = tuple(non_trainable)
  x_spec, y_spec = central_objective.split_batch(model.input_spec)

  def loss(trainable, batch):
    x, y = central_objective.split_batch(batch)
    if cast_inputs:
      x, y = cast_to_spec(x, x_spec), cast_to_spec(y, y_spec)
    output = model.predict_on_batch((tuple(trainable), non_trainable), x,
                                    training=training)
    return model.loss(output=output, label=y)

  return loss


def trainable_loss_and_gradient(loss_fn: TrainableLossFn,
                                trainable: Sequence[tf.Tensor], batch: Any
                               ) -> tuple[tf.Tensor, tuple[tf.Tensor, ...]]:
  """`loss_fn(trainable, batch)` and its dense gradient in `trainable`."""
  return central_objective.loss_and_gradient(
      lambda model_weights, b: loss_fn(model_weights[0], b), tuple(trainable),
      (), batch)


def sgd_update(weights: Sequence[tf.Tensor], gradients: Sequence[tf.Tensor],
               learning_rate: Any) -> tuple[tf.Tensor, ...]:
  """One plain gradient step w - lr * g (the rate in each weight's dtype)."""
  return tuple(w - tf.cast(learning_rate, w.dtype) * g
               for w, g in zip(weights, gradients))
