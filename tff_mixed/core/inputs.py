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
"""TFF's own inputs, turned into what the core uses.

The core computes the same loss on clients (f_i) and at the server (f_c,
arXiv:2205.13655, eq. 1) as a pure function of the weights, so it works on a
`tff.learning.models.FunctionalModel` and on central examples held as numpy
arrays (or an `ExampleStore`). A TFF user more often has a `model_fn`
returning a `tff.learning.models.VariableModel`, a Keras model, and a
`tf.data.Dataset`. This module converts them, through TFF's own converter
(`tff.learning.models.functional_model_from_keras`):

*   `functional_model`: a `FunctionalModel` as is; a `model_fn` whose
    VariableModel comes from `tff.learning.models.from_keras_model`; a Keras
    model (or a no-arg callable building one) with its loss and input spec.
*   `central_data`: numpy arrays and `ExampleStore`s as they are; a finite
    `tf.data.Dataset` read once into numpy arrays.
"""

import collections
from collections.abc import Callable, Mapping
import functools
from typing import Any, Optional, Union

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
# TFF 0.87 has no public accessor for what `from_keras_model` wraps (its Keras
# model, loss and metric constructors); its private class is read here only.
# TFF 0.87 raises KerasFunctionalModelError without exporting it.
from tensorflow_federated.python.learning.models import functional as tff_functional
from tensorflow_federated.python.learning.models import keras_utils as tff_keras

_ACCEPTED_MODELS = (
    'a `tff.learning.models.FunctionalModel`, a no-arg `model_fn` returning '
    'a `tff.learning.models.VariableModel` made by '
    '`tff.learning.models.from_keras_model`, or a `tf.keras.Model` (or a '
    'no-arg callable building one) with `loss` and `input_spec`')

# What the builders take as `model` (`functional_model` without Keras
# arguments): a FunctionalModel, or a `model_fn` of a Keras-backed
# VariableModel.
ModelInput = Union[tff.learning.models.FunctionalModel,
                   Callable[[], tff.learning.models.VariableModel]]

# Rows per read when an unbatched dataset is read into arrays (reading one
# element at a time is slow).
_READ_BATCH = 4096


def functional_model(
    model: Any,
    *,
    loss: Optional[tf.keras.losses.Loss] = None,
    input_spec: Any = None,
    metrics_constructor: Any = None,
) -> tff.learning.models.FunctionalModel:
  """The `tff.learning.models.FunctionalModel` of `model`.

  Every builder of `tff_mixed` calls this on its `model` argument, so it
  takes whatever this function takes without `loss` or `input_spec`: a
  FunctionalModel or a `model_fn`.

  *   A `FunctionalModel` is returned as it is.
  *   A no-arg `model_fn` (TFF's convention: it builds a fresh model each
      call) returning a VariableModel made by
      `tff.learning.models.from_keras_model(keras_model, loss, input_spec,
      metrics=...)`: its Keras model, loss, input spec and metric
      constructors go through `functional_model_from_keras`; the initial
      weights are those of the Keras model one call of `model_fn` builds.
      Its metrics are those TFF's own algorithms report for it (`loss`,
      `num_examples`, `num_batches` and the given ones).
  *   A `tf.keras.Model`, or a no-arg callable returning one, with `loss` (a
      `tf.keras.losses.Loss`) and `input_spec` (the `(x, y)` structure of
      `tf.TensorSpec`s of a batch), and optional `metrics_constructor` (as
      `tff.learning.metrics.create_functional_metric_fns` takes, or a plain
      dict of names to no-arg metric constructors): converted by
      `functional_model_from_keras`, with `loss`, `num_examples` and
      `num_batches` added where not given, so its metrics are those of the
      same model through a `model_fn`.

  Limits, those of a variable-free model and of TFF 0.87: a VariableModel
  not made by `from_keras_model` is refused, as TFF has no converter for
  it (its loss exists only inside `forward_pass`, which also updates its
  metric variables); so are Keras models with BatchNormalization, shared
  layers or non-trainable weights that change in training, several
  outputs with their own losses, layer losses (`keras_model.losses`, e.g.
  kernel regularizers: the converted loss would leave them out), and
  metrics given as `tf.keras.metrics.Metric` instances rather than no-arg
  constructors. Unlike the model `functional_model_from_keras` returns,
  which runs only inside TFF computations, the converted model's forward
  pass also runs in eager TensorFlow, where the asynchronous methods'
  server steps (Feddle's search, FedDF, Fed+FT, Center, HFCL) use it.

  Args:
    model: The model, as above.
    loss: The loss of a Keras model; `None` otherwise.
    input_spec: The batch spec of a Keras model; `None` otherwise.
    metrics_constructor: Optional metrics of a Keras model.

  Returns:
    A `tff.learning.models.FunctionalModel`.

  Raises:
    TypeError: If `model` is none of the above, or a Keras model comes
      without `loss` and `input_spec`.
    ValueError: If the model is one of the refused kinds above.
  """
  keras_args = (loss, input_spec, metrics_constructor)
  if isinstance(model, tff.learning.models.FunctionalModel):
    _check_no_keras_args(keras_args, 'a FunctionalModel')
    return model
  if isinstance(model, tf.keras.Model):
    return _from_keras(model, *keras_args)
  if isinstance(model, tff.learning.models.VariableModel):
    raise TypeError(
        '`model` is a VariableModel instance; pass the no-arg `model_fn` that '
        'builds it, as TFF\'s algorithms take (a fresh model each call).')
  if not callable(model):
    raise TypeError(f'`model` must be {_ACCEPTED_MODELS}; got '
                    f'{type(model).__name__}.')
  built = model()
  if isinstance(built, tf.keras.Model):
    return _from_keras(model, *keras_args)
  if isinstance(built, tff.learning.models.VariableModel):
    _check_no_keras_args(keras_args, 'a `model_fn`')
    return _from_variable_model(built)
  raise TypeError(f'`model` is a callable returning {type(built).__name__}; '
                  f'it must be {_ACCEPTED_MODELS}.')


def _check_no_keras_args(keras_args, what: str) -> None:
  if any(a is not None for a in keras_args):
    raise ValueError(
        f'`loss`, `input_spec` and `metrics_constructor` are for a Keras '
        f'model; `model` is {what}, which has its own.')


def _from_keras(keras_model, loss, input_spec, metrics_constructor):
  """`functional_model_from_keras`, with the arguments it needs checked."""
  if loss is None or input_spec is None:
    raise TypeError(
        'A Keras `model` needs its `loss` (a `tf.keras.losses.Loss`) and '
        '`input_spec` (the (x, y) `tf.TensorSpec`s of a batch): call '
        '`tff_mixed.functional_model(keras_model, loss=..., input_spec=...)`, '
        'or pass a `model_fn` returning '
        '`tff.learning.models.from_keras_model(keras_model, loss, '
        'input_spec)`.')
  if not isinstance(loss, tf.keras.losses.Loss):
    raise TypeError('`loss` must be a `tf.keras.losses.Loss` (e.g. '
                    '`tf.keras.losses.MeanSquaredError()`), got '
                    f'{type(loss).__name__}.')
  if isinstance(keras_model, tf.keras.Model):
    _check_no_layer_losses(keras_model)
  metrics = _with_training_metrics(loss, metrics_constructor)
  try:
    converted = tff.learning.models.functional_model_from_keras(
        keras_model, loss, input_spec, metrics_constructor=metrics)
  except tff_functional.KerasFunctionalModelError as e:
    raise ValueError(
        f'The Keras `model` cannot become a FunctionalModel: {e}') from e
  return _usable_outside_tff(converted, keras_model)


def _usable_outside_tff(converted, keras_model):
  """`converted` with a forward pass that also runs outside TFF.

  TFF's converted model refuses to run its forward pass outside a TFF
  computation or graph, but the asynchronous server methods (Feddle's
  coefficient search, FedDF's distillation, Fed+FT's and Center's server
  steps) run the model in eager TensorFlow. The forward pass here is the
  same idea as TFF's, without that refusal: a clone of the Keras model
  whose variables are, as they are created, the given weights (tensors, so
  nothing is created and gradients reach the weights), in the order of
  creation that TFF's initial weights follow. Weights, loss, metrics and
  input spec are TFF's conversion's.
  """
  template = (keras_model if isinstance(keras_model, tf.keras.Model)
              else keras_model())

  @tf.function
  def predict_on_batch(model_weights, x, training=True):
    trainable, non_trainable = (list(w) for w in model_weights)

    def as_given(next_creator, **kwargs):
      del next_creator  # Nothing is created: the weights are the variables.
      source = trainable if kwargs.get('trainable', True) else non_trainable
      return source.pop(0)

    with tf.variable_creator_scope(as_given):
      clone = tf.keras.models.clone_model(template)
    return clone(x, training=training)

  return tff.learning.models.FunctionalModel(
      initial_weights=converted.initial_weights,
      predict_on_batch_fn=predict_on_batch,
      loss_fn=converted.loss,
      metrics_fns=(converted.initialize_metrics_state,
                   converted.update_metrics_state,
                   converted.finalize_metrics),
      input_spec=converted.input_spec)


class _MeanLoss(tf.keras.metrics.Mean):
  """The loss as a metric: each batch's loss weighted by its size.

  The per-example mean over a client's data, as the `loss` metric that
  `tff.learning.models.from_keras_model` adds, so that a Keras model gives
  the same `loss` through either route.
  """

  def __init__(self, loss_fn, name='loss', dtype=tf.float32):
    super().__init__(name, dtype)
    self._loss_fn = loss_fn

  def update_state(self, y_true, y_pred, sample_weight=None):  # pytype: disable=signature-mismatch
    del sample_weight  # The batch size weighs the batch's loss.
    batch_size = tf.shape(tf.nest.flatten(y_pred)[0])[0]
    return super().update_state(self._loss_fn(y_true, y_pred), batch_size)


def _with_training_metrics(loss, metrics_constructor):
  """`metrics_constructor` with `loss`, `num_examples` and `num_batches`.

  TFF's `from_keras_model` adds these three to every model; its
  `functional_model_from_keras` adds none, so without them a Keras model
  given directly would report no training loss while the same model through
  a `model_fn` does. The ones the user gives under these names are kept.
  Accepts what `create_functional_metric_fns` takes, and a plain dict.
  """
  extras = collections.OrderedDict([
      ('loss', functools.partial(_MeanLoss, loss)),
      ('num_examples', tff.learning.metrics.NumExamplesCounter),
      ('num_batches', tff.learning.metrics.NumBatchesCounter),
  ])
  if metrics_constructor is None:
    return extras
  if isinstance(metrics_constructor, Mapping):
    given = collections.OrderedDict(metrics_constructor)
    for name, constructor in given.items():
      if isinstance(constructor, tf.keras.metrics.Metric) or not callable(
          constructor):
        raise TypeError(
            f'`metrics_constructor[{name!r}]` must be a no-arg callable '
            'returning a `tf.keras.metrics.Metric` (e.g. '
            '`tf.keras.metrics.BinaryAccuracy`), not a '
            f'{type(constructor).__name__}.')
    return collections.OrderedDict(
        list(given.items()) +
        [(k, v) for k, v in extras.items() if k not in given])
  if not callable(metrics_constructor):
    raise TypeError(
        '`metrics_constructor` must be a no-arg callable returning a '
        '`tf.keras.metrics.Metric` or a mapping of names to them, or a '
        'mapping of names to such callables; got '
        f'{type(metrics_constructor).__name__}.')
  built = metrics_constructor()
  if isinstance(built, tf.keras.metrics.Metric):
    return _with_training_metrics(
        loss, collections.OrderedDict([(built.name, metrics_constructor)]))
  if not isinstance(built, Mapping):
    raise TypeError(
        '`metrics_constructor()` must return a `tf.keras.metrics.Metric` or '
        f'a mapping of names to them; got {type(built).__name__}.')

  def metrics():
    made = collections.OrderedDict(metrics_constructor())
    for name, constructor in extras.items():
      if name not in made:
        made[name] = constructor()
    return made

  return metrics


def _check_no_layer_losses(keras_model: tf.keras.Model) -> None:
  if keras_model.losses:
    raise ValueError(
        f'The Keras `model` has {len(keras_model.losses)} layer loss(es) '
        '(`keras_model.losses`, e.g. kernel regularizers), which '
        '`functional_model_from_keras` leaves out of the loss; add them to '
        'the loss instead, or build a FunctionalModel.')


def _from_variable_model(variable_model):
  """A Keras-backed VariableModel's parts, through the Keras converter."""
  keras_backed = tff_keras._KerasModel  # pylint: disable=protected-access
  if not isinstance(variable_model, keras_backed):
    raise ValueError(
        f'`model_fn` returned a {type(variable_model).__name__}, a '
        'VariableModel not made by `tff.learning.models.from_keras_model`. '
        'TFF 0.87 has no converter from such a VariableModel to the '
        'variable-free FunctionalModel mixed FL needs (its loss exists only '
        'inside `forward_pass`, which also updates its metric variables); '
        'build a `tff.learning.models.FunctionalModel`, or wrap a Keras model '
        'with `from_keras_model`.')
  # pylint: disable=protected-access
  keras_model = variable_model._keras_model
  loss_fns = variable_model._loss_fns
  constructors = variable_model._metric_constructors
  # pylint: enable=protected-access
  if len(loss_fns) != 1:
    raise ValueError(
        f'`model_fn`\'s Keras model has {len(loss_fns)} losses (one per '
        'output); `functional_model_from_keras` takes one loss of all '
        'outputs.')
  if not constructors:
    raise ValueError(
        '`model_fn` gave `from_keras_model` its metrics as '
        '`tf.keras.metrics.Metric` instances; a FunctionalModel needs no-arg '
        'constructors (e.g. `metrics=[tf.keras.metrics.MeanSquaredError]`).')
  return _from_keras(keras_model, loss_fns[0], variable_model.input_spec,
                     collections.OrderedDict(constructors))


def central_data(data: Any) -> Any:
  """Central examples as `central_data_objective` holds them.

  Numpy arrays (a tuple `(x, y)` or a mapping with `'x'` and `'y'`) and an
  `ExampleStore` are returned as they are. A `tf.data.Dataset` is read once,
  at build time, into numpy arrays of the structure of its elements, which
  the central work then holds as constants of its computations, like numpy
  central data: it must be finite and fit in memory (use an `ExampleStore`
  for central sets that do not). Its elements are `(x, y)` tuples or
  mappings of dense tensors, either single examples (stacked) or batches
  (concatenated): a dataset is read as batched when every component's
  first dimension is unknown, as after `Dataset.batch` (so a dataset
  batched with `drop_remainder=True`, whose batch dimension is known, reads
  as one example per batch: `unbatch()` it first).

  Args:
    data: Numpy arrays, an `ExampleStore`, or a `tf.data.Dataset`.

  Returns:
    `data`, or the dataset's examples as a structure of numpy arrays with
    one row per example.

  Raises:
    TypeError: If the dataset's components are not dense tensors.
    ValueError: If the dataset is infinite or empty.
  """
  if not isinstance(data, tf.data.Dataset):
    return data
  return _dataset_arrays(data)


def _dataset_arrays(dataset: tf.data.Dataset) -> Any:
  """A finite dataset's elements, stacked or concatenated, as numpy arrays."""
  if dataset.cardinality().numpy() == tf.data.INFINITE_CARDINALITY:
    raise ValueError('The central `tf.data.Dataset` is infinite (e.g. '
                     '`repeat()`ed); central data must be finite.')
  specs = tf.nest.flatten(dataset.element_spec)
  for spec in specs:
    if not isinstance(spec, tf.TensorSpec):
      raise TypeError('The central `tf.data.Dataset` must hold dense tensors, '
                      f'found a {type(spec).__name__}.')
  batched = all(s.shape.rank and s.shape[0] is None for s in specs)
  if not batched:
    dataset = dataset.batch(_READ_BATCH)
  columns = [[] for _ in specs]
  for element in dataset.as_numpy_iterator():
    for column, value in zip(columns, tf.nest.flatten(element)):
      column.append(value)
  if not columns[0]:
    raise ValueError('The central `tf.data.Dataset` holds no examples.')
  return tf.nest.pack_sequence_as(
      dataset.element_spec, [np.concatenate(c) for c in columns])

