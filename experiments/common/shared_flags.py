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
"""The flags that several experiment binaries take, each defined here once.

`--rounds`, `--clients_per_round`, `--seed`, `--records_dir` and the others
below mean the same in every binary that takes them, so each has one
definition: its type, its help and the loosest bound any binary accepts. A
binary defines the ones it takes at import, each with its own default
(`_ROUNDS = shared_flags.define_rounds_flag(40)`), and may add a sentence
of its own to the help (`detail=`). A binary that needs a stricter bound
registers it with `require_at_least`, one that takes only some values of a
list flag with `require_choices`; a bad value then fails as the flags are
parsed, as an absl bound does (one `error:` line from `cli.run`).

absl flags are process-global: a second definition of a name raises
`DuplicateFlagError`, so a binary that imports another binary's flags
(tune_main those of hybrid_async_main) uses that binary's holders.

The flags are shown under the binary that defines them (`--help`,
`--helpfull`), not under this module: this module disclaims them.
"""

from collections.abc import Sequence
from typing import Optional

from absl import flags

from experiments.common import cli

# The binary that calls a `define_*_flag` below owns the flag (its `--help`
# lists it, its `--helpfull` section holds it), as if it had defined it.
flags.disclaim_key_flags()


def _help(text: str, detail: str) -> str:
  """The shared help text, then the binary's own sentence, if any."""
  return f'{text} {detail}' if detail else text


# The run's length and cohort.


def define_rounds_flag(default: int, detail: str = '') -> flags.FlagHolder:
  """Defines `--rounds`, at least 1."""
  return flags.DEFINE_integer(
      'rounds', default, _help(
          'Rounds of training (per scenario or run).', detail),
      lower_bound=1)


def define_clients_per_round_flag(default: int,
                                  detail: str = '') -> flags.FlagHolder:
  """Defines `--clients_per_round`, at least 1."""
  return flags.DEFINE_integer(
      'clients_per_round', default, _help(
          'S: clients sampled per round.', detail), lower_bound=1)


def define_num_clients_flag(default: int,
                            detail: str = '') -> flags.FlagHolder:
  """Defines `--num_clients`, at least 1."""
  return flags.DEFINE_integer(
      'num_clients', default, _help('Number of federated clients.', detail),
      lower_bound=1)


def define_eval_every_flag(default: int, detail: str = '') -> flags.FlagHolder:
  """Defines `--eval_every`, at least 1."""
  return flags.DEFINE_integer(
      'eval_every', default, _help(
          'Evaluate every this many rounds (and after the last one).',
          detail), lower_bound=1)


def define_seed_flag(default: int, detail: str = '') -> flags.FlagHolder:
  """Defines `--seed`, from 0 to `cli.MAX_SEED`."""
  return flags.DEFINE_integer(
      'seed', default, _help(
          'The seed of the random draws (e.g. data split, model '
          'initialization, client and central sampling).', detail),
      lower_bound=0, upper_bound=cli.MAX_SEED)


def define_seeds_flag(default: Sequence[str],
                      detail: str = '') -> flags.FlagHolder:
  """Defines `--seeds`: checked by the binary (`cli.check_seeds`)."""
  return flags.DEFINE_list(
      'seeds', list(default), _help(
          'Comma-separated seeds: every run is made once per seed.', detail))


def define_scenarios_flag(choices: Sequence[str],
                          detail: str = '') -> flags.FlagHolder:
  """Defines `--scenarios`, by default all of the binary's `choices`."""
  return flags.DEFINE_list(
      'scenarios', list(choices), _help(
          f'Comma-separated scenarios, from {list(choices)}.', detail))


# Local and central training.


def define_client_steps_flag(default: int,
                             detail: str = '') -> flags.FlagHolder:
  """Defines `--client_steps`, at least 0 (0 means something to a few)."""
  return flags.DEFINE_integer(
      'client_steps', default, _help(
          'K: local steps per client per round.', detail), lower_bound=0)


def define_client_batch_size_flag(default: int,
                                  detail: str = '') -> flags.FlagHolder:
  """Defines `--client_batch_size`, at least 1."""
  return flags.DEFINE_integer(
      'client_batch_size', default, _help(
          '|B_i|: the client batch size.', detail), lower_bound=1)


def define_client_lr_flag(default: float,
                          detail: str = '') -> flags.FlagHolder:
  """Defines `--client_lr`, unbounded (finite, as every float flag)."""
  return flags.DEFINE_float(
      'client_lr', default, _help(
          'eta: the client learning rate.', detail))


def define_central_batch_size_flag(default: Optional[int],
                                   detail: str = '') -> flags.FlagHolder:
  """Defines `--central_batch_size`, at least 1 (None: the binary's rule)."""
  return flags.DEFINE_integer(
      'central_batch_size', default, _help(
          '|B_c|: the central batch size of the mixed algorithms.', detail),
      lower_bound=1)


def define_examples_per_client_flag(default: Optional[int],
                                    detail: str = '') -> flags.FlagHolder:
  """Defines `--examples_per_client`, at least 1 (None: the mean size)."""
  return flags.DEFINE_integer(
      'examples_per_client', default, _help(
          'Example Transfer: central examples sent to each client per '
          'round; unset: the mean client data size.', detail),
      lower_bound=1)


def define_embedding_dim_flag(default: int,
                              detail: str = '') -> flags.FlagHolder:
  """Defines `--embedding_dim`, at least 1."""
  return flags.DEFINE_integer(
      'embedding_dim', default, _help('d: the embedding size.', detail),
      lower_bound=1)


def define_image_size_flag(default: int, detail: str = '') -> flags.FlagHolder:
  """Defines `--image_size`, at least 1."""
  return flags.DEFINE_integer(
      'image_size', default, _help(
          'Image side in pixels: CIFAR-10 is averaged down from 32 by an '
          'integer factor (32, 16, 8).', detail), lower_bound=1)


# Evaluation.


def define_max_eval_examples_flag(default: Optional[int],
                                  detail: str = '') -> flags.FlagHolder:
  """Defines `--max_eval_examples`, at least 1 (None: all)."""
  return flags.DEFINE_integer(
      'max_eval_examples', default, _help(
          'Evaluate on a seeded sample of this many evaluation examples '
          '(faster); unset: all.', detail), lower_bound=1)


def define_target_auc_flag(default: float,
                           detail: str = '') -> flags.FlagHolder:
  """Defines `--target_auc`, in [0, 1]."""
  return flags.DEFINE_float(
      'target_auc', default, _help(
          'Eval AUC whose first crossing the table reports.', detail),
      lower_bound=0.0, upper_bound=1.0)


def define_diagnostic_rounds_flag(default: int,
                                  detail: str = '') -> flags.FlagHolder:
  """Defines `--diagnostic_rounds`, at least 0 (0: none)."""
  return flags.DEFINE_integer(
      'diagnostic_rounds', default, _help(
          "Rounds of table 4's (G, B)-BGD diagnostics runs (K = 1) of each "
          'mixed algorithm; 0: none.', detail), lower_bound=0)


# The asynchronous settings of the hybrid-data binaries.


def define_alphas_flag(default: Sequence[str],
                       detail: str = '') -> flags.FlagHolder:
  """Defines `--alphas`: numbers, parsed by the binary."""
  return flags.DEFINE_list(
      'alphas', list(default), _help(
          'Dirichlet alphas of the label skew.', detail))


def define_delay_stds_flag(default: Sequence[str],
                           detail: str = '') -> flags.FlagHolder:
  """Defines `--delay_stds`: numbers, parsed by the binary."""
  return flags.DEFINE_list(
      'delay_stds', list(default), _help(
          'Delay levels: sigma of the |N(0, sigma^2)| delays, in rounds '
          "(table 1's columns, with --alphas).", detail))


# Data.


def define_cache_dir_flag(default: Optional[str],
                          detail: str = '') -> flags.FlagHolder:
  """Defines `--cache_dir`."""
  return flags.DEFINE_string(
      'cache_dir', default, _help(
          "Directory of TFF's SQLite database of the federated data.",
          detail))


def define_cifar10_npz_flag(default: Optional[str],
                            detail: str = '') -> flags.FlagHolder:
  """Defines `--cifar10_npz`."""
  return flags.DEFINE_string(
      'cifar10_npz', default, _help(
          'CIFAR-10 images as a JPEG npz (arrays jpeg_bytes, jpeg_offsets, '
          'label).', detail))


def define_data_note_flag(default: str, detail: str = '') -> flags.FlagHolder:
  """Defines `--data_note`."""
  return flags.DEFINE_string(
      'data_note', default, _help(
          'Where the data came from (e.g. the raw copy and its conversion), '
          'for the report.', detail))


# Outputs, records and reports.


def define_output_dir_flag(default: str, detail: str = '') -> flags.FlagHolder:
  """Defines `--output_dir`."""
  return flags.DEFINE_string(
      'output_dir', default, _help('Directory for the outputs.', detail))


def define_records_dir_flag(default: Optional[str],
                            detail: str = '') -> flags.FlagHolder:
  """Defines `--records_dir`."""
  return flags.DEFINE_string(
      'records_dir', default, _help(
          'Directory of the run records (small files, meant to be '
          'committed).', detail))


def define_report_only_flag(detail: str = '') -> flags.FlagHolder:
  """Defines `--report_only` (default False)."""
  return flags.DEFINE_bool(
      'report_only', False, _help(
          'Run nothing: rebuild the report from the records.', detail))


def define_results_markdown_flag(detail: str = '') -> flags.FlagHolder:
  """Defines `--results_markdown` (default '': none)."""
  return flags.DEFINE_string(
      'results_markdown', '', _help(
          "If set, also write this run's section of a Markdown report, e.g. "
          'RESULTS.md.', detail))


def define_plot_flag(default: Optional[str],
                     detail: str = '') -> flags.FlagHolder:
  """Defines `--plot`."""
  return flags.DEFINE_string(
      'plot', default, _help(
          'Where to write the plot; the RESULTS.md section links to it.',
          detail))


# A binary's own bounds on the values of a shared flag.


def require_at_least(holder: flags.FlagHolder, bound: float) -> None:
  """Refuses values of `holder`'s numeric flag below `bound`.

  For a binary that needs a stricter lower bound than the shared
  definition's; the message is the one absl gives for its own bounds, and
  the flag's help states the bound (absl's type line under it states the
  shared one).
  """
  flag = flags.FLAGS[holder.name]
  stricter = type(flag.parser)(lower_bound=bound,
                               upper_bound=flag.parser.upper_bound)
  flag.help = f'{flag.help} At least {bound}.'

  def check(value) -> bool:
    if value is not None and stricter.is_outside_bounds(value):
      raise flags.ValidationError(
          f'{value} is not {stricter.syntactic_help}')
    return True

  flags.register_validator(holder.name, check)


def require_choices(holder: flags.FlagHolder, choices: Sequence[str]) -> None:
  """Refuses a list flag's value unless one or more `choices`, unrepeated."""
  flags.register_validator(
      holder.name,
      lambda names: (bool(names) and set(names) <= set(choices)
                     and len(set(names)) == len(names)),
      message=f'--{holder.name} must name one or more of {list(choices)}, '
      'without repeats.')
