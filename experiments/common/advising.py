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
"""`--advise_rounds`, `--advise_then`: the algorithm advisor in a binary.

With `--advise_rounds=N` a binary first trains a probe run of Parallel
Training with diagnostics for N rounds (its outputs under
`<output_dir>/advice/`), prints the advisor's estimates and recommendation
(`tff_mixed.advisor`, arXiv:2205.13655 section 5 and table 3), writes them
to `<output_dir>/advice.json` and `advice.md`, and then, with
`--advise_then=continue` (the default), goes on with its own work, or
stops with `stop`. The sampled constants (G~, B~, sigma^2, sigma_c^2,
beta) belong to the task at the models the probe visits, not to the
algorithm that visits them; Parallel Training is the probe because it
transfers no gradients.
"""

import csv
import os
from typing import NamedTuple, Optional

from absl import flags
from absl import logging

from experiments.common import comparison
from experiments.common import grouping
from experiments.common import scenarios as scenarios_lib
from tff_mixed.advisor import advice as advice_lib
from tff_mixed.training import reports as reports_lib

CONTINUE = 'continue'
STOP = 'stop'
PROBE_SCENARIO = scenarios_lib.PARALLEL_TRAINING
PROBE_DIR = 'advice'
JSON_FILE = 'advice.json'
MARKDOWN_FILE = 'advice.md'


class AdviseFlags(NamedTuple):
  """The flag holders `define_advise_flags` returns."""

  rounds: flags.FlagHolder
  then: flags.FlagHolder


def define_advise_flags() -> AdviseFlags:
  """Defines `--advise_rounds` (0: no advice) and `--advise_then`."""
  return AdviseFlags(
      rounds=flags.DEFINE_integer(
          'advise_rounds', 0, 'If positive: first train a Parallel Training '
          'probe with diagnostics for this many rounds, then print and write '
          '(advice.json, advice.md in the output directory) which mixed FL '
          'algorithm arXiv:2205.13655\'s bounds favour, with the estimates '
          'behind it.', lower_bound=0),
      then=flags.DEFINE_enum(
          'advise_then', CONTINUE, [CONTINUE, STOP],
          'After the advice: continue with the run, or stop.'))


def write_advice(output_dir: str, advice: advice_lib.Advice,
                 records_dir: Optional[str] = None) -> dict:
  """Writes advice.json and advice.md atomically; returns their paths.

  With `records_dir` (an experiment's committed records, which outlive the
  run's `outputs/`) they are also written to `<records_dir>/advice/`
  (`records_advice_json`, `records_advice_markdown`): a subdirectory,
  since the records directory's own *.json files are scenario records.
  """
  files = {}
  targets = [('', output_dir)]
  if records_dir:
    targets.append(('records_', reports_lib.make_directory(
        os.path.join(records_dir, PROBE_DIR), 'advice records directory')))
  for prefix, directory in targets:
    json_path = os.path.join(directory, JSON_FILE)
    markdown_path = os.path.join(directory, MARKDOWN_FILE)
    reports_lib.atomic_write_text(json_path, advice.to_json() + '\n')
    reports_lib.atomic_write_text(
        markdown_path,
        '# Which mixed FL algorithm (arXiv:2205.13655, table 3)\n\n```\n'
        + advice.to_text() + '```\n')
    files.update({f'{prefix}advice_json': json_path,
                  f'{prefix}advice_markdown': markdown_path})
  return files


def report(advice: advice_lib.Advice, files: dict, then: str) -> bool:
  """Prints the advice, logs its files; whether the binary goes on."""
  print(advice.to_text(), end='', flush=True)
  for kind, path in files.items():
    logging.info('Wrote %s: %s', kind, path)
  return then != STOP


def read_metrics_rows(path: str) -> list[dict]:
  """The runner's metrics CSV as dicts of floats (empty cells left out)."""
  with open(path) as f:
    return [{k: float(v) for k, v in record.items() if v not in ('', None)}
            for record in csv.DictReader(f)]


def advise_comparison(
    task: comparison.ComparisonTask, model, *, rounds: int,
    clients_per_round: int, client_steps: int, client_batch_size: int,
    client_lr: float, central_batch_size: Optional[int], seed: int,
    output_dir: str, progress: Optional[bool] = None,
    clients_per_group: int = grouping.AUTO,
) -> tuple[advice_lib.Advice, dict]:
  """The probe run and its advice, for a `comparison.compare` task.

  The probe trains `PROBE_SCENARIO` with the comparison's settings (eta =
  eta_c, eta_s = eta_m = 1, w_f = w_c = 1/2, its |B_c|, each algorithm's
  |B_c| for the advice) for `rounds` rounds under
  `<output_dir>/advice/`, resumable like every scenario.

  Returns:
    `(advice, {kind: path})` of the files written.
  """
  comparison.check_int('rounds', rounds)
  batch_sizes = comparison.central_batch_sizes(
      task, central_batch_size, clients_per_round, client_steps,
      client_batch_size)
  output_dir = reports_lib.make_directory(os.fspath(output_dir),
                                          '`output_dir`')
  _, summary = comparison.run_scenario(
      PROBE_SCENARIO, task, model, dict(
          client_lr=client_lr, central_batch_sizes=batch_sizes,
          examples_per_client=1, client_batch_size=client_batch_size,
          with_diagnostics=True),
      rounds=rounds, clients_per_round=clients_per_round,
      client_steps=client_steps, eval_every=rounds, target_auc=1.0,
      seed=seed, progress=progress,
      output_dir=os.path.join(output_dir, PROBE_DIR),
      hparams=dict(clients_per_round=clients_per_round,
                   client_steps=client_steps,
                   client_batch_size=client_batch_size, client_lr=client_lr,
                   central_batch_sizes=batch_sizes._asdict(), seed=seed,
                   clients_per_group=clients_per_group, **task.description),
      clients_per_group=clients_per_group)
  advice = advice_lib.advise(
      read_metrics_rows(summary.metrics_path), last_round=rounds,
      client_steps=client_steps, cohort_size=clients_per_round,
      client_learning_rate=client_lr, central_learning_rate=client_lr,
      central_batch_sizes=batch_sizes._asdict(),
      measured_central_batch_size=getattr(batch_sizes, PROBE_SCENARIO),
      seed=seed)
  return advice, write_advice(output_dir, advice)
