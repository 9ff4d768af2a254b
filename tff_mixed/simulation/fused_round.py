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
"""A process's round with its local computations fused, for simulation speed.

A composed process (`mixed_process.py`, TFF's `compose_learning_process`)
is wiring of small computations: each component's `next` applies its own
TF computations at the server, zips and selects values, and aggregates. TFF's
local runtime pays for every intrinsic it executes: measured here, grouped
FedAvg on round_time's small model executes 29 `federated_apply`s, 9 server
zips, 5 `federated_map`s and 3 aggregations a round, about 45 ms at 10
clients of which training is a few.

TFF's own MapReduceForm compiler
(`tff.backends.mapreduce.get_map_reduce_form_for_computation`) rewrites such
a round into one TF computation per stage: `prepare` at the server, a
broadcast, `work` on each client (here, each group of clients), one
`federated_aggregate` (`zero`, `accumulate`, `merge`, `report`) and
`update` at the server. `build_fused_next` wires those stages back into a
federated computation of the same type, which runs the same arithmetic with
seven intrinsics (tests/fused_round_test.py: the same states and
metrics). TFF's generic wiring of a MapReduceForm also runs its secure-sum
stages, which the local runtime refuses even when they are empty ("Cannot
embed a federated value"); this one leaves them out, and refuses a process
that has non-empty ones.

What TFF's compiler cannot put in that form is refused by it with its
message, e.g. `federated_select` (the movie task's embedding slices).
"""

import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.simulation import multi_round


def _grappler_config() -> tf.compat.v1.ConfigProto:
  """TFF's default Grappler rewrites for the form, less memory optimization.

  Its recomputation duplicated node names in a Parallel Training round's
  merged graph and aborted the process ("Non unique node name detected:
  Recomputed/..."); the others are TFF's defaults.
  """
  config = tf.compat.v1.ConfigProto()
  rewrites = config.graph_options.rewrite_options
  for name in ('constant_folding', 'arithmetic_optimization',
               'loop_optimization', 'function_optimization'):
    setattr(rewrites, name, rewrites.AGGRESSIVE)
  rewrites.memory_optimization = rewrites.NO_MEM_OPT
  return config


def _python_value(value):
  """`value` with TFF's structs as Python containers, all the way down.

  Inside a TF computation, TFF 0.87 infers the type of another one's
  argument only through Python containers (a nested struct fails with
  "Unexpected type found: SymbolicTensor").
  """
  if isinstance(value, tff.structure.Struct):
    return tff.structure.to_odict_or_tuple(value, recursive=True)
  return value


def build_fused_next(next_fn: tff.Computation) -> tff.Computation:
  """`next_fn` with each stage compiled to one TF computation.

  Args:
    next_fn: A process's `next`, `(<S@SERVER, D@CLIENTS> -> <state=S@SERVER,
      metrics=M@SERVER>)` (a `tff.learning.templates.LearningProcess`'s).

  Returns:
    A `tff.Computation` of the same type: `prepare`, broadcast, `work`,
    aggregate and `update` of `next_fn`'s MapReduceForm. A
    `tff.learning.templates.LearningProcess` can take it as its `next`.

  Raises:
    TypeError: If `next_fn` is not a round (`multi_round.check_round`).
    ValueError: If `next_fn` uses secure sums, or TFF's compiler cannot
      bring it into a MapReduceForm (its message says why).
  """
  signature = multi_round.check_round(next_fn)
  parameter, result = signature.parameter, signature.result
  try:
    form = tff.backends.mapreduce.get_map_reduce_form_for_computation(
        next_fn, _grappler_config())
  except (ValueError, TypeError, NotImplementedError) as e:
    raise ValueError(f'This round cannot be fused: TFF\'s MapReduceForm '
                     f'compiler refused it ({type(e).__name__}: {e}).') from e
  for name in ('secure_sum_bitwidth', 'secure_sum_max_input',
               'secure_modular_sum_modulus'):
    secure = getattr(form, name).type_signature.result
    if not isinstance(secure, tff.StructType) or len(secure):
      raise ValueError(f'`next_fn` uses secure sums ({name}: {secure}); a '
                       'fused round runs only plain aggregation.')
  # The three secure-sum results `update` takes, all empty.
  no_secure_sums = ((), (), ())
  # The form's stages drop Python containers (a `MixedFLState` comes back
  # as a plain struct); an identity of the declared types restores them.
  restore = tff.tensorflow.computation(
      lambda state, metrics: (state, metrics), parameter[0].member,
      result.metrics.member)

  # `update` and the restoring identity in one TF computation: every
  # intrinsic costs TFF's runtime a dispatch, and this one replaces six
  # of them a round (the secure sums' values and zips, the two restores):
  # 17.1 against 18.6 ms a round, grouped FedAvg on round_time's small
  # model at 100 clients (one process, interleaved, 2026-11-28).
  @tff.tensorflow.computation(parameter[0].member,
                              form.report.type_signature.result)
  def update(state, aggregate):
    updated = _python_value(form.update(
        _python_value(state), (_python_value(aggregate), *no_secure_sums)))
    new_state, metrics = (updated.values() if isinstance(updated, dict)
                          else updated)
    return restore(new_state, metrics)

  # The parameter as `next_fn` declares it (names included), so that both
  # have one type.
  @tff.federated_computation(parameter)
  def fused_next(arguments):
    state, data = arguments[0], arguments[1]
    broadcast = tff.federated_broadcast(tff.federated_map(form.prepare,
                                                          state))
    work = tff.federated_map(form.work, tff.federated_zip((data, broadcast)))
    aggregate = tff.federated_aggregate(work[0], form.zero(), form.accumulate,
                                        form.merge, form.report)
    updated = tff.federated_map(update, tff.federated_zip((state, aggregate)))
    return tff.learning.templates.LearningProcessOutput(updated[0],
                                                        updated[1])

  return fused_next


def build_fused_process(
    process: tff.learning.templates.LearningProcess,
) -> tff.learning.templates.LearningProcess:
  """`process` with its `next` fused (`build_fused_next`); all else as is."""
  return tff.learning.templates.LearningProcess(
      process.initialize, build_fused_next(process.next),
      process.get_model_weights, process.set_model_weights)
