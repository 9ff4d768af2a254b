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
r"""What the span of Feddle's atlas holds: in-domain Feddle at the tuned
values, probed at its merges (`feddle_span_lib`).

Takes every flag of `hybrid_async_main` (data, sizes, `--selected_json`:
Feddle-ID's search values and Fed+FT's, whose step the probes project;
`--alphas`, `--delay_stds` and `--seeds` are the runs):

  python -m experiments.hybrid_async.feddle_span_main \
      --cifar10_npz=cifar10_test_500perclass_jpeg.npz --validation_size=250 \
      --selected_json=docs/results/hybrid_tuning/cifar10_16/selected.json \
      --alphas=0.1 --delay_stds=0,5,20 --seeds=0 --results_markdown=RESULTS.md

Each run is a small JSON record in `--span_records_dir` (committed:
docs/results/feddle_span/); running again runs only what is missing, and
`--report_only` rebuilds the section from the records.
"""

from collections.abc import Sequence

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.common import results as results_lib
from experiments.hybrid_async import feddle_span_lib as span
from experiments.hybrid_async import hybrid_async_main
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import tune_lib

_PROBE_EVERY = flags.DEFINE_integer(
    'probe_every', 3, 'Probe every this many merges.', lower_bound=1)
_SPAN_RECORDS_DIR = flags.DEFINE_string(
    'span_records_dir', 'docs/results/feddle_span', 'The run records.')
_MODULE = 'experiments.hybrid_async.feddle_span_main'
SECTION = 'hybrid_async_feddle_span'

# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()

flags.FLAGS.set_default('results_section', SECTION)
flags.FLAGS.set_default('methods', [hybrid_config.FEDDLE_ID])


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  config, settings, seeds = hybrid_async_main.config_from_flags()
  if not config.validation_size:
    raise ValueError('--validation_size must be > 0: the probes score the '
                     'searches on held-out validation images.')
  finetune = config
  if flags.FLAGS.selected_json:
    selected = tune_lib.read_selected(flags.FLAGS.selected_json)
    config = config._replace(**selected.client)
    finetune = hybrid_methods.method_config(config, hybrid_config.FED_FT,
                                            selected.methods)
    config = hybrid_methods.method_config(config, hybrid_config.FEDDLE_ID,
                                          selected.methods)
  if not flags.FLAGS.report_only:
    span.run_study(
        lambda seed, alpha: hybrid_async_main.load_data(config, seed, alpha),
        config, finetune, settings, seeds, _SPAN_RECORDS_DIR.value,
        _PROBE_EVERY.value)
  records = span.read_records(_SPAN_RECORDS_DIR.value)
  if not records:
    raise ValueError(f'No span record in {_SPAN_RECORDS_DIR.value}.')
  table = span.span_table(records, settings)
  print(table, flush=True)
  if flags.FLAGS.results_markdown:
    results_lib.write_results_section(
        flags.FLAGS.results_markdown, flags.FLAGS.results_section,
        span.results_markdown(
            records, settings, command=results_lib.command_line(_MODULE),
            machine=results_lib.machine_description(),
            date=results_lib.utc_now()),
        note=flags.FLAGS.results_note,
        # A second study (e.g. from the pretrained start) follows the first.
        after=('hybrid_async_tuned_scratch'
               if flags.FLAGS.results_section == SECTION else SECTION))


if __name__ == '__main__':
  cli.run(main)
