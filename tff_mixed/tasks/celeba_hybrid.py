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
"""CelebA smiles split by identity, for the hybrid-data experiment.

"Guided Model Merging for Hybrid Data Learning" (Feddle, Zhu et al.,
section 5, table 2) also runs on data whose heterogeneity is real rather
than drawn: on CelebA each client is one celebrity (an identity) holding
that person's faces, the label is the Smiling attribute, and the server
holds 200 in-domain samples. No Dirichlet label split is involved.

Here:

*   `load_identity_images` reads TFF's federated CelebA database
    (`celeba_database`; both `split_by_clients` splits, pooled: every
    identity of the file) in one pass, area-averages the 84x84 faces down
    to `size` x `size` and labels them 1 for Smiling, else 0.
*   `build_identity_split` draws, per seed, whole identities for a held-out
    set and whole identities for the clients, so that no identity is in
    two of clients, server, validation and evaluation; it returns a
    `hybrid_images.HybridSplit`, what the hybrid experiment runs on.
"""

from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.tasks import celeba_database
from tff_mixed.tasks import hybrid_images

LABEL = 'smiling'


class IdentityImages(NamedTuple):
  """Every face of a CelebA database, with its identity and label.

  Attributes:
    images: float32[N, size, size, 3] pixels in [0, 1].
    labels: int32[N]: 1 if the face is Smiling, else 0.
    identities: str[N]: the celebrity (TFF client id) of each face.
  """
  images: np.ndarray
  labels: np.ndarray
  identities: np.ndarray


def resize_faces(pixels: np.ndarray, size: int) -> np.ndarray:
  """uint8 `[n, 84, 84, 3]` faces to float32 `[n, size, size, 3]` in [0, 1].

  Area averaging (`tf.image.resize(method='area')`): each output pixel is
  the mean of the input area it covers, an exact block mean when `size`
  divides 84 (42, 28, 21, 14, 12) and a weighted one otherwise (32).
  """
  faces = tf.image.resize(tf.cast(pixels, tf.float32) / 255.0,
                          [size, size], method='area')
  return np.clip(faces.numpy(), 0.0, 1.0).astype(np.float32)


def load_identity_images(cache_dir: Optional[str],
                         size: int) -> IdentityImages:
  """Every face of the CelebA database in `cache_dir`, at `size` x `size`.

  Args:
    cache_dir: Directory of `celeba.sqlite` (None: TFF's default `~/.tff`).
    size: Output side in pixels, from `cnn.MIN_INPUT_SIZE` (8) to 84.

  Returns:
    An `IdentityImages`, in the database's order (training split, then
    test split).

  Raises:
    DataNotFoundError: If the database is missing (the message says how to
      get it).
    ValueError: If `size` is out of range, or the database cannot be read.
  """
  if isinstance(size, bool) or not isinstance(size, int) or not (
      8 <= size <= celeba_database.IMAGE_SHAPE[0]):
    raise ValueError(f'The CelebA image size must be an int from 8 to '
                     f'{celeba_database.IMAGE_SHAPE[0]}, got {size!r}.')
  path = celeba_database.database_path(cache_dir)
  celeba_database.check_database(path)
  images, labels, identities = [], [], []
  for split in (celeba_database.TRAIN_SPLIT, celeba_database.TEST_SPLIT):
    for ids, pixels, smiling in celeba_database.scan_split(path, split,
                                                           LABEL):
      images.append(resize_faces(pixels, size))
      labels.append(smiling.astype(np.int32))
      identities.extend(ids)
  return IdentityImages(np.concatenate(images), np.concatenate(labels),
                        np.array(identities, dtype=str))


def _take(groups: list[np.ndarray], start: int, count: int
          ) -> tuple[np.ndarray, int]:
  """Rows of whole groups from `groups[start]` on until there are `count`
  (the last group cut short); and the index of the next group."""
  rows, end, total = [], start, 0
  while total < count:
    if end == len(groups):
      raise ValueError('not enough identities')
    rows.append(groups[end])
    total += groups[end].size
    end += 1
  taken = np.concatenate(rows) if rows else np.zeros(0, np.int64)
  return np.sort(taken[:count]), end


def build_identity_split(data: IdentityImages, *, num_clients: int,
                         server_size: int, eval_size: int, seed: int,
                         validation_size: int = 0
                         ) -> hybrid_images.HybridSplit:
  """Clients, server, validation and evaluation data, by whole identities.

  A seeded permutation of the identities is walked in order:

  1.  Held out (the paper's test identities): the first identities until
      they hold at least `eval_size` faces.
  2.  Among them, in order: the server's in-domain set, identities until
      `server_size` faces (the last identity cut short: the faces it keeps
      back are used nowhere), then the validation set the same way with
      `validation_size` faces; the remaining held-out identities, whole,
      are the evaluation set.
  3.  Clients: the next `num_clients` identities, one client each, all of
      its faces. Later identities are not used.

  No identity is thus in two of clients, server, validation and
  evaluation. The clients and the server's faces depend only on the seed,
  `eval_size`, `num_clients` and `server_size`, not on `validation_size`
  (as in `hybrid_images.build_hybrid_split`): a search on the validation
  set and the final runs share them.

  Args:
    data: `load_identity_images`' faces.
    num_clients: Client identities, >= 1.
    server_size: Server faces, >= 0 (the paper: 200).
    eval_size: Faces held out (at least; whole identities), larger than
      `server_size + validation_size`.
    seed: Integer >= 0.
    validation_size: Validation faces, >= 0.

  Returns:
    A `hybrid_images.HybridSplit` over `data.images`.

  Raises:
    ValueError: If an argument is invalid or the identities are too few for
      the sizes asked for (the message says how many there are).
  """
  num_clients, server_size, validation_size, eval_size, seed = (
      hybrid_images.check_split_sizes(num_clients, server_size,
                                      validation_size, eval_size, seed))
  names, owner = np.unique(data.identities, return_inverse=True)
  # Each identity's rows, in row order.
  by_identity = np.split(np.argsort(owner, kind='stable'),
                         np.cumsum(np.bincount(owner))[:-1])
  order = np.random.default_rng(seed).permutation(names.size)
  groups = [by_identity[i] for i in order]
  try:
    held_out, num_held_out = _take(groups, 0, eval_size)
    server, after_server = _take(groups, 0, server_size)
    validation, after_validation = _take(groups, after_server,
                                         validation_size)
  except ValueError:
    raise ValueError(
        f'{data.labels.size} faces of {names.size} identities cannot hold '
        f'out {eval_size}: use a smaller eval_size.') from None
  if after_validation >= num_held_out:
    raise ValueError(
        f'No identity is left to evaluate on after the server\'s '
        f'{server_size} and the validation\'s {validation_size} faces (of '
        f'{held_out.size} held out): raise eval_size.')
  evaluation = np.sort(np.concatenate(groups[after_validation:num_held_out]))
  available = names.size - num_held_out
  if num_clients > available:
    raise ValueError(
        f'{available} identities are left for clients after holding out '
        f'{num_held_out} (seed {seed}, {data.labels.size} faces of '
        f'{names.size} identities): use num_clients <= {available} or a '
        'smaller eval_size.')
  clients = tuple(np.sort(g) for g in
                  groups[num_held_out:num_held_out + num_clients])
  return _split(data, clients, server, validation, evaluation, seed)


def _split(data: IdentityImages, clients, server, validation, evaluation,
           seed: int) -> hybrid_images.HybridSplit:
  """The `HybridSplit` of these rows, and its description."""
  sizes = np.array([c.size for c in clients])
  client_rows = np.concatenate(clients)
  labels = data.labels.astype(np.int32)
  description = (
      f'CelebA, label Smiling, at {data.images.shape[1]}x'
      f'{data.images.shape[2]} (area-averaged from 84x84): {labels.size} '
      f'faces of {np.unique(data.identities).size} identities; '
      f'{len(clients)} clients, one identity each ({client_rows.size} faces;'
      f' client sizes min {sizes.min()}, median {int(np.median(sizes))}, '
      f'max {sizes.max()}; {100 * labels[client_rows].mean():.0f}% smiling);'
      f' held-out identities: {server.size} server in-domain, '
      + (f'{validation.size} validation, ' if validation.size else '')
      + f'{evaluation.size} evaluation faces '
      f'({100 * labels[evaluation].mean():.0f}% smiling); no identity in two '
      f'sets; seed {seed}')
  server, validation, evaluation = (r.astype(np.int64) for r in (
      server, validation, evaluation))
  return hybrid_images.HybridSplit(
      images=data.images, labels=labels,
      client_indices=tuple(c.astype(np.int64) for c in clients),
      server_indices=server, eval_indices=evaluation,
      server_x=data.images[server], server_y=labels[server],
      eval_x=data.images[evaluation], eval_y=labels[evaluation],
      description=description, validation_indices=validation,
      validation_x=data.images[validation],
      validation_y=labels[validation])
