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
"""Asynchronous FL with hybrid data: arrivals, strategies, Feddle, baselines.

Clients report stale updates at simulated arrival rounds; the server, which
also holds data of its own, merges them (the guided-model-merging paper,
Zhu et al., "Guided Model Merging for Hybrid Data Learning"). Every
algorithm implements `strategy.AsyncStrategy` (with the observer that sees
its merges) and is built by name through `registry`
(`tff_mixed.async_registry`), from `builders`. Modules: `schedule` (who is
sampled and when each update arrives), `client_training`
(the TFF federated computation of the clients' local training),
`loadaboost` (LoAdaBoost's loss-driven local epochs, same contract),
`server_strategies` (FedAsync, FedBuff, CA2FL) with FedAsync's `staleness`
functions, `deadline_fedavg` (synchronous FedAvg dropping late
updates), `simulation` (one round as
`AsyncProcess`, and `run_async`, driven by `training.round_loop.run_rounds`);
Feddle in `feddle` (the server round and its server method), `feddle_atlas`
(anchors, eq. 4 normalization, FedBuff's fallback), `anchor_merging` (eq. 6
and the coefficient gradient), `coefficient_search` (eqs. 5, 10),
`ood_surrogate` (eqs. 8-9) and `server_data` (checking and batching the
server's data); the hybrid baselines in `hybrid_baselines` (Center, Fed+FT,
HFCL, FedDF as server methods), `server_sgd`, `hfcl` and `feddf`. The
paper's hyperparameter grids (appendix D) serve its experiment only and live
with it (`experiments/hybrid_async/tuning.py`).
"""
