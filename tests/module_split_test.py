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
"""Names that moved to smaller modules stay importable from their old ones.

MovieLens, CelebA and the remote runtime were split by concept, and the
character vocabulary moved below the model; callers that import the old
modules must get the very same objects.
"""

from absl.testing import absltest

from tff_mixed import remote
from tff_mixed import worker_processes
from tff_mixed.models import char_lm
from tff_mixed.models import char_vocabulary
from tff_mixed.tasks import celeba_database
from tff_mixed.tasks import celeba_smile
from tff_mixed.tasks import char_sequences
from tff_mixed.tasks import movielens
from tff_mixed.tasks import movielens_examples
from tff_mixed.tasks import movielens_ratings

_MOVED = (
    (movielens, movielens_ratings,
     ('FORMAT_AUTO', 'FORMAT_ML_1M', 'FORMAT_ML_100K', 'Ratings',
      'MalformedRatingsError', 'read_ratings')),
    (movielens, movielens_examples,
     ('PADDING_ID', 'timeline_examples', 'split_users', 'build_client_data',
      'build_rows_fn')),
    (celeba_smile, celeba_database,
     ('IMAGE_SHAPE', 'NUM_FEATURES', 'DATABASE_FILENAME', 'ATTRIBUTE_NAMES',
      'TRAIN_SPLIT', 'TEST_SPLIT', 'DataNotFoundError', 'default_cache_dir',
      'database_path', 'check_database', 'load_client_data')),
    (remote, worker_processes,
     ('WorkerHandle', 'worker_binary_path', 'start_local_workers',
      'stop_workers', 'local_workers')),
    (char_sequences, char_vocabulary,
     ('PAD_ID', 'OOV_ID', 'BOS_ID', 'EOS_ID', 'VOCAB_SIZE',
      'DEFAULT_SEQUENCE_LENGTH')),
)


class ModuleSplitTest(absltest.TestCase):

  def test_moved_names_are_the_same_objects(self):
    for old, new, names in _MOVED:
      for name in names:
        with self.subTest(module=old.__name__, name=name):
          self.assertIs(getattr(old, name), getattr(new, name))

  def test_char_lm_uses_the_vocabulary_not_the_task(self):
    self.assertIs(char_lm.char_vocabulary, char_vocabulary)
    self.assertFalse(hasattr(char_lm, 'char_sequences'))


if __name__ == '__main__':
  absltest.main()
