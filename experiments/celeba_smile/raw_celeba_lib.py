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
`DIR/celeba.sqlite` and downloads nothing when that file exists.
`convert_raw_celeba` writes such a file from a raw CelebA copy, so the
loader runs offline and unchanged: it reads the copy (`raw_celeba_files`:
its layout and LEAF's preprocessing, from which TFF's dataset derives),
groups the images by identity, drops the identities with too few images,
splits the clients into train and test, and writes the database
(`celeba_sqlite`: its schema, splits and features).

The client split (train/test clients) and the example split are drawn with
numpy's generator from `seed`; the same inputs and seed give the same
database.

Cost: an example takes about 30 KB and is stored twice, so the full data
(about 200,000 images) needs on the order of 12 GB of disk; conversion takes
a few milliseconds per image on one CPU core.
"""

import collections
from collections.abc import Iterator, Mapping
import os
import sys
import time
from typing import NamedTuple, Optional

from absl import logging
import numpy as np

from experiments.celeba_smile import celeba_sqlite
from experiments.celeba_smile import raw_celeba_files

_LOG_EVERY_IMAGES = 5000


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
  database: celeba_sqlite.DatabaseSummary


class _LazyClients(Mapping):
  """Client id -> examples, loading and resizing the images on access."""

  def __init__(self, image_dir: str, images_by_client: Mapping[str, list[str]],
               attributes: Mapping[str, Mapping[str, bool]]):
    self._image_dir = image_dir
    self._images_by_client = images_by_client
    self._attributes = attributes

  def __getitem__(self, client_id: str) -> list[celeba_sqlite.Example]:
    return [(raw_celeba_files.load_image(os.path.join(self._image_dir, name)),
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
  84x84 RGB (see `raw_celeba_files.load_image`) and writes the database with
  `celeba_sqlite.write_celeba_database`. Afterwards
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
  celeba_sqlite.check_fraction('test_client_fraction', test_client_fraction)
  celeba_sqlite.check_fraction('example_test_fraction', example_test_fraction)
  celeba_sqlite.check_seed(seed)
  if max_images is not None and (
      not isinstance(max_images, (int, np.integer)) or max_images < 1):
    raise ValueError(f'max_images must be None or an integer >= 1, got '
                     f'{max_images!r}.')
  if not os.path.isdir(image_dir):
    raise FileNotFoundError(f'The image directory {image_dir} does not exist '
                            'or is not a directory.')
  raw_celeba_files.check_readable_file(attr_file, 'The attribute file')
  raw_celeba_files.check_readable_file(identity_file, 'The identity file')

  attributes = raw_celeba_files.read_attribute_file(attr_file)
  identities = raw_celeba_files.read_identity_file(identity_file)
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
  database_path = os.path.join(output_dir, celeba_sqlite.DATABASE_FILENAME)
  counter = _Progress(images_used, use_tqdm=bool(progress))
  try:
    database = celeba_sqlite.write_celeba_database(
        database_path, _LazyClients(image_dir, kept, attributes),
        test_client_ids, example_test_fraction=example_test_fraction,
        seed=seed, on_example=counter)
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
