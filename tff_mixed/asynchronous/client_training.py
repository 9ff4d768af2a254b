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
"""Client training for asynchronous FL, as a TFF federated computation.

In asynchronous FL (FedAsync, FedBuff, CA2FL, Feddle: guided model merging
paper, section 3 and appendix) the server acts on each client's update as it
arrives, possibly rounds after the model it was computed from. The
simulation therefore splits a round in two: the sampled clients train now,
on the current global model (this computation), and Python holds each
update until its simulated arrival round (`schedule.AsyncSchedule`).

Unlike the synchronous processes, this computation returns the updates
placed at CLIENTS, one per client: every asynchronous server strategy
consumes individual client updates (a buffer, a per-client cache, or an
atlas of anchors). Only model updates leave a client, never its examples.

Type signature:
`(<weights=ModelWeights@SERVER, data={B*}@CLIENTS> ->
  <update=ModelDelta@CLIENTS, num_examples=float32@CLIENTS,
   loss=float32@SERVER>)`, with `update = trained - initial` weights
(TFF's client work reports the opposite sign; it is flipped here so the
strategies add updates).
"""

import collections

import tensorflow as tf
import tensorflow_federated as tff


def build_client_training(
    model: tff.learning.models.FunctionalModel,
    client_optimizer: tff.learning.optimizers.Optimizer,
) -> tff.Computation:
  """Local training of the sampled clients from the server's weights.

  Args:
    model: The `FunctionalModel` clients train.
    client_optimizer: The local optimizer (a pass over each client dataset;
      give datasets their number of steps, e.g. `repeat().take(K)`).

  Returns:
    The federated computation described in the module docstring.

  Raises:
    TypeError: If `model` is not a `FunctionalModel`.
  """
  if not isinstance(model, tff.learning.models.FunctionalModel):
    raise TypeError('`model` must be a tff.learning.models.FunctionalModel, '
                    f'got {type(model).__name__}.')
  client_work = tff.learning.templates.build_functional_model_delta_client_work(
      model=model, optimizer=client_optimizer,
      client_weighting=tff.learning.ClientWeighting.NUM_EXAMPLES)
  # Types derived from TFF's own traced client work.
  next_type = client_work.next.type_signature.parameter
  weights_type = next_type[1].member
  data_type = next_type[2]

  @tff.tensorflow.computation(weights_type.trainable)
  def negate(update):
    return tf.nest.map_structure(tf.negative, update)

  @tff.federated_computation(
      tff.FederatedType(weights_type, tff.SERVER), data_type)
  def train(weights, data):
    output = client_work.next(client_work.initialize(),
                              tff.federated_broadcast(weights), data)
    return collections.OrderedDict(
        update=tff.federated_map(negate, output.result.update),
        num_examples=output.result.update_weight,
        loss=output.measurements.train.loss)

  return train
