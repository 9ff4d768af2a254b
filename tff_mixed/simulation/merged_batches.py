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
"""Example Transfer's merged local data, for many clients at once as tensors.

Example Transfer (arXiv:2111.12150, Algorithm 3) trains each client on its
local examples merged with its own transferred central examples, shuffled
(`client_work.MergedData`: `dataset.unbatch().concatenate(examples)
.shuffle(SHUFFLE_BUFFER_SIZE, seed).batch(B)`, then K steps cycling through
those batches). A dataset per client costs far more than the few small
steps it feeds. This module builds the same batches for a group's members
at once, as tensors, so that they train in lockstep (`lockstep.py`,
`client_groups.py`):

*   `shuffle_order`: the permutation tf.data's shuffle gives, computed from
    its random stream. With a buffer at least the data's size, tf.data's
    `ShuffleDataset` fills the buffer, then for output `i` draws `r_i`, the
    `i`-th uint32 of a Philox stream keyed by the op's seeds, takes element
    `i + r_i mod (size - i)` and swaps it into place `i` (a forward
    Fisher-Yates). The same stream, computed for every member's seed at
    once (`philox.py`), gives the same order, its swaps composed pairwise
    rather than applied one after another. Its tests compare it with
    tf.data over sizes and seeds; a change in tf.data's algorithm would
    fail them.
*   `merge_batches`: local batches and transferred examples, concatenated,
    permuted by each member's order and cut into batches of B.

Pure TF.
"""

from typing import Any

import tensorflow as tf

from tff_mixed.core import philox
from tff_mixed.core import transfer_select

def _philox_streams(size: int, seeds: tf.Tensor) -> tf.Tensor:
  """uint32 streams `[members, size]` of tf.data's shuffle, as int64."""

  # The seeds tf.data's shuffle takes for op seed `seed`: the graph's seed
  # (or TF's default one) and `seed` modulo 2**31 - 1.
  key, counters = tf.compat.v1.random.get_seed(tf.cast(seeds, tf.int64))
  counters = tf.cast(counters, tf.uint64)
  keys = tf.fill(tf.shape(counters), tf.cast(key, tf.uint64))
  return philox.uint32_streams(keys, counters, size)


def shuffle_order(size: int, seeds: tf.Tensor) -> tf.Tensor:
  """The order `Dataset.range(size).shuffle(...)` gives, for each seed.

  Args:
    size: Elements shuffled (static), at most
      `transfer_select.SHUFFLE_BUFFER_SIZE`.
    seeds: int64 `[members]`, each the `seed` of one shuffle with
      `transfer_select.SHUFFLE_BUFFER_SIZE` and
      `reshuffle_each_iteration=False`.

  Returns:
    int32 `[members, size]`: row `m` lists the elements in the order the
    shuffle seeded by `seeds[m]` yields them.

  Raises:
    ValueError: If `size` exceeds the shuffle buffer (tf.data then shuffles
      within a window, which this does not reproduce).
  """
  if size > transfer_select.SHUFFLE_BUFFER_SIZE:
    raise ValueError(f'Cannot shuffle {size} elements as tensors; at most '
                     f'{transfer_select.SHUFFLE_BUFFER_SIZE}.')
  streams = _philox_streams(size, seeds)
  steps = tf.range(size)
  # Step i swaps places i and picked_i: the swap as an index vector
  # (position -> the position it takes its element from), for every member
  # and step at once, `[members, size (steps), size (positions)]`.
  picked = steps[tf.newaxis] + tf.cast(
      streams % tf.cast(size - steps, tf.int64)[tf.newaxis], tf.int32)
  places = steps[tf.newaxis, tf.newaxis, :]
  i, p = steps[tf.newaxis, :, tf.newaxis], picked[:, :, tf.newaxis]
  # (Not `==`, which compares tensors by identity in a TF1 graph, as TFF's.)
  swaps = tf.where(tf.equal(places, i), p,
                   tf.where(tf.equal(places, p), i, places))
  # The order is the swaps composed in step order, s_0(s_1(...)): composed
  # pairwise, log2(size) gathers rather than a loop of `size` steps (50
  # members of 15 elements, plain TF: a merge took 1.05-1.44 ms against
  # 1.75 ms).
  # `size` is static: a Python loop over the levels, which autograph keeps.
  count = size
  for _ in range(max(size - 1, 0).bit_length()):
    if count % 2:  # An identity makes the count even.
      swaps = tf.concat(
          [swaps, tf.broadcast_to(places, tf.shape(swaps[:, :1]))], axis=1)
      count += 1
    swaps = tf.gather(swaps[:, 0::2], swaps[:, 1::2], batch_dims=2)
    count //= 2
  return swaps[:, 0]


def can_merge(size: int, batch_size: int, num_steps) -> bool:
  """Whether `merge_batches` can hold every batch a client trains on.

  A client's `size` merged examples in batches of B are full batches only
  when `size` is a multiple of B, or when its K steps end before the last,
  partial batch. A partial batch would need padding rows, which a model's
  loss counts.
  """
  full, rest = divmod(size, batch_size)
  if not rest:
    return full > 0
  return num_steps is not None and 0 < num_steps <= full


def rows_of(batches: Any) -> Any:
  """Batches `[members, n, B, ...]` as rows `[members, n * B, ...]`."""

  def rows(leaf):
    return tf.reshape(leaf, tf.concat(
        [[-1, leaf.shape[1] * leaf.shape[2]], tf.shape(leaf)[3:]], 0))

  return tf.nest.map_structure(rows, batches)


def merge_batches(batches: Any, examples: Any, shuffle_seeds: tf.Tensor,
                  batch_size: int, num_steps) -> Any:
  """Members' batches of `client_work.MergedData`, as tensors.

  Args:
    batches: Every leaf `[members, n, B, ...]`: each member's whole local
      data, `n` full batches (a `ClientGroups.batches_fn`'s).
    examples: Every leaf `[members, e, ...]`: each member's transferred
      examples, in the order they reach it.
    shuffle_seeds: int64 `[members]`, each member's shuffle seed.
    batch_size: B of the merged batches (`MergedData.batch_size`).
    num_steps: The local steps K, or `None` for one pass.

  Returns:
    Every leaf `[members, b, B, ...]`: the full batches the members train
    on, in order (step k trains on batch `k mod b`, as
    `client_work.build_batches_update_fn` cycles them).

  Raises:
    ValueError: If a step would train on a partial batch (`can_merge`).
  """
  local_shape = tf.nest.flatten(batches)[0].shape
  num_batches, local_batch = local_shape[1], local_shape[2]
  num_examples = tf.nest.flatten(examples)[0].shape[1]
  size = num_batches * local_batch + num_examples
  if not can_merge(size, batch_size, num_steps):
    raise ValueError(
        f'{num_batches} batches of {local_batch} and {num_examples} '
        f'transferred examples in batches of {batch_size} leave a partial '
        'batch to train on.')
  num_merged = size // batch_size
  order = shuffle_order(size, shuffle_seeds)[:, :num_merged * batch_size]

  def merge(local, transferred):
    rows = tf.concat([local, transferred], axis=1)
    merged = tf.gather(rows, order, batch_dims=1)
    return tf.reshape(merged, tf.concat(
        [[-1, num_merged, batch_size], tf.shape(local)[2:]], 0))

  return tf.nest.map_structure(merge, rows_of(batches), examples)
