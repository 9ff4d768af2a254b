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
r"""Converts a raw CelebA copy to TFF's `celeba.sqlite`, for offline use.

  python -m experiments.celeba_smile.convert_raw_celeba_main \
    --raw_image_dir=CELEBA/img_align_celeba \
    --raw_attr_file=CELEBA/list_attr_celeba.txt \
    --raw_identity_file=CELEBA/identity_CelebA.txt \
    --sqlite_output_dir=DIR

writes `DIR/celeba.sqlite`, which
`tff.simulation.datasets.celeba.load_data(cache_dir=DIR)` (and
`--cache_dir=DIR` of the CelebA experiment) reads without downloading. See
`raw_celeba_files` for the raw copy it reads and `celeba_sqlite` for the
format and the splits. The flags carry prefixes so that they never collide
with those of the experiment binaries.
"""

from collections.abc import Sequence

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.celeba_smile import raw_celeba_lib

_RAW_IMAGE_DIR = flags.DEFINE_string(
    'raw_image_dir', None, "CelebA's img_align_celeba directory of JPEGs "
    '(any subset of them).')
_RAW_ATTR_FILE = flags.DEFINE_string(
    'raw_attr_file', None, "CelebA's list_attr_celeba.txt.")
_RAW_IDENTITY_FILE = flags.DEFINE_string(
    'raw_identity_file', None, "CelebA's identity_CelebA.txt.")
_SQLITE_OUTPUT_DIR = flags.DEFINE_string(
    'sqlite_output_dir', None, 'Directory to write celeba.sqlite to (created '
    'if missing); pass it as --cache_dir to use the result.')
_MIN_IMAGES_PER_CLIENT = flags.DEFINE_integer(
    'min_images_per_client', 5, 'Drop identities with fewer images (LEAF and '
    'TFF use 5).', lower_bound=1)
_TEST_CLIENT_FRACTION = flags.DEFINE_float(
    'test_client_fraction', 0.1, 'Fraction of the clients in '
    'split_by_clients_test.')
_EXAMPLE_TEST_FRACTION = flags.DEFINE_float(
    'example_test_fraction', 0.1, "Fraction of each client's examples in "
    'split_by_examples_test.')
_SPLIT_SEED = flags.DEFINE_integer(
    'split_seed', 0, 'Seed of the client and example splits.', lower_bound=0)
_MAX_IMAGES = flags.DEFINE_integer(
    'max_images', None, 'If set, convert only the first this many images (by '
    'file name), e.g. for a quick trial.', lower_bound=1)

flags.mark_flags_as_required(
    ['raw_image_dir', 'raw_attr_file', 'raw_identity_file',
     'sqlite_output_dir'])


def _count(n: int, noun: str) -> str:
  return f'{n} {noun}' + ('' if n == 1 else 's')


def _summary_text(summary: raw_celeba_lib.ConversionSummary) -> str:
  db = summary.database
  num_clients = (db.split_by_clients_train_clients
                 + db.split_by_clients_test_clients)
  return (
      f'Wrote {summary.database_path}: {_count(summary.images_used, "image")}'
      f' of {_count(num_clients, "client")} ({summary.images_found} of the '
      f'{summary.images_listed} listed images found; '
      f'{summary.clients_dropped} of {summary.clients_found} identities '
      f'dropped for having fewer than {_MIN_IMAGES_PER_CLIENT.value} images). '
      'Split by clients: '
      f'{_count(db.split_by_clients_train_clients, "train client")} '
      f'({_count(db.split_by_clients_train_examples, "example")}) and '
      f'{_count(db.split_by_clients_test_clients, "test client")} '
      f'({_count(db.split_by_clients_test_examples, "example")}). '
      'Split by examples: '
      f'{_count(db.split_by_examples_train_examples, "train example")} and '
      f'{_count(db.split_by_examples_test_examples, "test example")} over '
      f'{_count(db.split_by_examples_train_clients, "client")}.')


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  summary = raw_celeba_lib.convert_raw_celeba(
      _RAW_IMAGE_DIR.value,
      _RAW_ATTR_FILE.value,
      _RAW_IDENTITY_FILE.value,
      _SQLITE_OUTPUT_DIR.value,
      min_images_per_client=_MIN_IMAGES_PER_CLIENT.value,
      test_client_fraction=_TEST_CLIENT_FRACTION.value,
      example_test_fraction=_EXAMPLE_TEST_FRACTION.value,
      seed=_SPLIT_SEED.value,
      max_images=_MAX_IMAGES.value)
  print(_summary_text(summary))
  print('Use it with tff.simulation.datasets.celeba.load_data(cache_dir='
        f'{_SQLITE_OUTPUT_DIR.value!r}), or pass '
        f'--cache_dir={_SQLITE_OUTPUT_DIR.value} to the CelebA experiment.')


if __name__ == '__main__':
  cli.run(main)
