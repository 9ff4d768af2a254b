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
"""Hybrid data under asynchrony: Feddle against the asynchronous baselines.

The guided-model-merging paper's experiment (Feddle, Zhu et al., section
5, tables 1, 2 and 7): every method (`hybrid_methods`) for every setting
(`hybrid_config.Setting`: label skew and delay level) and seed, each run
on the same schedule, client data and initial model for a seed and setting
(`hybrid_runs.run_method`). `run_experiment` is the loop that ties them:
it validates the whole configuration before any training, runs or reads
back each run, and writes the metrics and diagnostics CSVs, the tables
(`hybrid_tables`), the plots (`hybrid_plots`) and the config;
`hybrid_report` turns its result into a RESULTS.md section.

Reported as the paper does: evaluate every `eval_every` rounds; a run's
final metric is the best of its last 5 evaluations; mean and standard
deviation over seeds. Each finished run is kept in `output_dir/runs/`
(`hybrid_records.kept_run`), so an interrupted experiment resumes where it
stopped and a report can be rebuilt from the runs without training.
"""

import collections
from collections.abc import Callable, Mapping, Sequence
import json
import os
from typing import Any, NamedTuple, Optional

import numpy as np

from experiments.common import run_loop
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_plots
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
import tff_mixed
from tff_mixed.training import reports as reports_lib


METRICS_FILE = 'metrics.csv'
PLOT_FILE = 'accuracy.png'
TABLE_FILE = 'results.md'
DIAGNOSTICS_FILE = 'feddle_diagnostics.csv'
DIAGNOSTICS_PLOT_FILE = 'feddle_diagnostics.png'
CONFIG_FILE = 'config.json'
RUNS_DIR = 'runs'
# Under --output_dir: the per-round state of runs not finished yet
# (`hybrid_records.kept_run`), never committed.
CHECKPOINTS_DIR = 'checkpoints'


class ExperimentResult(NamedTuple):
  rows: list[hybrid_runs.RunRow]
  diagnostics: list[dict[str, Any]]
  notes: dict[str, float]
  table: str
  files: dict[str, str]
  config: hybrid_config.Config
  settings: tuple[hybrid_config.Setting, ...]
  description: str
  seeds: tuple[int, ...]
  overrides: dict[str, dict[str, Any]]
  # Every method asked for, in the table's order, kept or not.
  methods: tuple[str, ...]


def _csv(value, float_format: str = '.4g') -> str:
  """A CSV cell: alpha `IDENTITIES` as 'identities', floats formatted."""
  if value is hybrid_config.IDENTITIES:
    return 'identities'
  return format(value, float_format) if isinstance(value, float) else str(
      value)


def run_experiment(data_fn: Callable[[int, float], hybrid_config.Data],
                   config: hybrid_config.Config, *,
                   methods: Sequence[str], seeds: Sequence[int],
                   output_dir: str,
                   settings: Sequence[hybrid_config.Setting] = (),
                   clients_per_group: int = tff_mixed.simulation.AUTO,
                   overrides: Optional[Mapping[str, Mapping[str, Any]]] = None,
                   runs_dir: Optional[str] = None,
                   report_only: bool = False) -> ExperimentResult:
  """Every method for every setting and seed; CSVs, plots, table, config.

  Seeds are the outer loop, so an experiment stopped early has whole seeds
  for every setting. Each finished run is kept in `output_dir/runs/` and
  reused when the experiment is run again with the same configuration; the
  run under way resumes from its last round (`output_dir/checkpoints/`,
  `hybrid_records.kept_run`).

  Args:
    data_fn: `data_fn(seed, alpha) -> hybrid_config.Data`: the seed also
      draws the split, as in the paper (network initialization, sampling,
      delays and partition).
    config: The hyperparameters (`alpha` and `delay_std` are replaced by each
      setting's).
    methods: Names from `hybrid_config.METHODS`.
    seeds: The seeds.
    output_dir: Where the files go.
    settings: `hybrid_config.Setting`s (label skew, delay level); default:
      the config's.
    clients_per_group: Client groups of `hybrid_runs.run_method` (the same
      results, so kept runs are reused whatever it is).
    overrides: Optional {method: {config field: value}}: a method's own
      hyperparameters (e.g. those a search selected, `tune_lib`), replacing
      the config's for its runs only.
    runs_dir: Where the finished runs are kept (small JSON files); default
      `output_dir/runs`. A directory in the repository (docs/results/...)
      keeps them beyond the machine, so a run resumes anywhere.
    report_only: Run nothing: report the kept runs only (a run not kept is
      left out, and the table says how many seeds each cell has).

  Returns:
    An `ExperimentResult`.

  Raises:
    ValueError: For bad settings, before any training; for kept runs made
      with another configuration; or, `report_only`, if none is kept.
  """
  if not seeds or len(set(seeds)) != len(seeds):
    raise ValueError(f'`seeds` must be distinct, got {list(seeds)}.')
  settings = tuple(settings) or (
      hybrid_config.Setting(config.alpha, config.delay_std),)
  overrides = {m: dict(v) for m, v in (overrides or {}).items()}
  hybrid_config.validate(config, methods, settings, seeds)
  built_on_fedbuff = any(m in hybrid_config.FEDBUFF_BASED for m in methods)
  for method, values in overrides.items():
    unknown = sorted(set(values) - set(hybrid_config.Config._fields))
    used = method in methods or (method == hybrid_config.FEDBUFF
                                 and built_on_fedbuff)
    if not used or unknown:
      raise ValueError(f'Overrides for {method!r} name no method run or '
                       f'unknown fields {unknown}.')
  for method in methods:
    hybrid_config.validate(
        hybrid_methods.method_config(config, method, overrides), [method],
        settings, seeds)
  # Held to the end: a second experiment here, even of other methods, would
  # overwrite this one's tables, plots and config (the kept runs and the
  # checkpoints are per run).
  with run_loop.claimed_output_directory(output_dir, '`output_dir`'):
    runs_dir = reports_lib.make_directory(
        runs_dir or os.path.join(output_dir, RUNS_DIR), 'runs directory')
    rows, diagnostics, notes = [], [], collections.defaultdict(list)
    descriptions = []
    cache = {}
    done = set()
    for seed in seeds:
      data_of_alpha = {}  # The split depends on the seed and alpha only.
      for setting in settings:
        c = config._replace(alpha=setting.alpha, delay_std=setting.delay_std)
        if setting.alpha not in data_of_alpha:
          data_of_alpha[setting.alpha] = data_fn(seed, setting.alpha)
        data = data_of_alpha[setting.alpha]
        descriptions.append(data.description)
        for method in methods:
          key = hybrid_records.run_key(method, setting, seed)
          if key in done:
            continue  # A delay-free method, run for an earlier delay.
          done.add(key)
          run_config = hybrid_methods.method_config(c, method, overrides)
          if report_only:
            run = hybrid_records.load_run(
                runs_dir, key, hybrid_records.run_fingerprint(
                    run_config, data.description, method))
            if run is None:
              continue
          else:
            run = hybrid_records.kept_run(
                runs_dir, key, method, data, run_config, seed, cache,
                clients_per_group, os.path.join(output_dir, CHECKPOINTS_DIR))
          rows.extend(run.rows)
          diagnostics.extend(dict(d, method=method, alpha=setting.alpha,
                                  delay_std=setting.delay_std, seed=seed)
                             for d in run.diagnostics)
          for name, value in run.notes.items():
            notes[f'{method}.{name}'].append(value)
    if not rows:
      raise ValueError(f'No kept run in {runs_dir!r} to report.')
    notes = {k: float(np.mean(v)) for k, v in notes.items()}
    files = {k: os.path.join(output_dir, v) for k, v in (
        ('metrics', METRICS_FILE), ('plot', PLOT_FILE), ('table', TABLE_FILE),
        ('diagnostics', DIAGNOSTICS_FILE),
        ('diagnostics_plot', DIAGNOSTICS_PLOT_FILE), ('config', CONFIG_FILE))}
    lines = [','.join(hybrid_runs.RunRow._fields)] + [
        f'{r.method},{_csv(r.alpha, "g")},{r.delay_std:g},{r.seed},{r.round},'
        f'{r.accuracy:.6g},{r.loss:.6g},{r.seconds:.1f}' for r in rows]
    reports_lib.atomic_write_text(files['metrics'], '\n'.join(lines) + '\n')
    diag_fields = ('method', 'alpha', 'delay_std', 'seed', 'round',
                   'negative_share', 'id_ood_cosine', 'id_ood_cosine_at_zero')
    # Per merge in the runs, their round's mean here; '' for runs kept
    # before they were recorded.
    diag_lines = [','.join(diag_fields + hybrid_runs.MERGE_DIAGNOSTICS)] + [
        ','.join([_csv(d[k]) for k in diag_fields]
                 + [_csv(float(np.mean(d[k]))) if d.get(k) else ''
                    for k in hybrid_runs.MERGE_DIAGNOSTICS])
        for d in diagnostics]
    reports_lib.atomic_write_text(files['diagnostics'],
                                  '\n'.join(diag_lines) + '\n')
    table = hybrid_tables.format_table(rows, methods, settings)
    late = hybrid_tables.format_table(rows, methods, settings,
                                      hybrid_tables.late_mean_metric)
    reports_lib.atomic_write_text(files['table'], table + '\n' + late + '\n'
                                  + '\n'.join(
        hybrid_tables.ranking_summary(rows, methods, settings)
        + hybrid_tables.diagnostics_summary(diagnostics, settings)) + '\n')
    hybrid_plots.plot(files['plot'], rows, methods, settings, descriptions[0])
    hybrid_plots.plot_diagnostics(files['diagnostics_plot'], diagnostics,
                                  settings)
    reports_lib.atomic_write_text(files['config'], json.dumps(
        dict(config._asdict(), methods=list(methods), seeds=list(seeds),
             settings=[s._asdict() for s in settings], data=descriptions,
             overrides=overrides),
        indent=2) + '\n')
    return ExperimentResult(rows, diagnostics, notes, table, files, config,
                            settings, descriptions[0], tuple(seeds), overrides,
                            tuple(methods))
