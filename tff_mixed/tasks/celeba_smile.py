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
"""The CelebA smile classifier task: federated smiles, centralized non-smiles.

Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning" (arXiv:2205.13655, section 4.1, appendix B.1): a phone
camera keeps only portraits of smiling faces, so federated learning alone
never sees a non-smiling face; a datacenter holds non-smiling faces; the model
must classify both.

Data: TFF's federated CelebA (`tff.simulation.datasets.celeba.load_data`,
split by clients: 8,408 training and 935 evaluation celebrities; images
84x84x3 int64 in [0, 255], 40 boolean attributes). The task:

*   Label: one attribute (`smiling` by default) as 1, its absence as 0.
*   Federated clients: composite clients of `raw_clients_per_client` (3)
    training celebrities each, a seeded grouping (~2,800 clients), holding
    only their positive (smiling) images. Composites without a positive image
    hold nothing federated and are left out.
*   Central data: every negative (non-smiling) training image, pooled, in an
    `ExampleStore` on disk (too large to bake into a computation).
*   Oracle: the same composite clients holding all their images.
*   Evaluation: every image of the evaluation celebrities, both labels.
*   Features: pixels / 255 flattened to `float32[21168]`, labels
    `float32[1]`, matching
    `tff_mixed.models.dense.build_binary_classifier(NUM_FEATURES)`.

Two sequential passes over the database build the central store, count
each celebrity's labels and write every training image into a client store
(an `ExampleStore` too), noting each celebrity's rows in the order TFF's
loader (`ClientData.serializable_dataset_fn`) gives its examples; the result
is cached in `work_dir` (`celeba_cache`, keyed by the database's size and
modification time, the label and the format), so later runs start at once.
Client datasets are built each round inside TFF's worker from client id
strings
(`CelebASmileTask.dataset_computation`): the client's rows, shuffled by a
seed of the round and client (reproducible, resumable runs), read from the
client store: the batches the same shuffle of TFF's loader gives.

The database itself (where it is, its up-front check, TFF's loader, how to get
it) is `celeba_database`; its names are importable from here as well.
"""

from collections.abc import Sequence
import os
from typing import Any, NamedTuple, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import example_store as example_store_lib
from tff_mixed.core import store_hashes
from tff_mixed.simulation import client_groups as client_groups_lib
from tff_mixed.tasks import binary_metrics
from tff_mixed.tasks import celeba_cache
from tff_mixed.tasks import celeba_database

# The database (re-exported: `celeba_smile.check_database` etc. keep working).
IMAGE_SHAPE = celeba_database.IMAGE_SHAPE
NUM_FEATURES = celeba_database.NUM_FEATURES
DATABASE_FILENAME = celeba_database.DATABASE_FILENAME
ATTRIBUTE_NAMES = celeba_database.ATTRIBUTE_NAMES
TRAIN_SPLIT = celeba_database.TRAIN_SPLIT
TEST_SPLIT = celeba_database.TEST_SPLIT
DataNotFoundError = celeba_database.DataNotFoundError
default_cache_dir = celeba_database.default_cache_dir
database_path = celeba_database.database_path
check_database = celeba_database.check_database
load_client_data = celeba_database.load_client_data

DEFAULT_LABEL = 'smiling'
# Shuffle buffer of a client dataset: larger than any composite client
# (celebrities hold at most ~35 images each), so the shuffle is uniform.
_SHUFFLE_BUFFER = 1024

EvalMetrics = binary_metrics.EvalMetrics


def to_features(images: Any) -> Any:
  """Pixels in [0, 255] (`[..., 84, 84, 3]`) to `float32[..., 21168]` / 255.

  Works on numpy arrays and tensors (eager or in a graph).
  """
  if isinstance(images, np.ndarray):
    flat = images.reshape(*images.shape[:-3], NUM_FEATURES)
    return flat.astype(np.float32) / np.float32(255.0)
  images = tf.convert_to_tensor(images)
  flat = tf.reshape(images, tf.concat(
      [tf.shape(images)[:-3], [NUM_FEATURES]], axis=0))
  return tf.cast(flat, tf.float32) / 255.0


def _store_map_fn(batch):
  # Stored as uint8 pixels (4x smaller than float32); features on read.
  pixels, labels = batch
  return to_features(tf.reshape(pixels, [-1, *IMAGE_SHAPE])), labels


def _check_label(label: str) -> str:
  if label not in ATTRIBUTE_NAMES:
    raise ValueError(f'`label` must be one of the 40 CelebA attributes '
                     f'{list(ATTRIBUTE_NAMES)}, got {label!r}.')
  return label


class ClientRows(NamedTuple):
  """Each celebrity's rows in the client store, as graph constants.

  Attributes:
    celebrities: str `[c]`, the celebrities.
    rows: int64, every celebrity's rows one after another.
    lengths: int64 `[c]`, how many rows each celebrity has.
  """

  celebrities: np.ndarray
  rows: np.ndarray
  lengths: np.ndarray

  @classmethod
  def from_dict(cls, rows: dict[str, list[int]]) -> 'ClientRows':
    names = sorted(rows)
    return cls(np.array(names, dtype=object),
               np.array([r for n in names for r in rows[n]], np.int64),
               np.array([len(rows[n]) for n in names], np.int64))

  def of(self, celebrities: tf.Tensor) -> tf.Tensor:
    """The rows of `celebrities` (string `[n]`), one after another."""
    matches = tf.equal(celebrities[:, tf.newaxis],
                       tf.constant(self.celebrities, tf.string)[tf.newaxis])
    known = tf.debugging.assert_equal(
        tf.reduce_all(tf.reduce_any(matches, axis=1)), True,
        message='A client id names a celebrity the task does not hold.')
    with tf.control_dependencies([known]):
      position = tf.argmax(tf.cast(matches, tf.int32), axis=1)
    ragged = tf.RaggedTensor.from_row_lengths(tf.constant(self.rows),
                                              tf.constant(self.lengths))
    return tf.gather(ragged, position).flat_values


class CelebASmileTask(NamedTuple):
  """The CelebA smile task (see the module docstring).

  Attributes:
    label: The attribute used as the label.
    clients: Per federated client, the ids of its raw CelebA clients
      (celebrities).
    num_client_examples: Positive images per federated client.
    num_oracle_client_examples: All images per (oracle) client.
    central_store: The `ExampleStore` of the negative training images;
      batches are `(float32[B, 21168], float32[B, 1])`.
    client_store: The `ExampleStore` of every training image, batches as
      `central_store`'s, from which client datasets read.
    positive_rows: Each celebrity's positive images' rows in
      `client_store` (`ClientRows`), in TFF's loader's order.
    all_rows: Each celebrity's rows of all its images (the oracle).
    eval_images: uint8 `[n, 84, 84, 3]` images of the evaluation clients.
    eval_labels: float32 `[n]` labels of the evaluation images.
    train_data: TFF's training `ClientData` (raw celebrities), as
      `celeba.load_data` returns it.
    serialized_train_data: The same split as TFF's `SqlClientData` of
      serialized examples (what `load_data` parses): what the client store
      holds, as TFF's loader reads it.
    client_batch_size: Batch size of the client datasets.
    seed: The task's seed (grouping, client shuffles).
    client_store_hashes: `client_store`'s `store_hashes.StoreHashes`.
  """

  label: str
  clients: list[tuple[str, ...]]
  num_client_examples: list[int]
  num_oracle_client_examples: list[int]
  central_store: example_store_lib.ExampleStore
  client_store: example_store_lib.ExampleStore
  positive_rows: ClientRows
  all_rows: ClientRows
  eval_images: np.ndarray
  eval_labels: np.ndarray
  train_data: tff.simulation.datasets.ClientData
  serialized_train_data: tff.simulation.datasets.ClientData
  client_batch_size: int
  seed: int
  client_store_hashes: store_hashes.StoreHashes

  @property
  def num_clients(self) -> int:
    return len(self.clients)

  def client_id(self, index: int, round_num: int = 0) -> str:
    """The id naming client `index` in round `round_num`.

    `'<round>|<celebrity>+<celebrity>+...'`: everything `dataset_for_id`
    needs, so that TFF's worker can build the dataset from the string (see
    `dataset_computation`); the round varies the shuffle.
    """
    return f'{round_num}|{"+".join(self.clients[index])}'

  def dataset_for_id(self, client_id, oracle: bool = False,
                     num_steps: Optional[int] = None) -> tf.data.Dataset:
    """The batched `(x, y)` dataset named by a `client_id` string (tensor).

    The client's celebrities' images, only positives unless `oracle`, in
    TFF's loader's order, shuffled by a hash of the id and the task seed (so
    each round sees a new order and a rerun the same) and read from the
    client store a batch at a time.

    Args:
      client_id: A scalar string (Python or tensor) from `client_id`.
      oracle: Hold all images (the oracle), not only the positives.
      num_steps: If set, exactly this many batches, cycling (for TFF's
        FedAvg, which takes one pass over what it is given).

    Returns:
      A `tf.data.Dataset` of `(float32[?, 21168], float32[?, 1])` batches.
    """
    client_id = tf.convert_to_tensor(client_id, tf.string)
    rows = self._rows_for_id(client_id, oracle)
    seed = tf.strings.to_hash_bucket_fast(
        tf.strings.join([client_id, str(self.seed)], '#'), 2**31 - 1)
    # The shuffle's order depends on the number of elements and the seed
    # alone, so shuffling rows orders the images as shuffling TFF's parsed
    # examples does; only the images a round trains on are read. Parsing
    # serialized examples through TFF's SQL loader instead cost about half
    # of a grouped round at S = 100 (BENCHMARKS.md, celeba_scale).
    dataset = tf.data.Dataset.from_tensor_slices(rows).shuffle(
        _SHUFFLE_BUFFER, seed=seed)
    dataset = dataset.batch(self.client_batch_size).map(
        self.client_store.read)
    if num_steps is not None:
      dataset = dataset.repeat().take(num_steps)
    return dataset

  def _rows_for_id(self, client_id: tf.Tensor, oracle: bool) -> tf.Tensor:
    """The client-store rows of the images the client `client_id` holds."""
    celebrities = tf.strings.split(
        tf.strings.split(client_id, '|')[1], '+')
    return (self.all_rows if oracle else self.positive_rows).of(celebrities)

  def dataset_computation(self, oracle: bool = False,
                          num_steps: Optional[int] = None) -> tff.Computation:
    """`(string -> {(x, y)*})`: builds client datasets inside TFF's worker.

    Compose it with a process (`tff.simulation.
    compose_dataset_computation_with_learning_process`) and pass `client_id`
    strings to `next`: building ~100 datasets in Python and serializing them
    every round costs far more than the round itself.
    """
    return tff.tensorflow.computation(
        lambda client_id: self.dataset_for_id(client_id, oracle, num_steps),
        np.str_)

  def client_groups(self, oracle: bool = False
                    ) -> client_groups_lib.ClientGroups:
    """The clients for the fast simulation mode: `client_id` strings.

    A group's computation builds each member's dataset from its id with
    `dataset_for_id`, as `dataset_computation` does per client, and takes
    its fingerprint from its rows' hashes (hashed here, once per task), so
    that Example Transfer's members read their images once, to train.
    """
    hashes = self.client_store_hashes
    hashes.array()
    return client_groups_lib.ClientGroups(
        lambda client_id: self.dataset_for_id(client_id, oracle), np.str_,
        fingerprint_fn=lambda client_id: hashes.fingerprint(
            self._rows_for_id(tf.convert_to_tensor(client_id, tf.string),
                              oracle)))

  def client_dataset(self, index: int, oracle: bool = False,
                     round_num: int = 0) -> tf.data.Dataset:
    """The dataset of client `index` in round `round_num` (eager use)."""
    return self.dataset_for_id(self.client_id(index, round_num), oracle)

  def client_datasets(self, client_ids: Sequence[int], oracle: bool = False,
                      round_num: int = 0) -> list[tf.data.Dataset]:
    return [self.client_dataset(i, oracle, round_num) for i in client_ids]

  def evaluate(self, model: tff.learning.models.FunctionalModel,
               model_weights, batch_size: int = 2048) -> EvalMetrics:
    """AUC, accuracy, loss and per-label accuracy on the evaluation set."""
    return binary_metrics.evaluate(
        model, model_weights, (self.eval_images, self.eval_labels),
        batch_size=batch_size, feature_fn=to_features)


def _check_int(name: str, value, minimum: int) -> None:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'`{name}` must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'`{name}` must be >= {minimum}, got {value}.')


def build_task(
    cache_dir: Optional[str] = None,
    *,
    work_dir: Optional[str] = None,
    label: str = DEFAULT_LABEL,
    raw_clients_per_client: int = 3,
    client_batch_size: int = 5,
    max_eval_examples: Optional[int] = None,
    seed: int = 0,
    download: bool = False,
) -> CelebASmileTask:
  """Builds the CelebA smile task from TFF's CelebA.

  Args:
    cache_dir: Directory of `celeba.sqlite` (`None`: `~/.tff`).
    work_dir: Where the central store, label counts and eval arrays are
      cached; `None`: `<cache_dir>/tff_mixed_celeba_<label>`.
    label: The attribute used as the label (1: clients; 0: datacenter).
    raw_clients_per_client: Celebrities per composite federated client.
    client_batch_size: Batch size of the client datasets.
    max_eval_examples: Evaluate on a seeded sample of this many evaluation
      images (faster); `None`: all.
    seed: Seeds the grouping into composite clients, the eval sample and
      the client shuffles.
    download: Let TFF download the data if `celeba.sqlite` is missing.

  Returns:
    A `CelebASmileTask`.

  Raises:
    DataNotFoundError: If the data are missing (the message says how to get
      them).
    TypeError, ValueError: For bad arguments or a database that TFF's
      loader cannot read; if no federated client holds a positive image; or
      if the evaluation set lacks one of the classes (AUC is undefined).
  """
  _check_label(label)
  _check_int('raw_clients_per_client', raw_clients_per_client, 1)
  _check_int('client_batch_size', client_batch_size, 1)
  _check_int('seed', seed, 0)
  if max_eval_examples is not None:
    _check_int('max_eval_examples', max_eval_examples, 1)
  cache_dir = cache_dir or celeba_database.default_cache_dir()
  train, _ = celeba_database.load_client_data(cache_dir, download=download)
  path = celeba_database.database_path(cache_dir)
  work_dir = work_dir or os.path.join(cache_dir, f'tff_mixed_celeba_{label}')
  index = celeba_cache.prepare_cache(path, label, work_dir)
  store = example_store_lib.load_example_store(
      os.path.join(work_dir, 'central_store'), map_fn=_store_map_fn)
  client_store = example_store_lib.load_example_store(
      os.path.join(work_dir, 'client_store'), map_fn=_store_map_fn)
  eval_images, eval_labels = celeba_cache.load_eval(path, label, work_dir)

  raw_ids = sorted(train.client_ids)
  rng = np.random.default_rng(seed)
  order = rng.permutation(len(raw_ids))
  num_groups = max(1, len(raw_ids) // raw_clients_per_client)
  groups = [tuple(raw_ids[i] for i in sorted(g))
            for g in np.array_split(order, num_groups)]
  clients, positives, totals = [], [], []
  for group in groups:
    p = sum(index.train_positives.get(c, 0) for c in group)
    if p:
      clients.append(group)
      positives.append(p)
      totals.append(p + sum(index.train_negatives.get(c, 0) for c in group))
  if not clients:
    raise ValueError(f'No training image has the label {label!r}: there are '
                     'no federated clients.')
  if max_eval_examples is not None and max_eval_examples < len(eval_labels):
    keep = np.sort(rng.choice(len(eval_labels), max_eval_examples,
                              replace=False))
    eval_images, eval_labels = eval_images[keep], eval_labels[keep]
  num_positive = int(np.sum(eval_labels > 0))
  num_negative = len(eval_labels) - num_positive
  if not (num_positive and num_negative):
    # AUC needs both classes: training would end as 'diverged: non-finite
    # eval/auc' at its first evaluation.
    raise ValueError(
        f'The evaluation set holds one class only: {num_positive} images '
        f'with {label!r}, {num_negative} without; its AUC needs both. Use '
        'more evaluation images (`max_eval_examples`'
        f'{"" if max_eval_examples is None else f"={max_eval_examples}"}), or '
        f'a database whose {TEST_SPLIT} holds both.')
  logging.info(
      'CelebA %s task: %d federated clients (%d positive images), %d central '
      'negatives, %d eval images (%.1f%% positive)', label, len(clients),
      sum(positives), store.num_examples, len(eval_labels),
      100.0 * float(np.mean(eval_labels)))
  return CelebASmileTask(
      label=label, clients=clients, num_client_examples=positives,
      num_oracle_client_examples=totals, central_store=store,
      client_store=client_store,
      positive_rows=ClientRows.from_dict(index.positive_rows),
      all_rows=ClientRows.from_dict(index.all_rows),
      eval_images=np.asarray(eval_images), eval_labels=eval_labels,
      train_data=train,
      serialized_train_data=tff.simulation.datasets.SqlClientData(
          path, TRAIN_SPLIT),
      client_batch_size=client_batch_size, seed=seed,
      client_store_hashes=store_hashes.StoreHashes(client_store))
