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
"""Argument checks shared by the asynchronous package's modules.

Every bad input gets a ValueError or TypeError naming the argument and what
was expected; weights are sequences of arrays shaped like the model's.
"""

from collections.abc import Sequence
import math
from typing import Any

import numpy as np
import tensorflow as tf

Weights = Sequence[Any]


def check_int(name: str, value: Any, minimum: int) -> int:
  """`value` as an int, which must be >= `minimum` (bools refused)."""
  if (isinstance(value, (bool, np.bool_))
      or not isinstance(value, (int, np.integer)) or value < minimum):
    raise ValueError(f'`{name}` must be an int >= {minimum}, got {value!r}.')
  return int(value)


def check_float(name: str, value: Any, minimum: float, strict: bool) -> float:
  """A finite real number >= minimum (> minimum when `strict`)."""
  ok = (isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)
        and (value > minimum if strict else value >= minimum))
  if not ok:
    relation = '>' if strict else '>='
    raise ValueError(f'`{name}` must be a finite number {relation} {minimum}, '
                     f'got {value!r}.')
  return float(value)


def as_arrays(weights: Weights, name: str) -> tuple[np.ndarray, ...]:
  """A sequence of weight arrays as a tuple of numpy arrays."""
  if isinstance(weights, (np.ndarray, tf.Tensor)) or not isinstance(
      weights, Sequence):
    raise TypeError(f'`{name}` must be a sequence of weight arrays, got '
                    f'{type(weights).__name__}.')
  return tuple(np.asarray(w) for w in weights)


def check_like(value: Weights, reference: Sequence[Any], name: str,
               reference_name: str = 'the model weights'
              ) -> tuple[np.ndarray, ...]:
  """`value` as arrays with `reference`'s dtypes, checked for its shapes."""
  arrays = as_arrays(value, name)
  shapes = [a.shape for a in arrays]
  expected = [np.shape(r) for r in reference]
  if shapes != expected:
    raise ValueError(f'`{name}` has weight shapes {shapes}, but '
                     f'{reference_name} has shapes {expected}.')
  return tuple(a.astype(np.asarray(r).dtype, copy=False)
               for a, r in zip(arrays, reference))
