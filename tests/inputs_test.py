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
"""TFF's own inputs give the same rounds as a FunctionalModel and numpy data.

The reference is today's path: the linear FunctionalModel of
`testing_utils` and numpy central arrays. A one-layer Keras Dense model with
the same initial weights and the same (mean squared error) loss, given as a
`model_fn` of `tff.learning.models.from_keras_model` or as a Keras model
with its loss and input spec, and the central arrays given as a
`tf.data.Dataset`, must give the same weights and losses after 2 rounds of
Parallel Training (built through the registry, which converts the model at
its entry too) or 1-way Gradient Transfer (`core/inputs.py`).
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tests import testing_utils as tu
from tff_mixed.core import inputs

ROUNDS = 2
INPUT_SPEC = (tf.TensorSpec([None, tu.INPUT_DIM], tf.float32),
              tf.TensorSpec([None, 1], tf.float32))


def _keras_model(kernel_regularizer=None) -> tf.keras.Model:
  """Dense(1): the linear model of `testing_utils` with its initial weights."""
  w, b = tu.initial_weights()
  return tf.keras.Sequential([
      tf.keras.layers.Dense(
          1, input_shape=(tu.INPUT_DIM,),
          kernel_initializer=tf.keras.initializers.Constant(w),
          bias_initializer=tf.keras.initializers.Constant(b),
          kernel_regularizer=kernel_regularizer)])


def _model_fn():
  return tff.learning.models.from_keras_model(
      _keras_model(), loss=tf.keras.losses.MeanSquaredError(),
      input_spec=INPUT_SPEC)


def _run(algorithm, model, central_data):
  """Trainable weights, client and central loss after `ROUNDS` rounds."""
  objective = tff_mixed.central_data_objective(central_data)
  common = dict(client_steps=2, central_batch_size=4)
  if algorithm == 'parallel_training':
    process = tff_mixed.registry.build(
        algorithm, model, objective, client_lr=0.1, **common)
  else:
    process = tff_mixed.build_one_way_gradient_transfer(
        model, objective, tu.sgd(0.1), **common)
  datasets = tu.to_datasets(tu.client_arrays(), batch_size=2)
  state = process.initialize()
  for _ in range(ROUNDS):
    output = process.next(state, datasets)
    state = output.state
  return (tu.trainable(process, state),
          output.metrics['client_work']['train']['loss'],
          output.metrics['central']['loss'])


class SameRoundsTest(absltest.TestCase):
  """Each input kind against the FunctionalModel + numpy reference."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.reference = {
        name: _run(name, tu.linear_model(), tu.central_arrays())
        for name in ('parallel_training', 'one_way_gt')}

  def _assert_same(self, name, got):
    want = self.reference[name]
    for got_w, want_w in zip(got[0], want[0]):
      np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-5)

  def test_reference_moves_the_model(self):
    # Otherwise equal weights would prove nothing about training.
    for name, (weights, _, _) in self.reference.items():
      with self.subTest(name):
        self.assertGreater(
            np.abs(weights[0] - tu.initial_weights()[0]).max(), 1e-3)

  def test_model_fn_of_keras_variable_model(self):
    self._assert_same('parallel_training',
                      _run('parallel_training', _model_fn,
                           tu.central_arrays()))

  def test_keras_model_with_loss_and_input_spec(self):
    # The mean squared error over examples is the reference's `loss` metric.
    model = tff_mixed.functional_model(
        _keras_model(), loss=tf.keras.losses.MeanSquaredError(),
        input_spec=INPUT_SPEC, metrics_constructor=collections.OrderedDict(
            loss=tf.keras.metrics.MeanSquaredError))
    self._assert_same('one_way_gt',
                      _run('one_way_gt', model, tu.central_arrays()))

  def test_keras_model_reports_the_loss_without_a_metrics_constructor(self):
    # The loss metric is added as `from_keras_model` adds it (each batch's
    # mean weighted by its size), so it equals the reference's.
    model = tff_mixed.functional_model(
        _keras_model(), loss=tf.keras.losses.MeanSquaredError(),
        input_spec=INPUT_SPEC)
    self._assert_same('one_way_gt',
                      _run('one_way_gt', model, tu.central_arrays()))

  def test_keras_model_with_a_plain_dict_of_metrics(self):
    model = tff_mixed.functional_model(
        _keras_model(), loss=tf.keras.losses.MeanSquaredError(),
        input_spec=INPUT_SPEC,
        metrics_constructor={'mae': tf.keras.metrics.MeanAbsoluteError})
    self.assertSequenceEqual(
        list(model.finalize_metrics(model.initialize_metrics_state())),
        ['mae', 'loss', 'num_examples', 'num_batches'])
    self._assert_same('parallel_training',
                      _run('parallel_training', model, tu.central_arrays()))

  def test_dataset_central_data(self):
    x, y = tu.central_arrays()
    dataset = tf.data.Dataset.from_tensor_slices(
        collections.OrderedDict(x=x, y=y)).batch(3)
    self._assert_same('parallel_training',
                      _run('parallel_training', tu.linear_model(), dataset))


class CentralDataTest(absltest.TestCase):
  """`central_data`: a dataset's examples, read once into numpy arrays."""

  def test_examples_batches_and_mappings_give_the_arrays(self):
    x, y = tu.central_arrays()
    cases = dict(
        examples=(tf.data.Dataset.from_tensor_slices((x, y)), (x, y)),
        batches=(tf.data.Dataset.from_tensor_slices((x, y)).batch(3), (x, y)),
        mapping=(tf.data.Dataset.from_tensor_slices(
            collections.OrderedDict(x=x, y=y)).batch(5),
                 collections.OrderedDict(x=x, y=y)))
    for name, (dataset, want) in cases.items():
      with self.subTest(name):
        got = inputs.central_data(dataset)
        tf.nest.assert_same_structure(got, want)
        for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
          np.testing.assert_array_equal(g, w)

  def test_numpy_arrays_are_kept(self):
    arrays = tu.central_arrays()
    self.assertIs(inputs.central_data(arrays), arrays)

  def test_bad_datasets_are_refused(self):
    x, y = tu.central_arrays()
    with self.assertRaisesRegex(ValueError, 'infinite'):
      tff_mixed.central_data_objective(
          tf.data.Dataset.from_tensor_slices((x, y)).repeat())
    with self.assertRaisesRegex(ValueError, 'no examples'):
      tff_mixed.central_data_objective(
          tf.data.Dataset.from_tensor_slices((x, y)).take(0))
    ragged = tf.data.Dataset.from_tensor_slices(
        tf.ragged.constant([[1.0], [2.0, 3.0]]))
    with self.assertRaisesRegex(TypeError, 'dense tensors'):
      tff_mixed.central_data_objective(ragged)


class BadModelsTest(absltest.TestCase):
  """What `functional_model` refuses, naming what was passed."""

  def test_functional_model_is_kept(self):
    model = tu.linear_model()
    self.assertIs(tff_mixed.functional_model(model), model)

  def test_metrics_of_a_keras_model(self):
    def names(metrics_constructor):
      model = tff_mixed.functional_model(
          _keras_model(), loss=tf.keras.losses.MeanSquaredError(),
          input_spec=INPUT_SPEC, metrics_constructor=metrics_constructor)
      return list(model.finalize_metrics(model.initialize_metrics_state()))

    training = ['loss', 'num_examples', 'num_batches']
    self.assertEqual(names(None), training)
    self.assertEqual(names(tf.keras.metrics.MeanAbsoluteError),
                     ['mean_absolute_error'] + training)
    self.assertEqual(
        names(lambda: collections.OrderedDict(
            mae=tf.keras.metrics.MeanAbsoluteError())), ['mae'] + training)
    # A user's own `num_batches` is kept, not replaced.
    self.assertEqual(
        names(collections.OrderedDict(num_batches=tf.keras.metrics.Sum)),
        ['num_batches', 'loss', 'num_examples'])
    with self.assertRaisesRegex(TypeError, r"metrics_constructor\['mae'\]"):
      names({'mae': tf.keras.metrics.MeanAbsoluteError()})
    with self.assertRaisesRegex(TypeError, 'must be a no-arg callable'):
      names(3)

  def test_refused_models(self):
    mse = tf.keras.losses.MeanSquaredError()
    cases = dict(
        not_a_model=(lambda: tff_mixed.functional_model('dense'), TypeError,
                     'got str'),
        keras_without_loss=(lambda: tff_mixed.build_fedavg(
            _keras_model(), tu.sgd(0.1)), TypeError, 'needs its `loss`'),
        variable_model_instance=(
            lambda: tff_mixed.functional_model(_model_fn()), TypeError,
            'pass the no-arg `model_fn`'),
        not_keras_backed=(lambda: tff_mixed.functional_model(
            lambda: tff.learning.models.model_from_functional(
                tu.linear_model())), ValueError, 'not made by'),
        callable_of_other=(lambda: tff_mixed.functional_model(lambda: 3),
                           TypeError, 'callable returning int'),
        layer_losses=(lambda: tff_mixed.functional_model(
            _keras_model(tf.keras.regularizers.L2(0.1)), loss=mse,
            input_spec=INPUT_SPEC), ValueError, 'layer loss'),
        loss_for_functional=(lambda: tff_mixed.functional_model(
            tu.linear_model(), loss=mse), ValueError, 'has its own'),
        metric_instances=(lambda: tff_mixed.functional_model(
            lambda: tff.learning.models.from_keras_model(
                _keras_model(), loss=mse, input_spec=INPUT_SPEC,
                metrics=[tf.keras.metrics.MeanAbsoluteError()])),
                          ValueError, 'no-arg constructors'),
        # TFF's converter refuses it; the error names the model.
        batch_norm=(lambda: tff_mixed.functional_model(
            tf.keras.Sequential([
                tf.keras.layers.Dense(1, input_shape=(tu.INPUT_DIM,)),
                tf.keras.layers.BatchNormalization()]),
            loss=mse, input_spec=INPUT_SPEC), ValueError,
                    'cannot become a FunctionalModel'),
    )
    for name, (build, error, message) in cases.items():
      with self.subTest(name):
        with self.assertRaisesRegex(error, message):
          build()


if __name__ == '__main__':
  absltest.main()
