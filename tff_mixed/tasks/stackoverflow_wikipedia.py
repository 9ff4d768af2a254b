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
"""Stack Overflow (federated) + Wikipedia (central) next-character task.

The mixed FL paper's bias-mitigation experiment (arXiv:2205.13655, section
4.2, appendix B.2.2): clients hold Stack Overflow posts, the datacenter holds
Wikipedia text, and the model is evaluated on a shuffled mix of both (~75%
Stack Overflow sequences, ~25% Wikipedia) and on each alone.

*   Federated side: TFF's own loader,
    `tff.simulation.datasets.stackoverflow.load_data(cache_dir=...)`; a
    client's text is each post's `tokens` feature. Offline, a Stack Exchange
    `Posts.xml` dump converted into TFF's database
    (`experiments/stackoverflow_wikipedia/convert_posts_main.py`) is read
    through the same loader.
*   Central side: a list of texts (TFDS Wikipedia or text files, see
    `tff_mixed.tasks.text_corpus`), cut into sequences here.

Client datasets are built inside TFF's worker from client id strings
(`dataset_computation`, or a group of clients' computation with
`client_dataset_fn`), so a round ships strings, not datasets.
"""

import os
from collections.abc import Sequence
from typing import Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.models import char_lm
from tff_mixed.tasks import char_sequences

DATABASE_FILENAME = 'stackoverflow.sqlite'
# The paper's evaluation mix: ~75% Stack Overflow, ~25% Wikipedia sequences.
FEDERATED_EVAL_SHARE = 0.75


class DataNotFoundError(FileNotFoundError):
  """The Stack Overflow database is missing; the message says how to get it."""


def database_path(cache_dir: str) -> str:
  return os.path.join(cache_dir, DATABASE_FILENAME)


def load_stackoverflow(cache_dir: str):
  """TFF's Stack Overflow `(train, heldout, test)` ClientData, never fetched.

  TFF's loader downloads when its database is missing; here a missing one is
  an error that says how to get or convert it (this may run offline).

  Raises:
    DataNotFoundError: If `<cache_dir>/stackoverflow.sqlite` is missing.
  """
  path = database_path(cache_dir)
  if not os.path.isfile(path):
    raise DataNotFoundError(
        f'No Stack Overflow database at {path}. Either let TFF download it on '
        'a machine with network access (python -c "import '
        'tensorflow_federated as tff; tff.simulation.datasets.stackoverflow.'
        f'load_data(cache_dir=\'{cache_dir}\')"), or convert a Stack '
        'Exchange dump: python -m experiments.stackoverflow_wikipedia.'
        f'convert_posts_main --posts_xml=Posts.xml --cache_dir={cache_dir}')
  return tff.simulation.datasets.stackoverflow.load_data(cache_dir=cache_dir)


def client_examples(dataset: tf.data.Dataset,
                    sequence_length: int = (
                        char_sequences.DEFAULT_SEQUENCE_LENGTH)
                   ) -> tf.data.Dataset:
  """A client's Stack Overflow posts to `(inputs, targets)` examples."""
  return char_sequences.to_examples(dataset.map(lambda post: post['tokens']),
                                    sequence_length)


def client_sequences(client_data: tff.simulation.datasets.ClientData,
                     client_ids: Sequence[str],
                     sequence_length: int = (
                         char_sequences.DEFAULT_SEQUENCE_LENGTH),
                     max_sequences: Optional[int] = None
                    ) -> char_sequences.Sequences:
  """The sequences of some clients' posts, as numpy (evaluation sets)."""
  texts = []
  for client_id in client_ids:
    for post in client_data.create_tf_dataset_for_client(
        client_id).as_numpy_iterator():
      texts.append(post['tokens'].decode('utf-8', errors='replace'))
  sequences = char_sequences.text_sequences(texts, sequence_length)
  if max_sequences is not None:
    sequences = sequences._replace(inputs=sequences.inputs[:max_sequences],
                                   targets=sequences.targets[:max_sequences])
  return sequences


def evaluation_sets(federated: char_sequences.Sequences,
                    central: char_sequences.Sequences, *,
                    federated_share: float = FEDERATED_EVAL_SHARE,
                    seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
  """`{'mixed', 'federated', 'central'}` -> `(inputs, targets)` arrays.

  `mixed` is a shuffle of as many sequences of each corpus as keep the
  paper's proportion (`federated_share` of them from the federated side)
  with none repeated.

  Raises:
    ValueError: If either side has no sequence or the share is not in (0, 1).
  """
  if not 0.0 < federated_share < 1.0:
    raise ValueError('`federated_share` must be in (0, 1), got '
                     f'{federated_share}.')
  n_f, n_c = len(federated.inputs), len(central.inputs)
  if not n_f or not n_c:
    raise ValueError('Both evaluation corpora need sequences; got '
                     f'{n_f} federated and {n_c} central.')
  # The largest mix in proportion that both corpora can supply.
  total = min(n_f / federated_share, n_c / (1.0 - federated_share))
  take_f = max(1, int(total * federated_share))
  take_c = max(1, int(total * (1.0 - federated_share)))
  rng = np.random.default_rng(seed)
  rows_f = rng.permutation(n_f)[:take_f]
  rows_c = rng.permutation(n_c)[:take_c]
  inputs = np.concatenate([federated.inputs[rows_f], central.inputs[rows_c]])
  targets = np.concatenate([federated.targets[rows_f],
                            central.targets[rows_c]])
  order = rng.permutation(len(inputs))
  return {
      'mixed': (inputs[order], targets[order]),
      'federated': (federated.inputs, federated.targets),
      'central': (central.inputs, central.targets),
  }


@tf.function
def _sums(weights, inputs, targets):
  return char_lm.masked_sums(char_lm.logits(weights, inputs), targets)


def evaluate(weights, inputs: np.ndarray, targets: np.ndarray,
             batch_size: int = 256) -> dict[str, float]:
  """Token-weighted loss and accuracy (padding excluded) of trainable weights.

  Args:
    weights: The model's trainable weights (a sequence of arrays).
    inputs, targets: int32 `[N, T]` arrays.
    batch_size: Sequences per forward pass.

  Returns:
    `{'loss': ..., 'accuracy': ...}`.
  """
  weights = [tf.convert_to_tensor(w) for w in weights]
  loss = correct = tokens = 0.0
  for start in range(0, len(inputs), batch_size):
    batch_loss, batch_correct, batch_tokens = _sums(
        weights, tf.constant(inputs[start:start + batch_size]),
        tf.constant(targets[start:start + batch_size]))
    loss += float(batch_loss)
    correct += float(batch_correct)
    tokens += float(batch_tokens)
  return dict(loss=loss / tokens if tokens else float('nan'),
              accuracy=correct / tokens if tokens else float('nan'))


def client_dataset_fn(client_data: tff.simulation.datasets.ClientData, *,
                      batch_size: int, num_steps: Optional[int] = None,
                      sequence_length: int = (
                          char_sequences.DEFAULT_SEQUENCE_LENGTH),
                      seed: int = 0):
  """`fn(id) -> {(inputs, targets)*}`: a client's round dataset, pure TF.

  Ids are `'<round>|<client id>'` string tensors; the round and `seed` set
  the shuffle (the same order in a rerun or a resumed run). With `num_steps`
  the dataset repeats and stops after that many batches (for TFF's FedAvg,
  which takes one pass). The function traces into a TFF computation
  (`dataset_computation`) or into a group of clients' loop
  (`tff_mixed.ClientGroups`): it reads the client's posts from
  `client_data.serializable_dataset_fn` (TFF's SQL client data) there.
  """
  if isinstance(batch_size, bool) or not isinstance(
      batch_size, int) or batch_size < 1:
    raise ValueError(f'`batch_size` must be a positive int, got '
                     f'{batch_size!r}.')

  def make(round_and_client):
    client_id = tf.strings.split(round_and_client, '|', maxsplit=1)[1]
    shuffle_seed = tf.strings.to_hash_bucket_fast(
        tf.strings.join([round_and_client, str(seed)], '#'), 2**31 - 1)
    dataset = client_examples(
        client_data.serializable_dataset_fn(client_id),
        sequence_length).shuffle(512, seed=shuffle_seed).batch(batch_size)
    if num_steps is not None:
      dataset = dataset.repeat().take(num_steps)
    return dataset

  return make


def dataset_computation(client_data: tff.simulation.datasets.ClientData,
                        **kwargs) -> tff.Computation:
  """`(string -> {(inputs, targets)*})`: client datasets built in the worker.

  `client_dataset_fn(client_data, **kwargs)` as a TFF computation, for
  `tff.simulation.compose_dataset_computation_with_learning_process`.
  """
  return tff.tensorflow.computation(
      client_dataset_fn(client_data, **kwargs), np.str_)


def round_client_ids(client_ids: Sequence[str], round_num: int) -> list[str]:
  """The ids `dataset_computation` takes for `client_ids` in a round."""
  return [f'{round_num}|{c}' for c in client_ids]


def log_sequences(name: str, sequences: char_sequences.Sequences) -> None:
  logging.info('%s: %d texts (%d empty, skipped), %d characters (%d out of '
               'vocabulary), %d sequences', name, sequences.num_texts,
               sequences.num_empty, sequences.num_characters,
               sequences.num_oov, len(sequences.inputs))
