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
"""Small fake CelebA data for the tests: a raw copy, or a TFF cache.

The pictures depend on the `smiling` attribute (the lower half of a smiling
face is brighter), so a model can learn it; every other attribute is random.
"""

from collections.abc import Mapping
import os
from typing import NamedTuple

import numpy as np
from PIL import Image

from experiments.celeba_smile import celeba_sqlite

# CelebA's spelling of the attributes, in the order of list_attr_celeba.txt.
CELEBA_ATTRIBUTE_NAMES = tuple(
    '5_o_Clock_Shadow' if name == 'five_o_clock_shadow'
    else '_'.join(part.capitalize() for part in name.split('_'))
    for name in celeba_sqlite.ATTRIBUTE_NAMES)
_SMILE_BRIGHTNESS = 60


class RawCelebaPaths(NamedTuple):
  image_dir: str
  attr_file: str
  identity_file: str


def _picture(rng: np.random.Generator, width: int, height: int,
             smiling: bool) -> np.ndarray:
  """A smooth random RGB uint8 picture; brighter lower half when smiling."""
  coarse = rng.integers(40, 150, size=(4, 4, 3), dtype=np.uint8)
  picture = np.asarray(
      Image.fromarray(coarse).resize((width, height), Image.BILINEAR),
      dtype=np.int32)
  picture = picture + rng.integers(-10, 11, size=picture.shape)
  if smiling:
    picture[height // 2:] += _SMILE_BRIGHTNESS
  return np.clip(picture, 0, 255).astype(np.uint8)


def _attributes(rng: np.random.Generator, smiling: bool) -> dict[str, bool]:
  attributes = {name: bool(rng.integers(2))
                for name in celeba_sqlite.ATTRIBUTE_NAMES}
  attributes['smiling'] = smiling
  return attributes


def make_fake_raw_celeba(directory: str,
                         identities: Mapping[int, int],
                         seed: int = 0,
                         image_size: tuple[int, int] = (178, 218),
                         ) -> RawCelebaPaths:
  """Writes a raw CelebA copy in CelebA's layout and text formats.

  Writes `directory/img_align_celeba/000001.jpg, ...`,
  `directory/list_attr_celeba.txt` and `directory/identity_CelebA.txt`. The
  images of the identities are interleaved (shuffled), as in CelebA.

  Args:
    directory: An existing directory.
    identities: Identity number -> its number of images.
    seed: Seed of the pictures, attributes and image order.
    image_size: (width, height) of the JPEGs; CelebA's aligned ones are
      178x218.

  Returns:
    The paths of the image directory and the two text files.
  """
  rng = np.random.default_rng(seed)
  owners = [identity for identity, count in sorted(identities.items())
            for _ in range(count)]
  owners = [owners[i] for i in rng.permutation(len(owners))]
  paths = RawCelebaPaths(
      image_dir=os.path.join(directory, 'img_align_celeba'),
      attr_file=os.path.join(directory, 'list_attr_celeba.txt'),
      identity_file=os.path.join(directory, 'identity_CelebA.txt'))
  os.makedirs(paths.image_dir, exist_ok=True)
  width, height = image_size
  attr_lines = [f'{len(owners)}\n', ' '.join(CELEBA_ATTRIBUTE_NAMES) + ' \n']
  identity_lines = []
  for index, identity in enumerate(owners, start=1):
    name = f'{index:06d}.jpg'
    smiling = bool(rng.integers(2))
    attributes = _attributes(rng, smiling)
    Image.fromarray(_picture(rng, width, height, smiling)).save(
        os.path.join(paths.image_dir, name), quality=90)
    # CelebA right-aligns the values in two columns: `-1  1  1 -1`.
    values = ' '.join(f'{1 if attributes[n] else -1:2d}'
                      for n in celeba_sqlite.ATTRIBUTE_NAMES)
    attr_lines.append(f'{name} {values}\n')
    identity_lines.append(f'{name} {identity}\n')
  with open(paths.attr_file, 'w') as f:
    f.writelines(attr_lines)
  with open(paths.identity_file, 'w') as f:
    f.writelines(identity_lines)
  return paths


def make_fake_celeba_cache(directory: str,
                           num_train_clients: int,
                           num_test_clients: int,
                           images_per_client: int,
                           seed: int = 0,
                           smiling_fraction: float = 0.5) -> str:
  """Writes `directory/celeba.sqlite` for `celeba.load_data(cache_dir=...)`.

  Clients `'1'` to `str(num_train_clients)` are the train clients of the split
  by clients, the next `num_test_clients` the test ones.

  Args:
    directory: Directory for the database; created if missing.
    num_train_clients: Clients in `split_by_clients_train` (>= 1).
    num_test_clients: Clients in `split_by_clients_test` (>= 1).
    images_per_client: Examples of every client.
    seed: Seed of the pictures, attributes and splits.
    smiling_fraction: Probability that an image is smiling.

  Returns:
    `directory`, to pass as `cache_dir`.
  """
  rng = np.random.default_rng(seed)
  num_clients = num_train_clients + num_test_clients
  clients = {}
  for i in range(1, num_clients + 1):
    examples = []
    for _ in range(images_per_client):
      smiling = bool(rng.random() < smiling_fraction)
      examples.append((
          _picture(rng, celeba_sqlite.IMAGE_SIZE, celeba_sqlite.IMAGE_SIZE,
                   smiling),
          _attributes(rng, smiling)))
    clients[str(i)] = examples
  test_client_ids = [str(i) for i in range(num_train_clients + 1,
                                           num_clients + 1)]
  celeba_sqlite.write_celeba_database(
      os.path.join(directory, celeba_sqlite.DATABASE_FILENAME), clients,
      test_client_ids, seed=seed)
  return directory
