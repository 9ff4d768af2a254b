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
"""The public components of a mixed FL process, and the composer.

A mixed FL round (arXiv:2205.13655, Algorithms 1-2) is a distributor, client
work, an aggregator, central work and a finalizer, as TFF 0.87's
`tff.learning.templates.compose_learning_process` composes a distributor,
client work, an aggregator and a finalizer; central work is the server's
part on the central loss f_c. An algorithm is a choice of these five, and
where an algorithm differs inside a component (the step a client or the
server takes, the data a client trains on, where the clients' g~_c comes
from) the choice is a rule object passed to the component's builder, not a
flag: a new choice is a new rule. docs/COMPOSING.md shows how to write one;
`examples/custom_algorithm.py` writes Parallel Training this way.

`compose_mixed_process(model, Components(...))` returns a
`tff.learning.templates.LearningProcess` with `initialize: ( ->
MixedFLState@SERVER)` and `next: (<MixedFLState@SERVER, {B*}@CLIENTS> ->
<state=MixedFLState@SERVER, metrics=M@SERVER>)` (M as for the built-in
algorithms). The builders here check their arguments, name the one they
refuse, and hand the rest to `tff_mixed/core/`, which the built-in
algorithms compose the same way.
"""

from collections.abc import Callable
from typing import Any, Optional

import tensorflow_federated as tff

from tff_mixed.core import aggregators as aggregators_lib
from tff_mixed.core import central_objective as objective_lib
from tff_mixed.core import central_work as central_lib
from tff_mixed.core import client_work as client_lib
from tff_mixed.core import distributors as distributors_lib
from tff_mixed.core import embedding_select as select_lib
from tff_mixed.core import finalizer as finalizer_lib
from tff_mixed.core import mixed_process
from tff_mixed.core import model_types
from tff_mixed.core import transfer_select as transfer_lib
from tff_mixed.core import validation

# The composer's input and the components' types.
__all__ = [
    'Aggregator',
    'CentralWork',
    'ClientInputs',
    'Components',
    'Distribution',
    'Distributor',
    'Finalizer',
    'GradientAtModel',
    'MergedData',
    'MixedCentralSteps',
    'MixedGradient',
    'OwnData',
    'PlainCentralSteps',
    'PlainGradient',
    'PreviousRoundMean',
    'Recovery',
    'build_broadcast_distributor',
    'build_central_work',
    'build_client_work',
    'build_finalizer',
    'build_mean_aggregator',
    'build_scatter_back_aggregator',
    'build_select_distributor',
    'build_transfer_distributor',
    'compose_mixed_process',
    'data_type',
    'weights_type',
]

Components = mixed_process.Components
Distributor = distributors_lib.Distributor
# What a distributor of one's own returns: the clients' values (and keys),
# and, on each client, what it trains with.
Distribution = distributors_lib.Distribution
ClientInputs = distributors_lib.ClientInputs
# The TFF types of a model's weights (ModelWeights) and of a client's data.
weights_type = model_types.weights_type
data_type = model_types.data_type
Aggregator = aggregators_lib.Aggregator
CentralWork = central_lib.CentralWork
Finalizer = finalizer_lib.Finalizer
# Client work rules: the step's gradient, the data trained on.
PlainGradient = client_lib.PlainGradient
MixedGradient = client_lib.MixedGradient
OwnData = client_lib.OwnData
MergedData = client_lib.MergedData
# Central work rules: the step's gradient, the source of the clients' g~_c.
PlainCentralSteps = central_lib.PlainCentralSteps
MixedCentralSteps = central_lib.MixedCentralSteps
GradientAtModel = central_lib.GradientAtModel
PreviousRoundMean = central_lib.PreviousRoundMean
# Finalizer: what the recovery of g~_f (eq. 10) needs.
Recovery = finalizer_lib.Recovery


def _sends_central_gradient(distributor: Distributor) -> bool:
  """Whether the message the clients receive holds g~_c."""
  message = distributor.client_types[0]
  return (isinstance(message, tff.StructType)
          and 'augmenting_gradient' in tff.structure.name_list(message))


def build_broadcast_distributor(
    model: tff.learning.models.FunctionalModel,
    *,
    sends_central_gradient: bool = False,
) -> Distributor:
  """`federated_broadcast` of x^(t), and of g~_c when the clients use it.

  `distribute: (<weights=ModelWeights[, augmenting_gradient=trainable]>@SERVER,
  int32@SERVER, {B*}@CLIENTS) -> <message@CLIENTS>`.
  """
  validation.check_model(model)
  return distributors_lib.build_broadcast_distributor(
      model, bool(sends_central_gradient))


def build_select_distributor(
    model: tff.learning.models.FunctionalModel,
    embedding_selection: select_lib.EmbeddingSelection,
    *,
    sends_central_gradient: bool = False,
    client_steps: Optional[int] = None,
) -> Distributor:
  """Each client's rows of the embedding table (and of g~_c) only.

  `federated_select` with keys each client computes from the batches it
  trains on (its first `client_steps`), the rest broadcast (the movie
  task, arXiv:2205.13655 section 4.3). Pair it with
  `build_scatter_back_aggregator`.
  """
  validation.check_model(model)
  validation.check_embedding_selection(embedding_selection, model)
  validation.check_positive_int('client_steps', client_steps, allow_none=True)
  return distributors_lib.build_select_distributor(
      model, embedding_selection, bool(sends_central_gradient), client_steps)


def build_transfer_distributor(
    model: tff.learning.models.FunctionalModel,
    central_objective: objective_lib.CentralObjective,
    base: Distributor,
    *,
    examples_per_client: int,
    seed: int = 0,
    redraw_each_round: bool = True,
) -> Distributor:
  """`base`'s message plus each client's own central examples.

  Example Transfer (arXiv:2111.12150, Algorithm 3, line 3): the examples
  are `federated_select`ed with indices the client draws; train on them
  with `local_data=MergedData(batch_size)`.
  """
  validation.check_objective(central_objective, model, require_data=True,
                             seed=seed)
  validation.check_positive_int('examples_per_client', examples_per_client)
  transfer = transfer_lib.build_transfer_computations(
      central_objective, model_types.data_type(model),
      examples_per_client=examples_per_client, seed=seed,
      redraw_each_round=bool(redraw_each_round))
  return distributors_lib.build_transfer_distributor(base, transfer)


def build_client_work(
    model: tff.learning.models.FunctionalModel,
    distributor: Distributor,
    client_optimizer: tff.learning.optimizers.Optimizer,
    *,
    client_steps: Optional[int] = None,
    client_weighting: tff.learning.ClientWeighting = (
        tff.learning.ClientWeighting.NUM_EXAMPLES),
    step_gradient: Any = PlainGradient(),
    local_data: Any = OwnData(),
    with_probe_gradient: bool = False,
) -> tff.Computation:
  """A client's local training: `(<received..., {B*}> -> ClientOutput)`.

  K = `client_steps` steps of `client_optimizer` (`None`: one pass over the
  data), each on `step_gradient(g_i, g~_c)` over the batches
  `local_data(dataset, transferred_examples, shuffle_seed)`; the update
  x^(t) - x_i, its weight and the model's metrics, zeroed if not finite.
  """
  validation.check_model(model)
  if not isinstance(distributor, Distributor):
    raise TypeError('`distributor` must be built by `components.build_...`, '
                    f'got {type(distributor).__name__}.')
  validation.check_optimizer('client_optimizer', client_optimizer)
  validation.check_positive_int('client_steps', client_steps, allow_none=True)
  validation.check_client_weighting(client_weighting)
  validation.check_rule('step_gradient', step_gradient)
  validation.check_rule('local_data', local_data)
  uses = step_gradient.uses_augmenting_gradient
  if uses != _sends_central_gradient(distributor):
    raise ValueError(
        f'`step_gradient` {step_gradient!r} reads g~_c only if the '
        'distributor sends it (`sends_central_gradient=True`): '
        f'`uses_augmenting_gradient` is {uses}.')
  config = client_lib.ClientWorkConfig(
      weighting=client_weighting, num_steps=client_steps,
      step_gradient=step_gradient, local_data=local_data,
      with_probe_gradient=bool(with_probe_gradient))
  return client_lib.build_client_work(model, distributor, config,
                                      client_optimizer)


def build_mean_aggregator(
    model: tff.learning.models.FunctionalModel,
    model_aggregator: Optional[tff.aggregators.AggregationFactory] = None,
) -> Aggregator:
  """The weighted mean of the client updates by `model_aggregator`.

  `None` means `tff.aggregators.MeanFactory()`; an unweighted factory (e.g.
  `tff.learning.dp_aggregator`) averages with equal weights.
  """
  validation.check_model(model)
  factory = validation.weighted_aggregator(
      tff.aggregators.MeanFactory() if model_aggregator is None
      else model_aggregator)
  return aggregators_lib.build_mean_aggregator(
      factory, model_types.weights_type(model).trainable)


def build_scatter_back_aggregator(
    model: tff.learning.models.FunctionalModel,
    embedding_selection: select_lib.EmbeddingSelection,
) -> Aggregator:
  """With `build_select_distributor`: row updates scattered into the table.

  One `federated_aggregate` gives the weighted mean update and each row's
  share of the cohort's weight (which `Recovery` of g~_f needs).
  """
  validation.check_model(model)
  validation.check_embedding_selection(embedding_selection, model)
  return aggregators_lib.build_scatter_back_aggregator(
      embedding_selection, model_types.weights_type(model).trainable)


def build_central_work(
    model: tff.learning.models.FunctionalModel,
    central_objective: Optional[objective_lib.CentralObjective] = None,
    central_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    central_steps: int = 0,
    central_batch_size: int = 1,
    federated_weight: float = 1.0,
    central_weight: float = 0.0,
    step_rule: Any = PlainCentralSteps(),
    augmenting_gradient: Any = None,
    central_clip_norm: Optional[float] = None,
    seed: int = 0,
    with_diagnostics: bool = False,
) -> CentralWork:
  """The server's work on f_c: K_c steps from x^(t), g~_c, metrics.

  `central_steps` steps of `central_optimizer`, each on `step_rule(g_c,
  g~_f)` over `central_batch_size` examples of `central_objective`;
  `augmenting_gradient` (`GradientAtModel()`, `PreviousRoundMean()` or
  `None`) is where the g~_c the clients use comes from. No objective and no
  steps: the central work of FedAvg.
  """
  validation.check_model(model)
  validation.check_mixing_weights(federated_weight, central_weight)
  validation.check_int('central_steps', central_steps, 0)
  if central_objective is not None:
    validation.check_objective(central_objective, model, seed=seed)
  elif central_steps or augmenting_gradient is not None or with_diagnostics:
    raise ValueError('`central_objective` is needed for central steps, an '
                     '`augmenting_gradient` or diagnostics.')
  if central_steps and central_optimizer is None:
    raise ValueError('`central_optimizer` is needed for `central_steps` > 0.')
  if central_optimizer is not None:
    validation.check_optimizer('central_optimizer', central_optimizer)
  validation.check_central_batch_size(central_batch_size, central_objective)
  validation.optional_clip('central_clip_norm', central_clip_norm)
  validation.check_rule('step_rule', step_rule)
  if augmenting_gradient is not None:
    validation.check_rule('augmenting_gradient', augmenting_gradient)
  config = central_lib.CentralConfig(
      central_steps=central_steps, batch_size=central_batch_size, seed=seed,
      clip_norm=central_clip_norm, federated_weight=float(federated_weight),
      central_weight=float(central_weight), step_rule=step_rule,
      augmenting_gradient=augmenting_gradient,
      with_diagnostics=bool(with_diagnostics))
  return central_lib.build_central_work(
      model, central_objective,
      central_optimizer if central_steps else None, config)


def build_finalizer(
    model: tff.learning.models.FunctionalModel,
    central_work: CentralWork,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    merge_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    federated_weight: float = 1.0,
    central_weight: float = 0.0,
    recovery: Optional[Recovery] = None,
) -> Finalizer:
  """SERVEROPTIMIZER on the mean update, the merge, g~_f, the guard.

  With central steps, `x^(t+1) = MERGEOPTIMIZER(x^(t), -(w_f (x_f - x^(t)) +
  w_c (x_c - x^(t))))`; with `recovery`, g~_f is recovered from the mean
  update (eq. 10) for the next round's central steps. `None` optimizers are
  SGD with learning rate 1.
  """
  validation.check_model(model)
  validation.check_mixing_weights(
      federated_weight, central_weight,
      require_positive_federated=recovery is not None)
  if recovery is not None and not isinstance(recovery, Recovery):
    raise TypeError('`recovery` must be `components.Recovery(client_'
                    f'learning_rate, client_steps)`, got {recovery!r}.')
  sgd = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  server_optimizer = server_optimizer or sgd
  validation.check_optimizer('server_optimizer', server_optimizer)
  has_steps = central_work.config.central_steps > 0
  merge_optimizer = (merge_optimizer or sgd) if has_steps else None
  if has_steps:
    validation.check_optimizer('merge_optimizer', merge_optimizer)
  config = finalizer_lib.FinalizerConfig(
      float(federated_weight), float(central_weight), recovery=recovery)
  return finalizer_lib.build_finalizer(model, config, central_work,
                                       server_optimizer, merge_optimizer)


def compose_mixed_process(
    model: tff.learning.models.FunctionalModel,
    components: Components,
    *,
    metrics_aggregator: Optional[Callable[..., tff.Computation]] = None,
    initial_trainable_fn: Optional[Callable[..., Any]] = None,
) -> tff.learning.templates.LearningProcess:
  """Composes a mixed FL `LearningProcess` from its five components.

  `next` runs, with intrinsics only: the central work's g~_c source, the
  distributor, `federated_map` of the client work, the aggregator (and the
  metrics aggregator, `None` meaning `tff.learning.metrics.sum_then_finalize`),
  the central work at SERVER, the finalizer. Refuses components that do not
  fit: a distributor sending g~_c that no central work makes (or none made
  for it), central steps reading a g~_f that no finalizer recovers, or
  diagnostics in only one of the client and the central work. Every built-in
  algorithm is composed here too.

  `initial_trainable_fn`, optional, is a `tf.function`
  `(trainable, non_trainable) -> trainable` applied to the model's initial
  weights in `initialize` (e.g. Example Transfer's warm-up steps).
  """
  validation.check_model(model)
  if not isinstance(components, Components):
    raise TypeError('`components` must be `components.Components(...)`, got '
                    f'{type(components).__name__}.')
  for name, kind in (('distributor', Distributor), ('aggregator', Aggregator),
                     ('central_work', CentralWork), ('finalizer', Finalizer)):
    if not isinstance(getattr(components, name), kind):
      raise TypeError(f'`components.{name}` must be built by '
                      f'`components.build_...`, got '
                      f'{type(getattr(components, name)).__name__}.')
  source = components.central_work.config.augmenting_gradient
  sends = _sends_central_gradient(components.distributor)
  if sends != (source is not None):
    raise ValueError(
        'The distributor sends g~_c only if the central work makes one: '
        f'`sends_central_gradient={sends}` but the central work\'s '
        f'`augmenting_gradient` is {source!r}.')
  probes = components.client_work.type_signature.result.probe_gradient
  if components.central_work.config.with_diagnostics != (len(probes) > 0):
    raise ValueError(
        'Diagnostics need both halves: `with_diagnostics=True` in the '
        'central work and `with_probe_gradient=True` in the client work.')
  uses = getattr(components.central_work.config.step_rule,
                 'uses_federated_gradient', False)
  parts = components.finalizer.process.initialize.type_signature.result
  keeps = len(parts.federated_gradient) > 0
  if uses and not keeps:
    raise ValueError(
        'The central step rule reads g~_f, which only a finalizer with '
        '`recovery=components.Recovery(...)` keeps in the state.')
  return mixed_process.build_mixed_process(
      model, components, metrics_aggregator=metrics_aggregator,
      initial_trainable_fn=initial_trainable_fn)
