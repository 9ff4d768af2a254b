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
"""What a comparison measures: per-round rows and per-scenario summaries.

A row is one evaluation of one scenario (a line of `metrics.csv`); a summary
is the outcome of one scenario (a line of the results table): the final
metrics, the rounds to a target AUC and the mean over the last quarter of
the rounds.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from tff_mixed.tasks import binary_metrics

EvalMetrics = binary_metrics.EvalMetrics

# The `EvalMetrics` fields a comparison evaluates, in `MetricsRow` order.
EVAL_FIELDS = ('accuracy', 'auc', 'loss', 'positive_accuracy',
               'negative_accuracy')
# The runner's CSV column of the clients' mean training loss.
TRAIN_LOSS_COLUMN = 'train/client_work/train/loss'


class MetricsRow(NamedTuple):
  """One evaluation of one scenario (a row of the metrics CSV).

  Attributes:
    scenario: The scenario name.
    round: Rounds completed (0: the initial model).
    train_loss: The round's mean client training loss (NaN at round 0).
    eval_accuracy: Accuracy on the eval set.
    eval_auc: AUC of ROC on the eval set.
    eval_loss: Loss on the eval set.
    positive_accuracy: Accuracy on positive eval examples.
    negative_accuracy: Accuracy on negative eval examples.
    seconds: Wall-clock seconds since the scenario started, building,
      tracing and evaluation included; NaN for rounds an earlier, interrupted
      invocation completed.
  """

  scenario: str
  round: int
  train_loss: float
  eval_accuracy: float
  eval_auc: float
  eval_loss: float
  positive_accuracy: float
  negative_accuracy: float
  seconds: float


class ScenarioSummary(NamedTuple):
  """The outcome of one scenario.

  Attributes:
    scenario: The scenario name.
    final: The `EvalMetrics` after the last round.
    rounds_to_target: The first evaluated round whose eval AUC reached the
      target, or `None`.
    tail_auc: Mean eval AUC over the evaluations in the last quarter of the
      rounds (the last one at least).
    tail_accuracy: Mean eval accuracy over the same evaluations. Less noisy
      than `final`: which clients a round samples moves the decision
      threshold.
    seconds: Wall-clock seconds of the whole scenario (as in `MetricsRow`).
    build_seconds: Of which building and initializing the process.
    metrics_path: The runner's per-round CSV (every training metric, e.g.
      the G~^2 / B~^2 diagnostics), or '' if unknown.
  """

  scenario: str
  final: EvalMetrics
  rounds_to_target: Optional[int]
  tail_auc: float
  tail_accuracy: float
  seconds: float
  build_seconds: float
  metrics_path: str = ''


def first_round_reaching(rows: Sequence[MetricsRow],
                         target_auc: float) -> Optional[int]:
  """The first row's round whose eval AUC reached `target_auc`, or `None`."""
  for row in rows:
    if row.eval_auc >= target_auc:  # False for NaN.
      return row.round
  return None


def metrics_rows(scenario: str, rows: Sequence[Mapping[str, Any]],
                 seconds: Mapping[int, float]) -> list[MetricsRow]:
  """A scenario's `MetricsRow`s from `run_loop.train_process`'s rows.

  Args:
    scenario: The scenario name.
    rows: Round 0 (the initial model's `EVAL_FIELDS`) first, then each
      evaluated round's, with `TRAIN_LOSS_COLUMN`.
    seconds: Wall-clock seconds from the scenario's start to the end of
      each round this invocation ran; rounds an earlier, interrupted
      invocation ran have none (NaN).

  Returns:
    The `MetricsRow`s, round 0 first (no training loss, 0 seconds).
  """
  initial, *evaluated = rows
  return [MetricsRow(scenario, 0, float('nan'),
                     *(initial[name] for name in EVAL_FIELDS), 0.0)] + [
      MetricsRow(scenario, row['round'], row[TRAIN_LOSS_COLUMN],
                 *(row[name] for name in EVAL_FIELDS),
                 seconds.get(row['round'], float('nan')))
      for row in evaluated]


def summarize(rows: Sequence[MetricsRow], *, rounds: int, target_auc: float,
              num_examples: int, seconds: float, build_seconds: float,
              metrics_path: str) -> ScenarioSummary:
  """The `ScenarioSummary` of one scenario's rows (`metrics_rows`).

  Args:
    rows: The scenario's `MetricsRow`s, in round order.
    rounds: The rounds the scenario trained (its last quarter is the tail).
    target_auc: The eval AUC whose first crossing is reported.
    num_examples: Eval examples (for the final `EvalMetrics`).
    seconds: Wall-clock seconds of the whole scenario.
    build_seconds: Of which building and initializing the process.
    metrics_path: The runner's per-round CSV.

  Returns:
    A `ScenarioSummary`.
  """
  last = rows[-1]
  final = EvalMetrics(
      accuracy=last.eval_accuracy, loss=last.eval_loss, auc=last.eval_auc,
      positive_accuracy=last.positive_accuracy,
      negative_accuracy=last.negative_accuracy, num_examples=num_examples)
  tail = [r for r in rows if r.round > 0.75 * rounds] or rows[-1:]
  return ScenarioSummary(
      scenario=last.scenario, final=final,
      rounds_to_target=first_round_reaching(rows, target_auc),
      tail_auc=float(np.mean([r.eval_auc for r in tail])),
      tail_accuracy=float(np.mean([r.eval_accuracy for r in tail])),
      seconds=seconds, build_seconds=build_seconds,
      metrics_path=metrics_path)
