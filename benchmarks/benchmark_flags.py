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
"""The flags that several benchmark binaries take, each defined here once.

`--output_markdown`, `--output_json`, `--section` and `--floor_goal` mean
the same in every benchmark that takes them (where its report goes, where
its raw numbers go, which section of the report it writes, how close to the
compute floor it should come), so each has one definition: its type, its
help and the loosest bound any benchmark accepts. A benchmark defines the
ones it takes at import, each with its own default
(`_SECTION = benchmark_flags.define_section_flag('workers')`), and may add a
sentence of its own to the help (`detail=`), as the experiment binaries do
with `experiments.common.shared_flags`. The flags that experiment binaries
take as well (`--rounds`, `--seed`, `--client_steps`, ...) come from that
module, not from this one.

absl flags are process-global: a benchmark that imports another's flags
(round_profile and group_profile take round_time's) changes their defaults
with `flags.FLAGS.set_default` instead of defining them again.

The flags are shown under the binary that defines them (`--help`,
`--helpfull`), not under this module: this module disclaims them.
"""

from absl import flags

from experiments.common import shared_flags

# The binary that calls a `define_*_flag` below owns the flag, as if it had
# defined it (see shared_flags).
flags.disclaim_key_flags()


def define_output_markdown_flag(default: str,
                                detail: str = '') -> flags.FlagHolder:
  """Defines `--output_markdown`."""
  return flags.DEFINE_string(
      'output_markdown', default, shared_flags.with_detail(
          "Markdown report that gets this benchmark's section (between its "
          'BEGIN and END markers; the rest of the file is kept); a relative '
          'path is relative to the repository root.', detail))


def define_output_json_flag(default: str,
                            detail: str = '') -> flags.FlagHolder:
  """Defines `--output_json`."""
  return flags.DEFINE_string(
      'output_json', default, shared_flags.with_detail(
          "JSON file of the run's raw numbers; a relative path is relative "
          'to the repository root.', detail))


def define_section_flag(default: str, detail: str = '') -> flags.FlagHolder:
  """Defines `--section`."""
  return flags.DEFINE_string(
      'section', default, shared_flags.with_detail(
          'The section of --output_markdown this run writes (between its '
          'BEGIN and END markers).', detail))


def define_floor_goal_flag(default: float,
                           detail: str = '') -> flags.FlagHolder:
  """Defines `--floor_goal`, above 0."""
  holder = flags.DEFINE_float(
      'floor_goal', default, shared_flags.with_detail(
          'The goal: at most this times the compute floor (the same '
          'arithmetic in plain TF, benchmarks/compute_floor.py); the report '
          'says whether it is met.', detail))
  # absl's bounds are inclusive, and a goal of 0 could never be met.
  flags.register_validator(holder.name, lambda value: value > 0,
                           message='--floor_goal must be positive.')
  return holder
