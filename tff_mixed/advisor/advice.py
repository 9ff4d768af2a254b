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
"""Which mixed FL algorithm to run: the rule, its reasons and its certainty.

arXiv:2205.13655, section 5.2 reads table 3 as: large (G, B)-BGD impedes
Parallel Training, large sigma_c^2 impedes 1-way Gradient Transfer (its
sigma_c^2 term scales with K), and 2-way GT's bound is the best of the three;
but 2-way GT keeps more state, downloads g~_c and g~_f (appendix B's cost
table 11) and, as eta grows, is the first of the three to diverge (appendix
B, general notes; B.4.3). The rule, with tolerance tau (default 0.1):

1.  Parallel Training, if its bound is within (1 + tau) of 2-way GT's: its
    dissimilarity terms are small, and it transfers no gradients;
2.  else 1-way GT, if its bound is within (1 + tau) of 2-way GT's: its
    variance factor (sigma^2 + K S sigma_c^2) / (sigma^2 + S sigma_c^2) is
    close to 1;
3.  else 2-way GT.

The bounds are orders (constants dropped), read with sampled constants at
the target epsilon: the rule compares which terms matter, not round counts.
The uncertainty is the share of bootstrap resamples of the window's rounds
(all quantities resampled together) whose estimates give the same answer.
"""

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from tff_mixed.advisor import bounds as bounds_lib
from tff_mixed.advisor import estimates as estimates_lib
from tff_mixed.algorithms import registry

DEFAULT_TOLERANCE = 0.1
# epsilon, by default: this share of the window's mean |grad f|^2.
DEFAULT_EPSILON_FRACTION = 0.1

_LABELS = {
    registry.PARALLEL_TRAINING: 'Parallel Training',
    registry.ONE_WAY_GT: '1-way GT',
    registry.TWO_WAY_GT: '2-way GT',
}


class Advice(NamedTuple):
  """The advisor's recommendation (`advise`).

  Attributes:
    recommendation: `'parallel_training'`, `'one_way_gt'` or `'two_way_gt'`
      (`tff_mixed.registry` names).
    agreement: The share of bootstrap resamples giving the same answer.
    reasoning: The rule's steps as sentences.
    flags: Settings table 3's conditions rule out, as sentences.
    estimates: `{name: estimates.Estimate}` over the window.
    constants: The `bounds.Constants` the bounds were read with.
    terms: Table 3's nonconvex terms (`bounds.nonconvex_terms`).
    bounds: `{algorithm: rounds}`, constants dropped.
    ratios: `{algorithm: bound / 2-way GT's bound}`.
    settings: The `bounds.RunSettings`.
    tolerance: tau.
    rounds: The window's round numbers.
  """

  recommendation: str
  agreement: float
  reasoning: tuple
  flags: tuple
  estimates: dict
  constants: bounds_lib.Constants
  terms: dict
  bounds: dict
  ratios: dict
  settings: bounds_lib.RunSettings
  tolerance: float
  rounds: tuple

  def to_json(self) -> str:
    """The advice as a JSON object (estimates as their fields)."""
    return json.dumps(dict(
        recommendation=self.recommendation, agreement=self.agreement,
        reasoning=list(self.reasoning), flags=list(self.flags),
        estimates={k: e._asdict() for k, e in self.estimates.items()},
        constants=self.constants._asdict(), terms=dict(self.terms),
        bounds=dict(self.bounds), ratios=dict(self.ratios),
        settings=self.settings._asdict(), tolerance=self.tolerance,
        rounds=[min(self.rounds), max(self.rounds)]), indent=2)

  def to_text(self) -> str:
    """A report for people: the answer, the estimates, the reasons."""
    lines = [
        f'Recommendation: {_LABELS[self.recommendation]} '
        f'({self.recommendation}), same answer in {self.agreement:.0%} of '
        f'bootstrap resamples of rounds {min(self.rounds)}-'
        f'{max(self.rounds)}.', '',
        'Estimates over the window (mean, max, std, 95% bootstrap interval '
        'of the mean):']
    for name, e in self.estimates.items():
      lines.append(f'  {name:17s} mean {e.mean:.4g}  max {e.max:.4g}  '
                   f'std {e.std:.4g}  [{e.low:.4g}, {e.high:.4g}]')
    lines += ['', 'Table 3 (nonconvex) at epsilon = '
              f'{self.constants.epsilon:.4g}, F = '
              f'{self.constants.initial_gap:.4g}, K = '
              f'{self.settings.client_steps}, S = '
              f'{self.settings.cohort_size} (rounds, constants dropped):']
    for algorithm, value in self.bounds.items():
      lines.append(f'  {_LABELS[algorithm]:17s} {value:.4g}  '
                   f'({self.ratios[algorithm]:.3g} x 2-way GT)')
    lines += ['', 'Reasoning:'] + [f'  {r}' for r in self.reasoning]
    lines += ['', 'Flags:'] + ([f'  {f}' for f in self.flags]
                               or ['  none'])
    return '\n'.join(lines) + '\n'


def _constants(per_round: Mapping[str, np.ndarray], epsilon, epsilon_fraction,
               initial_gap) -> bounds_lib.Constants:
  """The bound constants from per-round values.

  G~^2, B~^2 and beta take the window's maximum (G, B bound all x, as in
  table 4; every secant is a lower bound on beta); the variances take the
  mean (each round's is a noisy estimate at one x, whose maximum would grow
  with the window).
  """
  e = estimates_lib
  if epsilon is None:
    epsilon = epsilon_fraction * float(np.mean(per_round[e.GRAD_NORM2]))
  return bounds_lib.Constants(
      sigma2=float(np.mean(per_round[e.SIGMA2])),
      sigma_c2=float(np.mean(per_round[e.SIGMA_C2])),
      beta=float(np.max(per_round[e.BETA])),
      g2=float(np.max(per_round[e.G2])), b2=float(np.max(per_round[e.B2])),
      epsilon=max(float(epsilon), np.finfo(np.float64).tiny),
      initial_gap=float(initial_gap))


def _choose(constants, settings, tolerance):
  """`(recommendation, terms, bounds, ratios)` by the module's rule."""
  terms = bounds_lib.nonconvex_terms(constants, settings)
  bounds = bounds_lib.nonconvex_bounds(terms)
  base = bounds[registry.TWO_WAY_GT]
  ratios = {a: (b / base if base > 0 else 1.0) for a, b in bounds.items()}
  if ratios[registry.PARALLEL_TRAINING] <= 1 + tolerance:
    choice = registry.PARALLEL_TRAINING
  elif ratios[registry.ONE_WAY_GT] <= 1 + tolerance:
    choice = registry.ONE_WAY_GT
  else:
    choice = registry.TWO_WAY_GT
  return choice, terms, bounds, ratios


def _reasoning(choice, terms, ratios, constants, settings, tolerance):
  k, s = settings.client_steps, settings.cohort_size
  sigma2 = settings.federated_weight**2 * constants.sigma2
  sigma_c2 = settings.central_weight**2 * constants.sigma_c2
  one_way = terms[f'{registry.ONE_WAY_GT}_variance']
  two_way = terms[f'{registry.TWO_WAY_GT}_variance']
  factor = one_way / two_way if two_way > 0 else 1.0
  pt = ratios[registry.PARALLEL_TRAINING]
  one_way_ratio = ratios[registry.ONE_WAY_GT]
  within = f'within {1 + tolerance:.3g}x'
  lines = [
      f'Parallel Training pays the (G, B)-BGD terms: G~^2 = '
      f'{constants.g2:.4g}, B~^2 = {constants.b2:.4g} (window max) make its '
      f'bound {pt:.3g}x 2-way GT\'s ('
      f'{"" if pt <= 1 + tolerance else "not "}{within}).',
      f'1-way GT pays K S sigma_c^2 where the others pay S sigma_c^2: '
      f'(sigma^2 + K S sigma_c^2) / (sigma^2 + S sigma_c^2) = {factor:.3g} '
      f'with sigma^2 = {sigma2:.4g}, sigma_c^2 = {sigma_c2:.4g} (weighted, '
      f'at the measured |B_c|; x {_scales(settings)} at each algorithm\'s '
      f'own), K = {k}, S = {s}; its bound is {one_way_ratio:.3g}x 2-way '
      f'GT\'s ({"" if one_way_ratio <= 1 + tolerance else "not "}{within}).']
  dominant = ('variance' if two_way > terms['smoothness'] else 'smoothness')
  lines.append(f'2-way GT\'s bound is led by its {dominant} term; it keeps '
               'more state, downloads two augmenting gradients and is the '
               'first to diverge as eta grows (appendix B), so it is chosen '
               'only when neither cheaper algorithm is close.')
  lines.append(f'Chosen: {_LABELS[choice]}.')
  return tuple(lines)


def _scales(settings) -> str:
  return ', '.join(
      f'{bounds_lib.central_variance_scale(settings, a):.3g}'
      for a in bounds_lib.ALGORITHMS)


def advise(rows: Sequence[Mapping[str, float]], *, client_steps: int,
           cohort_size: int, client_learning_rate: float,
           server_learning_rate: float = 1.0,
           central_learning_rate: Optional[float] = None,
           merge_learning_rate: float = 1.0, federated_weight: float = 0.5,
           central_weight: float = 0.5,
           central_batch_sizes: Optional[Mapping[str, int]] = None,
           measured_central_batch_size: Optional[int] = None,
           first_round: int = 1,
           last_round: Optional[int] = None,
           tolerance: float = DEFAULT_TOLERANCE,
           epsilon: Optional[float] = None,
           epsilon_fraction: float = DEFAULT_EPSILON_FRACTION,
           initial_gap: Optional[float] = None,
           resamples: int = estimates_lib.BOOTSTRAP_RESAMPLES,
           seed: int = 0) -> Advice:
  """Recommends PT, 1-way or 2-way GT from a run's first rounds.

  Args:
    rows: Per-round flat metrics of a run with diagnostics
      (`with_diagnostics=True`): `RunResult.history` or metrics.csv rows.
    client_steps, cohort_size, client_learning_rate, server_learning_rate,
      central_learning_rate, merge_learning_rate, federated_weight,
      central_weight: The run's K, S, eta, eta_s, eta_c, eta_m, w_f, w_c
      (`bounds.RunSettings`).
    central_batch_sizes: `{algorithm: |B_c|}` each would run with, when they
      differ from `measured_central_batch_size`, the |B_c| of the run the
      rows come from: sigma_c^2 is scaled by measured / own for each
      (`bounds` module docstring). `None`: all at the measured size.
    measured_central_batch_size: See `central_batch_sizes`.
    first_round, last_round: The window (`estimates.window_estimates`).
    tolerance: tau of the rule (module docstring).
    epsilon: The target on |grad f|^2; `None`: `epsilon_fraction` times the
      window's mean sampled |grad f|^2.
    epsilon_fraction: See `epsilon`.
    initial_gap: F = f(x^(0)) - f(x*); `None`: the mixed loss w_f f~_f +
      w_c f~_c of the window's first round (an upper bound for non-negative
      losses), read from `client_work/train/loss` and `central/loss`.
    resamples: Bootstrap resamples for the agreement.
    seed: Seeds the bootstrap.

  Returns:
    An `Advice`.

  Raises:
    ValueError: For a window without diagnostics, bad settings, or no
      initial gap to read.
  """
  if client_steps < 1 or cohort_size < 1:
    raise ValueError('`client_steps` and `cohort_size` must be positive.')
  if not tolerance >= 0:
    raise ValueError(f'`tolerance` must be >= 0, got {tolerance}.')
  settings = bounds_lib.RunSettings(
      client_steps, cohort_size, client_learning_rate, server_learning_rate,
      central_learning_rate, merge_learning_rate, federated_weight,
      central_weight, _variance_scales(central_batch_sizes,
                                       measured_central_batch_size))
  window = estimates_lib.window_estimates(
      rows, first_round=first_round, last_round=last_round,
      resamples=resamples, seed=seed)
  if initial_gap is None:
    initial_gap = _initial_gap(rows, window.rounds[0], settings)
  constants = _constants(window.per_round, epsilon, epsilon_fraction,
                         initial_gap)
  choice, terms, bound_values, ratios = _choose(constants, settings,
                                                tolerance)
  indices = estimates_lib.bootstrap_indices(len(window.rounds), resamples,
                                            seed)
  same = 0
  for sample in indices:
    resampled = {k: v[sample] for k, v in window.per_round.items()}
    same += _choose(_constants(resampled, epsilon, epsilon_fraction,
                               initial_gap), settings,
                    tolerance)[0] == choice
  return Advice(
      recommendation=choice, agreement=same / resamples,
      reasoning=_reasoning(choice, terms, ratios, constants, settings,
                           tolerance),
      flags=tuple(bounds_lib.condition_flags(constants, settings)),
      estimates=window.estimates, constants=constants, terms=terms,
      bounds=bound_values, ratios=ratios, settings=settings,
      tolerance=tolerance, rounds=window.rounds)


def _variance_scales(central_batch_sizes, measured):
  """`{algorithm: measured |B_c| / its |B_c|}`, or `None`."""
  if central_batch_sizes is None:
    return None
  sizes = dict(central_batch_sizes, measured=measured)
  if not all(isinstance(v, int) and v > 0 for v in sizes.values()):
    raise ValueError('`central_batch_sizes` and `measured_central_batch_size` '
                     f'must be positive ints, got {sizes}.')
  return {a: measured / size for a, size in central_batch_sizes.items()}


def _initial_gap(rows, first_round, settings) -> float:
  for index, row in enumerate(rows):
    if estimates_lib.round_number(row, index) == first_round:
      try:
        federated = _lookup(row, 'client_work/train/loss')
        central = _lookup(row, 'central/loss')
      except KeyError:
        break
      return (settings.federated_weight * federated
              + settings.central_weight * central)
  raise ValueError('No client and central loss in the window\'s first round '
                   'to estimate F = f(x^(0)) - f(x*) from: pass '
                   '`initial_gap`.')


def _lookup(row: Mapping[str, Any], name: str) -> float:
  for key in ('train/' + name, name):
    if key in row:
      value = float(row[key])
      if math.isfinite(value):
        return value
  raise KeyError(name)
