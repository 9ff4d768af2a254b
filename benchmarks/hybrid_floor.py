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
"""The compute floor of a round of the asynchronous hybrid experiment.

The floor of `benchmarks/compute_floor.py` for hybrid_async_main (Feddle,
"Guided Model Merging for Hybrid Data Learning", Zhu et al., section 5): a
round of `fedbuff` or `feddle_id` on the binary's CNN as one plain
`tf.function`, with no TFF runtime, no metrics, no schedule and no data
reading. A round is

*   the local training of the round's clients from the round's model: the
    steps of the binary's client optimizer (Adam, a fresh state per
    client, `hybrid_runs`' optimizer itself, whose `next` is plain TF) on
    each client's batches (one epoch of batch 32, the last one shorter),
    as `client_training.build_client_training` takes them;
*   the server's merges, each of a full buffer of `buffer_size` updates:
    FedBuff's mean step, or Feddle's (`feddle.feddle_step`): the updates
    enter the atlas (the free slots first, else those of the smallest
    score |c|), the anchors are rescaled to their median norm (eq. 4), the
    search starts from FedBuff's coefficients c' and takes T Adam steps,
    one server batch each, by the gradient of appendix E (eqs. 15-16), and
    the model moves to x + sum_m c_m abar_m (eq. 6).

The clients train one after another, as the binary's client groups train
their members (`client_training.build_group_loop`): their Dirichlet shares
hold different numbers of examples, so their batches do not stack, and
vectorizing them would pad every client to the largest (masking the mean
loss of a short batch) and compute more than the round does; and the
CNN's convolutions on batches of 32 are large operations, which batching
the clients would barely speed up (unlike the character LM's GRU).

A round makes as many merges as it is given: a process round merges once
per `buffer_size` arrivals, on average `clients_per_round / buffer_size`
a round (once at the binary's defaults), and benchmarks/hybrid_rounds.py
gives each floor round the merges of the process round it stands for. A
floor merge takes the round's own updates (cycled) as its buffer, where
the process merges the updates that arrive, trained in earlier rounds: the
same arithmetic on other numbers.

Left out, besides TFF's dispatch, serialization, metrics and non-finite
guard: the schedule, the pending updates and the data pipeline (the floor
gets a round's batches as tensors); Feddle's diagnostics, of which the
search's loss over one pass of the server data at c' and at its result
(two forward passes over the 1,000 server examples a merge) is the largest
(a floor `with_diagnostics` computes those two passes too, as the binary
does at every merge); its checks and numpy conversions; and FedBuff's
float64 sums (the floor merges in float32). tests/hybrid_floor_test.py
checks that the floor's client updates are the library's, that floor
rounds give the weights of the library's FedBuff and Feddle on the same
updates, and that the diagnostic losses are Feddle's.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_runs
from tff_mixed.asynchronous import anchor_merging
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import server_data
from tff_mixed.core import model_ops

# The methods with a floor (hybrid_config's names): FedBuff, and Feddle in
# domain, FedBuff's buffer with a coefficient search at each merge.
METHODS = (hybrid_config.FEDBUFF, hybrid_config.FEDDLE_ID)
# The coefficient search's Adam (`coefficient_search`).
_BETA1, _BETA2, _EPSILON = 0.9, 0.999, 1e-8


class ClientBatches(NamedTuple):
  """A round's clients' batches, their rows concatenated.

  Attributes:
    x: float32[rows, height, width, channels], every batch's images.
    y: int32[rows], their labels.
    row_splits: int32[batches + 1]: batch b is rows `row_splits[b]` to
      `row_splits[b + 1]`.
    client_splits: int32[clients + 1]: client c trains on batches
      `client_splits[c]` to `client_splits[c + 1]`, in order.
  """

  x: Any
  y: Any
  row_splits: Any
  client_splits: Any


class FloorState(NamedTuple):
  """What a floor round carries to the next.

  Attributes:
    weights: x, the model's trainable weights.
    anchors: Feddle's atlas: per weight array its M raw anchors stacked,
      `[M, ...]`, a free slot all zeros (which Feddle's arithmetic leaves
      as an absent anchor: norm 0, coefficient 0); `()` for FedBuff.
    scores: Feddle's float64 `[M]` scores |c| of the last search, -inf for
      a free slot; `()` for FedBuff.
    losses: With Feddle's diagnostics, float32 `[2]`: the last merge's
      mean loss over the server set at c' and at the searched c (its
      `prior_loss` and `final_loss`); else `()`.
  """

  weights: Any
  anchors: Any = ()
  scores: Any = ()
  losses: Any = ()


def _check(method: str, config: hybrid_config.Config) -> None:
  if method not in METHODS:
    raise ValueError(f'No hybrid floor for {method!r}; there are floors '
                     f'for {list(METHODS)}.')
  if config.fedbuff_staleness_exponent:
    raise ValueError('The floor merges by the plain mean: '
                     '`fedbuff_staleness_exponent` must be 0, got '
                     f'{config.fedbuff_staleness_exponent}.')
  if method == hybrid_config.FEDDLE_ID and (
      config.feddle_search_optimizer != 'adam'):
    raise ValueError('The floor searches with Adam, the binary\'s default; '
                     '`feddle_search_optimizer` is '
                     f'{config.feddle_search_optimizer!r}.')


def client_batches(datasets: Sequence[tf.data.Dataset]) -> ClientBatches:
  """The batches of `datasets` (one per client, of `(x, y)` batches) as the
  floor takes them, tensors."""
  xs, ys, rows, batches = [], [], [0], [0]
  for dataset in datasets:
    for x, y in dataset.as_numpy_iterator():
      xs.append(x)
      ys.append(y)
      rows.append(rows[-1] + len(y))
    batches.append(len(rows) - 1)
  return ClientBatches(
      tf.constant(np.concatenate(xs), tf.float32),
      tf.constant(np.concatenate(ys), tf.int32),
      tf.constant(rows, tf.int32), tf.constant(batches, tf.int32))


def server_batches(data: hybrid_config.Data, config: hybrid_config.Config,
                   seed: int) -> tuple[np.ndarray, np.ndarray]:
  """The T server batches each Feddle search steps on, stacked.

  Feddle cuts the server set into full batches shuffled once with the
  run's seed (`server_data.shuffled_batches`) and every search steps
  through them from the first, T = `hybrid_methods.server_steps` of them
  (cycled).
  """
  split = data.split
  batches = server_data.shuffled_batches(
      split.server_x, split.server_y, config.server_batch_size, seed)
  steps = hybrid_methods.server_steps(config, len(split.server_y),
                                      feddle_search=True)
  chosen = [batches[t % len(batches)] for t in range(steps)]
  return (np.stack([x for x, _ in chosen]).astype(np.float32),
          np.stack([y for _, y in chosen]).astype(np.int32))


def initial_state(model: tff.learning.models.FunctionalModel, method: str,
                  config: hybrid_config.Config,
                  with_diagnostics: bool = False) -> FloorState:
  """The model's initial weights and, for Feddle, an empty atlas (and zero
  diagnostic losses `with_diagnostics`)."""
  weights = tuple(tf.constant(w) for w in model.initial_weights[0])
  if method != hybrid_config.FEDDLE_ID:
    return FloorState(weights)
  size = hybrid_config.feddle_atlas_size(config)
  return FloorState(
      weights, tuple(tf.zeros([size, *w.shape], w.dtype) for w in weights),
      tf.fill([size], tf.constant(-np.inf, tf.float64)),
      tf.zeros([2], tf.float32) if with_diagnostics else ())


def diagnostic_set(data: hybrid_config.Data, config: hybrid_config.Config,
                   seed: int) -> tuple[np.ndarray, np.ndarray]:
  """The server set Feddle's diagnostic losses pass over: its shuffled
  full batches (`server_data.shuffled_batches`) as one batch, as the
  search joins them (`coefficient_search`)."""
  split = data.split
  batches = server_data.shuffled_batches(
      split.server_x, split.server_y, config.server_batch_size, seed)
  return (np.concatenate([x for x, _ in batches]).astype(np.float32),
          np.concatenate([y for _, y in batches]).astype(np.int32))


def _clients_fn(model: tff.learning.models.FunctionalModel,
                optimizer: tff.learning.optimizers.Optimizer):
  """`train(weights, batches) -> updates`: per weight array, every
  client's `trained - weights` stacked, `[clients, ...]`."""
  loss_fn = model_ops.trainable_loss_fn(model)
  specs = tuple(tf.TensorSpec(np.shape(w), tf.float32)
                for w in model.initial_weights[0])

  def train(weights, batches):
    num_clients = tf.size(batches.client_splits) - 1
    updates = tuple(tf.TensorArray(tf.float32, size=num_clients,
                                   element_shape=s.shape) for s in specs)
    for c in tf.range(num_clients):
      local = tuple(weights)
      # As TFF's client work starts it: its values as tensors.
      state = tf.nest.map_structure(tf.convert_to_tensor,
                                    optimizer.initialize(specs))
      for b in tf.range(batches.client_splits[c],
                        batches.client_splits[c + 1]):
        start, stop = batches.row_splits[b], batches.row_splits[b + 1]
        _, gradients = model_ops.trainable_loss_and_gradient(
            loss_fn, local, (batches.x[start:stop], batches.y[start:stop]))
        state, local = optimizer.next(state, local, tuple(gradients))
        local = tuple(local)
      updates = tuple(u.write(c, l - w)
                      for u, l, w in zip(updates, local, weights))
    return tuple(u.stack() for u in updates)

  return train


def _batch_specs(model: tff.learning.models.FunctionalModel) -> ClientBatches:
  x_spec, y_spec = model.input_spec
  rows = tf.TensorSpec([None], tf.int32)
  return ClientBatches(x_spec, y_spec, rows, rows)


def build_clients_floor(model: tff.learning.models.FunctionalModel,
                        optimizer: tff.learning.optimizers.Optimizer):
  """The floor's client training alone, one client after another.

  Returns:
    A `tf.function` `(weights, batches) -> updates`, `batches` a
    `ClientBatches`, `updates` per weight array every client's `trained -
    weights` stacked `[clients, ...]`: what `build_client_training` gives
    as each client's update.
  """
  weight_specs = tuple(tf.TensorSpec(np.shape(w), tf.float32)
                       for w in model.initial_weights[0])
  return tf.function(_clients_fn(model, optimizer), input_signature=[
      weight_specs, _batch_specs(model)])


def _fedbuff_merge(config: hybrid_config.Config):
  """FedBuff's merge: `x + eta_g mean(buffer)`."""

  def merge(state, buffer):
    size = buffer[0].shape[0]
    return state._replace(weights=tuple(
        w + config.server_lr * tf.reduce_sum(b, axis=0) / size
        for w, b in zip(state.weights, buffer)))

  return merge


def _median(values):
  """np.median of a 1-D tensor, 0 when it is empty."""
  ordered = tf.sort(values)
  n = tf.size(ordered)
  return tf.cond(n > 0, lambda: (ordered[(n - 1) // 2] + ordered[n // 2]) / 2,
                 lambda: tf.constant(0.0, values.dtype))


def _enter_atlas(state, buffer):
  """`feddle_atlas.insert_anchor` for every update of `buffer`.

  Returns:
    `(anchors, is_new, filled)`: the anchors, and float64 `[M]` masks of
    the buffer's slots and of the slots holding an anchor.
  """
  size = buffer[0].shape[0]
  atlas_size = state.scores.shape[0]
  # The free slots (-inf) first in index order, as the atlas appends, then
  # the anchors of the smallest scores (ties: the lowest index).
  _, slots = tf.math.top_k(-state.scores, size)
  index = slots[:, tf.newaxis]
  anchors = tuple(tf.tensor_scatter_nd_update(a, index, b)
                  for a, b in zip(state.anchors, buffer))
  is_new = tf.tensor_scatter_nd_update(
      tf.zeros([atlas_size], tf.float64), index, tf.ones([size], tf.float64))
  filled = tf.logical_or(state.scores > -np.inf, is_new > 0)
  return anchors, is_new, filled


def _normalized(anchors, is_new, server_lr: float):
  """Eq. 4's anchors abar_m and FedBuff's c' (`feddle_atlas`)."""
  atlas_size = anchors[0].shape[0]
  norms = tf.sqrt(tf.add_n([
      tf.reduce_sum(tf.reshape(tf.square(tf.cast(a, tf.float64)),
                               [atlas_size, -1]), axis=1) for a in anchors]))
  median = _median(tf.boolean_mask(norms, norms > 0))
  # Zero anchors stay zero and get c'_m = 0 (divide_no_nan's 0).
  scale = tf.math.divide_no_nan(median, norms)
  normalized = tuple(
      a * tf.reshape(tf.cast(scale, a.dtype), [-1] + [1] * (a.shape.rank - 1))
      for a in anchors)
  size = tf.reduce_sum(is_new)
  prior = is_new * (server_lr / size) * tf.math.divide_no_nan(norms, median)
  return normalized, tf.cast(prior, tf.float32)


def _feddle_merge(model: tff.learning.models.FunctionalModel,
                  config: hybrid_config.Config, server, diagnostics=None):
  """Feddle's merge in domain (`feddle.feddle_step`), its search on the
  stacked server batches `server` (`server_batches`); with `diagnostics`
  (`diagnostic_set`), also its diagnostic losses over that set at c' and
  at the result (`FloorState.losses`)."""
  loss_fn = feddle.model_loss_fn(model)
  server_x, server_y = (tf.constant(a) for a in server)
  rate = tf.constant(config.feddle_search_lr, tf.float32)
  if diagnostics is not None:
    diagnostics = tuple(tf.constant(a) for a in diagnostics)

  def merge(state, buffer):
    anchors, is_new, filled = _enter_atlas(state, buffer)
    stacked, prior = _normalized(anchors, is_new, config.server_lr)
    c = prior
    m = v = tf.zeros_like(prior)
    # In domain the fallback term lambda (c - c') has lambda = 0.
    for t in tf.range(tf.shape(server_y)[0]):
      _, gradient = anchor_merging.loss_and_coefficient_gradient(
          loss_fn, state.weights, stacked, c, (server_x[t], server_y[t]))
      step = tf.cast(t, tf.float32) + 1.0
      m = _BETA1 * m + (1.0 - _BETA1) * gradient
      v = _BETA2 * v + (1.0 - _BETA2) * tf.square(gradient)
      m_hat = m / (1.0 - tf.pow(_BETA1, step))
      v_hat = v / (1.0 - tf.pow(_BETA2, step))
      c = c - rate * m_hat / (tf.sqrt(v_hat) + _EPSILON)
    weights = anchor_merging.merge_tf(state.weights, stacked, c)
    scores = tf.where(filled, tf.abs(tf.cast(c, tf.float64)),
                      tf.constant(-np.inf, tf.float64))
    losses = state.losses
    if diagnostics is not None:
      # Two forward passes over the server set: the merge at c' (FedBuff's
      # step) and at the searched c.
      losses = tf.stack([tf.cast(loss_fn(anchor_merging.merge_tf(
          state.weights, stacked, at), diagnostics), tf.float32)
                         for at in (prior, c)])
    return FloorState(tuple(weights), anchors, scores, losses)

  return merge


def build_floor_round(model: tff.learning.models.FunctionalModel,
                      method: str, config: hybrid_config.Config,
                      server=None, diagnostics=None):
  """The compute floor of a round of `method`: one plain `tf.function`.

  Args:
    model: The binary's CNN (`cnn.build_cnn` as `hybrid_runs` builds it).
    method: `fedbuff` or `feddle_id` (`METHODS`).
    config: The binary's settings: its client optimizer, `buffer_size`,
      `server_lr` and, for Feddle, the atlas size and search.
    server: Feddle's stacked server batches (`server_batches`).
    diagnostics: Feddle's diagnostic set (`diagnostic_set`), to compute its
      diagnostic losses at every merge as the binary does; `None`: not.

  Returns:
    A `tf.function` `(state, batches, merges) -> FloorState`: the round's
    clients (`batches`, a `ClientBatches`) train from `state.weights`,
    then `merges` (an int32 scalar) merges each take `buffer_size` of their
    updates, cycled, as a full buffer.

  Raises:
    ValueError: For a method without a floor, or settings it does not take
      (FedBuff's staleness weights, another search optimizer than Adam).
  """
  _check(method, config)
  # The binary's client optimizer itself: the floor takes exactly its steps.
  train = _clients_fn(model, hybrid_runs.client_optimizer(config))
  merge = (_feddle_merge(model, config, server, diagnostics)
           if method == hybrid_config.FEDDLE_ID else _fedbuff_merge(config))
  state_spec = tf.nest.map_structure(
      tf.TensorSpec.from_tensor,
      initial_state(model, method, config, diagnostics is not None))
  size = config.buffer_size

  @tf.function(input_signature=[state_spec, _batch_specs(model),
                                tf.TensorSpec([], tf.int32)])
  def floor_round(state, batches, merges):
    updates = train(state.weights, batches)
    num_clients = tf.shape(updates[0])[0]
    for i in tf.range(merges):
      take = (i * size + tf.range(size)) % num_clients
      state = merge(state, tuple(tf.gather(u, take) for u in updates))
    return state

  return floor_round


class FloorRunner:
  """Runs floor rounds of a method from the model's initial weights."""

  def __init__(self, model: tff.learning.models.FunctionalModel,
               method: str, data: hybrid_config.Data,
               config: hybrid_config.Config, seed: int,
               with_diagnostics: bool = False):
    # Traced on the first call, as TFF compiles on its first: the first
    # round includes tracing.
    feddle_method = method == hybrid_config.FEDDLE_ID
    server = server_batches(data, config, seed) if feddle_method else None
    diagnostics = (diagnostic_set(data, config, seed)
                   if feddle_method and with_diagnostics else None)
    self._round_fn = build_floor_round(model, method, config, server,
                                       diagnostics)
    self._state = initial_state(model, method, config,
                                diagnostics is not None)

  @property
  def state(self) -> FloorState:
    return self._state

  def run_round(self, batches: ClientBatches, merges: int) -> None:
    # Eager CPU execution is synchronous: the result is computed on return.
    self._state = self._round_fn(self._state, batches,
                                 tf.constant(merges, tf.int32))
