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
"""Image data of the hybrid (clients + server data) asynchronous experiment.

Follows the data setup of "Guided Model Merging for Hybrid Data Learning"
(Feddle; section 5 and appendix D, "Datasets"): the training images are
split among 500 clients with a Dirichlet(alpha) label partition (alpha 0.1
and 0.3, Yurochkin et al. 2019); for in-domain server data, 1,000 examples
are reserved from the evaluation (test) set and the rest of that set is used
for evaluation; for out-of-domain server data, images of a different data
set are used (the paper uses an ImageNet subset).

Here:

*   The image sets are read by `image_sets` (`load_cifar10_npz`,
    `load_digits_images`, `downsample_images`; importable from here too).
*   `build_hybrid_split` draws, from one labelled image set, a held-out
    evaluation set (the "test set"), takes the server's in-domain examples
    out of it, and Dirichlet-partitions the remaining training examples over
    the clients (`partition_split`, which `cifar10_pngs` shares).
*   `client_data` and `client_dataset` serve the clients' examples to TFF.
*   `hybrid_client_store` keeps them in an `ExampleStore`, from which client
    groups read the same streams inside their computations.
"""

from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.tasks import client_streams
from tff_mixed.tasks import dirichlet_partition as dp
# The image loaders, where the experiments and tests have always found them.
from tff_mixed.tasks.image_sets import downsample_images  # pylint: disable=unused-import
from tff_mixed.tasks.image_sets import load_cifar10_npz  # pylint: disable=unused-import
from tff_mixed.tasks.image_sets import load_digits_images  # pylint: disable=unused-import

class HybridSplit(NamedTuple):
  """Clients' training data, server in-domain data and evaluation data.

  Index fields are rows of the `images`/`labels` the split was built from.

  Attributes:
    images: All images (the input array, not a copy).
    labels: int32 labels of all images.
    client_indices: Per client, its sorted int64 row indices.
    server_indices: Rows of the server's in-domain examples (held out).
    eval_indices: Rows of the evaluation examples (the rest held out).
    server_x: `images[server_indices]`.
    server_y: `labels[server_indices]`.
    eval_x: `images[eval_indices]`.
    eval_y: `labels[eval_indices]`.
    description: One line describing the split, for reports.
    validation_indices: Rows of the validation examples (held out, apart
      from the server's and evaluation ones): hyperparameters are selected
      on them, never on the test set. Empty without `validation_size`.
    validation_x: `images[validation_indices]`.
    validation_y: `labels[validation_indices]`.
  """
  images: np.ndarray
  labels: np.ndarray
  client_indices: tuple[np.ndarray, ...]
  server_indices: np.ndarray
  eval_indices: np.ndarray
  server_x: np.ndarray
  server_y: np.ndarray
  eval_x: np.ndarray
  eval_y: np.ndarray
  description: str
  validation_indices: np.ndarray = np.zeros(0, np.int64)
  validation_x: Optional[np.ndarray] = None
  validation_y: Optional[np.ndarray] = None

  @property
  def num_clients(self) -> int:
    return len(self.client_indices)

  def for_validation(self) -> 'HybridSplit':
    """The split with its validation examples in place of the evaluation
    ones: a run on it is scored on the validation set (hyperparameter
    search), never seeing the test set.

    Raises:
      ValueError: If the split has no validation examples.
    """
    if not self.validation_indices.size:
      raise ValueError('The split has no validation examples: build it '
                       'with validation_size > 0.')
    return self._replace(eval_indices=self.validation_indices,
                         eval_x=self.validation_x, eval_y=self.validation_y)

  def client_arrays(self, client: int) -> tuple[np.ndarray, np.ndarray]:
    """`(x, y)` numpy arrays of client `client` (0-based)."""
    rows = self.client_indices[_check_client(self, client)]
    return self.images[rows], self.labels[rows]


def _check_count(name: str, value, minimum: int) -> int:
  if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
      or value < minimum):
    raise ValueError(f'`{name}` must be an int >= {minimum}, got {value!r}.')
  return int(value)


def _check_client(split: HybridSplit, client) -> int:
  """The 0-based index of `client` (an int or its string id)."""
  index = -1
  if isinstance(client, str) and client.isdigit():
    index = int(client)
  elif isinstance(client, (int, np.integer)) and not isinstance(client, bool):
    index = int(client)
  if not 0 <= index < split.num_clients:
    raise ValueError(f'No client {client!r}: ids are 0..'
                     f'{split.num_clients - 1}.')
  return index


def check_split_sizes(num_clients, server_size, validation_size, eval_size,
                      seed) -> tuple[int, int, int, int, int]:
  """The counts of a split as ints, in the arguments' order; a ValueError
  for a count out of range, or a held-out set (`eval_size`) that leaves
  nothing to evaluate on beside the server's and the validation examples."""
  num_clients = _check_count('num_clients', num_clients, 1)
  server_size = _check_count('server_size', server_size, 0)
  validation_size = _check_count('validation_size', validation_size, 0)
  seed = _check_count('seed', seed, 0)
  held_out = _check_count('eval_size', eval_size, 1)
  if held_out <= server_size + validation_size:
    raise ValueError(
        f'The held-out set ({held_out} examples) must be larger than '
        f'server_size={server_size} + validation_size={validation_size}, '
        'leaving examples to evaluate on.')
  return num_clients, server_size, validation_size, held_out, seed


def _check_split_arguments(images, labels, num_clients, server_size,
                           validation_size, seed, eval_fraction,
                           eval_size) -> tuple[int, int, int, int, int]:
  """`build_hybrid_split`'s checks: its counts, then the held-out size."""
  if images.ndim != 4:
    raise ValueError('`images` must be [N, height, width, channels], got '
                     f'shape {images.shape}.')
  if labels.shape != images.shape[:1]:
    raise ValueError(f'`labels` has shape {labels.shape}, expected '
                     f'({images.shape[0]},).')
  if not np.issubdtype(labels.dtype, np.integer):
    raise ValueError(f'`labels` must be integers, got {labels.dtype}.')
  num_examples = labels.size
  if (eval_fraction is None) == (eval_size is None):
    raise ValueError('Give exactly one of `eval_fraction` and `eval_size`.')
  if eval_fraction is not None:
    if (isinstance(eval_fraction, bool)
        or not isinstance(eval_fraction, (float, int, np.floating))
        or not 0.0 < eval_fraction < 1.0):
      raise ValueError('`eval_fraction` must be in (0, 1), got '
                       f'{eval_fraction!r}.')
    eval_size = int(round(eval_fraction * num_examples))
  num_clients, server_size, validation_size, held_out, seed = (
      check_split_sizes(num_clients, server_size, validation_size,
                        eval_size, seed))
  if num_examples - held_out < num_clients:
    raise ValueError(
        f'{num_examples - held_out} training examples (of {num_examples}, '
        f'{held_out} held out) cannot give each of {num_clients} clients '
        'one.')
  return num_clients, server_size, validation_size, seed, held_out


def build_hybrid_split(
    images: np.ndarray, labels: np.ndarray, *, num_clients: int,
    alpha: float, server_size: int, seed: int,
    eval_fraction: Optional[float] = None, eval_size: Optional[int] = None,
    top_up: bool = True, validation_size: int = 0) -> HybridSplit:
  """Splits labelled images into clients, server data and evaluation data.

  Conventions (following the Feddle paper, appendix D):

  1.  A uniformly random held-out set of `eval_size` examples (or
      `round(eval_fraction * N)`) plays the paper's test set; the other
      examples are the training data.
  2.  `server_size` uniformly random examples of the held-out set are the
      server's in-domain data, the next `validation_size` the validation
      set; the rest of the held-out set is the evaluation set. Server,
      validation and evaluation data are thus disjoint and none is seen by
      any client. The clients' and server's data do not depend on
      `validation_size`: a search on the validation set and the final runs
      on the evaluation set share them.
  3.  The training data are Dirichlet-partitioned over `num_clients`
      clients, each getting at least one example (`partition_split`).

  Deterministic given `seed`: the held-out draw and the partition use
  independent streams derived from it.

  Args:
    images: float32[N, height, width, channels].
    labels: int[N].
    num_clients: Number of clients, >= 1.
    alpha: Dirichlet concentration, > 0.
    server_size: In-domain server examples, >= 0 (the paper uses 1,000).
    seed: Integer >= 0.
    eval_fraction: Fraction of the examples held out, in (0, 1); exactly one
      of `eval_fraction` and `eval_size` must be given.
    eval_size: Number of examples held out.
    top_up: Repair an empty client by moving examples to it (see
      `dirichlet_partition`) instead of redrawing the partition.
    validation_size: Held-out examples set apart for validation, >= 0.

  Returns:
    A `HybridSplit`.

  Raises:
    ValueError: If an argument is invalid, the held-out set is not larger
      than `server_size`, or the training data cannot give every client an
      example.
  """
  images, labels = np.asarray(images), np.asarray(labels)
  num_examples = labels.size
  num_clients, server_size, validation_size, seed, held_out = (
      _check_split_arguments(images, labels, num_clients, server_size,
                             validation_size, seed, eval_fraction,
                             eval_size))

  split_seed, partition_seed = (
      int(child.generate_state(1)[0])
      for child in np.random.SeedSequence(seed).spawn(2))
  order = np.random.default_rng(split_seed).permutation(num_examples)
  split = partition_split(
      images, labels, order[held_out:], order[:held_out],
      num_clients=num_clients, alpha=alpha, server_size=server_size,
      validation_size=validation_size, partition_seed=partition_seed,
      top_up=top_up)
  return split._replace(description=(
      f'{num_examples} images {images.shape[1:]}: {split.description}; '
      f'seed {seed}.'))


def partition_split(images: np.ndarray, labels: np.ndarray,
                    train_rows: np.ndarray, held_out_rows: np.ndarray, *,
                    num_clients: int, alpha: float, server_size: int,
                    validation_size: int, partition_seed: int,
                    top_up: bool = True) -> HybridSplit:
  """The split of given training and held-out rows of `images`.

  The first `server_size` of `held_out_rows` (in their given order) are
  the server's, the next `validation_size` the validation set, the rest
  the evaluation set; `train_rows` are Dirichlet-partitioned over the
  clients (`dirichlet_partition`, `min_examples=1`). Other rows are unused.
  The caller draws the rows and checks the sizes; the description gives
  the parts' sizes only.
  """
  held_out_rows = np.asarray(held_out_rows, np.int64)
  server_indices = np.sort(held_out_rows[:server_size])
  validation_end = server_size + validation_size
  validation_indices = np.sort(held_out_rows[server_size:validation_end])
  eval_indices = np.sort(held_out_rows[validation_end:])
  train_indices = np.sort(np.asarray(train_rows, np.int64))
  parts = dp.dirichlet_partition(labels[train_indices], num_clients, alpha,
                                 partition_seed, min_examples=1,
                                 top_up=top_up)
  client_indices = tuple(train_indices[part] for part in parts)

  sizes = np.array([part.size for part in parts])
  description = (
      f'{train_indices.size} training examples over {num_clients} clients '
      f'by Dirichlet(alpha={alpha}) (client sizes min {sizes.min()}, median '
      f'{int(np.median(sizes))}, max {sizes.max()}); {held_out_rows.size} '
      f'held out: {server_size} server in-domain, '
      + (f'{validation_size} validation, ' if validation_size else '')
      + f'{eval_indices.size} evaluation')
  labels = labels.astype(np.int32)
  return HybridSplit(
      images=images,
      labels=labels,
      client_indices=client_indices,
      server_indices=server_indices,
      eval_indices=eval_indices,
      server_x=images[server_indices],
      server_y=labels[server_indices],
      eval_x=images[eval_indices],
      eval_y=labels[eval_indices],
      description=description,
      validation_indices=validation_indices,
      validation_x=images[validation_indices],
      validation_y=labels[validation_indices],
  )


def client_data(split: HybridSplit) -> tff.simulation.datasets.ClientData:
  """The clients' training examples as an in-memory TFF `ClientData`.

  Client ids are '0'..'N-1' (client i holds `split.client_indices[i]`);
  datasets yield unbatched `(float32[height, width, channels], int32[])`
  examples in index order.

  The clients' examples are stored once, grouped by client, and a dataset
  slices its client's group. Called eagerly with a Python id, the slice is
  taken in numpy; traced with a string tensor id (as in
  `dataset_computation`), the groups become graph constants, since TFF's
  graphs cannot capture eager tensors.

  Args:
    split: A `HybridSplit`.

  Returns:
    A `tff.simulation.datasets.ClientData`.
  """
  rows = np.concatenate(split.client_indices)
  all_x = split.images[rows].astype(np.float32)
  all_y = split.labels[rows].astype(np.int32)
  bounds = np.cumsum([0] + [part.size for part in split.client_indices])

  def dataset_fn(client_id):
    if isinstance(client_id, str):
      index = _check_client(split, client_id)
      start, stop = bounds[index], bounds[index + 1]
      return tf.data.Dataset.from_tensor_slices(
          (all_x[start:stop], all_y[start:stop]))
    index = tf.strings.to_number(client_id, out_type=tf.int64)
    start = tf.gather(tf.constant(bounds, tf.int64), index)
    stop = tf.gather(tf.constant(bounds, tf.int64), index + 1)
    return tf.data.Dataset.from_tensor_slices(
        (tf.constant(all_x)[start:stop], tf.constant(all_y)[start:stop]))

  return tff.simulation.datasets.ClientData.from_clients_and_tf_fn(
      [str(i) for i in range(split.num_clients)], dataset_fn)


def client_dataset(split: HybridSplit, client, batch_size: int,
                   num_steps: Optional[int], seed: int, *,
                   epochs: Optional[int] = None) -> tf.data.Dataset:
  """A client's local training stream: K batches, or E epochs.

  Two local-training protocols:

  *   `num_steps` (K fixed steps, `epochs=None`): the client's examples are
      shuffled (reshuffled every pass), repeated as often as needed and
      batched, so every batch is full even when the client holds fewer than
      `batch_size` examples, as with small Dirichlet alpha
      (`client_streams.steps_stream`).
  *   `epochs` (`num_steps=None`): E passes over the client's data, each a
      fresh permutation cut into `ceil(n / batch_size)` batches (the last
      possibly smaller), as the guided-model-merging paper's clients train
      (appendix D: client epochs tuned with Adam; Alg. 1 line 6)
      (`client_streams.epochs_stream`).

  Args:
    split: A `HybridSplit`.
    client: Client index or id ('0'..'N-1').
    batch_size: Examples per batch, >= 1.
    num_steps: Number of batches, >= 1; None with `epochs`.
    seed: Shuffle seed (integer >= 0); the same seed gives the same stream
      for a newly built dataset.
    epochs: Passes over the client's data, >= 1; None with `num_steps`.

  Returns:
    A `tf.data.Dataset` of `(float32[b, h, w, c], int32[b])` batches.

  Raises:
    ValueError: If `client` is unknown, an argument is invalid, or not
      exactly one of `num_steps` and `epochs` is given.
  """
  index = _check_client(split, client)
  batch_size = _check_count('batch_size', batch_size, 1)
  seed = _check_count('seed', seed, 0)
  if num_steps is not None:
    num_steps = _check_count('num_steps', num_steps, 1)
  if epochs is not None:
    epochs = _check_count('epochs', epochs, 1)
  x, y = split.client_arrays(index)
  examples = tf.data.Dataset.from_tensor_slices(
      (x.astype(np.float32), y.astype(np.int32)))
  return client_streams.local_stream(examples, len(y), batch_size, seed,
                                     num_steps=num_steps, epochs=epochs)
