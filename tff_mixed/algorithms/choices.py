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
"""The component choices the built-in algorithms share.

A built-in builder checks its arguments once (`arguments.py`), builds what
only it chooses (its central work, its finalizer's configuration), and asks
this module for the rest of its `Components`: how x^(t) reaches the clients
and how their updates come back (broadcast and the model aggregator's mean,
or `federated_select` and the scatter-back; each, with `client_groups`, as
its adapter for groups of clients), the client work, and the finalizer. It
then hands them to `components.compose_mixed_process`, the composer users
call too (arXiv:2205.13655, Algorithms 1-2).
"""

from typing import Optional

from tff_mixed.algorithms import arguments
from tff_mixed.core import aggregators
from tff_mixed.core import central_work
from tff_mixed.core import client_work
from tff_mixed.core import distributors
from tff_mixed.core import finalizer
from tff_mixed.core import mixed_process
from tff_mixed.core import model_types
from tff_mixed.core import transfer_select
from tff_mixed.simulation import group_aggregation
from tff_mixed.simulation import group_distribution
from tff_mixed.simulation import group_work


def _distribution(args: arguments.BuilderArgs, with_gradient: bool,
                  transfer: Optional[transfer_select.TransferComputations]):
  """The distributor of x^(t) (and g~_c, or transferred examples) and the
  aggregator that matches it.

  Without `embedding_selection`: broadcast, and the model aggregator's
  weighted mean (with groups and a factory other than the plain mean, run on
  each member: `group_aggregation.build_group_aggregator`). With it: the
  table (and g~_c's table part) by `federated_select`, and the scatter-back.
  `transfer` adds each client's central examples to the broadcast.
  """
  model, selection = args.model, args.embedding_selection
  trainable_type = model_types.weights_type(model).trainable
  groups = args.client_groups is not None
  if selection is not None:
    if groups:
      return (group_distribution.build_group_select_distributor(
          model, selection, with_gradient, args.client_steps),
              group_distribution.build_group_scatter_back_aggregator(
                  selection, trainable_type))
    return (distributors.build_select_distributor(
        model, selection, with_gradient, args.client_steps),
            aggregators.build_scatter_back_aggregator(selection,
                                                      trainable_type))
  if groups and not group_aggregation.is_plain_mean(args.model_aggregator):
    aggregator = group_aggregation.build_group_aggregator(
        args.model_aggregator, trainable_type)
  else:
    aggregator = aggregators.build_mean_aggregator(args.model_aggregator,
                                                   trainable_type)
  distributor = distributors.build_broadcast_distributor(model, with_gradient)
  if transfer is not None:
    distributor = (distributors.build_transfer_distributor(distributor,
                                                           transfer)
                   if not groups else
                   group_distribution.build_group_transfer_distributor(
                       distributor, transfer))
  return distributor, aggregator


def _components(args: arguments.BuilderArgs, *, with_gradient: bool,
                transfer, client_config: client_work.ClientWorkConfig,
                central: central_work.CentralWork,
                finalizer_config: finalizer.FinalizerConfig
                ) -> mixed_process.Components:
  """The distribution, the client work (a group's with `client_groups`:
  `group_work.build_group_components`) and the finalizer, around
  `central`."""
  distributor, aggregator = _distribution(args, with_gradient, transfer)
  if args.client_groups is None:
    work = client_work.build_client_work(args.model, distributor,
                                         client_config, args.client_optimizer)
  else:
    distributor, work, aggregator = group_work.build_group_components(
        args.model, distributor, aggregator, client_config,
        args.client_optimizer, args.client_groups)
  return mixed_process.Components(
      distributor=distributor, client_work=work, aggregator=aggregator,
      central_work=central,
      finalizer=finalizer.build_finalizer(
          args.model, finalizer_config, central, args.server_optimizer,
          args.merge_optimizer))


def mixed_components(
    args: arguments.BuilderArgs,
    *,
    central: central_work.CentralWork,
    send_central_gradient: bool,
    finalizer_config: Optional[finalizer.FinalizerConfig] = None,
) -> mixed_process.Components:
  """PT's and GT's components around their central work: x^(t) [and g~_c]
  to the clients, K local steps each.

  With `send_central_gradient` the distributor sends g~_c and every local
  step adds `w_c g~_c`. `finalizer_config` defaults to SERVEROPTIMIZER (and
  the merge, with central steps) without recovery of g~_f.
  """
  w_f, w_c = args.federated_weight, args.central_weight
  return _components(
      args, with_gradient=send_central_gradient, transfer=None,
      client_config=client_work.ClientWorkConfig(
          weighting=args.client_weighting, num_steps=args.client_steps,
          step_gradient=(client_work.MixedGradient(w_f, w_c)
                         if send_central_gradient else
                         client_work.PlainGradient()),
          with_probe_gradient=args.with_diagnostics),
      central=central,
      finalizer_config=finalizer_config or finalizer.FinalizerConfig(w_f, w_c))


def federated_only_components(
    args: arguments.BuilderArgs,
    *,
    transfer: Optional[transfer_select.TransferComputations] = None,
    transfer_batch_size: Optional[int] = None,
) -> mixed_process.Components:
  """The components of a process without central work (w_f = 1, w_c = 0).

  FedAvg (`fedavg.py`), and with `transfer` Example Transfer: the clients'
  local training (on their data merged with the transferred examples in
  batches of `transfer_batch_size`), the aggregator's mean, no central steps
  and SERVEROPTIMIZER alone in the finalizer.
  """
  return _components(
      args, with_gradient=False, transfer=transfer,
      client_config=client_work.ClientWorkConfig(
          weighting=args.client_weighting, num_steps=args.client_steps,
          local_data=(client_work.OwnData() if transfer is None
                      else client_work.MergedData(transfer_batch_size))),
      central=central_work.build_central_work(args.model, None, None,
                                              args.central),
      finalizer_config=finalizer.FinalizerConfig(1.0, 0.0))
