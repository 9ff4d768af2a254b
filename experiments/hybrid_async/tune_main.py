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
r"""Searches the paper's hyperparameter grids of the hybrid experiment.

The guided-model-merging paper's protocol (appendix D; `tune_lib`): the
clients' Adam lr and epochs on FedAvg first, then each method's own grid,
every point scored on a validation split held apart from the test set.
Takes every flag of `hybrid_async_main` (data, sizes, the fixed
hyperparameters; `--alphas`, `--delay_stds` and `--seeds` are the tuning
settings), and writes `selected.json` and `tuning.md` to `--output_dir`;
run `hybrid_async_main --selected_json=<output_dir>/selected.json` with
the same `--validation_size` for the final evaluation.

  python -m experiments.hybrid_async.tune_main \
      --cifar10_npz=cifar10_test_500perclass_jpeg.npz --validation_size=500 \
      --alphas=0.1 --delay_stds=5 --seeds=0 \
      --tune_methods=fedavg,fedbuff --only=buffer_size=10,20

Runs are kept under `--output_dir/points/`: the same command again resumes,
and `--tune_methods` can add methods to an earlier search.
"""

from collections.abc import Sequence

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.hybrid_async import hybrid_async_main
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import tune_lib

_TUNE_METHODS = flags.DEFINE_list(
    'tune_methods', [m for m, _, _ in tune_lib.grids(
        hybrid_config.METHODS)], 'Methods whose grids to search (fedavg: '
    'the clients\' lr and epochs, applied to every method).')
_ONLY = flags.DEFINE_multi_string(
    'only', [], 'axis=v1,v2 or method:axis=v1,v2: search only these '
    'values of an axis (of every method that has it, or of one method): a '
    'stated part of the paper\'s grid, e.g. '
    '--only=center:server_epochs=10,20; repeat for more axes.')


_BASE_SELECTED_JSON = flags.DEFINE_string(
    'base_selected_json', '', 'A selection to start from when --output_dir '
    'has none: the client values and the methods not tuned here come from '
    'it (e.g. an earlier search under another protocol).')

# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()

# Apart from the final runs' outputs.
flags.FLAGS.set_default('output_dir', 'outputs/hybrid_async/tuning')


def parse_only(specs: Sequence[str]) -> dict[str, list[float]]:
  """`--only` values as {axis: [numbers]}."""
  only = {}
  for spec in specs:
    name, sep, values = spec.partition('=')
    try:
      if not sep or not name or not values:
        raise ValueError('expected axis=v1,v2')
      only[name] = [float(v) for v in values.split(',')]
    except ValueError as e:
      raise ValueError(f'--only={spec!r}: {e}.') from None
  return only


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  config, settings, seeds = hybrid_async_main.config_from_flags()
  methods = _TUNE_METHODS.value
  unknown = [m for m in methods if m not in hybrid_config.METHODS]
  if unknown:
    raise ValueError(f'--tune_methods: unknown {unknown}; methods are '
                     f'{list(hybrid_config.METHODS)}.')
  selected, searches = tune_lib.tune(
      lambda seed, alpha: hybrid_async_main.load_data(config, seed, alpha),
      config, methods=methods, seeds=seeds, settings=settings,
      output_dir=flags.FLAGS.output_dir, only=parse_only(_ONLY.value),
      clients_per_group=flags.FLAGS.clients_per_group,
      base_selected=(tune_lib.read_selected(_BASE_SELECTED_JSON.value)
                     if _BASE_SELECTED_JSON.value else None))
  for search in searches:
    best = search.points[search.selected]
    print(f'{search.method}: {tune_lib.point_key(best.values)} '
          f'(validation accuracy {100 * best.score:.1f}%)')
  print(f'selected: {selected._asdict()}')


if __name__ == '__main__':
  cli.run(main)
