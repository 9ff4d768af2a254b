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
"""The hybrid experiment's plots: accuracy curves and Feddle's diagnostics.

One panel per setting of test accuracy against rounds, mean over seeds
(`plot`), and Feddle's share of negative merging coefficients and, out of
domain, the cosine of its in- and out-of-domain coefficient gradients per
merge round (`plot_diagnostics`; the guided-model-merging paper, Zhu et
al., Figs. 7-9).
"""

import collections
from collections.abc import Sequence
import math
import textwrap
from typing import Any

import numpy as np

from experiments.common import plots
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables


def _setting_rows(rows, setting: hybrid_config.Setting):
  return [r for r in rows if r.alpha == setting.alpha
          and r.delay_std == hybrid_config.delay_of(r.method,
                                                    setting.delay_std)]


# One color per method in every panel (tab10 has 10; METHODS has 13).
_METHOD_COLORS = [f'tab:{c}' for c in (
    'blue', 'orange', 'green', 'red', 'purple', 'brown', 'pink', 'gray',
    'olive', 'cyan')] + ['black', 'gold']


def plot(path: str, rows: Sequence[hybrid_runs.RunRow], methods: Sequence[str],
         settings: Sequence[hybrid_config.Setting], title: str) -> None:
  """Accuracy against rounds, mean over seeds, one panel per setting."""
  columns = min(2, len(settings))
  panels = math.ceil(len(settings) / columns)
  fig, axes = plots.subplots(panels, columns,
                             figsize=(6 * columns, 3.8 * panels),
                             squeeze=False)
  for ax, setting in zip(axes.flat, settings):
    selected = _setting_rows(rows, setting)
    for method in methods:
      by_round = collections.defaultdict(list)
      for r in selected:
        if r.method == method:
          by_round[r.round].append(r.accuracy)
      rounds = sorted(by_round)
      color = _METHOD_COLORS[hybrid_config.METHODS.index(method)
                             % len(_METHOD_COLORS)]
      ax.plot(rounds, [np.mean(by_round[k]) for k in rounds], label=method,
              color=color,
              linestyle='--' if method in hybrid_config.DELAY_FREE else '-')
    ax.set_title(setting.label, fontsize=9)
    ax.set_xlabel('round')
    ax.set_ylabel('test accuracy (mean over seeds)')
  for ax in list(axes.flat)[len(settings):]:
    ax.axis('off')
  axes.flat[0].legend(fontsize=6, ncol=2)
  fig.suptitle(textwrap.fill(title, 75 * columns), fontsize=8)
  fig.tight_layout()
  plots.save_figure(fig, path)


def plot_diagnostics(path: str, diagnostics: Sequence[dict[str, Any]],
                     settings: Sequence[hybrid_config.Setting]) -> None:
  """Feddle's share of negative coefficients and, out-of-domain, the cosine
  similarity of the in- and out-of-domain coefficient gradients (paper,
  Figs. 7-9), per merge round, mean over seeds."""
  fig, (left, right) = plots.subplots(1, 2, figsize=(12, 4))
  for setting in settings:
    for method in hybrid_config.FEDDLE_METHODS:
      by_round = collections.defaultdict(list)
      cos = collections.defaultdict(list)
      cos_zero = collections.defaultdict(list)
      for d in hybrid_tables.setting_diagnostics(diagnostics, method, setting):
        by_round[d['round']].append(d['negative_share'])
        if math.isfinite(d['id_ood_cosine']):
          cos[d['round']].append(d['id_ood_cosine'])
          cos_zero[d['round']].append(d['id_ood_cosine_at_zero'])
      if by_round:
        rounds = sorted(by_round)
        left.plot(rounds, [np.mean(by_round[k]) for k in rounds],
                  label=f'{method}, {setting.label}')
      if cos:
        rounds = sorted(cos)
        line, = right.plot(rounds, [np.mean(cos[k]) for k in rounds],
                           label=f'fallback start, {setting.label}')
        right.plot(rounds, [np.nanmean(cos_zero[k]) for k in rounds],
                   linestyle=':', color=line.get_color(),
                   label=f'c = 0, {setting.label}')
  left.set_title('share of negative merging coefficients', fontsize=9)
  left.set_xlabel('round')
  right.set_title('cosine(ID, OOD coefficient gradients), feddle_ood',
                  fontsize=9)
  right.set_xlabel('round')
  right.set_ylim(-1.05, 1.05)
  for ax in (left, right):
    if ax.get_legend_handles_labels()[0]:
      ax.legend(fontsize=6)
  fig.tight_layout()
  plots.save_figure(fig, path)
