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
"""A client's local training stream: K steps or E epochs of its examples.

The two ways a client trains in the guided-model-merging experiments: K
fixed SGD steps (FedAvg's usual setting) or E epochs (the paper's
appendix D protocol). Pure `tf.data`, with `num_examples` and `seed`
allowed as tensors, so `hybrid_images.client_dataset` and a client-group
computation build the same stream.
"""

import tensorflow as tf


def steps_stream(examples: tf.data.Dataset, num_examples, batch_size: int,
                  num_steps: int, seed) -> tf.data.Dataset:
  """K batches of a client's examples, reshuffled as it repeats (pure TF).

  `num_examples` and `seed` may be tensors, so that a client-group
  computation builds the stream of a client id and round there.
  """
  return (examples.shuffle(num_examples, seed=seed,
                           reshuffle_each_iteration=True)
          .repeat()
          .batch(batch_size, drop_remainder=True)
          .take(num_steps))


def epochs_stream(examples: tf.data.Dataset, num_examples,
                         batch_size: int, epochs: int,
                         seed) -> tf.data.Dataset:
  """E epochs of a client's examples, in batches (pure TF).

  Batching before repeating keeps every batch inside one epoch, and the
  shuffle, re-run by each repetition, draws a fresh permutation per epoch:
  every example is seen exactly once an epoch. Tensors are allowed for
  `num_examples` and `seed`, as in `steps_stream`.
  """
  return (examples.shuffle(num_examples, seed=seed,
                           reshuffle_each_iteration=True)
          .batch(batch_size)
          .repeat(epochs))


def local_stream(examples: tf.data.Dataset, num_examples, batch_size: int,
                 seed, *, num_steps=None, epochs=None) -> tf.data.Dataset:
  """`steps_stream` for K = `num_steps`, or `epochs_stream` for E = `epochs`.

  Raises:
    ValueError: Unless exactly one of `num_steps` and `epochs` is given.
  """
  if (num_steps is None) == (epochs is None):
    raise ValueError('Give exactly one of `num_steps` and `epochs`, got '
                     f'num_steps={num_steps!r}, epochs={epochs!r}.')
  if epochs is not None:
    return epochs_stream(examples, num_examples, batch_size, epochs, seed)
  return steps_stream(examples, num_examples, batch_size, num_steps, seed)
