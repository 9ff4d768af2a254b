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
"""Distributors: what the server sends each client at the start of a round.

A distributor is the first component of a mixed FL round (arXiv:2205.13655,
Algorithms 1-2: "broadcast x^(t) [and g~_c] to the clients"). It has two
halves:

*   `distribute(message@SERVER, round_num@SERVER, {B*}@CLIENTS) ->
    Distribution` (intrinsics only, called inside the process's federated
    `next`): the values each client receives, all CLIENTS-placed, and the
    `federated_select` keys when the aggregator needs them;
*   `receive(received, dataset, key_dataset=None) -> ClientInputs` (pure
    TF, run inside the client work's computation): turns what arrived into
    the model weights, the augmenting gradient, the dataset and the
    transferred examples the client trains with. The group distributors
    (`group_distribution.py`) choose keys or draw examples from
    `key_dataset`, a second copy of the client's dataset when given: a dataset that reshuffles on every pass
    gives its first order to each copy, as the per-client process's
    computations each get a fresh copy.

`message` is `OrderedDict(weights=ModelWeights[, augmenting_gradient=g~_c])`.
Three distributors:

*   `build_broadcast_distributor`: `federated_broadcast(message)`.
*   `build_select_distributor`: the embedding table and the table part of
    g~_c travel only as each client's rows, by `federated_select` with keys
    the client computes from its data (`embedding_select.py`, the movie task
    of arXiv:2205.13655 section 4.3); the rest is broadcast. Its aggregator
    is the scatter-back (`aggregators.build_scatter_back_aggregator`).
*   `build_transfer_distributor`: another distributor plus each client's own
    central examples, `federated_select`ed with indices the client draws
    (`transfer_select.py`; Example Transfer, arXiv:2111.12150, Algorithm 3,
    line 3, and FedAvg with shared data).
"""

import collections
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow_federated as tff

from tff_mixed.core import embedding_select as select_lib
from tff_mixed.core import model_types
from tff_mixed.core import transfer_select as transfer_lib


class ClientInputs(NamedTuple):
  """What a client trains with, after `Distributor.receive`.

  Attributes:
    weights: `(trainable, non_trainable)`, tuples of tensors: x^(t) (the
      client's local model with `federated_select`).
    augmenting_gradient: g~_c like the trainable weights, or `()`.
    dataset: The client's batches (remapped to local rows with
      `federated_select`).
    examples: Transferred central examples, unbatched, or `()`.
    shuffle_seed: Seeds the shuffle of local and transferred examples (int64
      scalar), or 0.
    keys: With `federated_select`, the client's int32 `[keys_per_client]`
      keys (where its local table's rows belong); else `()`.
  """

  weights: Any
  augmenting_gradient: Any
  dataset: Any
  examples: Any = ()
  shuffle_seed: Any = 0
  keys: Any = ()


class Distribution(NamedTuple):
  """The result of `Distributor.distribute`.

  Attributes:
    values: A tuple of CLIENTS-placed values, of `Distributor.client_types`.
    keys: The `federated_select` keys (int32[M]@CLIENTS) of the embedding
      rows, for the scatter-back aggregator; `None` without selection.
  """

  values: tuple[Any, ...]
  keys: Any = None


class Distributor(NamedTuple):
  """A distributor (see the module docstring).

  Attributes:
    client_types: The TFF member types of `Distribution.values`.
    distribute: `(message, round_num, client_data) -> Distribution`.
    receive: `(received: sequence, dataset, key_dataset=None) ->
      ClientInputs`, pure TF.
    client_model: The model trained on clients (the local twin whose table
      has `keys_per_client` rows with `federated_select`).
    selection: The `EmbeddingSelection` whose table travels by rows, or
      `None`.
  """

  client_types: tuple[tff.Type, ...]
  distribute: Callable[..., Distribution]
  receive: Callable[..., ClientInputs]
  client_model: tff.learning.models.FunctionalModel
  selection: Optional[select_lib.EmbeddingSelection] = None


def message_type(weights_type: tff.Type, with_gradient: bool) -> tff.Type:
  """`<weights=ModelWeights[, augmenting_gradient=trainable]>`."""
  members = collections.OrderedDict(weights=weights_type)
  if with_gradient:
    members['augmenting_gradient'] = weights_type.trainable
  return tff.to_type(members)


def build_broadcast_distributor(model: tff.learning.models.FunctionalModel,
                                with_gradient: bool) -> Distributor:
  """x^(t) (and g~_c) to every client by `federated_broadcast`."""
  broadcast_type = message_type(model_types.weights_type(model),
                                with_gradient)

  def distribute(message, round_num, client_data):
    del round_num, client_data  # The same value for every client.
    return Distribution(
        (tff.federated_broadcast(tff.federated_zip(message)),))

  def receive(received, dataset, key_dataset=None):
    (message,) = received
    weights = message['weights']
    return ClientInputs(
        weights=(tuple(weights.trainable), tuple(weights.non_trainable)),
        augmenting_gradient=(message['augmenting_gradient']
                             if with_gradient else ()),
        dataset=dataset)

  return Distributor((broadcast_type,), distribute, receive, model)


def build_transfer_distributor(
    base: Distributor, transfer: transfer_lib.TransferComputations
) -> Distributor:
  """`base`'s values plus each client's own central examples.

  The client draws the indices of its examples (seeded by a fingerprint of
  its data, the seed and the round) and `federated_select` sends it just
  those; the draw's shuffle seed comes along for the local merge.
  """
  examples_type = tff.SequenceType(transfer.select_fn.type_signature.result)
  seed_type = transfer.draw.type_signature.result.shuffle_seed

  def distribute(message, round_num, client_data):
    distribution = base.distribute(message, round_num, client_data)
    draws = tff.federated_map(
        transfer.draw, (tff.federated_broadcast(round_num), client_data))
    examples = tff.federated_select(
        draws.keys, tff.federated_value(transfer.max_key, tff.SERVER),
        tff.federated_eval(transfer.central_set, tff.SERVER),
        transfer.select_fn)
    return distribution._replace(
        values=(*distribution.values, examples, draws.shuffle_seed))

  def receive(received, dataset, key_dataset=None):
    *received, examples, shuffle_seed = received
    return base.receive(received, dataset, key_dataset)._replace(
        examples=examples, shuffle_seed=shuffle_seed)

  return Distributor((*base.client_types, examples_type, seed_type),
                     distribute, receive, base.client_model)


def without(values: Sequence[Any], index: int) -> tuple[Any, ...]:
  """`values` without the one at `index` (the table's, split off)."""
  return tuple(w for i, w in enumerate(values) if i != index)


def _with(values: Sequence[Any], index: int, inserted: Any) -> tuple[Any, ...]:
  values = list(values)
  return tuple(values[:index] + [inserted] + values[index:])


def build_select_distributor(
    model: tff.learning.models.FunctionalModel,
    selection: select_lib.EmbeddingSelection,
    with_gradient: bool,
    client_steps: Optional[int],
) -> Distributor:
  """Embedding rows (and rows of g~_c) by `federated_select`, others broadcast.

  The server-side splits are `(ModelWeights -> <table, ModelWeights without
  it>)` and `(trainable -> <table rows, the rest>)`; the client computes its
  keys, `({B*} -> int32[M])`, from the batches it will train on.
  """
  weights_type = model_types.weights_type(model)
  index, num_keys = selection.table_index, selection.keys_per_client
  table_type = weights_type.trainable[index]
  row_shape = table_type.shape[1:]

  @tff.tensorflow.computation(model_types.data_type(model))
  def keys_computation(dataset):
    return select_lib.select_keys(dataset, selection, client_steps)

  @tff.tensorflow.computation(weights_type)
  def split_weights(weights):
    return (weights.trainable[index], tff.learning.models.ModelWeights(
        trainable=without(weights.trainable, index),
        non_trainable=tuple(weights.non_trainable)))

  @tff.tensorflow.computation(weights_type.trainable)
  def split_gradient(gradient):
    return gradient[index], without(gradient, index)

  select_fn = select_lib.build_select_fn(table_type)
  dense_message = collections.OrderedDict(
      weights=split_weights.type_signature.result[1])
  if with_gradient:
    dense_message['augmenting_gradient'] = (
        split_gradient.type_signature.result[1])
  rows_type = tff.SequenceType(tff.TensorType(table_type.dtype, row_shape))
  client_types = (tff.to_type(dense_message),
                  tff.TensorType(np.int32, [num_keys]), rows_type)
  if with_gradient:
    client_types += (rows_type,)

  def distribute(message, round_num, client_data):
    del round_num  # Keys depend only on the client's data.
    keys = tff.federated_map(keys_computation, client_data)
    max_key = tff.federated_value(selection.num_rows - 1, tff.SERVER)
    table, dense_weights = tff.federated_map(split_weights, message['weights'])
    dense = collections.OrderedDict(weights=dense_weights)
    selected = [tff.federated_select(keys, max_key, table, select_fn)]
    if with_gradient:
      gradient_table, dense['augmenting_gradient'] = tff.federated_map(
          split_gradient, message['augmenting_gradient'])
      selected.append(tff.federated_select(keys, max_key, gradient_table,
                                           select_fn))
    broadcast = tff.federated_broadcast(tff.federated_zip(dense))
    return Distribution((broadcast, keys, *selected), keys)

  def receive(received, dataset, key_dataset=None):
    message, keys, rows, *gradient_rows = received
    rows = [select_lib.rows_from_sequence(r, num_keys, row_shape)
            for r in (rows, *gradient_rows)]
    return local_inputs(message, keys, rows, dataset, selection)

  return Distributor(client_types, distribute, receive,
                     selection.local_model, selection)


def local_inputs(message, keys, rows, dataset, selection):
  """A `federated_select` client's inputs from its keys and rows (also a
  group member's, `group_distribution.build_group_select_distributor`).

  `message` holds every weight (and gradient) but the table's; `rows` are
  the table's rows at `keys` (and, with gradient transfer, g~_c's).
  """
  index = selection.table_index
  weights = message['weights']
  augmenting = ()
  if len(rows) > 1:
    # Padding slots are no rows of the client's: no w_c g~_c for them.
    augmenting = _with(message['augmenting_gradient'], index,
                       rows[1] * select_lib.padding_mask(keys, rows[1].dtype))
  return ClientInputs(
      weights=(_with(weights.trainable, index, rows[0]),
               tuple(weights.non_trainable)),
      augmenting_gradient=augmenting,
      dataset=select_lib.local_dataset(dataset, keys, selection),
      keys=keys)
