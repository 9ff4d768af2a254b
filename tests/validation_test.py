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
"""Every bad builder argument raises a clear error naming the argument."""

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest
from absl.testing import parameterized

import tff_mixed
from tests import testing_utils as tu


def _objective():
  return tff_mixed.central_data_objective(tu.central_arrays())


def _build(builder, **overrides):
  """Calls a builder with valid arguments except `overrides`."""
  model = overrides.pop('model', tu.linear_model())
  objective = overrides.pop('central_objective', _objective())
  client_optimizer = overrides.pop('client_optimizer', tu.sgd(0.1))
  if builder in ('parallel_training', 'two_way'):
    kwargs = dict(central_optimizer=tu.sgd(0.1), central_batch_size=4,
                  client_steps=2)
  elif builder == 'one_way':
    kwargs = dict(central_batch_size=4)
  else:
    kwargs = dict(examples_per_client=2, client_batch_size=2)
  kwargs.update(overrides)
  fn = dict(parallel_training=tff_mixed.build_parallel_training,
            one_way=tff_mixed.build_one_way_gradient_transfer,
            two_way=tff_mixed.build_two_way_gradient_transfer,
            example_transfer=tff_mixed.build_example_transfer)[builder]
  return fn(model, objective, client_optimizer, **kwargs)


_ALL = ('parallel_training', 'one_way', 'two_way', 'example_transfer')
_MIXING = ('parallel_training', 'one_way', 'two_way')


class BuilderValidationTest(parameterized.TestCase):

  @parameterized.parameters(*_ALL)
  def test_model_must_be_functional(self, builder):
    with self.assertRaisesRegex(TypeError, '`model`'):
      _build(builder, model=lambda: None)

  @parameterized.parameters(*_ALL)
  def test_client_optimizer_must_be_tff_optimizer(self, builder):
    with self.assertRaisesRegex(TypeError, '`client_optimizer`'):
      _build(builder, client_optimizer=tf.keras.optimizers.SGD(0.1))

  @parameterized.parameters(*_ALL)
  def test_client_learning_rate_must_be_positive(self, builder):
    # TFF itself rejects negative SGD rates; a zero rate is ours to refuse.
    with self.assertRaisesRegex(ValueError, '`client_optimizer`.*positive'):
      _build(builder, client_optimizer=tu.sgd(0.0))

  @parameterized.parameters(*_ALL)
  def test_client_learning_rate_must_be_finite(self, builder):
    # Called what it is: inf is not finite (it is positive).
    with self.assertRaisesRegex(ValueError,
                                '`client_optimizer`.*finite learning rate'):
      _build(builder, client_optimizer=tu.sgd(float('inf')))

  @parameterized.parameters(*_ALL)
  def test_central_objective_type(self, builder):
    with self.assertRaisesRegex(TypeError, '`central_objective`'):
      _build(builder, central_objective=tu.central_arrays())

  @parameterized.parameters(*_MIXING)
  def test_mixing_weights_must_sum_to_one(self, builder):
    with self.assertRaisesRegex(ValueError, 'sum to 1'):
      _build(builder, federated_weight=0.5, central_weight=0.6)

  @parameterized.parameters(*_MIXING)
  def test_mixing_weight_range(self, builder):
    with self.assertRaisesRegex(ValueError, '`federated_weight`.*1.5'):
      _build(builder, federated_weight=1.5, central_weight=-0.5)
    with self.assertRaisesRegex(ValueError, '`central_weight`.*-0.5'):
      _build(builder, federated_weight=0.5, central_weight=-0.5)

  @parameterized.parameters(*_MIXING)
  def test_central_batch_size_positive(self, builder):
    with self.assertRaisesRegex(ValueError, '`central_batch_size`'):
      _build(builder, central_batch_size=0)

  @parameterized.parameters(*_ALL)
  def test_client_steps_positive(self, builder):
    with self.assertRaisesRegex(ValueError, '`client_steps`'):
      _build(builder, client_steps=0)

  @parameterized.parameters('parallel_training', 'two_way')
  def test_central_steps_positive(self, builder):
    with self.assertRaisesRegex(ValueError, '`central_steps`'):
      _build(builder, central_steps=-1)

  @parameterized.parameters('parallel_training', 'two_way')
  def test_central_optimizer_type(self, builder):
    with self.assertRaisesRegex(TypeError, '`central_optimizer`'):
      _build(builder, central_optimizer='sgd')

  @parameterized.parameters(*_MIXING)
  def test_server_optimizer_type(self, builder):
    with self.assertRaisesRegex(TypeError, '`server_optimizer`'):
      _build(builder, server_optimizer=0.1)

  @parameterized.parameters(*_MIXING)
  def test_central_clip_norm_positive(self, builder):
    with self.assertRaisesRegex(ValueError, '`central_clip_norm`'):
      _build(builder, central_clip_norm=0.0)

  @parameterized.parameters(*_ALL)
  def test_model_aggregator_type(self, builder):
    with self.assertRaisesRegex(TypeError, '`model_aggregator`'):
      _build(builder, model_aggregator='mean')

  @parameterized.parameters(*_ALL)
  def test_seed_non_negative(self, builder):
    with self.assertRaisesRegex(ValueError, '`seed`'):
      _build(builder, seed=-3)

  @parameterized.parameters(*_ALL)
  def test_client_weighting_type(self, builder):
    with self.assertRaisesRegex(TypeError, '`client_weighting`'):
      _build(builder, client_weighting='examples')

  @parameterized.parameters(*_ALL)
  def test_central_data_structure_must_match_model(self, builder):
    x, y = tu.central_arrays()
    bad = tff_mixed.central_data_objective((x[:, :1], y))
    with self.assertRaisesRegex(ValueError, '`central_objective`.*shape'):
      _build(builder, central_objective=bad)

  @parameterized.parameters(*_ALL)
  def test_central_data_dtype_must_match_model(self, builder):
    x, y = tu.central_arrays()
    bad = tff_mixed.central_data_objective((x.astype(np.float64), y))
    with self.assertRaisesRegex(ValueError, '`central_objective`.*dtype'):
      _build(builder, central_objective=bad)

  @parameterized.parameters(*_MIXING)
  def test_regularizer_that_does_not_fit_the_model(self, builder):
    bad = tff_mixed.central_regularizer(
        lambda weights, batch: tf.reduce_sum(weights[0][0] @ weights[0][0]))
    with self.assertRaisesRegex(ValueError, '`central_objective`.*fit'):
      _build(builder, central_objective=bad)

  @parameterized.parameters(*_MIXING)
  def test_regularizer_must_return_a_scalar(self, builder):
    bad = tff_mixed.central_regularizer(lambda weights, batch: weights[0][0])
    with self.assertRaisesRegex(ValueError, 'scalar'):
      _build(builder, central_objective=bad)

  def test_two_way_rejects_momentum(self):
    with self.assertRaisesRegex(ValueError, '`client_optimizer`.*plain SGD'):
      _build('two_way', client_optimizer=tff.learning.optimizers.build_sgdm(
          learning_rate=0.1, momentum=0.9))

  def test_two_way_rejects_adam(self):
    with self.assertRaisesRegex(ValueError, '`client_optimizer`.*plain SGD'):
      _build('two_way', client_optimizer=tff.learning.optimizers.build_adam(
          learning_rate=0.1))

  def test_two_way_needs_positive_federated_weight(self):
    with self.assertRaisesRegex(ValueError, '`federated_weight`'):
      _build('two_way', federated_weight=0.0, central_weight=1.0)

  def test_example_transfer_needs_examples(self):
    regularizer = tff_mixed.central_regularizer(
        lambda weights, batch: tf.reduce_sum(tf.square(weights[0][0])))
    with self.assertRaisesRegex(ValueError, '`central_objective`.*examples'):
      _build('example_transfer', central_objective=regularizer)

  def test_example_transfer_counts(self):
    with self.assertRaisesRegex(ValueError, '`examples_per_client`'):
      _build('example_transfer', examples_per_client=0)
    with self.assertRaisesRegex(ValueError, '`client_batch_size`'):
      _build('example_transfer', client_batch_size=-2)

  def test_parallel_training_needs_central_steps_or_client_steps(self):
    with self.assertRaisesRegex(ValueError, '`central_steps`'):
      _build('parallel_training', client_steps=None)

  def test_shared_data_arguments(self):
    common = dict(num_client_examples=12, client_batch_size=2,
                  warmup_steps=1, warmup_learning_rate=0.1,
                  warmup_batch_size=2)
    build = tff_mixed.build_fedavg_with_shared_data
    with self.assertRaisesRegex(ValueError, '`alpha`'):
      build(tu.linear_model(), _objective(), tu.sgd(0.1), beta=0.5, alpha=1.5,
            **common)
    with self.assertRaisesRegex(ValueError, '`beta`'):
      build(tu.linear_model(), _objective(), tu.sgd(0.1), beta=0.0, alpha=0.5,
            **common)
    with self.assertRaisesRegex(ValueError, 'central examples available'):
      build(tu.linear_model(), _objective(), tu.sgd(0.1), beta=5.0, alpha=0.5,
            **common)


class CentralObjectiveValidationTest(absltest.TestCase):

  def test_data_must_be_numpy(self):
    with self.assertRaisesRegex(TypeError, 'numpy'):
      tff_mixed.central_data_objective(([1.0, 2.0], [0.0, 1.0]))

  def test_lengths_must_agree(self):
    with self.assertRaisesRegex(ValueError, 'first dimension'):
      tff_mixed.central_data_objective(
          (np.zeros([3, 2], np.float32), np.zeros([4, 1], np.float32)))

  def test_data_must_not_be_empty(self):
    with self.assertRaisesRegex(ValueError, 'no examples'):
      tff_mixed.central_data_objective(
          (np.zeros([0, 2], np.float32), np.zeros([0, 1], np.float32)))

  def test_none_data_points_to_regularizer(self):
    with self.assertRaisesRegex(TypeError, 'central_regularizer'):
      tff_mixed.central_data_objective(None)

  def test_loss_fn_must_be_callable(self):
    with self.assertRaisesRegex(TypeError, '`loss_fn`'):
      tff_mixed.central_regularizer(3)


if __name__ == '__main__':
  absltest.main()
