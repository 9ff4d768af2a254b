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
"""Why the asynchronous baselines and FedDF fall behind FedAvg here.

RESULTS.md's hybrid table (the guided-model-merging paper, Zhu et al.,
table 1 / 7 protocol at reduced scale) has FedAsync, FedBuff and CA2FL far
below synchronous FedAvg and FedDF at chance, where the paper has them close
to (or above) FedAvg. This study changes one thing at a time against that
table's configuration (`BASE`) and measures, per setting and seed, the same
final metric (best of the last 5 evaluations):

* `VARIANTS`: each names the clients' method (data and local training are
  that method's), the config fields it changes, whether it trains under the
  setting's delays, and its server method when that is not the method's own
  (`SERVERS`);
* `PAIRS`: the comparisons, each isolating one factor (FedAvg's delays,
  the server step, uniform vs weighted averaging, staleness weighting,
  buffer size, FedAsync's mixing weight, FedDF's distillation);
* FedDF runs record, after every distillation, the accuracy of FedBuff's
  merge, of the distilled model and of the teacher ensemble (the softmax
  of the clients' averaged logits) on the evaluation set;
* `arrival_stats`: what the delays do to the updates in our run length and
  in the paper's (500 clients, 10 a round, 200 rounds).

Each finished run is a small JSON record in `records_dir`, so the study can
be run in parts (or in parallel processes, one per seed) and the section is
rebuilt from every record there.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from experiments.common import tables
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
import tff_mixed
from tff_mixed import async_registry
from tff_mixed.asynchronous import feddf
from tff_mixed.asynchronous import schedule as schedule_lib
from tff_mixed.training import reports as reports_lib

# The configuration of RESULTS.md's `hybrid_async` table (its command line),
# whose asynchronous and FedDF rows this study explains.
BASE = hybrid_config.Config(
    rounds=70, num_clients=150, clients_per_round=5, buffer_size=5,
    server_size=250, eval_size=1250, client_steps=10, client_batch_size=16,
    client_lr=0.05, client_optimizer='sgd', server_lr=0.3,
    fedasync_alpha=0.1, server_steps=10, server_sgd_lr=0.1,
    server_optimizer='sgd', conv_filters=(8, 16, 16), dense_units=32,
    eval_every=5)

# Server methods other than the clients' method's own.
DEADLINE = 'deadline_fedavg'  # The paper's eq. 2: late updates dropped.
FEDBUFF_WEIGHTED = 'fedbuff_weighted'  # FedBuff averaging like FedAvg.
FEDBUFF_STALENESS = 'fedbuff_staleness'  # FedBuff, w(tau) = (1+tau)^-1/2.
SERVERS = (DEADLINE, FEDBUFF_WEIGHTED, FEDBUFF_STALENESS)


class Variant(NamedTuple):
  """One configuration of the study.

  Attributes:
    name: Its name (records, tables).
    method: The `hybrid_config.METHODS` method whose clients and (unless
      `server`) server method it runs.
    overrides: Config fields changed from `BASE`.
    delayed: Trains under the setting's delays; False: without any.
    server: One of `SERVERS`, or '' for the method's own.
    description: What it is, for the report.
  """
  name: str
  method: str
  overrides: Mapping[str, Any]
  delayed: bool
  server: str
  description: str


def _v(name, method, delayed, description, server='', **overrides):
  return Variant(name, method, overrides, delayed, server, description)


VARIANTS = (
    _v('fedavg', hybrid_config.FEDAVG, False,
       'FedAvg without delays (the table\'s)'),
    _v('fedavg_delayed', hybrid_config.FEDAVG, True,
       'FedAvg aggregating the first 5 arrivals, stale ones included '
       '(eq. 3)'),
    _v('fedavg_deadline', hybrid_config.FEDAVG, True,
       'FedAvg of each round\'s on-time updates, late ones dropped (eq. 2)',
       server=DEADLINE),
    _v('fedbuff', hybrid_config.FEDBUFF, True,
       'FedBuff, eta_g 0.3, M 5 (the table\'s)'),
    _v('fedbuff_nodelay', hybrid_config.FEDBUFF, False,
       'FedBuff, eta_g 0.3, no delays'),
    _v('fedbuff_lr1', hybrid_config.FEDBUFF, True, 'FedBuff, eta_g 1',
       server_lr=1.0),
    _v('fedbuff_lr1_nodelay', hybrid_config.FEDBUFF, False,
       'FedBuff, eta_g 1, no delays', server_lr=1.0),
    _v('fedbuff_lr1_weighted', hybrid_config.FEDBUFF, True,
       'FedBuff, eta_g 1, weighted by examples', server=FEDBUFF_WEIGHTED,
       server_lr=1.0),
    _v('fedbuff_lr1_staleness', hybrid_config.FEDBUFF, True,
       'FedBuff, eta_g 1, updates weighted (1 + tau)^-1/2',
       server=FEDBUFF_STALENESS, server_lr=1.0),
    _v('fedbuff_lr1_m10', hybrid_config.FEDBUFF, True,
       'FedBuff, eta_g 1, M 10', server_lr=1.0, buffer_size=10),
    _v('fedbuff_lr1_m20', hybrid_config.FEDBUFF, True,
       'FedBuff, eta_g 1, M 20', server_lr=1.0, buffer_size=20),
    _v('fedasync', hybrid_config.FEDASYNC, True,
       'FedAsync, alpha 0.1, a 0.5 (the table\'s)'),
    _v('fedasync_alpha0.5', hybrid_config.FEDASYNC, True,
       'FedAsync, alpha 0.5', fedasync_alpha=0.5),
    _v('fedasync_alpha0.5_a0', hybrid_config.FEDASYNC, True,
       'FedAsync, alpha 0.5, no staleness discount (a 0)',
       fedasync_alpha=0.5, fedasync_a=0.0),
    _v('fedasync_alpha0.9', hybrid_config.FEDASYNC, True,
       'FedAsync, alpha 0.9', fedasync_alpha=0.9),
    _v('ca2fl', hybrid_config.CA2FL, True,
       'CA2FL, eta_g 0.3, M 5 (the table\'s)'),
    _v('ca2fl_lr1', hybrid_config.CA2FL, True, 'CA2FL, eta_g 1',
       server_lr=1.0),
    _v('feddf_id', hybrid_config.FEDDF_ID, True,
       'FedDF-ID: FedBuff eta_g 0.3, then 10 SGD steps at 0.1 (the table\'s)'),
    _v('feddf_id_lr1', hybrid_config.FEDDF_ID, True,
       'FedDF-ID on FedBuff eta_g 1', server_lr=1.0),
    _v('feddf_id_lr1_nodelay', hybrid_config.FEDDF_ID, False,
       'FedDF-ID on FedBuff eta_g 1, no delays', server_lr=1.0),
    _v('feddf_id_sgd0.01', hybrid_config.FEDDF_ID, True,
       'FedDF-ID, distillation SGD at 0.01', server_lr=1.0,
       server_sgd_lr=0.01),
    _v('feddf_id_adam', hybrid_config.FEDDF_ID, True,
       'FedDF-ID, distillation Adam at 1e-3 (FedDF\'s paper)', server_lr=1.0,
       server_sgd_lr=1e-3, server_optimizer='adam'),
)
VARIANTS_BY_NAME = {v.name: v for v in VARIANTS}


class Pair(NamedTuple):
  """A comparison `b` - `a` that changes one factor."""
  a: str
  b: str
  factor: str


PAIRS = (
    Pair('fedavg', 'fedavg_delayed', 'FedAvg under the delays, eq. 3 (the '
         'same server step, stale updates)'),
    Pair('fedavg', 'fedavg_deadline', 'FedAvg under the delays, eq. 2 (late '
         'updates dropped)'),
    Pair('fedbuff_nodelay', 'fedbuff', 'the delays alone, FedBuff eta_g '
         '0.3'),
    Pair('fedbuff', 'fedbuff_lr1', 'FedBuff\'s server step 0.3 -> 1'),
    Pair('fedbuff_lr1', 'fedbuff_lr1_nodelay', 'FedBuff eta_g 1 without the '
         'delays'),
    # K fixed steps: every client reports K x batch examples, so these two
    # weightings coincide here; they differ in the epochs protocol.
    Pair('fedbuff_lr1_nodelay', 'fedavg', 'uniform -> example-weighted mean, '
         'no delays (equal weights with K steps)'),
    Pair('fedbuff_lr1', 'fedbuff_lr1_weighted', 'uniform -> example-weighted '
         'mean, under the delays (equal weights with K steps)'),
    Pair('fedbuff_lr1', 'fedbuff_lr1_staleness', 'staleness weights '
         '(1 + tau)^-1/2'),
    Pair('fedbuff_lr1', 'fedbuff_lr1_m10', 'buffer M 5 -> 10'),
    Pair('fedbuff_lr1', 'fedbuff_lr1_m20', 'buffer M 5 -> 20'),
    Pair('fedasync', 'fedasync_alpha0.5', 'FedAsync alpha 0.1 -> 0.5'),
    Pair('fedasync_alpha0.5', 'fedasync_alpha0.5_a0', 'FedAsync without the '
         'staleness discount'),
    Pair('fedasync_alpha0.5', 'fedasync_alpha0.9', 'FedAsync alpha 0.5 -> '
         '0.9'),
    Pair('ca2fl', 'ca2fl_lr1', 'CA2FL\'s server step 0.3 -> 1'),
    Pair('fedbuff', 'feddf_id', 'FedDF\'s distillation (SGD 0.1) after '
         'FedBuff 0.3'),
    Pair('fedbuff_lr1', 'feddf_id_lr1', 'the same distillation after '
         'FedBuff 1'),
    Pair('fedbuff_lr1_nodelay', 'feddf_id_lr1_nodelay', 'the same '
         'distillation without delays'),
    Pair('fedbuff_lr1', 'feddf_id_sgd0.01', 'distillation at SGD 0.01'),
    Pair('fedbuff_lr1', 'feddf_id_adam', 'distillation with Adam 1e-3'),
)


class RunRecord(NamedTuple):
  """One variant's run for a setting and seed (a committed JSON record).

  Attributes:
    variant, alpha, delay_std, seed: Which run (`delay_std` is the setting's
      even for a variant run without delays).
    config: The run's configuration (for checking a kept record).
    rows: `[round, accuracy, loss]` per evaluation.
    probes: FedDF only: `[merge, merged, distilled, teacher]`: after each
      distillation (numbered from 1), the evaluation accuracy of FedBuff's
      merge, of the distilled model and of the teacher ensemble.
    seconds: Wall time of the run.
  """
  variant: str
  alpha: float
  delay_std: float
  seed: int
  config: dict[str, Any]
  rows: list[list[float]]
  probes: list[list[float]]
  seconds: float


def config_of(variant: Variant, base: hybrid_config.Config,
              setting: hybrid_config.Setting) -> hybrid_config.Config:
  return base._replace(alpha=setting.alpha, delay_std=setting.delay_std,
                       **variant.overrides)


def record_name(variant: str, setting: hybrid_config.Setting, seed: int) -> str:
  return f'{variant}__a{setting.alpha:g}_d{setting.delay_std:g}_s{seed}'


def read_records(records_dir: str) -> list[RunRecord]:
  """Every record in `records_dir` (none if it does not exist)."""
  return hybrid_records.read_records(records_dir, RunRecord)


def _eval_accuracy(model, x, y, weights) -> float:
  probs = feddf.teacher_probs(model, [weights], x)
  return float(np.mean(np.argmax(probs, axis=-1) == y))


def _server_fn(variant: Variant, config: hybrid_config.Config):
  """`run_method`'s server override for the variant, or None."""
  c = config
  if variant.server == DEADLINE:
    return lambda model: async_registry.build(
        async_registry.DEADLINE_FEDAVG, model)
  if variant.server in (FEDBUFF_WEIGHTED, FEDBUFF_STALENESS):
    weighted = variant.server == FEDBUFF_WEIGHTED
    return lambda model: async_registry.build(
        async_registry.FEDBUFF, model, server_lr=c.server_lr,
        buffer_size=c.buffer_size,
        staleness_exponent=0.0 if weighted else 0.5,
        weighting='num_examples' if weighted else 'uniform')
  return None


def _observer_fn(variant: Variant, data: hybrid_config.Data, probes: list):
  """`run_method`'s observer of FedDF's distillations, or None."""
  if variant.method != hybrid_config.FEDDF_ID or variant.server:
    return None
  split = data.split

  def observer(model):
    merges = [0]

    def probe(event):
      # FedBuff's merge, the distilled model and the teachers of a FedDF
      # distillation.
      merged, teachers = event.diagnostics
      distilled = event.after
      merges[0] += 1
      teacher = feddf.teacher_probs(model, teachers, split.eval_x)
      probes.append([merges[0], *(
          _eval_accuracy(model, split.eval_x, split.eval_y, w)
          for w in (merged, distilled)),
                     float(np.mean(np.argmax(teacher, -1) == split.eval_y))])

    return tff_mixed.AsyncObserver(on_merge=probe)

  return observer


def run_variant(variant: Variant, data: hybrid_config.Data,
                base: hybrid_config.Config, setting: hybrid_config.Setting,
                seed: int, cache: dict) -> RunRecord:
  """Trains one variant for a setting and seed."""
  config = config_of(variant, base, setting)
  probes = []
  run = hybrid_runs.run_method(
      variant.method, data, config, seed, cache,
      delay_std=setting.delay_std if variant.delayed else 0.0,
      server_fn=_server_fn(variant, config),
      observer_fn=_observer_fn(variant, data, probes))
  return RunRecord(
      variant.name, setting.alpha, setting.delay_std, seed,
      hybrid_records.config_record(config, variant.method),
      [[r.round, r.accuracy, r.loss] for r in run.rows],
      probes, float(run.rows[-1].seconds) if run.rows else 0.0)


def run_study(data_fn, variants: Sequence[Variant],
              settings: Sequence[hybrid_config.Setting], seeds: Sequence[int],
              records_dir: str, base: hybrid_config.Config = BASE
              ) -> list[RunRecord]:
  """Runs every missing (variant, setting, seed); returns all records.

  A variant without delays runs once per alpha and seed: its record stands
  in for every delay level. Kept records are reused if their configuration
  matches and run again if they are outdated
  (`hybrid_records.kept_config`), else a ValueError names the record.
  """
  reports_lib.make_directory(records_dir, 'records directory')
  cache = {}
  for seed in seeds:
    data_of_alpha = {}
    for setting in settings:
      for variant in variants:
        if not variant.delayed and setting.delay_std != settings[0].delay_std:
          continue
        name = record_name(variant.name, setting, seed)
        want = hybrid_records.config_record(
            config_of(variant, base, setting), variant.method)
        if hybrid_records.kept_config(records_dir, name, want) is not None:
          continue
        if setting.alpha not in data_of_alpha:
          data_of_alpha[setting.alpha] = data_fn(seed, setting.alpha)
        record = run_variant(variant, data_of_alpha[setting.alpha], base,
                             setting, seed, cache)
        hybrid_records.keep_record(records_dir, name, record)
        final = hybrid_tables.final_metric(_rows(record))
        print(f'{variant.name} {setting.label} seed {seed}: '
              f'{100 * final:.1f}%', flush=True)
  return read_records(records_dir)


def _rows(record: RunRecord) -> list[hybrid_runs.RunRow]:
  return [hybrid_runs.RunRow(record.variant, record.alpha, record.delay_std,
                             record.seed, int(r), a, l, 0.0)
          for r, a, l in record.rows]


class ArrivalStats(NamedTuple):
  """What the delays do to the updates of one schedule (mean over seeds).

  Attributes:
    trained: Updates trained in the run.
    arrived: Share of them that reach the server within the run.
    on_time: Share of them delivered in the round they were computed
      (staleness 0: what FedAvg with a deadline keeps).
    staleness: Mean staleness (rounds) of the arrived updates.
    steps: FedBuff server steps with M = clients per round.
  """
  trained: float
  arrived: float
  on_time: float
  staleness: float
  steps: float


def arrival_stats(num_clients: int, clients_per_round: int, delay_std: float,
                  rounds: int, seeds: Sequence[int] = (0, 1, 2)
                  ) -> ArrivalStats:
  values = []
  for seed in seeds:
    events = schedule_lib.simulate(num_clients, clients_per_round, delay_std,
                                   rounds, seed, check_delays=False)
    trained = sum(len(e.sampled) for e in events)
    arrivals = [a for e in events for a in e.arrivals]
    values.append((trained, len(arrivals) / trained,
                   sum(a.staleness == 0 for a in arrivals) / trained,
                   float(np.mean([a.staleness for a in arrivals])),
                   len(arrivals) // clients_per_round))
  return ArrivalStats(*(float(np.mean(v)) for v in zip(*values)))


def _finals(records: Sequence[RunRecord], variant: Variant,
            setting: hybrid_config.Setting) -> dict[int, float]:
  """Seed -> final accuracy (%) of the variant in the setting."""
  return {r.seed: 100.0 * hybrid_tables.final_metric(_rows(r)) for r in records
          if r.variant == variant.name and r.alpha == setting.alpha
          and (r.delay_std == setting.delay_std or not variant.delayed)}


def _cell(values: Sequence[float], seeds: int) -> str:
  if not values:
    return 'n/a'
  cell = f'{np.mean(values):.1f} ± {np.std(values):.1f}'
  return cell if len(values) == seeds else f'{cell} (n = {len(values)})'


def _signed(value: float) -> str:
  return f'{value:+.1f}'


def variants_table(records, variants, settings, seeds: int) -> str:
  return '\n'.join(tables.markdown_table(
      ['variant', 'what it is'] + [s.label for s in settings],
      [[v.name, v.description] + [
          _cell(list(_finals(records, v, s).values()), seeds)
          for s in settings] for v in variants]))


def pair_differences(records, pair: Pair, settings
                     ) -> list[Optional[float]]:
  """Per setting, the mean over common seeds of b - a (points), or None."""
  a, b = VARIANTS_BY_NAME[pair.a], VARIANTS_BY_NAME[pair.b]
  result = []
  for setting in settings:
    fa, fb = _finals(records, a, setting), _finals(records, b, setting)
    common = sorted(set(fa) & set(fb))
    result.append(float(np.mean([fb[k] - fa[k] for k in common]))
                  if common else None)
  return result


def pairs_table(records, settings) -> str:
  rows = []
  for pair in PAIRS:
    diffs = pair_differences(records, pair, settings)
    known = [d for d in diffs if d is not None]
    rows.append([f'{pair.a} -> {pair.b}', pair.factor] + [
        'n/a' if d is None else _signed(d) for d in diffs] + [
            _signed(float(np.mean(known))) if known else 'n/a'])
  return '\n'.join(tables.markdown_table(
      ['change', 'what it isolates'] + [s.label for s in settings]
      + ['mean'], rows))


# The variants `sweep_table` follows over every delay level recorded (the
# study's settings and any extra `--delay_stds` run for them alone); a
# variant run without delays gives the N(0) column.
SWEEP = (('fedbuff_lr1', 'fedbuff_lr1_nodelay'), ('fedbuff', 'fedbuff_nodelay'))


def sweep_table(records, seeds: int) -> str:
  """FedBuff's final accuracy against the delay level, per alpha."""
  delays = sorted({r.delay_std for r in records
                   if r.variant in {d for d, _ in SWEEP}})
  rows = []
  for delayed, undelayed in SWEEP:
    for alpha in sorted({r.alpha for r in records if r.variant == delayed}):
      cells = []
      for name, wanted in [(undelayed, None)] + [(delayed, d) for d in delays]:
        finals = [100.0 * hybrid_tables.final_metric(_rows(r)) for r in records
                  if r.variant == name and r.alpha == alpha
                  and (wanted is None or r.delay_std == wanted)]
        cells.append(_cell(finals, seeds))
      rows.append([delayed, f'Dir({alpha:g})'] + cells)
  return '\n'.join(tables.markdown_table(
      ['variant', 'label skew', 'N(0)'] + [f'N({d:g})' for d in delays],
      rows))


def arrivals_table(base: hybrid_config.Config,
                   delay_stds: Sequence[float]) -> str:
  """Our run length against the paper's, per delay level."""
  rows = []
  runs = (('ours', base.num_clients, base.clients_per_round, base.rounds),
          ('paper', 500, 10, 200))
  for delay in delay_stds:
    for who, n, m, rounds in runs:
      a = arrival_stats(n, m, delay, rounds)
      rows.append([f'N({delay:g})', f'{who}: {n} clients, {m} a round, '
                   f'{rounds} rounds', f'{a.trained:.0f}',
                   f'{100 * a.arrived:.0f}%', f'{100 * a.on_time:.1f}%',
                   f'{a.staleness:.1f}', f'{a.steps:.0f}'])
  return '\n'.join(tables.markdown_table(
      ['delay', 'run', 'updates trained', 'arrive in the run',
       'arrive in their round', 'mean staleness (rounds)',
       'FedBuff steps (M = clients a round)'], rows))


def probes_table(records, settings) -> str:
  """FedDF: merge, distilled and teacher accuracy over the second half."""
  rows = []
  for variant in VARIANTS:
    if variant.method != hybrid_config.FEDDF_ID:
      continue
    labels = set()
    for setting in settings:
      late = [p for r in records if r.variant == variant.name
              and r.alpha == setting.alpha
              and (r.delay_std == setting.delay_std or not variant.delayed)
              for p in r.probes[len(r.probes) // 2:]]
      # A run without delays stands in for every delay level: once.
      label = setting.label if variant.delayed else (
          f'Dir({setting.alpha:g}), no delays')
      if not late or label in labels:
        continue
      labels.add(label)
      merged, distilled, teacher = (np.array([p[i] for p in late])
                                    for i in (1, 2, 3))
      rows.append([variant.name, label,
                   f'{100 * merged.mean():.1f}',
                   f'{100 * distilled.mean():.1f}',
                   f'{100 * teacher.mean():.1f}',
                   f'{100 * np.mean(distilled < merged):.0f}%'])
  return '\n'.join(tables.markdown_table(
      ['variant', 'setting', 'FedBuff merge', 'after distillation',
       'teacher ensemble', 'merges made worse'], rows))


def results_markdown(records: Sequence[RunRecord],
                     settings: Sequence[hybrid_config.Setting],
                     seeds: Sequence[int], *, command: str, machine: str,
                     date: str, data_description: str,
                     base: hybrid_config.Config = BASE) -> str:
  """The RESULTS.md section, from the records."""
  c = base
  delays = sorted({s.delay_std for s in settings})
  return '\n'.join([
      '## Why the asynchronous baselines and FedDF fall behind FedAvg here '
      '(guided model merging, Zhu et al.)', '',
      f'Generated on {date} by `{command}`.', '',
      f'* Machine: {machine}.',
      f'* Data (seed {seeds[0]}): {data_description}.',
      f'* The configuration of the `hybrid_async` table above: {c.rounds} '
      f'rounds, {c.num_clients} clients, {c.clients_per_round} a round; '
      f'K = {c.client_steps} SGD steps of batch {c.client_batch_size} at '
      f'lr {c.client_lr:g}; FedBuff / CA2FL eta_g {c.server_lr:g}, M '
      f'{c.buffer_size}; FedAsync alpha {c.fedasync_alpha:g}, a '
      f'{c.fedasync_a:g}; FedDF {c.server_steps} server SGD steps at '
      f'{c.server_sgd_lr:g}. Each variant changes only what its row says. '
      f'Seeds {list(seeds)}; {len(records)} runs.', '',
      'Final accuracy (%), best of the last 5 evaluations, mean ± std over '
      'seeds:', '',
      variants_table(records, VARIANTS, settings, len(seeds)), '',
      'Each change alone: the difference in points (mean over seeds of the '
      'paired runs), per setting and over the settings:', '',
      pairs_table(records, settings), '',
      'FedBuff against the delay level (the same runs, and runs at extra '
      'delay levels where recorded):', '',
      sweep_table(records, len(seeds)), '',
      'What the delays do to the updates (schedule only, mean of seeds 0-2), '
      'in our run and at the paper\'s scale:', '',
      arrivals_table(base, delays), '',
      'FedDF-ID after each distillation, accuracy (%) on the evaluation set, '
      'mean over the second half of the run\'s merges:', '',
      probes_table(records, settings), ''])
