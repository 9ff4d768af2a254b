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
"""Tests for `flops.local_step_flops` against hand-counted FLOPs."""

from absl.testing import absltest
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import flops
from tff_mixed.models import dense as dense_lib
from tff_mixed.models import dual_encoder


class LocalStepFlopsTest(absltest.TestCase):

  def test_linear_model_grows_by_the_hand_counted_matmuls_and_update(self):
    # Per input feature: the forward x w and the backward x^T g MatMuls
    # (2 B FLOPs each) and the SGD update of that weight (a Mul and a Sub).
    batch = 8
    small = flops.local_step_flops(
        dense_lib.build_linear_regression(100), batch)
    large = flops.local_step_flops(
        dense_lib.build_linear_regression(200), batch)
    self.assertEqual(large - small, 100 * (4 * batch + 2))
    self.assertGreaterEqual(small, 100 * (4 * batch + 2))

  def test_counts_inside_the_models_nested_tf_function(self):
    # The dense context layer alone is 3 MatMuls of 2 B d^2 FLOPs (forward,
    # and the gradients of its input and kernel). Profiling the model's own
    # graph, which calls predict_on_batch as a function, counts ~100.
    batch, d = 16, 32
    model = dual_encoder.build_dual_encoder(50, embedding_dim=d)
    self.assertGreater(flops.local_step_flops(model, batch),
                       3 * 2 * batch * d * d)

  def test_spreadout_on_the_client_costs_rows_times_d_squared(self):
    # `spreadout` sums the squared d x d Gram matrix of the columns of the
    # (rows - 1) movie rows: its forward MatMul and the two backward ones
    # cost 3 * 2 (rows - 1) d^2; normalizing the rows and the squared norms
    # are elementwise, a few flops per entry. The rows x rows Gram of the
    # definition (`pairwise_spreadout`) would cost 3 * 2 (rows - 1)^2 d.
    rows, d, batch = 301, 8, 16
    hinge = flops.local_step_flops(
        dual_encoder.build_dual_encoder(rows, embedding_dim=d), batch)
    both = flops.local_step_flops(
        dual_encoder.build_dual_encoder(rows, embedding_dim=d,
                                        spreadout_weight=0.5), batch)
    gram = 3 * 2 * (rows - 1) * d**2
    self.assertBetween(both - hinge, gram, gram + 40 * (rows - 1) * d)
    self.assertLess(both - hinge, 3 * 2 * (rows - 1)**2 * d / 10)

  def test_bad_arguments(self):
    model = dense_lib.build_linear_regression(3)
    with self.assertRaisesRegex(TypeError, '`model` must be'):
      flops.local_step_flops(object(), 4)
    for bad in (0, -1, 2.0, True):
      with self.assertRaisesRegex(ValueError, '`batch_size`'):
        flops.local_step_flops(model, bad)
    ragged = tff.learning.models.FunctionalModel(
        initial_weights=model.initial_weights,
        predict_on_batch_fn=model.predict_on_batch,
        loss_fn=model.loss,
        input_spec=(tf.TensorSpec([None, None], tf.float32),
                    tf.TensorSpec([None, 1], tf.float32)))
    with self.assertRaisesRegex(ValueError, 'only the batch dimension'):
      flops.local_step_flops(ragged, 4)


if __name__ == '__main__':
  absltest.main()
