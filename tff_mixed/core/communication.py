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
"""Per-client communication of a process, read off its compiled `next`.

The movie task of mixed FL (arXiv:2205.13655, table 2 and appendix B.3)
claims that `federated_select` cuts what each client receives and sends by
more than 93.9%. We measure it from the types TFF actually moves, not from a
formula: every intrinsic of the compiled `next` that sends a server value to
the clients (`federated_broadcast`, `federated_select`) counts as download,
every one that combines client values at the server (the aggregations) as
upload. A `federated_select` result is a sequence of rows; its size is the
row size times the static key count of its `client_keys`.
"""

from typing import NamedTuple

import numpy as np
import tensorflow_federated as tff

_DOWNLOADS = frozenset({'federated_broadcast', 'federated_select',
                        'federated_secure_select'})
_UPLOADS = frozenset({
    'federated_aggregate', 'federated_mean', 'federated_weighted_mean',
    'federated_sum', 'federated_secure_sum', 'federated_secure_sum_bitwidth',
    'federated_secure_modular_sum',
})


class Communication(NamedTuple):
  """Bytes one client receives and sends per round.

  Attributes:
    down_bytes: Total bytes received (broadcasts and selected rows).
    up_bytes: Total bytes sent (inputs of aggregations, metrics included).
    down: `(intrinsic, bytes)` per download, in the computation's order.
    up: `(intrinsic, bytes)` per upload.
  """

  down_bytes: int
  up_bytes: int
  down: list[tuple[str, int]]
  up: list[tuple[str, int]]


def type_bytes(type_spec) -> int:
  """Bytes of a value of `type_spec` (tensors of static shape only)."""
  if isinstance(type_spec, tff.FederatedType):
    return type_bytes(type_spec.member)
  if isinstance(type_spec, tff.StructType):
    return sum(type_bytes(type_spec[i]) for i in range(len(type_spec)))
  if isinstance(type_spec, tff.TensorType):
    shape = tuple(type_spec.shape)
    if any(d is None for d in shape):
      raise ValueError(f'Cannot size a tensor of unknown shape: {type_spec}.')
    return int(np.prod(shape, dtype=np.int64)) * int(
        np.dtype(type_spec.dtype).itemsize)
  raise ValueError(f'Cannot size values of type {type_spec}.')


def _intrinsics(block):
  if isinstance(block, tff.framework.Intrinsic):
    yield block
  for child in block.children():
    yield from _intrinsics(child)


def per_client_communication(
    process: tff.learning.templates.LearningProcess) -> Communication:
  """Measures what one client receives and sends in a round of `process`.

  Args:
    process: A learning process (its `next` is compiled to building blocks).

  Returns:
    A `Communication`.
  """
  down, up = [], []
  for intrinsic in _intrinsics(process.next.to_building_block()):
    signature = intrinsic.type_signature
    if intrinsic.uri in _DOWNLOADS:
      result = signature.result
      if intrinsic.uri == 'federated_broadcast':
        down.append((intrinsic.uri, type_bytes(result)))
      else:
        keys_type = signature.parameter[0].member
        rows = type_bytes(result.member.element)
        down.append((intrinsic.uri, rows * int(tuple(keys_type.shape)[0])))
    elif intrinsic.uri in _UPLOADS:
      parameter = signature.parameter
      value = parameter[0] if isinstance(parameter, tff.StructType) else (
          parameter)
      if isinstance(value, tff.FederatedType) and (
          value.placement == tff.CLIENTS):
        up.append((intrinsic.uri, type_bytes(value)))
  return Communication(sum(b for _, b in down), sum(b for _, b in up), down,
                       up)
