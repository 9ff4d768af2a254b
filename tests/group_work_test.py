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
"""The group work composed with the group adapters, alone.

`group_work.build_group_components` gives the group client work what the
group adapters add (a `GroupAggregator`'s member records), and hands the
process the per-client distributor and aggregator they wrap, whose
`client_parameters` the process broadcasts. The numbers of a grouped round
against the per-client round are in client_groups_test.py.
"""

from absl.testing import absltest
import numpy as np
import tensorflow_federated as tff

from tff_mixed.core import aggregators
from tff_mixed.core import client_work
from tff_mixed.core import distributors
from tff_mixed.core import model_types
from tff_mixed.simulation import client_groups
from tff_mixed.simulation import group_aggregation
from tff_mixed.simulation import group_work

from tests import testing_utils as tu


def _parts():
  model = tu.linear_model()
  trainable_type = model_types.weights_type(model).trainable
  config = client_work.ClientWorkConfig(
      weighting=tff.learning.ClientWeighting.NUM_EXAMPLES, num_steps=2)
  groups = client_groups.ClientGroups(
      client_groups.array_dataset_fn(tu.client_arrays(sizes=(3, 4)),
                                     lambda d: d.batch(2)), np.int32)
  return model, trainable_type, config, groups


class BuildGroupComponentsTest(absltest.TestCase):

  def test_a_group_aggregator_adds_its_parameters_to_the_group_work(self):
    model, trainable_type, config, groups = _parts()
    broadcast = distributors.build_broadcast_distributor(model, False)
    clipping = tff.aggregators.clipping_factory(
        1.0, tff.aggregators.MeanFactory())
    adapter = group_aggregation.build_group_aggregator(clipping,
                                                       trainable_type)
    self.assertIsInstance(adapter, group_aggregation.GroupAggregator)

    distributor, work, aggregator = group_work.build_group_components(
        model, broadcast, adapter, config, tu.sgd(0.1), groups)

    # The process gets the per-client parts; the aggregator names what it
    # broadcasts, and the group work takes it after the distribution.
    self.assertIs(distributor, broadcast)
    self.assertIs(aggregator, adapter.aggregator)
    self.assertIs(aggregator.client_parameters,
                  adapter.member_records.parameters)
    parameter = work.type_signature.parameter
    self.assertLen(parameter, len(broadcast.client_types) + 2)
    self.assertEqual(parameter[len(broadcast.client_types)],
                     adapter.member_records.parameters_type)
    self.assertEqual(parameter[len(parameter) - 1], groups.group_type)
    # Each group uploads its members' summed records.
    self.assertNotEmpty(work.type_signature.result.records)

  def test_a_plain_mean_passes_through_without_parameters(self):
    model, trainable_type, config, groups = _parts()
    broadcast = distributors.build_broadcast_distributor(model, False)
    mean = aggregators.build_mean_aggregator(tff.aggregators.MeanFactory(),
                                             trainable_type)
    distributor, work, aggregator = group_work.build_group_components(
        model, broadcast, mean, config, tu.sgd(0.1), groups)
    self.assertIs(distributor, broadcast)
    self.assertIs(aggregator, mean)
    self.assertIsNone(aggregator.client_parameters)
    parameter = work.type_signature.parameter
    self.assertLen(parameter, len(broadcast.client_types) + 1)
    self.assertEmpty(work.type_signature.result.records)
    # Every output says how many clients its probe values stand for.
    self.assertEqual(work.type_signature.result.probe_weight,
                     tff.TensorType(np.float32))


if __name__ == '__main__':
  absltest.main()
