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
"""Client computation cost: FLOPs of one local SGD step, measured.

The mixed FL paper (arXiv:2205.13655, section 4.3 and table 2) compares the
client computation of the algorithms. `local_step_flops` measures it: it
traces one step of a `tff.learning.models.FunctionalModel` (forward, loss,
gradient, SGD update) with every shape static, inlines the nested
`tf.function`s (TF's profiler does not look inside a function call, which is
why profiling the model's own graph reports ~100 FLOPs), and sums the float
operations TF's profiler registers for each op.
"""

import tensorflow as tf
import tensorflow_federated as tff
from tensorflow.python.framework import convert_to_constants  # pylint: disable=g-direct-tensorflow-import


def _static_spec(spec, batch_size: int, where: str) -> tf.TensorSpec:
  shape = spec.shape.as_list()
  if shape and shape[0] is None:
    shape[0] = batch_size
  if any(dim is None for dim in shape):
    raise ValueError(f'`model.input_spec` {where} has shape {spec.shape}; '
                     'only the batch dimension may be unknown.')
  return tf.TensorSpec(shape, spec.dtype)


def local_step_flops(model: tff.learning.models.FunctionalModel,
                     batch_size: int) -> int:
  """The float operations of one local SGD step on a batch of `batch_size`.

  Counts what a client computes per step: `predict_on_batch`, the loss, the
  gradient of every trainable weight (a sparse embedding gradient is
  densified, as `tff_mixed`'s client update does) and `w - lr * g`. A
  round's client cost is K times this.

  Args:
    model: The model a client trains (for federated_select, the model of the
      client's slice).
    batch_size: The client batch size.

  Returns:
    The FLOPs TF's profiler counts on the inlined, statically shaped graph.

  Raises:
    TypeError: If `model` is not a `FunctionalModel`.
    ValueError: For a non-positive `batch_size` or an input spec with an
      unknown dimension other than the batch.
  """
  if not isinstance(model, tff.learning.models.FunctionalModel):
    raise TypeError('`model` must be a `tff.learning.models.FunctionalModel`,'
                    f' got {type(model).__name__}.')
  if isinstance(batch_size, bool) or not isinstance(
      batch_size, int) or batch_size < 1:
    raise ValueError(f'`batch_size` must be a positive int, got '
                     f'{batch_size!r}.')
  trainable, non_trainable = model.initial_weights
  weight_specs = tf.nest.map_structure(
      lambda w: tf.TensorSpec(tf.convert_to_tensor(w).shape,
                              tf.convert_to_tensor(w).dtype),
      (tuple(trainable), tuple(non_trainable)))
  input_specs = tf.nest.map_structure(
      lambda s: _static_spec(s, batch_size, 'element'), model.input_spec)

  @tf.function
  def step(weights, batch):
    x, y = batch
    trainable, non_trainable = weights
    with tf.GradientTape() as tape:
      tape.watch(trainable)
      output = model.predict_on_batch((trainable, non_trainable), x)
      loss = model.loss(output, y)
    gradients = tape.gradient(loss, trainable)
    # The learning rate is a placeholder: an SGD update costs 2 FLOPs per
    # weight whatever its value.
    return [w - 0.1 * tf.convert_to_tensor(g)
            for w, g in zip(trainable, gradients)]

  concrete = step.get_concrete_function(weight_specs, input_specs)
  # Freezing inlines the nested functions into one flat graph; pruning it to
  # the update drops what the step does not need (e.g. the gradient of the
  # input data, which TF's gradient functions build and its runtime prunes).
  frozen, graph_def = (
      convert_to_constants.convert_variables_to_constants_v2_as_graph(
          concrete))
  graph_def = tf.compat.v1.graph_util.extract_sub_graph(
      graph_def, [t.op.name for t in frozen.outputs])
  graph = tf.Graph()
  with graph.as_default():
    tf.graph_util.import_graph_def(graph_def, name='')
  options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
  options['output'] = 'none'
  return int(tf.compat.v1.profiler.profile(
      graph, options=options).total_float_ops)
