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
"""Aggregation factories that act on each client's update, in client groups.

A group of clients (`client_groups.py`) uploads sums over its members, so an
aggregator that transforms each client's update before the sum runs in
groups only if the transformation is moved into the group: the server sends
the groups what it would send each client (`MemberRecords.parameters`,
the aggregator's `client_parameters`), each member's update becomes a
*record* in its group (`MemberRecords.preprocess`), the groups upload the
sum of their members' records, and the server finishes on the total what
TFF's per-client process finishes on the sum over clients. The factories that work this way are
nested *stages*, each one's record holding its inner stage's:

*   a weighted `tff.aggregators.MeanFactory` with plain sums: the record is
    `(p_i Delta_i, p_i)`, the result their quotient;
*   a `tff.aggregators.DifferentiallyPrivateFactory` (fixed or adaptive
    clipping, Gaussian noise on the sum): the record is the DP query's
    `preprocess_record` (the clipped update), the server calls
    `get_noised_result` (McMahan et al. 2018; Andrew et al. 2021);
*   TFF's clipping and zeroing wrappers (`tff.aggregators.clipping_factory`,
    `zeroing_factory`, and both in `tff.learning.robust_aggregator` and
    `tff.learning.dp_aggregator`), with a fixed norm or one estimated by
    TFF's no-noise quantile estimator (`PrivateQuantileEstimationProcess.
    no_noise`, the geometric update of Andrew et al. 2021, "Differentially
    Private Learning with Adaptive Clipping", arXiv:1905.03871): the server
    broadcasts the norm and the estimator's sample parameters; the record is
    the inner stage's record of the clipped (or zeroed) update, the
    estimator's record of the update's norm (whether it is at most the
    estimate) and whether it was clipped; the server adds them, updates the
    estimator as its `next` would, and counts the clipped updates.

State and measurements have the per-client process's types and values, so
metrics files and checkpoints read the same in both modes. A factory is
recognized by the computation it builds (equal to a reference built from
TFF's public constructors), so one whose per-client step does anything else
(secure sums, noise added on each client, a different estimator) is refused
with an error naming it.
"""

import collections
from collections.abc import Callable
import functools
import inspect
import math
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
import tensorflow_privacy as tfp

from tff_mixed.core import aggregators

# The value type the recognizers build processes for: which computation a
# factory builds does not depend on it.
_PROBE_TYPE = tff.TensorType(np.float32, [1])
_SUPPORTED = (
    'client groups reproduce a weighted `tff.aggregators.MeanFactory` with '
    'plain sums, a `tff.aggregators.DifferentiallyPrivateFactory`, and '
    'TFF\'s clipping and zeroing wrappers around them '
    '(`tff.learning.robust_aggregator(weighted=True)`, '
    '`tff.learning.dp_aggregator`, `tff.aggregators.clipping_factory` and '
    '`zeroing_factory` with a fixed norm or a '
    '`PrivateQuantileEstimationProcess.no_noise` norm without secure '
    'estimation)')


class _Stage(NamedTuple):
  """One factory's part of the grouped aggregation (module docstring).

  Attributes:
    parameters: `(state@SERVER -> P@SERVER)`, federated: what the groups get.
    parameters_type: The TFF type `P`.
    preprocess: `(P, value, weight) -> record`, pure TF, once per member.
    finish: `(state@SERVER, total@SERVER) -> (state, result, measurements)`
      at SERVER, federated: `total` is the sum of every member's record.
  """

  parameters: Callable[[Any], Any]
  parameters_type: tff.Type
  preprocess: Callable[[Any, Any, Any], Any]
  finish: Callable[[Any, Any], tuple[Any, Any, Any]]


class _RobustParts(NamedTuple):
  """What TFF's clipping or zeroing wrapper is made of."""

  clipping: bool  # False: zeroing.
  norm_process: tff.templates.EstimationProcess
  inner_factory: tff.aggregators.AggregationFactory
  count_process: tff.templates.AggregationProcess
  prefix: Callable[[str], str]
  norm_order: float  # Zeroing's norm; clipping's is L2.


def _robust_parts(factory: Any) -> Optional[_RobustParts]:
  """The parts of a `clipping_factory` or `zeroing_factory`, else `None`.

  TFF 0.87 builds these factories as classes local to
  `tensorflow_federated.python.aggregators.robust._make_wrapper` and keeps
  their parts in the closures of their `create`; this is the one place that
  reads them, and `tests/client_groups_test.py` fails here first if a TFF
  release changes them.
  """
  if type(factory).__qualname__ not in (
      '_make_wrapper.<locals>.WeightedRobustFactory',
      '_make_wrapper.<locals>.UnweightedRobustFactory'):
    return None
  create = inspect.getclosurevars(type(factory).create).nonlocals
  init = inspect.getclosurevars(create['init_fn_impl']).nonlocals
  make_fn = create['make_clip_fn']
  clipping = make_fn.__qualname__.startswith('clipping_factory.')
  return _RobustParts(
      clipping=clipping, norm_process=init['clipping_norm_process'],
      inner_factory=create['inner_agg_factory'],
      count_process=init['clipped_count_agg_process'], prefix=init['prefix'],
      norm_order=(2.0 if clipping else
                  inspect.getclosurevars(make_fn).nonlocals['norm_order']))


def _refuse(factory: Any, why: str) -> ValueError:
  return ValueError(
      f'`model_aggregator` {type(factory).__name__} cannot run in client '
      f'groups (`client_groups`): {why}. A group uploads sums over its '
      f'members; {_SUPPORTED}. Use `client_groups=None` (one client per '
      'member) with this aggregator.')


def dp_query(factory: tff.aggregators.DifferentiallyPrivateFactory):
  """The `DPQuery` of a `DifferentiallyPrivateFactory`.

  TFF keeps it private; `tests/client_groups_test.py` fails here first if a
  TFF release renames it.
  """
  return factory._query  # pylint: disable=protected-access


def _plain_mean_division(factory: Any) -> Optional[bool]:
  """For a weighted mean of plain sums, whether it divides with no NaN."""
  if not isinstance(factory, tff.aggregators.WeightedAggregationFactory):
    return None
  try:
    built = factory.create(_PROBE_TYPE, tff.TensorType(np.float32)).next
  except (TypeError, ValueError):
    return None
  for no_nan in (False, True):
    if built == _reference_mean_next(no_nan):
      return no_nan
  return None


@functools.lru_cache(maxsize=None)
def _reference_mean_next(no_nan: bool) -> tff.Computation:
  # Built once: each builder asks whether its aggregator is a plain mean.
  return tff.aggregators.MeanFactory(no_nan_division=no_nan).create(
      _PROBE_TYPE, tff.TensorType(np.float32)).next


def is_plain_mean(factory: Any) -> bool:
  """Whether `factory` builds a weighted `MeanFactory` of plain sums."""
  return _plain_mean_division(factory) is not None


def _estimator_query(parts: _RobustParts, factory: Any):
  """The quantile query of the wrapper's norm process; `None`: fixed norm."""
  state = parts.norm_process.state_type.member
  if isinstance(state, tff.StructType) and not state:
    return None  # A fixed norm: no state, nothing to update.
  if parts.norm_process.next != _reference_estimator_next():
    raise _refuse(factory, 'its norm is estimated by a process other than '
                  'TFF\'s no-noise quantile estimator with plain sums')
  return _quantile_query()


def _quantile_query() -> tfp.NoPrivacyQuantileEstimatorQuery:
  # The estimator's hyperparameters (quantile, learning rate, estimate) are
  # in its state, so any no-noise geometric estimator's `next` is this one's.
  return tfp.NoPrivacyQuantileEstimatorQuery(
      initial_estimate=1.0, target_quantile=0.5, learning_rate=1.0,
      geometric_update=True)


@functools.lru_cache(maxsize=None)
def _reference_estimator_next() -> tff.Computation:
  # Built once, as `_reference_mean_next`.
  return tff.aggregators.PrivateQuantileEstimationProcess(
      _quantile_query(), tff.aggregators.SumFactory()).next


@functools.lru_cache(maxsize=None)
def _reference_count_next() -> tff.Computation:
  # Built once, as `_reference_mean_next`.
  return tff.aggregators.SumFactory().create(tff.TensorType(np.int32)).next


def check_groupable(factory: Any) -> None:
  """Raises `ValueError` unless groups can reproduce `factory` (docstring)."""
  if not isinstance(factory, (tff.aggregators.WeightedAggregationFactory,
                              tff.aggregators.UnweightedAggregationFactory)):
    raise TypeError(
        '`model_aggregator` must be a `tff.aggregators.'
        'WeightedAggregationFactory` or `UnweightedAggregationFactory`, got '
        f'{type(factory).__name__}.')
  if (is_plain_mean(factory) or
      isinstance(factory, tff.aggregators.DifferentiallyPrivateFactory)):
    return
  parts = _robust_parts(factory)
  if parts is None:
    raise _refuse(factory, 'it is not an aggregation a group of clients '
                  'can reproduce from sums over its members (e.g. noise '
                  'added on each client, as distributed DP does, secure '
                  'sums, or an unweighted mean)')
  if parts.count_process.next != _reference_count_next():
    raise _refuse(factory, 'it counts clipped or zeroed updates with a sum '
                  'other than a plain one (e.g. a secure sum)')
  _estimator_query(parts, factory)
  check_groupable(parts.inner_factory)


def _record_type(preprocess, parameters_type, value_type):
  return tff.tensorflow.computation(
      preprocess, parameters_type, value_type,
      tff.TensorType(np.float32)).type_signature.result


def _server(fn: Callable[..., Any], *arg_types: tff.Type) -> Callable:
  """`fn` as a TF computation, mapped onto SERVER values."""
  computation = tff.tensorflow.computation(fn, *arg_types)
  return lambda *values: tff.federated_map(
      computation, values[0] if len(values) == 1 else values)


def _nothing():
  return tff.federated_value((), tff.SERVER)


def _mean_stage(no_nan: bool, value_type: tff.Type) -> _Stage:
  """A weighted `MeanFactory` of plain sums, as its `next` computes it."""

  def preprocess(parameters, value, weight):
    del parameters
    return (tf.nest.map_structure(lambda x: x * tf.cast(weight, x.dtype),
                                  value), weight)

  divide = tf.math.divide_no_nan if no_nan else tf.math.divide
  quotient = _server(
      lambda total: tf.nest.map_structure(
          lambda x: divide(x, tf.cast(total[1], x.dtype)), total[0]),
      _record_type(preprocess, tff.StructType([]), value_type))

  def finish(state, total):
    measurements = tff.federated_zip(collections.OrderedDict(
        mean_value=_nothing(), mean_weight=_nothing()))
    return state, quotient(total), measurements

  return _Stage(lambda state: _nothing(), tff.StructType([]), preprocess,
                finish)


def _dp_stage(factory: tff.aggregators.DifferentiallyPrivateFactory,
              value_type: tff.Type) -> _Stage:
  """A `DifferentiallyPrivateFactory`: records by its DP query, unweighted."""
  query = dp_query(factory)
  query_state_type = factory.create(
      value_type).initialize.type_signature.result.member[0]
  derive = _server(query.derive_sample_params, query_state_type)
  parameters_type = tff.tensorflow.computation(
      query.derive_sample_params, query_state_type).type_signature.result

  def preprocess(parameters, value, weight):
    del weight  # DP averages with equal weights.
    return query.preprocess_record(parameters, value)

  def noised(total, query_state):
    result, new_query_state, event = query.get_noised_result(total,
                                                             query_state)
    return result, new_query_state, event.to_named_tuple()

  noised_result = _server(noised, _record_type(
      preprocess, parameters_type, value_type), query_state_type)
  derive_metrics = _server(query.derive_metrics, query_state_type)

  def finish(state, total):
    result, new_query_state, dp_event = noised_result(total,
                                                      state.query_state)
    new_state = tff.federated_zip(collections.OrderedDict(
        query_state=new_query_state, agg_state=state.agg_state,
        dp_event=dp_event,
        is_init_state=tff.federated_value(False, tff.SERVER)))
    measurements = tff.federated_zip(collections.OrderedDict(
        dp_query_metrics=derive_metrics(new_query_state), dp=_nothing()))
    return new_state, result, measurements

  return _Stage(lambda state: derive(state.query_state), parameters_type,
                preprocess, finish)


def _norm(value, order: float):
  """The global norm of a structure of tensors, as TFF's wrappers take it."""
  parts = tf.nest.flatten(value)
  if order == 1.0:
    return tf.add_n([tf.cast(tf.norm(a, ord=1), tf.float32) for a in parts])
  if order == 2.0:
    return tf.math.sqrt(tf.add_n(
        [tf.cast(tf.norm(a, ord=2)**2, tf.float32) for a in parts]))
  assert math.isinf(order)
  return tf.reduce_max(tf.stack(
      [tf.cast(tf.norm(a, ord=np.inf), tf.float32) for a in parts]))


def _bound(value, norm, bound, clipping: bool):
  """`value` clipped to L2 norm `bound` (or zeroed) if `norm > bound`."""
  if clipping:
    shrink = lambda: tf.nest.map_structure(
        lambda x: x / tf.cast(norm / bound, x.dtype), value)
  else:
    shrink = lambda: tf.nest.map_structure(tf.zeros_like, value)
  return tf.cond(norm > bound, shrink, lambda: value)


def _robust_stage(factory: Any, parts: _RobustParts,
                  value_type: tff.Type) -> _Stage:
  """A clipping or zeroing wrapper around `_stage(parts.inner_factory)`."""
  inner = _stage(parts.inner_factory, value_type)
  query = _estimator_query(parts, factory)
  norm_key, count_key = parts.prefix('ing_norm'), parts.prefix('ed_count_agg')
  process = parts.norm_process
  if query is not None:
    query_state_type = process.state_type.member[0]
    derive = _server(query.derive_sample_params, query_state_type)
    sample_type = tff.tensorflow.computation(
        query.derive_sample_params, query_state_type).type_signature.result
    updated = _server(
        lambda total, state: query.get_noised_result(total, state)[1],
        tff.tensorflow.computation(query.preprocess_record, sample_type,
                                   np.float32).type_signature.result,
        query_state_type)
  parameters_type = tff.StructType([
      tff.TensorType(np.float32),
      tff.StructType([]) if query is None else sample_type,
      inner.parameters_type])

  def parameters(state):
    norm_state = getattr(state, norm_key)
    return tff.federated_zip((
        process.report(norm_state),
        _nothing() if query is None else derive(norm_state[0]),
        inner.parameters(state.inner_agg)))

  def preprocess(parameters, value, weight):
    norm = _norm(value, parts.norm_order)
    bounded = _bound(value, norm, parameters[0], parts.clipping)
    return (inner.preprocess(parameters[2], bounded, weight),
            () if query is None else query.preprocess_record(parameters[1],
                                                             norm),
            tf.cast(norm > parameters[0], tf.int32))

  def finish(state, total):
    norm_state = getattr(state, norm_key)
    new_norm_state = norm_state if query is None else tff.federated_zip(
        (updated(total[1], norm_state[0]), norm_state[1]))
    inner_state, result, inner_measurements = inner.finish(state.inner_agg,
                                                           total[0])
    new_state = tff.federated_zip(collections.OrderedDict([
        (norm_key, new_norm_state), ('inner_agg', inner_state),
        (count_key, getattr(state, count_key))]))
    measurements = tff.federated_zip(collections.OrderedDict([
        (parts.prefix('ing'), inner_measurements),
        (norm_key, process.report(norm_state)),
        (parts.prefix('ed_count'), total[2])]))
    return new_state, result, measurements

  return _Stage(parameters, parameters_type, preprocess, finish)


def _stage(factory: Any, value_type: tff.Type) -> _Stage:
  check_groupable(factory)
  if isinstance(factory, tff.aggregators.DifferentiallyPrivateFactory):
    return _dp_stage(factory, value_type)
  parts = _robust_parts(factory)
  if parts is not None:
    return _robust_stage(factory, parts, value_type)
  return _mean_stage(_plain_mean_division(factory), value_type)


class MemberRecords(NamedTuple):
  """What a group of clients computes per member for the aggregator.

  Attributes:
    parameters: `(state@SERVER -> P@SERVER)`, a Python function of federated
      values: the parameters the process broadcasts to the groups (e.g. the
      clipping norm, the DP query's sample parameters).
    parameters_type: The TFF type `P`.
    preprocess: `preprocess(parameters, update, weight) -> record`, pure TF,
      run on each member's update and weight (clipping, weighting); the
      group uploads the sum of its members' records.
  """

  parameters: Callable[[Any], Any]
  parameters_type: tff.Type
  preprocess: Callable[[Any, Any, Any], Any]


class GroupAggregator(NamedTuple):
  """An aggregator and what each group member computes for it.

  Attributes:
    aggregator: The `aggregators.Aggregator` the process composes; its
      `client_parameters` are `member_records.parameters`.
    member_records: The `MemberRecords` the group work runs.
  """

  aggregator: aggregators.Aggregator
  member_records: MemberRecords


def build_group_aggregator(factory: tff.aggregators.AggregationFactory,
                           trainable_type: tff.Type) -> GroupAggregator:
  """`factory`'s aggregation for groups of clients (module docstring).

  Args:
    factory: A factory `check_groupable` accepts: weighted (the members'
      weights count) or unweighted (they do not, as with
      `tff.aggregators.as_weighted_aggregator`).
    trainable_type: The TFF type of an update.

  Returns:
    A `GroupAggregator`: its aggregator's `aggregate` takes
    `GroupOutput@CLIENTS` and its state is the per-client process's; the
    group work (`group_work.build_group_work`) runs its member records.
  """
  if isinstance(factory, tff.aggregators.WeightedAggregationFactory):
    process = factory.create(trainable_type, tff.TensorType(np.float32))
  else:
    process = factory.create(trainable_type)
  stage = _stage(factory, trainable_type)

  def aggregate(state, group_outputs, keys):
    del keys  # Dense updates.
    new_state, result, measurements = stage.finish(
        state, tff.federated_sum(group_outputs.records))
    return aggregators.AggregatorOutput(new_state, result, measurements)

  return GroupAggregator(
      aggregators.Aggregator(process.initialize, aggregate,
                             client_parameters=stage.parameters),
      MemberRecords(stage.parameters, stage.parameters_type,
                    stage.preprocess))


def check_aggregators(model_aggregator: Any,
                            metrics_aggregator: Any) -> None:
  """Refuses aggregation a group of clients cannot reproduce.

  A group (`client_groups.py`) uploads sums over its members: their weighted
  mean update, the sum of their metrics, and the sum of their records for an
  aggregator that acts on each client's update. So only summed metrics
  (`tff.learning.metrics.sum_then_finalize`) give the per-client result, and
  only the model aggregators `check_groupable` recognizes
  (a plain weighted mean, DP, TFF's adaptive clipping and zeroing); secure
  sums and noise added on each client are refused.

  Args:
    model_aggregator: The requested model aggregation factory (`None`: the
      default weighted mean).
    metrics_aggregator: The requested metrics aggregator (`None`: the
      default `sum_then_finalize`).

  Raises:
    ValueError: For any other aggregator, naming it.
  """
  if model_aggregator is not None:
    check_groupable(model_aggregator)
  if metrics_aggregator not in (None, tff.learning.metrics.sum_then_finalize):
    raise ValueError(
        'Client groups (`client_groups`) sum their members\' metrics, which '
        'only `tff.learning.metrics.sum_then_finalize` (the default) '
        'finalizes exactly; use `client_groups=None` with metrics aggregator '
        f'{getattr(metrics_aggregator, "__name__", metrics_aggregator)!r}.')
