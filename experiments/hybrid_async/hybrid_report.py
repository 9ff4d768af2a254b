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
"""The RESULTS.md section of a hybrid experiment (`results_markdown`).

The guided-model-merging paper's tables (Feddle, Zhu et al., tables 1, 2
and 7) as our runs give them: the setup, each method's selected
hyperparameters and which part of its grid was searched, both metrics'
tables, the paper's numbers beside ours where the setup is the paper's
(`paper_tables`, `paper_comparison`), the wall time, where Feddle ranks,
what changed from an earlier protocol's runs, and Feddle's diagnostics.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from experiments.hybrid_async import hybrid_async_lib
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
from experiments.hybrid_async import paper_comparison
from experiments.hybrid_async import paper_tables


def _count(epochs: int, steps: int) -> str:
  return f'{epochs} epochs' if epochs else f'{steps} steps'


def local_training(config: hybrid_config.Config) -> str:
  """The clients' local training, in words, for reports."""
  c = config
  if c.client_steps:
    what = f'K = {c.client_steps} local steps'
  else:
    what = f'E = {c.client_epochs} local epochs'
  return (f'{what} of {c.client_optimizer} with batch {c.client_batch_size} '
          f'at lr {c.client_lr:g}')


def _values(values: Mapping[str, Any]) -> str:
  return ', '.join(f'{k} = {v:g}' if isinstance(v, float) else f'{k} = {v}'
                   for k, v in sorted(values.items()))


def selected_lines(overrides: Mapping[str, Mapping[str, Any]],
                   searched: Optional[Mapping[str, Any]] = None
                   ) -> list[str]:
  """Report lines: each method's own hyperparameters and, from a search
  (`tune_lib.Selected.searched`), which part of its grid was searched."""
  searched = searched or {}
  if not overrides and not searched:
    return []
  lines = ['Hyperparameters per method (selected on the validation split; '
           'other values as above; the clients\' values, searched on '
           'fedavg, hold for every method):', '',
           '| method | selected | searched |', '| --- | --- | --- |']
  for method in hybrid_config.METHODS:
    if not overrides.get(method) and method not in searched:
      continue
    axes = searched.get(method, {})
    parts = []
    for name, axis in sorted(axes.items()):
      of = ('the whole grid' if axis['values'] == axis['grid'] else
            f'{axis["values"]} of the grid {axis["grid"]}')
      mark = ', our choice' if axis['source'] == 'ours' else ''
      parts.append(f'{name}: {of}{mark}')
    lines.append(f'| {method} | {_values(overrides.get(method, {}))} | '
                 + ('; '.join(parts) or 'not searched') + ' |')
  return lines + ['']


def _paper_table_name(settings: Sequence[hybrid_config.Setting],
                      reference) -> str:
  """The paper's table these runs answer: the one whose numbers stand
  beside them (`paper_tables.reference`), else 2 (identities) or 1."""
  if reference:
    return reference[0].name
  identities = all(s.alpha is hybrid_config.IDENTITIES for s in settings)
  return 'table 2' if identities else 'table 1'


def _values_text(values: Mapping[str, Any]) -> str:
  return ', '.join(f'{k} {v:g}' if isinstance(v, float) else f'{k} {v}'
                   for k, v in values.items() if v not in (None, 0))


def earlier_protocol_lines(earlier: Mapping[str, Any],
                           result: hybrid_async_lib.ExperimentResult,
                           settings: Sequence[hybrid_config.Setting]
                           ) -> list[str]:
  """Per method of `earlier` (`hybrid_records.save_earlier_runs`), its
  values then and now and both metrics' mean over the settings and seeds,
  then and now."""
  earlier_rows = [hybrid_runs.RunRow(**r) for r in earlier['rows']]
  lines = []
  for method in [m for m in hybrid_config.METHODS if m in earlier['fields']]:
    now_values = hybrid_methods.method_config(result.config, method,
                                              result.overrides)
    then_values = earlier['fields'][method]
    changed = {k: then_values[k] for k in hybrid_records.EARLIER_FIELDS
               if k in then_values
               and getattr(now_values, k) != then_values[k]}
    parts = []
    for name, metric, _ in hybrid_tables.METRICS:
      then = hybrid_tables.final_metrics(earlier_rows, [method], settings,
                                         metric)
      now = hybrid_tables.final_metrics(result.rows, [method], settings,
                                        metric)
      then = [v for s in settings for v in then[(method, s)]]
      now = [v for s in settings for v in now[(method, s)]]
      if then and now:
        parts.append(f'{name} {100 * np.mean(then):.1f}% -> '
                     f'{100 * np.mean(now):.1f}% '
                     f'({100 * (np.mean(now) - np.mean(then)):+.1f} points)')
      elif then:  # Not run again yet: the earlier number, said as such.
        parts.append(f'{name} {100 * np.mean(then):.1f}% then, not run '
                     'again yet')
    if not parts:
      continue
    values = (f'then {_values_text(changed)}, now ' + _values_text(
        {k: getattr(now_values, k) for k in changed}) if changed
              else 'values unchanged')
    lines.append(f'{method} ({values}): ' + '; '.join(parts) + '.')
  return lines


def results_markdown(result: hybrid_async_lib.ExperimentResult,
                     command: str, machine: str, date: str,
                     searched: Optional[Mapping[str, Any]] = None,
                     earlier: Optional[Mapping[str, Any]] = None) -> str:
  """The RESULTS.md section of a run (`searched`: as `selected_lines`;
  `earlier`: runs of an earlier protocol,
  `hybrid_records.save_earlier_runs`)."""
  c = result.config
  settings = result.settings
  methods = [m for m in hybrid_config.METHODS
             if any(r.method == m for r in result.rows)]
  reference = paper_tables.reference(methods, settings, result.description)
  # Feddle's values as its runs had them (FedBuff's, then its own).
  feddle = hybrid_methods.method_config(c, hybrid_config.FEDDLE_ID,
                                        result.overrides)
  lines = [
      '## Hybrid data under asynchrony: Feddle and baselines (guided model '
      f'merging, Zhu et al., {_paper_table_name(settings, reference)})',
      '',
      f'Generated on {date} by `{command}`.',
      '',
      f'* Machine: {machine}.',
      f'* Data (seed {result.seeds[0]}, first setting): '
      f'{result.description}.',
      '* Settings (the columns): '
      + ', '.join(s.label for s in settings) + '; seeds '
      f'{list(result.seeds)} (each draws the split, the initial model, the '
      'sampling and the delays).',
      f'* {c.num_clients} clients, {c.clients_per_round} per round, '
      f'{c.rounds} rounds; {local_training(c)}; server lr '
      f'{c.server_lr}, buffer M = {c.buffer_size}, FedAsync alpha '
      f'{c.fedasync_alpha} and a {c.fedasync_a}; server '
      f'{c.server_optimizer} {_count(c.server_epochs, c.server_steps)} at '
      f'lr {c.server_sgd_lr} (Center: '
      f'{"once, then held" if c.center_once else "every round"}); Feddle '
      f'atlas {hybrid_config.feddle_atlas_size(feddle)}, buffer '
      f'{feddle.buffer_size} and '
      f'server lr {feddle.server_lr} (FedBuff\'s: every method built on '
      f'FedBuff takes its values), {feddle.feddle_search_optimizer} search '
      f'{_count(feddle.feddle_search_epochs, feddle.feddle_search_steps)} '
      f'at lr {feddle.feddle_search_lr}, lambda 0 (in-domain) / '
      f'{c.feddle_ood_lambda} (out-of-domain); LoAdaBoost E = '
      f'{c.loadaboost_epochs} (SGD at lr '
      f'{c.loadaboost_lr}); CNN filters '
      f'{list(c.conv_filters)}, dense {c.dense_units}.',
      '',
  ] + selected_lines(result.overrides, searched) + [
      'Final accuracy (%): best of the last 5 evaluations (every '
      f'{c.eval_every} rounds), mean ± std over seeds, as in the paper; best '
      'of each column in bold; (n = k): only k seeds finished. * no delays '
      '(synchronous, or no client trains): the same runs stand in every '
      'delay column.',
      '',
      result.table.rstrip('\n'),
      '',
      'Mean accuracy (%) over the last half of the evaluations, mean ± std '
      'over seeds: less exposed to one lucky evaluation than the paper\'s '
      'metric.',
      '',
      hybrid_tables.format_table(result.rows, result.methods, settings,
                                 hybrid_tables.late_mean_metric).rstrip('\n'),
      '',
  ]
  if reference:
    table, text = reference
    lines += [f'For reference, the paper\'s {table.name} ({table.caption}):',
              '', text.rstrip('\n'), '']
    comparison = paper_comparison.comparison_lines(
        hybrid_tables.mean_finals(result.rows, methods, settings), table,
        [(s.alpha, s.delay_std) for s in settings],
        [s.label for s in settings])
    lines += comparison + ([''] if comparison else [])
  epochs_note = hybrid_config.LOADABOOST + '.mean_client_epochs'
  if epochs_note in result.notes:
    lines += [
        f'LoAdaBoost clients trained {result.notes[epochs_note]:.2f} '
        f'epochs on average (FedAvg: E = {c.loadaboost_epochs}; one epoch '
        f'= {hybrid_methods.loadaboost_epoch_steps(c)} batches).', '']
  lines += [
      f'* {hybrid_tables.wall_time_line(result.rows, result.methods)}', '']
  lines += ['Against the paper (in its tables 1, 2 and 7 Feddle in domain '
            'is first in every column):',
            '']
  lines += [f'* {line}' for line in hybrid_tables.ranking_summary(
      result.rows, methods, settings)]
  if earlier:
    lines += ['', 'What changed from the earlier protocol, where every '
              'method built on FedBuff now takes FedBuff\'s selected buffer '
              'and server lr and Feddle searches at the paper\'s scaled rate '
              '(the values that differ, and both metrics\' mean over the '
              'settings and seeds, then and now):', '']
    lines += [f'* {line}' for line in earlier_protocol_lines(
        earlier, result, settings)]
  diagnostics = hybrid_tables.diagnostics_summary(result.diagnostics,
                                                  settings)
  if diagnostics:
    lines += ['', 'Feddle diagnostics (mean over merges and seeds; plots in '
              f'`{hybrid_async_lib.DIAGNOSTICS_PLOT_FILE}`):', '']
    lines += [f'* {line}' for line in diagnostics]
  return '\n'.join(lines)
