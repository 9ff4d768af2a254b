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
"""A hybrid split's client examples in a store, streamed inside a graph.

In asynchronous client groups (`client_training.
build_group_client_training` in `tff_mixed.asynchronous`) each member's
training stream is built from its id inside the group's computation. Held as graph constants, every
client's images would make the computation as large as the data
(CIFAR-10's 50,000 training images are 614 MB as float32), and TFF's
execution context sends a computation to its worker with every call. Here
the clients' examples are written once to an `ExampleStore` (a file per
example, clients one after another), and a member's stream is the stream
of its *positions* (`client_streams`), each batch read from the store.

A shuffle's order depends on the element count, the seed and the pass, not
on the elements, so the batches are those of `hybrid_images.client_dataset`
on the same client and seed (tests/hybrid_client_store_test.py). Images
that are `k / 255` in float32 for uint8 `k` (as `cifar10_pngs` loads
them) are stored as those bytes, a quarter of the size, and divided back
on reading, which gives the same floats; any other images are stored as
float32.
"""

from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf

from tff_mixed.core import example_store as example_store_lib
from tff_mixed.tasks import client_streams
from tff_mixed.tasks import hybrid_images

# Examples per write: bounds the copies made while writing.
_WRITE_CHUNK = 4096


class ClientStore(NamedTuple):
  """A split's client examples in an `ExampleStore` (`write_client_store`).

  Attributes:
    store: The `ExampleStore`, batches `(float32[b, h, w, c], int32[b])`.
    starts: int64 `[clients]`, each client's first row in the store.
    sizes: int64 `[clients]`, each client's number of examples.
  """

  store: example_store_lib.ExampleStore
  starts: np.ndarray
  sizes: np.ndarray

  def client_dataset(self, client_id, batch_size: int, seed, *,
                     num_steps: Optional[int] = None,
                     epochs: Optional[int] = None) -> tf.data.Dataset:
    """The stream of `hybrid_images.client_dataset`, read from the store.

    Pure TF: `client_id` (a 0-based index) and `seed` may be tensors, as in
    a client group's computation. Give exactly one of `num_steps` and
    `epochs` (their meaning is `hybrid_images.client_dataset`'s).

    Returns:
      A `tf.data.Dataset` of `(float32[b, h, w, c], int32[b])` batches.
    """
    client_id = tf.cast(client_id, tf.int64)
    start = tf.gather(tf.constant(self.starts), client_id)
    size = tf.gather(tf.constant(self.sizes), client_id)
    stream = client_streams.local_stream(
        tf.data.Dataset.range(size), size, batch_size, seed,
        num_steps=num_steps, epochs=epochs)
    return stream.map(lambda batch: self.store.read(start + batch))


def _as_bytes(images: np.ndarray) -> Optional[np.ndarray]:
  """uint8 `k` if `images` are exactly float32 `k / 255`, else None."""
  if images.dtype != np.float32:
    return None
  scaled = np.rint(images * np.float32(255))
  if scaled.size and (scaled.min() < 0 or scaled.max() > 255):
    return None
  pixels = scaled.astype(np.uint8)
  restored = np.divide(pixels, 255.0, dtype=np.float32)
  return pixels if np.array_equal(restored, images) else None


def _from_bytes(batch):
  pixels, labels = batch
  return tf.cast(pixels, tf.float32) / 255.0, labels


def write_client_store(split: hybrid_images.HybridSplit,
                       directory: str) -> ClientStore:
  """Writes `split`'s client examples to a new store at `directory`.

  Args:
    split: A `hybrid_images.HybridSplit` with at least one client example.
    directory: Where the store goes (written atomically, as
      `example_store.write_example_store` writes).

  Returns:
    The `ClientStore`.
  """
  rows = np.concatenate(split.client_indices).astype(np.int64)
  sizes = np.array([part.size for part in split.client_indices], np.int64)
  starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
  chunks = [rows[i:i + _WRITE_CHUNK] for i in range(0, rows.size,
                                                    _WRITE_CHUNK)]
  pixels = []
  for chunk in chunks:  # A quarter of the images' size, if exact.
    pixels.append(_as_bytes(split.images[chunk]))
    if pixels[-1] is None:
      pixels = None
      break

  def batches():
    for i, chunk in enumerate(chunks):
      yield (split.images[chunk].astype(np.float32) if pixels is None
             else pixels[i], split.labels[chunk].astype(np.int32))

  store = example_store_lib.write_example_store(directory, batches())
  if pixels is not None:
    store = store._replace(map_fn=_from_bytes)
  return ClientStore(store, starts, sizes)
