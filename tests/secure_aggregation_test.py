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
"""Every algorithm runs with TFF's secure aggregator.

FL clients upload only updates meant for immediate aggregation, and secure
multiparty computation strengthens that (arXiv:2205.13655, section 2 and its
footnote 4). 2-way gradient transfer recovers the federated gradient from the
aggregated model delta (appendix A.2), so it needs nothing beyond what a secure
sum reveals. Here every builder, and the FedAvg baseline as the experiments
build it, takes `tff.learning.secure_aggregator()` as `model_aggregator`:
its `next` contains secure sums (and, with secure metrics, nothing else leaves
the clients), its model matches the plain weighted mean's to the secure sum's
quantization, and the one combination that cannot work, `federated_select`
with any model aggregator, is refused.

TFF 0.87's default local C++ context does not run secure intrinsics
(`federated_secure_sum_bitwidth` fails there with "Cannot embed a federated
value"). Tests that run rounds therefore install TFF's test context,
`tff.backends.test.create_sync_test_cpp_execution_context()`, which replaces
each secure sum with a plain sum of the same quantized values, for their class
only; the default context is back once the class is done.
"""

import collections

import numpy as np
import tensorflow_federated as tff
from absl.testing import absltest
from absl.testing import parameterized

from experiments.common import scenarios as scenarios_lib
from tests import privacy_test
from tests import testing_utils as tu
import tff_mixed
from tff_mixed.models import dual_encoder

# The secure sum clips each weighted value to +-B (B starts at 2 * 50) and
# quantizes it to 32 bits, a step of 2B / 2**32 < 1e-7; a dropped weighting or
# a lost update moves these weights by more than 1e-2.
ATOL = 1e-5


def _secure_mean():
  """The secure weighted mean: no adaptive zeroing or L2 clipping.

  Zeroing and clipping change the update by design (TFF's robust defaults),
  so the numeric comparison with `MeanFactory` leaves them out; the static
  checks below use the full `tff.learning.secure_aggregator()`.
  """
  return tff.learning.secure_aggregator(zeroing=False, clipping=False)


def _objective():
  return tff_mixed.central_data_objective(tu.central_arrays())


def _parallel_training(**kwargs):
  return tff_mixed.build_parallel_training(
      tu.linear_model(), _objective(), tu.sgd(0.1), tu.sgd(0.05),
      central_batch_size=8, central_steps=2, client_steps=2, **kwargs)


def _one_way(**kwargs):
  return tff_mixed.build_one_way_gradient_transfer(
      tu.linear_model(), _objective(), tu.sgd(0.1), central_batch_size=8,
      client_steps=2, **kwargs)


def _two_way(**kwargs):
  return tff_mixed.build_two_way_gradient_transfer(
      tu.linear_model(), _objective(), tu.sgd(0.1), tu.sgd(0.05),
      central_batch_size=8, client_steps=2, **kwargs)


def _example_transfer(**kwargs):
  return tff_mixed.build_example_transfer(
      tu.linear_model(), _objective(), tu.sgd(0.1), examples_per_client=3,
      client_batch_size=2, **kwargs)


def _shared_data(**kwargs):
  return tff_mixed.build_fedavg_with_shared_data(
      tu.linear_model(), _objective(), tu.sgd(0.1), beta=0.5, alpha=1.0,
      num_client_examples=12, client_batch_size=4, warmup_steps=2,
      warmup_learning_rate=0.1, warmup_batch_size=8, **kwargs)


def _fed_avg(**kwargs):
  return tff.learning.algorithms.build_weighted_fed_avg(
      tu.linear_model(), client_optimizer_fn=tu.sgd(0.1),
      server_optimizer_fn=tu.sgd(1.0), **kwargs)


def _experiment_fl_only(model_aggregator):
  # The FL-only and oracle baselines, built as the label imbalance experiment
  # builds them (TFF's `build_weighted_fed_avg`).
  return scenarios_lib.build_process(
      scenarios_lib.FL_ONLY, tu.linear_model(), tu.central_arrays(),
      client_lr=0.1, client_steps=2,
      central_batch_sizes=scenarios_lib.CentralBatchSizes(8, 8, 8),
      examples_per_client=3, client_batch_size=2, seed=0,
      model_aggregator=model_aggregator)


_ALGORITHMS = collections.OrderedDict(
    parallel_training=_parallel_training,
    one_way_gradient_transfer=_one_way,
    two_way_gradient_transfer=_two_way,
    example_transfer=_example_transfer,
    fedavg_with_shared_data=_shared_data,
)
_NAMED = [(name, name) for name in _ALGORITHMS]


def _run(process, rounds=2):
  data = tu.to_datasets(tu.client_arrays(), batch_size=2)
  state = process.initialize()
  for _ in range(rounds):
    state = process.next(state, data).state
  return tu.trainable(process, state)


class SecureRoundsTest(parameterized.TestCase):
  """Two rounds with the secure weighted mean equal two with `MeanFactory`."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # Only this class runs secure sums; `install` restores the default.
    cls.enter_context(tff.framework.get_context_stack().install(
        tff.backends.test.create_sync_test_cpp_execution_context()))

  def _assert_same_model(self, build):
    secure_process = build(_secure_mean())
    # The process that runs here is the one that sums securely.
    tff.test.assert_contains_secure_aggregation(secure_process.next)
    secure = _run(secure_process)
    mean = _run(build(tff.aggregators.MeanFactory()))
    moved = max(float(np.max(np.abs(s - w)))
                for s, w in zip(secure, tu.initial_weights()))
    self.assertGreater(moved, 0.1)
    for got, want in zip(secure, mean):
      np.testing.assert_allclose(got, want, atol=ATOL)

  @parameterized.named_parameters(*_NAMED)
  def test_secure_mean_gives_the_mean_model(self, name):
    build = _ALGORITHMS[name]
    self._assert_same_model(lambda agg: build(model_aggregator=agg))

  def test_experiment_fedavg_baseline(self):
    self._assert_same_model(_experiment_fl_only)


def _secure_arguments():
  return dict(
      model_aggregator=tff.learning.secure_aggregator(),
      metrics_aggregator=tff.learning.metrics.secure_sum_then_finalize)


class SecureStaticTest(parameterized.TestCase):
  """The compiled `next`: secure sums, and with secure metrics, only them."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.processes = {name: build(**_secure_arguments())
                     for name, build in _ALGORITHMS.items()}

  @parameterized.named_parameters(*_NAMED)
  def test_only_secure_aggregation_leaves_clients(self, name):
    tff.test.assert_contains_secure_aggregation(self.processes[name].next)
    tff.test.assert_not_contains_unsecure_aggregation(
        self.processes[name].next)

  def test_unweighted_secure_aggregator(self):
    # Unweighted factories are wrapped with `as_weighted_aggregator`.
    process = _two_way(
        model_aggregator=tff.learning.secure_aggregator(weighted=False),
        metrics_aggregator=tff.learning.metrics.secure_sum_then_finalize)
    tff.test.assert_contains_secure_aggregation(process.next)
    tff.test.assert_not_contains_unsecure_aggregation(process.next)

  def test_experiment_fedavg_baseline(self):
    process = _experiment_fl_only(tff.learning.secure_aggregator())
    tff.test.assert_contains_secure_aggregation(process.next)

  def test_checks_can_fail(self):
    process = _two_way()  # The default MeanFactory sums in the clear.
    with self.assertRaises(AssertionError):
      tff.test.assert_contains_secure_aggregation(process.next)
    with self.assertRaises(AssertionError):
      tff.test.assert_not_contains_unsecure_aggregation(process.next)

  def test_gradient_transfer_uploads_what_fed_avg_uploads(self):
    # 2-way GT recovers g~_f from the aggregated delta (arXiv:2205.13655,
    # appendix A.2): with secure sums, clients still upload what FedAvg does,
    # and the clients' counts every process reports, summed securely.
    expected = sorted(
        privacy_test.client_to_server_uploads(
            _fed_avg(**_secure_arguments()).next)
        + privacy_test.counts_uploads(
            tff.learning.metrics.secure_sum_then_finalize))
    self.assertNotEmpty(expected)
    for name in ('parallel_training', 'one_way_gradient_transfer',
                 'two_way_gradient_transfer'):
      with self.subTest(name):
        got = sorted(privacy_test.client_to_server_uploads(
            self.processes[name].next))
        self.assertEqual(got, expected)


class SelectRefusesAggregatorTest(parameterized.TestCase):
  """`federated_select` with a secure (or any) model aggregator is refused.

  The selected rows come back through the sparse scatter-back
  `federated_aggregate` keyed by each client's row ids; a secure sum adds only
  dense tensors, so the aggregator would be dropped, silently, before.
  """

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model = dual_encoder.build_dual_encoder(8, 3, 2, seed=1)
    cls.selection = dual_encoder.build_embedding_selection(8, 4, 3, 2)
    cls.spreadout = tff_mixed.central_regularizer(
        dual_encoder.spreadout_loss_fn, name='spreadout')

  def _build(self, name, aggregator):
    common = dict(central_batch_size=1, client_steps=2,
                  embedding_selection=self.selection,
                  model_aggregator=aggregator)
    if name == 'one_way':
      return tff_mixed.build_one_way_gradient_transfer(
          self.model, self.spreadout, tu.sgd(0.5), **common)
    builder = (tff_mixed.build_parallel_training if name == 'parallel'
               else tff_mixed.build_two_way_gradient_transfer)
    return builder(self.model, self.spreadout, tu.sgd(0.5), tu.sgd(0.5),
                   **common)

  @parameterized.named_parameters(
      (f'{name}_{aggregator}', name, aggregator)
      for name in ('parallel', 'one_way', 'two_way')
      for aggregator in ('secure_aggregator', 'secure_mean',
                         'mean_of_secure_sums'))
  def test_secure_aggregator_with_select_is_refused(self, name, aggregator):
    # The last two are `MeanFactory`s whose sums are secure.
    factory = dict(
        secure_aggregator=tff.learning.secure_aggregator,
        secure_mean=_secure_mean,
        mean_of_secure_sums=lambda: tff.aggregators.MeanFactory(
            tff.aggregators.SecureSumFactory(10.0)))[aggregator]()
    with self.assertRaisesRegex(
        ValueError, r'`model_aggregator`[\s\S]*`embedding_selection`'
        r'[\s\S]*[Ss]ecure aggregation'):
      self._build(name, factory)

  def test_select_without_aggregator_still_builds(self):
    process = self._build('two_way', None)
    self.assertIsInstance(process, tff.learning.templates.LearningProcess)


if __name__ == '__main__':
  absltest.main()
