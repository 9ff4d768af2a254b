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
"""Builds TFF's federated CelebA database (`celeba.sqlite`) from raw CelebA.

`tff.simulation.datasets.celeba.load_data(cache_dir=DIR)` reads
`DIR/celeba.sqlite` and downloads nothing when that file exists. This module
writes such a file from a raw CelebA copy, so the loader runs offline and
unchanged.

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

The raw CelebA layout `convert_raw_celeba` reads, and its correspondence with
LEAF's preprocessing, from which TFF's dataset derives:

*   `img_align_celeba/`: the aligned and cropped JPEGs (`000001.jpg`, 178x218).
    LEAF resizes the whole aligned image to 84x84, aspect ratio not kept,
    with `Image.resize` and Pillow's default filter, which changed across
    Pillow releases. Here the image is converted to RGB and resized with an
    explicit `Image.BILINEAR` filter, so the output does not depend on the
    Pillow version. Pixels therefore need not match TFF's download bit for
    bit; the clients, their sizes and the labels do.
*   `identity_CelebA.txt`: `000001.jpg 2880`. A client is a celebrity and its
    id is the identity number as a string, as in LEAF and TFF. LEAF drops
    celebrities with fewer than 5 images (`min_images_per_client`).
*   `list_attr_celeba.txt`: the number of images, the 40 attribute names in
    CelebA's spelling (`5_o_Clock_Shadow ... Young`), then one line per image
    with a value of -1 or 1 per attribute. A name maps to TFF's by lowering
    its case, with `5_o_Clock_Shadow` becoming `five_o_clock_shadow`; -1 is
    written as 0.

The client split (train/test clients) and the example split are drawn with
numpy's generator from `seed`; the same inputs and seed give the same
database.

Cost: an example takes about 30 KB and is stored twice, so the full data
(about 200,000 images) needs on the order of 12 GB of disk; conversion takes
a few milliseconds per image on one CPU core.
"""

import collections
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
import os
import sys
import time
from typing import Any, NamedTuple, Optional
import zlib

from absl import logging
import numpy as np
from PIL import Image
import tensorflow as tf

from experiments.common import sqlite_files
from tff_mixed.tasks import celeba_smile

celeba = celeba_smile

DATABASE_FILENAME = 'celeba.sqlite'
IMAGE_SIZE = 84
IMAGE_FEATURE = 'image'
# TFF's spelling and order of the 40 attributes, and its split names.
ATTRIBUTE_NAMES = celeba.ATTRIBUTE_NAMES

SPLIT_BY_CLIENTS_TRAIN = celeba.TRAIN_SPLIT
SPLIT_BY_CLIENTS_TEST = celeba.TEST_SPLIT
SPLIT_BY_EXAMPLES_TRAIN = 'split_by_examples_train'
SPLIT_BY_EXAMPLES_TEST = 'split_by_examples_test'
SPLIT_NAMES = (SPLIT_BY_CLIENTS_TRAIN, SPLIT_BY_CLIENTS_TEST,
               SPLIT_BY_EXAMPLES_TRAIN, SPLIT_BY_EXAMPLES_TEST)

_NUM_PIXEL_VALUES = celeba.NUM_FEATURES
# The loader's check of a database (tables, splits, one example per split).
check_celeba_database = celeba.check_database
_CREATE_STATEMENTS = (
    'CREATE TABLE examples (split_name TEXT NOT NULL, client_id TEXT NOT NULL,'
    ' serialized_example_proto BLOB NOT NULL);',
    'CREATE TABLE client_metadata (client_id TEXT NOT NULL,'
    ' split_name TEXT NOT NULL, num_examples INTEGER NOT NULL);',
)
_CREATE_INDEX = ('CREATE INDEX examples_client_split ON examples'
                 ' (client_id, split_name);')
# CelebA spells this attribute with a leading digit; TFF spells the digit out.
_CELEBA_NAME_EXCEPTIONS = {'5_o_clock_shadow': 'five_o_clock_shadow'}
_LOG_EVERY_IMAGES = 5000


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


class ConversionSummary(NamedTuple):
  """What `convert_raw_celeba` read, dropped and wrote.

  Attributes:
    database_path: The written `celeba.sqlite`.
    images_listed: Images named in both the attribute and the identity file.
    images_found: Of those, the ones present in the image directory.
    images_used: Images written: found, within `max_images`, and of a kept
      client.
    clients_found: Identities among the found images (within `max_images`).
    clients_dropped: Identities dropped for having fewer than
      `min_images_per_client` images.
    database: The per-split counts of the written database.
  """
  database_path: str
  images_listed: int
  images_found: int
  images_used: int
  clients_found: int
  clients_dropped: int
  database: DatabaseSummary


_Example = tuple[np.ndarray, Mapping[str, bool]]


def celeba_to_tff_attribute_name(celeba_name: str) -> str:
  """Returns TFF's name of a CelebA attribute, e.g. `Smiling` -> `smiling`."""
  name = celeba_name.lower()
  return _CELEBA_NAME_EXCEPTIONS.get(name, name)


def _check_fraction(name: str, value: float) -> None:
  if not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
    raise ValueError(f'{name} must be in (0, 1), got {value!r}.')


def _check_seed(seed: int) -> None:
  if (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)
      or seed < 0):
    raise ValueError(f'seed must be a non-negative integer, got {seed!r}.')


def _num_test_examples(num_examples: int, test_fraction: float) -> int:
  """Test examples of a client: ~fraction, and 1..n-1 when n >= 2."""
  if num_examples < 2:
    return 0
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




def _write_database(
    database_path: str,
    clients: Mapping[str, Sequence[_Example]],
    test_client_ids: Collection[str],
    example_test_fraction: float,
    seed: int,
    on_example: Optional[Callable[[], None]] = None,
) -> DatabaseSummary:
  """`write_celeba_database`, calling `on_example()` after every example."""
  _check_fraction('example_test_fraction', example_test_fraction)
  _check_seed(seed)
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
    for statement in _CREATE_STATEMENTS:
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
    connection.execute(_CREATE_INDEX)
  return DatabaseSummary(
      database_path=database_path,
      **{f: counts[f] for f in DatabaseSummary._fields[1:]})


def write_celeba_database(
    database_path: str,
    clients: Mapping[str, Sequence[tuple[np.ndarray, Mapping[str, bool]]]],
    test_client_ids: Collection[str],
    *,
    example_test_fraction: float = 0.1,
    seed: int = 0,
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

  Returns:
    A `DatabaseSummary` of clients and examples per split.

  Raises:
    ValueError: If an argument is invalid: a fraction outside (0, 1), test
      ids that are not clients or leave a split empty, an empty client, an
      image of the wrong shape, dtype or range, or attributes that are not
      exactly `ATTRIBUTE_NAMES` with bool values.
    OSError: If the file cannot be written (the temporary file is removed).
  """
  return _write_database(database_path, clients, test_client_ids,
                         example_test_fraction, seed)


def _check_readable_file(path: str, what: str) -> None:
  if not os.path.exists(path):
    raise FileNotFoundError(f'{what} {path} does not exist.')
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{what} {path} is not a file.')


def _data_lines(path: str) -> Iterator[tuple[int, list[str]]]:
  """Yields (line number, whitespace-split fields) of the non-blank lines."""
  with open(path, 'r', encoding='utf-8', errors='replace') as f:
    for line_number, line in enumerate(f, start=1):
      fields = line.split()
      if fields:
        yield line_number, fields


def read_attribute_file(attr_file: str) -> dict[str, dict[str, bool]]:
  """Reads CelebA's `list_attr_celeba.txt`.

  Args:
    attr_file: The path of the file: the number of images, the 40 attribute
      names in CelebA's spelling, then `000001.jpg -1  1 ...` lines.

  Returns:
    Image file name -> {TFF attribute name -> bool}, in file order.

  Raises:
    FileNotFoundError: If the file does not exist.
    ValueError: Naming the file and line: a missing or non-integer image
      count, a header whose names are not TFF's 40 attributes, a line with the
      wrong number of values or a value other than -1 and 1, a repeated image,
      or a number of lines that differs from the count.
  """
  _check_readable_file(attr_file, 'The attribute file')
  lines = _data_lines(attr_file)
  where = f'{attr_file}, line 1'
  try:
    line_number, fields = next(lines)
  except StopIteration:
    raise ValueError(f'{attr_file} is empty; expected CelebA\'s '
                     'list_attr_celeba.txt.') from None
  where = f'{attr_file}, line {line_number}'
  if len(fields) != 1 or not fields[0].isdigit():
    raise ValueError(f'{where}: expected the number of images, got '
                     f'{" ".join(fields)[:80]!r} (is this CelebA\'s '
                     'list_attr_celeba.txt, space-separated?).')
  declared = int(fields[0])
  try:
    line_number, header = next(lines)
  except StopIteration:
    raise ValueError(f'{attr_file}: missing the line of attribute '
                     'names.') from None
  where = f'{attr_file}, line {line_number}'
  names = [celeba_to_tff_attribute_name(n) for n in header]
  unknown = [h for h, n in zip(header, names) if n not in ATTRIBUTE_NAMES]
  missing = [n for n in ATTRIBUTE_NAMES if n not in names]
  repeated = sorted({n for n in names if names.count(n) > 1})
  if unknown or missing or repeated:
    raise ValueError(
        f'{where}: the attribute names do not map to TFF\'s 40 CelebA '
        f'attributes; unknown {unknown}, missing {missing}, repeated '
        f'{repeated}.')
  attributes = {}
  for line_number, fields in lines:
    where = f'{attr_file}, line {line_number}'
    if len(fields) != len(names) + 1:
      raise ValueError(f'{where}: expected an image name and {len(names)} '
                       f'values, got {len(fields)} fields.')
    image_name = fields[0]
    values = {}
    for name, value in zip(names, fields[1:]):
      if value not in ('1', '-1'):
        raise ValueError(f'{where}: attribute {name} of {image_name} is '
                         f'{value!r}; CelebA values are -1 and 1.')
      values[name] = value == '1'
    if image_name in attributes:
      raise ValueError(f'{where}: {image_name} is listed twice.')
    attributes[image_name] = {n: values[n] for n in ATTRIBUTE_NAMES}
  if len(attributes) != declared:
    raise ValueError(f'{attr_file}: line 1 declares {declared} images but '
                     f'{len(attributes)} are listed (truncated file?).')
  return attributes


def read_identity_file(identity_file: str) -> dict[str, str]:
  """Reads CelebA's `identity_CelebA.txt`.

  Args:
    identity_file: The path of the file, with `000001.jpg 2880` lines.

  Returns:
    Image file name -> identity (the client id, a string of digits).

  Raises:
    FileNotFoundError: If the file does not exist.
    ValueError: Naming the file and line: a line that is not an image name
      and a non-negative integer, or a repeated image; or an empty file.
  """
  _check_readable_file(identity_file, 'The identity file')
  identities = {}
  for line_number, fields in _data_lines(identity_file):
    where = f'{identity_file}, line {line_number}'
    if len(fields) != 2 or not fields[1].isdigit():
      raise ValueError(f'{where}: expected "<image> <identity number>", got '
                       f'{" ".join(fields)[:80]!r}.')
    image_name, identity = fields
    if image_name in identities:
      raise ValueError(f'{where}: {image_name} is listed twice.')
    identities[image_name] = str(int(identity))
  if not identities:
    raise ValueError(f'{identity_file} lists no images.')
  return identities


def load_image(path: str) -> np.ndarray:
  """Returns an image file as a uint8 [84, 84, 3] RGB array.

  Converts to RGB, then resizes the whole image (aspect ratio not kept, as
  LEAF does) with `Image.BILINEAR`.

  Args:
    path: An image file Pillow can read, e.g. a CelebA JPEG.

  Raises:
    ValueError: Naming the file, if it cannot be read or decoded.
  """
  try:
    with Image.open(path) as image:
      resized = image.convert('RGB').resize((IMAGE_SIZE, IMAGE_SIZE),
                                             Image.BILINEAR)
  except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
    raise ValueError(f'Cannot read the image {path}: {e}') from e
  return np.asarray(resized, dtype=np.uint8)


class _LazyClients(Mapping):
  """Client id -> examples, loading and resizing the images on access."""

  def __init__(self, image_dir: str, images_by_client: Mapping[str, list[str]],
               attributes: Mapping[str, Mapping[str, bool]]):
    self._image_dir = image_dir
    self._images_by_client = images_by_client
    self._attributes = attributes

  def __getitem__(self, client_id: str) -> list[_Example]:
    return [(load_image(os.path.join(self._image_dir, name)),
             self._attributes[name])
            for name in self._images_by_client[client_id]]

  def __iter__(self) -> Iterator[str]:
    return iter(self._images_by_client)

  def __len__(self) -> int:
    return len(self._images_by_client)


class _Progress:
  """Counts written images: a tqdm bar, or an absl log line every so often."""

  def __init__(self, total: int, use_tqdm: bool):
    self._total = total
    self._done = 0
    self._start = time.monotonic()
    self._bar = None
    if use_tqdm:
      import tqdm  # pylint: disable=g-import-not-at-top
      self._bar = tqdm.tqdm(total=total, desc='Converting CelebA', unit='img')

  def __call__(self) -> None:
    self._done += 1
    if self._bar is not None:
      self._bar.update(1)
    elif self._done % _LOG_EVERY_IMAGES == 0 or self._done == self._total:
      elapsed = time.monotonic() - self._start
      logging.info('Converted %d/%d images (%.0f s).', self._done,
                   self._total, elapsed)

  def close(self) -> None:
    if self._bar is not None:
      self._bar.close()


def convert_raw_celeba(
    image_dir: str,
    attr_file: str,
    identity_file: str,
    output_dir: str,
    *,
    min_images_per_client: int = 5,
    test_client_fraction: float = 0.1,
    example_test_fraction: float = 0.1,
    seed: int = 0,
    max_images: Optional[int] = None,
    progress: Optional[bool] = None,
) -> ConversionSummary:
  """Converts a raw CelebA copy to `output_dir/celeba.sqlite`.

  Uses the images present in `image_dir` and listed in both text files, in
  file name order (the first `max_images` of them if set), groups them by
  identity, drops identities with fewer than `min_images_per_client` images,
  splits the clients into train and test with `seed`, resizes each image to
  84x84 RGB (see `load_image`) and writes the database with
  `write_celeba_database`. Afterwards
  `tff.simulation.datasets.celeba.load_data(cache_dir=output_dir)` reads it
  without downloading.

  The write is atomic: a failure or interruption midway leaves no new
  `celeba.sqlite` (an existing one is kept) and no temporary file.

  Args:
    image_dir: CelebA's `img_align_celeba` directory; any subset of the
      images, of any size.
    attr_file: CelebA's `list_attr_celeba.txt`.
    identity_file: CelebA's `identity_CelebA.txt`.
    output_dir: Directory for `celeba.sqlite`; created if missing.
    min_images_per_client: Identities with fewer (present) images are dropped;
      LEAF and TFF use 5.
    test_client_fraction: Fraction of the clients in `split_by_clients_test`
      (rounded, at least one in each split).
    example_test_fraction: Fraction of each client's examples in
      `split_by_examples_test`.
    seed: Seed of both splits (non-negative).
    max_images: If set, use only the first this many found images, e.g. for a
      quick trial.
    progress: True for a tqdm progress bar, False for absl log lines every
      5000 images, None for a bar only when stderr is a terminal.

  Returns:
    A `ConversionSummary`.

  Raises:
    FileNotFoundError: If `image_dir`, `attr_file` or `identity_file` does not
      exist.
    ValueError: On a bad argument value, a malformed text file (naming the
      file and line), an unreadable image (naming it), no images left after
      filtering, or fewer than two clients.
  """
  if (not isinstance(min_images_per_client, (int, np.integer))
      or min_images_per_client < 1):
    raise ValueError('min_images_per_client must be an integer >= 1, got '
                     f'{min_images_per_client!r}.')
  _check_fraction('test_client_fraction', test_client_fraction)
  _check_fraction('example_test_fraction', example_test_fraction)
  _check_seed(seed)
  if max_images is not None and (
      not isinstance(max_images, (int, np.integer)) or max_images < 1):
    raise ValueError(f'max_images must be None or an integer >= 1, got '
                     f'{max_images!r}.')
  if not os.path.isdir(image_dir):
    raise FileNotFoundError(f'The image directory {image_dir} does not exist '
                            'or is not a directory.')
  _check_readable_file(attr_file, 'The attribute file')
  _check_readable_file(identity_file, 'The identity file')

  attributes = read_attribute_file(attr_file)
  identities = read_identity_file(identity_file)
  listed = [name for name in attributes if name in identities]
  only_one = len(attributes) + len(identities) - 2 * len(listed)
  if only_one:
    logging.warning('%d images are listed in only one of %s and %s; they are '
                    'skipped.', only_one, attr_file, identity_file)
  present = set(os.listdir(image_dir))
  found = sorted(name for name in listed if name in present)
  if not found:
    raise ValueError(
        f'None of the {len(listed)} images listed in {attr_file} and '
        f'{identity_file} is in {image_dir}.')
  selected = found if max_images is None else found[:max_images]
  images_by_identity = collections.defaultdict(list)
  for name in selected:
    images_by_identity[identities[name]].append(name)
  kept = {client_id: names
          for client_id, names in sorted(images_by_identity.items())
          if len(names) >= min_images_per_client}
  images_used = sum(len(names) for names in kept.values())
  logging.info(
      '%d images listed, %d found in %s, %d used: %d of %d identities have '
      'at least %d images.', len(listed), len(found), image_dir,
      len(selected), len(kept), len(images_by_identity),
      min_images_per_client)
  if not kept:
    raise ValueError(
        f'No images left after filtering: {len(selected)} images of '
        f'{len(images_by_identity)} identities found in {image_dir}, but none '
        f'has min_images_per_client={min_images_per_client} images.')
  if len(kept) < 2:
    raise ValueError(
        f'Only one client ({next(iter(kept))}) has at least '
        f'min_images_per_client={min_images_per_client} images of the '
        f'{len(selected)} found; the split by clients needs two or more.')

  client_ids = sorted(kept)
  num_test = min(max(int(round(len(client_ids) * test_client_fraction)), 1),
                 len(client_ids) - 1)
  order = np.random.default_rng(seed).permutation(len(client_ids))
  test_client_ids = {client_ids[i] for i in order[:num_test]}

  if progress is None:
    progress = sys.stderr.isatty()
  database_path = os.path.join(output_dir, DATABASE_FILENAME)
  counter = _Progress(images_used, use_tqdm=bool(progress))
  try:
    database = _write_database(
        database_path, _LazyClients(image_dir, kept, attributes),
        test_client_ids, example_test_fraction, seed, on_example=counter)
  finally:
    counter.close()
  return ConversionSummary(
      database_path=database_path,
      images_listed=len(listed),
      images_found=len(found),
      images_used=images_used,
      clients_found=len(images_by_identity),
      clients_dropped=len(images_by_identity) - len(kept),
      database=database)
