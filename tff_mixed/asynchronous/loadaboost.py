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
"""LoAdaBoost FedAvg client training, as a TFF federated computation.

LoAdaBoost (Huang et al., "LoAdaBoost: Loss-based AdaBoost federated machine
learning with reduced computational complexity on IID and non-IID intensive
care data", PLoS ONE 2020; summarized in lecture slides on FedAvg and its
variants) cuts the clients' work where it is not needed: instead of FedAvg's
E local epochs a client first trains E/2 epochs, then compares its loss L
with the median L_med of the clients' final losses in the previous round. A
client with L <= L_med stops; a harder client retrains, checking its loss
again after each retraining, until L <= L_med or it has trained 3E/2 epochs
in all.

Retraining schedule (the slides: "retrain for E/2 - 1 more epochs", the
following retrainings one epoch shorter each time, until the 3E/2 cap). The
slides leave open what happens once that length reaches 0; here it stays at
1 epoch, so the loss is checked after the cumulative epoch counts

    E/2, E/2 + (E/2 - 1), E/2 + (E/2 - 1) + (E/2 - 2), ..., then every
    epoch, up to 3E/2 (the last retraining is cut at the cap);

e.g. E = 6: 3, 5, 6, 7, 8, 9 and E = 10: 5, 9, 12, 14, 15
(`check_epochs`). `granularity='epoch'` instead checks after every epoch
from E/2 on. Both stop at the first check with L <= L_med.

The loss L compared with the threshold is the client's mean loss over its
whole dataset at its current weights (an evaluation pass at each check,
example-weighted over batches); the final one is returned so that the
driver can set the next round's threshold, `next_threshold(final_losses)`
(the median; +inf in round 1, which makes every client stop after E/2
epochs). An epoch is one pass of minibatch SGD w <- w - lr * grad over the
client's batches, in the dataset's order.

Type signature (weights and data types are derived from TFF's own traced
client work for the model, as in `client_training.py`):
`(<weights=ModelWeights@SERVER, loss_threshold=float32@SERVER,
   data={B*}@CLIENTS> ->
  <update=ModelDelta@CLIENTS, num_examples=float32@CLIENTS,
   final_loss=float32@CLIENTS, num_epochs=int32@CLIENTS>)`,
with `update = trained - initial` trainable weights (the sign the
asynchronous strategies add), `num_examples` the examples in one pass over
the client's data and `num_epochs` the epochs the client trained (its
computation, LoAdaBoost's saving). Only these leave a client.
"""

import collections
from collections.abc import Callable
import math
from typing import Any, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.asynchronous import client_training
from tff_mixed.core import central_objective
from tff_mixed.core import model_ops
from tff_mixed.core import model_types

GRANULARITY_SLIDES = 'slides'
GRANULARITY_EPOCH = 'epoch'
_GRANULARITIES = (GRANULARITY_SLIDES, GRANULARITY_EPOCH)


def _check_epochs(epochs: Any) -> int:
  if (isinstance(epochs, (bool, np.bool_))
      or not isinstance(epochs, (int, np.integer)) or epochs < 2
      or epochs % 2):
    raise ValueError('`epochs` (FedAvg\'s E; LoAdaBoost trains E/2 to 3E/2) '
                     f'must be an even int >= 2, got {epochs!r}.')
  return int(epochs)


def check_epochs(epochs: int,
                 granularity: str = GRANULARITY_SLIDES) -> tuple[int, ...]:
  """Cumulative epoch counts after which a client checks its loss.

  Args:
    epochs: FedAvg's number of local epochs E (even, >= 2).
    granularity: 'slides' (retrainings of E/2 - 1, E/2 - 2, ... epochs,
      then 1; see the module docstring) or 'epoch' (after every epoch).

  Returns:
    Increasing epoch counts from E/2 to 3E/2; the last is the cap.

  Raises:
    ValueError: If `epochs` is not an even int >= 2 or `granularity` is
      unknown.
  """
  epochs = _check_epochs(epochs)
  if granularity not in _GRANULARITIES:
    raise ValueError(f'`granularity` must be one of {_GRANULARITIES}, got '
                     f'{granularity!r}.')
  half, cap = epochs // 2, 3 * epochs // 2
  if granularity == GRANULARITY_EPOCH:
    return tuple(range(half, cap + 1))
  checks = [half]
  retrain = half - 1
  while checks[-1] < cap:
    checks.append(min(cap, checks[-1] + max(retrain, 1)))
    retrain -= 1
  return tuple(checks)


def next_threshold(final_losses: Any) -> float:
  """The next round's loss threshold: the median of the clients' losses.

  Args:
    final_losses: The `final_loss` values the computation returned for the
      round's clients (a non-empty 1-D sequence).

  Returns:
    `np.median(final_losses)` as a Python float.

  Raises:
    ValueError: If `final_losses` is empty, not 1-D, or holds a NaN (a
      diverged client would make the median meaningless).
  """
  losses = np.asarray(final_losses, np.float64)
  if losses.ndim != 1 or losses.size == 0:
    raise ValueError('`final_losses` must be a non-empty 1-D sequence, got '
                     f'shape {losses.shape}.')
  if np.any(np.isnan(losses)):
    raise ValueError(f'`final_losses` holds NaN: {losses.tolist()!r}.')
  return float(np.median(losses))


def _client_update_fn(model, checks: tuple[int, ...], learning_rate: float):
  """One client's LoAdaBoost training, a function for a TF computation.

  `client_update(initial_weights, loss_threshold, dataset)` trains epochs of
  SGD, checks the mean loss after the epoch counts in `checks`, stops at the
  first check at most `loss_threshold` (or the last), and returns the
  client's outputs of the module docstring.
  """
  def client_update(initial_weights, loss_threshold, dataset):
    trainable = tuple(initial_weights[0])
    loss_fn = model_ops.trainable_loss_fn(model, initial_weights[1])

    def sgd_epoch(weights):
      def step(weights, batch):
        _, grads = model_ops.trainable_loss_and_gradient(loss_fn, weights,
                                                         batch)
        return model_ops.sgd_update(weights, grads, learning_rate)
      return model_types.reduce_dataset(dataset, weights, step)

    def mean_loss(weights):
      # Example-weighted mean of the batch losses: the loss over the whole
      # dataset for mean-reduced losses such as the models' in dense.py.
      # The weights ride in the state so that this pass draws its order
      # (a dataset may reshuffle each pass) after the epoch's, as
      # `model_types.reduce_dataset` makes its iterator after its state.
      def accumulate(state, batch):
        weights, total, count = state
        x, _ = central_objective.split_batch(batch)
        n = tf.cast(tf.shape(tf.nest.flatten(x)[0])[0], tf.float32)
        loss = tf.cast(loss_fn(weights, batch), tf.float32)
        return weights, total + loss * n, count + n
      _, total, count = model_types.reduce_dataset(
          dataset, (weights, tf.constant(0.0), tf.constant(0.0)), accumulate)
      return tf.math.divide_no_nan(total, count), count

    check_at = tf.constant(checks, tf.int32)
    last_check = len(checks) - 1

    def body(epoch, k, weights, loss, count, done):
      weights = sgd_epoch(weights)
      epoch += 1
      at_check = tf.equal(epoch, check_at[k])
      loss, count = tf.cond(at_check, lambda: mean_loss(weights),
                            lambda: (loss, count))
      # And the next epoch's pass after this check's (the loop would start
      # it as soon as the weights are ready), so passes keep their order.
      with tf.control_dependencies([loss, count]):
        weights = tuple(tf.identity(w) for w in weights)
      # Stop once the loss is at most the previous round's median, or at
      # the 3E/2 cap. A NaN loss never compares <=, so it runs to the cap.
      done = tf.logical_and(
          at_check,
          tf.logical_or(loss <= loss_threshold, tf.equal(k, last_check)))
      k = tf.minimum(k + tf.cast(at_check, tf.int32), last_check)
      return epoch, k, weights, loss, count, done

    epoch, _, weights, loss, count, _ = tf.while_loop(
        lambda *state: tf.logical_not(state[-1]), body,
        (tf.constant(0), tf.constant(0), trainable, tf.constant(0.0),
         tf.constant(0.0), tf.constant(False)))
    return collections.OrderedDict(
        update=tuple(w - w0 for w, w0 in zip(weights, trainable)),
        num_examples=count,
        final_loss=loss,
        num_epochs=epoch)

  return client_update


def _check_arguments(model, epochs, learning_rate, granularity):
  """`(check_epochs(epochs, granularity), float(learning_rate))`, checked."""
  if not isinstance(model, tff.learning.models.FunctionalModel):
    raise TypeError('`model` must be a tff.learning.models.FunctionalModel, '
                    f'got {type(model).__name__}.')
  checks = check_epochs(epochs, granularity)
  if (isinstance(learning_rate, (bool, np.bool_))
      or not isinstance(learning_rate, (int, float, np.integer, np.floating))
      or not math.isfinite(learning_rate) or learning_rate <= 0):
    raise ValueError('`learning_rate` must be a finite number > 0, got '
                     f'{learning_rate!r}.')
  return checks, float(learning_rate)


def build_loadaboost_client_training(
    model: tff.learning.models.FunctionalModel,
    *,
    epochs: int,
    learning_rate: float,
    granularity: str = GRANULARITY_SLIDES,
) -> tff.Computation:
  """LoAdaBoost local training of the sampled clients.

  Args:
    model: The `FunctionalModel` clients train.
    epochs: FedAvg's local epochs E (even, >= 2): clients train between E/2
      and 3E/2 epochs.
    learning_rate: The clients' SGD step size (> 0).
    granularity: When the loss is checked after the first E/2 epochs:
      'slides' (shrinking retrainings, the default) or 'epoch'; see
      `check_epochs`.

  Returns:
    The federated computation of the module docstring: called with
    `(weights, loss_threshold, client_datasets)` (the threshold a Python
    float or `np.float32`: TFF will not narrow an `np.float64`), it returns
    an `OrderedDict` with one `update`, `num_examples`, `final_loss` and
    `num_epochs` per client.

  Raises:
    TypeError: If `model` is not a `FunctionalModel`.
    ValueError: If `epochs`, `learning_rate` or `granularity` is invalid.
  """
  checks, learning_rate = _check_arguments(model, epochs, learning_rate,
                                           granularity)

  # Types derived from TFF's own traced client work for this model, so the
  # computation accepts exactly what `client_training` does.
  client_work = tff.learning.templates.build_functional_model_delta_client_work(
      model=model, optimizer=tff.learning.optimizers.build_sgdm(learning_rate),
      client_weighting=tff.learning.ClientWeighting.NUM_EXAMPLES)
  next_type = client_work.next.type_signature.parameter
  weights_type = next_type[1].member
  data_type = next_type[2]

  client_update = tff.tensorflow.computation(
      weights_type, np.float32, data_type.member)(
          _client_update_fn(model, checks, learning_rate))

  @tff.federated_computation(
      tff.FederatedType(weights_type, tff.SERVER),
      tff.FederatedType(np.float32, tff.SERVER), data_type)
  def train(weights, loss_threshold, data):
    output = tff.federated_map(client_update, (
        tff.federated_broadcast(weights),
        tff.federated_broadcast(loss_threshold), data))
    return collections.OrderedDict(
        update=output.update,
        num_examples=output.num_examples,
        final_loss=output.final_loss,
        num_epochs=output.num_epochs)

  return train


def build_loadaboost_group_training(
    model: tff.learning.models.FunctionalModel,
    *,
    epochs: int,
    learning_rate: float,
    dataset_fn: Callable[[tf.Tensor, tf.Tensor], tf.data.Dataset],
    granularity: str = GRANULARITY_SLIDES,
) -> tff.Computation:
  """`build_loadaboost_client_training` for groups of clients.

  The fast simulation mode of `client_training.build_group_client_training`:
  every client of a round starts from the round's weights and threshold, so
  one TF computation trains a group's members in turn, each exactly as the
  per-client computation does, and returns their outputs stacked.

  Type signature:
  `(<weights=ModelWeights@SERVER, loss_threshold=float32@SERVER,
     round_num=int64@SERVER, ids=int32[?]@CLIENTS> ->
    <update=<float32[?, ...], ...>@CLIENTS, num_examples=float32[?]@CLIENTS,
     final_loss=float32[?]@CLIENTS, num_epochs=int32[?]@CLIENTS>)`.

  Args:
    model, epochs, learning_rate, granularity: As for
      `build_loadaboost_client_training`.
    dataset_fn: `dataset_fn(client_id, round_num)`, pure TF: the client's
      dataset in the round (see `build_group_client_training`).

  Returns:
    The federated computation.

  Raises:
    TypeError: If `model` is not a `FunctionalModel`.
    ValueError: If `epochs`, `learning_rate` or `granularity` is invalid.
  """
  checks, learning_rate = _check_arguments(model, epochs, learning_rate,
                                           granularity)
  client_update = _client_update_fn(model, checks, learning_rate)
  scalar = tf.TensorSpec([], tf.float32)
  loop = client_training.build_group_loop(
      lambda client_id, weights, threshold, round_num: client_update(
          weights, threshold, dataset_fn(client_id, round_num)),
      collections.OrderedDict(
          update=model_types.trainable_specs(model), num_examples=scalar,
          final_loss=scalar, num_epochs=tf.TensorSpec([], tf.int32)))
  weights_type = model_types.weights_type(model)
  ids_type = tff.TensorType(client_training.GROUP_ID_DTYPE, [None])

  @tff.tensorflow.computation(weights_type, np.float32, np.int64, ids_type)
  def group_update(weights, loss_threshold, round_num, ids):
    return loop(ids, weights, loss_threshold, round_num)

  @tff.federated_computation(
      tff.FederatedType(weights_type, tff.SERVER),
      tff.FederatedType(np.float32, tff.SERVER),
      tff.FederatedType(np.int64, tff.SERVER),
      tff.FederatedType(ids_type, tff.CLIENTS))
  def train(weights, loss_threshold, round_num, ids):
    output = tff.federated_map(group_update, (
        tff.federated_broadcast(weights),
        tff.federated_broadcast(loss_threshold),
        tff.federated_broadcast(round_num), ids))
    return collections.OrderedDict(
        (key, output[key]) for key in (
            'update', 'num_examples', 'final_loss', 'num_epochs'))

  return train


class LoAdaBoostTraining:
  """LoAdaBoost's round-to-round driver, callable like `client_training`.

  `simulation.run_async` calls its client training as
  `training(weights, client_datasets)` and reads `update` and `loss`. This
  wrapper holds what LoAdaBoost carries between rounds, the loss threshold
  (the median of the previous round's final client losses; +inf before the
  first round), passes it to the federated computation and updates it from
  the clients' `final_loss`. It also counts the epochs the clients trained,
  LoAdaBoost's saving against FedAvg's fixed E.
  """

  def __init__(self, training: tff.Computation, epochs: int,
               group_training: Optional[tff.Computation] = None):
    """Wraps `build_loadaboost_client_training(..., epochs=epochs)`.

    Args:
      training: The computation from `build_loadaboost_client_training`.
      epochs: The E it was built with (for `mean_epochs` comparisons).
      group_training: Optionally the computation from
        `build_loadaboost_group_training` (the same model, E and learning
        rate), which `train_groups` calls: `run_async`'s `group_training`.

    Raises:
      ValueError: If `epochs` is not an even int >= 2.
    """
    self._training = training
    self._group_training = group_training
    self.epochs = _check_epochs(epochs)
    self.threshold = math.inf
    self.client_epochs: list[int] = []

  @property
  def mean_epochs(self) -> float:
    """Mean epochs per trained client so far (NaN before any round)."""
    if not self.client_epochs:
      return float('nan')
    return float(np.mean(self.client_epochs))

  def snapshot(self) -> dict[str, Any]:
    """What it carries between rounds, for `run_async`'s checkpoints."""
    return dict(threshold=self.threshold,
                client_epochs=list(self.client_epochs))

  def restore(self, snapshot: dict[str, Any]) -> None:
    """Puts back what `snapshot` took."""
    self.threshold = snapshot['threshold']
    self.client_epochs = list(snapshot['client_epochs'])

  def __call__(self, weights, client_datasets) -> dict[str, Any]:
    return self._train(self._training, weights, client_datasets)

  def train_groups(self, weights, round_num, groups) -> dict[str, Any]:
    """A round's clients in groups: `run_async`'s `group_training`."""
    if self._group_training is None:
      raise ValueError('This LoAdaBoostTraining has no `group_training`.')
    return self._train(self._group_training, weights, round_num, groups)

  def _train(self, computation, weights, *clients) -> dict[str, Any]:
    output = computation(weights, np.float32(self.threshold), *clients)
    # Per client, or per group its members stacked: in the clients' order.
    losses = [float(l) for g in output['final_loss'] for l in np.ravel(g)]
    self.threshold = next_threshold(losses)
    self.client_epochs.extend(
        int(e) for g in output['num_epochs'] for e in np.ravel(g))
    return collections.OrderedDict(
        update=output['update'],
        num_examples=output['num_examples'],
        loss=float(np.mean(losses)))
