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
"""Console warnings for what a training round dropped: clients or itself.

A mixed FL process drops what cannot be trained on without stopping the
run, as TFF's FedAvg does: a client whose update is non-finite or that
holds no examples gets weight 0, and a round whose aggregated update or new
model is non-finite is skipped (model and optimizer states kept). Its
metrics count what was dropped (docs/LIBRARY.md, "Metrics per round"):

*   `client_work/clients/count`, `non_finite` and `without_data`: the
    round's clients, those dropped as non-finite, those without examples;
*   `finalizer/update_non_finite` (the round was skipped) and why:
    `finalizer/aggregate_non_finite` (the clients' aggregated update) or
    `finalizer/central_non_finite` (the server-side step from a finite
    aggregate: central steps, merge, SERVEROPTIMIZER).

`DropReport` reads them from each round's flat metrics
(`round_loop.flatten_metrics`'s keys, with or without a prefix such as the
runner's `train/`) and logs one warning (absl `logging.warning`) the first
time each kind of drop happens in a run: clients dropped as non-finite,
clients without data, an empty cohort, a skipped round. Later ones are only
counted; `summary()` gives the totals, which `round_loop.run_rounds` logs at the
end of a run. Metrics without these keys (TFF's own FedAvg has only
`update_non_finite`, the asynchronous loop none) report what they hold.
"""

from collections.abc import Mapping
from typing import NamedTuple, Optional

from absl import logging

# The flat metric names read, without a prefix.
COUNT = 'client_work/clients/count'
NON_FINITE = 'client_work/clients/non_finite'
WITHOUT_DATA = 'client_work/clients/without_data'
SKIPPED = 'finalizer/update_non_finite'
AGGREGATE_NON_FINITE = 'finalizer/aggregate_non_finite'
CENTRAL_NON_FINITE = 'finalizer/central_non_finite'

# The kinds of drops, in the order they are reported.
NON_FINITE_CLIENTS = 'non_finite_clients'
CLIENTS_WITHOUT_DATA = 'clients_without_data'
EMPTY_COHORT = 'empty_cohort'
SKIPPED_ROUND = 'skipped_round'
KINDS = (NON_FINITE_CLIENTS, CLIENTS_WITHOUT_DATA, EMPTY_COHORT,
         SKIPPED_ROUND)

_LATER = 'later ones in this run are only counted'
# What each kind's total counts, for `summary()`.
_TOTALS = {
    NON_FINITE_CLIENTS: 'clients dropped as non-finite',
    CLIENTS_WITHOUT_DATA: 'clients without data',
    EMPTY_COHORT: 'rounds without clients',
    SKIPPED_ROUND: 'rounds skipped',
}


def _metric(flat: Mapping[str, float], name: str) -> Optional[float]:
  """`flat`'s value of `name`, under any prefix (`train/...`), or None."""
  if name in flat:
    return flat[name]
  suffix = '/' + name
  for key, value in flat.items():
    if key.endswith(suffix):
      return value
  return None


def _skip_reason(flat: Mapping[str, float]) -> str:
  """Why a skipped round was skipped, from its finalizer metrics."""
  if _metric(flat, CENTRAL_NON_FINITE):
    return ('the clients\' aggregated update was finite, but the '
            'server-side step (the central steps, e.g. on non-finite '
            'central data, the merge or the server optimizer) made the '
            'model non-finite')
  if _metric(flat, AGGREGATE_NON_FINITE):
    return ('the clients\' aggregated update was non-finite (e.g. no '
            'client sent an update with weight)')
  return 'the aggregated update or the new model was non-finite'


class Tally(NamedTuple):
  """One kind's total in a run.

  Attributes:
    rounds: Rounds it happened in.
    clients: Clients it concerned (0 for the kinds of rounds).
    first_round: The first round it happened in.
  """

  rounds: int
  clients: int
  first_round: int


class DropReport:
  """Warns once per kind what a run's rounds dropped; counts the rest.

  Usage, with any process whose metrics count drops (the mixed FL
  processes, see the module docstring):

      report = tff_mixed.DropReport('my run')
      for round_num in range(1, rounds + 1):
        output = process.next(state, data)
        report.observe(round_num, round_loop.flatten_metrics(output.metrics))
      for line in report.summary():
        print(line)

  `runner.run_training` does this itself (in `round_loop.run_rounds`) and
  logs the summary at the end of a run.
  """

  def __init__(self, name: str = 'training'):
    """A report for the run called `name` (it prefixes every line)."""
    self._name = name
    self._tallies: dict[str, Tally] = {}

  def _count(self, kind: str, round_num: int, clients: int = 0) -> bool:
    """Adds one occurrence; True if it is the run's first of its kind."""
    tally = self._tallies.get(kind)
    if tally is None:
      self._tallies[kind] = Tally(1, clients, round_num)
      return True
    self._tallies[kind] = Tally(tally.rounds + 1, tally.clients + clients,
                                tally.first_round)
    return False

  def observe(self, round_num: int, flat_metrics: Mapping[str, float]
              ) -> list[str]:
    """Counts round `round_num`'s drops; warns about a kind's first one.

    Args:
      round_num: The round the metrics are of.
      flat_metrics: The round's metrics, flat (`round_loop.flatten_metrics`),
        with or without a prefix (e.g. the runner's `train/`).

    Returns:
      The kinds (`KINDS`) that happened in this round.
    """
    count = _metric(flat_metrics, COUNT)
    happened = []

    def clients(name, kind, what):
      value = _metric(flat_metrics, name)
      if not value:
        return
      happened.append(kind)
      if self._count(kind, round_num, int(value)):
        logging.warning('%s: round %d: %d of %s clients %s; %s.', self._name,
                        round_num, int(value),
                        'the' if count is None else int(count), what, _LATER)

    clients(NON_FINITE, NON_FINITE_CLIENTS,
            'were dropped: their updates were non-finite (weight 0, their '
            'metrics not counted)')
    clients(WITHOUT_DATA, CLIENTS_WITHOUT_DATA,
            'had no examples and sent no update (weight 0)')
    if count is not None and count == 0:
      happened.append(EMPTY_COHORT)
      if self._count(EMPTY_COHORT, round_num):
        logging.warning('%s: round %d had no clients: it took no federated '
                        'step; %s.', self._name, round_num, _LATER)
    if _metric(flat_metrics, SKIPPED):
      happened.append(SKIPPED_ROUND)
      if self._count(SKIPPED_ROUND, round_num):
        logging.warning('%s: round %d was skipped (model and optimizer '
                        'states kept): %s; %s.', self._name, round_num,
                        _skip_reason(flat_metrics), _LATER)
    return happened

  def tallies(self) -> dict[str, Tally]:
    """Per kind that happened, its `Tally`, in the order of `KINDS`."""
    return {k: self._tallies[k] for k in KINDS if k in self._tallies}

  def summary(self) -> list[str]:
    """One line per kind that happened in the run (none: nothing dropped).

    E.g. `'my run: clients dropped as non-finite: 7 in 3 rounds (first in
    round 2)'`.
    """
    lines = []
    for kind, tally in self.tallies().items():
      total = f'{tally.clients} in ' if tally.clients else ''
      lines.append(f'{self._name}: {_TOTALS[kind]}: {total}{tally.rounds} '
                   f'round{"s" if tally.rounds != 1 else ""} (first in round '
                   f'{tally.first_round})')
    return lines

  def log_summary(self) -> None:
    """Logs `summary()` as warnings, if anything was dropped."""
    for line in self.summary():
      logging.warning('%s', line)
