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
"""A MovieLens scenario's learning process, its clients' data and its
evaluation (arXiv:2205.13655, section 4.3).

The baseline is TFF's FedAvg with the whole table broadcast; the mixed
algorithms send each client only the rows of its movies
(`tff.federated_select`) and compute the spreadout at the server. Clients'
datasets are built from their ids in pure TF (`client_dataset_fn`), the same
function for the per-client path and for groups of clients
(`client_groups_for`). Costs are read off the per-client process.
"""

import collections
from collections.abc import Sequence
from typing import Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from experiments.common import grouping
from experiments.movielens import movielens_config as config_lib
import tff_mixed
from tff_mixed import registry
from tff_mixed.models import dual_encoder
from tff_mixed.tasks import movielens

def build_process(scenario: str, data: 'movielens.MovieLensData',
                  config: config_lib.Config, select: bool = True,
                  client_groups: Optional[tff_mixed.ClientGroups] = None,
                  with_diagnostics: bool = False):
  """The learning process of one scenario.

  `select=False` broadcasts the whole table to the mixed algorithms too (for
  benchmarks, and for `with_diagnostics`, table 4's G~^2 and B~^2, which
  the federated_select processes do not support); the baseline always
  does. With `client_groups` the process
  takes groups of client ids (`client_groups_for`); the baseline is then
  the composed FedAvg, equal to TFF's, and the mixed algorithms' members
  take their rows of the table inside the group.
  """
  num_rows = data.num_movies + 1
  if scenario == config_lib.BASELINE:
    # All on the client: w_f client loss + w_c spreadout over the broadcast
    # table.
    return registry.build(registry.FEDAVG,
                          client_model(config_lib.BASELINE, data, config),
                          client_lr=config.client_lr,
                          client_groups=client_groups)
  if scenario not in config_lib.SCENARIOS:
    raise ValueError(f'`scenario` must be one of {config_lib.SCENARIOS}, got '
                     f'{scenario!r}.')
  model = dual_encoder.build_dual_encoder(num_rows,
                                          **config_lib.model_kwargs(config))
  selection = dual_encoder.build_embedding_selection(
      num_rows, config_lib.key_budget(config, num_rows), config.embedding_dim,
      config.context_length, **config_lib.model_forms(config))
  spreadout = tff_mixed.central_regularizer(
      dual_encoder.build_spreadout_loss_fn(config.spreadout_form,
                                           config.spreadout_lambda),
      name='spreadout')
  # FedAdam is 1-way GT with Adam as SERVEROPTIMIZER; the others take SGD.
  server = (tff.learning.optimizers.build_adam(config.fedadam_lr)
            if scenario == config_lib.ONE_WAY_GT_FEDADAM else None)
  return registry.build(
      config_lib.ONE_WAY_GT
      if scenario == config_lib.ONE_WAY_GT_FEDADAM else scenario,
      model, spreadout, client_lr=config_lib.client_lr_of(config, scenario),
      server_optimizer=server,
      client_steps=config.client_steps, central_steps=config.client_steps,
      federated_weight=config.federated_weight,
      central_weight=config.central_weight,
      central_batch_size=config_lib.CENTRAL_BATCH_SIZE,
      seed=config.seed, embedding_selection=selection if select else None,
      client_groups=client_groups, with_diagnostics=with_diagnostics)


def client_dataset_fn(data: 'movielens.MovieLensData',
                      config: config_lib.Config, fedavg: bool,
                      fresh_shuffle: bool = False):
  """`fn(id) -> {B*}`: a client's round dataset, pure TF.

  Clients are named `'<round>|<user>'`; the round varies the shuffle (a hash
  of the name and seed: the same order in a rerun or a resumed run, and in
  either simulation mode). The user's rows are sliced out of constants
  (`movielens.build_rows_fn`), so the function traces into a
  TFF computation (`dataset_computation`) or a group's loop
  (`client_groups_for`). With `fresh_shuffle` every iterator of the dataset
  starts the shuffle over (see `client_groups_for`).
  """

  rows_fn = movielens.build_rows_fn(data.examples, data.train_user_ids)

  def batches(contexts, labels, seed):
    # The rows' positions are shuffled, not the examples: a shuffle's order
    # depends only on the number of elements and the seed, so the batches
    # are the same, at less cost per element. Each batch gathers its rows
    # and maps `model_batch` once (it is elementwise).
    dataset = tf.data.Dataset.range(
        tf.shape(labels, out_type=tf.int64)[0]).shuffle(
            1000, seed=seed).batch(config.client_batch_size).map(
                lambda positions: dual_encoder.model_batch(
                    collections.OrderedDict(
                        context=tf.gather(contexts, positions),
                        label=tf.gather(labels, positions))))
    if fedavg:
      # TFF's FedAvg takes one pass: give it the same K steps.
      dataset = dataset.repeat().take(config.client_steps)
    return dataset

  def make(client_id):
    user = tf.strings.split(client_id, '|')[1]
    seed = tf.strings.to_hash_bucket_fast(
        tf.strings.join([client_id, str(config.seed)], '#'), 2**31 - 1)
    contexts, labels = rows_fn(user)
    if not fresh_shuffle:
      return batches(contexts, labels, seed)
    # The shuffle is built in `flat_map`'s function, once per iterator; the
    # user's rows are sliced outside it, so that function stays small.
    return tf.data.Dataset.from_tensors(seed).flat_map(
        lambda s: batches(contexts, labels, s))

  return make


def mean_distinct_keys(data: 'movielens.MovieLensData',
                       config: config_lib.Config, rounds: int = 3) -> float:
  """The paper's n: the mean number of distinct movies (context and label
  ids, padding left out) in the K batches a client trains on in a round.

  Counted on what the clients of the first `rounds` rounds train on: each
  sampled client's shuffled dataset (`client_dataset_fn`), so the number
  is that of the run, and the same in a resumed one.
  """
  sample = tff.simulation.build_uniform_sampling_fn(
      train_user_names(data), random_seed=config.seed)
  dataset_fn = client_dataset_fn(data, config, fedavg=True)
  counts = []
  for round_num in range(1, rounds + 1):
    for user in sample(round_num - 1, config.clients_per_round):
      ids = set()
      for (context, label), _ in dataset_fn(
          tf.constant(f'{round_num}|{user}')):
        ids.update(context.numpy().ravel().tolist())
        ids.update(label.numpy().ravel().tolist())
      # Padding is -1 in a context and row 0 is never a movie.
      counts.append(sum(1 for i in ids if i > 0))
  return float(np.mean(counts))


def train_user_names(data: 'movielens.MovieLensData') -> list[str]:
  """The training users with examples, as client names are built from."""
  return [str(u) for u in data.train_user_ids if int(u) in data.examples]


def dataset_computation(data: 'movielens.MovieLensData',
                        config: config_lib.Config,
                        fedavg: bool) -> tff.Computation:
  """`(string -> {B*})`: a client's round dataset, built in TFF's worker.

  `client_dataset_fn` as a TFF computation, for the per-client path.
  Building ~100 datasets in Python and serializing them every round cost
  several seconds per round.
  """
  return tff.tensorflow.computation(client_dataset_fn(data, config, fedavg),
                                    np.str_)


def client_groups_for(
    scenario: str, data: 'movielens.MovieLensData',
    config: config_lib.Config) -> Optional[tff_mixed.ClientGroups]:
  """The scenario's `ClientGroups`, or `None` for one client per member.

  A member's dataset is its first K batches (`client_dataset_fn` with
  `fedavg=True`): what every scenario trains on, and what the mixed
  algorithms choose their `federated_select` keys from. The per-client
  process hands each of its computations (the keys', the training's) a
  fresh copy of the dataset, whose shuffle starts over; a group's member
  iterates one dataset object twice, and a second iterator of a shuffle
  continues its seed generator (another order). `fresh_shuffle` gives every
  iterator a new shuffle: the same K batches each time, the per-client
  order.
  """
  del scenario  # Every scenario trains on the same K batches.
  if not grouping.is_grouped(config.clients_per_group,
                             config.clients_per_round):
    return None
  return tff_mixed.ClientGroups(
      client_dataset_fn(data, config, fedavg=True, fresh_shuffle=True),
      np.str_)


def user_arrays(data: 'movielens.MovieLensData',
                user_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
  """`(contexts, labels)`: the examples of `user_ids`, concatenated."""
  parts = [data.examples[int(u)] for u in user_ids
           if int(u) in data.examples]
  if not parts:
    raise ValueError('None of the users has an example.')
  return (np.concatenate([p[0] for p in parts]),
          np.concatenate([p[1] for p in parts]))


def evaluation_arrays(data: 'movielens.MovieLensData',
                      config: config_lib.Config,
                      user_ids: Optional[Sequence[int]] = None):
  """`(contexts, labels)` of `user_ids` (default: the test users), a seeded
  sample if `config.max_eval_examples` caps them."""
  contexts, labels = user_arrays(
      data, data.test_user_ids if user_ids is None else user_ids)
  if config.max_eval_examples and config.max_eval_examples < len(labels):
    keep = np.sort(np.random.default_rng(config.seed).choice(
        len(labels), config.max_eval_examples, replace=False))
    contexts, labels = contexts[keep], labels[keep]
  return contexts, labels


def evaluate(weights, contexts: np.ndarray, labels: np.ndarray,
             config: config_lib.Config) -> dict[str, float]:
  """Recall@10 over all movies, and the client loss, on test examples.

  The model is `config`'s (its context layer scores, its client loss form
  and margin give the loss). The loss keeps the key `hinge_loss` that the
  records and metrics have always had; it is the client loss the run
  trains with (the squared hinge by default).
  """
  trainable = tuple(weights.trainable) if hasattr(
      weights, 'trainable') else tuple(weights[0])
  context = tf.where(contexts > 0, contexts, -1)
  recalls, losses = [], []
  for start in range(0, len(labels), 4096):
    c = context[start:start + 4096]
    y = labels[start:start + 4096]
    recalls.append(dual_encoder.recall_at_k(
        trainable, c, y, k=10, context_layer=config.context_layer) * len(y))
    scores, valid = dual_encoder.pair_scores(trainable, c, y,
                                             config.context_layer)
    losses.append(float(dual_encoder.client_loss(
        scores, valid, config.client_loss, config.margin)) * len(y))
  return collections.OrderedDict(
      recall_at_10=sum(recalls) / len(labels),
      hinge_loss=sum(losses) / len(labels))


def client_model(
    scenario: str, data: 'movielens.MovieLensData',
    config: config_lib.Config) -> tff.learning.models.FunctionalModel:
  """The model a client trains: the whole table for the baseline (w_f
  client loss + w_c lambda spreadout, the forms of `config`), its selected
  slice for the mixed algorithms (the client loss only)."""
  num_rows = data.num_movies + 1
  if scenario == config_lib.BASELINE:
    return dual_encoder.build_dual_encoder(
        num_rows,
        hinge_weight=config.federated_weight,
        spreadout_weight=config.central_weight,
        **config_lib.model_kwargs(config))
  return dual_encoder.build_dual_encoder(
      config_lib.key_budget(config, num_rows),
      **config_lib.model_kwargs(config))


def measure_costs(scenario: str, process, data: 'movielens.MovieLensData',
                  config: config_lib.Config,
                  mean_keys: float) -> config_lib.Costs:
  """Bytes from the compiled process; FLOPs from TF's profiler."""
  cost = tff_mixed.costs.per_client_communication(process)
  flops = config.client_steps * tff_mixed.costs.local_step_flops(
      client_model(scenario, data, config), config.client_batch_size)
  big_n, d = data.num_movies, config.embedding_dim
  paper_comm = config_lib.paper_comm_bytes(scenario, mean_keys, big_n, d)
  paper_flops = (config.client_steps
                 if scenario == config_lib.BASELINE else 1) * (
                     big_n**2 * d / 2)
  return config_lib.Costs(scenario, cost.down_bytes, cost.up_bytes, flops,
                          paper_comm, paper_flops)
