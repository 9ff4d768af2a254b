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
"""FedDF: ensemble distillation of the client models on server inputs.

FedDF (Lin et al., "Ensemble Distillation for Robust Model Fusion in
Federated Learning", NeurIPS 2020, arXiv:2006.07242), one of the hybrid
baselines of the guided-model-merging paper (Zhu et al., section 5): the
merged model is the student and the ensemble of client models the teacher;
on the server's inputs x (in domain, or out of domain: labels are never used)
the student minimizes

    KL(p_T || p_S),  p_T = softmax((1/K) sum_k f(x; w_k) / T),
                     p_S = softmax(f(x; w) / T)

by minibatch steps (`server_sgd.run_sgd`): the teacher averages the client
models' logits before the softmax (the paper's AVGLOGITS, Algorithm 1 line 9
and eq. (1)), it does not average their probabilities.

Conventions chosen here (the paper leaves them open):
  * Eq. (1) has no temperature (T = 1, the default here); T > 1 divides the
    mean logit and the student's logits alike, and the KL is not rescaled by
    T^2 (the learning rate absorbs it). A model with a single output column
    is a binary classifier whose logit z gives the two classes
    softmax([0, z]) = (1 - sigmoid(z), sigmoid(z)), so its teacher is
    sigmoid(mean_k z_k / T).
  * The server optimizer: `optimizer='sgd'` (default, like every other
    baseline here) or `'adam'`, the paper's choice (section 4.1: Adam at
    learning rate 1e-3 with cosine annealing, up to 1e4 steps of batch 128);
    the paper's early stopping on a labelled validation set is not done (the
    server runs exactly `steps` steps).
  * The teachers predict with `training=False`; the student, like
    `server_sgd`, trains with `training=True`.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import server_data
from tff_mixed.asynchronous import server_sgd
from tff_mixed.core import traced_cache
from tff_mixed.core import validation

Weights = Sequence[Any]

# Teachers' predictions are computed in chunks of this many examples so the
# server's (possibly large, out-of-domain) inputs never sit in one tensor.
_PREDICT_CHUNK = 4096


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
  base = validation.as_arrays(weights, 'weights')
  return [[w + d for w, d in zip(base, validation.check_like(
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


# The teachers' logits function, traced once per model (`_ensemble_probs`
# runs at every distillation).
_LOGITS = traced_cache.TracedCache()


def _logits_fn(model: Any):
  non_trainable = tuple(model.initial_weights[1])

  @tf.function
  def logits(trainable, x):
    return model.predict_on_batch((trainable, non_trainable), x,
                                  training=False)

  return logits


def _ensemble_probs(model: Any, teachers: Sequence[tuple[np.ndarray, ...]],
                    x: Any, num_examples: int,
                    temperature: float) -> np.ndarray:
  """p_T = softmax(mean_k f(x; w_k) / T), `[n, classes]` (float64).

  FedDF's AVGLOGITS (arXiv:2006.07242, Algorithm 1 line 9, eq. (1)): the
  teachers' logits are averaged, then one softmax is taken (not the mean
  of the teachers' softmaxes, which differs wherever they disagree).
  """
  logits = _LOGITS.get(('feddf_logits', model), lambda: _logits_fn(model))
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
  return [server_sgd.model_weights(model, t, f'teacher_weight_lists[{i}]')
          for i, t in enumerate(teacher_weight_lists)]


def teacher_probs(model: Any, teacher_weight_lists: Sequence[Weights],
                  x: Any, *, temperature: float = 1.0) -> np.ndarray:
  """FedDF's teacher p_T on inputs `x`, `[n, classes]` (float64).

  The softmax of the teachers' averaged logits at `temperature`, as
  `feddf_distill` distills towards; e.g. to measure the ensemble's own
  accuracy. Arguments and errors are those of `feddf_distill`.
  """
  server_sgd.check_model(model)
  temperature = validation.check_float('temperature', temperature, 0.0,
                                       strict=True)
  teachers = _check_teachers(model, teacher_weight_lists)
  x, num_examples = server_data.server_arrays(model, x, None)
  return _ensemble_probs(model, teachers, x, num_examples, temperature)


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
  server_sgd.check_model(model)
  temperature = validation.check_float('temperature', temperature, 0.0,
                                       strict=True)
  student = server_sgd.model_weights(model, student_weights, 'student_weights')
  teachers = _check_teachers(model, teacher_weight_lists)
  x, num_examples = server_data.server_arrays(model, server_x, None)
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
                  optimizer: str = server_sgd.SGD) -> list[np.ndarray]:
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
      `learning_rate` towards 0 over `steps`; see `server_sgd.run_sgd`).

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
  server_sgd.check_model(model)
  steps, batch_size, learning_rate, seed = server_sgd.check_sgd_args(
      steps, batch_size, learning_rate, seed)
  temperature = validation.check_float('temperature', temperature, 0.0,
                                       strict=True)
  if optimizer not in server_sgd.OPTIMIZERS:
    raise ValueError(f'`optimizer` must be one of {server_sgd.OPTIMIZERS}, got '
                     f'{optimizer!r}.')
  student = server_sgd.model_weights(model, student_weights, 'student_weights')
  teachers = _check_teachers(model, teacher_weight_lists)
  x, num_examples = server_data.server_arrays(model, server_x, None)
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
  return server_sgd.run_sgd(batch_loss, student,
                  (x, teacher_probs.astype(dtype)), num_examples,
                  steps=steps, batch_size=batch_size,
                  learning_rate=learning_rate, seed=seed,
                  optimizer=optimizer,
                  cache_key=('feddf_distill', model, temperature))
