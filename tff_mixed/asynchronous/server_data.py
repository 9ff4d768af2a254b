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
"""The server's own data in asynchronous hybrid FL: checks and batching.

In hybrid FL the server holds a small dataset D_S next to the clients'
(Feddle, "Guided Model Merging for Hybrid Data Learning", Zhu et al., section
3; the hybrid baselines of its section 5). Feddle's coefficient search and
surrogate head read it as *batches* (a `tf.data.Dataset` of batches, a list
of batches, or one batch), cycled through one pass after another; the
server-SGD baselines read it as *arrays* `(x, y)` to cut their own
minibatches. Both are checked here against the model's input spec, with
errors naming the data's and the model's structures.
"""

from collections.abc import Iterator, Mapping
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.core import central_objective


# ----------------------------------------------------------------------------
# Batches (Feddle).


def _element_specs(server_data: Any) -> list[Any]:
  """Type specs of the batches of `server_data` (see `check_server_data`)."""
  if isinstance(server_data, tf.data.Dataset):
    return [server_data.element_spec]
  to_spec = lambda t: tf.type_spec_from_value(tf.convert_to_tensor(t))
  if isinstance(server_data, list):
    return [tf.nest.map_structure(to_spec, b) for b in server_data]
  if isinstance(server_data, (tuple, Mapping)):
    return [tf.nest.map_structure(to_spec, server_data)]
  raise TypeError('Server data must be a tf.data.Dataset of batches, a list '
                  'of batches or one batch (a tuple or mapping), got '
                  f'{type(server_data).__name__}.')


def _matches(spec: Any, element: Any) -> bool:
  """Whether `element` has `spec`'s structure and compatible shapes."""
  try:
    tf.nest.assert_same_structure(spec, element, check_types=False)
  except (ValueError, TypeError):
    return False
  for s, e in zip(tf.nest.flatten(spec), tf.nest.flatten(element)):
    if not isinstance(e, tf.TensorSpec) or not s.shape.is_compatible_with(
        e.shape):
      return False
    if s.dtype.is_floating and not (e.dtype.is_floating or e.dtype.is_integer):
      return False
  return True


def shuffled_batches(x: np.ndarray, y: np.ndarray, batch_size: int,
                     seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
  """A fixed shuffled list of full server batches, for Feddle to cycle.

  The examples are permuted once (numpy `default_rng(seed)`) and cut into
  `len(x) // batch_size` batches; a smaller remainder is left out, and fewer
  examples than `batch_size` give the single batch `(x, y)`.
  """
  order = np.random.default_rng(seed).permutation(len(x))
  return [(x[order[i:i + batch_size]], y[order[i:i + batch_size]])
          for i in range(0, len(x) - batch_size + 1, batch_size)] or [(x, y)]


def check_server_data(server_data: Any, input_spec: Any,
                      labels_from_model: bool = True) -> None:
  """Checks that server batches have the model's input structure.

  Args:
    server_data: A `tf.data.Dataset` of batches, a list of batches, or one
      batch (a tuple or mapping of arrays).
    input_spec: The model's input spec, `(x_spec, y_spec)` or a mapping with
      'x' and 'y'.
    labels_from_model: If True (in-domain) the whole batch must match
      `input_spec`. If False (out-of-domain) only x must match; the labels are
      one tensor of class ids of any compatible layout.

  Raises:
    TypeError: If `server_data` is of an unsupported type.
    ValueError: If the data is empty or a batch's structure, shapes or dtypes
      do not match, naming both structures.
  """
  specs = _element_specs(server_data)
  if not specs:
    raise ValueError('Server data is empty.')
  x_spec, _ = central_objective.split_batch(input_spec)
  for element in specs:
    if labels_from_model:
      ok = _matches(input_spec, element)
      expected = input_spec
    else:
      expected = (x_spec, 'labels TensorSpec [batch, ...]')
      try:
        x, labels = central_objective.split_batch(element)
        ok = (_matches(x_spec, x) and isinstance(labels, tf.TensorSpec)
              and labels.shape.rank is not None and labels.shape.rank >= 1)
      except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
      raise ValueError('Server data whose element structure does not match '
                       f'the model: server data element {element!r}, model '
                       f'input spec {expected!r}.')


def iterable_batches(server_data: Any) -> Any:
  """The server data as something to iterate batches over."""
  if isinstance(server_data, (tf.data.Dataset, list)):
    return server_data
  if isinstance(server_data, (tuple, Mapping)):
    return [server_data]
  raise TypeError('Server data must be a tf.data.Dataset of batches, a list '
                  'of batches or one batch (a tuple or mapping), got '
                  f'{type(server_data).__name__}.')


def one_pass(server_data: Any) -> list[Any]:
  """One pass of the server data: its batches, as tensors.

  Raises:
    ValueError: If there is no batch.
  """
  batches = [tf.nest.map_structure(tf.convert_to_tensor, batch)
             for batch in iterable_batches(server_data)]
  if not batches:
    raise ValueError('Server data is empty.')
  return batches


def cycle_batches(server_data: Any) -> Iterator[Any]:
  """Endless batches: one pass after another through the server data."""
  batches = iterable_batches(server_data)
  while True:
    empty = True
    for batch in batches:
      empty = False
      yield tf.nest.map_structure(tf.convert_to_tensor, batch)
    if empty:
      raise ValueError('Server data is empty.')


# ----------------------------------------------------------------------------
# Arrays (the server-SGD baselines and FedDF).


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


def server_arrays(model: Any, server_x: Any,
                  server_y: Optional[Any]) -> tuple[Any, int]:
  """Checked server data `(x, y)` (or `x` when `server_y` is None) and n."""
  x_spec, y_spec = central_objective.split_batch(model.input_spec)
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
