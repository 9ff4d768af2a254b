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
"""The experiments' plots (matplotlib): figures, atomic PNGs, and a
comparison's eval AUC and accuracy against rounds.

matplotlib's pyplot is imported at the first figure, not with the binaries:
its import (about a second of CPU) is most of a binary's start once
TensorFlow has loaded, and a run refused for a bad flag draws nothing.
"""

import collections
from collections.abc import Sequence

from experiments.common import records
from experiments.common import scenarios as scenarios_lib
from tff_mixed.training import reports


def pyplot():
  """matplotlib's pyplot on the headless Agg backend, imported at the first
  call (no display on CI machines or over ssh)."""
  # pylint: disable=g-import-not-at-top
  import matplotlib
  matplotlib.use('Agg')
  from matplotlib import pyplot as plt
  return plt


def subplots(*args, **kwargs):
  """`pyplot().subplots(*args, **kwargs)`: a new figure and its axes."""
  return pyplot().subplots(*args, **kwargs)


def plot_metrics(path: str, rows: Sequence[records.MetricsRow],
                 target_auc: float, title: str = '') -> None:
  """Plots eval AUC and accuracy against rounds, one line per scenario."""
  by_scenario = collections.defaultdict(list)
  for row in rows:
    by_scenario[row.scenario].append(row)
  fig, (ax_auc, ax_acc) = subplots(1, 2, figsize=(11, 4.2))
  for scenario, scenario_rows in by_scenario.items():
    rounds = [r.round for r in scenario_rows]
    # The two FedAvg baselines dashed, so the mixed algorithms stand out.
    style = '--' if scenario in scenarios_lib.BASELINES else '-'
    label = scenarios_lib.LABELS.get(scenario, scenario)
    ax_auc.plot(rounds, [r.eval_auc for r in scenario_rows], style,
                label=label)
    ax_acc.plot(rounds, [r.eval_accuracy for r in scenario_rows], style,
                label=label)
  ax_auc.axhline(target_auc, color='gray', linewidth=0.8, linestyle=':')
  ax_auc.set(xlabel='round', ylabel='eval AUC of ROC',
             title='Eval AUC (positives and negatives)')
  ax_acc.set(xlabel='round', ylabel='eval accuracy',
             title='Eval accuracy (positives and negatives)')
  for ax in (ax_auc, ax_acc):
    ax.grid(alpha=0.3)
  ax_acc.legend(loc='lower right', fontsize='small')
  if title:
    fig.suptitle(title, fontsize='medium')
  fig.tight_layout()
  save_figure(fig, path)


def save_figure(fig, path: str) -> None:
  """Writes a matplotlib figure to `path` as PNG, atomically, and closes it."""
  try:
    reports.atomic_write(path,
                         lambda f: fig.savefig(f, format='png', dpi=110),
                         mode='wb')
  finally:
    pyplot().close(fig)
