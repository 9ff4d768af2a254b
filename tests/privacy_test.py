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
"""Privacy by type: client data reaches the server only through aggregation.

Static checks on the compiled `next` computations: every intrinsic that takes
a CLIENTS-placed value and returns a SERVER-placed one must be an aggregation,
and gradient transfer must upload exactly what TFF's FedAvg uploads
(arXiv:2205.13655, appendix A.2: no extra upload, no extra leakage vector).
"""

import collections

import numpy as np
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tests import testing_utils as tu

# Intrinsics that combine client values into one server value.
_AGGREGATIONS = frozenset({
    'federated_aggregate', 'federated_mean', 'federated_weighted_mean',
    'federated_sum', 'federated_secure_sum', 'federated_secure_sum_bitwidth',
    'federated_secure_modular_sum',
})


def _placements(type_spec) -> set:
  found = set()

  def visit(t):
    if isinstance(t, tff.FederatedType):
      found.add(t.placement)
    elif isinstance(t, tff.StructType):
      for i in range(len(t)):
        visit(t[i])
    elif isinstance(t, tff.FunctionType):
      if t.parameter is not None:
        visit(t.parameter)
      visit(t.result)

  visit(type_spec)
  return found


def _intrinsics(computation):
  """All intrinsic building blocks in a computation's compiled form."""
  found = []

  def visit(block):
    if isinstance(block, tff.framework.Intrinsic):
      found.append(block)
    for child in block.children():
      visit(child)

  visit(computation.to_building_block())
  return found


def client_to_server_uploads(computation):
  """Returns (uri, uploaded client type) of every CLIENTS -> SERVER intrinsic."""
  uploads = []
  for intrinsic in _intrinsics(computation):
    signature = intrinsic.type_signature
    if not isinstance(signature, tff.FunctionType):
      continue
    parameter = signature.parameter
    if (parameter is not None and tff.CLIENTS in _placements(parameter)
        and tff.SERVER in _placements(signature.result)):
      uploads.append((intrinsic.uri, str(parameter)))
  return uploads


def assert_only_aggregations(uploads):
  for uri, uploaded in uploads:
    if uri not in _AGGREGATIONS:
      raise AssertionError(f'{uploaded} leaves clients via {uri}')


def _processes():
  model = tu.linear_model()
  objective = tff_mixed.central_data_objective(tu.central_arrays())
  sgd = tu.sgd
  return collections.OrderedDict(
      parallel_training=tff_mixed.build_parallel_training(
          model, objective, sgd(0.1), sgd(0.1), central_batch_size=4,
          central_steps=2),
      one_way=tff_mixed.build_one_way_gradient_transfer(
          model, objective, sgd(0.1), central_batch_size=4),
      two_way=tff_mixed.build_two_way_gradient_transfer(
          model, objective, sgd(0.1), sgd(0.1), central_batch_size=4,
          client_steps=2),
      example_transfer=tff_mixed.build_example_transfer(
          model, objective, sgd(0.1), examples_per_client=3,
          client_batch_size=2),
  )


class PrivacyByTypeTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.processes = _processes()
    cls.fed_avg = tff.learning.algorithms.build_weighted_fed_avg(
        tu.linear_model(), client_optimizer_fn=tu.sgd(0.1))

  def test_client_values_reach_server_only_through_aggregation(self):
    for name, process in self.processes.items():
      with self.subTest(name):
        uploads = client_to_server_uploads(process.next)
        self.assertNotEmpty(uploads)
        assert_only_aggregations(uploads)

  def test_gradient_transfer_uploads_what_fed_avg_uploads(self):
    expected = sorted(t for _, t in client_to_server_uploads(self.fed_avg.next))
    for name in ('parallel_training', 'one_way', 'two_way'):
      with self.subTest(name):
        got = sorted(
            t for _, t in client_to_server_uploads(self.processes[name].next))
        self.assertEqual(got, expected)

  def test_diagnostics_add_exactly_one_declared_upload(self):
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        central_batch_size=4, with_diagnostics=True)
    base = client_to_server_uploads(self.processes['one_way'].next)
    with_diagnostics = client_to_server_uploads(process.next)
    self.assertLen(with_diagnostics, len(base) + 1)
    extra = collections.Counter(with_diagnostics) - collections.Counter(base)
    self.assertEqual(
        extra,
        {('federated_mean', '{<float32[2,1],float32[1]>}@CLIENTS'): 1})

  def test_checker_finds_uploads_and_rejects_non_aggregations(self):
    # The check must be able to fail: it finds the upload of a computation
    # that aggregates, and `assert_only_aggregations` rejects any other way
    # off the clients.

    @tff.federated_computation(tff.FederatedType(np.float32, tff.CLIENTS))
    def mean(value):
      return tff.federated_mean(value)

    uploads = client_to_server_uploads(mean)
    self.assertEqual(uploads, [('federated_mean', '{float32}@CLIENTS')])
    assert_only_aggregations(uploads)
    with self.assertRaisesRegex(AssertionError, 'federated_collect'):
      assert_only_aggregations([('federated_collect', '{float32}@CLIENTS')])


if __name__ == '__main__':
  absltest.main()
