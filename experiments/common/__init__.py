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
"""What the experiment binaries share, kept out of the `tff_mixed` library.

Comparisons of scenarios (`scenarios`, `comparison`, `records`, `grouping`)
and their tables and plots (`tables`, `plots`), the synchronous studies' one
run loop (`run_loop`), every study's kept runs and committed records
(`run_store`), the RESULTS.md bookkeeping (`results`: generated sections;
`claims`: a paper's claims beside our numbers), the
advisor's probe run (`advising`), table 4's (G, B)-BGD estimates read back
from a run (`bgd_diagnostics`), the binaries' entry point (`cli`) and the
flags several binaries take, each defined once (`shared_flags`).
Nothing in `tff_mixed` imports this package; what serves one study only stays
with that study in `experiments/<task>/`.
"""
