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
"""Tasks: real-data federated problems for experiments and tests.

Each task reads its data (bundled digits, TFF's CelebA, MovieLens files,
Stack Overflow with Wikipedia or WikiText, images for the hybrid experiment),
splits it into federated clients and central data, and evaluates a model on
it; shared pieces are the Dirichlet label partition, binary metrics,
character sequences and text corpora. Layer: above `models/` and the layers
below it (`asynchronous/`, `training/`, `core/`, `runtime.py`), which a task
may import; below `algorithms/` and the `tff_mixed` facade, which it never
imports (nor `experiments/` or `benchmarks/`).
"""
