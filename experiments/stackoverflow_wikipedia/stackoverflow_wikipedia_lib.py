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
"""Stack Overflow + Wikipedia character LM: mixed FL against FL and transfer.

The mixed FL paper's section 4.2 and appendix B.4.5 (arXiv:2205.13655):
FL alone learns the federated corpus (Stack Overflow) but not the central one
(Wikipedia); Parallel Training, 1-way and 2-way Gradient Transfer learn both;
sequential transfer learning (pretrain on one corpus, fine-tune on the other)
forgets the first corpus after the switch.

`run_experiment` runs the scenarios (`lm_config`) on the data (`lm_data`),
each resumably (`lm_runs`), and writes the metrics CSV, the accuracy plot,
the table and the config; `results_markdown` is its RESULTS.md section.
"""

import collections
from collections.abc import Callable, Sequence
import json
import os
import textwrap
from typing import NamedTuple, Optional

from absl import logging
import numpy as np

from experiments.common import grouping
from experiments.common import plots
from experiments.common import run_loop
from experiments.stackoverflow_wikipedia import central_training
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import lm_runs
from tff_mixed.training import reports as reports_lib

METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'accuracy.png'
TABLE_FILE = 'results.txt'
CONFIG_FILE = 'config.json'


def format_table(results: Sequence[lm_runs.ScenarioResult],
                 config: lm_config.Config) -> str:
  """Final accuracy per evaluation set; transfer: before and after the
  switch on the corpus it learned first."""
  lines = ['scenario           mixed acc.  Stack Overflow acc.  central acc.'
           '  first corpus at switch -> end  s/round',
           '-----------------  ----------  -------------------  ------------'
           '  -----------------------------  -------']
  for r in results:
    last = r.rows[-1]
    forgetting = ''
    if r.scenario in lm_config.TRANSFER:
      first = ('central' if r.scenario == lm_config.CENTRAL_THEN_FL
               else 'federated')
      at_switch = [row for row in r.rows if row['round'] <= config.switch()]
      if at_switch:
        forgetting = (f'{first} {at_switch[-1][f"{first}_accuracy"]:.4f} -> '
                      f'{last[f"{first}_accuracy"]:.4f}')
    lines.append(
        f'{r.scenario:<17}  {last["mixed_accuracy"]:>10.4f}  '
        f'{last["federated_accuracy"]:>19.4f}  '
        f'{last["central_accuracy"]:>12.4f}  {forgetting:>29}  '
        f'{r.seconds_per_round:>7.2f}')
  return '\n'.join(lines) + '\n'


def plot(path: str, results: Sequence[lm_runs.ScenarioResult],
         config: lm_config.Config, title: str) -> None:
  fig, axes = plots.subplots(1, 3, figsize=(15, 4.2), sharey=True)
  names = {'mixed': 'mixed evaluation (75% / 25%)',
           'federated': 'Stack Overflow', 'central': 'central corpus'}
  for ax, name in zip(axes, lm_config.EVAL_SETS):
    for r in results:
      ax.plot([row['round'] for row in r.rows],
              [row[f'{name}_accuracy'] for row in r.rows], label=r.scenario)
    if any(r.scenario in lm_config.TRANSFER for r in results):
      ax.axvline(config.switch(), color='grey', linestyle=':')
    ax.set_title(names[name])
    ax.set_xlabel('round')
  axes[0].set_ylabel('next-character accuracy')
  axes[-1].legend(fontsize=8)
  # The data description is long: wrap it rather than cut it off.
  fig.suptitle(textwrap.fill(title, 180), fontsize=8)
  fig.tight_layout()
  plots.save_figure(fig, path)


class ExperimentResult(NamedTuple):
  results: list[lm_runs.ScenarioResult]
  table: str
  files: dict[str, str]
  config: lm_config.Config
  description: str


def run_experiment(data: lm_data.Data, config: lm_config.Config, *,
                   scenarios: Sequence[str] = lm_config.SCENARIOS,
                   output_dir: str, progress: Optional[bool] = None,
                   on_result: Optional[
                       Callable[[lm_runs.ScenarioResult], None]] = None,
                   rounds_per_call: int = 1) -> ExperimentResult:
  """Runs the scenarios; writes the CSV, plot, table and config.

  `on_result`, if given, is called with each scenario's result as soon as it
  finishes (e.g. to record it before the next one starts).
  `rounds_per_call`: FL-only's and the mixed algorithms' rounds in one TFF
  call (`tff_mixed.run_training`): the same numbers, and neither a record's
  settings nor a checkpoint's fingerprint. The oracle and the transfer
  baselines step in Python.

  Raises:
    ValueError: For unknown scenarios or bad settings.
  """
  if (not scenarios or len(set(scenarios)) != len(scenarios)
      or any(s not in lm_config.SCENARIOS for s in scenarios)):
    raise ValueError('`scenarios` must be distinct names from '
                     f'{lm_config.SCENARIOS}, '
                     f'got {list(scenarios)}.')
  for name in ('rounds', 'clients_per_round', 'client_batch_size',
               'client_steps', 'central_batch_size',
               'one_way_central_batch_size', 'embedding_dim', 'gru_units',
               'sequence_length', 'eval_every'):
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise ValueError(f'`{name}` must be a positive int, got {value!r}.')
  grouping.check(config.clients_per_group)
  if isinstance(config.members_at_once, bool) or not isinstance(
      config.members_at_once, int) or config.members_at_once < 0:
    raise ValueError('`members_at_once` must be an int >= 0 (0: the whole '
                     f'group), got {config.members_at_once!r}.')
  for name in ('client_lr', 'two_way_client_lr', 'central_clip_norm'):
    value = getattr(config, name)
    if not np.isfinite(value):
      raise ValueError(f'`{name}` must be finite, got {value}.')
    if value <= 0:
      raise ValueError(f'`{name}` must be positive, got {value}.')
  if any(s in lm_config.TRANSFER for s in scenarios) and not (
      1 <= config.switch() < config.rounds):
    raise ValueError(f'`switch_round` must be in [1, rounds), got '
                     f'{config.switch()} with {config.rounds} rounds.')
  if lm_config.ORACLE in scenarios:
    central_training.oracle_batch_split(config.clients_per_round,
                                        config.client_batch_size,
                                        config.federated_weight)
  # Held to the end: a second run here, even of other scenarios, would
  # overwrite this one's CSV, plot, table and config.
  with run_loop.claimed_output_directory(output_dir, '`output_dir`'):
    results = []
    processes = {}  # FL-only's FedAvg serves both transfer baselines.
    for scenario in scenarios:
      logging.info('Scenario %s', scenario)
      if scenario in lm_config.SEQUENTIAL:
        results.append(lm_runs.run_sequential(scenario, data, config,
                                              output_dir, processes))
      else:
        results.append(lm_runs.run_mixed_or_fl(
            scenario, data, config, output_dir, progress, processes,
            rounds_per_call=rounds_per_call))
      if on_result is not None:
        on_result(results[-1])
    table = format_table(results, config)
    files = {k: os.path.join(output_dir, v) for k, v in (
        ('metrics', METRICS_FILE), ('plot', PLOT_FILE), ('table', TABLE_FILE),
        ('config', CONFIG_FILE))}
    lines = [','.join(lm_config.CSV_COLUMNS)]
    for r in results:
      for row in r.rows:
        lines.append(','.join(
            [r.scenario, str(row['round'])]
            + [f'{row[c]:.6g}' for c in lm_config.CSV_COLUMNS[2:-1]]
            + [f'{r.seconds_per_round * row["round"]:.1f}']))
    reports_lib.atomic_write_text(files['metrics'], '\n'.join(lines) + '\n')
    plot(files['plot'], results, config, data.description)
    reports_lib.atomic_write_text(files['table'], table)
    reports_lib.atomic_write_text(files['config'], json.dumps(
        collections.OrderedDict(config._asdict(), scenarios=list(scenarios),
                                data=data.description), indent=2) + '\n')
    return ExperimentResult(results, table, files, config, data.description)


def results_markdown(result: ExperimentResult, command: str, machine: str,
                     date: str) -> str:
  """The RESULTS.md section of a run."""
  c = result.config
  return '\n'.join([
      '## Stack Overflow + Wikipedia character LM (arXiv:2205.13655, '
      'section 4.2, appendix B.4.5)',
      '',
      f'Generated on {date} by `{command}`.',
      '',
      f'* Machine: {machine}.',
      f'* Data: {result.description}.',
      f'* Training: {c.rounds} rounds, S = {c.clients_per_round}, batch '
      f'{c.client_batch_size}, K = {c.client_steps}, eta = {c.client_lr} '
      f'(2-way GT {c.two_way_client_lr}), central batch '
      f'{c.central_batch_size} (1-way GT {c.one_way_central_batch_size}), '
      f'w_f = {c.federated_weight}, w_c = {c.central_weight}, central clip '
      f'{c.central_clip_norm}, adaptive federated clipping '
      f'{"on" if c.adaptive_clipping else "off"}; model: embedding '
      f'{c.embedding_dim}, GRU {c.gru_units}, sequences of '
      f'{c.sequence_length}; transfer switch at round {c.switch()}; seed '
      f'{c.seed}. The paper (full Stack Overflow and Wikipedia, embedding '
      '256, GRU 1024) reports ~0.60 mixed accuracy for FL only and ~0.66 '
      'for all three mixed algorithms.',
      '',
      'Accuracy: next-character accuracy over non-padding targets, at the '
      'last round; transfer rows also show the accuracy on the corpus '
      'learned first, at the switch and at the end.',
      '',
      '```',
      result.table.rstrip('\n'),
      '```',
  ])
