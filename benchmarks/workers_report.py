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
"""Round times on 0, 1 and 2 TFF workers, and a cost model for N workers.

Reads the JSON reports of `benchmarks/round_time.py` runs of one workload on
TFF's local runtime (0 workers) and on 1 and 2 local TFF workers
(`--local_workers`), and writes the `workers` section of BENCHMARKS.md: each
row's seconds per round (median, min-max) and CPU seconds per round at each
worker count, the speedup of the most workers over 1 worker and over the
local runtime, and a cost model fitted on the runs on workers,

  t(N) = fixed + work / N,

fixed being what does not split across workers (the driver, merging the
workers' aggregates, sending the model) and work what does (the clients'
training), with its prediction for 4 and 8 workers. `make benchmark-workers`
runs the three benchmarks and this report.

Usage, from the repository root:

  .venv/bin/python -m benchmarks.workers_report \\
      --inputs=benchmarks/results/round_time_workers_0.json,\\
benchmarks/results/round_time_workers_1.json,\\
benchmarks/results/round_time_workers_2.json
"""

import collections
import datetime
import json
from typing import Any, Optional

# pylint: disable=g-bad-import-order
from experiments import tf_log_level  # pylint: disable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from benchmarks import round_reports
from experiments.common import markdown_sections
# pylint: enable=g-bad-import-order

_INPUTS = flags.DEFINE_list(
    'inputs', None,
    'JSON reports of benchmarks/round_time.py (--output_json) of one '
    'workload at different worker counts (0: the local runtime), e.g. 0, 1 '
    'and 2; relative paths are relative to the repository root.')
_OUTPUT_MARKDOWN = flags.DEFINE_string(
    'output_markdown', 'BENCHMARKS.md',
    'Markdown report; a relative path is relative to the repository root.')
_SECTION = flags.DEFINE_string(
    'section', 'workers', 'The section of --output_markdown this writes.')

# Worker counts the cost model predicts.
PREDICT_WORKERS = (4, 8)
# Config entries that define the workload: every input must agree on them.
_WORKLOAD_KEYS = ('models', 'clients_per_round', 'clients_per_group',
                  'algorithms', 'input_dim', 'hidden_units', 'client_steps',
                  'client_batch_size', 'seed')
_RECIPE = ('experiments/README.md, "Running on several TFF workers"')


def _workers_label(workers: int) -> str:
  if workers == 0:
    return 'local runtime'
  return f'{workers} worker' + ('s' if workers > 1 else '')


def check_reports(reports: list[dict[str, Any]], paths: list[str]) -> None:
  """Raises ValueError unless `reports` are one workload at distinct counts."""
  counts = [r['config'].get('workers', 0) for r in reports]
  if len(set(counts)) != len(counts):
    raise ValueError(f'--inputs must be runs at different worker counts; '
                     f'{paths} ran on {counts} workers.')
  if not any(c >= 1 for c in counts):
    raise ValueError(f'--inputs has no run on TFF workers: {paths} ran on '
                     f'{counts} workers.')
  first = reports[0]['config']
  for report, path in zip(reports[1:], paths[1:]):
    for key in _WORKLOAD_KEYS:
      if report['config'].get(key) != first.get(key):
        raise ValueError(
            f'{path} is another workload than {paths[0]}: its {key} is '
            f'{report["config"].get(key)!r}, not {first.get(key)!r}.')


def fit_cost(points: list[tuple[int, float]]) -> Optional[tuple[float, float]]:
  """`(fixed, work)` of t = fixed + work / N, least squares over N >= 1.

  Through the two points exactly when there are two worker counts (1 and
  2); None with fewer than two.
  """
  points = [(1.0 / n, t) for n, t in points if n >= 1]
  if len({x for x, _ in points}) < 2:
    return None
  mean_x = sum(x for x, _ in points) / len(points)
  mean_t = sum(t for _, t in points) / len(points)
  work = (sum((x - mean_x) * (t - mean_t) for x, t in points)
          / sum((x - mean_x) ** 2 for x, _ in points))
  return mean_t - work * mean_x, work


def _speedup(reference: Optional[dict[str, Any]],
             summary: dict[str, Any]) -> str:
  if reference is None or reference is summary:
    return '-'
  return round_reports.fmt(
      reference['median_wall_s'] / summary['median_wall_s'], 2, 'x')


def _cohort_lines(reports: list[dict[str, Any]], model_name: str,
                  index: int) -> list[str]:
  """The table and cost model of one model's cohort across the runs."""
  cohorts = [r['models'][model_name]['cohorts'][index] for r in reports]
  counts = [r['config'].get('workers', 0) for r in reports]
  n, groups = cohorts[0]['clients_per_round'], cohorts[0]['groups']
  lines = [
      '', f'### {model_name} model: {n} clients per round', '',
      '| Row | TFF workers | s/round (median) | min-max | CPU s/round | '
      'speedup over 1 worker | speedup over the local runtime |',
      '|---|---|---:|---:|---:|---:|---:|']
  lines[3:3] = [_split_line(groups, n, counts), '']
  costs = []
  for name in cohorts[0]['algorithms']:
    by_count = collections.OrderedDict(
        (c, cohort['algorithms'][name]) for c, cohort in zip(counts, cohorts))
    for count, s in by_count.items():
      lines.append(
          f'| {round_reports.row_name(name, groups)} | '
          f'{_workers_label(count)} | {s["median_wall_s"]:.3f} | '
          f'{s["min_wall_s"]:.3f}-{s["max_wall_s"]:.3f} | '
          f'{s["median_cpu_s"]:.3f} | '
          f'{_speedup(by_count.get(1), s) if count > 1 else "-"} | '
          f'{_speedup(by_count.get(0), s) if count else "-"} |')
    cost = fit_cost([(c, s['median_wall_s']) for c, s in by_count.items()])
    if cost is not None:
      costs.append(_cost_line(round_reports.row_name(name, groups), cost, n))
  if costs:
    fitted = sorted(c for c in counts if c >= 1)
    lines += [
        '', 'Cost model, fitted on the medians at '
        + ', '.join(_workers_label(c) for c in fitted)
        + ': t(N) = fixed + work / N seconds per round on N workers, fixed '
        'being what does not split (the driver, sending the model, merging '
        "the workers' aggregates) and work what does (the clients' "
        'training):', ''] + [f'* {c}' for c in costs]
  return lines


def _cost_line(row: str, cost: tuple[float, float], clients: int) -> str:
  fixed, work = cost
  line = (f'{row}: fixed {fixed:.3f} s + work {work:.3f} s / N '
          f'({work / clients * 1e3:.2f} ms per client)')
  if work <= 0:
    return (line + '; more workers did not lower the round time here, so the '
            'model predicts no gain from more.')
  line += '; predicts ' + ', '.join(
      f'N = {n}: {fixed + work / n:.3f} s' for n in PREDICT_WORKERS)
  if fixed < 0:
    # Splitting cannot make the unsplit part negative: the timings are noise.
    line += (' (a negative fixed part: the medians are too noisy for the '
             'fit; time more rounds)')
  return line + '.'


def _split_line(groups: list[int], clients: int, counts: list[int]) -> str:
  """How the round's CLIENTS members fall on the workers of each run."""

  def up_to(members: int, what: str, count: int) -> str:
    each = -(-members // count)  # The first slices take the remainder.
    return f'{each} {what}' + ('s' if each > 1 else '')

  parts = [f'up to {up_to(clients, "client", c)} or '
           f'{up_to(len(groups), "group", c)} on {_workers_label(c)}'
           for c in counts if c >= 1]
  line = (f'{clients} clients, in {len(groups)} groups in the grouped rows; '
          'each worker trains ' + ', '.join(parts) + '.')
  if len(groups) < max(counts):
    line += (f' With fewer groups than workers, {max(counts) - len(groups)} '
             'of them idle in the grouped rows.')
  return line


def render_markdown(reports: list[dict[str, Any]], paths: list[str],
                    command: str, date: str) -> str:
  """The `workers` section for `reports`, sorted by worker count."""
  config, machine = reports[0]['config'], reports[0]['machine']
  counts = [r['config'].get('workers', 0) for r in reports]
  cores = machine['usable_cores']
  lines = [
      '## Round time on TFF workers (benchmarks/workers_report.py)', '',
      f'Generated by `{command}` on {date}, from the benchmarks/round_time.py '
      'runs in ' + ', '.join(
          f'`{p}` ({_workers_label(c)})' for p, c in zip(paths, counts))
      + '.', '',
      *round_reports.machine_lines(machine),
      '* Load average (1 min) at start / end of each run: ' + '; '.join(
          f'{_workers_label(c)}, {m} model '
          f'{round_reports.fmt(r["load_average"]["start"], 2)} / '
          f'{round_reports.fmt(r["load_average"]["end"], 2)}'
          for c, report in zip(counts, reports)
          for m, r in report['models'].items())
      + '. Other processes on the machine slow wall times, less so CPU '
      'times.',
      f'* Workload: as in the round_time section, K = '
      f'{config["client_steps"]} local steps of batch '
      f'{config["client_batch_size"]}, '
      f'`--clients_per_group={config["clients_per_group"]}` (0: one group '
      f'per core, {cores} here), {config["warmup_rounds"]} warm-up and '
      f'{config["timed_rounds"]} timed rounds per run.',
      '* Workers: `--local_workers=N` starts N TFF `worker_binary` processes '
      "on loopback ports; TFF's mergeable-computation context cuts a round's "
      'CLIENTS members (one per client, or one per client group) into N '
      'contiguous slices, one per worker, and merges their aggregates '
      '(`tff_mixed/remote.py`). The local runtime is the one worker TFF '
      'starts itself, without that splitting. CPU s counts this process and '
      'every worker it started.',
  ]
  if cores <= max(counts):
    lines.append(
        f'* This machine has {cores} usable cores: {max(counts)} workers '
        'share them with each other and with the driver (the Python process '
        'that sends each round and merges it), so they measure the cost of '
        'splitting a round more than the gain of more hosts.')
  for model_name, result in reports[0]['models'].items():
    for index in range(len(result['cohorts'])):
      lines += _cohort_lines(reports, model_name, index)
  lines += [
      '', f'The predictions for {" and ".join(map(str, PREDICT_WORKERS))} '
      'workers are an extrapolation of the fit: they assume each worker has '
      'cores of its own and ignore network cost (these workers talk over '
      'loopback); on hosts the model and the aggregates also cross the '
      f'network every round. To run on N hosts: {_RECIPE}.', '']
  return '\n'.join(lines)


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  if not _INPUTS.value:
    raise app.UsageError('--inputs is required: the round_time JSON reports '
                         'to compare, e.g. at 0, 1 and 2 workers.')
  paths = list(_INPUTS.value)
  reports = []
  for path in paths:
    with open(round_reports.resolve(path)) as f:
      try:
        reports.append(json.load(f))
      except json.JSONDecodeError as e:
        raise ValueError(f'{path} is not a round_time JSON report: {e}') from e
  check_reports(reports, paths)
  # Fewest workers first: the local runtime, then 1, 2, ...
  runs = sorted(zip(reports, paths),
                key=lambda run: run[0]['config'].get('workers', 0))
  markdown = render_markdown(
      [r for r, _ in runs], [p for _, p in runs],
      round_reports.command_line('benchmarks.workers_report'),
      datetime.datetime.now().astimezone().isoformat(timespec='seconds'))
  path = round_reports.resolve(_OUTPUT_MARKDOWN.value)
  markdown_sections.write_section(path, _SECTION.value, markdown,
                                  title='Benchmarks')
  print(markdown, flush=True)


if __name__ == '__main__':
  cli.run(main)
