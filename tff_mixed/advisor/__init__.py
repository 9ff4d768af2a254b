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
"""The algorithm advisor: which mixed FL algorithm suits a task.

Reads the per-round estimates of arXiv:2205.13655's section 5 constants
(sigma^2, sigma_c^2, the (G, B)-BGD estimates, the smoothness beta; computed
by the central work, `tff_mixed/core/round_estimates.py`) over a run's first
rounds, and table 3's nonconvex bounds and appendix C's learning-rate
conditions with them: `estimates` (over a window of rounds), `bounds`
(table 3, tables 12-13), `advice` (the rule, `advise` and `Advice`).
"""
