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
"""The CelebA smile task's cache: the passes over the database, done once.

Two sequential passes over the training split write the central store (every
negative image) and the client store (every training image) as
`ExampleStore`s, count each celebrity's labels and note each celebrity's
rows in the client store in the order TFF's loader gives its examples; a
scan of the evaluation split keeps its images and labels as arrays. All of
it lives in a work directory, keyed by the database's size and modification
time, the label and the format (`prepare_cache`): a later run with the same
key starts at once, another key rebuilds it. The task
(`celeba_smile.build_task`) reads what this writes.
"""

import json
import os
from typing import Any, NamedTuple

from absl import logging
import numpy as np

from tff_mixed.core import example_store as example_store_lib
from tff_mixed.tasks import celeba_database
from tff_mixed.training import reports

NUM_FEATURES = celeba_database.NUM_FEATURES
TRAIN_SPLIT = celeba_database.TRAIN_SPLIT
TEST_SPLIT = celeba_database.TEST_SPLIT

_CACHE_FORMAT = 3


class Index(NamedTuple):
  """What the passes over the database learned (cached as JSON).

  `positive_rows` and `all_rows`: per celebrity, its positive (all) images'
  rows in the client store, in the order TFF's loader gives them.
  """

  train_positives: dict[str, int]
  train_negatives: dict[str, int]
  positive_rows: dict[str, list[int]]
  all_rows: dict[str, list[int]]


def _database_key(path: str, label: str) -> dict[str, Any]:
  stat = os.stat(path)
  return dict(format=_CACHE_FORMAT, database=os.path.abspath(path),
              size=stat.st_size, mtime_ns=stat.st_mtime_ns, label=label)


def _build_cache(path: str, label: str, work_dir: str) -> None:
  """One pass over the training split: central store and label counts."""
  positives, negatives = {}, {}
  seen = [0]

  def negative_batches():
    for client_ids, images, labels in celeba_database.scan_split(
        path, TRAIN_SPLIT, label):
      for cid, is_positive in zip(client_ids, labels):
        counts = positives if is_positive else negatives
        counts[cid] = counts.get(cid, 0) + 1
      seen[0] += len(labels)
      batch = celeba_database.PASS_BATCH
      if seen[0] % (50 * batch) < batch:
        logging.info('CelebA pass: %d training images read', seen[0])
      negative = ~labels
      if negative.any():
        yield (images[negative].reshape(-1, NUM_FEATURES),
               np.zeros([int(negative.sum()), 1], np.float32))

  example_store_lib.write_example_store(
      os.path.join(work_dir, 'central_store'), negative_batches())
  # A second pass: the client store of every training image, and each
  # celebrity's rows. Scan order within a celebrity is the order TFF's
  # loader reads its examples in (both follow the table's rows).
  positive_rows, all_rows = {}, {}

  def client_batches():
    row = 0
    for client_ids, images, labels in celeba_database.scan_split(
        path, TRAIN_SPLIT, label):
      for cid, is_positive in zip(client_ids, labels):
        all_rows.setdefault(cid, []).append(row)
        # Every celebrity has an entry, none for one without a positive: a
        # composite client may hold such a celebrity beside others.
        rows = positive_rows.setdefault(cid, [])
        if is_positive:
          rows.append(row)
        row += 1
      yield (images.reshape(-1, NUM_FEATURES),
             labels.astype(np.float32).reshape(-1, 1))

  example_store_lib.write_example_store(
      os.path.join(work_dir, 'client_store'), client_batches())
  index = dict(train_positives=positives, train_negatives=negatives,
               positive_rows=positive_rows, all_rows=all_rows)
  reports.atomic_write(os.path.join(work_dir, 'index.json'),
                       lambda f: json.dump(index, f))


def load_eval(path: str, label: str, work_dir: str):
  """The evaluation images and labels, from the cache (built if absent)."""
  images_path = os.path.join(work_dir, 'eval_images.npy')
  labels_path = os.path.join(work_dir, 'eval_labels.npy')
  if not (os.path.exists(images_path) and os.path.exists(labels_path)):
    parts = list(celeba_database.scan_split(path, TEST_SPLIT, label))
    images = np.concatenate([p[1] for p in parts])
    labels = np.concatenate([p[2] for p in parts]).astype(np.float32)
    reports.atomic_write(images_path, lambda f: np.save(f, images), 'wb')
    reports.atomic_write(labels_path, lambda f: np.save(f, labels), 'wb')
  return np.load(images_path, mmap_mode='r'), np.load(labels_path)


def prepare_cache(path: str, label: str, work_dir: str) -> Index:
  """Builds (or reuses) the central store, label counts and eval arrays."""
  os.makedirs(work_dir, exist_ok=True)
  key = _database_key(path, label)
  key_path = os.path.join(work_dir, 'key.json')
  try:
    with open(key_path) as f:
      cached_key = json.load(f)
  except (OSError, ValueError):
    cached_key = None
  if cached_key != key:
    logging.info('Preparing the CelebA central store and counts in %s (one '
                 'pass over %s; reused by later runs)', work_dir, path)
    # The key goes last: a pass interrupted midway is redone next time.
    if os.path.exists(key_path):
      os.remove(key_path)
    for name in ('eval_images.npy', 'eval_labels.npy'):
      if os.path.exists(os.path.join(work_dir, name)):
        os.remove(os.path.join(work_dir, name))
    _build_cache(path, label, work_dir)
    load_eval(path, label, work_dir)
    reports.atomic_write(key_path, lambda f: json.dump(key, f))
  with open(os.path.join(work_dir, 'index.json')) as f:
    index = json.load(f)
  return Index(**index)
