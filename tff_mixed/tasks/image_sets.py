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
"""The image sets of the hybrid experiment, as float32 arrays.

The guided-model-merging paper (Feddle, Zhu et al., section 5 and appendix
D) trains on CIFAR and uses a different image set as out-of-domain server
data. This module only reads images; `hybrid_images` splits them.

*   `load_cifar10_npz` reads real CIFAR-10 images stored as concatenated JPEG
    files in an `.npz` (arrays `jpeg_bytes`, `jpeg_offsets`, `label`). The
    file is not part of this repository (its licence is unclear); pass its
    path. (All of CIFAR-10, as PNGs: `cifar10_pngs`.)
*   `load_digits_images` gives scikit-learn's bundled handwritten digits
    (1,797 real 8x8 images), upsampled to 32x32 RGB: the out-of-domain server
    set for CIFAR-10 clients, and a tiny offline stand-in task, as it ships
    inside scikit-learn and needs no download.
*   `downsample_images` averages pixel blocks (e.g. 32x32 to 16x16).
"""

import os

import numpy as np
from sklearn import datasets as sk_datasets
import tensorflow as tf

_NPZ_ARRAYS = ('jpeg_bytes', 'jpeg_offsets', 'label')
_CIFAR_SHAPE = (32, 32, 3)
_DIGITS_MAX_PIXEL = 16.0


def load_cifar10_npz(path: str) -> tuple[np.ndarray, np.ndarray]:
  """Decodes CIFAR-10 images stored as concatenated JPEG files.

  Args:
    path: An `.npz` with arrays `jpeg_bytes` (uint8, the JPEG files one after
      another), `jpeg_offsets` (int[N + 1]: image i is
      `jpeg_bytes[offsets[i]:offsets[i + 1]]`) and `label` (int[N]).

  Returns:
    `(images, labels)`: float32[N, 32, 32, 3] pixels scaled to [0, 1] and
    int32[N] labels, in file order.

  Raises:
    FileNotFoundError: If `path` does not exist.
    ValueError: If an array is missing or inconsistent, or an image does not
      decode to 32x32x3.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'No CIFAR-10 JPEG npz at {path!r}.')
  # No pickles: the arrays are plain numeric data.
  with np.load(path, allow_pickle=False) as npz:
    missing = [name for name in _NPZ_ARRAYS if name not in npz.files]
    if missing:
      raise ValueError(f'{path!r} lacks array(s) {missing} (has '
                       f'{sorted(npz.files)}).')
    data = npz['jpeg_bytes']
    offsets = npz['jpeg_offsets'].astype(np.int64)
    labels = npz['label']
  if data.dtype != np.uint8 or data.ndim != 1:
    raise ValueError(f'{path!r}: `jpeg_bytes` must be 1-D uint8, got '
                     f'{data.dtype} of shape {data.shape}.')
  if (offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0
      or offsets[-1] != data.size or np.any(np.diff(offsets) <= 0)):
    raise ValueError(f'{path!r}: `jpeg_offsets` must rise strictly from 0 to '
                     f'len(jpeg_bytes) = {data.size}.')
  if labels.shape != (offsets.size - 1,):
    raise ValueError(f'{path!r}: `label` has shape {labels.shape}, expected '
                     f'({offsets.size - 1},) to match `jpeg_offsets`.')
  if not np.issubdtype(labels.dtype, np.integer):
    raise ValueError(f'{path!r}: `label` must be integers, got '
                     f'{labels.dtype}.')
  raw = data.tobytes()
  images = np.empty((labels.size, *_CIFAR_SHAPE), np.float32)
  for i in range(labels.size):
    image = tf.io.decode_jpeg(raw[offsets[i]:offsets[i + 1]], channels=3)
    if tuple(image.shape) != _CIFAR_SHAPE:
      raise ValueError(f'{path!r}: image {i} decodes to shape '
                       f'{tuple(image.shape)}, expected {_CIFAR_SHAPE}.')
    images[i] = image.numpy()
  images /= 255.0
  return images, labels.astype(np.int32)


def load_digits_images(size: int = 32,
                       channels: int = 3) -> tuple[np.ndarray, np.ndarray]:
  """scikit-learn's bundled handwritten digits as square images.

  Args:
    size: Output height and width; the 8x8 originals are resized bilinearly.
    channels: 1, or 3 to repeat the gray level as RGB (to feed a CIFAR model).

  Returns:
    `(images, labels)`: float32[1797, size, size, channels] in [0, 1] and
    int32[1797] digits 0-9, in scikit-learn's order.

  Raises:
    ValueError: If `size` is not a positive int or `channels` is not 1 or 3.
  """
  if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
    raise ValueError(f'`size` must be a positive int, got {size!r}.')
  if channels not in (1, 3) or isinstance(channels, bool):
    raise ValueError(f'`channels` must be 1 or 3, got {channels!r}.')
  digits = sk_datasets.load_digits()
  gray = (digits.images / _DIGITS_MAX_PIXEL).astype(np.float32)[..., None]
  resized = tf.image.resize(gray, [size, size], method='bilinear').numpy()
  # Bilinear interpolation stays within the range; clip float rounding.
  resized = np.clip(resized, 0.0, 1.0)
  return (np.repeat(resized, channels, axis=-1).astype(np.float32),
          digits.target.astype(np.int32))


def downsample_images(images: np.ndarray, factor: int) -> np.ndarray:
  """Averages non-overlapping `factor` x `factor` pixel blocks.

  CIFAR-10 at 16x16 (factor 2) keeps most of what a small CNN learns from
  the 32x32 images for a quarter of the convolution cost, which is what
  lets the hybrid benchmark run all methods and settings on a few CPU cores.

  Args:
    images: float[N, height, width, channels], height and width divisible by
      `factor`.
    factor: Block size, a positive int; 1 returns the images unchanged.

  Returns:
    float32[N, height / factor, width / factor, channels].

  Raises:
    ValueError: If `images` is not 4-D, `factor` is not a positive int, or
      it does not divide the height and width.
  """
  images = np.asarray(images)
  if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
    raise ValueError(f'`factor` must be a positive int, got {factor!r}.')
  if images.ndim != 4:
    raise ValueError('`images` must be [N, height, width, channels], got '
                     f'shape {images.shape}.')
  n, height, width, channels = images.shape
  if height % factor or width % factor:
    raise ValueError(f'`factor` {factor} does not divide the image size '
                     f'{height}x{width}.')
  blocks = images.reshape(n, height // factor, factor, width // factor,
                          factor, channels)
  return blocks.mean(axis=(2, 4), dtype=np.float64).astype(np.float32)
