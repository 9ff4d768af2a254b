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
"""Central examples chosen per client and sent by `tff.federated_select`.

Two algorithms send central examples to clients, and both choose them per
client:

*   Example Transfer ("Jointly Learning from Decentralized (Federated) and
    Centralized Data to Mitigate Distribution Shift", arXiv:2111.12150,
    Algorithm 3, line 3): inside the loop over the round's clients, "sample a
    batch B^(t) of centralized data, send to client i". A fresh batch per
    client and per round.
*   FedAvg with shared data (Zhao et al., "Federated Learning with Non-IID
    Data", arXiv:1806.00582, section 4 and its figure 6): the warm-up model
    and "a random alpha portion of G" are distributed to each client at
    initialization; each client then trains on that portion together with its
    own data. One portion per client, fixed for the whole run.

A TFF broadcast sends one value to every client, so the examples cannot be
broadcast. Instead each client draws the indices of its examples, and
`federated_select(keys, |central| - 1, central set, select_fn)` sends it just
those examples: the download is `num_keys` examples per client, not the
whole central set.

A CLIENTS-placed computation has no client id, and a real device would draw
its indices with its own randomness. To make a simulation reproducible, the
draw here is seeded instead by a fingerprint of the client's examples (an
order- and batching-independent hash), the process seed and, for Example
Transfer, the round number (held in the server state, so a resumed run draws
the same examples). Consequences, documented for users:

*   Two clients with identical examples draw the same indices.
*   The keys a client selects are a function of its data. The privacy tests
    check what clients upload by type, and a `federated_select` result stays
    at the clients; but a deployment that cannot hide the keys from the
    server should draw them from client-local randomness instead.

The same per-client seed also seeds the shuffle of the merged local data, so
clients of one round do not share one permutation.

A group of clients whose examples are held as tensors (`tff_mixed.simulation`)
draws for all its members at once (`draw_rows`; `rows_fingerprint` gives
each member's `data_fingerprint` from one `tf.fingerprint` of each leaf of
their rows, which reads the tensors' bytes in place: for 50 CelebA-size
members of 10 examples, 42 MB, 7 ms where serializing each example to a
string and hashing it took 90-130 ms).

Pure TF, except the small `tff.tensorflow.computation`s that
`build_transfer_computations` returns for the transfer distributor
(`distributors.build_transfer_distributor`).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import example_store as example_store_lib
from tff_mixed.core import model_types
from tff_mixed.core import philox

# The round number of a draw that must not change with the round (FedAvg with
# shared data): every round then draws what round `FIXED_ROUND` would.
FIXED_ROUND = -1
# Buffer of the merged-data shuffle; at least the merged size gives a uniform
# permutation.
SHUFFLE_BUFFER_SIZE = 100_000
# Fingerprints and seeds stay below 2**52 so that summing per-example hashes
# (then reducing modulo this bound) cannot overflow int64.
_HASH_BOUND = 1 << 52


def example_hashes(examples: Any) -> tf.Tensor:
  """int64 `[count]`: the hash of each example that `data_fingerprint` sums.

  Args:
    examples: `count` examples in the model's input structure, every leaf
      `[count, ...]` (a batch).

  A simulation that knows its clients' examples beforehand may hash each
  once and give a client's `data_fingerprint` as the
  `fingerprint_of_hashes` of its examples' hashes, without a pass over its
  data (`tff_mixed.ClientGroups.fingerprint_fn`).
  """
  return _example_hashes(tf.nest.flatten(examples))


def fingerprint_of_hashes(hashes: tf.Tensor) -> tf.Tensor:
  """`data_fingerprint` of the examples whose `example_hashes` are `hashes`
  (int64 `[count]`): their sum modulo 2**52, in any order."""
  return _sum_hashes(tf.cast(hashes, tf.int64))


def _example_hashes(leaves: list[tf.Tensor]) -> tf.Tensor:
  """int64 `[count]` in [0, 2**52): the hash of each of `count` examples.

  Args:
    leaves: The examples' leaves, each `[count, ...]` (one row per example).

  Each leaf's rows get TF's `tf.fingerprint` (FarmHash Fingerprint64 of a
  row's raw little-endian bytes, or of its strings), read straight from the
  tensor; an example's leaf fingerprints, side by side, are fingerprinted
  once more, so the hash depends on every leaf in order.
  """
  per_leaf = tf.concat([tf.fingerprint(leaf) for leaf in leaves], axis=1)
  # uint8 [count, 8] -> int64 [count] (any sign) -> [0, 2**52).
  return tf.math.floormod(tf.bitcast(tf.fingerprint(per_leaf), tf.int64),
                          _HASH_BOUND)


def data_fingerprint(dataset: tf.data.Dataset) -> tf.Tensor:
  """An int64 fingerprint of the multiset of a client's examples.

  Each example (one row of every batch) is hashed (`_example_hashes`: TF's
  stable FarmHash `tf.fingerprint` of its values); the hashes are summed
  modulo 2**52. The result depends neither on the order of the examples nor
  on how they are batched, only on their values: clients with the same
  examples get the same fingerprint.

  Args:
    dataset: The client's batched dataset (elements with a leading batch
      dimension, as the model's `input_spec`).

  Returns:
    A scalar int64 tensor in [0, 2**52); 0 for an empty dataset.
  """

  def add(total, batch):
    batch_hash = _sum_hashes(_example_hashes(tf.nest.flatten(batch)))
    return tf.math.floormod(total + batch_hash, _HASH_BOUND)

  return model_types.reduce_dataset(dataset, tf.constant(0, tf.int64), add)


def _sum_hashes(hashes: tf.Tensor) -> tf.Tensor:
  """`sum(hashes) mod 2**52` over the last axis, without int64 overflow."""
  # 26-bit halves summed apart: each sum stays far below 2**63.
  half = 1 << 26
  high = tf.math.floormod(tf.reduce_sum(hashes // half, axis=-1), half)
  low = tf.reduce_sum(tf.math.floormod(hashes, half), axis=-1)
  return tf.math.floormod(high * half + low, _HASH_BOUND)


def rows_fingerprint(rows: Any) -> tf.Tensor:
  """`data_fingerprint` of several clients' examples held as tensors.

  Args:
    rows: Every leaf `[members, n, ...]`: each member's `n` examples (all
      of its data), in the model's input structure.

  Returns:
    int64 `[members]`: each member's `data_fingerprint`.
  """
  leaves = [tf.convert_to_tensor(leaf) for leaf in tf.nest.flatten(rows)]
  members, n = tf.shape(leaves[0])[0], tf.shape(leaves[0])[1]
  hashes = _example_hashes([
      tf.reshape(leaf, tf.concat([[-1], tf.shape(leaf)[2:]], 0))
      for leaf in leaves])
  return _sum_hashes(tf.reshape(hashes, [members, n]))


def _client_seed(fingerprint: tf.Tensor, seed: int, round_num: tf.Tensor,
                 purpose: str) -> tf.Tensor:
  """A stateless-RNG seed `int64[2]` for one client, round and purpose.

  For a vector of fingerprints, `int64[members, 2]`.
  """
  key = tf.strings.join([
      purpose,
      tf.strings.as_string(tf.constant(seed, tf.int64)),
      tf.strings.as_string(tf.cast(round_num, tf.int64)),
      tf.strings.as_string(tf.cast(fingerprint, tf.int64)),
  ], separator='/')
  # The last axis: one seed for a scalar fingerprint, one per member for
  # a vector of them (`draw_rows`).
  return tf.stack([tf.strings.to_hash_bucket_fast(key, _HASH_BOUND),
                   tf.cast(fingerprint, tf.int64)], axis=-1)


def transfer_keys(fingerprint: tf.Tensor, seed: int, round_num: tf.Tensor,
                  num_keys: int, num_examples: int) -> tf.Tensor:
  """The indices of the central examples one client receives.

  A uniform sample of `num_keys` of `num_examples` indices without
  replacement, in uniformly random order (`_seeded_keys`), seeded by the
  client's fingerprint, the process seed and the round.

  Args:
    fingerprint: The client's `data_fingerprint`, or a vector of several
      clients' fingerprints (`draw_rows`).
    seed: The process seed.
    round_num: The round (scalar int), or `FIXED_ROUND` for a draw that stays
      the same every round.
    num_keys: Examples to draw, at most `num_examples`.
    num_examples: Size of the set drawn from.

  Returns:
    An int32 tensor of shape `[num_keys]` (static), distinct indices
    (`[clients, num_keys]` for a vector of fingerprints).
  """
  return _seeded_keys(_client_seed(fingerprint, seed, round_num, 'examples'),
                      num_keys, num_examples)


def _seeded_keys(client_seeds: tf.Tensor, num_keys: int,
                 num_examples: int) -> tf.Tensor:
  """`transfer_keys` from `_client_seed`s for 'examples'.

  Robert Floyd's sample (Bentley and Floyd, "Programming pearls: a sample of
  brilliance", CACM 30(9), 1987): for j = n - k, ..., n - 1, draw t uniform
  in [0, j] and take t, or j if t is already taken; every k-subset comes out
  equally likely. Its k steps then get a uniformly random order (by sorting
  k more random numbers). The random numbers are Philox's (`philox.py`)
  under each seed, for all seeds at once, 62 bits each, so `t mod (j + 1)`
  is uniform to within (j + 1) / 2**62.

  Why not the top k of n random scores (this module's draw until
  2026-11-28): that costs O(n) per client and an op per member of a group;
  this costs O(k^2) compares on `[members, k]` tensors for a whole group
  (50 members, n = 2,000, k = 5: about 2.3x faster under load).

  Args:
    client_seeds: int64 `[2]` (one client) or `[members, 2]`.
    num_keys: k, at most `num_examples`.
    num_examples: n.

  Returns:
    int32 `[num_keys]` or `[members, num_keys]`: distinct indices in
    [0, n).
  """
  if client_seeds.shape.rank == 1:
    return _seeded_keys(client_seeds[tf.newaxis], num_keys, num_examples)[0]
  if not num_keys:
    return tf.zeros([tf.shape(client_seeds)[0], 0], tf.int32)
  seeds = tf.cast(client_seeds, tf.uint64)
  words = philox.uint32_streams(seeds[:, 0], seeds[:, 1], 4 * num_keys)
  # Two uint32s (as int64) -> one 62-bit int64: k for the sample, k for
  # the order.
  numbers = tf.bitwise.bitwise_or(
      tf.bitwise.left_shift(tf.bitwise.bitwise_and(words[:, 1::2],
                                                   (1 << 30) - 1), 32),
      words[:, 0::2])
  picks, order = numbers[:, :num_keys], numbers[:, num_keys:]
  positions = tf.range(num_keys)

  def step(s, taken):
    j = tf.cast(num_examples - num_keys + s, tf.int64)
    t = tf.math.floormod(tf.gather(picks, s, axis=1), j + 1)
    seen = tf.reduce_any(tf.equal(taken, t[:, tf.newaxis]), axis=1)
    pick = tf.where(seen, j, t)
    return s + 1, tf.where(tf.equal(positions, s)[tf.newaxis],
                           pick[:, tf.newaxis], taken)

  # -1 is no index: position s is still empty at step s.
  empty = tf.fill(tf.shape(picks), tf.constant(-1, tf.int64))
  _, taken = tf.while_loop(lambda s, _: s < num_keys, step,
                           (tf.constant(0), empty),
                           maximum_iterations=num_keys)
  shuffled = tf.gather(taken, tf.argsort(order, axis=1, stable=True),
                       batch_dims=1)
  return tf.ensure_shape(tf.cast(shuffled, tf.int32), [None, num_keys])


def shuffle_seed(fingerprint: tf.Tensor, seed: int,
                 round_num: tf.Tensor) -> tf.Tensor:
  """The int64 seed of one client's shuffle of its merged data in a round.

  For a vector of fingerprints, one seed for each.
  """
  return _client_seed(fingerprint, seed, round_num, 'shuffle')[..., 0]


class TransferDraw(NamedTuple):
  """What a client draws before the examples are selected for it.

  Attributes:
    keys: int32 `[num_keys]`, indices into the central set.
    shuffle_seed: int64 scalar, seeds the shuffle of the merged local data.
  """

  keys: Any
  shuffle_seed: Any


def draw(dataset: tf.data.Dataset, round_num: tf.Tensor, *, seed: int,
         num_keys: int, num_examples: int,
         redraw_each_round: bool) -> TransferDraw:
  """One client's keys and shuffle seed (run on the client).

  Args:
    dataset: The client's batched dataset.
    round_num: The round (scalar int32 tensor).
    seed: The process seed.
    num_keys: Central examples the client receives.
    num_examples: Size of the central set they are drawn from.
    redraw_each_round: Draw new examples every round (Example Transfer) or
      the same ones every round (FedAvg with shared data). The shuffle is
      redrawn every round in both cases, as FedAvg reshuffles local data.

  Returns:
    A `TransferDraw`.
  """
  return draw_from_fingerprint(
      data_fingerprint(dataset), round_num, seed=seed, num_keys=num_keys,
      num_examples=num_examples, redraw_each_round=redraw_each_round)


def draw_from_fingerprint(fingerprint: tf.Tensor, round_num: tf.Tensor, *,
                          seed: int, num_keys: int, num_examples: int,
                          redraw_each_round: bool) -> TransferDraw:
  """`draw` of a client whose `data_fingerprint` is `fingerprint` (int64
  scalar): what `draw` gives without a pass over the client's data. For a
  vector of fingerprints, every member's draw at once (`draw_rows`): keys
  `[members, num_keys]`, shuffle seeds `[members]`."""
  key_round = _key_round(round_num, redraw_each_round)
  return TransferDraw(
      keys=transfer_keys(fingerprint, seed, key_round, num_keys, num_examples),
      shuffle_seed=shuffle_seed(fingerprint, seed, round_num))


def _key_round(round_num: tf.Tensor, redraw_each_round: bool) -> tf.Tensor:
  return (round_num if redraw_each_round
          else tf.constant(FIXED_ROUND, tf.int32))


def draw_rows(rows: Any, round_num: tf.Tensor, *, seed: int, num_keys: int,
              num_examples: int, redraw_each_round: bool) -> TransferDraw:
  """`draw` for several clients whose examples are held as tensors.

  Args:
    rows: Every leaf `[members, n, ...]`, each member's whole data.
    round_num: The round (scalar int32 tensor).
    seed: The process seed.
    num_keys: Central examples each member receives.
    num_examples: Size of the central set they are drawn from.
    redraw_each_round: See `draw`.

  Returns:
    A `TransferDraw` of int32 `[members, num_keys]` keys and int64
    `[members]` shuffle seeds: what `draw` gives each member.
  """
  # Every member's seed (string ops on vectors), then every member's keys,
  # at once.
  return draw_from_fingerprint(
      rows_fingerprint(rows), round_num, seed=seed, num_keys=num_keys,
      num_examples=num_examples, redraw_each_round=redraw_each_round)


def _is_store(objective: central_lib.CentralObjective) -> bool:
  return isinstance(objective.data, example_store_lib.ExampleStore)


class TransferComputations(NamedTuple):
  """The TF computations of the transfer distributor.

  Attributes:
    central_set: `( -> T)`, the server value `federated_select` reads: the
      central examples (numpy data) or a placeholder int32 0 (an
      `ExampleStore`, which `select_fn` reads from disk by index).
    draw: `(<int32, {B*}> -> TransferDraw)`, run on every client.
    select_fn: `(<T, int32> -> E)`, one central example E by index.
    max_key: The largest key, `num_examples - 1`.
    num_keys: Examples each client receives.
    draw_fn: `draw_fn(dataset, round_num) -> TransferDraw`, the pure-TF
      function `draw` runs.
    read_fn: `read_fn(keys) -> examples`, pure TF: the central examples at
      int32 `keys`, stacked, as `select_fn` gives them one by one (for
      groups of clients, which read them inside their computation).
    draw_rows_fn: `draw_rows_fn(rows, round_num) -> TransferDraw`, pure TF:
      `draw_fn` for a group's members held as tensors (`draw_rows`).
    draw_fingerprint_fn: `draw_fingerprint_fn(fingerprint, round_num) ->
      TransferDraw`, pure TF: `draw_fn` for a client whose
      `data_fingerprint` is known (`draw_from_fingerprint`).
  """

  central_set: tff.Computation
  draw: tff.Computation
  select_fn: tff.Computation
  max_key: int
  num_keys: int
  draw_fn: Callable[[tf.data.Dataset, tf.Tensor], TransferDraw]
  read_fn: Callable[[tf.Tensor], Any]
  draw_rows_fn: Callable[[Any, tf.Tensor], TransferDraw]
  draw_fingerprint_fn: Callable[[tf.Tensor, tf.Tensor], TransferDraw]


def build_transfer_computations(
    objective: central_lib.CentralObjective,
    data_type: tff.SequenceType,
    *,
    examples_per_client: int,
    seed: int,
    redraw_each_round: bool,
) -> TransferComputations:
  """Builds the computations that send each client its own central examples.

  Args:
    objective: The f_c whose examples are sent (numpy data or an
      `ExampleStore`).
    data_type: The clients' `tff.SequenceType` of batches.
    examples_per_client: Requested examples per client; a client receives
      `min(examples_per_client, |central set|)`.
    seed: The process seed.
    redraw_each_round: See `draw`.

  Returns:
    A `TransferComputations`.
  """
  num_examples = objective.num_examples
  num_keys = min(examples_per_client, num_examples)

  @tff.tensorflow.computation
  def central_set():
    if _is_store(objective):
      return tf.constant(0, tf.int32)
    return tf.nest.map_structure(tf.constant, objective.data)

  draw_args = dict(seed=seed, num_keys=num_keys, num_examples=num_examples,
                   redraw_each_round=redraw_each_round)

  def draw_fn(dataset, round_num):
    return draw(dataset, round_num, **draw_args)

  def draw_rows_fn(rows, round_num):
    return draw_rows(rows, round_num, **draw_args)

  def draw_fingerprint_fn(fingerprint, round_num):
    return draw_from_fingerprint(fingerprint, round_num, **draw_args)

  @tff.tensorflow.computation(tff.TensorType(np.int32), data_type)
  def draw_computation(round_num, dataset):
    return draw_fn(dataset, round_num)

  def gather(central, keys):
    if _is_store(objective):
      return objective.data.read(keys)
    return tf.nest.map_structure(lambda t: tf.gather(t, keys), central)

  @tff.tensorflow.computation(central_set.type_signature.result, np.int32)
  def select_fn(central, key):
    return tf.nest.map_structure(lambda t: t[0],
                                 gather(central, tf.reshape(key, [1])))

  def read_fn(keys):
    central = (None if _is_store(objective) else
               tf.nest.map_structure(tf.constant, objective.data))
    return gather(central, keys)

  return TransferComputations(
      central_set=central_set, draw=draw_computation, select_fn=select_fn,
      max_key=num_examples - 1, num_keys=num_keys, draw_fn=draw_fn,
      read_fn=read_fn, draw_rows_fn=draw_rows_fn,
      draw_fingerprint_fn=draw_fingerprint_fn)
