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
"""TFF's federated CelebA database: where it is, checking it, loading it.

The CelebA smile task (`celeba_smile`; Augenstein et al., arXiv:2205.13655,
section 4.1, appendix B.1) reads TFF's federated CelebA, a `celeba.sqlite`
database of serialized `tf.train.Example`s split by clients (celebrities):
84x84x3 int64 images in [0, 255] and 40 boolean attributes.
`check_database` checks a file up front, with a message that names what is
wrong, before TFF's loader (`load_client_data`) reads it; `scan_split` reads
a whole split's images and one attribute in one pass.

Getting the data: `load_data` downloads `celeba.sqlite.lzma` (~500 MB) from
TFF's bucket into `cache_dir` on first use; without network, build the same
`celeba.sqlite` from a raw CelebA copy with
`python -m experiments.celeba_smile.convert_raw_celeba_main`.
"""

import os
import sqlite3
from typing import Optional
import urllib.parse

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

IMAGE_SHAPE = (84, 84, 3)
NUM_FEATURES = int(np.prod(IMAGE_SHAPE))
DATABASE_FILENAME = 'celeba.sqlite'
ATTRIBUTE_NAMES = tuple(tff.simulation.datasets.celeba.ATTRIBUTE_NAMES)
TRAIN_SPLIT = 'split_by_clients_train'
TEST_SPLIT = 'split_by_clients_test'
# Examples parsed at a time by `scan_split`.
PASS_BATCH = 256
_IMAGE_FEATURE = 'image'
# The tables and columns TFF's `SqlClientData` reads.
_REQUIRED_COLUMNS = {
    'examples': ('split_name', 'client_id', 'serialized_example_proto'),
    'client_metadata': ('client_id', 'split_name', 'num_examples'),
}

_HOW_TO_GET_DATA = (
    'Get it with TFF (downloads ~500 MB: `python -c "import '
    'tensorflow_federated as tff; tff.simulation.datasets.celeba.load_data('
    "cache_dir='{cache_dir}')\"`, or `--download` in the experiment binary), "
    'or build it offline from a raw CelebA copy (img_align_celeba/, '
    'list_attr_celeba.txt, identity_CelebA.txt) with `python -m '
    'experiments.celeba_smile.convert_raw_celeba_main --raw_image_dir=... '
    '--raw_attr_file=... --raw_identity_file=... '
    '--sqlite_output_dir={cache_dir}`.')


class DataNotFoundError(FileNotFoundError):
  """The CelebA database is missing; the message says how to get it."""


def default_cache_dir() -> str:
  """TFF's default cache directory (`~/.tff`)."""
  return os.path.join(os.path.expanduser('~'), '.tff')


def database_path(cache_dir: Optional[str]) -> str:
  return os.path.join(cache_dir or default_cache_dir(), DATABASE_FILENAME)


def _check_example(serialized: bytes, where: str) -> None:
  """Checks one serialized example against `celeba.py`'s parse spec."""
  try:
    example = tf.train.Example.FromString(serialized)
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(f'{where}: not a serialized tf.train.Example '
                     f'({e}).') from None
  features = example.features.feature
  expected = {_IMAGE_FEATURE, *ATTRIBUTE_NAMES}
  missing = sorted(expected - set(features))
  extra = sorted(set(features) - expected)
  if missing or extra:
    raise ValueError(f'{where}: features missing {missing}, unexpected '
                     f'{extra}.')
  for name in (_IMAGE_FEATURE, *ATTRIBUTE_NAMES):
    if features[name].WhichOneof('kind') != 'int64_list':
      raise ValueError(f'{where}: feature {name!r} must be an int64 list, got'
                       f' {features[name].WhichOneof("kind")}.')
  pixels = features[_IMAGE_FEATURE].int64_list.value
  if len(pixels) != NUM_FEATURES:
    raise ValueError(
        f'{where}: the image has {len(pixels)} values, expected '
        f'{"x".join(map(str, IMAGE_SHAPE))} = {NUM_FEATURES}, as TFF\'s '
        'CelebA loader parses.')
  if min(pixels) < 0 or max(pixels) > 255:
    raise ValueError(f'{where}: pixel values must be in [0, 255].')
  for name in ATTRIBUTE_NAMES:
    values = list(features[name].int64_list.value)
    if len(values) != 1 or values[0] not in (0, 1):
      raise ValueError(f'{where}: attribute {name!r} must be one 0 or 1, got '
                       f'{values}.')


def check_database(database_path: str) -> dict[str, int]:
  """Checks that a file is a `celeba.sqlite` TFF's CelebA loader can read.

  Opens the file read-only, checks the tables and columns of `SqlClientData`,
  that both `split_by_clients_*` splits have clients, and parses one example
  of each split against the parse spec of
  `tff.simulation.datasets.celeba` (an 84*84*3 int64 `image` and the 40 0/1
  attributes).

  Args:
    database_path: The database file.

  Returns:
    Split name -> number of clients, for every split in `client_metadata`.

  Raises:
    DataNotFoundError: If the file does not exist (the message says how to
      get the data).
    IsADirectoryError: If `database_path` is a directory.
    ValueError: Naming the file, if it is not an SQLite database, lacks a
      table or column, lacks a `split_by_clients_*` split, or an example has
      a missing or unexpected feature or an image of the wrong size.
  """
  if os.path.isdir(database_path):
    raise IsADirectoryError(
        f'The CelebA database {database_path} is a directory; it must be the '
        "file celeba.sqlite (pass its directory as the cache directory).")
  if not os.path.isfile(database_path):
    raise DataNotFoundError(
        f'The CelebA database {database_path} does not exist. ' +
        _HOW_TO_GET_DATA.format(cache_dir=os.path.dirname(database_path)))
  uri = ('file:' + urllib.parse.quote(os.path.abspath(database_path))
         + '?mode=ro')
  try:
    connection = sqlite3.connect(uri, uri=True)
  except sqlite3.Error as e:
    raise ValueError(f'Cannot open {database_path}: {e}') from e
  try:
    try:
      tables = {row[0] for row in connection.execute(
          "SELECT name FROM sqlite_master WHERE type IN ('table', 'view');")}
    except sqlite3.DatabaseError as e:
      raise ValueError(f'{database_path} is not an SQLite database (corrupt '
                       f'or another format): {e}') from e
    for table, columns in _REQUIRED_COLUMNS.items():
      if table not in tables:
        raise ValueError(f'{database_path} has no table {table!r} (tables: '
                         f'{sorted(tables)}); not a TFF CelebA database.')
      present = {row[1] for row in connection.execute(
          f'PRAGMA table_info({table});')}
      missing = [c for c in columns if c not in present]
      if missing:
        raise ValueError(f'{database_path}: table {table!r} lacks the columns'
                         f' {missing}.')
    indexed = [row for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND "
        "tbl_name = 'examples'")]
    if not indexed:
      # TFF's loader queries examples by client: without an index each
      # client dataset scans the whole table (minutes per round on CelebA).
      logging.warning(
          '%s has no index on examples(client_id); client datasets will be '
          'slow. Add one with: sqlite3 %s "CREATE INDEX '
          'examples_client_split ON examples (client_id, split_name);"',
          database_path, database_path)
    clients_per_split = dict(connection.execute(
        'SELECT split_name, COUNT(DISTINCT client_id) FROM client_metadata '
        'GROUP BY split_name;').fetchall())
    missing_splits = [s for s in (TRAIN_SPLIT, TEST_SPLIT)
                      if not clients_per_split.get(s)]
    if missing_splits:
      raise ValueError(f'{database_path} has no clients in the splits '
                       f'{missing_splits} (splits: '
                       f'{sorted(clients_per_split)}).')
    for split in sorted(clients_per_split):
      # Looked up by client and split, the query the loader runs (and the one
      # the index serves): a scan by split alone can be slow on the full data.
      client_id, = connection.execute(
          'SELECT client_id FROM client_metadata WHERE split_name = ? LIMIT 1;',
          (split,)).fetchone()
      row = connection.execute(
          'SELECT serialized_example_proto FROM examples WHERE client_id = ? '
          'AND split_name = ? LIMIT 1;', (client_id, split)).fetchone()
      if row is None:
        raise ValueError(f'{database_path}: client {client_id!r} of split '
                         f'{split!r} in client_metadata has no examples.')
      _check_example(bytes(row[0]), f'{database_path}, split {split!r}')
  except sqlite3.DatabaseError as e:
    raise ValueError(f'{database_path} is not a readable SQLite database: '
                     f'{e}') from e
  finally:
    connection.close()
  return clients_per_split


def load_client_data(
    cache_dir: Optional[str] = None, download: bool = False
) -> tuple[tff.simulation.datasets.ClientData,
           tff.simulation.datasets.ClientData]:
  """Loads federated CelebA, split by clients, with TFF's loader.

  Args:
    cache_dir: Directory holding (or to receive) `celeba.sqlite`; `None`:
      TFF's default `~/.tff`.
    download: If the database is missing, let TFF download it. Otherwise a
      missing database raises `DataNotFoundError` explaining how to get it.

  Returns:
    `(train, test)` `tff.simulation.datasets.ClientData` from
    `tff.simulation.datasets.celeba.load_data(split_by_clients=True)`.

  Raises:
    DataNotFoundError: If the database is missing and `download` is False.
    ValueError: If the database is corrupt or of another schema.
  """
  cache_dir = cache_dir or default_cache_dir()
  path = database_path(cache_dir)
  if os.path.exists(path) or not download:
    check_database(path)
  else:
    logging.info('Downloading CelebA into %s (TFF)...', cache_dir)
  return tff.simulation.datasets.celeba.load_data(
      split_by_clients=True, cache_dir=cache_dir)


def _parse_batch(serialized: list[bytes], label: str):
  parsed = tf.io.parse_example(
      serialized, {
          'image': tf.io.FixedLenFeature(IMAGE_SHAPE, tf.int64),
          label: tf.io.FixedLenFeature([], tf.int64),
      })
  images = parsed['image'].numpy()
  if images.min(initial=0) < 0 or images.max(initial=0) > 255:
    raise ValueError('CelebA images must hold pixel values in [0, 255], found '
                     f'[{images.min()}, {images.max()}].')
  return images.astype(np.uint8), parsed[label].numpy() != 0


def scan_split(path: str, split: str, label: str):
  """Yields `(client_ids, uint8 images, bool labels)` batches of a split.

  One sequential pass over the split's examples (`PASS_BATCH` at a time),
  parsing only the image and the `label` attribute: far faster than a TFF
  dataset per client when every example is needed.

  Raises:
    ValueError: Naming the file, if SQLite cannot read it (e.g. a database
      damaged past what `check_database` reads).
  """
  connection = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
  try:
    try:
      cursor = connection.execute(
          'SELECT client_id, serialized_example_proto FROM examples WHERE '
          'split_name = ?', (split,))
      rows = cursor.fetchmany(PASS_BATCH)
      while rows:
        images, labels = _parse_batch([r[1] for r in rows], label)
        yield [r[0] for r in rows], images, labels
        rows = cursor.fetchmany(PASS_BATCH)
    except sqlite3.DatabaseError as e:
      raise ValueError(
          f'{path} is damaged: SQLite cannot read the examples of split '
          f'{split!r} ({e}). Get or convert the database again.') from e
  finally:
    connection.close()
