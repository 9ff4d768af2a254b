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
"""The hybrid experiment's floor (`benchmarks/hybrid_floor.py`) does a
round's work.

On a tiny CNN and split: the floor's client updates are those of the
library's asynchronous client training (`client_training.
build_client_training`, Adam, one epoch with a short last batch) on the
binary's datasets; and floor rounds give the weights of the binary's
FedBuff and Feddle (`hybrid_methods.build_method`) applying those updates,
merge after merge, while Feddle's atlas fills, evicts its anchors of the
smallest score and takes two merges in one round; Feddle's scores match
its atlas slot for slot. The search bites: Feddle ends elsewhere than
FedBuff.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow_federated as tff

from benchmarks import hybrid_floor
from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_runs
from tff_mixed.asynchronous import client_training
from tff_mixed.asynchronous import strategy
from tff_mixed.models import cnn
from tff_mixed.tasks import hybrid_images

_SEED = 3
# Three slots for buffers of two: the second merge fills the last free
# slot and evicts one anchor, the later ones evict two.
_CONFIG = hybrid_config.Config(
    num_clients=8, clients_per_round=2, alpha=0.5, server_size=24,
    eval_size=40, client_batch_size=4, client_lr=0.01, buffer_size=2,
    feddle_atlas_size=3, server_batch_size=8, feddle_search_steps=4,
    conv_filters=(2, 4, 4), dense_units=8)
# Per round, its clients and merges.
_ROUNDS = (((0, 1), 1), ((2, 3), 1), ((4, 5), 2), ((6, 7), 1))


def _tiny():
  rng = np.random.default_rng(_SEED)
  images = rng.random((120, 8, 8, 3), np.float32)
  labels = rng.integers(0, 4, 120)
  split = hybrid_images.build_hybrid_split(
      images, labels, num_clients=_CONFIG.num_clients, alpha=_CONFIG.alpha,
      server_size=_CONFIG.server_size, eval_size=_CONFIG.eval_size,
      seed=_SEED)
  data = hybrid_config.Data(split, None, None, 'generated')
  model = cnn.build_cnn(
      input_shape=(8, 8, 3), num_classes=4,
      conv_filters=_CONFIG.conv_filters, dense_units=_CONFIG.dense_units,
      seed=_SEED)
  return data, model


def _library_training(model):
  return client_training.build_client_training(
      model, hybrid_runs.client_optimizer(_CONFIG))


def _library_updates(training, weights, datasets):
  """Each client's update and example count by the library's `training`."""
  result = training(tff.learning.models.ModelWeights(
      trainable=tuple(weights), non_trainable=()), datasets)
  return ([[np.asarray(u) for u in update] for update in result['update']],
          [float(n) for n in result['num_examples']])


def _floor_weights(method, data, model, with_diagnostics=False):
  """The weights after each of `_ROUNDS`' floor rounds, and the state."""
  runner = hybrid_floor.FloorRunner(model, method, data, _CONFIG, _SEED,
                                    with_diagnostics)
  weights = []
  for round_num, (clients, merges) in enumerate(_ROUNDS, 1):
    runner.run_round(hybrid_floor.client_batches(
        [hybrid_runs.client_dataset(method, data, _CONFIG, _SEED, c,
                                     round_num) for c in clients]), merges)
    weights.append([w.numpy() for w in runner.state.weights])
  return weights, runner.state


def _library_weights(method, data, model):
  """The weights after each of `_ROUNDS`, the method applying the round's
  updates from the library's training (cycled into its merges), the state
  and the last merge's event."""
  built = hybrid_methods.build_method(method, model, data, _CONFIG, _SEED)
  training = _library_training(model)
  state = built.initial_state()
  weights = [np.asarray(w) for w in model.initial_weights[0]]
  history, merge_events = [], []
  for round_num, (clients, merges) in enumerate(_ROUNDS, 1):
    updates, counts = _library_updates(training, weights, [
        hybrid_runs.client_dataset(method, data, _CONFIG, _SEED, c,
                                    round_num) for c in clients])
    arrived = [strategy.ClientUpdate(clients[i % len(clients)],
                                     updates[i % len(clients)], 0,
                                     num_examples=counts[i % len(clients)])
               for i in range(merges * _CONFIG.buffer_size)]
    state, weights = built.apply(state, weights, arrived,
                                 on_merge=merge_events.append)
    history.append([np.asarray(w) for w in weights])
  return history, state, merge_events[-1]


class HybridFloorTest(parameterized.TestCase):

  def test_client_updates_are_the_library_training(self):
    data, model = _tiny()
    clients = (0, 3, 5)
    datasets = [hybrid_runs.client_dataset(hybrid_config.FEDBUFF, data,
                                            _CONFIG, _SEED, c, 7)
                for c in clients]
    batches = hybrid_floor.client_batches(datasets)
    # More batches than clients, and short last batches.
    sizes = np.diff(batches.row_splits.numpy())
    self.assertGreater(len(sizes), len(clients))
    self.assertLess(sizes.min(), _CONFIG.client_batch_size)
    want, _ = _library_updates(_library_training(model),
                               model.initial_weights[0], datasets)
    floor = hybrid_floor.build_clients_floor(
        model, hybrid_runs.client_optimizer(_CONFIG))
    got = floor(tuple(model.initial_weights[0]), batches)
    for c in range(len(clients)):
      for g, w in zip(got, want[c], strict=True):
        np.testing.assert_allclose(g[c].numpy(), w, rtol=1e-5, atol=1e-7,
                                   err_msg=f'client {clients[c]}')
    # Adam moved every client's weights.
    self.assertGreater(min(np.abs(u).max() for u in want[0]), 1e-4)

  @parameterized.named_parameters(
      (method, method) for method in hybrid_floor.METHODS)
  def test_floor_rounds_give_the_method_weights(self, method):
    data, model = _tiny()
    want, library_state, last_merge = _library_weights(method, data, model)
    got, floor_state = _floor_weights(method, data, model)
    for round_num, (g, w) in enumerate(zip(got, want, strict=True), 1):
      for a, b in zip(g, w, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6,
                                   err_msg=f'round {round_num}')
    if method == hybrid_config.FEDDLE_ID:
      # Slot for slot: the same anchors evicted, the same coefficients.
      np.testing.assert_allclose(floor_state.scores.numpy(),
                                 library_state.atlas.scores, rtol=1e-4)
      fedbuff, _ = _floor_weights(hybrid_config.FEDBUFF, data, model)
      self.assertGreater(max(np.abs(a - b).max()
                             for a, b in zip(fedbuff[-1], got[-1])), 1e-4)
      # With the diagnostics, the same weights, and the last merge's
      # losses over the server set at c' and at c are Feddle's.
      with_losses, state = _floor_weights(method, data, model, True)
      for a, b in zip(with_losses[-1], got[-1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
      diagnostics = last_merge.diagnostics.diagnostics
      np.testing.assert_allclose(
          state.losses.numpy(),
          [diagnostics.prior_loss, diagnostics.final_loss], rtol=1e-5)
      self.assertNotEqual(diagnostics.prior_loss, diagnostics.final_loss)

  def test_other_methods_and_settings_are_refused(self):
    _, model = _tiny()
    with self.assertRaisesRegex(ValueError, 'fedasync'):
      hybrid_floor.build_floor_round(model, hybrid_config.FEDASYNC, _CONFIG)
    with self.assertRaisesRegex(ValueError, 'staleness'):
      hybrid_floor.build_floor_round(
          model, hybrid_config.FEDBUFF,
          _CONFIG._replace(fedbuff_staleness_exponent=0.5))


if __name__ == '__main__':
  absltest.main()
