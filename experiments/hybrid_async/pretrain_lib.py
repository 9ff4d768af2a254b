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
"""A pretrained start for the hybrid experiment, cached on disk.

The guided-model-merging paper's main tables (Zhu et al., tables 1 and 2)
start every method from a backbone pretrained on ImageNet; its table 7
trains the small CNN from scratch. ImageNet is not available here, so the
stand-in is central pretraining on CIFAR-10 training images that no client
holds (`cifar10_pngs.pretrain_rows`, a draw with a fixed seed, so one
pretrained model serves every run seed):

*   `pretrain`: the CNN (`cnn.build_cnn`, the run's filters and dense
    units, initialized with `PretrainConfig.seed`) trains `epochs` passes
    over those images with `server_sgd.server_sgd` (Adam, its rate
    cosine-annealed over the whole training, batches reshuffled per epoch).
*   Every run then starts from a pretrained backbone with a new head: the
    body (the three convolutions and the hidden dense layer, the first
    `cnn.BODY_SIZE` arrays) is the pretrained one, the output layer is
    drawn from the run's seed as from scratch (`Data.initial_body` in
    `hybrid_runs.run_method`). That is how a pretrained backbone is
    used on a new task, and it keeps the seed's part in the starting model
    (seeds differ in their heads, not only in data, sampling and delays).
    Here the labels are the same as the pretraining ones, so keeping the
    pretrained head would start higher still; the new head makes the
    federated training learn the classifier, as the paper's methods do.
*   The weights are cached in `cache_dir` under a name derived from
    everything that determines them (`cache_key`: a sha256 of the
    pretraining images and labels, which covers the data, the image size
    and the draw, plus the model's shape and the training's
    hyperparameters), written atomically, and read back by later runs; a
    file whose stored key differs is refused.
"""

import hashlib
import json
import os
from typing import Any, NamedTuple

import numpy as np

from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from tff_mixed.asynchronous import server_sgd
from tff_mixed.models import cnn
from tff_mixed.tasks import cifar10_pngs
from tff_mixed.training import reports as reports_lib

# Bump when the training procedure changes, so old caches are not reused.
CACHE_VERSION = 1
# The pretraining's initial weights and batch order. Not a run seed: a run
# with seed s gets `cnn.build_cnn(seed=s)`'s head, so with s equal to this
# its "new" head would be the one the backbone was trained with, and start
# far above the other seeds' (`check_run_seed`).
PRETRAIN_SEED = 2**31 - 1


class PretrainConfig(NamedTuple):
  """Central pretraining: `size` training images, `epochs` passes."""

  size: int
  epochs: int = 5
  learning_rate: float = 1e-3
  batch_size: int = 32
  optimizer: str = 'adam'
  seed: int = PRETRAIN_SEED


class Pretrained(NamedTuple):
  """A pretrained model.

  Attributes:
    weights: All its trainable arrays, its own head included.
    key: `cache_key`'s dict.
    path: Its cache file.
    reused: Whether it was read back rather than trained.
    loss_before: Mean loss on the pretraining images before training.
    loss_after: ... and after.
  """
  weights: tuple[np.ndarray, ...]
  key: dict[str, Any]
  path: str
  reused: bool
  loss_before: float
  loss_after: float

  @property
  def body(self) -> tuple[np.ndarray, ...]:
    """The backbone runs start from (`cnn.BODY_SIZE` arrays)."""
    return self.weights[:cnn.BODY_SIZE]


def cache_key(x: np.ndarray, y: np.ndarray, config: PretrainConfig, *,
              conv_filters, dense_units: int, num_classes: int
              ) -> dict[str, Any]:
  """Everything that determines the pretrained weights."""
  digest = hashlib.sha256()
  digest.update(np.ascontiguousarray(x, np.float32).tobytes())
  digest.update(np.ascontiguousarray(y, np.int32).tobytes())
  return dict(
      version=CACHE_VERSION, data_sha256=digest.hexdigest(),
      image_shape=list(x.shape[1:]), examples=int(len(y)),
      conv_filters=[int(f) for f in conv_filters],
      dense_units=int(dense_units), num_classes=int(num_classes),
      **config._asdict())


def cache_path(cache_dir: str, key: dict[str, Any]) -> str:
  return os.path.join(cache_dir,
                      f'cnn_{hybrid_records.key_digest(key)}.npz')


def _read(path: str, key: dict[str, Any]) -> Pretrained:
  """The cached model at `path`; an error if its key is not `key`."""
  try:
    with np.load(path, allow_pickle=False) as npz:
      stored = json.loads(str(npz['key']))
      weights = tuple(npz[f'w{i}'] for i in range(cnn.NUM_WEIGHTS))
      losses = float(npz['loss_before']), float(npz['loss_after'])
  except (OSError, ValueError, KeyError) as e:
    raise ValueError(f'Pretrained weights {path!r} are unreadable ({e}); '
                     'remove the file to pretrain again.') from None
  if stored != key:
    differing = sorted(k for k in set(stored) | set(key)
                       if stored.get(k) != key.get(k))
    raise ValueError(
        f'Pretrained weights {path!r} were made with another configuration '
        f'({", ".join(differing)} differ); remove the file to pretrain '
        'again.')
  return Pretrained(weights, key, path, True, *losses)


def _write(path: str, pretrained: Pretrained) -> None:
  arrays = {f'w{i}': w for i, w in enumerate(pretrained.weights)}

  def write(f):
    np.savez(f, key=np.array(json.dumps(pretrained.key, sort_keys=True)),
             loss_before=np.float64(pretrained.loss_before),
             loss_after=np.float64(pretrained.loss_after), **arrays)

  reports_lib.atomic_write(path, write, mode='wb')


def pretrain(x: np.ndarray, y: np.ndarray, config: PretrainConfig, *,
             conv_filters, dense_units: int, num_classes: int,
             cache_dir: str) -> Pretrained:
  """The CNN trained on `(x, y)`, read from `cache_dir` if it is there.

  Raises:
    ValueError: If an argument is invalid, or the cache file of this key
      holds another key's weights or is unreadable.
  """
  if config.size != len(y) or config.epochs < 1:
    raise ValueError(f'{config} does not match {len(y)} images, or has no '
                     'epochs.')
  key = cache_key(x, y, config, conv_filters=conv_filters,
                  dense_units=dense_units, num_classes=num_classes)
  path = cache_path(cache_dir, key)
  if os.path.exists(path):
    return _read(path, key)
  model = cnn.build_cnn(input_shape=x.shape[1:], num_classes=num_classes,
                        conv_filters=conv_filters, dense_units=dense_units,
                        seed=config.seed)
  start = model.initial_weights[0]
  steps = config.epochs * server_sgd.steps_per_epoch(len(y),
                                                     config.batch_size)
  weights = server_sgd.server_sgd(
      model, start, x, y, steps=steps, batch_size=config.batch_size,
      learning_rate=config.learning_rate, seed=config.seed,
      optimizer=config.optimizer)
  evaluate = hybrid_runs.evaluate_fn(x, y)
  pretrained = Pretrained(tuple(np.asarray(w) for w in weights), key, path,
                          False, evaluate(start)['loss'],
                          evaluate(weights)['loss'])
  _write(path, pretrained)
  return pretrained


def pretrain_on_training_images(images: np.ndarray, labels: np.ndarray,
                                num_train: int, config: PretrainConfig, *,
                                conv_filters, dense_units: int,
                                cache_dir: str) -> Pretrained:
  """`pretrain` on the `config.size` training images that
  `cifar10_pngs.build_full_split` keeps from the clients (`images`,
  `labels`, `num_train` as it takes them)."""
  rows = cifar10_pngs.pretrain_rows(num_train, config.size)
  return pretrain(images[rows], labels[rows], config,
                  conv_filters=conv_filters, dense_units=dense_units,
                  num_classes=int(labels.max()) + 1, cache_dir=cache_dir)


def check_run_seed(pretrained: Pretrained, seed: int) -> None:
  """Refuses a run seed equal to the pretraining's (see `PRETRAIN_SEED`)."""
  if seed == pretrained.key['seed']:
    raise ValueError(f'Seed {seed} is the pretraining\'s own: its head '
                     'would be the one the backbone was trained with; use '
                     'another seed.')


def describe(pretrained: Pretrained, eval_x: np.ndarray,
             eval_y: np.ndarray) -> str:
  """The start, in words, with the pretrained model's evaluation accuracy."""
  c = pretrained.key
  accuracy = hybrid_runs.evaluate_fn(eval_x, eval_y)(
      pretrained.weights)['accuracy']
  return (f'pretrained on {c["size"]} disjoint training images '
          f'({c["epochs"]} epochs of {c["optimizer"]} at lr '
          f'{c["learning_rate"]:g}, batch {c["batch_size"]}; training loss '
          f'{pretrained.loss_before:.3f} -> {pretrained.loss_after:.3f}; '
          f'accuracy {100 * accuracy:.1f}% on the evaluation set), runs '
          'start from its body with a new head from their seed')
