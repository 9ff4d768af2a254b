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
"""One scenario's run of the LM experiment, resumable.

FL-only and the mixed algorithms of the mixed FL paper (arXiv:2205.13655,
section 4.2) run as TFF processes (`build_process`) through the shared
runner and its checkpoints (`run_mixed_or_fl`); the oracle and the
transfer baselines run round by round with their own checkpoints
(`run_sequential`). With `with_diagnostics` the mixed algorithms also
report table 4's (G, B)-BGD estimates G~_t^2 and B~_t^2 (eq. 7; the paper's
runs take K = 1 for them).

Federated updates are clipped adaptively (TFF's `robust_aggregator`: a
no-noise quantile estimate of the update norms, Andrew et al. 2021) and
central gradients to a fixed norm, as in the paper.

Rounds can run in the fast simulation mode (`clients_per_group`,
`tff_mixed.simulation.client_groups`): groups of clients, each trained in one TF
computation that reads its members' posts from their ids
(`stackoverflow_wikipedia.client_dataset_fn`, the function the per-client
path traces), with the same results; adaptive clipping too: each group
clips its members' updates with the norm the server broadcasts and returns
what the norm's quantile estimate needs
(`tff_mixed.simulation.group_aggregation`). A group reads each member's K
batches from its dataset, pads them to the batch size with rows of padding
(which carry no loss) and trains `members_at_once` members at once in
lockstep (`tff_mixed.simulation.lockstep.padded_batches_fn`): one batched
recurrence for many clients instead of one per client.
"""

import os
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow_federated as tff

from experiments.common import grouping
from experiments.common import run_loop
from experiments.common import scenarios as scenarios_lib
from experiments.stackoverflow_wikipedia import central_training
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
import tff_mixed
from tff_mixed.models import char_lm
from tff_mixed.tasks import stackoverflow_wikipedia

task_lib = stackoverflow_wikipedia
# A row's evaluation metrics (`lm_data.evaluate_all`'s), in the CSV's order.
_METRICS = lm_config.CSV_COLUMNS[2:-1]


def model_for(config: lm_config.Config) -> tff.learning.models.FunctionalModel:
  return char_lm.build_char_lm(
      embedding_dim=config.embedding_dim, gru_units=config.gru_units,
      sequence_length=config.sequence_length, seed=config.seed)


def _aggregator(config: lm_config.Config):
  if not config.adaptive_clipping:
    return None
  # Adaptive clipping without noise (Andrew et al. 2021), as in the paper.
  return tff.learning.robust_aggregator(zeroing=False, clipping=True,
                                        weighted=True)


def central_batch_sizes(data: lm_data.Data, config: lm_config.Config
                       ) -> scenarios_lib.CentralBatchSizes:
  """|B_c| of each mixed algorithm, capped at the central corpus's size."""
  num_central = len(data.central.inputs)
  batch = min(config.central_batch_size, num_central)
  return scenarios_lib.CentralBatchSizes(
      parallel_training=batch,
      one_way_gt=min(config.one_way_central_batch_size, num_central),
      two_way_gt=batch)


def build_process(scenario: str, data: lm_data.Data, config: lm_config.Config,
                  client_groups: Optional[tff_mixed.ClientGroups] = None
                 ) -> tff.learning.templates.LearningProcess:
  """The TFF process of a scenario (transfer: its FedAvg phase).

  With `client_groups` (`client_groups_for`) it takes groups of client ids.
  """
  if scenario not in lm_config.SCENARIOS or scenario == lm_config.ORACLE:
    processes = tuple(s for s in lm_config.SCENARIOS
                      if s != lm_config.ORACLE)
    raise ValueError(f'`scenario` must be one of {processes} (the '
                     f'oracle has no TFF process), got {scenario!r}.')
  algorithm = lm_config.FL_ONLY if scenario in lm_config.TRANSFER else scenario
  objective = tff_mixed.central_data_objective(
      (data.central.inputs, data.central.targets), name='central_corpus')
  return scenarios_lib.build_process(
      algorithm, model_for(config), objective,
      client_lr=(config.two_way_client_lr if scenario == lm_config.TWO_WAY_GT
                 else config.client_lr),
      client_steps=config.client_steps,
      central_batch_sizes=central_batch_sizes(data, config),
      examples_per_client=0, client_batch_size=config.client_batch_size,
      seed=config.seed, model_aggregator=_aggregator(config),
      federated_weight=config.federated_weight,
      central_weight=config.central_weight,
      central_clip_norm=config.central_clip_norm,
      with_diagnostics=config.with_diagnostics and algorithm in lm_config.MIXED,
      client_groups=client_groups)


def dataset_fn(scenario: str, data: lm_data.Data, config: lm_config.Config):
  """A client's round dataset from its id (FedAvg: exactly K batches)."""
  fedavg = scenario == lm_config.FL_ONLY or scenario in lm_config.TRANSFER
  return task_lib.client_dataset_fn(
      data.train, batch_size=config.client_batch_size,
      num_steps=config.client_steps if fedavg else None,
      sequence_length=config.sequence_length, seed=config.seed)


def cohort_size(data: lm_data.Data, config: lm_config.Config) -> int:
  """S as run: `clients_per_round`, at most the training clients."""
  return min(config.clients_per_round, len(data.train_client_ids))


def client_groups_for(scenario: str, data: lm_data.Data,
                      config: lm_config.Config
                     ) -> Optional[tff_mixed.ClientGroups]:
  """The scenario's `ClientGroups`, or `None` for one client per member."""
  if not grouping.is_grouped(config.clients_per_group,
                             cohort_size(data, config)):
    return None
  # Every member's K batches, its dataset's in their order, padded rows
  # carrying no loss (padding targets), so the group trains in lockstep.
  return grouping.padded_groups(
      dataset_fn(scenario, data, config), np.str_,
      num_batches=config.client_steps,
      batch_size=config.client_batch_size,
      members_at_once=config.members_at_once)


class ScenarioResult(NamedTuple):
  """One scenario's evaluations.

  Attributes:
    scenario: The scenario.
    rows: One dict per evaluation (`round`, `<set>_accuracy`,
      `<set>_loss`), round 0 first.
    seconds_per_round: Wall-clock seconds per round trained by this call.
    seconds: Wall-clock seconds of this call.
    resumed_from: The round an earlier call had checkpointed (0: none).
    metrics_path: The runner's per-round CSV (every training metric, e.g.
      the diagnostics), or '' for the oracle and the transfer baselines.
  """

  scenario: str
  rows: list[dict[str, float]]
  seconds_per_round: float
  seconds: float = float('nan')
  resumed_from: int = 0
  metrics_path: str = ''


def client_ids_fn(data: lm_data.Data, config: lm_config.Config, grouped: bool):
  """`fn(round_num)`: the round's ids (`'<round>|<client>'`), grouped or
  one per CLIENTS member."""
  sample = tff.simulation.build_uniform_sampling_fn(
      data.train_client_ids, random_seed=config.seed)

  def client_ids(round_num):
    ids = task_lib.round_client_ids(
        sample(round_num - 1, cohort_size(data, config)), round_num)
    if not grouped:
      return ids
    return grouping.group_ids(ids, config.clients_per_group, np.str_)

  return client_ids


def _composed(scenario: str, data: lm_data.Data, config: lm_config.Config,
              processes: Optional[dict[str, Any]] = None):
  """`(process on client ids, its client ids fn)`: groups or per client.

  With `processes` (a dict kept across the scenarios of one run on the same
  data and config), a process is built once: FL-only and both transfer
  baselines run the same FedAvg process, whose tracing and first call's
  compilation are most of a short run's time.
  """
  algorithm = lm_config.FL_ONLY if scenario in lm_config.TRANSFER else scenario
  if processes is None:
    processes = {}
  if algorithm not in processes:
    processes[algorithm] = compose(algorithm, data, config)
  return processes[algorithm]


def compose(scenario: str, data: lm_data.Data, config: lm_config.Config):
  """`(process on client ids, its client ids fn)` of `scenario` as the
  binary runs it: in groups, or per client with the datasets built in
  TFF's worker (benchmarks/lm_rounds.py times it)."""
  groups = client_groups_for(scenario, data, config)
  process = build_process(scenario, data, config, client_groups=groups)
  if groups is None:
    process = (
        tff.simulation.compose_dataset_computation_with_learning_process(
            tff.tensorflow.computation(dataset_fn(scenario, data, config),
                                       np.str_), process))
  return process, client_ids_fn(data, config, grouped=groups is not None)


def run_mixed_or_fl(scenario: str, data: lm_data.Data, config: lm_config.Config,
                    output_dir: str, progress: Optional[bool] = None,
                    processes: Optional[dict[str, Any]] = None,
                    rounds_per_call: int = 1) -> ScenarioResult:
  """FL-only or a mixed algorithm, with the resumable runner.

  `processes`: the processes built by earlier scenarios of the same run
  (`stackoverflow_wikipedia_lib.run_experiment`), reused; `None`: built
  here. `rounds_per_call`: as in `tff_mixed.run_training`.
  """
  process, client_ids = _composed(scenario, data, config, processes)
  trained = run_loop.train_process(
      process, name=scenario, output_dir=output_dir,
      hparams=_hparams(scenario, config), rounds=config.rounds,
      eval_every=config.eval_every, client_data_fn=client_ids,
      evaluation_fn=lambda weights: lm_data.evaluate_all(weights.trainable,
                                                         data),
      rounds_per_checkpoint=max(1, config.rounds // 5),
      metric_names=_METRICS, progress=progress,
      rounds_per_call=rounds_per_call)
  return ScenarioResult(scenario, trained.rows, trained.seconds_per_round,
                        trained.seconds, trained.resumed_from,
                        trained.metrics_path)


def _hparams(scenario: str, config: lm_config.Config) -> dict:
  """What a checkpoint directory must share with the run resuming it."""
  if scenario in lm_config.TRANSFER:
    return run_loop.fingerprint(config._asdict(), scenario,
                                switch_round=config.switch())
  return run_loop.fingerprint(config._asdict(), scenario)


def run_sequential(scenario: str, data: lm_data.Data, config: lm_config.Config,
                   output_dir: str,
                   processes: Optional[dict[str, Any]] = None
                  ) -> ScenarioResult:
  """The oracle or a transfer baseline, round by round, resumably.

  The oracle takes K clipped SGD steps per round on pooled batches
  (`central_training.pooled_batches`); a transfer baseline takes K on central
  batches while it trains centrally and runs the FedAvg process's round
  otherwise. The state (the process's, adaptive clipping included, and the
  weights) is checkpointed under `output_dir/<scenario>` five times a run and
  at the end; a rerun resumes from the last checkpoint with the batches an
  uninterrupted run would draw (`central_training.round_rng`).
  `processes` is as in `run_mixed_or_fl`.
  """
  oracle = scenario == lm_config.ORACLE
  model = model_for(config)
  steps_fn = central_training.build_clipped_sgd_steps(
      model, config.client_lr, config.central_clip_norm)
  central = (data.central.inputs, data.central.targets)
  if oracle:
    pool = lm_data.federated_pool(data, config)
    split = central_training.oracle_batch_split(
        config.clients_per_round, config.client_batch_size,
        config.federated_weight)
    process = client_ids = None
    state = ([np.asarray(w) for w in model.initial_weights[0]],)
  else:
    process, client_ids = _composed(scenario, data, config, processes)
    initial = process.initialize()
    state = (initial, [np.asarray(w) for w in
                       process.get_model_weights(initial).trainable])
  batch = min(config.central_batch_size, len(central[0]))
  central_first = scenario == lm_config.CENTRAL_THEN_FL

  def central_now(round_num: int) -> bool:
    return oracle or (round_num <= config.switch()) == central_first

  def next_fn(state, round_num):
    # The state's last part is the model's weights; a transfer baseline's
    # first, its FedAvg process's state.
    if central_now(round_num):
      rng = central_training.round_rng(config.seed, round_num)
      if oracle:
        inputs, targets = central_training.pooled_batches(
            rng, (pool.inputs, pool.targets), central,
            steps=config.client_steps, federated_per_batch=split[0],
            central_per_batch=split[1])
      else:
        inputs, targets = central_training.central_batches(
            rng, central, steps=config.client_steps, batch_size=batch)
      weights = [w.numpy() for w in steps_fn(state[-1], inputs, targets)]
      return (*state[:-1], weights), {}, weights
    process_state = process.set_model_weights(
        state[0], tff.learning.models.ModelWeights(tuple(state[-1]), ()))
    process_state = process.next(process_state, client_ids(round_num)).state
    weights = [np.asarray(w) for w in
               process.get_model_weights(process_state).trainable]
    return (process_state, weights), {}, weights

  trained = run_loop.train_steps(
      next_fn, state, name=scenario,
      run_dir=os.path.join(output_dir, scenario),
      hparams=_hparams(scenario, config), rounds=config.rounds,
      eval_every=config.eval_every,
      evaluation_fn=lambda weights: lm_data.evaluate_all(weights, data),
      metric_names=_METRICS, rounds_per_checkpoint=max(1, config.rounds // 5),
      weights_of=lambda state: [np.asarray(w) for w in state[-1]],
      describe_round=lambda round_num: (
          ' (central)' if central_now(round_num) else ' (federated)'),
      diverged=lambda round_num, bad: tff_mixed.DivergenceError(
          f'{scenario} diverged at round {round_num}: non-finite '
          f'{", ".join(bad)}.'))
  return ScenarioResult(scenario, trained.rows, trained.seconds_per_round,
                        trained.seconds, trained.resumed_from)
