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
"""The algorithm advisor on the character LM (`--advise_rounds`).

The probe is the LM's own Parallel Training at the run's settings (K, S,
|B_i|, eta, w_f, w_c, its |B_c|, the clipping) with diagnostics on: the
path of the `--diagnostic_rounds` runs (`Config.with_diagnostics`,
`run_experiment`), but at the run's own K, for `rounds` rounds under
`<output_dir>/advice/`, resumable like every scenario. The advice reads its
runner metrics CSV (`experiments.common.advising`).

What the advisor is told is what the processes use
(`lm_runs.build_process`): eta = eta_c = `client_lr`
(the registry's central steps take the client learning rate), eta_s = eta_m
= 1, S = `cohort_size`, and each algorithm's |B_c| capped at the central
corpus (`central_batch_sizes`), PT's being the measured one. 2-way GT runs
at `two_way_client_lr`, which the advisor's single eta does not model.
"""

import os
from typing import Optional

from experiments.common import advising
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import lm_runs
from experiments.stackoverflow_wikipedia import stackoverflow_wikipedia_lib
from tff_mixed.advisor import advice as advice_lib
from tff_mixed.training import reports as reports_lib


def run_advice(data: lm_data.Data, config: lm_config.Config, *, rounds: int,
               output_dir: str, records_dir: Optional[str] = None,
               progress: Optional[bool] = None
              ) -> tuple[advice_lib.Advice, dict[str, str]]:
  """Trains the probe, writes the advice; `(advice, {kind: path})`.

  The advice goes to `output_dir` (advice.json, advice.md) and, with
  `records_dir`, to `<records_dir>/advice/` too (`advising.write_advice`),
  so that it is committed with the records.

  Raises:
    ValueError: For bad settings (`run_experiment`'s checks) or a probe
      without diagnostics.
  """
  if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
    raise ValueError(f'`rounds` must be a positive int, got {rounds!r}.')
  output_dir = reports_lib.make_directory(os.fspath(output_dir),
                                          '`output_dir`')
  probe = stackoverflow_wikipedia_lib.run_experiment(
      data, config._replace(rounds=rounds, with_diagnostics=True),
      scenarios=[advising.PROBE_SCENARIO],
      output_dir=os.path.join(output_dir, advising.PROBE_DIR),
      progress=progress).results[0]
  batch_sizes = lm_runs.central_batch_sizes(data, config)
  advice = advice_lib.advise(
      advising.read_metrics_rows(probe.metrics_path), last_round=rounds,
      client_steps=config.client_steps,
      cohort_size=lm_runs.cohort_size(data, config),
      client_learning_rate=config.client_lr,
      central_learning_rate=config.client_lr,
      federated_weight=config.federated_weight,
      central_weight=config.central_weight,
      central_batch_sizes=batch_sizes._asdict(),
      measured_central_batch_size=getattr(batch_sizes,
                                          advising.PROBE_SCENARIO),
      seed=config.seed)
  return advice, advising.write_advice(output_dir, advice, records_dir)
