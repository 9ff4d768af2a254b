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
r"""Why FedAsync, FedBuff, CA2FL and FedDF fall behind FedAvg: one change at
a time against the hybrid table's configuration (`async_study_lib`).

  python -m experiments.hybrid_async.async_study_main \
      --cifar10_npz=cifar10_test_500perclass_jpeg.npz --seeds=0,1,2 \
      --results_markdown=RESULTS.md

Each finished run is a small JSON record in `--records_dir` (committed:
docs/results/hybrid_async_study/); running again only runs what is missing,
so the study can be split over processes (`--seeds=0` and `--seeds=1,2`
side by side) and the section rebuilt from every record
(`--report_only`).
"""

from collections.abc import Sequence
import functools

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.hybrid_async import async_study_lib as study
from experiments.hybrid_async import hybrid_config
from tff_mixed.tasks import hybrid_images

_CIFAR10_NPZ = shared_flags.define_cifar10_npz_flag(None)
_IMAGE_SIZE = shared_flags.define_image_size_flag(16)
_SEEDS = shared_flags.define_seeds_flag(['0', '1', '2'])
_REPORT_SEEDS = flags.DEFINE_list(
    'report_seeds', ['0', '1', '2'], 'Seeds the section reports (a run of '
    'some seeds still reports all finished ones).')
_ALPHAS = shared_flags.define_alphas_flag(['0.1', '0.3'])
_DELAY_STDS = shared_flags.define_delay_stds_flag(['5', '20'])
_VARIANTS = flags.DEFINE_list(
    'variants', [v.name for v in study.VARIANTS], 'Variants to run.')
_RECORDS_DIR = shared_flags.define_records_dir_flag(
    'docs/results/hybrid_async_study')
_REPORT_ONLY = shared_flags.define_report_only_flag()
_RESULTS = results_lib.define_results_flags('hybrid_async_study')
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
_MODULE = 'experiments.hybrid_async.async_study_main'


@functools.lru_cache(maxsize=None)
def _images():
  x, y = hybrid_images.load_cifar10_npz(_CIFAR10_NPZ.value)
  if x.shape[1] % _IMAGE_SIZE.value:
    raise ValueError(f'--image_size={_IMAGE_SIZE.value} must divide '
                     f'CIFAR-10\'s {x.shape[1]} pixels.')
  return hybrid_images.downsample_images(x, x.shape[1] // _IMAGE_SIZE.value), y


def _data(seed: int, alpha: float) -> hybrid_config.Data:
  x, y = _images()
  c = study.BASE
  split = hybrid_images.build_hybrid_split(
      x, y, num_clients=c.num_clients, alpha=alpha,
      server_size=c.server_size, eval_size=c.eval_size, seed=seed)
  size = _IMAGE_SIZE.value
  return hybrid_config.Data(split, None, None,
                            f'CIFAR-10 at {size}x{size} '
                            f'({split.description})')


def _numbers(name: str, values: Sequence[str], kind):
  try:
    return [kind(v) for v in values]
  except ValueError:
    raise ValueError(f'--{name} takes {kind.__name__} values, got '
                     f'{",".join(values)}.') from None


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  seeds = cli.check_seeds('seeds', _SEEDS.value)
  report_seeds = _numbers('report_seeds', _REPORT_SEEDS.value, int)
  settings = [hybrid_config.Setting(a, d)
              for a in _numbers('alphas', _ALPHAS.value, float)
              for d in _numbers('delay_stds', _DELAY_STDS.value, float)]
  unknown = sorted(set(_VARIANTS.value) - set(study.VARIANTS_BY_NAME))
  if unknown:
    raise ValueError(f'Unknown --variants {unknown}; known: '
                     f'{list(study.VARIANTS_BY_NAME)}.')
  if not settings:
    raise ValueError('--alphas and --delay_stds must be non-empty.')
  if not _REPORT_ONLY.value:
    if not _CIFAR10_NPZ.value:
      raise ValueError('--cifar10_npz is required (CIFAR-10 is not shipped).')
    for setting in settings:
      hybrid_config.validate(study.BASE._replace(delay_std=setting.delay_std),
                             [hybrid_config.FEDBUFF], [setting], seeds)
    study.run_study(_data, [study.VARIANTS_BY_NAME[v] for v in _VARIANTS.value],
                    settings, seeds, _RECORDS_DIR.value)
  records = study.read_records(_RECORDS_DIR.value)
  if not records:
    raise ValueError(f'No study record in {_RECORDS_DIR.value}.')
  markdown = study.results_markdown(
      records, settings, report_seeds, command=results_lib.command_line(
          _MODULE), machine=results_lib.machine_description(),
      date=results_lib.utc_now(),
      data_description=(_data(report_seeds[0], settings[0].alpha).description
                        if _CIFAR10_NPZ.value else
                        'CIFAR-10 (the records\' runs)'))
  print(study.pairs_table(records, settings), flush=True)
  if _RESULTS.markdown.value:
    results_lib.write_results_section(
        _RESULTS.markdown.value, _RESULTS.section.value, markdown,
        note=_RESULTS.note.value, after='hybrid_async_feddf')


if __name__ == '__main__':
  cli.run(main)
