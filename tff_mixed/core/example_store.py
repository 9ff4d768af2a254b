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
"""File-backed central examples, readable by index from inside a TF graph.

`central_data_objective` bakes numpy arrays into the server computations as
constants, which is right for small central sets but impossible for large
ones: a TF graph is limited to 2 GB, and the computation travels to the TFF
worker every round. The CelebA smile task's central set (every non-smiling
training face, ~90,000 images of 84x84x3) needs ~1.9 GB even as uint8.

An `ExampleStore` keeps examples as fixed-size records, so a batch of random
examples is a gather of records: true uniform sampling (no shuffle buffer),
plain TF ops that run in TFF's C++ worker, and nothing large inside the
computation. The computation only holds the directory path, so every worker
that runs the computation must see the store at that path (a local disk in
simulation, a shared file system for remote workers).

Two layouts, chosen when the store is written:

*   Per example (the default, for large sets): each record in its own small
    file, so a batch of B examples opens B files and memory stays flat
    however large the store.
*   Packed (`packed=True`, for sets that fit in memory many times over, up
    to `MAX_PACKED_BYTES`): every record in one file, which a read loads
    whole and gathers from. Opening one file instead of a batch's worth is
    faster for small sets, and a small set held this way rather than as
    constants keeps it out of the serialized computation, which TFF's
    execution context sends to its worker on every call (about 1-3 ms per
    MB of computation a call, measured here in 2026-11: round_time's small
    model, its cohort and central set in packed stores rather than
    constants, one process, interleaved: Parallel Training's grouped round
    27.4 against 31.7 ms, 1-way GT's 27.0 against 36.2 ms).

Layout of a store directory:

*   `examples/SSSSS/IIIIIIIII.bin` (per example): example I in shard
    S = I // 4096 (keeps directories small); its fields' little-endian
    bytes, concatenated in manifest order.
*   `examples.bin` (packed): the same records, one after another.
*   `manifest.json`: fields (name, dtype, shape), example count, layout and
    record size. Written last, atomically: a store without a manifest is
    incomplete (an interrupted write) and `load_example_store` refuses it.

This module is pure TensorFlow and numpy: no federated types.
"""

from collections.abc import Callable, Iterable, Mapping
import contextlib
import json
import os
import shutil
import tempfile
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf

MANIFEST_FILENAME = 'manifest.json'
_EXAMPLES_DIR = 'examples'
_PACKED_FILENAME = 'examples.bin'
_PER_EXAMPLE, _PACKED = 'per_example', 'packed'
# A packed store is one tf.string when read: well inside TF's limits, and a
# read that loads it whole stays cheap only for small sets.
MAX_PACKED_BYTES = 1 << 30
_EXAMPLES_PER_SHARD = 4096
_FORMAT_VERSION = 1


class FieldSpec(NamedTuple):
  """One field of every example: its name, numpy dtype name and shape."""

  name: str
  dtype: str
  shape: tuple[int, ...]

  @property
  def num_bytes(self) -> int:
    return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(
        self.dtype).itemsize


class ExampleStore(NamedTuple):
  """A directory of fixed-size example files (see the module docstring).

  Build it with `write_example_store` and open it with `load_example_store`.

  Attributes:
    directory: Absolute path of the store.
    fields: The `FieldSpec`s, in record order.
    num_examples: Number of examples.
    structure: `'tuple'` to return batches as a tuple of fields (e.g. the
      `(x, y)` of a model's `input_spec`), `'dict'` for a mapping by name.
    map_fn: Optional function applied, in the graph, to every batch read
      (e.g. uint8 pixels to float features); `None` returns the stored
      dtypes.
    packed: Whether the records are in one file (see the module docstring).
  """

  directory: str
  fields: tuple[FieldSpec, ...]
  num_examples: int
  structure: str
  map_fn: Optional[Callable[[Any], Any]] = None
  packed: bool = False

  @property
  def record_bytes(self) -> int:
    return sum(f.num_bytes for f in self.fields)

  @property
  def packed_path(self) -> str:
    """The file holding every record of a packed store."""
    return os.path.join(self.directory, _PACKED_FILENAME)

  def example_path(self, index: int) -> str:
    """The file holding example `index` (for checks and tools).

    Raises:
      ValueError: For a packed store, whose records share `packed_path`.
    """
    if self.packed:
      raise ValueError(f'The packed store {self.directory} keeps every '
                       f'example in {_PACKED_FILENAME}; there is no file per '
                       'example.')
    return os.path.join(self.directory, _EXAMPLES_DIR,
                        f'{index // _EXAMPLES_PER_SHARD:05d}',
                        f'{index:09d}.bin')

  def _records(self, indices: tf.Tensor) -> tf.Tensor:
    """The raw records at int64 `indices`, uint8 `[B, record_bytes]`."""
    if self.packed:
      records = tf.reshape(
          tf.io.decode_raw(tf.io.read_file(self.packed_path), tf.uint8),
          [self.num_examples, self.record_bytes])
      return tf.gather(records, indices)
    prefix = os.path.join(self.directory, _EXAMPLES_DIR) + os.sep
    paths = tf.strings.join([
        prefix,
        tf.strings.as_string(indices // _EXAMPLES_PER_SHARD, width=5,
                             fill='0'),
        os.sep,
        tf.strings.as_string(indices, width=9, fill='0'),
        '.bin',
    ])
    contents = tf.map_fn(tf.io.read_file, paths,
                         fn_output_signature=tf.string)
    # Every record has the same size, so this is a dense [B, record_bytes].
    return tf.io.decode_raw(contents, tf.uint8)

  def read(self, indices: tf.Tensor) -> Any:
    """Reads the examples at `indices` (int tensor `[B]`) inside a graph.

    Returns:
      The batch: a tuple or dict (see `structure`) of tensors with leading
      dimension B, after `map_fn`.
    """
    indices = tf.cast(indices, tf.int64)
    raw = self._records(indices)
    # A static batch size (known for sampled batches) keeps static shapes,
    # from which TFF derives the types of what is broadcast.
    batch_size = indices.shape[0]
    raw = tf.reshape(raw, [-1 if batch_size is None else batch_size,
                           self.record_bytes])
    if batch_size is None:
      batch_size = tf.shape(raw)[0]
    tensors, offset = [], 0
    for field in self.fields:
      dtype = tf.dtypes.as_dtype(field.dtype)
      chunk = raw[:, offset:offset + field.num_bytes]
      offset += field.num_bytes
      if dtype.size > 1:
        chunk = tf.reshape(chunk, [batch_size, -1, dtype.size])
      if dtype == tf.bool:
        tensor = tf.cast(chunk, tf.bool)  # bitcast has no bool kernel.
      elif dtype == tf.uint8:
        tensor = chunk
      else:
        tensor = tf.bitcast(chunk, dtype)
      tensors.append(tf.reshape(tensor, [batch_size, *field.shape]))
    if self.structure == 'dict':
      batch = {f.name: t for f, t in zip(self.fields, tensors)}
    else:
      batch = tuple(tensors)
    return batch if self.map_fn is None else self.map_fn(batch)


def _field_specs(batch: Any) -> tuple[tuple[FieldSpec, ...], str]:
  if isinstance(batch, Mapping):
    items, structure = list(batch.items()), 'dict'
  elif isinstance(batch, (tuple, list)):
    items, structure = [(f'field_{i}', v) for i, v in enumerate(batch)
                       ], 'tuple'
  else:
    raise TypeError('Example batches must be a tuple or a mapping of numpy '
                    f'arrays, got {type(batch).__name__}.')
  if not items:
    raise ValueError('Example batches must have at least one field.')
  specs = []
  for name, value in items:
    array = np.asarray(value)
    if array.ndim == 0:
      raise ValueError(f'Field {name!r} is a scalar; every field needs a '
                       'leading example dimension.')
    if array.dtype.kind not in 'biuf':
      raise TypeError(f'Field {name!r} has dtype {array.dtype}; only '
                      'numeric and bool fields can be stored.')
    specs.append(FieldSpec(str(name), array.dtype.name,
                           tuple(int(d) for d in array.shape[1:])))
  return tuple(specs), structure


def _checked_batch(batch_num: int, batch: Any, fields, structure):
  """`(fields, structure, little-endian arrays)` of batch `batch_num`.

  Raises:
    TypeError, ValueError: If the batch is malformed or does not match the
      first batch's `fields` and `structure` (`None` for the first).
  """
  specs, batch_structure = _field_specs(batch)
  if fields is not None and (specs != fields or batch_structure != structure):
    raise ValueError(
        f'Batch {batch_num} has fields {specs}, but the first batch had '
        f'{fields}: every batch must have the same fields, dtypes and '
        'per-example shapes.')
  arrays = [np.asarray(v) for v in (
      batch.values() if isinstance(batch, Mapping) else batch)]
  lengths = {len(a) for a in arrays}
  if len(lengths) != 1:
    raise ValueError(f'Batch {batch_num} has fields of different lengths '
                     f'{sorted(lengths)}.')
  # Little-endian bytes: what tf.bitcast reads on every supported host.
  little = [a.astype(a.dtype.newbyteorder('<'), copy=False) for a in arrays]
  return specs, batch_structure, little


def _write_records(tmp_dir: str, packed_file, arrays, count: int,
                   fields) -> int:
  """Writes one batch's records after the `count` written; the new count.

  Into `packed_file` when it is open (a packed store), else a file each.
  """
  num_rows = len(arrays[0])
  if packed_file is not None:
    record_bytes = sum(f.num_bytes for f in fields)
    if (count + num_rows) * record_bytes > MAX_PACKED_BYTES:
      raise ValueError(
          f'A packed store holds at most {MAX_PACKED_BYTES} bytes; these '
          f'examples need more ({record_bytes} bytes each). Write it with '
          'packed=False (a file per example).')
    if num_rows:
      # The whole batch's records at once, one row of bytes each.
      packed_file.write(np.concatenate(
          [np.ascontiguousarray(a).reshape(num_rows, -1).view(np.uint8)
           for a in arrays], axis=1).tobytes())
    return count + num_rows
  for index in range(count, count + num_rows):
    shard_dir = os.path.join(tmp_dir, _EXAMPLES_DIR,
                             f'{index // _EXAMPLES_PER_SHARD:05d}')
    if index % _EXAMPLES_PER_SHARD == 0:
      os.makedirs(shard_dir, exist_ok=True)
    with open(os.path.join(shard_dir, f'{index:09d}.bin'), 'wb') as f:
      for a in arrays:
        f.write(np.ascontiguousarray(a[index - count]).tobytes())
  return count + num_rows


def _publish(tmp_dir: str, directory: str) -> None:
  """Renames the complete store `tmp_dir` onto `directory`."""
  # mkdtemp makes the directory private (0700); give it the usual mode, so
  # workers running as other users can read the store.
  umask = os.umask(0)
  os.umask(umask)
  os.chmod(tmp_dir, 0o777 & ~umask)
  if os.path.exists(directory):
    # Swap in two renames so a crash leaves the old or the new store.
    old = directory + '.old'
    shutil.rmtree(old, ignore_errors=True)
    os.replace(directory, old)
    os.replace(tmp_dir, directory)
    shutil.rmtree(old, ignore_errors=True)
  else:
    os.replace(tmp_dir, directory)


def write_example_store(directory: str, batches: Iterable[Any], *,
                        packed: bool = False) -> ExampleStore:
  """Writes examples to a new store at `directory`, atomically.

  The store is built in a temporary sibling directory and renamed onto
  `directory` once complete, so an interrupted write leaves nothing a reader
  would take for a store. An existing store at `directory` is replaced only
  when the new one is complete.

  Args:
    directory: Where the store goes.
    batches: An iterable of batches, each a tuple or a mapping of numpy
      arrays sharing their first dimension; every batch must have the fields,
      dtypes and per-example shapes of the first. Streaming batches keeps
      memory flat for large stores.
    packed: Whether to write every record into one file (see the module
      docstring), for sets of at most `MAX_PACKED_BYTES`.

  Returns:
    The `ExampleStore` (tuple or dict structure, like the batches).

  Raises:
    TypeError, ValueError: If the batches are malformed or inconsistent,
      hold no examples, or exceed `MAX_PACKED_BYTES` when `packed`.
  """
  directory = os.path.abspath(os.fspath(directory))
  parent = os.path.dirname(directory)
  os.makedirs(parent, exist_ok=True)
  tmp_dir = tempfile.mkdtemp(dir=parent,
                             prefix=f'.{os.path.basename(directory)}.',
                             suffix='.tmp')
  fields, structure, count = None, None, 0
  try:
    with contextlib.ExitStack() as stack:
      packed_file = (stack.enter_context(
          open(os.path.join(tmp_dir, _PACKED_FILENAME), 'wb'))
                     if packed else None)
      for batch_num, batch in enumerate(batches):
        fields, structure, arrays = _checked_batch(batch_num, batch, fields,
                                                   structure)
        count = _write_records(tmp_dir, packed_file, arrays, count, fields)
    if not count:
      raise ValueError('No examples to write: `batches` was empty.')
    manifest = dict(
        format_version=_FORMAT_VERSION, num_examples=count,
        structure=structure, layout=_PACKED if packed else _PER_EXAMPLE,
        fields=[dict(name=f.name, dtype=f.dtype, shape=list(f.shape))
                for f in fields])
    with open(os.path.join(tmp_dir, MANIFEST_FILENAME), 'w') as f:
      json.dump(manifest, f, indent=2)
    _publish(tmp_dir, directory)
  except BaseException:
    shutil.rmtree(tmp_dir, ignore_errors=True)
    raise
  return load_example_store(directory)


def load_example_store(
    directory: str,
    map_fn: Optional[Callable[[Any], Any]] = None) -> ExampleStore:
  """Opens the store at `directory`.

  Args:
    directory: A directory written by `write_example_store`.
    map_fn: Optional in-graph function applied to every batch read (see
      `ExampleStore`).

  Returns:
    The `ExampleStore`.

  Raises:
    FileNotFoundError: If `directory` holds no complete store.
    ValueError: If the manifest is malformed or the example files do not
      match it.
  """
  directory = os.path.abspath(os.fspath(directory))
  manifest_path = os.path.join(directory, MANIFEST_FILENAME)
  if not os.path.isfile(manifest_path):
    raise FileNotFoundError(
        f'No example store at {directory}: {MANIFEST_FILENAME} is missing '
        '(the store was never written, or its writing was interrupted).')
  try:
    with open(manifest_path) as f:
      manifest = json.load(f)
    if manifest['format_version'] != _FORMAT_VERSION:
      raise ValueError(f'format version {manifest["format_version"]}')
    fields = tuple(
        FieldSpec(str(d['name']), np.dtype(d['dtype']).name,
                  tuple(int(s) for s in d['shape']))
        for d in manifest['fields'])
    num_examples = int(manifest['num_examples'])
    structure = manifest['structure']
    # Stores written before packing existed have no layout: a file each.
    layout = manifest.get('layout', _PER_EXAMPLE)
    if (structure not in ('tuple', 'dict') or not fields or num_examples < 1
        or layout not in (_PER_EXAMPLE, _PACKED)):
      raise ValueError('bad structure, fields, count or layout')
  except (OSError, KeyError, TypeError, ValueError) as e:
    raise ValueError(f'Malformed example store manifest {manifest_path}: '
                     f'{e}') from e
  if map_fn is not None and not callable(map_fn):
    raise TypeError(f'`map_fn` must be callable, got {type(map_fn).__name__}.')
  store = ExampleStore(directory, fields, num_examples, structure, map_fn,
                       packed=layout == _PACKED)
  if store.packed:
    size = num_examples * store.record_bytes
    path = store.packed_path
    if not os.path.isfile(path) or os.path.getsize(path) != size:
      raise ValueError(
          f'Example store {directory} is damaged: {path} is missing or not '
          f'{size} bytes long.')
    return store
  # The cheap checks that catch a truncated or foreign store: the first and
  # last records exist with the manifest's size.
  for index in {0, num_examples - 1}:
    path = store.example_path(index)
    if not os.path.isfile(path) or os.path.getsize(path) != store.record_bytes:
      raise ValueError(
          f'Example store {directory} is damaged: {path} is missing or not '
          f'{store.record_bytes} bytes long.')
  return store
