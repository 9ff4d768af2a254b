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
"""The LM experiment's data: Stack Overflow's clients and a central corpus.

`load_data` reads TFF's Stack Overflow
(`tff_mixed.tasks.stackoverflow_wikipedia`: the training clients, and the
evaluation clients' sequences) and the central corpus's training and
evaluation texts; every scenario is evaluated on the same three sets
(`evaluate_all`): mixed, federated-only and central-only. The oracle pools
every training client's sequences (`federated_pool`).
"""

from collections.abc import Sequence
from typing import NamedTuple, Optional

import numpy as np
import tensorflow_federated as tff

from experiments.stackoverflow_wikipedia import lm_config
from tff_mixed.tasks import char_sequences
from tff_mixed.tasks import stackoverflow_wikipedia

task_lib = stackoverflow_wikipedia


class Data(NamedTuple):
  """The loaded task.

  Attributes:
    train: TFF's Stack Overflow training `ClientData`.
    train_client_ids: Its client ids.
    central: The central training `Sequences`.
    eval_sets: `{'mixed', 'federated', 'central'}` -> `(inputs, targets)`.
    description: One line naming the data.
  """

  train: tff.simulation.datasets.ClientData
  train_client_ids: list[str]
  central: char_sequences.Sequences
  eval_sets: dict[str, tuple[np.ndarray, np.ndarray]]
  description: str


def load_data(cache_dir: str, central_train_texts: Sequence[str],
              central_eval_texts: Sequence[str], *,
              sequence_length: int = char_sequences.DEFAULT_SEQUENCE_LENGTH,
              max_eval_clients: Optional[int] = None,
              max_eval_sequences: Optional[int] = None, seed: int = 0,
              central_name: str = 'central corpus') -> Data:
  """Stack Overflow from TFF's loader, the central texts, evaluation sets.

  Raises:
    task_lib.DataNotFoundError: If the Stack Overflow database is missing.
    ValueError: If a corpus yields no sequence.
  """
  train, _, test = task_lib.load_stackoverflow(cache_dir)
  train_ids = list(train.client_ids)
  if not train_ids:
    raise ValueError(f'The Stack Overflow database in {cache_dir} has no '
                     'training clients.')
  central = char_sequences.text_sequences(central_train_texts,
                                          sequence_length)
  task_lib.log_sequences(f'{central_name} (train)', central)
  if not len(central.inputs):
    raise ValueError(f'The {central_name} training texts give no sequence '
                     f'({central.num_texts} texts, {central.num_empty} '
                     'empty).')
  eval_ids = list(test.client_ids)
  if max_eval_clients is not None:
    eval_ids = list(np.random.default_rng(seed).permutation(eval_ids)[
        :max_eval_clients])
  federated_eval = task_lib.client_sequences(test, eval_ids, sequence_length,
                                             max_eval_sequences)
  task_lib.log_sequences('Stack Overflow (evaluation clients)',
                         federated_eval)
  central_eval = char_sequences.text_sequences(central_eval_texts,
                                               sequence_length)
  task_lib.log_sequences(f'{central_name} (evaluation)', central_eval)
  if max_eval_sequences is not None:
    central_eval = central_eval._replace(
        inputs=central_eval.inputs[:max_eval_sequences],
        targets=central_eval.targets[:max_eval_sequences])
  eval_sets = task_lib.evaluation_sets(federated_eval, central_eval,
                                       seed=seed)
  description = (
      f'Stack Overflow database in `{cache_dir}`: {len(train_ids)} training '
      f'clients, {len(eval_ids)} evaluation clients; {central_name}: '
      f'{central.num_texts} training texts ({len(central.inputs)} sequences),'
      f' {central_eval.num_texts} evaluation texts; evaluation sequences: '
      + ', '.join(f'{k} {len(v[0])}' for k, v in eval_sets.items()))
  return Data(train, train_ids, central, eval_sets, description)


def evaluate_all(weights, data: Data) -> dict[str, float]:
  """`{<set>_accuracy, <set>_loss}` on the three evaluation sets."""
  result = {}
  for name in lm_config.EVAL_SETS:
    metrics = task_lib.evaluate(weights, *data.eval_sets[name])
    result[f'{name}_accuracy'] = metrics['accuracy']
    result[f'{name}_loss'] = metrics['loss']
  return result


def federated_pool(data: Data, config: lm_config.Config
                  ) -> char_sequences.Sequences:
  """Every training client's Stack Overflow sequences, pooled (the
  oracle's federated half)."""
  pool = task_lib.client_sequences(data.train, data.train_client_ids,
                                   config.sequence_length)
  task_lib.log_sequences('Stack Overflow (training clients, pooled)', pool)
  if not len(pool.inputs):
    raise ValueError('The Stack Overflow training clients give no sequence '
                     'to pool for the oracle.')
  return pool
