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
"""The round loop every training run shares, and how it calls TFF.

`run_rounds` runs rounds one after another, checking each for divergence
before it is kept, evaluating on schedule, showing progress and warning of
what rounds dropped (`drop_report`); what happens to a kept round (metrics
files, checkpoints) is its caller's. `runner.run_training` drives a
`tff.learning.templates.LearningProcess` with it, and
`asynchronous.simulation.run_async` an `AsyncProcess`.

`chained_next_fn` is how `run_training` calls its process: one round a TFF
call, or several chained in one call (`multi_round`) up to the next round
whose state is needed, with a flat cohort of client ids split into client
groups where the process takes groups.
"""

import collections
from collections.abc import Callable, Mapping
import math
import time
from typing import Any, Optional

from absl import logging
import numpy as np
import tensorflow_federated as tff
import tqdm

from tff_mixed.simulation import client_groups
from tff_mixed.simulation import multi_round
from tff_mixed.training import drop_report

# The key of a round's row in a run's metrics and history.
ROUND_KEY = 'round_num'


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = '') -> dict:
  """Flattens nested metrics to `{'a/b/c': float}`, keeping scalars only."""
  flat = collections.OrderedDict()
  for key, value in metrics.items():
    name = f'{prefix}{key}'
    if isinstance(value, Mapping):
      flat.update(flatten_metrics(value, name + '/'))
    elif np.ndim(value) == 0 and not isinstance(value, (str, bytes, tuple)):
      flat[name] = float(value)
  return flat


def _non_finite(flat: Mapping[str, float]) -> list[str]:
  return [k for k, v in flat.items() if not math.isfinite(v)]


def _trainable(weights: Any) -> Any:
  return getattr(weights, 'trainable', weights)


def chained_next_fn(process, client_data_fn: Callable[[int], Any],
                    clients_per_group: int,
                    call_end: Callable[[int], int]):
  """`run_rounds`' `next_fn` for `process`: rounds `r..call_end(r)` a TFF
  call.

  Each round's client data is `client_data_fn(round_num)`, split into
  groups where `process` takes groups of client ids (`clients_per_group`,
  0: one group per core); `call_end(r)` is the last round of the call that
  starts at round `r` (`multi_round.last_round_of_call`). It hands the
  rounds out one by one: the rounds before the last get their metrics, no
  state (`None`: `call_end` stops at checkpoints) and no weights to check;
  the last gets the state and the weights.
  """
  pending, chained, prepared = {}, {}, {}

  def next_fn(state, round_num):
    if round_num in pending:
      return pending.pop(round_num)
    rounds = range(round_num, call_end(round_num) + 1)
    for r in rounds:  # Kept for the next call if this one runs fewer.
      if r not in prepared:
        prepared[r] = _grouped(process, client_data_fn(r), clients_per_group)
    data = [prepared[r] for r in rounds]
    if len(rounds) == 1 or len({len(d) for d in data}) > 1:
      # One round a call (also when cohorts differ in CLIENTS members,
      # which one TFF call cannot take).
      output = process.next(state, data[0])
      rounds, final, metrics = rounds[:1], output.state, [output.metrics]
    else:
      if len(rounds) not in chained:
        chained[len(rounds)] = multi_round.build_multi_round_next(
            process.next, len(rounds))
      output = chained[len(rounds)](state, data)
      final, metrics = output['state'], output['metrics']
    for r, round_metrics in zip(rounds, metrics):
      del prepared[r]
      last = r == rounds[-1]
      pending[r] = (final if last else None,
                    flatten_metrics(round_metrics, 'train/'),
                    process.get_model_weights(final) if last else ())
    return pending.pop(round_num)

  return next_fn


def _grouped(process, client_data: Any, clients_per_group: int) -> Any:
  """`client_data` split into groups, if `process` takes groups of ids.

  A process built with `client_groups` takes one id vector per CLIENTS
  member; a flat list of scalar ids becomes `split_cohort` groups of
  `clients_per_group` (0: one group per core). Anything else is passed on.
  """
  member = process.next.type_signature.parameter[1].member
  takes_groups = (isinstance(member, tff.TensorType)
                  and member.shape is not None and len(member.shape) == 1)
  if not takes_groups or not all(np.ndim(c) == 0 for c in client_data):
    return client_data
  size = client_groups.clients_per_group_for(clients_per_group,
                                             len(client_data))
  return [np.asarray(g, member.dtype)
          for g in client_groups.split_cohort(client_data, size)]


def run_rounds(
    next_fn: Callable[[Any, int], tuple[Any, Mapping[str, float], Any]],
    state: Any,
    *,
    first_round: int,
    total_rounds: int,
    name: str,
    diverged: Callable[[int, list[str]], Exception],
    finish_round_fn: Optional[Callable[[int, Any, dict], None]] = None,
    evaluation_fn: Optional[Callable[[Any], Mapping[str, float]]] = None,
    rounds_per_evaluation: int = 1,
    check_metrics: bool = True,
    progress: Optional[bool] = None,
) -> tuple[Any, list[dict[str, float]]]:
  """The round loop of synchronous and asynchronous training.

  Runs rounds `first_round + 1, ..., total_rounds`. Each round
  `next_fn(state, round_num)` returns `(new_state, metrics, weights)`; the
  model weights (their `trainable` part for a `tff.learning.models.
  ModelWeights`) must be finite, and so must the metrics with
  `check_metrics`. Every `rounds_per_evaluation` rounds and after the last,
  `evaluation_fn(weights)` adds its metrics (checked likewise). A bad round
  raises `diverged(round_num, what_was_bad)` and keeps the previous state;
  a good one becomes the state, then `finish_round_fn(round_num, state,
  metrics)` releases it (metrics files, checkpoints, hooks). A progress bar
  (`progress`: True, False, or None for terminals only) or, without one, a
  log line every tenth of the run shows rounds/s and the ETA. Drops the
  metrics count are warned of once per kind, and summed up at the end
  (`drop_report.DropReport`).

  `run_training` drives a `tff.learning.templates.LearningProcess` with it,
  `asynchronous.simulation.run_async` an `AsyncProcess`.

  Returns:
    `(final_state, history)`, history holding per round its metrics and
    `ROUND_KEY`.

  Raises:
    The exception `diverged` returns, on a non-finite value.
  """
  history = []
  drops = drop_report.DropReport(name)
  bar = tqdm.tqdm(total=total_rounds, initial=first_round, unit='round',
                  desc=name, disable=None if progress is None else not progress)
  log_every = max(1, total_rounds // 10)
  started = time.perf_counter()
  with bar:
    for round_num in range(first_round + 1, total_rounds + 1):
      new_state, metrics, weights = next_fn(state, round_num)
      flat = dict(metrics)
      bad = _non_finite(flat) if check_metrics else []
      if not all(np.all(np.isfinite(w)) for w in _trainable(weights)):
        bad.append('model weights')
      if (evaluation_fn is not None and not bad and
          (round_num % rounds_per_evaluation == 0
           or round_num == total_rounds)):
        eval_metrics = dict(evaluation_fn(weights))
        if check_metrics:
          bad += _non_finite(eval_metrics)
        flat.update(eval_metrics)
      if bad:
        raise diverged(round_num, bad)
      drops.observe(round_num, flat)
      state = new_state
      if finish_round_fn is not None:
        finish_round_fn(round_num, state, flat)
      history.append(dict(flat, **{ROUND_KEY: round_num}))
      bar.update(1)
      if bar.disable and (round_num % log_every == 0
                          or round_num == total_rounds):
        elapsed = time.perf_counter() - started
        rate = (round_num - first_round) / elapsed if elapsed > 0 else float(
            'inf')
        logging.info('%s: round %d/%d, %.2f rounds/s, ETA %.0f s', name,
                     round_num, total_rounds, rate,
                     (total_rounds - round_num) / rate if rate else 0.0)
  drops.log_summary()
  return state, history
