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
"""Server-side hybrid-data baselines: Center, Fed+FT, HFCL and FedDF.

The guided-model-merging paper (Feddle, "Guided Model Merging for Hybrid
Data Learning", Zhu et al., section 5 and appendix D) compares Feddle with four
ways of using the server's own data next to the clients' updates:

* Center: the server trains on its data alone, ignoring the clients,

      x <- SGD(x; D_S)                                   (`center_round`)

* Fed+FT: after the round's federated merge (FedAvg / FedBuff / ...), the
  server fine-tunes the merged model on its data,

      x <- SGD(merge(x, updates); D_S)                   (`fine_tune`)

* HFCL (Elbir et al., "Hybrid Federated and Centralized Learning", 2021):
  the server trains its own copy of the current model on its data and takes
  part in the aggregation as one more client, weighted, like every client,
  by its number of examples,

      delta_S = SGD(x; D_S) - x,
      x <- x + (sum_i n_i delta_i + n_S delta_S) / (sum_i n_i + n_S)
                                                         (`hfcl_merge`)

* FedDF (Lin et al., "Ensemble Distillation for Robust Model Fusion in
  Federated Learning", NeurIPS 2020, arXiv:2006.07242): the merged model is
  the student and the ensemble of client models the teacher; on the
  server's inputs x (in domain, or out of domain: labels are never used)
  the student minimizes

      KL(p_T || p_S),  p_T = softmax((1/K) sum_k f(x; w_k) / T),
                       p_S = softmax(f(x; w) / T)        (`feddf_distill`)

  by minibatch steps: the teacher averages the client models' logits
  before the softmax (the paper's AVGLOGITS, Algorithm 1 line 9 and
  eq. (1)), it does not average their probabilities.

All four share one building block, minibatch SGD on the server data
(`server_sgd`). The functions are plain TF/numpy on model weights (the
trainable weights of a `tff.learning.models.FunctionalModel`, a sequence of
arrays) and server data given as numpy arrays; they never modify their
arguments and return new lists of numpy arrays with the model's dtypes. The
asynchronous schedule and the FedAsync / FedBuff / CA2FL merges they combine
with live in `schedule.py` and `server_strategies.py`.

Conventions chosen here (the papers leave them open):
  * Minibatches: every epoch is a fresh permutation of the server data
    (numpy `default_rng(seed)`) cut into `ceil(n / batch_size)` batches, the
    last one possibly smaller; `steps` counts batches across epochs, so the
    paper's "server epochs M" is `M * steps_per_epoch(n, batch_size)`.
  * HFCL weights the server by its dataset size and clients by the weights
    the caller passes (their example counts, for HFCL's size-weighted
    average); stale client updates are merged as they are, since HFCL has no
    notion of staleness.
  * FedDF's eq. (1) has no temperature (T = 1, the default here); T > 1
    divides the mean logit and the student's logits alike, and the KL is
    not rescaled by T^2 (the learning rate absorbs it). A model with a
    single output column is a binary classifier whose logit z gives the two
    classes softmax([0, z]) = (1 - sigmoid(z), sigmoid(z)), so its teacher
    is sigmoid(mean_k z_k / T).
  * FedDF's server optimizer: `optimizer='sgd'` (default, like every other
    baseline here) or `'adam'`, the paper's choice (section 4.1: Adam at
    learning rate 1e-3 with cosine annealing, up to 1e4 steps of batch
    128); the paper's early stopping on a labelled validation set is not
    done (the server runs exactly `steps` steps).
  * The teachers predict with `training=False`; the student, like
    `server_sgd`, trains with `training=True`.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import checks

# Model weights: one array per trainable variable, in the model's order.
Weights = Sequence[Any]

# Teachers' predictions are computed in chunks of this many examples so the
# server's (possibly large, out-of-domain) inputs never sit in one tensor.
_PREDICT_CHUNK = 4096


# ----------------------------------------------------------------------------
# Validation.










def _check_model(model: Any) -> None:
  # Duck-typed so that tests can pass any object with FunctionalModel's
  # interface; the attributes are what the functions below use.
  for attribute in ('initial_weights', 'predict_on_batch', 'loss',
                    'input_spec'):
    if not hasattr(model, attribute):
      raise TypeError('`model` must be a tff.learning.models.FunctionalModel, '
                      f'got {type(model).__name__} (no `{attribute}`).')


def _model_weights(model: Any, weights: Weights,
                   name: str) -> tuple[np.ndarray, ...]:
  """`weights` checked against (and cast to) the model's trainable weights."""
  return checks.check_like(weights, model.initial_weights[0], name,
                           "the model's trainable weights")


def _split_spec(input_spec: Any) -> tuple[Any, Any]:
  """(x_spec, y_spec) of an input spec given as a pair or a mapping."""
  if isinstance(input_spec, Mapping):
    return input_spec['x'], input_spec['y']
  x_spec, y_spec = input_spec
  return x_spec, y_spec


def _check_against_spec(name: str, value: Any, spec: Any,
                        spec_name: str) -> Any:
  """`value` (arrays) checked against `spec` and cast to its dtypes.

  Raises:
    ValueError: If the structure, ranks, fixed dimensions or kinds of dtype
      differ, naming the data's shapes and the spec.
  """
  def mismatch(detail):
    shapes = tf.nest.map_structure(lambda a: np.shape(a), value)
    return ValueError(f'Server data `{name}` does not match the model: '
                      f'{detail}; `{name}` has shapes {shapes!r}, the '
                      f'model input spec {spec_name} is {spec!r}.')

  try:
    tf.nest.assert_same_structure(spec, value, check_types=False)
  except (ValueError, TypeError) as e:
    raise mismatch('different structure') from e
  flat = []
  for array, s in zip(tf.nest.flatten(value), tf.nest.flatten(spec)):
    array = np.asarray(array)
    if not (np.issubdtype(array.dtype, np.number)
            or np.issubdtype(array.dtype, np.bool_)):
      raise mismatch(f'non-numeric dtype {array.dtype}')
    if not s.shape.is_compatible_with(array.shape):
      raise mismatch(f'shape {array.shape} is incompatible with {s.shape}')
    flat.append(array.astype(s.dtype.as_numpy_dtype, copy=False))
  return tf.nest.pack_sequence_as(spec, flat)


def _server_data(model: Any, server_x: Any,
                 server_y: Optional[Any]) -> tuple[Any, int]:
  """Checked server data `(x, y)` (or `x` when `server_y` is None) and n."""
  x_spec, y_spec = _split_spec(model.input_spec)
  x = _check_against_spec('server_x', server_x, x_spec, 'x')
  data = x
  if server_y is not None:
    y = _check_against_spec('server_y', server_y, y_spec, 'y')
    data = (x, y)
  sizes = {np.shape(a)[0] for a in tf.nest.flatten(data)}
  if len(sizes) != 1:
    raise ValueError('Server data arrays must all have the same number of '
                     f'examples (first dimension), got sizes {sorted(sizes)}.')
  num_examples = sizes.pop()
  if num_examples < 1:
    raise ValueError('Server data is empty (0 examples).')
  return data, num_examples


# ----------------------------------------------------------------------------
# Minibatch SGD on the server data (the shared building block).


def steps_per_epoch(num_examples: int, batch_size: int) -> int:
  """Batches in one pass over `num_examples` examples: ceil(n / B).

  Converts the paper's server epochs M to `steps`: M * steps_per_epoch.

  Raises:
    ValueError: If `num_examples < 1` or `batch_size < 1`.
  """
  num_examples = checks.check_int('num_examples', num_examples, 1)
  batch_size = checks.check_int('batch_size', batch_size, 1)
  return -(-num_examples // batch_size)


def _batch_plan(num_examples: int, batch_size: int, steps: int,
                seed: int) -> tuple[np.ndarray, np.ndarray]:
  """Example order and `[steps, 2]` (start, end) offsets into it.

  Every epoch is a fresh permutation cut into consecutive batches; a batch
  never straddles two epochs, so the last one of an epoch may be smaller.
  """
  per_epoch = steps_per_epoch(num_examples, batch_size)
  epochs = max(1, -(-steps // per_epoch))
  rng = np.random.default_rng(seed)
  order = np.concatenate(
      [rng.permutation(num_examples) for _ in range(epochs)]).astype(np.int64)
  step = np.arange(steps)
  starts = ((step // per_epoch) * num_examples
            + (step % per_epoch) * batch_size)
  ends = np.minimum(starts + batch_size,
                    (step // per_epoch + 1) * num_examples)
  return order, np.stack([starts, ends], axis=1).astype(np.int64)


SGD = 'sgd'
ADAM = 'adam'
_OPTIMIZERS = (SGD, ADAM)

# Adam's constants: those of Kingma & Ba (2015), which are also PyTorch's
# defaults, the optimizer FedDF's authors used.
_ADAM_BETA1 = 0.9
_ADAM_BETA2 = 0.999
_ADAM_EPSILON = 1e-8


def _run_sgd(batch_loss: Callable[[tuple[tf.Tensor, ...], Any], tf.Tensor],
             weights: tuple[np.ndarray, ...], data: Any, num_examples: int,
             *, steps: int, batch_size: int, learning_rate: float,
             seed: int, optimizer: str = SGD) -> list[np.ndarray]:
  """`steps` minibatch steps on batch_loss(w, batch).

  `optimizer='sgd'`: w <- w - lr * g. `'adam'` (FedDF's server optimizer):
  Adam (beta1 0.9, beta2 0.999, eps 1e-8, bias-corrected moments) whose
  step size at step j = 0, ..., steps - 1 is the cosine-annealed
  lr_j = lr * (1 + cos(pi j / steps)) / 2.
  """
  order, bounds = _batch_plan(num_examples, batch_size, steps, seed)
  use_adam = optimizer == ADAM

  # One graph for the whole loop: the batches are gathered in TF, so no
  # Python round trip (and no retracing for the smaller last batch) per step.
  @tf.function
  def run(trainable, data, order, bounds):
    def body(i, trainable, m, v):
      index = order[bounds[i, 0]:bounds[i, 1]]
      batch = tf.nest.map_structure(lambda a: tf.gather(a, index), data)
      with tf.GradientTape() as tape:
        tape.watch(trainable)
        loss = batch_loss(trainable, batch)
      # Weights the loss does not reach keep their value.
      grads = tape.gradient(
          loss, trainable,
          unconnected_gradients=tf.UnconnectedGradients.ZERO)
      if not use_adam:
        return i + 1, tuple(
            w - tf.cast(learning_rate, w.dtype) * g
            for w, g in zip(trainable, grads)), m, v
      t = tf.cast(i, tf.float64)
      rate = learning_rate * 0.5 * (1.0 + tf.cos(np.pi * t / steps))
      m = tuple(_ADAM_BETA1 * mi + (1.0 - _ADAM_BETA1) * g
                for mi, g in zip(m, grads))
      v = tuple(_ADAM_BETA2 * vi + (1.0 - _ADAM_BETA2) * tf.square(g)
                for vi, g in zip(v, grads))
      correction1 = 1.0 - tf.pow(tf.constant(_ADAM_BETA1, tf.float64), t + 1)
      correction2 = 1.0 - tf.pow(tf.constant(_ADAM_BETA2, tf.float64), t + 1)
      new = []
      for w, mi, vi in zip(trainable, m, v):
        dtype = w.dtype
        m_hat = mi / tf.cast(correction1, dtype)
        v_hat = vi / tf.cast(correction2, dtype)
        new.append(w - tf.cast(rate, dtype) * m_hat
                   / (tf.sqrt(v_hat) + tf.cast(_ADAM_EPSILON, dtype)))
      return i + 1, tuple(new), m, v

    # Adam's moments m and v (empty for SGD).
    zeros = tuple(tf.zeros_like(w) for w in trainable) if use_adam else ()
    _, trainable, _, _ = tf.while_loop(
        lambda i, *_: i < tf.shape(bounds)[0], body,
        (tf.constant(0), trainable, zeros, zeros))
    return trainable

  if steps == 0:
    return [np.array(w) for w in weights]
  result = run(tuple(tf.convert_to_tensor(w) for w in weights),
               tf.nest.map_structure(tf.convert_to_tensor, data),
               tf.constant(order), tf.constant(bounds))
  return [np.asarray(w) for w in result]


def _check_sgd_args(steps: Any, batch_size: Any, learning_rate: Any,
                    seed: Any) -> tuple[int, int, float, int]:
  return (checks.check_int('steps', steps, 0),
          checks.check_int('batch_size', batch_size, 1),
          checks.check_float('learning_rate', learning_rate, 0.0, strict=True),
          checks.check_int('seed', seed, 0))


def server_sgd(model: Any, weights: Weights, server_x: Any, server_y: Any,
               *, steps: int, batch_size: int, learning_rate: float,
               seed: int = 0) -> list[np.ndarray]:
  """Minibatch SGD on the server data, the block every baseline shares.

  Runs `steps` steps of w <- w - learning_rate * grad L(w; batch), where L is
  the model's own loss (`model.loss` of `model.predict_on_batch` with
  `training=True`) on a minibatch of the server data; batches follow the
  module's convention (a fresh permutation per epoch).

  Args:
    model: A `tff.learning.models.FunctionalModel`; its non-trainable weights
      are its initial ones.
    weights: The starting trainable weights, shaped like the model's.
    server_x: Server inputs, arrays matching the model's x input spec.
    server_y: Server labels, arrays matching the model's y input spec.
    steps: Number of SGD steps (>= 0; 0 returns a copy of `weights`).
    batch_size: Examples per batch (>= 1; capped by the data size).
    learning_rate: The SGD step size (> 0).
    seed: Seeds the batch order.

  Returns:
    The trained weights, a new list of numpy arrays with the model's dtypes.

  Raises:
    TypeError: If `model` lacks FunctionalModel's interface or `weights` is
      not a sequence.
    ValueError: If an argument is out of range, `weights` has the wrong
      shapes, or the server data does not match the model's input spec.
  """
  _check_model(model)
  steps, batch_size, learning_rate, seed = _check_sgd_args(
      steps, batch_size, learning_rate, seed)
  weights = _model_weights(model, weights, 'weights')
  data, num_examples = _server_data(model, server_x, server_y)
  non_trainable = tuple(model.initial_weights[1])

  def batch_loss(trainable, batch):
    x, y = batch
    output = model.predict_on_batch((trainable, non_trainable), x,
                                    training=True)
    return model.loss(output, y)

  return _run_sgd(batch_loss, weights, data, num_examples, steps=steps,
                  batch_size=batch_size, learning_rate=learning_rate,
                  seed=seed)


def center_round(model: Any, weights: Weights, server_x: Any, server_y: Any,
                 *, steps: int, batch_size: int, learning_rate: float,
                 seed: int = 0) -> list[np.ndarray]:
  """One round of the Center baseline: server data only, no clients.

  The paper's lower reference (section 5: trained "exclusively on
  server-side data"; appendix D tunes its server epochs in {10, 20, 50}).
  It is `server_sgd` from the current model; the clients' updates are
  ignored. Arguments, return value and errors are those of `server_sgd`.
  """
  return server_sgd(model, weights, server_x, server_y, steps=steps,
                    batch_size=batch_size, learning_rate=learning_rate,
                    seed=seed)


def fine_tune(model: Any, merged_weights: Weights, server_x: Any,
              server_y: Any, *, steps: int, batch_size: int,
              learning_rate: float, seed: int = 0) -> list[np.ndarray]:
  """Fed+FT: fine-tunes the round's merged model on the server data.

  Call it after the federated merge of the round (e.g. FedBuff's
  `strategy.apply`), every round: x <- SGD(merge(x, updates); D_S). Appendix
  D tunes the server learning rate in {1e-5, 1e-4, 1e-3} and the server
  epochs in {1, 10, 20} (see `steps_per_epoch`). Arguments, return value
  and errors are those of `server_sgd`, starting from `merged_weights`.
  """
  return server_sgd(model, merged_weights, server_x, server_y, steps=steps,
                    batch_size=batch_size, learning_rate=learning_rate,
                    seed=seed)


# ----------------------------------------------------------------------------
# HFCL: the server as one more, size-weighted participant.


def hfcl_merge(weights: Weights, client_deltas: Sequence[Weights],
               client_weights: Sequence[float], server_delta: Weights,
               server_weight: float) -> list[np.ndarray]:
  """HFCL's aggregation: the server's update joins the clients' updates.

  In HFCL (Elbir et al. 2021) the server trains on the data it holds and
  the global model is the dataset-size weighted average over all
  participants, the server included. As an update to the current model:

      x <- x + (sum_i n_i delta_i + n_S delta_S) / (sum_i n_i + n_S),

  with n_i = `client_weights[i]` (the clients' example counts, for HFCL's
  size weighting) and n_S = `server_weight` (the server's number of
  examples). Arithmetic is in float64.

  Args:
    weights: The current model weights x.
    client_deltas: The clients' updates (client model - model it started
      from), each shaped like `weights`; may be empty.
    client_weights: One weight >= 0 per client update.
    server_delta: The server's update `server_sgd(x) - x`.
    server_weight: The server's weight n_S >= 0 (its dataset size).

  Returns:
    The merged weights, a new list of numpy arrays with `weights`' dtypes.

  Raises:
    TypeError: If a weights argument is not a sequence of arrays.
    ValueError: If shapes differ, the numbers of updates and weights differ,
      a weight is negative or not finite, or all weights are zero.
  """
  base = checks.as_arrays(weights, 'weights')
  if isinstance(client_deltas, (np.ndarray, tf.Tensor)) or not isinstance(
      client_deltas, Sequence):
    raise TypeError('`client_deltas` must be a sequence of updates, got '
                    f'{type(client_deltas).__name__}.')
  client_weights = list(client_weights)
  if len(client_weights) != len(client_deltas):
    raise ValueError(f'Got {len(client_deltas)} client updates but '
                     f'{len(client_weights)} client weights.')
  client_weights = [checks.check_float(f'client_weights[{i}]', w, 0.0,
                                       strict=False)
                    for i, w in enumerate(client_weights)]
  server_weight = checks.check_float('server_weight', server_weight, 0.0,
                                     strict=False)
  total = sum(client_weights) + server_weight
  if total <= 0.0:
    raise ValueError('The client and server weights sum to 0; HFCL needs at '
                     'least one participant with a positive weight.')
  deltas = [checks.check_like(d, base, f'client_deltas[{i}]', '`weights`')
            for i, d in enumerate(client_deltas)]
  deltas.append(checks.check_like(server_delta, base, 'server_delta',
                                  '`weights`'))
  coefficients = [w / total for w in client_weights + [server_weight]]
  merged = []
  for j, w in enumerate(base):
    step = sum(c * d[j].astype(np.float64)
               for c, d in zip(coefficients, deltas))
    merged.append((w.astype(np.float64) + step).astype(w.dtype))
  return merged


def hfcl_round(model: Any, weights: Weights,
               client_deltas: Sequence[Weights],
               client_weights: Sequence[float], server_x: Any,
               server_y: Any, *, steps: int, batch_size: int,
               learning_rate: float, seed: int = 0) -> list[np.ndarray]:
  """One HFCL server round: `server_sgd` from x, then `hfcl_merge`.

  The server's weight is its number of examples, `len(server_y)`, so pass
  the clients' example counts as `client_weights`.

  Args:
    model: A `tff.learning.models.FunctionalModel`.
    weights: The current model weights x.
    client_deltas: The updates that arrived this round (possibly none).
    client_weights: Their weights (example counts).
    server_x: Server inputs.
    server_y: Server labels.
    steps: The server's SGD steps (see `server_sgd`).
    batch_size: The server's batch size.
    learning_rate: The server's SGD step size.
    seed: Seeds the server's batch order.

  Returns:
    The new weights, a new list of numpy arrays.

  Raises:
    TypeError, ValueError: As `server_sgd` and `hfcl_merge`.
  """
  trained = server_sgd(model, weights, server_x, server_y, steps=steps,
                       batch_size=batch_size, learning_rate=learning_rate,
                       seed=seed)
  base = _model_weights(model, weights, 'weights')
  server_delta = [t - w for t, w in zip(trained, base)]
  _, num_examples = _server_data(model, server_x, server_y)
  return hfcl_merge(base, client_deltas, client_weights, server_delta,
                    float(num_examples))


# ----------------------------------------------------------------------------
# FedDF: ensemble distillation on server inputs.


def models_from_deltas(weights: Weights,
                       deltas: Sequence[Weights]) -> list[list[np.ndarray]]:
  """Client models `weights + delta` for FedDF's teacher ensemble.

  With asynchronous updates, pass each update's own base (`ClientUpdate
  .base`) for the model the client actually trained, or the current global
  model to re-apply stale updates to it.

  Raises:
    TypeError, ValueError: If an argument is not a sequence of arrays shaped
      like `weights`.
  """
  base = checks.as_arrays(weights, 'weights')
  return [[w + d for w, d in zip(base, checks.check_like(
      delta, base, f'deltas[{i}]', '`weights`'))]
          for i, delta in enumerate(deltas)]


def _log_probs(logits: tf.Tensor, temperature: float) -> tf.Tensor:
  """Log class probabilities of logits at a temperature.

  One output column is a binary logit z: the classes are softmax([0, z]).
  """
  logits = logits / tf.cast(temperature, logits.dtype)
  if logits.shape.rank is not None and logits.shape[-1] == 1:
    logits = tf.concat([tf.zeros_like(logits), logits], axis=-1)
  return tf.nn.log_softmax(logits, axis=-1)


def _kl(teacher_probs: tf.Tensor, student_log_probs: tf.Tensor) -> tf.Tensor:
  """Mean over examples of KL(p_T || p_S); 0 log 0 = 0."""
  teacher_probs = tf.cast(teacher_probs, student_log_probs.dtype)
  per_example = tf.reduce_sum(
      tf.math.xlogy(teacher_probs, teacher_probs)
      - teacher_probs * student_log_probs, axis=-1)
  return tf.reduce_mean(per_example)


def _ensemble_probs(model: Any, teachers: Sequence[tuple[np.ndarray, ...]],
                    x: Any, num_examples: int,
                    temperature: float) -> np.ndarray:
  """p_T = softmax(mean_k f(x; w_k) / T), `[n, classes]` (float64).

  FedDF's AVGLOGITS (arXiv:2006.07242, Algorithm 1 line 9, eq. (1)): the
  teachers' logits are averaged, then one softmax is taken (not the mean
  of the teachers' softmaxes, which differs wherever they disagree).
  """
  non_trainable = tuple(model.initial_weights[1])

  @tf.function
  def logits(trainable, x):
    return model.predict_on_batch((trainable, non_trainable), x,
                                  training=False)

  total = None
  for teacher in teachers:
    trainable = tuple(tf.convert_to_tensor(w) for w in teacher)
    chunks = []
    for start in range(0, num_examples, _PREDICT_CHUNK):
      chunk = tf.nest.map_structure(
          lambda a, s=start: tf.convert_to_tensor(a[s:s + _PREDICT_CHUNK]), x)
      chunks.append(logits(trainable, chunk).numpy().astype(np.float64))
    z = np.concatenate(chunks, axis=0)
    total = z if total is None else total + z
  mean_logits = tf.constant(total / len(teachers), tf.float64)
  return np.exp(_log_probs(mean_logits, temperature).numpy())


def _check_teachers(model: Any, teacher_weight_lists: Any
                    ) -> list[tuple[np.ndarray, ...]]:
  if isinstance(teacher_weight_lists, (np.ndarray, tf.Tensor)) or (
      not isinstance(teacher_weight_lists, Sequence)):
    raise TypeError('`teacher_weight_lists` must be a sequence of weight '
                    f'lists, got {type(teacher_weight_lists).__name__}.')
  if not teacher_weight_lists:
    raise ValueError('`teacher_weight_lists` is empty: FedDF needs at least '
                     'one client model as teacher.')
  return [_model_weights(model, t, f'teacher_weight_lists[{i}]')
          for i, t in enumerate(teacher_weight_lists)]


def distillation_kl(model: Any, student_weights: Weights,
                    teacher_weight_lists: Sequence[Weights], server_x: Any,
                    *, temperature: float = 1.0) -> float:
  """FedDF's objective KL(p_T || p_S) on all of `server_x` (a diagnostic).

  p_T is the softmax of the teachers' averaged logits (see `feddf_distill`).

  The student predicts with `training=False` here, so the value is
  deterministic. Arguments and errors are those of `feddf_distill`.

  Returns:
    The mean over the server inputs of KL(teacher ensemble || student).
  """
  _check_model(model)
  temperature = checks.check_float('temperature', temperature, 0.0, strict=True)
  student = _model_weights(model, student_weights, 'student_weights')
  teachers = _check_teachers(model, teacher_weight_lists)
  x, num_examples = _server_data(model, server_x, None)
  teacher_probs = _ensemble_probs(model, teachers, x, num_examples,
                                  temperature)
  non_trainable = tuple(model.initial_weights[1])
  output = model.predict_on_batch(
      (tuple(tf.convert_to_tensor(w) for w in student), non_trainable),
      tf.nest.map_structure(tf.convert_to_tensor, x), training=False)
  return float(_kl(tf.constant(teacher_probs),
                   tf.cast(_log_probs(output, temperature), tf.float64)))


def feddf_distill(model: Any, student_weights: Weights,
                  teacher_weight_lists: Sequence[Weights], server_x: Any,
                  *, steps: int, batch_size: int, learning_rate: float,
                  temperature: float = 1.0, seed: int = 0,
                  optimizer: str = SGD) -> list[np.ndarray]:
  """FedDF: distills the client ensemble into the merged model.

  Lin et al., "Ensemble Distillation for Robust Model Fusion in Federated
  Learning" (NeurIPS 2020, arXiv:2006.07242), Algorithm 1 lines 7-10 and
  eq. (1). The student starts from the merged model (the paper: the
  size-weighted mean of the client models, Algorithm 1 line 6; here the
  caller's merge, e.g. FedBuff's `strategy.apply`) and runs `steps` steps
  on

      KL(p_T || p_S) = mean_x sum_c p_T,c (log p_T,c - log p_S,c),
      p_T = softmax((1/K) sum_k f(x; w_k) / T),  p_S = softmax(f(x; w) / T),

  over minibatches of `server_x` (module convention for batches): the
  teacher is the softmax of the clients' averaged logits (AVGLOGITS), not
  the average of their probabilities. Only inputs are used, so the same
  call serves FedDF-ID (the server's in-domain x) and FedDF-OOD
  (out-of-domain x, e.g. the paper's ImageNet subset). The guided merging
  paper (Zhu et al., appendix D) tunes the server learning rate in {1e-5,
  1e-4, 1e-3} and epochs in {1, 10, 20}; FedDF's own paper (section 4.1)
  distills with Adam at 1e-3, cosine annealed (`optimizer='adam'`), for up
  to 1e4 steps of 128 inputs with early stopping on validation accuracy
  (not done here). The teacher is computed once, as it does not change
  during distillation.

  Args:
    model: A `tff.learning.models.FunctionalModel` whose outputs are logits
      (one column: a binary logit).
    student_weights: The merged model's trainable weights.
    teacher_weight_lists: The K >= 1 client models (see
      `models_from_deltas`).
    server_x: Server inputs matching the model's x input spec.
    steps: Number of steps (>= 0).
    batch_size: Examples per batch (>= 1).
    learning_rate: The step size (> 0; with 'adam', the initial one).
    temperature: The softmax temperature T (> 0; the paper's eq. (1): 1).
    seed: Seeds the batch order.
    optimizer: 'sgd' (plain steps, like the other baselines) or 'adam'
      (the paper's: Adam with its learning rate cosine annealed from
      `learning_rate` towards 0 over `steps`; see `_run_sgd`).

  Returns:
    The distilled weights, a new list of numpy arrays with the model's
    dtypes.

  Raises:
    TypeError: If `model` lacks FunctionalModel's interface or a weights
      argument is not a sequence.
    ValueError: If an argument is out of range, `optimizer` is unknown, the
      teacher list is empty, weight shapes differ from the model's, or
      `server_x` does not match the model's x input spec.
  """
  _check_model(model)
  steps, batch_size, learning_rate, seed = _check_sgd_args(
      steps, batch_size, learning_rate, seed)
  temperature = checks.check_float('temperature', temperature, 0.0, strict=True)
  if optimizer not in _OPTIMIZERS:
    raise ValueError(f'`optimizer` must be one of {_OPTIMIZERS}, got '
                     f'{optimizer!r}.')
  student = _model_weights(model, student_weights, 'student_weights')
  teachers = _check_teachers(model, teacher_weight_lists)
  x, num_examples = _server_data(model, server_x, None)
  if steps == 0:
    return [np.array(w) for w in student]
  teacher_probs = _ensemble_probs(model, teachers, x, num_examples,
                                  temperature)
  non_trainable = tuple(model.initial_weights[1])

  def batch_loss(trainable, batch):
    x, probs = batch
    output = model.predict_on_batch((trainable, non_trainable), x,
                                    training=True)
    return _kl(probs, _log_probs(output, temperature))

  dtype = np.asarray(student[0]).dtype if student else np.float32
  return _run_sgd(batch_loss, student,
                  (x, teacher_probs.astype(dtype)), num_examples,
                  steps=steps, batch_size=batch_size,
                  learning_rate=learning_rate, seed=seed,
                  optimizer=optimizer)
