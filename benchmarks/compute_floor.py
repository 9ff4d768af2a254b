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
"""The compute floor of a round of each algorithm: its arithmetic without TFF.

Benchmarks report a process's seconds per round against the floor of its
algorithm: the same SGD steps on the same batches in one plain
`tf.function`, with no TFF runtime, no metrics, no serialization, and no
sampling, reading or selection of data. What a process takes beyond its
floor is the cost of simulating the round (dispatch, data movement,
aggregation, metrics, drawing central batches and examples).

A floor round is FedAvg's (every client's K local SGD steps from x^(t), one
client after another, and the server's mean update at learning rate 1) and
the algorithm's central part, a `CentralPart` (Augenstein et al.,
arXiv:2205.13655, Algorithms 1-2, with the defaults through which
`tff_mixed.algorithms.registry` builds them: SGD at eta on the clients and
in the central steps, eta_s = eta_m = 1, w_f = w_c = 0.5, K_c = K):

*   FedAvg: none.
*   Parallel Training: K_c central SGD steps from x^(t), one per central
    batch, giving x_c; `x^(t+1) = x^(t) + w_f (x_f - x^(t)) + w_c (x_c -
    x^(t))`.
*   1-way GT (Algorithm 2): g~_c, f_c's gradient at x^(t) on the round's
    first central batch; every client step uses `w_f g_i + w_c g~_c`;
    `x^(t+1) = x_f`.
*   2-way GT (Algorithm 1, the builder's default
    `augmenting_central_gradient='previous_round_mean'`): clients step with
    `w_f g_i + w_c g~_c^(t)`, the K_c central steps with `w_c g_c + w_f
    g~_f^(t)`, merged as in Parallel Training; the round yields g~_c^(t+1),
    the mean of its K_c central gradients, and g~_f^(t+1), recovered from
    the mean update (appendix A.2, eq. 10). Both are carried in
    `FloorState`.
*   Example Transfer (arXiv:2111.12150, Algorithm 3): no central
    arithmetic. Its clients take FedAvg's K steps of the same batch size on
    their own examples with their transferred central examples merged and
    shuffled in (`transferred_batches`): the work of FedAvg's floor on other
    batches; the draw, selection and shuffle are data movement.

A floor trains on given batches: `central_batches` samples a round's
central batches as the processes do (`central_objective.sample_batch`),
`transferred_batches` builds Example Transfer's client batches with the
library's own draw and merge. Benchmarks feed the same batches to every
floor round, where a process samples new ones each round: the same
arithmetic on other numbers. tests/round_time_test.py checks that floor
rounds give the weights of rounds of each algorithm's TFF process.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.algorithms import registry
from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import client_work
from tff_mixed.core import example_store
from tff_mixed.core import transfer_select

# Where the g~_c the clients add comes from (`CentralPart`).
AT_MODEL = 'at_model'
PREVIOUS_ROUND_MEAN = 'previous_round_mean'
_AUGMENTING_GRADIENTS = (None, AT_MODEL, PREVIOUS_ROUND_MEAN)


class CentralPart(NamedTuple):
  """What an algorithm's round computes besides FedAvg's, for its floor.

  Attributes:
    augmenting_gradient: The g~_c every client step adds as `w_c g~_c`
      (the step then being `w_f g_i + w_c g~_c`): `None` (no g~_c),
      `AT_MODEL` (f_c's gradient at x^(t) on the round's first central
      batch: 1-way GT) or `PREVIOUS_ROUND_MEAN` (the state's, and each
      round's central steps give the next round's as the mean of their
      gradients: 2-way GT).
    central_steps: Whether the server takes one SGD step per central batch
      from x^(t), giving x_c, merged with the clients' x_f by the mixing
      weights (Parallel Training, 2-way GT).
    federated_gradient: Whether the central steps add `w_f g~_f`, the
      state's, and the round recovers the next g~_f from the mean update
      (eq. 10; 2-way GT).
    federated_weight: w_f.
    central_weight: w_c.
  """

  augmenting_gradient: Optional[str] = None
  central_steps: bool = False
  federated_gradient: bool = False
  federated_weight: float = 0.5
  central_weight: float = 0.5

  def num_central_batches(self, central_steps: int) -> int:
    """Central batches a round reads, K_c being `central_steps`."""
    if self.central_steps:
      return central_steps
    return int(self.augmenting_gradient == AT_MODEL)


# Each synchronous algorithm of the registry, as round_time builds it.
FLOOR_PARTS = {
    registry.FEDAVG: CentralPart(),
    registry.PARALLEL_TRAINING: CentralPart(central_steps=True),
    registry.ONE_WAY_GT: CentralPart(augmenting_gradient=AT_MODEL),
    registry.TWO_WAY_GT: CentralPart(
        augmenting_gradient=PREVIOUS_ROUND_MEAN, central_steps=True,
        federated_gradient=True),
    registry.EXAMPLE_TRANSFER: CentralPart(),
}


def central_part(algorithm: str, **weights: float) -> CentralPart:
  """The `CentralPart` of the floor of `algorithm` (a registry name);
  `weights`: `federated_weight` and `central_weight` other than 0.5."""
  if algorithm not in FLOOR_PARTS:
    raise ValueError(f'No compute floor for algorithm {algorithm!r}; there '
                     f'are floors for {list(FLOOR_PARTS)}.')
  return FLOOR_PARTS[algorithm]._replace(**weights)


def _check_part(part: CentralPart) -> None:
  if part.augmenting_gradient not in _AUGMENTING_GRADIENTS:
    raise ValueError(
        f'`augmenting_gradient` must be one of {_AUGMENTING_GRADIENTS}, got '
        f'{part.augmenting_gradient!r}.')
  carried = part.augmenting_gradient == PREVIOUS_ROUND_MEAN
  if (carried or part.federated_gradient) and not part.central_steps:
    raise ValueError('A carried g~_c and g~_f come from central steps: '
                     'they need `central_steps=True`.')
  if part.federated_gradient and part.federated_weight <= 0:
    raise ValueError('Recovering g~_f divides by w_f: `federated_weight` '
                     f'must be positive, got {part.federated_weight}.')


class FloorState(NamedTuple):
  """What a floor round carries to the next.

  Attributes:
    trainable: x^(t), the model's trainable weights.
    central_gradient: g~_c^(t) (`PREVIOUS_ROUND_MEAN`), else `()`.
    federated_gradient: g~_f^(t) (`federated_gradient`), else `()`.
  """

  trainable: Any
  central_gradient: Any = ()
  federated_gradient: Any = ()


def initial_state(model: tff.learning.models.FunctionalModel,
                  part: CentralPart = CentralPart()) -> FloorState:
  """The model's initial weights and zero augmenting gradients (round 0)."""
  trainable = tuple(tf.constant(w) for w in model.initial_weights[0])

  def zeros_if(present):
    return tuple(tf.zeros_like(w) for w in trainable) if present else ()

  return FloorState(
      trainable,
      zeros_if(part.augmenting_gradient == PREVIOUS_ROUND_MEAN),
      zeros_if(part.federated_gradient))


def _clients_and_steps(x):
  """The leading `[clients, K]` of the batches `x` (a structure)."""
  shape = tf.shape(tf.nest.flatten(x)[0])
  return shape[0], shape[1]


def _mean_client_update(gradient_fn, trainable, x, y, learning_rate,
                        step_gradient):
  """The clients' mean of `x^(t) - x_i` after K SGD steps each.

  Clients hold equal numbers of examples, so FedAvg's example-weighted mean
  is the plain mean. They run one after another: the floor of the work,
  which TFF's worker may spread over several threads. `x` and `y` may be
  structures of arrays (a model whose inputs are several tensors), each
  indexed `[client, step]`.
  """
  num_clients, num_steps = _clients_and_steps(x)
  total_update = tuple(tf.zeros_like(w) for w in trainable)
  for c in tf.range(num_clients):
    local = trainable
    for k in tf.range(num_steps):
      batch_x, batch_y = tf.nest.map_structure(lambda a: a[c, k], (x, y))
      gradient = step_gradient(gradient_fn(local, batch_x, batch_y))
      local = tuple(w - learning_rate * g for w, g in zip(local, gradient))
    total_update = tuple(
        t + (w0 - w) for t, w0, w in zip(total_update, trainable, local))
  scale = 1.0 / tf.cast(num_clients, tf.float32)
  return tuple(scale * t for t in total_update)


def _mean_client_update_at_once(gradient_fn, trainable, x, y, learning_rate,
                                step_gradient):
  """`_mean_client_update` with every client's step k computed at once.

  The clients' weights are stacked and each step's gradients taken by
  `tf.vectorized_map` over the clients, as a lockstep group trains its
  members (`tff_mixed.simulation.lockstep`): for a model of many small
  operations (a GRU on batches of 8) one batched operation costs far less
  than one per client, so this is that model's floor.
  """
  num_clients, num_steps = _clients_and_steps(x)
  local = tuple(tf.repeat(w[tf.newaxis], num_clients, axis=0)
                for w in trainable)
  for k in tf.range(num_steps):
    batch_x, batch_y = tf.nest.map_structure(lambda a: a[:, k], (x, y))
    gradients = tf.vectorized_map(
        lambda args: step_gradient(gradient_fn(*args)),
        (local, batch_x, batch_y))
    local = tuple(w - learning_rate * g for w, g in zip(local, gradients))
  return tuple(tf.reduce_mean(w0[tf.newaxis] - w, axis=0)
               for w0, w in zip(trainable, local))


def _central_steps(gradient_fn, trainable, central_x, central_y,
                   learning_rate, step_gradient):
  """One SGD step per central batch from x^(t): `(x_c, mean g_c)`."""
  x_c = trainable
  gradient_sum = tuple(tf.zeros_like(w) for w in trainable)
  num_steps = tf.shape(central_x)[0]
  for s in tf.range(num_steps):
    gradient = gradient_fn(x_c, central_x[s], central_y[s])
    gradient_sum = tuple(a + g for a, g in zip(gradient_sum, gradient))
    x_c = tuple(w - learning_rate * g
                for w, g in zip(x_c, step_gradient(gradient)))
  scale = 1.0 / tf.cast(num_steps, tf.float32)
  return x_c, tuple(scale * g for g in gradient_sum)


def build_algorithm_floor(model: tff.learning.models.FunctionalModel,
                          learning_rate: float,
                          part: CentralPart = CentralPart(),
                          central_loss_fn: Optional[Callable[
                              [Any, Any, Any], tf.Tensor]] = None,
                          clients_at_once: bool = False):
  """The compute floor of an algorithm: one round as one plain `tf.function`.

  FedAvg's clients and server mean, and `part`'s central work (see the
  module docstring). No metrics, no TFF, no non-finite guard.

  Args:
    model: The `FunctionalModel`.
    learning_rate: eta, the SGD learning rate of the clients and of the
      central steps (the server and merge steps use 1).
    part: The algorithm's `CentralPart` (`central_part(name)`); the default
      is FedAvg's.
    central_loss_fn: f_c on one central batch, `fn(trainable, central_x[s],
      central_y[s]) -> loss`; `None`: the model's loss on the batch
      (datacenter examples). A data-free f_c (a regularizer such as the
      MovieLens spreadout) ignores its batches, which then only count the
      central steps: give `central_x` and `central_y` any leading size
      `part.num_central_batches(K_c)` (`np.zeros([n])`).
    clients_at_once: Take every client's step k at once, vectorized over
      the clients (`_mean_client_update_at_once`), instead of one client
      after another: the floor of a model whose steps are many small
      operations.

  Returns:
    A `tf.function` `(state, x, y, central_x, central_y) -> FloorState`,
    `state` a `FloorState` (`initial_state`), `x: float32[clients, K,
    batch, ...]`, `y: float32[clients, K, batch, 1]` (or structures of
    arrays indexed `[client, step]` alike, as the model takes), and the
    round's central batches `central_x: float32[batches, |B_c|, ...]`,
    `central_y: float32[batches, |B_c|, 1]` (`part.num_central_batches(K_c)`
    of them; `None` when it is 0).

  Raises:
    ValueError: If `part` is inconsistent.
  """
  _check_part(part)
  non_trainable = tuple(tf.constant(w) for w in model.initial_weights[1])
  w_f, w_c = part.federated_weight, part.central_weight

  def gradient_fn(weights, x, y):
    with tf.GradientTape() as tape:
      tape.watch(weights)
      output = model.predict_on_batch((weights, non_trainable), x,
                                      training=True)
      loss = model.loss(output=output, label=y)
    # An embedding lookup's gradient comes as IndexedSlices; the SGD step
    # on the table is dense, as the processes' client work takes it.
    return tuple(tf.convert_to_tensor(g)
                 for g in tape.gradient(loss, weights))

  def central_gradient_fn(weights, x, y):
    if central_loss_fn is None:
      return gradient_fn(weights, x, y)
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = central_loss_fn(weights, x, y)
    # A regularizer of some weights (the spreadout: the table alone) has
    # zero gradient for the others.
    return tuple(tf.convert_to_tensor(g) for g in tape.gradient(
        loss, weights, unconnected_gradients=tf.UnconnectedGradients.ZERO))

  def mixed(gradient, gradient_weight, other, other_weight):
    # w_f g_i + w_c g~_c on clients, w_c g_c + w_f g~_f in central steps.
    return tuple(gradient_weight * g + other_weight * o
                 for g, o in zip(gradient, other))

  @tf.function
  def floor_round(state, x, y, central_x, central_y):
    trainable = tuple(state.trainable)
    augmenting = None
    if part.augmenting_gradient == AT_MODEL:
      augmenting = central_gradient_fn(trainable, central_x[0], central_y[0])
    elif part.augmenting_gradient == PREVIOUS_ROUND_MEAN:
      augmenting = tuple(state.central_gradient)
    client_step = ((lambda g: g) if augmenting is None else
                   (lambda g: mixed(g, w_f, augmenting, w_c)))
    client_update = (_mean_client_update_at_once if clients_at_once
                     else _mean_client_update)
    mean_update = client_update(gradient_fn, trainable, x, y, learning_rate,
                                client_step)
    # SERVEROPTIMIZER: SGD at learning rate 1 on the mean update.
    new = tuple(w - u for w, u in zip(trainable, mean_update))
    central_gradient = state.central_gradient
    federated_gradient = state.federated_gradient
    if part.central_steps:
      central_step = (
          (lambda g: g) if not part.federated_gradient else
          (lambda g: mixed(g, w_c, state.federated_gradient, w_f)))
      x_c, mean_central = _central_steps(central_gradient_fn, trainable,
                                         central_x,
                                         central_y, learning_rate,
                                         central_step)
      # MERGEOPTIMIZER: SGD at learning rate 1 on the merged delta.
      new = tuple(w + w_f * (f - w) + w_c * (c - w)
                  for w, f, c in zip(trainable, new, x_c))
      if part.augmenting_gradient == PREVIOUS_ROUND_MEAN:
        central_gradient = mean_central
    if part.federated_gradient:
      # Eq. 10: K SGD steps at eta moved the clients by eta K times their
      # mean step gradient `w_f g~_f + w_c g~_c`.
      eta_k = learning_rate * tf.cast(_clients_and_steps(x)[1], tf.float32)
      mean_step = tuple(u / eta_k for u in mean_update)
      if augmenting is not None:
        mean_step = tuple(m - w_c * a for m, a in zip(mean_step, augmenting))
      federated_gradient = tuple(m / w_f for m in mean_step)
    return FloorState(new, central_gradient, federated_gradient)

  return floor_round


def build_floor_round(model: tff.learning.models.FunctionalModel,
                      learning_rate: float):
  """FedAvg's compute floor, on the trainable weights alone.

  Args:
    model: The `FunctionalModel`.
    learning_rate: The client SGD learning rate.

  Returns:
    `(trainable, x, y) -> new trainable`, `build_algorithm_floor`'s round
    of FedAvg: `x: float32[clients, K, batch, ...]`, `y: float32[clients,
    K, batch, 1]`.
  """
  round_fn = build_algorithm_floor(model, learning_rate)

  def floor_round(trainable, x, y):
    return round_fn(FloorState(tuple(trainable)), x, y, None, None).trainable

  return floor_round


def _run_in_new_graph(build_fn, feeds=()):
  """Runs the tensors `build_fn(*placeholders)` returns, once per feed.

  In a graph of its own, as TFF traces its computations: without a
  graph-level seed, so that tf.data's seeded shuffles draw what the
  processes' do (a `tf.function` would inherit a global seed).

  Args:
    build_fn: Builds the fetches from placeholders shaped like each feed's
      arrays (none without feeds).
    feeds: Tuples of numpy arrays; none: one run without placeholders.

  Returns:
    One numpy result per feed (without feeds, the one result).
  """
  with tf.Graph().as_default() as graph:
    if not feeds:
      fetches = build_fn()
      with tf.compat.v1.Session(graph=graph) as session:
        return session.run(fetches)
    placeholders = tuple(tf.compat.v1.placeholder(a.dtype, a.shape)
                         for a in feeds[0])
    fetches = build_fn(*placeholders)
    with tf.compat.v1.Session(graph=graph) as session:
      return [session.run(fetches, dict(zip(placeholders, feed)))
              for feed in feeds]


def central_batches(objective: central_lib.CentralObjective,
                    batch_size: int, seed: int, round_num: int,
                    num_batches: int) -> Optional[tuple[np.ndarray,
                                                        np.ndarray]]:
  """Central batches `0..num_batches-1` of a round, as a process samples them.

  Args:
    objective: f_c, with central examples `(x, y)` (arrays or an
      `ExampleStore`).
    batch_size: |B_c|.
    seed: The process seed.
    round_num: The round.
    num_batches: How many (`CentralPart.num_central_batches`).

  Returns:
    `(central_x, central_y)`, `float32[num_batches, |B_c|, ...]`, or `None`
    for no batches.

  Raises:
    ValueError: If f_c has no examples (a regularizer).
  """
  if not objective.has_data:
    raise ValueError(f'The floor takes central batches of examples; the '
                     f'central objective {objective.name!r} has none.')
  if num_batches == 0:
    return None

  def sample():
    batches = [central_lib.split_batch(central_lib.sample_batch(
        objective, batch_size, seed, tf.constant(round_num, tf.int32),
        tf.constant(step, tf.int32))) for step in range(num_batches)]
    return tuple(tf.stack(list(part)) for part in zip(*batches))

  return _run_in_new_graph(sample)


def _read_examples(objective: central_lib.CentralObjective, keys):
  if isinstance(objective.data, example_store.ExampleStore):
    return objective.data.read(keys)
  return tf.nest.map_structure(lambda a: tf.gather(tf.constant(a), keys),
                               objective.data)


def transferred_batches(objective: central_lib.CentralObjective,
                        x: np.ndarray, y: np.ndarray, *,
                        examples_per_client: int, seed: int,
                        round_num: int) -> tuple[np.ndarray, np.ndarray]:
  """Example Transfer's client batches in round `round_num`.

  Each client draws its central examples (`transfer_select.draw`, from a
  fingerprint of its data, `seed` and the round), merges and shuffles them
  into its own examples and batches them (`client_work.MergedData`), as the
  process's clients do; the result is its first K batches, those its K
  steps train on.

  Args:
    objective: f_c with central examples `(x, y)`.
    x: float32[clients, K, batch, ...], the clients' own batches.
    y: float32[clients, K, batch, 1].
    examples_per_client: Central examples sent to each client.
    seed: The process seed.
    round_num: The round.

  Returns:
    `(x, y)` of the same shapes: the batches the clients train on.
  """
  k, batch = x.shape[1], x.shape[2]
  num_examples = objective.num_examples
  merge = client_work.MergedData(batch)

  def client_batches(client_x, client_y):
    dataset = tf.data.Dataset.from_tensor_slices((client_x, client_y)).batch(
        batch)
    drawn = transfer_select.draw(
        dataset, tf.constant(round_num, tf.int32), seed=seed,
        num_keys=min(examples_per_client, num_examples),
        num_examples=num_examples, redraw_each_round=True)
    examples = tf.data.Dataset.from_tensor_slices(
        tuple(central_lib.split_batch(_read_examples(objective,
                                                     drawn.keys))))
    merged = merge(dataset, examples, drawn.shuffle_seed)
    return merged.take(k).batch(k, drop_remainder=True).get_single_element()

  feeds = [(x[c].reshape((k * batch,) + x.shape[3:]),
            y[c].reshape((k * batch,) + y.shape[3:]))
           for c in range(x.shape[0])]
  clients = _run_in_new_graph(client_batches, feeds)
  return (np.stack([c[0] for c in clients]),
          np.stack([c[1] for c in clients]))


class FloorRunner:
  """Runs rounds of an algorithm's floor from the model's initial weights."""

  def __init__(self, model: tff.learning.models.FunctionalModel,
               learning_rate: float, part: CentralPart = CentralPart(),
               central_loss_fn=None, clients_at_once: bool = False):
    # Traced on first call (and per cohort shape), as TFF compiles on first
    # call: the first round of each cohort includes tracing.
    self._round_fn = build_algorithm_floor(model, learning_rate, part,
                                           central_loss_fn, clients_at_once)
    self._part = part
    self._initial = initial_state(model, part)
    self._state = self._initial
    self._inputs = None

  def set_clients(self, x: np.ndarray, y: np.ndarray,
                  central: Optional[tuple[np.ndarray, np.ndarray]] = None
                  ) -> None:
    """Restarts from the initial weights, training on these batches.

    Args:
      x: float32[clients, K, batch, ...], as `build_algorithm_floor` takes
        (or a structure of arrays).
      y: float32[clients, K, batch, 1] (or a structure of arrays).
      central: `(central_x, central_y)` (`central_batches`), if the
        algorithm reads central batches.

    Raises:
      ValueError: If the algorithm reads central batches and none are given.
    """
    if central is None and self._part.num_central_batches(1) > 0:
      raise ValueError('This floor takes central steps or a central '
                       'gradient: give `central` batches.')
    central_x, central_y = ((None, None) if central is None else
                            (tf.constant(central[0]),
                             tf.constant(central[1])))
    self._inputs = (tf.nest.map_structure(tf.constant, x),
                    tf.nest.map_structure(tf.constant, y), central_x,
                    central_y)
    self._state = self._initial

  @property
  def trainable(self) -> tuple[np.ndarray, ...]:
    """The trainable weights after the rounds run so far."""
    return tuple(w.numpy() for w in self._state.trainable)

  def run_round(self) -> None:
    # Eager CPU execution is synchronous: the result is computed on return.
    self._state = self._round_fn(self._state, *self._inputs)
