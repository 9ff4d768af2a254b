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
(arXiv:2205.13655, appendix A.2: no extra upload, no extra leakage vector),
besides the sum of the clients' three counts every process reports (how
many clients, how many dropped as non-finite or without data).

With an `EmbeddingSelection` (the movie task, section 4.3) there is one more
way off the clients: `federated_select` takes each client's keys, which the
server (the select service) sees in order to send back those rows. What that
reveals is which rows a client needs this round: the ids (movies) in the
batches it will train on, at most `keys_per_client`, padded with row 0. The
checks pin that keys are the only client value `federated_select` takes and
that everything else still leaves only through aggregations.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from absl.testing import absltest

import tff_mixed
from tff_mixed.models import dual_encoder
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


def client_to_server_uploads(computation):
  """Returns (uri, uploaded client type) of every CLIENTS -> SERVER intrinsic."""
  uploads = []
  for intrinsic in tu.intrinsics(computation):
    signature = intrinsic.type_signature
    if not isinstance(signature, tff.FunctionType):
      continue
    parameter = signature.parameter
    if (parameter is not None and tff.CLIENTS in _placements(parameter)
        and tff.SERVER in _placements(signature.result)):
      uploads.append((intrinsic.uri, str(parameter)))
  return uploads


def counts_uploads(metrics_aggregator=tff.learning.metrics.sum_then_finalize):
  """The uploads of the clients' counts, aggregated by `metrics_aggregator`.

  What every process adds to FedAvg's uploads: the clients' three int32
  counts (metrics['client_work']['clients']), aggregated as the metrics are.
  """
  names = ('count', 'non_finite', 'without_data')
  aggregate = metrics_aggregator(
      collections.OrderedDict((n, tf.identity) for n in names))
  counts_type = collections.OrderedDict((n, np.int32) for n in names)

  @tff.federated_computation(tff.FederatedType(counts_type, tff.CLIENTS))
  def upload(counts):
    return aggregate(counts)

  return client_to_server_uploads(upload)


def assert_only_aggregations(uploads):
  for uri, uploaded in uploads:
    if uri not in _AGGREGATIONS:
      raise AssertionError(f'{uploaded} leaves clients via {uri}')


# Intrinsics that take CLIENTS-placed values and keep them at the clients.
_CLIENT_LOCAL = frozenset({
    'federated_map', 'federated_map_all_equal', 'federated_zip_at_clients',
})
# Intrinsics whose CLIENTS-placed argument (the keys) the server sees.
_SELECTS = frozenset({'federated_select', 'federated_secure_select'})


def client_value_uses(computation):
  """(uri, parameter type, result type) of every intrinsic given client values.

  Covers every way a CLIENTS-placed value is consumed, not only the intrinsics
  that return a SERVER-placed value: `federated_select` returns to the
  clients, yet its keys go to the server.
  """
  uses = []
  for intrinsic in tu.intrinsics(computation):
    signature = intrinsic.type_signature
    if not isinstance(signature, tff.FunctionType):
      continue
    if (signature.parameter is not None
        and tff.CLIENTS in _placements(signature.parameter)):
      uses.append((intrinsic.uri, signature.parameter, signature.result))
  return uses


def assert_clients_reveal_only_aggregates_and_keys(uses, keys_per_client):
  """Client values stay local, are aggregated, or are select keys.

  Args:
    uses: What `client_value_uses` returns.
    keys_per_client: The number of keys every client selects.

  Raises:
    AssertionError: If a client value reaches the server another way, or a
      `federated_select` takes any client value but int32 keys
      `[keys_per_client]`.
  """
  for uri, parameter, result in uses:
    if uri in _AGGREGATIONS:
      continue
    if uri in _CLIENT_LOCAL:
      if tff.SERVER in _placements(result):
        raise AssertionError(f'{uri} moves {parameter} to the server')
      continue
    if uri not in _SELECTS:
      raise AssertionError(f'{parameter} leaves clients via {uri}')
    keys_type = tff.FederatedType(
        tff.TensorType(np.int32, [keys_per_client]), tff.CLIENTS)
    client_members = [
        parameter[i] for i in range(len(parameter))
        if tff.CLIENTS in _placements(parameter[i])]
    if client_members != [keys_type] or parameter[0] != keys_type:
      raise AssertionError(
          f'{uri} takes client values {client_members}; only the keys '
          f'{keys_type} may go to the server')
    if _placements(result) != {tff.CLIENTS}:
      raise AssertionError(f'{uri} returns {result}, not rows at the clients')


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


_ROWS, _KEYS = 30, 12


def _selection_processes():
  """PT, 1-way and 2-way GT slicing a dual encoder's table per client."""
  model = dual_encoder.build_dual_encoder(_ROWS, 4, 3, seed=1)
  selection = dual_encoder.build_embedding_selection(_ROWS, _KEYS, 4, 3)
  spreadout = tff_mixed.central_regularizer(dual_encoder.spreadout_loss_fn,
                                            name='spreadout')
  sgd = tu.sgd
  common = dict(central_batch_size=1, client_steps=2,
                embedding_selection=selection)
  return collections.OrderedDict(
      parallel_training_select=tff_mixed.build_parallel_training(
          model, spreadout, sgd(0.1), sgd(0.1), **common),
      one_way_select=tff_mixed.build_one_way_gradient_transfer(
          model, spreadout, sgd(0.1), **common),
      two_way_select=tff_mixed.build_two_way_gradient_transfer(
          model, spreadout, sgd(0.1), sgd(0.1), **common),
  )


class PrivacyByTypeTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.processes = _processes()
    cls.select_processes = _selection_processes()
    cls.processes.update(cls.select_processes)
    cls.fed_avg = tff.learning.algorithms.build_weighted_fed_avg(
        tu.linear_model(), client_optimizer_fn=tu.sgd(0.1))

  def test_client_values_reach_server_only_through_aggregation(self):
    for name, process in self.processes.items():
      with self.subTest(name):
        uploads = client_to_server_uploads(process.next)
        self.assertNotEmpty(uploads)
        assert_only_aggregations(uploads)

  def test_gradient_transfer_uploads_what_fed_avg_uploads(self):
    # Besides FedAvg's uploads, one aggregate every process makes: the sum
    # of the clients' counts (metrics['client_work']['clients']), three
    # int32, no gradient.
    self.assertEqual(counts_uploads(), [(
        'federated_sum',
        '{<count=int32,non_finite=int32,without_data=int32>}@CLIENTS')])
    expected = sorted(
        t for _, t in client_to_server_uploads(self.fed_avg.next)
        + counts_uploads())
    for name in ('parallel_training', 'one_way', 'two_way'):
      with self.subTest(name):
        got = sorted(
            t for _, t in client_to_server_uploads(self.processes[name].next))
        self.assertEqual(got, expected)

  def test_select_path_reveals_only_keys_beyond_aggregates(self):
    # Rows of x (and, for gradient transfer, of g~_c) are selected by the
    # same keys: one select for PT, two for GT. The scatter-back upload
    # carries the keys again, inside its aggregation; with diagnostics
    # refused on this path, no probe gradient is uploaded.
    expected_selects = dict(parallel_training_select=1, one_way_select=2,
                            two_way_select=2)
    for name, process in self.select_processes.items():
      with self.subTest(name):
        uses = client_value_uses(process.next)
        assert_clients_reveal_only_aggregates_and_keys(uses, _KEYS)
        self.assertLen([u for u in uses if u[0] in _SELECTS],
                       expected_selects[name])
        uploads = client_to_server_uploads(process.next)
        self.assertNotEmpty(uploads)
        assert_only_aggregations(uploads)

  def test_diagnostics_add_exactly_the_declared_aggregates(self):
    # The probe gradient's mean (eq. 7), the mean of its squared norm, each
    # weighted by the clients an output stands for (1 here), and the cohort
    # size (the advisor's sigma^2): three aggregates, nothing per client.
    process = tff_mixed.build_one_way_gradient_transfer(
        tu.linear_model(),
        tff_mixed.central_data_objective(tu.central_arrays()), tu.sgd(0.1),
        central_batch_size=4, with_diagnostics=True)
    base = client_to_server_uploads(self.processes['one_way'].next)
    with_diagnostics = client_to_server_uploads(process.next)
    self.assertLen(with_diagnostics, len(base) + 3)
    assert_only_aggregations(with_diagnostics)
    extra = collections.Counter(with_diagnostics) - collections.Counter(base)
    self.assertEqual(
        extra,
        {('federated_weighted_mean',
          '<{<float32[2,1],float32[1]>}@CLIENTS,{float32}@CLIENTS>'): 1,
         ('federated_weighted_mean',
          '<{float32}@CLIENTS,{float32}@CLIENTS>'): 1,
         ('federated_sum', '{float32}@CLIENTS'): 1})

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

  def test_select_checker_accepts_keys_and_rejects_other_client_values(self):
    keys_type = tff.FederatedType(tff.TensorType(np.int32, [2]), tff.CLIENTS)
    table_type = tff.TensorType(np.float32, [5, 3])

    @tff.tensorflow.computation(table_type, np.int32)
    def row(table, key):
      return tf.gather(table, key)

    @tff.federated_computation(keys_type,
                               tff.FederatedType(table_type, tff.SERVER))
    def select(keys, table):
      return tff.federated_select(
          keys, tff.federated_value(4, tff.SERVER), table, row)

    uses = client_value_uses(select)
    self.assertEqual([u[0] for u in uses], ['federated_select'])
    assert_clients_reveal_only_aggregates_and_keys(uses, 2)
    with self.assertRaisesRegex(AssertionError, 'only the keys'):
      assert_clients_reveal_only_aggregates_and_keys(uses, 3)
    _, parameter, result = uses[0]
    with self.assertRaisesRegex(AssertionError, 'via federated_broadcast'):
      assert_clients_reveal_only_aggregates_and_keys(
          [('federated_broadcast', parameter, result)], 2)
    # A client-local intrinsic that returned a server value is caught too.
    with self.assertRaisesRegex(AssertionError, 'to the server'):
      assert_clients_reveal_only_aggregates_and_keys(
          [('federated_map', parameter,
            tff.FederatedType(np.float32, tff.SERVER))], 2)


if __name__ == '__main__':
  absltest.main()
