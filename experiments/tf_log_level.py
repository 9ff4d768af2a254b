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
"""Sets TensorFlow's C++ log level from the command line, before it loads.

Every binary imports this module first, before anything that loads
TensorFlow, then ends with `experiments.common.cli.run(main)`. TensorFlow
reads `TF_CPP_MIN_LOG_LEVEL` once, when it loads, and importing any module of
`tff_mixed` loads it through the package's facade; so does the rest of the
entry point, `experiments.common.cli`, which imports `tff_mixed.runtime`. So
this one step is a module of its own, imported before them.

TensorFlow's C++ log lines (oneDNN, CUDA, grappler) are then off, also in
TFF's worker process, which inherits the environment; `--verbose` (the flag
`experiments.common.cli` defines) brings them back, as does setting
`TF_CPP_MIN_LOG_LEVEL` yourself.
"""

import os
import sys

# The name of `experiments.common.cli.VERBOSE`, read here before absl
# parses the flags.
_VERBOSE = 'verbose'


def verbose_requested(argv) -> bool:
  """Whether `argv` turns `--verbose` on (the last mention wins).

  Read before absl parses the flags, because TensorFlow's C++ log level must
  be set before TensorFlow loads. Accepts absl's spellings `--verbose`,
  `--noverbose` and `--verbose=true|false|t|f|1|0`, with one or two dashes;
  stops at `--`. (A `--verbose` inside a `--flagfile` comes too late for the
  C++ lines; it still brings back the Python ones and tracebacks.)

  Args:
    argv: The command line, program name first.

  Returns:
    True if the flag is on.
  """
  verbose = False
  for arg in argv[1:]:
    if arg == '--':
      break
    if not arg.startswith('-'):
      continue
    name, has_value, value = arg.lstrip('-').partition('=')
    if name == _VERBOSE:
      # Another value fails absl's parse, which then says so.
      verbose = not has_value or value.lower() in ('true', 't', '1')
    elif name == 'no' + _VERBOSE and not has_value:
      verbose = False
  return verbose


def _set_native_log_level(argv) -> None:
  if verbose_requested(argv):
    os.environ['TF_CPP_MIN_LOG_LEVEL'] = '0'
  else:
    # 3 also hides the ERROR lines every start prints on machines without
    # CUDA ('Unable to register cuDNN factory ...'); a real failure reaches
    # Python as an exception. A level the user set is kept.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')


# Before TensorFlow loads: it reads the level once, then never again.
_set_native_log_level(sys.argv)
