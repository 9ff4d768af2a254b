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
"""`philox.uint32_streams` equals TF's Philox op for each key and counter."""

import numpy as np
import tensorflow as tf
from absl.testing import absltest

from tff_mixed.core import philox

# Keys and counters with both 32-bit words in use, and tf.data's default
# graph seed as a key.
_KEYS = (87_654_321, 2**40 + 3, 5, 2**64 - 1)
_COUNTERS = (3, 2**31 - 2, 2**45 + 11, 0)


def _tf_stream(key, counter, size):
  return tf.raw_ops.StatelessRandomUniformFullIntV2(
      shape=[size], key=tf.constant([key], tf.uint64),
      counter=tf.constant([0, counter], tf.uint64), alg=1,
      dtype=tf.uint32).numpy().astype(np.int64)


class UInt32StreamsTest(absltest.TestCase):

  def test_equals_tf_op(self):
    for size in (1, 4, 17):
      streams = philox.uint32_streams(
          tf.constant(_KEYS, tf.uint64), tf.constant(_COUNTERS, tf.uint64),
          size).numpy()
      self.assertEqual(streams.shape, (len(_KEYS), size))
      for m, (key, counter) in enumerate(zip(_KEYS, _COUNTERS)):
        np.testing.assert_array_equal(
            streams[m], _tf_stream(key, counter, size),
            err_msg=f'key {key}, counter {counter}, size {size}')

  def test_in_a_graph(self):
    graph = tf.Graph()
    with graph.as_default():
      stream = philox.uint32_streams(tf.constant(_KEYS[:1], tf.uint64),
                                     tf.constant(_COUNTERS[:1], tf.uint64), 9)
      with tf.compat.v1.Session(graph=graph) as session:
        value = session.run(stream)
    np.testing.assert_array_equal(value[0],
                                  _tf_stream(_KEYS[0], _COUNTERS[0], 9))


if __name__ == '__main__':
  absltest.main()
