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
r"""Table 4's CelebA diagnostics with the inputs as given and standardized.

Runs table 4's (G, B)-BGD diagnostics (K = 1, w_f = w_c = 1/2, table 6's
central batches) of each mixed algorithm for each seed and each of
`--inputs` (`default`: pixels in [0, 1]; `standardized`: the model sees
2 x - 1), keeps one small JSON record per run in `--records_dir` (metrics
only: max and median G~^2 and B~^2 over rounds 10-100, the share of rounds
with a negative inner product; see `bgd_inputs_lib`), and writes the
RESULTS.md section that explains the B~^2 column from them. A run whose
record is there is not run again; `--report_only` only rebuilds the
section.

  python -m experiments.celeba_smile.bgd_inputs_main \
      --cache_dir=outputs/celeba_dev/cache --seeds=0 --rounds=100 \
      --results_markdown=RESULTS.md
"""

from collections.abc import Sequence
import os
import time

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
from absl import logging

from experiments.celeba_smile import bgd_inputs_lib
from experiments.celeba_smile import celeba_flags
from experiments.celeba_smile import celeba_smile_lib
from experiments.celeba_smile import reproduce_lib
from experiments.common import results as results_lib
from experiments.common import shared_flags

_SEEDS = shared_flags.define_seeds_flag(['0'])
_INPUTS = flags.DEFINE_list(
    'inputs', list(bgd_inputs_lib.INPUTS),
    f'Which inputs to run, from {list(bgd_inputs_lib.INPUTS)}.')
_ALGORITHMS = shared_flags.define_algorithms_flag(
    reproduce_lib.MIXED, 'The mixed algorithms to diagnose.')
_RECORDS_DIR = shared_flags.define_records_dir_flag(
    'docs/results/celeba_bgd_inputs', 'JSON, metrics only.')
_REPORT_ONLY = shared_flags.define_report_only_flag()
_DATA_NOTE = shared_flags.define_data_note_flag(
    '', 'Kept in the records.')

# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()

flags.set_default(celeba_flags.OUTPUT_DIR, 'outputs/celeba_bgd_inputs')


def _choices(flag, allowed: Sequence[str]) -> list[str]:
  names = list(flag.value)
  if (not names or len(set(names)) != len(names)
      or not set(names) <= set(allowed)):
    raise ValueError(f'--{flag.name} must name one or more of '
                     f'{list(allowed)} without repeats, got '
                     f'{",".join(names)!r}.')
  return names


def _run(inputs: str, scenario: str, seed: int, kwargs: dict,
         settings: dict, provenance: dict) -> None:
  """One diagnostics run's record: kept, or run and written."""

  def make():
    start = time.perf_counter()
    result = celeba_smile_lib.run_experiment(
        scenarios=[scenario], seed=seed, with_diagnostics=True,
        client_steps=reproduce_lib.DIAGNOSTIC_CLIENT_STEPS,
        central_batch_size=reproduce_lib.PAPER_CENTRAL_BATCH_SIZES[scenario],
        standardize_inputs=inputs == bgd_inputs_lib.STANDARDIZED,
        output_dir=os.path.join(kwargs['output_dir'], inputs, scenario,
                                f'seed{seed}'),
        **{k: v for k, v in kwargs.items() if k != 'output_dir'})
    (summary,) = result.comparison.summaries
    return dict(
        inputs=inputs, scenario=scenario, seed=seed, rounds=kwargs['rounds'],
        settings=settings,
        data_description=result.data_description
        + (f'; {_DATA_NOTE.value}' if _DATA_NOTE.value else ''),
        seconds=round(time.perf_counter() - start, 1),
        **provenance, **bgd_inputs_lib.round_statistics(summary.metrics_path))

  bgd_inputs_lib.kept_or_made(_RECORDS_DIR.value, (inputs, scenario, seed),
                              settings, kwargs['rounds'], make)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  command = results_lib.command_line(
      'experiments.celeba_smile.bgd_inputs_main')
  if not _REPORT_ONLY.value:
    if flags.FLAGS['seed'].present:
      raise ValueError('This binary takes --seeds (a list), not --seed.')
    if flags.FLAGS['client_steps'].present:
      raise ValueError('--client_steps is fixed at 1 here (table 4, '
                       'appendix B.1).')
    seeds = reproduce_lib.parse_seeds(_SEEDS.value)
    inputs = _choices(_INPUTS, bgd_inputs_lib.INPUTS)
    algorithms = _choices(_ALGORITHMS, reproduce_lib.MIXED)
    kwargs = celeba_flags.experiment_kwargs()
    for name in ('seed', 'client_steps', 'central_batch_size'):
      del kwargs[name]
    if celeba_flags.CENTRAL_BATCH_SIZE.value is not None:
      raise ValueError('--central_batch_size is table 6\'s here.')
    settings = dict(
        clients_per_round=kwargs['clients_per_round'],
        client_batch_size=kwargs['client_batch_size'],
        client_lr=kwargs['client_lr'], client_steps=1,
        hidden_units=list(kwargs['hidden_units']),
        mixing_weights=[bgd_inputs_lib.MIXING_WEIGHT] * 2,
        central_batch_sizes=reproduce_lib.PAPER_CENTRAL_BATCH_SIZES)
    provenance = dict(command=command, date=results_lib.utc_now(),
                      machine=results_lib.machine_description())
    for seed in seeds:
      cohort = min(kwargs['clients_per_round'],
                   reproduce_lib.count_clients(seed=seed, **kwargs))
      for name in inputs:
        for scenario in algorithms:
          _run(name, scenario, seed, dict(kwargs, clients_per_round=cohort),
               dict(settings, clients_per_round=cohort), provenance)
  records = bgd_inputs_lib.read_records(_RECORDS_DIR.value)
  section = bgd_inputs_lib.section_markdown(
      records, command=command, date=results_lib.utc_now(),
      records_dir=_RECORDS_DIR.value)
  print(section, end='', flush=True)
  if celeba_flags.RESULTS_MARKDOWN.value:
    results_lib.write_results_section(
        celeba_flags.RESULTS_MARKDOWN.value, bgd_inputs_lib.RESULTS_SECTION,
        section, after='celeba_smile_reproduction')
    logging.info('Wrote %s', celeba_flags.RESULTS_MARKDOWN.value)


if __name__ == '__main__':
  cli.run(main)
