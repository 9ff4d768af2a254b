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
"""A new algorithm is one file of public components.

`examples/custom_algorithm.py` writes Parallel Training (arXiv:2205.13655,
Algorithm 1, green steps) from `tff_mixed.components` alone: it is at most
150 lines, imports nothing of `tff_mixed` beyond `tff_mixed.__all__`, and
its process equals `tff_mixed.build_parallel_training`'s: the same types,
and the same state and metrics after two rounds on the tiny linear model.
"""

import ast

import numpy as np
import tensorflow as tf
from absl.testing import absltest

import tff_mixed
from examples import custom_algorithm
from tests import testing_utils as tu

# The module's own source: a dep's file, so Bazel's runfiles hold it too.
_EXAMPLE = custom_algorithm.__file__
MAX_LINES = 150


def non_public_uses(source: str) -> list[str]:
  """What `source` takes from `tff_mixed` beyond the names in `__all__`."""
  public = set(tff_mixed.__all__)
  found, aliases = [], set()
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name == 'tff_mixed':
          aliases.add(alias.asname or alias.name)
        elif alias.name.startswith('tff_mixed.'):
          found.append(f'import {alias.name}')
    elif isinstance(node, ast.ImportFrom) and node.module and (
        node.module.split('.')[0] == 'tff_mixed'):
      if node.module != 'tff_mixed':
        found.append(f'from {node.module} import ...')
      else:
        found += [f'from tff_mixed import {a.name}' for a in node.names
                  if a.name not in public]
  for node in ast.walk(ast.parse(source)):
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id in aliases and node.attr not in public):
      found.append(f'{node.value.id}.{node.attr}')
  return found


class CustomAlgorithmFileTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    with open(_EXAMPLE) as f:
      self.source = f.read()

  def test_is_one_short_file(self):
    self.assertLessEqual(len(self.source.splitlines()), MAX_LINES)

  def test_imports_only_public_names(self):
    self.assertEmpty(non_public_uses(self.source))
    self.assertIn('from tff_mixed import components', self.source)

  def test_check_finds_private_imports(self):
    self.assertEqual(
        non_public_uses('import tff_mixed as tm\n'
                        'from tff_mixed.core import mixed_process\n'
                        'from tff_mixed import components, _common\n'
                        'tm.algorithms.parallel_training\n'
                        'tm.build_fedavg\n'),
        ['from tff_mixed.core import ...', 'from tff_mixed import _common',
         'tm.algorithms'])


class CustomAlgorithmProcessTest(absltest.TestCase):
  """The example's process is `build_parallel_training`'s."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    model = tu.linear_model()
    objective = tff_mixed.central_data_objective(tu.central_arrays())
    args = (model, objective, tu.sgd(0.1), tu.sgd(0.05), tu.sgd(0.9),
            tu.sgd(0.8))
    kwargs = dict(central_batch_size=4, client_steps=2, central_steps=3,
                  federated_weight=0.7, central_weight=0.3, seed=5)
    cls.custom = custom_algorithm.build_my_parallel_training(*args, **kwargs)
    cls.built_in = tff_mixed.build_parallel_training(*args, **kwargs)
    cls.data = tu.to_datasets(tu.client_arrays(), batch_size=2)

  def test_same_type_signatures(self):
    for name in ('initialize', 'next', 'get_model_weights', 'get_hparams'):
      self.assertEqual(
          getattr(self.custom, name).type_signature,
          getattr(self.built_in, name).type_signature, name)

  def test_same_state_and_metrics_for_two_rounds(self):
    state, reference = self.custom.initialize(), self.built_in.initialize()
    for _ in range(2):
      output = self.custom.next(state, self.data)
      expected = self.built_in.next(reference, self.data)
      state, reference = output.state, expected.state
      for got, want in ((state, reference),
                        (output.metrics, expected.metrics)):
        tf.nest.assert_same_structure(got, want)
        for a, b in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
          np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
    self.assertEqual(int(state.round_num), 2)
    # Two rounds moved the model: the comparison is not of initial values.
    self.assertFalse(np.allclose(tu.trainable(self.custom, state)[0],
                                 tu.initial_weights()[0]))


class ComposeChecksTest(absltest.TestCase):
  """The composer refuses components that do not fit together."""

  def setUp(self):
    super().setUp()
    self.model = tu.linear_model()
    self.objective = tff_mixed.central_data_objective(tu.central_arrays())

  def _compose(self, central, *, sends=False, step_gradient=None,
               weights=None):
    """Composes `central` with the other four components, plain."""
    components = tff_mixed.components
    distributor = components.build_broadcast_distributor(
        self.model, sends_central_gradient=sends)
    rules = {'step_gradient': step_gradient} if step_gradient else {}
    return tff_mixed.compose_mixed_process(self.model, components.Components(
        distributor=distributor,
        client_work=components.build_client_work(
            self.model, distributor, tu.sgd(0.1), **rules),
        aggregator=components.build_mean_aggregator(self.model),
        central_work=central,
        finalizer=components.build_finalizer(self.model, central,
                                             **(weights or {}))))

  def test_refuses_g_c_that_no_central_work_makes(self):
    with self.assertRaisesRegex(ValueError, 'augmenting_gradient'):
      self._compose(tff_mixed.components.build_central_work(self.model),
                    sends=True,
                    step_gradient=tff_mixed.components.MixedGradient(0.5, 0.5))

  def test_refuses_central_steps_on_g_f_that_is_not_recovered(self):
    weights = dict(federated_weight=0.5, central_weight=0.5)
    central = tff_mixed.components.build_central_work(
        self.model, self.objective, tu.sgd(0.1), central_steps=1,
        step_rule=tff_mixed.components.MixedCentralSteps(0.5, 0.5),
        **weights)
    with self.assertRaisesRegex(ValueError, 'Recovery'):
      self._compose(central, weights=weights)

  def test_refuses_diagnostics_without_client_probes(self):
    central = tff_mixed.components.build_central_work(
        self.model, self.objective, with_diagnostics=True)
    with self.assertRaisesRegex(ValueError, 'with_probe_gradient'):
      self._compose(central)

  def test_refuses_client_steps_on_g_c_that_is_not_sent(self):
    components = tff_mixed.components
    with self.assertRaisesRegex(ValueError, 'sends_central_gradient'):
      components.build_client_work(
          self.model, components.build_broadcast_distributor(self.model),
          tu.sgd(0.1), step_gradient=components.MixedGradient(0.5, 0.5))

  def test_rules_without_their_protocol_are_refused_at_build_time(self):
    components = tff_mixed.components
    distributor = components.build_broadcast_distributor(self.model)

    def bare_step(gradient, augmenting_gradient):
      del augmenting_gradient
      return gradient

    class AtModelWithoutFlags:

      def __call__(self, gradient_at_model, previous_round_mean):
        raise AssertionError('never called: refused at build time')

    class FlagsWithoutCall:
      evaluated_at_model = True
      carried_in_state = False

    cases = {
        'no uses_augmenting_gradient': (
            lambda: components.build_client_work(
                self.model, distributor, tu.sgd(0.1),
                step_gradient=bare_step),
            r'`step_gradient` .* boolean attribute `uses_augmenting_gradient`'),
        'local_data not callable': (
            lambda: components.build_client_work(
                self.model, distributor, tu.sgd(0.1), local_data=16),
            r'`local_data` 16 .* not callable'),
        'no uses_federated_gradient': (
            lambda: components.build_central_work(
                self.model, self.objective, tu.sgd(0.1), central_steps=1,
                step_rule=bare_step),
            r'`step_rule` .* `uses_federated_gradient`'),
        'no flags': (
            lambda: components.build_central_work(
                self.model, self.objective,
                augmenting_gradient=AtModelWithoutFlags()),
            r'`evaluated_at_model`; .* `carried_in_state`'),
        'augmenting gradient not callable': (
            lambda: components.build_central_work(
                self.model, self.objective,
                augmenting_gradient=FlagsWithoutCall()),
            r'`augmenting_gradient` .* not callable'),
    }
    for name, (build, message) in cases.items():
      with self.subTest(name):
        with self.assertRaisesRegex(TypeError, message):
          build()


if __name__ == '__main__':
  absltest.main()
