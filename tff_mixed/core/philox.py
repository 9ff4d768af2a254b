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
"""TensorFlow's Philox random numbers for many seeds at once.

TF's stateless random ops and tf.data's shuffle draw from Philox-4x32-10
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011):
block `b` of a stream is ten rounds of a bijection of the 128-bit counter
`start + b` under a 64-bit key. The ops take one seed each, so a group of
clients, each with its own shuffle seed (`merged_batches.py`), would need
one op per client, in a loop. Written with TF's integer ops, the rounds run
for every client's seed at once; the tests compare each stream with TF's op
for the same key and counter (tests/philox_test.py).

uint32 values are held in uint64 tensors, so that a 32x32-bit product keeps
its high half. That arithmetic is slower per value than TF's kernel: it
pays for short streams, such as the shuffle of a client's few merged
examples, not for long ones.

Pure TF.
"""

import tensorflow as tf

# The round multipliers and key increments of Philox-4x32.
_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_KEY_INCREMENTS = (0x9E3779B9, 0xBB67AE85)
_ROUNDS = 10
_LOW_32 = 0xFFFFFFFF


def _u64(value) -> tf.Tensor:
  return tf.constant(value, tf.uint64)


def _bijection(counter, key):
  """Philox-4x32-10 of 4 counter words under 2 key words (uint64 tensors)."""
  c0, c1, c2, c3 = counter
  k0, k1 = key
  for step in range(_ROUNDS):
    p0, p1 = _u64(_MULTIPLIERS[0]) * c0, _u64(_MULTIPLIERS[1]) * c2
    high0, high1 = (tf.bitwise.right_shift(p, _u64(32)) for p in (p0, p1))
    c0, c1, c2, c3 = (
        tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(high1, c1), k0),
        tf.bitwise.bitwise_and(p1, _u64(_LOW_32)),
        tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(high0, c3), k1),
        tf.bitwise.bitwise_and(p0, _u64(_LOW_32)))
    if step < _ROUNDS - 1:
      k0, k1 = (tf.bitwise.bitwise_and(k + _u64(w), _u64(_LOW_32))
                for k, w in zip((k0, k1), _KEY_INCREMENTS))
  return c0, c1, c2, c3


def _words(values: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
  """Low and high 32-bit words of uint64 `values`."""
  return (tf.bitwise.bitwise_and(values, _u64(_LOW_32)),
          tf.bitwise.right_shift(values, _u64(32)))


def uint32_streams(keys: tf.Tensor, counters: tf.Tensor,
                   size: int) -> tf.Tensor:
  """The first `size` uint32s of Philox under each key and counter.

  Args:
    keys: uint64 `[members]`, each the 64-bit key.
    counters: uint64 `[members]`, each the counter's high 64 bits (its low
      64 bits start at 0, as for `StatelessRandomUniformFullIntV2` with
      counter `[0, counters[m]]`, and for tf.data's shuffle, whose
      `PhiloxRandom(seed, seed2)` has that counter).
    size: Values per member (static).

  Returns:
    int64 `[members, size]`, each in [0, 2**32): what
    `StatelessRandomUniformFullIntV2(shape=[size], key=[keys[m]],
    counter=[0, counters[m]], alg=Philox, dtype=uint32)` gives.
  """
  blocks = -(-size // 4)
  k0, k1 = _words(keys[:, tf.newaxis])
  c2, c3 = _words(counters[:, tf.newaxis])
  low = tf.cast(tf.range(blocks), tf.uint64)[tf.newaxis]
  shape = tf.shape(low + c2)
  counter = (low, tf.zeros_like(low), c2, c3)
  words = _bijection(tuple(tf.broadcast_to(c, shape) for c in counter),
                     (k0, k1))
  stream = tf.reshape(tf.stack(words, axis=-1), [-1, blocks * 4])
  return tf.cast(stream[:, :size], tf.int64)
