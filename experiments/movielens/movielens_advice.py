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
"""`--advise_rounds` of the MovieLens binary: the algorithm advisor's probe.

The mixed scenarios train through `tff.federated_select` embedding slices,
which do not report the advisor's estimates; the probe is therefore the
binary's table 4 path (`movielens_lib.run_experiment(...,
with_diagnostics=True)`, the whole table broadcast) run as Parallel
Training at the run's own settings (K, S, client batch, eta = eta_c,
eta_s = eta_m = 1, w_f, w_c), under `<output_dir>/advice/` and resumable
like every scenario (a larger `--advise_rounds` extends it).

f_c here is the spreadout, a data-free regularizer of the table: the
process is built with |B_c| = `movielens_config.CENTRAL_BATCH_SIZE` but never
draws a central batch, so every "batch" gradient is the exact gradient of
f_c and sigma_c^2 (eq. 6, their sample variance) is 0 up to float
rounding, for every algorithm's |B_c| alike. The advisor reads a zero
sigma_c^2 without dividing by it (`tff_mixed/advisor/bounds.py` multiplies
it; `advice.py` divides only by bounds and variance terms it checks for
0); 1-way GT's bound then equals 2-way GT's (to rounding), so the advice here is
Parallel Training or 1-way GT, never 2-way GT.
"""

import os
from typing import Optional

from experiments.common import advising
from experiments.common import run_loop
from experiments.movielens import movielens_config
from experiments.movielens import movielens_lib
from tff_mixed.advisor import advice as advice_lib
from tff_mixed import registry

PROBE_SCENARIO = movielens_config.PARALLEL_TRAINING


def probe_metrics_path(output_dir: str) -> str:
  """The probe runner's per-round metrics CSV under `output_dir`."""
  probe_dir = os.path.join(output_dir, advising.PROBE_DIR)
  return run_loop.metrics_path(probe_dir, PROBE_SCENARIO)


def run_advice(ratings_file: str, *, rounds: int,
               config: movielens_config.Config, output_dir: str,
               skip_malformed: bool = False,
               progress: Optional[bool] = None,
               records_dir: Optional[str] = None,
               command: str = '') -> tuple[advice_lib.Advice, dict]:
  """The probe run and its advice (module docstring).

  Args:
    ratings_file: MovieLens `ratings.dat` or `u.data`.
    rounds: The probe's rounds, N of `--advise_rounds`.
    config: The run's settings; the probe takes all but `rounds`.
    output_dir: The run's output directory: the probe trains under
      `<output_dir>/advice/`, and advice.json and advice.md go here.
    skip_malformed: As in `movielens_lib.run_experiment`.
    progress: Progress bars (None: on terminals).
    records_dir: If set, advice.json and advice.md are also written to
      `<records_dir>/advice/` (committed, so the advice outlives the
      run's outputs).
    command: The command line, for the probe's config.json.

  Returns:
    `(advice, {kind: path})` of the files written.

  Raises:
    ValueError: For bad settings (`run_experiment`'s checks).
  """
  if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
    raise ValueError(f'`rounds` must be a positive int, got {rounds!r}.')
  movielens_lib.run_experiment(
      ratings_file, scenarios=[PROBE_SCENARIO],
      config=config._replace(rounds=rounds),
      output_dir=os.path.join(output_dir, advising.PROBE_DIR),
      skip_malformed=skip_malformed, progress=progress, command=command,
      with_diagnostics=True)
  batch_sizes = {a: movielens_config.CENTRAL_BATCH_SIZE for a in (
      registry.PARALLEL_TRAINING, registry.ONE_WAY_GT, registry.TWO_WAY_GT)}
  advice = advice_lib.advise(
      advising.read_metrics_rows(probe_metrics_path(output_dir)),
      last_round=rounds, client_steps=config.client_steps,
      cohort_size=config.clients_per_round,
      client_learning_rate=config.client_lr,
      central_learning_rate=config.client_lr,
      federated_weight=config.federated_weight,
      central_weight=config.central_weight,
      central_batch_sizes=batch_sizes,
      measured_central_batch_size=movielens_config.CENTRAL_BATCH_SIZE,
      seed=config.seed)
  return advice, advising.write_advice(output_dir, advice, records_dir)
