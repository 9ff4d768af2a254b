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
"""Client work: the local training of one client in a mixed FL round.

Every algorithm runs the same local loop and differs only in what is added to
plain FedAvg local SGD (arXiv:2205.13655, Algorithms 1-2 CLIENTUPDATE; and
"Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift", arXiv:2111.12150, Algorithms 3-4). What is
added is chosen by two rules of `ClientWorkConfig`, each a small object:

* the step rule: `MixedGradient(w_f, w_c)` for Gradient Transfer (1-way and
  2-way), every local step using the gradient of the mixed loss,
  `w_f * g_i + w_c * g~_c`, where `g~_c` is the central gradient the
  distributor sent this round; `PlainGradient()` otherwise;
* the local data rule: `MergedData(batch_size)` for Example Transfer (and
  FedAvg with shared data), the client's own central examples
  (`transfer_select.py`) merged and shuffled into the local examples before
  batching; `OwnData()` otherwise.

Parallel Training is plain FedAvg local training: both defaults.

`build_client_update_fn` is the pure-TF loop; `build_client_work` wraps it,
behind a distributor's `receive`, in the computation the process maps over
the clients: `(<received..., {B*}> -> ClientOutput)`, its parameter types
taken from the distributor.

With no augmenting gradient and no transferred examples the computation is
step for step the one of TFF's `build_functional_model_delta_update`, which is
what makes the `w_c = 0` equivalence with `build_weighted_fed_avg` exact.
"""

import collections
from typing import Any, NamedTuple, Optional

import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_objective
from tff_mixed.core import distributors
from tff_mixed.core import model_types
from tff_mixed.core import transfer_select


class ClientOutput(NamedTuple):
  """What one client computes in a round.

  Attributes:
    update: The model update `x^(t) - x_i^(t,K_i)` (TFF's sign convention: a
      pseudo-gradient), a tuple like the trainable weights. Zeroed if any
      value is non-finite.
    update_weight: The aggregation weight p_i (float32): the number of
      examples trained on, or 1 for uniform weighting; 0 if the update was
      non-finite.
    metrics: The model's unfinalized metrics state (reset if non-finite).
    probe_gradient: Opt-in diagnostic: the local loss gradient at x^(t) on
      the first local batch (the g_i(x^(t)) of the paper's eq. 7), or `()`:
      the first step's gradient before any augmenting term, zeros for a
      client without data.
    probe_norm_squared: With `probe_gradient`, its squared global norm
      |g_i(x^(t))|^2 (float32; the server's sigma^2 estimate needs the
      cohort's mean of it, `round_estimates.py`), else
      `()`.
    clients: `client_counts`: this client counted in the cohort, and
      whether its update was dropped as non-finite or it trained on no
      examples (int32 each; their sums over the cohort are
      metrics['client_work']['clients']).
    probe_weight: With `probe_gradient`, 1 (float32): the weight of this
      output's probe values in their mean over the cohort (an output that
      stands for several clients weighs their count), else `()`.
  """

  update: Any
  update_weight: tf.Tensor
  metrics: Any
  probe_gradient: Any
  probe_norm_squared: Any = ()
  clients: Any = ()
  probe_weight: Any = ()


# The counts each client reports (`client_counts`), in order.
CLIENT_COUNT_NAMES = ('count', 'non_finite', 'without_data')


def client_counts(has_non_finite, num_examples):
  """`OrderedDict(count=1, non_finite, without_data)` of one client (int32).

  What the process sums over the cohort so that a user learns how many
  clients a round had and how many of them carried no update: `non_finite`
  is 1 if the client's update was dropped as non-finite (`has_non_finite`,
  int32), `without_data` 1 if it trained on no examples (`num_examples`).
  """
  return collections.OrderedDict(zip(CLIENT_COUNT_NAMES, (
      tf.constant(1, tf.int32), tf.cast(has_non_finite, tf.int32),
      tf.cast(tf.equal(num_examples, 0), tf.int32))))


def zero_client_counts():
  """`client_counts`' structure, all zero: the counts of no client."""
  return collections.OrderedDict(
      (name, tf.constant(0, tf.int32)) for name in CLIENT_COUNT_NAMES)


class PlainGradient(NamedTuple):
  """Local steps on the client's own gradient g_i (FedAvg, Parallel Training).

  A client step rule: `rule(gradient, augmenting_gradient)` gives the
  gradient CLIENTOPTIMIZER applies; `uses_augmenting_gradient` says whether
  the rule reads g~_c, which the distributor must then send.
  """

  uses_augmenting_gradient = False

  def __call__(self, gradient, augmenting_gradient):
    del augmenting_gradient  # Not sent.
    return gradient


class MixedGradient(NamedTuple):
  """Local steps on `w_f g_i + w_c g~_c` (Gradient Transfer).

  The gradient of the mixed loss with the client batch standing in for f_f
  (arXiv:2205.13655, Algorithms 1-2, CLIENTUPDATE), g~_c being the central
  gradient the distributor sent this round.
  """

  federated_weight: float
  central_weight: float
  uses_augmenting_gradient = True

  def __call__(self, gradient, augmenting_gradient):
    return tuple(self.federated_weight * g + self.central_weight * a
                 for g, a in zip(gradient, augmenting_gradient))


class OwnData(NamedTuple):
  """Local steps on the client's batches as given.

  A local data rule: `rule(dataset, transferred_examples, shuffle_seed)`
  gives the batches the client trains on, before the K-step cycling.
  """

  def __call__(self, dataset, transferred_examples, shuffle_seed):
    del transferred_examples, shuffle_seed  # None sent.
    return dataset


class MergedData(NamedTuple):
  """Local data merged with the transferred central examples.

  Example Transfer (arXiv:2111.12150, Algorithm 3): the client's own
  central examples are merged and shuffled into its local examples, then
  batched by `batch_size`, so that local batches mix both sources.
  """

  batch_size: int

  def __call__(self, dataset, transferred_examples, shuffle_seed):
    merged = dataset.unbatch().concatenate(transferred_examples)
    return merged.shuffle(
        buffer_size=transfer_select.SHUFFLE_BUFFER_SIZE,
        seed=tf.cast(shuffle_seed, tf.int64),
        reshuffle_each_iteration=False).batch(self.batch_size)


class ClientWorkConfig(NamedTuple):
  """Static configuration of the local loop.

  What an algorithm adds to FedAvg's local SGD is a rule, not a flag: a new
  choice is a new rule object (any callable with the rule's signature).

  Attributes:
    weighting: The `tff.learning.ClientWeighting` of updates.
    num_steps: If set, every client takes exactly this many local steps,
      cycling through its data (the paper's fixed K); if `None`, one pass over
      the client dataset as given (TFF FedAvg semantics).
    step_gradient: The step rule: `PlainGradient()` or `MixedGradient(w_f,
      w_c)`.
    local_data: The local data rule: `OwnData()` or `MergedData(batch_size)`
      (Example Transfer).
    with_probe_gradient: Whether to also return g_i(x^(t)) (the opt-in
      diagnostics, on any algorithm).
  """

  weighting: tff.learning.ClientWeighting
  num_steps: Optional[int]
  step_gradient: Any = PlainGradient()
  local_data: Any = OwnData()
  with_probe_gradient: bool = False


def _zero_all_if_any_non_finite(structure):
  """Returns (structure or zeros, 1 if any value was non-finite else 0)."""
  flat = tf.nest.flatten(structure)
  if not flat:
    return structure, tf.constant(0, tf.int32)
  all_finite = tf.reduce_all(
      [tf.reduce_all(tf.math.is_finite(t)) for t in flat])
  # The zeros are made in their branch: outside it they would be filled
  # for every client, a pass over the model's size each.
  return tf.cond(
      all_finite,
      lambda: (structure, tf.constant(0, tf.int32)),
      lambda: (tf.nest.map_structure(tf.zeros_like, structure),
               tf.constant(1, tf.int32)),
  )


def _guarded_update(update, check_finite):
  """`_zero_all_if_any_non_finite(update)`, unless `check_finite` is False.

  `check_finite` is `None` (always check: a client's own update before
  aggregation) or a scalar bool tensor: a client group's first pass over
  its members skips the check, a pass over the model's size per member,
  and checks their sum instead (`tff_mixed.simulation`).
  """
  if check_finite is None:
    return _zero_all_if_any_non_finite(update)
  return tf.cond(check_finite,
                 lambda: _zero_all_if_any_non_finite(update),
                 lambda: (update, tf.constant(0, tf.int32)))


def _batch_gradient(model, model_weights, batch):
  x, y = central_objective.split_batch(batch)
  trainable, non_trainable = model_weights
  with tf.GradientTape() as tape:
    tape.watch(trainable)
    output = model.predict_on_batch((trainable, non_trainable), x,
                                    training=True)
    loss = model.loss(output=output, label=y)
  gradients = central_objective.dense_gradients(
      tape.gradient(loss, trainable), trainable)
  return output, loss, gradients


def _training_dataset(config: ClientWorkConfig, dataset, transferred_examples,
                      shuffle_seed):
  """The batches the client trains on, in order."""
  dataset = config.local_data(dataset, transferred_examples, shuffle_seed)
  if config.num_steps is not None:
    dataset = dataset.repeat().take(config.num_steps)
  # tf.data would re-optimize (and autotune) this pipeline for every client
  # of every round, which costs more than the few local steps it feeds;
  # the elements, and so the results, are the same without it.
  options = tf.data.Options()
  options.experimental_optimization.apply_default_optimizations = False
  options.autotune.enabled = False
  return dataset.with_options(options)


def _build_step(model, config: ClientWorkConfig, optimizer, non_trainable,
                augmenting_gradient):
  """`reduce_fn(state, batch)`: one local step, for `tf.data` reduce."""

  def reduce_fn(state, batch, num_rows=None):
    (trainable, optimizer_state, metrics_state, num_examples, step,
     probe_gradient) = state
    output, loss, gradients = _batch_gradient(
        model, (trainable, non_trainable), batch)
    gradients = tuple(gradients)
    if config.with_probe_gradient:
      # The first step's gradient is taken at x^(t): it is g_i(x^(t)) on
      # the first batch trained on. Taking it from the training pass,
      # not from a pass of its own, keeps the diagnostic from changing
      # what is trained: a reshuffling dataset gives each pass its own
      # order.
      first = tf.equal(step, 0)
      probe_gradient = tuple(
          tf.where(first, g, p) for g, p in zip(gradients, probe_gradient))
    gradients = config.step_gradient(gradients, augmenting_gradient)
    optimizer_state, trainable = optimizer.next(optimizer_state, trainable,
                                                gradients)
    # Padded batches say their real rows (`num_rows`).
    batch_num_examples = (tf.shape(tf.nest.flatten(output)[0])[0]
                          if num_rows is None else num_rows)
    num_examples += tf.cast(batch_num_examples, tf.int64)
    _, y = central_objective.split_batch(batch)
    metrics_state = model.update_metrics_state(
        metrics_state,
        batch_output=tff.learning.models.BatchOutput(
            loss=loss, predictions=output, num_examples=batch_num_examples),
        labels=y)
    return (tuple(trainable), optimizer_state, metrics_state, num_examples,
            step + 1, probe_gradient)

  return reduce_fn


def _initial_state(model, config: ClientWorkConfig, optimizer,
                   initial_trainable):
  """The local loop's state before the first step (`_build_step`'s)."""
  trainable_specs = tuple(
      tf.TensorSpec.from_tensor(w) for w in initial_trainable)
  return (
      initial_trainable,
      optimizer.initialize(trainable_specs),
      model.initialize_metrics_state(),
      tf.constant(0, tf.int64),
      tf.constant(0, tf.int64),
      # Zeros for a client without data.
      tuple(tf.zeros_like(w) for w in initial_trainable)
      if config.with_probe_gradient else (),
  )


def _client_output(model, config: ClientWorkConfig, initial_trainable,
                   trainable, metrics_state, num_examples, probe_gradient,
                   check_finite=None):
  """The update, its weight and the metrics, guarded against non-finites."""
  update = tuple(
      tf.subtract(a, b) for a, b in zip(initial_trainable, trainable))
  update, has_non_finite = _guarded_update(update, check_finite)
  # As in TFF's FedAvg: a client with a non-finite update gets weight zero
  # and reports no metrics, so it cannot poison the model or the metrics.
  if config.weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:
    weight = tf.cast(num_examples, tf.float32)
  else:
    # Uniform weighting, but a client without data took no step: weight 0,
    # as by examples. With weight 1 its zero update would count in the mean
    # as a client that applied no `w_c g~_c`, while 2-way GT's recovery of
    # g~_f (finalizer.py) removes `w_c g~_c` from every weight as if the
    # whole cohort had applied it (from the non-table weights under
    # federated_select, which counts only the rows a client holds): g~_f
    # would be off by `(empty share) (w_c / w_f) g~_c`.
    weight = tf.where(num_examples > 0, tf.constant(1.0, tf.float32),
                      tf.constant(0.0, tf.float32))
  weight = tf.where(has_non_finite > 0, tf.constant(0.0), weight)
  metrics_state = tf.cond(
      has_non_finite > 0,
      model.initialize_metrics_state,
      lambda: metrics_state)
  probe_norm_squared = (model_types.global_norm_squared(probe_gradient)
                        if config.with_probe_gradient else ())
  return ClientOutput(update, weight, metrics_state, probe_gradient,
                      probe_norm_squared,
                      client_counts(has_non_finite, num_examples),
                      (tf.constant(1.0, tf.float32)
                       if config.with_probe_gradient else ()))


def build_client_update_fn(model: tff.learning.models.FunctionalModel,
                           config: ClientWorkConfig):
  """Builds the `tf.function` run on every client.

  Args:
    model: The `tff.learning.models.FunctionalModel` being trained.
    config: A `ClientWorkConfig`.

  Returns:
    A `tf.function` `(optimizer, initial_weights, dataset, augmenting_gradient,
    transferred_examples, shuffle_seed, check_finite=None) -> ClientOutput`,
    where `transferred_examples` is a `tf.data.Dataset` of single central
    examples (unbatched, like `dataset.unbatch()`) and `shuffle_seed` an
    int64 scalar that seeds their shuffle with the local data; both are
    ignored (pass `()` and 0) without Example Transfer. `check_finite`, a
    scalar bool tensor, turns the non-finite guard off where it is False
    (a client group's first pass, which checks its members' sum instead);
    by default every update is checked.
  """

  # Without AutoGraph: the loop is graph code as written (`reduce_dataset`,
  # `tf.cond`), and converting it and all it calls (the model, the
  # optimizer, the local data rule) took about a second of every process
  # build; the graph is the same.
  @tf.function(autograph=False)
  def client_update(optimizer, initial_weights, dataset, augmenting_gradient,
                    transferred_examples, shuffle_seed, check_finite=None):
    initial_trainable, non_trainable = initial_weights
    initial_trainable = tuple(initial_trainable)
    non_trainable = tuple(non_trainable)
    dataset = _training_dataset(config, dataset, transferred_examples,
                                shuffle_seed)
    initial_state = _initial_state(model, config, optimizer,
                                   initial_trainable)
    reduce_fn = _build_step(model, config, optimizer, non_trainable,
                            augmenting_gradient)
    trainable, _, metrics_state, num_examples, _, probe_gradient = (
        model_types.reduce_dataset(dataset, initial_state, reduce_fn))
    return _client_output(model, config, initial_trainable, trainable,
                          metrics_state, num_examples, probe_gradient,
                          check_finite)

  return client_update


def build_batches_update_fn(model: tff.learning.models.FunctionalModel,
                            config: ClientWorkConfig):
  """`build_client_update_fn` on a client's batches held as tensors.

  The same local steps, metrics, guard and weight, without a dataset: the
  client's `n` batches of `B` examples arrive stacked (every leaf
  `[n, B, ...]`), and step `k` trains on batch `k mod n` (with `num_steps`
  set, the cycling of `repeat().take(num_steps)`; without it, one pass of
  `n` steps). Batches padded to one shape come with `num_rows`: each batch's
  example count is then its `num_rows`, and a client without a real row
  takes no step. Written for `tf.vectorized_map` over many clients of equal
  shape (`tff_mixed.simulation`): nothing in it depends on a member's values
  but its arithmetic, so a cohort's clients train at once, in lockstep.
  Only the client's own data (`OwnData`): Example Transfer's batches come
  already merged (`merged_batches.py`).

  Returns:
    `(optimizer, initial_weights, batches, augmenting_gradient,
    check_finite=None, num_rows=None) -> ClientOutput`, pure TF
    (`check_finite` as in `build_client_update_fn`; `num_rows`, int32
    `[n]`, each padded batch's real rows).

  Raises:
    ValueError: If `config.local_data` is not `OwnData`.
  """
  if not isinstance(config.local_data, OwnData):
    raise ValueError('Training on batches held as tensors needs the '
                     "client's own data (OwnData), got "
                     f'{type(config.local_data).__name__}.')

  def batches_update(optimizer, initial_weights, batches,
                     augmenting_gradient, check_finite=None, num_rows=None):
    initial_trainable, non_trainable = initial_weights
    initial_trainable = tuple(initial_trainable)
    num_batches = tf.shape(tf.nest.flatten(batches)[0])[0]
    num_steps = (num_batches if config.num_steps is None else
                 tf.constant(config.num_steps, tf.int32))
    initial_state = _initial_state(model, config, optimizer,
                                   initial_trainable)
    reduce_fn = _build_step(model, config, optimizer, tuple(non_trainable),
                            augmenting_gradient)

    def body(k, state):
      batch = tf.nest.map_structure(lambda b: b[k % num_batches], batches)
      return k + 1, reduce_fn(
          state, batch,
          None if num_rows is None else num_rows[k % num_batches])

    # A client without batches takes no step (as an empty dataset).
    has_data = num_batches > 0
    if num_rows is not None:
      has_data = tf.logical_and(has_data, tf.reduce_sum(num_rows) > 0)
    num_steps = tf.where(has_data, num_steps, 0)
    _, (trainable, _, metrics_state, num_examples, _, probe_gradient) = (
        tf.while_loop(lambda k, _: k < num_steps, body,
                      (tf.constant(0, tf.int32), initial_state)))
    return _client_output(model, config, initial_trainable, trainable,
                          metrics_state, num_examples, probe_gradient,
                          check_finite)

  return batches_update


def build_client_work(
    model: tff.learning.models.FunctionalModel,
    distributor: distributors.Distributor,
    config: ClientWorkConfig,
    optimizer: tff.learning.optimizers.Optimizer,
) -> tff.Computation:
  """The client work computation: `(<received..., {B*}> -> ClientOutput)`.

  `received` are the values of `distributor.client_types`; the distributor's
  `receive` turns them into the weights, augmenting gradient, dataset and
  transferred examples of `build_client_update_fn`, which trains
  `distributor.client_model` with CLIENTOPTIMIZER `optimizer`.

  Args:
    model: The global model (its input spec types the client data).
    distributor: The round's `distributors.Distributor`.
    config: A `ClientWorkConfig`.
    optimizer: CLIENTOPTIMIZER.
  """
  client_update = build_client_update_fn(distributor.client_model, config)
  parameter = tff.StructWithPythonType(
      [*distributor.client_types, model_types.data_type(model)], list)

  @tff.tensorflow.computation(parameter)
  def client_work(inputs):
    received = distributor.receive(inputs[:-1], inputs[-1])
    return client_update(optimizer, received.weights, received.dataset,
                         received.augmenting_gradient, received.examples,
                         received.shuffle_seed)

  return client_work
