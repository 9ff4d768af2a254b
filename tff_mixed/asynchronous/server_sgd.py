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
"""Minibatch SGD on the server's data: the hybrid baselines' building block.

The hybrid baselines that the guided-model-merging paper (Feddle, "Guided
Model Merging for Hybrid Data Learning", Zhu et al., section 5 and appendix
D) compares Feddle with all train on the server's own data D_S:

* Center: the server trains on its data alone, ignoring the clients,
  x <- SGD(x; D_S) (`center_round`);
* Fed+FT: after the round's federated merge, the server fine-tunes the merged
  model on its data, x <- SGD(merge(x, updates); D_S) (`fine_tune`);
* HFCL's and FedDF's server steps (`hfcl.py`, `feddf.py`) run `run_sgd` too.

Conventions chosen here (the paper leaves them open):
  * Minibatches: every epoch is a fresh permutation of the server data
    (numpy `default_rng(seed)`) cut into `ceil(n / batch_size)` batches, the
    last one possibly smaller; `steps` counts batches across epochs, so the
    paper's "server epochs M" is `M * steps_per_epoch(n, batch_size)`.
  * The model trains with `training=True`; functions never modify their
    arguments and return new lists of numpy arrays with the model's dtypes.
"""

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.asynchronous import server_data
from tff_mixed.core import model_ops
from tff_mixed.core import traced_cache
from tff_mixed.core import validation

# Model weights: one array per trainable variable, in the model's order.
Weights = Sequence[Any]


def check_model(model: Any) -> None:
  """Refuses a `model` without FunctionalModel's interface."""
  # Duck-typed so that tests can pass any object with FunctionalModel's
  # interface; the attributes are what the functions below use.
  for attribute in ('initial_weights', 'predict_on_batch', 'loss',
                    'input_spec'):
    if not hasattr(model, attribute):
      raise TypeError('`model` must be a tff.learning.models.FunctionalModel, '
                      f'got {type(model).__name__} (no `{attribute}`).')


def model_weights(model: Any, weights: Weights,
                  name: str) -> tuple[np.ndarray, ...]:
  """`weights` checked against (and cast to) the model's trainable weights."""
  return validation.check_like(weights, model.initial_weights[0], name,
                               "the model's trainable weights")


# ----------------------------------------------------------------------------
# Minibatch SGD on the server data.


def steps_per_epoch(num_examples: int, batch_size: int) -> int:
  """Batches in one pass over `num_examples` examples: ceil(n / B).

  Converts the paper's server epochs M to `steps`: M * steps_per_epoch.

  Raises:
    ValueError: If `num_examples < 1` or `batch_size < 1`.
  """
  num_examples = validation.check_int('num_examples', num_examples, 1)
  batch_size = validation.check_int('batch_size', batch_size, 1)
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
OPTIMIZERS = (SGD, ADAM)

# Adam's constants: those of Kingma & Ba (2015), which are also PyTorch's
# defaults, the optimizer FedDF's authors used.
_ADAM_BETA1 = 0.9
_ADAM_BETA2 = 0.999
_ADAM_EPSILON = 1e-8


def _adam_update(trainable, grads, m, v, i, learning_rate, steps):
  """Step i (from 0) of Adam, its rate cosine-annealed over `steps` (FedDF)."""
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
  return tuple(new), m, v


# The traced SGD loops by `run_sgd`'s `cache_key`: a fresh tf.function per
# call traced the loop again at every call (about a second, against a few
# steps per merge, once per round and method of an asynchronous run).
_LOOPS = traced_cache.TracedCache()


def _sgd_loop(batch_loss: Callable[[tuple[tf.Tensor, ...], Any], tf.Tensor],
              use_adam: bool, learning_rate: float, steps: int):
  """The traced loop `run(trainable, data, order, bounds)`.

  One graph for the whole loop: the batches are gathered in TF, so no
  Python round trip (and no retracing for the smaller last batch) per step.
  """

  @tf.function
  def run(trainable, data, order, bounds):
    def body(i, trainable, m, v):
      index = order[bounds[i, 0]:bounds[i, 1]]
      batch = tf.nest.map_structure(lambda a: tf.gather(a, index), data)
      # Weights the loss does not reach get a zero gradient: they keep their
      # value.
      _, grads = model_ops.trainable_loss_and_gradient(batch_loss, trainable,
                                                       batch)
      if not use_adam:
        return i + 1, model_ops.sgd_update(trainable, grads,
                                           learning_rate), m, v
      return (i + 1,) + _adam_update(trainable, grads, m, v, i,
                                     learning_rate, steps)

    # Adam's moments m and v (empty for SGD).
    zeros = tuple(tf.zeros_like(w) for w in trainable) if use_adam else ()
    _, trainable, _, _ = tf.while_loop(
        lambda i, *_: i < tf.shape(bounds)[0], body,
        (tf.constant(0), trainable, zeros, zeros))
    return trainable

  return run


def run_sgd(batch_loss: Callable[[tuple[tf.Tensor, ...], Any], tf.Tensor],
            weights: tuple[np.ndarray, ...], data: Any, num_examples: int,
            *, steps: int, batch_size: int, learning_rate: float,
            seed: int, optimizer: str = SGD,
            cache_key: Optional[Hashable] = None) -> list[np.ndarray]:
  """`steps` minibatch steps on batch_loss(w, batch).

  `optimizer='sgd'`: w <- w - lr * g. `'adam'` (FedDF's server optimizer):
  Adam (beta1 0.9, beta2 0.999, eps 1e-8, bias-corrected moments) whose
  step size at step j = 0, ..., steps - 1 is the cosine-annealed
  lr_j = lr * (1 + cos(pi j / steps)) / 2.

  `cache_key`: if given, the traced loop is kept under it and reused by the
  next call with the same key, which must then mean the same `batch_loss`
  (e.g. the model whose loss it is); None traces it for this call only.
  """
  order, bounds = _batch_plan(num_examples, batch_size, steps, seed)
  use_adam = optimizer == ADAM
  if steps == 0:
    return [np.array(w) for w in weights]
  # The rate and the step count stay Python numbers in the graph, as they
  # always were (a tensor input would round a float64 model's rate
  # differently), so they are part of the key.
  key = (None if cache_key is None else
         (cache_key, use_adam, learning_rate, steps))
  loop = _LOOPS.get(key, lambda: _sgd_loop(batch_loss, use_adam,
                                           learning_rate, steps))
  result = loop(tuple(tf.convert_to_tensor(w) for w in weights),
                tf.nest.map_structure(tf.convert_to_tensor, data),
                tf.constant(order), tf.constant(bounds))
  return [np.asarray(w) for w in result]


def check_sgd_args(steps: Any, batch_size: Any, learning_rate: Any,
                   seed: Any) -> tuple[int, int, float, int]:
  """`run_sgd`'s hyperparameters, checked."""
  return (validation.check_int('steps', steps, 0),
          validation.check_int('batch_size', batch_size, 1),
          validation.check_float('learning_rate', learning_rate, 0.0,
                                 strict=True),
          validation.check_int('seed', seed, 0))


def server_sgd(model: Any, weights: Weights, server_x: Any, server_y: Any,
               *, steps: int, batch_size: int, learning_rate: float,
               seed: int = 0, optimizer: str = SGD) -> list[np.ndarray]:
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
    optimizer: 'sgd' (default) or 'adam' (`run_sgd`'s Adam, its rate
      cosine-annealed over the steps; the guided-model-merging paper's
      server lr grids, 1e-5 to 1e-3, are Adam's scale).

  Returns:
    The trained weights, a new list of numpy arrays with the model's dtypes.

  Raises:
    TypeError: If `model` lacks FunctionalModel's interface or `weights` is
      not a sequence.
    ValueError: If an argument is out of range, `weights` has the wrong
      shapes, or the server data does not match the model's input spec.
  """
  check_model(model)
  steps, batch_size, learning_rate, seed = check_sgd_args(
      steps, batch_size, learning_rate, seed)
  check_optimizer(optimizer)
  weights = model_weights(model, weights, 'weights')
  data, num_examples = server_data.server_arrays(model, server_x, server_y)
  batch_loss = model_ops.trainable_loss_fn(model)
  return run_sgd(batch_loss, weights, data, num_examples, steps=steps,
                 batch_size=batch_size, learning_rate=learning_rate,
                 seed=seed, optimizer=optimizer,
                 cache_key=('model_loss', model))


def check_optimizer(optimizer: Any) -> str:
  """Refuses an optimizer name outside `OPTIMIZERS`."""
  if optimizer not in OPTIMIZERS:
    raise ValueError(f'`optimizer` must be one of {OPTIMIZERS}, got '
                     f'{optimizer!r}.')
  return optimizer


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

