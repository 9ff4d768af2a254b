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
"""The trainer binary rejects bad flags before any training starts."""

from absl import app
from absl import flags
from absl.testing import absltest
from absl.testing import flagsaver
from absl.testing import parameterized

from experiments.label_imbalance import train_main

FLAGS = flags.FLAGS


class TrainMainFlagsTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('cohort_larger_than_population',
       ['--clients_per_round=70', '--num_clients=60'], 'clients_per_round'),
      ('negative_learning_rate', ['--client_lr=-0.1'], 'client_lr'),
      ('zero_rounds', ['--total_rounds=0'], 'total_rounds'),
      ('unknown_scenario', ['--scenario=fedprox'], 'scenario'),
      ('clip_without_noise', ['--dp_clip_norm=1.0'], 'dp_clip_norm'),
      ('negative_noise', ['--dp_noise_multiplier=-1'], 'dp_noise_multiplier'),
      ('zero_checkpoint_period', ['--rounds_per_checkpoint=0'],
       'rounds_per_checkpoint'),
  )
  def test_bad_flag_is_rejected(self, argv, name):
    with flagsaver.flagsaver():
      with self.assertRaisesRegex(flags.Error, name):
        FLAGS(['train_main', '--experiment_name=x', *argv])

  def test_extra_arguments_are_rejected(self):
    with flagsaver.flagsaver():
      FLAGS(['train_main', '--experiment_name=x'])
      with self.assertRaisesRegex(app.UsageError, 'Unexpected arguments'):
        train_main.main(['train_main', 'extra'])


if __name__ == '__main__':
  absltest.main()
