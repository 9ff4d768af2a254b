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
"""TFF types of a model's weights and of its clients' data, and tuple math.

Every component of a mixed FL process (arXiv:2205.13655, Algorithms 1-2)
declares its `tff.tensorflow.computation`s over the same few types, derived
here from the `tff.learning.models.FunctionalModel` rather than written by
hand:

*   `weights_type(model)`: `ModelWeights` of the model's initial weights;
*   `data_type(model)`: `{B*}`, a sequence of the model's input batches;
*   `trainable_specs(model)`: `tf.TensorSpec`s of the trainable weights (what
    `tff.learning.optimizers.Optimizer.initialize` takes).

The pure-TF helpers `add`, `scale`, `global_norm_squared` and `all_finite`
act on tuples of tensors like the trainable weights.
"""

from typing import Any

import tensorflow as tf
import tensorflow_federated as tff


def trainable_specs(model: tff.learning.models.FunctionalModel) -> tuple[
    tf.TensorSpec, ...]:
  """The `tf.TensorSpec` of each trainable weight."""
  return tuple(tf.TensorSpec(w.shape, tf.dtypes.as_dtype(w.dtype))
               for w in model.initial_weights[0])


def weights_type(model: tff.learning.models.FunctionalModel) -> tff.Type:
  """The `ModelWeights` TFF type of a FunctionalModel's weights."""

  def spec(array):
    return tf.TensorSpec(array.shape, tf.dtypes.as_dtype(array.dtype))

  trainable, non_trainable = model.initial_weights
  return tff.types.tensorflow_to_type(
      tff.learning.models.ModelWeights(
          trainable=tuple(spec(w) for w in trainable),
          non_trainable=tuple(spec(w) for w in non_trainable)))


def data_type(model: tff.learning.models.FunctionalModel) -> tff.SequenceType:
  """`{B*}`: a client's dataset of batches in the model's input structure."""
  return tff.SequenceType(tff.types.tensorflow_to_type(model.input_spec))


def add(a: Any, b: Any) -> tuple[Any, ...]:
  return tuple(x + y for x, y in zip(a, b))


def scale(c: Any, a: Any) -> tuple[Any, ...]:
  return tuple(c * x for x in a)


def global_norm_squared(a: Any) -> tf.Tensor:
  return tf.add_n([tf.reduce_sum(tf.square(x)) for x in a])


def all_finite(structure: Any) -> tf.Tensor:
  flat = tf.nest.flatten(structure)
  return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in flat])


def reduce_dataset(dataset: tf.data.Dataset, initial_state: Any,
                   reduce_fn: Any) -> Any:
  """`dataset.reduce(initial_state, reduce_fn)`, at a fraction of its cost.

  `tf.data.Dataset.reduce` instantiates its reduce function anew every time
  the op runs (about 5-10 ms here), which is most of a client's round when
  it takes a few small steps, and is paid once per client and round. This
  loop draws the same elements in the same order from an iterator
  (`get_next_as_optional`) in a `tf.while_loop`, whose body is part of the
  calling function and instantiated once. The state's structure and shapes
  must not change between steps.
  """
  # Inside a `tf.function` of its own, whose automatic control
  # dependencies order the iterator's initialization before its first read;
  # a TFF graph or a `tf.while_loop` body has no such ordering.
  @tf.function
  def loop(dataset, initial_state):
    # Made after the state is: an iterator of a dataset that reshuffles
    # each iteration draws its order when it is made, so passes over one
    # dataset (whose states chain) must make theirs in turn; without the
    # dependency an inlined call makes it as early as it can, in any order.
    with tf.control_dependencies(
        [t for t in tf.nest.flatten(initial_state) if tf.is_tensor(t)]):
      iterator = iter(dataset)

    def body(state, element):
      return (reduce_fn(state, element.get_value()),
              iterator.get_next_as_optional())

    state, _ = tf.while_loop(
        lambda state, element: element.has_value(), body,
        (initial_state, iterator.get_next_as_optional()))
    return state

  return loop(dataset, initial_state)
