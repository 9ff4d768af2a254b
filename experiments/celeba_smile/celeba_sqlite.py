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
"""Writes TFF's federated CelebA database (`celeba.sqlite`).

`tff.simulation.datasets.celeba.load_data(cache_dir=DIR)` reads
`DIR/celeba.sqlite` and downloads nothing when that file exists. This module
writes such a file from clients' examples (`raw_celeba_lib` reads them from
a raw CelebA copy), so the loader runs offline and unchanged.

The schema is the one of TFF's `SqlClientData`:

*   `examples(split_name TEXT, client_id TEXT, serialized_example_proto BLOB)`:
    one row per example and split kind, so every image is stored twice (once
    in a `split_by_clients_*` split, once in a `split_by_examples_*` split).
*   `client_metadata(client_id TEXT, split_name TEXT, num_examples INTEGER)`:
    one row per client and split it appears in.

An index on `examples(client_id, split_name)` serves the per-client queries of
`SqlClientData`; the loader does not need it but is much faster with it.

The four splits are the ones `load_data` reads:

*   `split_by_clients_train`, `split_by_clients_test`: every client is in
    exactly one of them, with all its examples (`load_data()`, the default).
*   `split_by_examples_train`, `split_by_examples_test`: every client is in
    both, with about 90% of its examples in train and 10% in test; a client
    with 2 or more examples has at least one in each
    (`load_data(split_by_clients=False)`).

Every example is a serialized `tf.train.Example` with the features `celeba.py`
parses: `image`, an int64 list of 84*84*3 values in [0, 255] (row-major
height, width, RGB channel), and the 40 attributes of
`tff.simulation.datasets.celeba.ATTRIBUTE_NAMES`, each one int64 that is 0 or
1 (the loader casts it to bool).

The client split is given; the example split is drawn per client with
numpy's generator from `seed` and the client's id, so the same clients and
seed give the same database.
"""

import collections
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NamedTuple, Optional
import zlib

import numpy as np
import tensorflow as tf

from experiments.common import sqlite_files
from tff_mixed.tasks import celeba_database

DATABASE_FILENAME = 'celeba.sqlite'
IMAGE_SIZE = 84
IMAGE_FEATURE = 'image'
# TFF's spelling and order of the 40 attributes, and its split names.
ATTRIBUTE_NAMES = celeba_database.ATTRIBUTE_NAMES

SPLIT_BY_CLIENTS_TRAIN = celeba_database.TRAIN_SPLIT
SPLIT_BY_CLIENTS_TEST = celeba_database.TEST_SPLIT
SPLIT_BY_EXAMPLES_TRAIN = 'split_by_examples_train'
SPLIT_BY_EXAMPLES_TEST = 'split_by_examples_test'
SPLIT_NAMES = (SPLIT_BY_CLIENTS_TRAIN, SPLIT_BY_CLIENTS_TEST,
               SPLIT_BY_EXAMPLES_TRAIN, SPLIT_BY_EXAMPLES_TEST)



class DatabaseSummary(NamedTuple):
  """Clients and examples per split of a written database."""
  database_path: str
  split_by_clients_train_clients: int
  split_by_clients_train_examples: int
  split_by_clients_test_clients: int
  split_by_clients_test_examples: int
  split_by_examples_train_clients: int
  split_by_examples_train_examples: int
  split_by_examples_test_clients: int
  split_by_examples_test_examples: int



# A client's example: an image and its attributes.
Example = tuple[np.ndarray, Mapping[str, bool]]


def check_fraction(name: str, value: float) -> None:
  """Raises a ValueError naming `name` unless 0 < `value` < 1."""
  if not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
    raise ValueError(f'{name} must be in (0, 1), got {value!r}.')


def check_seed(seed: int) -> None:
  """Raises a ValueError unless `seed` is an int >= 0."""
  if (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)
      or seed < 0):
    raise ValueError(f'seed must be a non-negative integer, got {seed!r}.')


# A client with one example keeps it for training.
_NONE = 0


def _num_test_examples(num_examples: int, test_fraction: float) -> int:
  """Test examples of a client: ~fraction, and 1..n-1 when n >= 2."""
  if num_examples < 2:
    return _NONE
  return min(max(int(round(num_examples * test_fraction)), 1),
             num_examples - 1)


def _client_rng(seed: int, client_id: str) -> np.random.Generator:
  # Per-client streams: a client's example split does not depend on which
  # other clients exist. crc32 is stable across processes, unlike `hash`.
  return np.random.default_rng([seed, zlib.crc32(client_id.encode('utf-8'))])


def _pixel_values(image: Any, where: str) -> list[int]:
  """Checks an image and returns its values, row-major, as Python ints."""
  array = np.asarray(image)
  if array.shape != (IMAGE_SIZE, IMAGE_SIZE, 3):
    raise ValueError(f'{where}: the image must have shape '
                     f'({IMAGE_SIZE}, {IMAGE_SIZE}, 3), got {array.shape}.')
  if array.dtype.kind not in 'ui':
    raise ValueError(f'{where}: the image must have an integer dtype (e.g. '
                     f'uint8), got {array.dtype}.')
  if array.dtype != np.uint8 and (array.min() < 0 or array.max() > 255):
    raise ValueError(f'{where}: pixel values must be in [0, 255], got '
                     f'[{array.min()}, {array.max()}].')
  return array.astype(np.int64).ravel().tolist()


def _attribute_values(attributes: Mapping[str, Any], where: str) -> list[int]:
  """Checks an attribute mapping; returns 0/1 in `ATTRIBUTE_NAMES` order."""
  if not isinstance(attributes, Mapping):
    raise ValueError(f'{where}: attributes must be a mapping from the 40 '
                     f'attribute names to bools, got {type(attributes)}.')
  missing = [n for n in ATTRIBUTE_NAMES if n not in attributes]
  extra = sorted(set(attributes) - set(ATTRIBUTE_NAMES))
  if missing or extra:
    raise ValueError(f'{where}: attributes must be exactly '
                     f'ATTRIBUTE_NAMES; missing {missing}, unknown {extra}.')
  values = []
  for name in ATTRIBUTE_NAMES:
    value = attributes[name]
    if isinstance(value, (bool, np.bool_)):
      values.append(int(value))
    elif isinstance(value, (int, np.integer)) and value in (0, 1):
      values.append(int(value))
    else:
      raise ValueError(f'{where}: attribute {name!r} must be a bool (or 0/1),'
                       f' got {value!r}.')
  return values


def _serialize_example(image: Any, attributes: Mapping[str, Any],
                       where: str) -> bytes:
  """Returns the serialized `tf.train.Example` of one CelebA example."""
  pixels = _pixel_values(image, where)
  attribute_values = _attribute_values(attributes, where)
  example = tf.train.Example()
  feature = example.features.feature
  # Filling the fields in place avoids copying the 21168-long list twice.
  feature[IMAGE_FEATURE].int64_list.value.extend(pixels)
  for name, value in zip(ATTRIBUTE_NAMES, attribute_values):
    feature[name].int64_list.value.append(value)
  return example.SerializeToString()


def write_celeba_database(
    database_path: str,
    clients: Mapping[str, Sequence[Example]],
    test_client_ids: Collection[str],
    *,
    example_test_fraction: float = 0.1,
    seed: int = 0,
    on_example: Optional[Callable[[], None]] = None,
) -> DatabaseSummary:
  """Writes a TFF `celeba.sqlite` with all four splits.

  The file is written to a temporary file in the same directory (a hidden
  `.celeba.sqlite.*.tmp`, which TFF's loader never opens) and renamed onto
  `database_path` once complete. If anything fails, KeyboardInterrupt
  included, the temporary file is removed and a database already at
  `database_path` is left untouched. Parent directories are created.

  Clients are read one at a time (`clients[client_id]`), so `clients` may be
  a lazy mapping that loads a client's images on access.

  Args:
    database_path: Where to write, usually `DIR/celeba.sqlite` for
      `tff.simulation.datasets.celeba.load_data(cache_dir=DIR)`.
    clients: Client id -> that client's non-empty examples, each an `(image,
      attributes)` pair: an integer array (e.g. uint8) of shape [84, 84, 3]
      with values in [0, 255] (height, width, RGB), and a mapping from each
      of the 40 `ATTRIBUTE_NAMES` to a bool (or 0/1). Client ids are
      non-empty strings without single quotes.
    test_client_ids: The clients of `split_by_clients_test`; the others form
      `split_by_clients_train`. Needs at least one client in each.
    example_test_fraction: The fraction of each client's examples that goes
      to `split_by_examples_test` (rounded; at least one, and at least one
      left for train, when the client has 2 or more examples; a client with
      one example is only in `split_by_examples_train`).
    seed: Seed of the example split (non-negative); each client's draw
      depends only on the seed and its id.
    on_example: Called after every example is serialized (a progress
      count), if given.

  Returns:
    A `DatabaseSummary` of clients and examples per split.

  Raises:
    ValueError: If an argument is invalid: a fraction outside (0, 1), test
      ids that are not clients or leave a split empty, an empty client, an
      image of the wrong shape, dtype or range, or attributes that are not
      exactly `ATTRIBUTE_NAMES` with bool values.
    OSError: If the file cannot be written (the temporary file is removed).
  """
  check_fraction('example_test_fraction', example_test_fraction)
  check_seed(seed)
  client_ids = list(clients)
  for client_id in client_ids:
    if not isinstance(client_id, str) or not client_id or "'" in client_id:
      # TFF's `SqlClientData` splices the id into its SQL between quotes.
      raise ValueError('Client ids must be non-empty strings without single '
                       f'quotes, got {client_id!r}.')
  client_ids.sort()
  if isinstance(test_client_ids, str):
    raise ValueError('test_client_ids must be a collection of client ids, '
                     f'not the string {test_client_ids!r}.')
  test_ids = set(test_client_ids)
  unknown = sorted(test_ids - set(client_ids), key=str)
  if unknown:
    raise ValueError(f'test_client_ids {unknown[:10]} are not clients.')
  if not test_ids or len(test_ids) == len(client_ids):
    raise ValueError(
        'The split by clients needs at least one train and one test client: '
        f'got {len(client_ids) - len(test_ids)} train and {len(test_ids)} '
        'test clients.')

  counts = collections.Counter()
  with sqlite_files.new_database(database_path) as connection:
    for statement in sqlite_files.CLIENT_DATA_TABLES:
      connection.execute(statement)
    for client_id in client_ids:
      examples = clients[client_id]
      if not examples:
        raise ValueError(f'Client {client_id!r} has no examples.')
      protos = []
      for i, example in enumerate(examples):
        where = f'client {client_id!r}, example {i}'
        try:
          image, attributes = example
        except (TypeError, ValueError):
          raise ValueError(f'{where}: expected an (image, attributes) pair, '
                           f'got {type(example)}.') from None
        protos.append(_serialize_example(image, attributes, where))
        if on_example is not None:
          on_example()
      by_clients = (SPLIT_BY_CLIENTS_TEST if client_id in test_ids
                    else SPLIT_BY_CLIENTS_TRAIN)
      num_test = _num_test_examples(len(protos), example_test_fraction)
      test_indices = set(_client_rng(seed, client_id).choice(
          len(protos), size=num_test, replace=False).tolist())
      rows = [(by_clients, client_id, p) for p in protos]
      rows += [(SPLIT_BY_EXAMPLES_TEST if i in test_indices
                else SPLIT_BY_EXAMPLES_TRAIN, client_id, p)
               for i, p in enumerate(protos)]
      connection.executemany(
          'INSERT INTO examples (split_name, client_id, '
          'serialized_example_proto) VALUES (?, ?, ?);', rows)
      sizes = {by_clients: len(protos),
               SPLIT_BY_EXAMPLES_TRAIN: len(protos) - num_test,
               SPLIT_BY_EXAMPLES_TEST: num_test}
      metadata = [(client_id, split, n) for split, n in sizes.items() if n]
      connection.executemany(
          'INSERT INTO client_metadata (client_id, split_name, num_examples)'
          ' VALUES (?, ?, ?);', metadata)
      for split, n in sizes.items():
        if n:
          counts[f'{split}_clients'] += 1
          counts[f'{split}_examples'] += n
    connection.execute(sqlite_files.CLIENT_DATA_INDEX)
  return DatabaseSummary(
      database_path=database_path,
      **{f: counts[f] for f in DatabaseSummary._fields[1:]})
