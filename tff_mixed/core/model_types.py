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

The pure-TF helpers `add`, `scale`, `global_norm_squared`, `all_finite`,
`zeros_of` and `keep_if` act on tuples of tensors like the trainable weights.
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


def zeros_of(specs: Any) -> tuple[tf.Tensor, ...]:
  """Zeros shaped like each of `specs` (e.g. `trainable_specs(model)`)."""
  return tuple(tf.zeros(s.shape, s.dtype) for s in specs)


def keep_if(accepted: tf.Tensor, new: Any, old: Any) -> Any:
  """`new` where the bool scalar `accepted` holds, else `old`, leafwise."""
  return tf.nest.map_structure(lambda n, o: tf.where(accepted, n, o), new,
                               old)


def _dense_leaves(element_spec: Any) -> bool:
  """Whether every leaf of an element spec is a dense tensor."""
  return all(type(spec) is tf.TensorSpec  # pylint: disable=unidiomatic-typecheck
             for spec in tf.nest.flatten(element_spec))


# Elements per padded batch when a dataset is drawn at once: batches of
# batches hold up to 2**32 elements, and a batch reserves room for this many.
_CHUNK = 2**16


def _draw_all(dataset: tf.data.Dataset) -> tuple[Any, Any, tf.Tensor]:
  """A dataset's elements at once: (padded stacks, their shapes, count).

  One pass drawn by `get_single_element` of padded batches of padded
  batches of all the elements (element `i` at `[i // _CHUNK, i % _CHUNK]`),
  each element's shapes recorded to cut its padding off again. An empty
  dataset gives count 0 (a sentinel of zero rows).
  """
  unpack = isinstance(dataset.element_spec, tuple)

  def marked(*args):
    element = args if unpack else args[0]
    return (element, tf.nest.map_structure(tf.shape, element),
            tf.constant(1, tf.int32))

  batched = dataset.map(marked).padded_batch(_CHUNK).padded_batch(_CHUNK)
  empty = tf.data.Dataset.from_tensors(tf.nest.map_structure(
      lambda s: tf.zeros([d or 0 for d in s.shape], s.dtype),
      batched.element_spec))
  stacks, shapes, marks = batched.concatenate(empty).take(
      1).get_single_element()
  return stacks, shapes, tf.reduce_sum(marks)


def reduce_dataset(dataset: tf.data.Dataset, initial_state: Any,
                   reduce_fn: Any) -> Any:
  """`dataset.reduce(initial_state, reduce_fn)`, at a fraction of its cost.

  `tf.data.Dataset.reduce` instantiates its reduce function anew every time
  the op runs (about 5-10 ms here), and so does making an iterator
  (0.2-5 ms in TFF's worker, `benchmarks/group_profile.py`), against a few
  small steps per client and round. Datasets of dense tensors are drawn at
  once (`get_single_element` of one padded batch of all their elements,
  the padding cut off again per element) and folded in a `tf.while_loop`,
  whose body is part of the calling function and instantiated once; other
  datasets are drawn from an iterator (`get_next_as_optional`) in the loop.
  The same elements in the same order, with their static shapes. The
  state's structure and shapes must not change between steps, and the
  dataset must be finite (as for `Dataset.reduce`).
  """
  spec = dataset.element_spec
  # Inside a `tf.function` of its own, whose automatic control
  # dependencies order the draw (or the iterator's initialization) before
  # the first step; a TFF graph or a `tf.while_loop` body has no ordering.
  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def fold(dataset, initial_state):
    # Drawn after the state is made: a dataset that reshuffles each
    # iteration draws its order when its pass starts, so passes over one
    # dataset (whose states chain) must start theirs in turn; without the
    # dependency an inlined call starts it as early as it can, in any order.
    with tf.control_dependencies(
        [t for t in tf.nest.flatten(initial_state) if tf.is_tensor(t)]):
      stacks, shapes, count = _draw_all(dataset)

    def element(i):
      at = (i // _CHUNK, i % _CHUNK)
      return tf.nest.map_structure(
          lambda stack, shape, s: tf.ensure_shape(
              tf.slice(stack[at], tf.zeros_like(shape[at]), shape[at]),
              s.shape), stacks, shapes, spec)

    _, state = tf.while_loop(
        lambda i, state: i < count,
        lambda i, state: (i + 1, reduce_fn(state, element(i))),
        (tf.constant(0), initial_state))
    return state

  @tf.function(autograph=False)
  def iterate(dataset, initial_state):
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

  loop = fold if _dense_leaves(spec) else iterate
  return loop(dataset, initial_state)
