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
r"""Hybrid data under asynchrony: Feddle against the baselines, over seeds.

The guided-model-merging paper (Zhu et al., table 1): every method for each
setting (Dirichlet alpha x delay sigma; default the paper's 0.1, 0.3 x 5,
20) and seed. Client data: CIFAR-10 images from a JPEG `.npz`
(`--cifar10_npz`; not shipped: its licence is unclear) or scikit-learn's
bundled digits (`--data=digits`, offline). The out-of-domain server set is
the other data set (digits for CIFAR-10 clients; CIFAR-10 for digits
clients, when given). `--image_size=16` averages 2x2 pixel blocks, a quarter
of the convolution cost. `--cifar10_dir` (scripts/fetch_cifar10.sh) takes
all of CIFAR-10 instead, as the paper: the clients share the 50,000
training images, the server and the evaluation the 10,000 test images
(`cifar10_pngs.build_full_split`); `--pretrain_size=N` then starts every run
from a CNN pretrained on N training images that no client holds
(`pretrain_lib`; 0: from scratch). Given both, `--cifar10_npz` holds the
runs' images and `--cifar10_dir` only the pretraining's: the npz's images are
all from CIFAR-10's test set, so no pretraining image is in any split.

`--data=celeba` is the paper's table 2 instead: TFF's federated CelebA
(`celeba.sqlite` in `--celeba_cache_dir`), one client per identity, label
Smiling, faces area-averaged from 84x84 to `--image_size`; the server's and
the evaluation faces come from identities held apart from the clients
(`tff_mixed.tasks.celeba_hybrid`), so `--alphas` does not apply (the
columns are the delay levels); digits are the out-of-domain server set.

  python -m experiments.hybrid_async.hybrid_async_main \
      --cifar10_npz=cifar10_test_500perclass_jpeg.npz --num_clients=300 \
      --rounds=100 --seeds=0,1,2

Writes `metrics.csv` (accuracy per evaluation, method, setting and seed),
`feddle_diagnostics.csv` (per merge: share of negative coefficients and,
out-of-domain, the in-/out-of-domain coefficient-gradient cosines),
`accuracy.png`, `feddle_diagnostics.png`, `results.md` (the table: best of
the last 5 evaluations, mean and std over seeds) and `config.json` to
`--output_dir`. Finished runs are kept in `--output_dir/runs/` (or
`--runs_dir`), and the run under way saves its state after every round in
`--output_dir/checkpoints/`: running the same command again resumes an
interrupted experiment from its last round, or only rebuilds the report.
"""

from collections.abc import Sequence
import functools
import json

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.common import grouping
from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.hybrid_async import hybrid_async_lib
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_report
from experiments.hybrid_async import pretrain_lib
from experiments.hybrid_async import tune_lib
from tff_mixed.tasks import celeba_hybrid
from tff_mixed.tasks import cifar10_pngs
from tff_mixed.tasks import hybrid_images

_DEFAULTS = hybrid_config.Config()
RESULTS_SECTION = 'hybrid_async'

_DATA = flags.DEFINE_enum('data', 'cifar10', ['cifar10', 'digits', 'celeba'],
                          'The clients\' image set (celeba: one client per '
                          'identity, the paper\'s table 2).')
_CELEBA_CACHE_DIR = flags.DEFINE_string(
    'celeba_cache_dir', None, 'With --data=celeba: the directory of TFF\'s '
    'celeba.sqlite (default: TFF\'s ~/.tff, as celeba_database).')
_CIFAR10_NPZ = shared_flags.define_cifar10_npz_flag(None)
_CIFAR10_DIR = flags.DEFINE_string(
    'cifar10_dir', None, 'All of CIFAR-10 as PNGs (scripts/fetch_cifar10.sh)'
    ' instead of --cifar10_npz: the clients get the training images, the '
    'server, validation and evaluation the test images (--eval_size unused).')
_PRETRAIN_SIZE = flags.DEFINE_integer(
    'pretrain_size', 0, 'With --cifar10_dir: training images kept from the '
    'clients to pretrain the CNN on (a fixed draw); every run starts from '
    'its body with a new head. 0: from scratch. With --cifar10_npz too, '
    'the clients, server and evaluation get the npz\'s images (all from '
    'CIFAR-10\'s test set) and the directory serves only the pretraining.',
    lower_bound=0)
_PRETRAIN_EPOCHS = flags.DEFINE_integer('pretrain_epochs', 5, 'Pretraining '
                                        'epochs.', lower_bound=1)
_PRETRAIN_LR = flags.DEFINE_float('pretrain_lr', 1e-3, 'Pretraining\'s Adam '
                                  'learning rate (cosine-annealed).')
_PRETRAIN_DIR = flags.DEFINE_string(
    'pretrain_dir', 'outputs/pretrained_cnn', 'Cache of pretrained weights '
    '(one file per data, model and pretraining configuration).')
_METHODS = flags.DEFINE_list('methods', list(hybrid_config.METHODS),
                             f'Any of {", ".join(hybrid_config.METHODS)}.')
_SEEDS = shared_flags.define_seeds_flag(
    ['0', '1', '2'], 'Each draws the data split, initial model, sampling and '
    'delays.')
_ROUNDS = shared_flags.define_rounds_flag(_DEFAULTS.rounds)
_NUM_CLIENTS = shared_flags.define_num_clients_flag(_DEFAULTS.num_clients)
_CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(
    _DEFAULTS.clients_per_round)
_DELAY_STDS = shared_flags.define_delay_stds_flag(['5', '20'])
_ALPHAS = shared_flags.define_alphas_flag(['0.1', '0.3'])
_IMAGE_SIZE = shared_flags.define_image_size_flag(
    32, "Digits are resized to it; CelebA's 84x84 faces are area-averaged "
    'to it.')
_SERVER_SIZE = flags.DEFINE_integer(
    'server_size', _DEFAULTS.server_size, 'In-domain server examples.',
    lower_bound=1)
_EVAL_SIZE = flags.DEFINE_integer(
    'eval_size', _DEFAULTS.eval_size, 'Held-out examples (the server\'s '
    'come out of them; the rest evaluate).', lower_bound=2)
_VALIDATION_SIZE = flags.DEFINE_integer(
    'validation_size', _DEFAULTS.validation_size, 'Held-out examples set '
    'apart for hyperparameter search (never evaluated on here; pass the '
    'value tune_main used).', lower_bound=0)
_SELECTED_JSON = flags.DEFINE_string(
    'selected_json', None, 'selected.json of tune_main: run every method at '
    'its selected hyperparameters (the file\'s client values for all) and '
    'report them beside the results.')
_CLIENT_EPOCHS = flags.DEFINE_integer(
    'client_epochs', _DEFAULTS.client_epochs, 'Local epochs (the paper\'s '
    'protocol, with --client_steps=0).', lower_bound=1)
_CLIENT_STEPS = shared_flags.define_client_steps_flag(
    _DEFAULTS.client_steps, 'Fixed, instead of --client_epochs (the earlier '
    'protocol); 0: train epochs.')
_CLIENT_BATCH_SIZE = shared_flags.define_client_batch_size_flag(
    _DEFAULTS.client_batch_size)
_CLIENT_OPTIMIZER = flags.DEFINE_enum(
    'client_optimizer', _DEFAULTS.client_optimizer,
    list(hybrid_config.CLIENT_OPTIMIZERS), 'Local optimizer (LoAdaBoost: SGD).')
_CLIENT_LR = shared_flags.define_client_lr_flag(_DEFAULTS.client_lr)
_LOADABOOST_EPOCHS = flags.DEFINE_integer(
    'loadaboost_epochs', _DEFAULTS.loadaboost_epochs, 'LoAdaBoost\'s E (even;'
    ' clients train E/2 to 3E/2 epochs of K / E batches).')
_LOADABOOST_STEPS = flags.DEFINE_integer(
    'loadaboost_steps', _DEFAULTS.loadaboost_steps, 'LoAdaBoost\'s K when '
    'the other clients train epochs (--client_steps=0).', lower_bound=1)
_LOADABOOST_LR = flags.DEFINE_float(
    'loadaboost_lr', _DEFAULTS.loadaboost_lr, 'LoAdaBoost\'s SGD learning '
    'rate.')
_ID_PROBE_SIZE = flags.DEFINE_integer(
    'id_probe_size', _DEFAULTS.id_probe_size, 'In-domain examples probing '
    'the alignment of feddle_ood\'s coefficient gradient (diagnostic only).',
    lower_bound=1)
_SERVER_LR = flags.DEFINE_float('server_lr', _DEFAULTS.server_lr,
                                'eta_g of FedBuff, CA2FL, Feddle\'s fallback.')
_BUFFER_SIZE = flags.DEFINE_integer('buffer_size', _DEFAULTS.buffer_size,
                                    'M of FedBuff, CA2FL, Feddle.',
                                    lower_bound=1)
_FEDASYNC_ALPHA = flags.DEFINE_float('fedasync_alpha',
                                     _DEFAULTS.fedasync_alpha,
                                     'FedAsync mixing weight.')
_FEDASYNC_A = flags.DEFINE_float(
    'fedasync_a', _DEFAULTS.fedasync_a, 'FedAsync\'s adaptive constant a: '
    'staleness weight (1 + staleness)^-a.', lower_bound=0.0)
_FEDASYNC_STALENESS_UNIT = flags.DEFINE_enum(
    'fedasync_staleness_unit', _DEFAULTS.fedasync_staleness_unit,
    ['server_steps', 'rounds'], 'What FedAsync\'s staleness counts: '
    'server_steps (Xie et al.: server model updates since the client was '
    'sent the model, one per arrival) or rounds (runs before 2026-11-26).')
_FEDBUFF_STALENESS_EXPONENT = flags.DEFINE_float(
    'fedbuff_staleness_exponent', _DEFAULTS.fedbuff_staleness_exponent,
    'p of FedBuff\'s update weights (1 + staleness)^-p in fedbuff, fed_ft '
    'and feddf: 0 (the guided-merging paper\'s plain mean) or 0.5 (Nguyen '
    'et al.\'s 1/sqrt(1 + staleness)).', lower_bound=0.0)
_SERVER_STEPS = flags.DEFINE_integer(
    'server_steps', _DEFAULTS.server_steps, 'Server SGD steps per merge '
    '(Center, Fed+FT, HFCL, FedDF).', lower_bound=0)
_SERVER_EPOCHS = flags.DEFINE_integer(
    'server_epochs', _DEFAULTS.server_epochs, 'Server epochs per merge '
    '(Center, Fed+FT, HFCL, FedDF; the paper\'s unit); 0: --server_steps '
    'batches.', lower_bound=0)
_CENTER_ONCE = flags.DEFINE_bool(
    'center_once', _DEFAULTS.center_once, 'Center trains its --server_epochs '
    'once, at the first round, then holds its model (the paper\'s one '
    'centrally trained model); --nocenter_once trains them every round, as '
    'tables made before 2026-11-26 did.')
_SERVER_SGD_LR = flags.DEFINE_float(
    'server_sgd_lr', _DEFAULTS.server_sgd_lr, 'Learning rate of server SGD '
    '(Center, Fed+FT, HFCL, FedDF).')
_FEDDLE_STEPS = flags.DEFINE_integer(
    'feddle_search_steps', _DEFAULTS.feddle_search_steps,
    'Coefficient search steps.', lower_bound=0)
_SERVER_OPTIMIZER = flags.DEFINE_enum(
    'server_optimizer', _DEFAULTS.server_optimizer,
    list(hybrid_config.CLIENT_OPTIMIZERS),
    'Server training\'s optimizer (Center, '
    'Fed+FT, HFCL, FedDF); Adam\'s rate is cosine-annealed over a round.')
_FEDDLE_OPTIMIZER = flags.DEFINE_enum(
    'feddle_search_optimizer', _DEFAULTS.feddle_search_optimizer,
    list(hybrid_config.SEARCH_OPTIMIZERS),
    'Feddle\'s coefficient search optimizer: '
    'scaled_sgd takes steps of --feddle_search_lr / sum_m |abar_m|^2 (the '
    'paper\'s rate, of order 1 / (L sum_m |a_m|^2)); sgd and adam take '
    '--feddle_search_lr as it is.')
_FEDDLE_EPOCHS = flags.DEFINE_integer(
    'feddle_search_epochs', _DEFAULTS.feddle_search_epochs,
    'Coefficient search epochs over the server set (the paper\'s unit); 0: '
    '--feddle_search_steps batches.', lower_bound=0)
_FEDDLE_LR = flags.DEFINE_float('feddle_search_lr',
                                _DEFAULTS.feddle_search_lr,
                                'Coefficient search learning rate (0 keeps '
                                'FedBuff\'s coefficients c\').',
                                lower_bound=0.0)
_FEDDLE_ATLAS = flags.DEFINE_integer(
    'feddle_atlas_size', _DEFAULTS.feddle_atlas_size,
    'Anchors in Feddle\'s atlas; 0: twice --clients_per_round (the '
    'paper\'s choice), and at least FedBuff\'s buffer.', lower_bound=0)
_CONV_FILTERS = flags.DEFINE_list(
    'conv_filters', [str(f) for f in _DEFAULTS.conv_filters],
    'Filters of the 3 conv layers.')
_DENSE_UNITS = flags.DEFINE_integer('dense_units', _DEFAULTS.dense_units,
                                    'Hidden dense units.', lower_bound=1)
_EVAL_EVERY = shared_flags.define_eval_every_flag(_DEFAULTS.eval_every)
_OUTPUT_DIR = shared_flags.define_output_dir_flag('outputs/hybrid_async')
_RUNS_DIR = flags.DEFINE_string(
    'runs_dir', '', 'Where finished runs are kept (small JSON files; '
    'default --output_dir/runs): a directory in the repository keeps them '
    'beyond the machine, e.g. docs/results/hybrid_async_tuned/runs.')
_EARLIER_RUNS = flags.DEFINE_string(
    'earlier_runs', '', 'A file of runs made under an earlier protocol '
    '(hybrid_records.save_earlier_runs): the section says what changed '
    'for their methods, then and now.')
_REPORT_ONLY = shared_flags.define_report_only_flag(
    'Here: the table, files and RESULTS section from the runs kept in '
    '--runs_dir (a run not kept is left out; the table says how many seeds '
    'each cell has).')
_RESULTS = results_lib.define_results_flags(RESULTS_SECTION)
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
# The shared bound is the loosest any binary takes; the CNN here takes
# images of at least 8 pixels a side (tff_mixed.models.cnn.MIN_INPUT_SIZE).
shared_flags.require_at_least(_IMAGE_SIZE, 8)


@functools.lru_cache(maxsize=None)
def _images(name: str, size: int):
  """Decoded once per run of the binary (every seed and setting reuse it)."""
  images = hybrid_images
  if name == 'digits':
    return images.load_digits_images(size=size, channels=3)
  if name == 'celeba':
    return celeba_hybrid.load_identity_images(_CELEBA_CACHE_DIR.value, size)
  x, y = images.load_cifar10_npz(_CIFAR10_NPZ.value)
  if x.shape[1] % size:
    raise ValueError(f'--image_size={size} must divide CIFAR-10\'s '
                     f'{x.shape[1]} pixels.')
  return images.downsample_images(x, x.shape[1] // size), y


def _celeba_data(config: 'hybrid_config.Config', seed: int):
  """The paper's table 2 data: a client per CelebA identity."""
  size = _IMAGE_SIZE.value
  split = celeba_hybrid.build_identity_split(
      _images('celeba', size), num_clients=config.num_clients,
      server_size=config.server_size, eval_size=config.eval_size, seed=seed,
      validation_size=config.validation_size)
  return hybrid_config.Data(split, *_images('digits', size),
                            f'clients: {split.description}; out-of-domain '
                            'server set: scikit-learn digits')


@functools.lru_cache(maxsize=None)
def _full_cifar10(size: int):
  """`cifar10_pngs.load_stacked` at `size`, decoded once per run."""
  x, y, num_train = cifar10_pngs.load_stacked(_CIFAR10_DIR.value)
  if x.shape[1] % size:
    raise ValueError(f'--image_size={size} must divide 32.')
  if size != x.shape[1]:
    x = hybrid_images.downsample_images(x, x.shape[1] // size)
  return x, y, num_train


@functools.lru_cache(maxsize=None)
def _pretrained(size: int, conv_filters, dense_units: int):
  x, y, num_train = _full_cifar10(size)
  if _PRETRAIN_SIZE.value > num_train:
    raise ValueError(f'--pretrain_size={_PRETRAIN_SIZE.value} exceeds the '
                     f'{num_train} training images of --cifar10_dir.')
  return pretrain_lib.pretrain_on_training_images(
      x, y, num_train, pretrain_lib.PretrainConfig(
          _PRETRAIN_SIZE.value, _PRETRAIN_EPOCHS.value, _PRETRAIN_LR.value),
      conv_filters=conv_filters, dense_units=dense_units,
      cache_dir=_PRETRAIN_DIR.value)


def load_data(config: 'hybrid_config.Config', seed: int, alpha: float):
  """The data of a seed and label skew, from the flags' image sets."""
  if _DATA.value == 'celeba':
    return _celeba_data(config, seed)
  images = hybrid_images
  size = _IMAGE_SIZE.value
  pretrain = _PRETRAIN_SIZE.value
  if _CIFAR10_DIR.value and _CIFAR10_NPZ.value and not pretrain:
    raise ValueError('Give one of --cifar10_npz and --cifar10_dir (both '
                     'only with --pretrain_size: the npz\'s images for the '
                     'runs, the directory\'s training images to pretrain '
                     'on).')
  if pretrain and not (_CIFAR10_DIR.value and _DATA.value == 'cifar10'):
    raise ValueError('--pretrain_size needs --data=cifar10 and '
                     '--cifar10_dir (it pretrains on training images).')
  # The clients' images from the full set, unless the npz gives them (its
  # images are all from the test set, so disjoint from any pretraining).
  full = bool(_CIFAR10_DIR.value) and not _CIFAR10_NPZ.value
  digits = _images('digits', size)
  cifar = _images('cifar10', size) if _CIFAR10_NPZ.value else None
  if full:  # Out of domain for digits clients: the test images.
    x, y, num_train = _full_cifar10(size)
    cifar = x[num_train:], y[num_train:]
  if _DATA.value == 'cifar10':
    if cifar is None:
      raise ValueError('--data=cifar10 needs --cifar10_npz or --cifar10_dir '
                       '(CIFAR-10 is not shipped); or run offline with '
                       '--data=digits.')
    main, ood, names = cifar, digits, ('CIFAR-10', 'scikit-learn digits')
  else:
    main, ood, names = digits, cifar, ('scikit-learn digits', 'CIFAR-10')
  if ood is None and any(
      m in hybrid_config.OOD_METHODS for m in _METHODS.value):
    raise ValueError(
        f'{", ".join(hybrid_config.OOD_METHODS)} need an out-of-domain '
        'server set: pass --cifar10_npz, or leave them out of '
        '--methods.')
  start, start_text = None, ''
  if full and _DATA.value == 'cifar10':
    split = cifar10_pngs.build_full_split(
        x, y, num_train, num_clients=config.num_clients, alpha=alpha,
        server_size=config.server_size, seed=seed,
        validation_size=config.validation_size, pretrain_size=pretrain)
    start_text = '; start: from scratch'
  else:
    split = images.build_hybrid_split(
        main[0], main[1], num_clients=config.num_clients, alpha=alpha,
        server_size=config.server_size, eval_size=config.eval_size,
        seed=seed, validation_size=config.validation_size)
  if pretrain:
    start = _pretrained(size, config.conv_filters, config.dense_units)
    pretrain_lib.check_run_seed(start, seed)
    start_text = '; start: ' + pretrain_lib.describe(start, split.eval_x,
                                                     split.eval_y)
  description = (f'clients: {names[0]} at {size}x{size} '
                 f'({split.description}); out-of-domain server set: '
                 f'{names[1] if ood is not None else "none"}{start_text}')
  return hybrid_config.Data(
      split, *(ood if ood is not None else (None, None)), description,
      start.body if start else None)


def config_from_flags() -> tuple['hybrid_config.Config',
                                 list['hybrid_config.Setting'], list[int]]:
  """The flags' config, settings and seeds, validated."""
  if _DATA.value == 'celeba' and flags.FLAGS['alphas'].present:
    raise ValueError('--alphas does not apply to --data=celeba: its clients '
                     'are CelebA identities, not a Dirichlet label split '
                     '(the columns are --delay_stds).')
  alphas = ([hybrid_config.IDENTITIES] if _DATA.value == 'celeba'
            else _ALPHAS.value)
  seeds = cli.check_seeds('seeds', _SEEDS.value)
  try:
    filters = tuple(int(f) for f in _CONV_FILTERS.value)
    settings = [
        hybrid_config.Setting(a if a is hybrid_config.IDENTITIES else float(a),
                              float(d))
        for a in alphas
        for d in _DELAY_STDS.value
    ]
  except ValueError as e:
    raise ValueError('--conv_filters takes integers, --alphas '
                     f'and --delay_stds numbers: {e}') from None
  config = hybrid_config.Config(
      rounds=_ROUNDS.value, num_clients=_NUM_CLIENTS.value,
      clients_per_round=_CLIENTS_PER_ROUND.value,
      delay_std=settings[0].delay_std if settings else 0.0,
      alpha=settings[0].alpha if settings else 0.0,
      server_size=_SERVER_SIZE.value,
      eval_size=_EVAL_SIZE.value, client_steps=_CLIENT_STEPS.value,
      client_epochs=_CLIENT_EPOCHS.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      client_optimizer=_CLIENT_OPTIMIZER.value, client_lr=_CLIENT_LR.value,
      server_lr=_SERVER_LR.value, buffer_size=_BUFFER_SIZE.value,
      fedasync_alpha=_FEDASYNC_ALPHA.value, fedasync_a=_FEDASYNC_A.value,
      fedasync_staleness_unit=_FEDASYNC_STALENESS_UNIT.value,
      fedbuff_staleness_exponent=_FEDBUFF_STALENESS_EXPONENT.value,
      server_steps=_SERVER_STEPS.value, server_epochs=_SERVER_EPOCHS.value,
      center_once=_CENTER_ONCE.value,
      server_sgd_lr=_SERVER_SGD_LR.value,
      server_optimizer=_SERVER_OPTIMIZER.value,
      feddle_search_optimizer=_FEDDLE_OPTIMIZER.value,
      feddle_search_steps=_FEDDLE_STEPS.value,
      feddle_search_epochs=_FEDDLE_EPOCHS.value,
      feddle_search_lr=_FEDDLE_LR.value,
      feddle_atlas_size=_FEDDLE_ATLAS.value,
      loadaboost_epochs=_LOADABOOST_EPOCHS.value,
      loadaboost_steps=_LOADABOOST_STEPS.value,
      loadaboost_lr=_LOADABOOST_LR.value,
      id_probe_size=_ID_PROBE_SIZE.value, conv_filters=filters,
      dense_units=_DENSE_UNITS.value, eval_every=_EVAL_EVERY.value,
      validation_size=_VALIDATION_SIZE.value)
  if not settings:
    raise ValueError('--alphas and --delay_stds must be non-empty.')
  hybrid_config.validate(config, _METHODS.value, settings, seeds)
  return config, settings, seeds


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  config, settings, seeds = config_from_flags()
  earlier = None
  if _EARLIER_RUNS.value:
    with open(_EARLIER_RUNS.value) as f:
      earlier = json.load(f)
  overrides, searched = None, None
  if _SELECTED_JSON.value:
    selected = tune_lib.read_selected(_SELECTED_JSON.value)
    config = config._replace(**selected.client)
    # FedBuff's values also configure the methods built on it
    # (`hybrid_methods.method_config`), whether or not FedBuff runs.
    built_on_fedbuff = any(
        m in hybrid_config.FEDBUFF_BASED for m in _METHODS.value)
    overrides = {m: v for m, v in selected.methods.items()
                 if m in _METHODS.value
                 or (m == hybrid_config.FEDBUFF and built_on_fedbuff)}
    if selected.client and hybrid_config.FEDAVG in _METHODS.value:
      # Already every method's: listed on the row of the method searched.
      overrides[hybrid_config.FEDAVG] = dict(selected.client)
    searched = selected.searched
  if _DATA.value == 'celeba':
    # Whether a seed leaves enough identities for the clients depends on
    # its draw: check every seed before any training.
    for seed in seeds:
      load_data(config, seed, hybrid_config.IDENTITIES)
  # The split is drawn per seed and alpha inside run_experiment's loop.
  result = hybrid_async_lib.run_experiment(
      lambda seed, alpha: load_data(config, seed, alpha), config,
      methods=_METHODS.value, seeds=seeds, output_dir=_OUTPUT_DIR.value,
      settings=settings, clients_per_group=_CLIENTS_PER_GROUP.value,
      overrides=overrides, runs_dir=_RUNS_DIR.value or None,
      report_only=_REPORT_ONLY.value)
  results_lib.publish(
      result.table, result.files, _RESULTS,
      module='experiments.hybrid_async.hybrid_async_main',
      markdown_fn=functools.partial(hybrid_report.results_markdown, result,
                                    searched=searched, earlier=earlier),
      after=RESULTS_SECTION)


if __name__ == '__main__':
  cli.run(main)
