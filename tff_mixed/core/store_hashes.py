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
"""Every example's hash in an `ExampleStore`, for clients' fingerprints.

Example Transfer (arXiv:2111.12150) seeds a client's draw of central
examples by the `data_fingerprint` of its own examples
(`transfer_select.py`): the sum of their `example_hashes`, whatever their
order and batching. A task whose clients' examples are rows of a store can
hash each row once and give any client's fingerprint from its rows
(`StoreHashes.fingerprint`), so that a group's member draws without reading
its examples before it trains (`tff_mixed.ClientGroups.fingerprint_fn`).
"""

import numpy as np
import tensorflow as tf

from tff_mixed.core import example_store as example_store_lib
from tff_mixed.core import transfer_select


class StoreHashes:
  """The `transfer_select.example_hashes` of every row of a store.

  The rows are hashed in one pass over the store, made once, eagerly, the
  first time `array` is asked for (not on construction: a task that never
  needs a fingerprint never reads its store for them).
  """

  # Rows read at a time by that pass.
  _CHUNK = 512

  def __init__(self, store: example_store_lib.ExampleStore):
    self._store = store
    self._hashes = None

  def array(self) -> np.ndarray:
    """int64 `[rows]`: every row's hash, in store order."""
    if self._hashes is None:
      with tf.init_scope():
        count = self._store.num_examples
        self._hashes = np.concatenate([
            transfer_select.example_hashes(self._store.read(
                tf.range(start, min(start + self._CHUNK, count),
                         dtype=tf.int64))).numpy()
            for start in range(0, count, self._CHUNK)])
    return self._hashes

  def fingerprint(self, rows: tf.Tensor) -> tf.Tensor:
    """The `data_fingerprint` of the examples at int `rows` (pure TF, after
    `array` has run; rows may repeat, as a client's examples may)."""
    return transfer_select.fingerprint_of_hashes(
        tf.gather(tf.constant(self.array()), rows))
