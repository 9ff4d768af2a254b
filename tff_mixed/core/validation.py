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
"""Argument checks shared by the public builders: every error names its argument."""

from collections.abc import Sequence
import math
from typing import Any, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import central_objective as central_lib
from tff_mixed.core import central_work
from tff_mixed.core import embedding_select
from tff_mixed.core import example_store as example_store_lib


def check_model(model: Any) -> None:
  if not isinstance(model, tff.learning.models.FunctionalModel):
    raise TypeError(
        '`model` must be a `tff.learning.models.FunctionalModel`, got '
        f'{type(model).__name__}. Wrap Keras models with '
        '`tff.learning.models.functional_model_from_keras`.')


def check_optimizer(name: str, optimizer: Any) -> None:
  if not isinstance(optimizer, tff.learning.optimizers.Optimizer):
    raise TypeError(
        f'`{name}` must be a `tff.learning.optimizers.Optimizer` instance '
        f'(e.g. `tff.learning.optimizers.build_sgdm(learning_rate=0.1)`), got '
        f'{type(optimizer).__name__}.')


def _optimizer_hparams(optimizer: tff.learning.optimizers.Optimizer,
                       model: tff.learning.models.FunctionalModel):
  specs = tuple(
      tf.TensorSpec(w.shape, tf.dtypes.as_dtype(w.dtype))
      for w in model.initial_weights[0])
  return optimizer.get_hparams(optimizer.initialize(specs))


def check_learning_rate(name: str, optimizer, model) -> None:
  """Rejects a non-positive or non-finite learning rate, where readable."""
  try:
    hparams = _optimizer_hparams(optimizer, model)
  except Exception:  # pylint: disable=broad-except
    return  # Custom optimizers need not expose hparams.
  lr = hparams.get('learning_rate') if hasattr(hparams, 'get') else None
  if lr is None:
    return
  _check_learning_rate_value(name, float(np.asarray(lr)))


def _check_learning_rate_value(name: str, lr: float) -> None:
  if not math.isfinite(lr):
    raise ValueError(f'`{name}` must have a finite learning rate, got {lr}.')
  if lr <= 0:
    raise ValueError(f'`{name}` must have a positive learning rate, got {lr}.')


def plain_sgd_learning_rate(name: str, optimizer, model,
                            needed_for: Optional[str] = None) -> float:
  """Returns the learning rate of a momentum-free SGD optimizer, else raises.

  2-way gradient transfer recovers the mean client gradient from the model
  deltas clients already upload (arXiv:2205.13655, appendix A.2), which holds
  only when each local step is `x <- x - eta * g`; `needed_for` says why
  another caller needs it.
  """
  if needed_for is None:
    needed_for = (
        'for 2-way gradient transfer: the federated gradient is recovered '
        'from client model deltas as -delta / (eta * K), which holds only '
        'for SGD (arXiv:2205.13655, appendix A.2)')
  message = (f'`{name}` must be plain SGD (`tff.learning.optimizers.'
             f'build_sgdm` with no momentum) {needed_for}')
  sgd_type = type(tff.learning.optimizers.build_sgdm(learning_rate=1.0))
  if type(optimizer) is not sgd_type:  # pylint: disable=unidiomatic-typecheck
    raise ValueError(f'{message}; got {type(optimizer).__name__}.')
  hparams = _optimizer_hparams(optimizer, model)
  if set(hparams.keys()) != {'learning_rate'}:
    raise ValueError(f'{message}; got hyperparameters {sorted(hparams)}.')
  lr = float(np.asarray(hparams['learning_rate']))
  _check_learning_rate_value(name, lr)
  return lr


def optimizer_or_sgd(name: str, optimizer: Any, model,
                     default_learning_rate: float):
  """`optimizer`, or SGD at `default_learning_rate` for `None`, checked."""
  if optimizer is None:
    optimizer = tff.learning.optimizers.build_sgdm(
        learning_rate=default_learning_rate)
  check_optimizer(name, optimizer)
  check_learning_rate(name, optimizer, model)
  return optimizer


def check_central_steps(model, central_optimizer: Any, merge_optimizer: Any,
                        central_steps: Any, client_steps: Optional[int],
                        default_merge_learning_rate: float):
  """`(merge_optimizer, K_c)` of a process with central steps, checked.

  CENTRALOPTIMIZER must be given; MERGEOPTIMIZER defaults to SGD at
  `default_merge_learning_rate`, K_c = `central_steps` to K = `client_steps`.
  """
  check_optimizer('central_optimizer', central_optimizer)
  check_learning_rate('central_optimizer', central_optimizer, model)
  merge_optimizer = optimizer_or_sgd('merge_optimizer', merge_optimizer,
                                     model, default_merge_learning_rate)
  if central_steps is None and client_steps is None:
    raise ValueError('`central_steps` must be given when `client_steps` is '
                     'None (it defaults to `client_steps`).')
  central_steps = client_steps if central_steps is None else central_steps
  check_positive_int('central_steps', central_steps)
  return merge_optimizer, central_steps


def check_positive_int(name: str, value: Any, allow_none: bool = False,
                       allow_zero: bool = False) -> None:
  if value is None and allow_none:
    return
  if (not isinstance(value, (int, np.integer)) or isinstance(value, bool)
      or value < 0 or (value == 0 and not allow_zero)):
    kind = 'non-negative' if allow_zero else 'positive'
    raise ValueError(f'`{name}` must be a {kind} int, got {value!r}.')


def check_central_batch_size(central_batch_size: Any,
                             objective: Optional[Any]) -> None:
  """A positive int, and at most the central examples where they are known.

  `central_objective.sample_batch` would silently give the whole central
  set instead: fewer examples a step than the run was built with. Numpy
  data, an `ExampleStore` and datasets (read into arrays by
  `central_data_objective`) know their size; a regularizer has no data.

  Raises:
    ValueError: If `central_batch_size` is not a positive int or exceeds
      the central examples, naming both.
  """
  check_positive_int('central_batch_size', central_batch_size)
  if objective is None or not objective.has_data:
    return
  num_examples = objective.num_examples
  if central_batch_size > num_examples:
    raise ValueError(
        f'`central_batch_size` is {central_batch_size}, but the central '
        f'objective ({objective.name}) holds {num_examples} examples; give '
        f'at most {num_examples} (all of them: full-batch central '
        'gradients).')


def check_positive_float(name: str, value: Any, allow_none: bool = False):
  if value is None and allow_none:
    return
  if (isinstance(value, bool)
      or not isinstance(value, (int, float, np.floating))):
    raise ValueError(f'`{name}` must be a positive finite number, got '
                     f'{value!r}.')
  if not math.isfinite(value):
    raise ValueError(f'`{name}` must be finite, got {value!r}.')
  if value <= 0:
    raise ValueError(f'`{name}` must be positive, got {value!r}.')


def check_mixing_weights(federated_weight: Any, central_weight: Any,
                         require_positive_federated: bool = False) -> None:
  """Mixing weights must be in [0, 1] and sum to 1 (arXiv:2205.13655 Def. 5.2)."""
  for name, value in (('federated_weight', federated_weight),
                      ('central_weight', central_weight)):
    if (isinstance(value, bool) or not isinstance(value, (int, float))
        or not math.isfinite(value) or not 0.0 <= value <= 1.0):
      raise ValueError(f'`{name}` must be a number in [0, 1], got {value!r}.')
  if not math.isclose(federated_weight + central_weight, 1.0, abs_tol=1e-6):
    raise ValueError(
        '`federated_weight` and `central_weight` must sum to 1, got '
        f'{federated_weight} + {central_weight} = '
        f'{federated_weight + central_weight}.')
  if require_positive_federated and federated_weight <= 0:
    raise ValueError('`federated_weight` must be positive for 2-way gradient '
                     'transfer (the federated gradient is divided by it).')


def check_objective(objective: Any, model, require_data: bool = False,
                    seed: int = 0) -> None:
  """Checks f_c's type, its data structure against the model, and its loss."""
  if not isinstance(objective, central_lib.CentralObjective):
    raise TypeError(
        '`central_objective` must be a `tff_mixed.CentralObjective` (build it '
        'with `tff_mixed.central_data_objective` or '
        f'`tff_mixed.central_regularizer`), got {type(objective).__name__}.')
  if require_data and not objective.has_data:
    raise ValueError('`central_objective` must hold central examples for this '
                     'algorithm (examples are sent to clients); got a '
                     'data-free regularizer.')
  # Numpy data are checked against the input spec here; a store's batches
  # (after its map_fn) exist only in a graph: the trace below checks them.
  if (objective.has_data and objective.loss_fn is None
      and not isinstance(objective.data, example_store_lib.ExampleStore)):
    spec = model.input_spec
    try:
      tf.nest.assert_same_structure(spec, objective.data, check_types=False)
    except (ValueError, TypeError) as e:
      raise ValueError(
          '`central_objective` data must have the structure of the model '
          f'input_spec {spec}: {e}') from e
    for s, array in zip(tf.nest.flatten(spec), tf.nest.flatten(objective.data)):
      if tf.dtypes.as_dtype(array.dtype) != s.dtype:
        raise ValueError(
            f'`central_objective` data has dtype {array.dtype}, but the model '
            f'input_spec expects {s.dtype.name} ({s}).')
      if not s.shape[1:].is_compatible_with(array.shape[1:]):
        raise ValueError(
            f'`central_objective` data rows have shape {array.shape[1:]}, but '
            f'the model input_spec expects {s.shape[1:]} ({s}).')
  # Trace the loss once on the model's initial weights, so that a loss that
  # does not fit the model fails here, naming the argument.
  try:
    graph = tf.Graph()
    with graph.as_default():
      fn = central_work.build_central_gradient_fn(
          model, objective, batch_size=2, seed=seed, clip_norm=None)
      trainable = tuple(tf.constant(w) for w in model.initial_weights[0])
      non_trainable = tuple(tf.constant(w) for w in model.initial_weights[1])
      loss, _ = fn(trainable, non_trainable, tf.constant(0), tf.constant(0))
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(
        f'`central_objective` ({objective.name}) does not fit the model: '
        f'computing its loss and gradient at the initial weights failed with '
        f'{type(e).__name__}: {e}') from e
  if loss.shape.rank != 0:
    raise ValueError('`central_objective` loss must be a scalar, got shape '
                     f'{loss.shape}.')


def weighted_aggregator(model_aggregator: Any):
  """Returns a weighted factory; unweighted ones (e.g. DP) are wrapped.

  `tff.learning.dp_aggregator` and other unweighted factories average client
  updates with equal weights; `tff.aggregators.as_weighted_aggregator` lets
  them take the place of the weighted mean, as TFF's
  `build_unweighted_fed_avg` does.
  """
  if isinstance(model_aggregator, tff.aggregators.WeightedAggregationFactory):
    return model_aggregator
  if isinstance(model_aggregator,
                tff.aggregators.UnweightedAggregationFactory):
    return tff.aggregators.as_weighted_aggregator(model_aggregator)
  raise TypeError(
      '`model_aggregator` must be a `tff.aggregators.WeightedAggregationFactory`'
      ' (e.g. `tff.aggregators.MeanFactory()`) or an '
      '`UnweightedAggregationFactory` (e.g. `tff.learning.dp_aggregator`), got '
      f'{type(model_aggregator).__name__}.')


def check_no_selection_aggregator(model_aggregator: Any) -> None:
  """Refuses any `model_aggregator` next to an `EmbeddingSelection`.

  With `federated_select`, clients upload only their selected rows, and the
  sparse scatter-back `federated_aggregate` (`embedding_select.py`) adds them
  into the table at each client's row ids; it takes the place of the model
  aggregator, so an aggregator passed here would be silently ignored (even a
  `MeanFactory` whose sums are secure). A secure sum adds only dense tensors
  of one shape, so it cannot take rows that arrive with their keys.
  """
  if model_aggregator is None:
    return
  raise ValueError(
      '`model_aggregator` must be left unset with `embedding_selection`: the '
      'selected rows come back through a sparse scatter-back '
      '`tff.federated_aggregate` keyed by each client\'s row ids, which takes '
      'the place of any model aggregator. Secure aggregation (e.g. '
      '`tff.learning.secure_aggregator`, `tff.aggregators.SecureSumFactory`) '
      'cannot be applied to it: a secure sum adds only dense tensors, so '
      'clients would have to reveal their row keys or upload the whole table, '
      'which `federated_select` exists to avoid. To aggregate with this '
      'aggregator, set `embedding_selection=None` (the table is then '
      f'broadcast and uploaded whole); got {type(model_aggregator).__name__}.')


def check_selection(selection: Any, model, model_aggregator: Any,
                    with_diagnostics: bool) -> None:
  """`embedding_selection` fits the model and excludes what it cannot do."""
  check_embedding_selection(selection, model)
  if with_diagnostics:
    raise ValueError('`embedding_selection` does not support '
                     '`with_diagnostics` or transferred examples.')
  check_no_selection_aggregator(model_aggregator)


def check_client_weighting(client_weighting: Any) -> None:
  if not isinstance(client_weighting, tff.learning.ClientWeighting):
    raise TypeError('`client_weighting` must be a `tff.learning.ClientWeighting`'
                    f', got {client_weighting!r}.')


def optional_clip(name: str, value: Optional[float]) -> None:
  check_positive_float(name, value, allow_none=True)


def check_embedding_selection(selection: Any, model) -> None:
  """Checks an `EmbeddingSelection` against the model it slices."""
  if not isinstance(selection, embedding_select.EmbeddingSelection):
    raise TypeError('`embedding_selection` must be a '
                    '`tff_mixed.EmbeddingSelection`, got '
                    f'{type(selection).__name__}.')
  trainable = model.initial_weights[0]
  index = selection.table_index
  if (isinstance(index, bool) or not isinstance(index, int)
      or not 0 <= index < len(trainable)):
    raise ValueError(f'`embedding_selection.table_index` must index the '
                     f'{len(trainable)} trainable weights, got {index!r}.')
  table = trainable[index]
  if table.ndim != 2 or table.shape[0] != selection.num_rows:
    raise ValueError(
        f'`embedding_selection.num_rows` is {selection.num_rows}, but '
        f'trainable weight {index} has shape {table.shape}; it must be the '
        '[num_rows, d] embedding table.')
  keys = selection.keys_per_client
  if (isinstance(keys, bool) or not isinstance(keys, int)
      or not 1 <= keys <= selection.num_rows):
    raise ValueError('`embedding_selection.keys_per_client` must be an int in '
                     f'[1, {selection.num_rows}], got {keys!r}.')
  local = selection.local_model.initial_weights[0]
  expected = [(keys, *w.shape[1:]) if i == index else w.shape
              for i, w in enumerate(trainable)]
  if [tuple(w.shape) for w in local] != [tuple(e) for e in expected]:
    raise ValueError(
        '`embedding_selection.local_model` must have the model\'s weights '
        f'with a {keys}-row table: expected shapes {expected}, got '
        f'{[w.shape for w in local]}.')
  for name in ('ids_fn', 'remap_fn'):
    if not callable(getattr(selection, name)):
      raise TypeError(f'`embedding_selection.{name}` must be callable.')


# ----------------------------------------------------------------------------
# Checks of the asynchronous package (Feddle, the hybrid baselines): plain
# numbers, and weights given as sequences of arrays shaped like the model's.
# Every bad input gets a ValueError or TypeError naming the argument.

Weights = Sequence[Any]


# What each rule object a component takes must have (docs/COMPOSING.md,
# "Choices are rule objects"): every rule is called, and some have boolean
# attributes that say what the component must compute or keep for them.
# Checked when the component is built, so a rule missing one is refused
# there, naming it, not deep in the traced `next`.
RULE_PROTOCOLS = {
    'step_gradient': (('uses_augmenting_gradient',),
                      'components.MixedGradient(w_f, w_c)'),
    'local_data': ((), 'components.MergedData(batch_size)'),
    'step_rule': (('uses_federated_gradient',),
                  'components.MixedCentralSteps(w_c, w_f)'),
    'augmenting_gradient': (('evaluated_at_model', 'carried_in_state'),
                            'components.GradientAtModel()'),
}


def check_rule(name: str, rule: Any) -> None:
  """Raises TypeError if `rule` lacks what the rule `name` must have."""
  flags, example = RULE_PROTOCOLS[name]
  problems = []
  if not callable(rule):
    problems.append('it is not callable')
  for flag in flags:
    if not isinstance(getattr(rule, flag, None), bool):
      problems.append(f'no boolean attribute `{flag}`')
  if problems:
    raise TypeError(
        f'`{name}` {rule!r} is not a {name} rule: {"; ".join(problems)} '
        f'(see docs/COMPOSING.md, "Choices are rule objects"; e.g. '
        f'`{example}`).')


def check_algorithm_name(name: str, names: Sequence[str], kind: str,
                         other_kind: str, other_registry: str) -> None:
  """Raises a `ValueError` if `name` is not among `names`, the `kind`
  algorithms of a registry, naming them and the registry of the
  `other_kind` ones: the synchronous and the asynchronous registries sit
  side by side, and neither imports the other."""
  if name not in names:
    raise ValueError(
        f'Unknown {kind} algorithm {name!r}; the {kind} algorithms are '
        f'{list(names)}. The {other_kind} ones are built by '
        f'`{other_registry}`.')


def check_int(name: str, value: Any, minimum: int) -> int:
  """`value` as an int, which must be >= `minimum` (bools refused)."""
  if (isinstance(value, (bool, np.bool_))
      or not isinstance(value, (int, np.integer)) or value < minimum):
    raise ValueError(f'`{name}` must be an int >= {minimum}, got {value!r}.')
  return int(value)


def check_float(name: str, value: Any, minimum: float, strict: bool) -> float:
  """A finite real number >= minimum (> minimum when `strict`)."""
  ok = (isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)
        and (value > minimum if strict else value >= minimum))
  if not ok:
    relation = '>' if strict else '>='
    raise ValueError(f'`{name}` must be a finite number {relation} {minimum}, '
                     f'got {value!r}.')
  return float(value)


def as_arrays(weights: Weights, name: str) -> tuple[np.ndarray, ...]:
  """A sequence of weight arrays as a tuple of numpy arrays."""
  if isinstance(weights, (np.ndarray, tf.Tensor)) or not isinstance(
      weights, Sequence):
    raise TypeError(f'`{name}` must be a sequence of weight arrays, got '
                    f'{type(weights).__name__}.')
  return tuple(np.asarray(w) for w in weights)


def check_like(value: Weights, reference: Sequence[Any], name: str,
               reference_name: str = 'the model weights'
              ) -> tuple[np.ndarray, ...]:
  """`value` as arrays with `reference`'s dtypes, checked for its shapes."""
  arrays = as_arrays(value, name)
  shapes = [a.shape for a in arrays]
  expected = [np.shape(r) for r in reference]
  if shapes != expected:
    raise ValueError(f'`{name}` has weight shapes {shapes}, but '
                     f'{reference_name} has shapes {expected}.')
  return tuple(a.astype(np.asarray(r).dtype, copy=False)
               for a, r in zip(arrays, reference))
