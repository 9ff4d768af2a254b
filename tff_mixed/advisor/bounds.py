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
"""Table 3's nonconvex bounds and appendix C's learning-rate conditions.

arXiv:2205.13655, table 3 (nonconvex row; Theorems C.1-C.3), in rounds to
reach min_t E|grad f(x^(t))|^2 <= epsilon, constants dropped:

  2-way GT:  (sigma^2 + S sigma_c^2) beta F / (K S eps^2) + beta F / eps
  1-way GT:  (sigma^2 + K S sigma_c^2) beta F / (K S eps^2) + beta F / eps
  PT:        (sigma^2 + S sigma_c^2) beta F / (K S eps^2)
             + G sqrt(beta) / eps^1.5 + B^2 beta F / eps

so, beyond 2-way GT's bound, 1-way GT pays (K - 1) sigma_c^2 beta F /
(K eps^2) and PT the dissimilarity terms. Def. 5.2 holds for a pair (G, B);
the sampled G~ assumes B = 1 and the sampled B~ assumes G = 0 (eq. 7), so
either pair explains what was sampled and PT's extra is the smaller of
G~ sqrt(beta) / eps^1.5 (with B = 1) and (B~^2 - 1) beta F / eps (with
G = 0).

The sigmas of table 3 are the variances of the gradients of f_f = w_f f~_f
and f_c = w_c f~_c (the paper subsumes the mixing weights into the losses),
so the measured variances of the computed gradients are scaled by w_f^2 and
w_c^2 here. sigma_c^2 is a variance at one central batch size; an algorithm
run with another |B_c| (the paper's rule gives 1-way GT K times PT's,
appendix B's general notes) has sigma_c^2 times |B_c|(measured) /
|B_c|(its own), the variance of a mean of independent examples' gradients.

The conditions (Theorem C.1's statement, C.2, C.3; tables 12-13), nonconvex:
PT: eta_m >= 1 and eta_c, eta eta_s <= 1 / (6 (1 + B^2) beta K eta_m);
1-way GT: eta_s >= sqrt(S) and eta <= 1 / (18 beta K eta_s);
2-way GT: eta_m >= 1 and eta_c, eta eta_s <= 1 / (24 beta K eta_m).
The estimated beta is a lower bound on the true one, so a limit computed
with it is at least the true limit: a learning rate above it is certainly
outside the theorem's conditions, one below it may still be.
"""

import collections
from collections.abc import Mapping
import math
from typing import NamedTuple, Optional

from tff_mixed.algorithms import registry

ALGORITHMS = (registry.PARALLEL_TRAINING, registry.ONE_WAY_GT,
              registry.TWO_WAY_GT)


class RunSettings(NamedTuple):
  """The run's hyperparameters the bounds and conditions read.

  Attributes:
    client_steps: K, local steps per round.
    cohort_size: S, clients per round.
    client_learning_rate: eta.
    server_learning_rate: eta_s (SERVEROPTIMIZER SGD's rate).
    central_learning_rate: eta_c (PT and 2-way GT's central steps), or
      `None` if unknown.
    merge_learning_rate: eta_m (PT and 2-way GT's merge).
    federated_weight: w_f.
    central_weight: w_c.
    central_variance_scale: `{algorithm: factor}` multiplying the measured
      sigma_c^2 for the algorithm's own |B_c| (`advice.advise` derives it
      from batch sizes); missing algorithms: 1.
  """

  client_steps: int
  cohort_size: int
  client_learning_rate: float
  server_learning_rate: float = 1.0
  central_learning_rate: Optional[float] = None
  merge_learning_rate: float = 1.0
  federated_weight: float = 0.5
  central_weight: float = 0.5
  central_variance_scale: Optional[Mapping[str, float]] = None


class Constants(NamedTuple):
  """The constants the bounds read (table 3's symbols).

  sigma2, sigma_c2: of the computed (unweighted) gradients; beta: the
  secant estimate; g2, b2: the sampled G~^2, B~^2; epsilon: the target on
  |grad f|^2; initial_gap: F = f(x^(0)) - f(x*).
  """

  sigma2: float
  sigma_c2: float
  beta: float
  g2: float
  b2: float
  epsilon: float
  initial_gap: float


def nonconvex_terms(constants: Constants,
                    settings: RunSettings) -> collections.OrderedDict:
  """Table 3's nonconvex terms, in rounds (constants dropped).

  Returns `OrderedDict` of the leading (variance) terms
  `<algorithm>_variance`, K S sigma_c^2 in 1-way GT's where the others have
  S sigma_c^2; `smoothness` (beta F / eps, the gradient transfers' second
  term), `pt_g` (G~ sqrt(beta) / eps^1.5, PT with B = 1), `pt_b`
  (B~^2 beta F / eps, PT with G = 0).
  """
  k, s = settings.client_steps, settings.cohort_size
  sigma2 = settings.federated_weight**2 * constants.sigma2
  beta, eps, gap = constants.beta, constants.epsilon, constants.initial_gap
  scale = beta * gap / (k * s * eps**2)
  terms = collections.OrderedDict()
  for algorithm in ALGORITHMS:
    sigma_c2 = (settings.central_weight**2 * constants.sigma_c2
                * central_variance_scale(settings, algorithm))
    central_steps = k if algorithm == registry.ONE_WAY_GT else 1
    terms[f'{algorithm}_variance'] = (
        sigma2 + central_steps * s * sigma_c2) * scale
  return collections.OrderedDict(
      **terms,
      smoothness=beta * gap / eps,
      pt_g=math.sqrt(max(constants.g2, 0.0) * beta) / eps**1.5,
      pt_b=max(constants.b2, 1.0) * beta * gap / eps)


def central_variance_scale(settings: RunSettings, algorithm: str) -> float:
  """The factor on the measured sigma_c^2 at `algorithm`'s own |B_c|."""
  return float((settings.central_variance_scale or {}).get(algorithm, 1.0))


def nonconvex_bounds(terms: collections.OrderedDict) -> collections.OrderedDict:
  """`{algorithm: rounds}` from `nonconvex_terms`.

  PT takes the better of its two readings of the sampled dissimilarity
  (G~ with B = 1, or B~ with G = 0; see the module docstring).
  """
  pt_dissimilarity = min(terms['pt_g'] + terms['smoothness'], terms['pt_b'])
  return collections.OrderedDict([
      (registry.PARALLEL_TRAINING,
       terms[f'{registry.PARALLEL_TRAINING}_variance'] + pt_dissimilarity),
      (registry.ONE_WAY_GT,
       terms[f'{registry.ONE_WAY_GT}_variance'] + terms['smoothness']),
      (registry.TWO_WAY_GT,
       terms[f'{registry.TWO_WAY_GT}_variance'] + terms['smoothness']),
  ])


def condition_flags(constants: Constants, settings: RunSettings) -> list:
  """The settings table 3's conditions rule out, as sentences.

  Nonconvex conditions (module docstring), with the estimated beta (a lower
  bound: a flagged limit is certainly exceeded) and B~^2; and K = 1, outside
  table 3's K >= 2.
  """
  k, s = settings.client_steps, settings.cohort_size
  eta, eta_s = settings.client_learning_rate, settings.server_learning_rate
  eta_c, eta_m = settings.central_learning_rate, settings.merge_learning_rate
  beta = constants.beta
  flags = []
  if k < 2:
    flags.append(f'all: K = {k} is outside the bounds\' regime (table 3 '
                 'assumes K >= 2); with K = 1 1-way GT\'s extra variance '
                 'term vanishes.')
  if beta <= 0:
    flags.append('all: the estimated beta is 0 (no curvature seen), so the '
                 'learning-rate conditions were not checked.')
    return flags

  def check(algorithm, what, value, limit):
    if value > limit:
      flags.append(f'{algorithm}: {what} = {value:.4g} exceeds the '
                   f'nonconvex limit {limit:.4g} (beta >= {beta:.4g}).')

  b2 = max(constants.b2, 1.0)
  for algorithm, denominator in (
      (registry.PARALLEL_TRAINING, 6 * (1 + b2)),
      (registry.TWO_WAY_GT, 24.0)):
    if eta_m < 1:
      flags.append(f'{algorithm}: eta_m = {eta_m:.4g} < 1, outside the '
                   'theorem\'s assumption (table 13).')
    limit = 1.0 / (denominator * beta * k * eta_m)
    check(algorithm, 'eta * eta_s', eta * eta_s, limit)
    if eta_c is not None:
      check(algorithm, 'eta_c', eta_c, limit)
  if eta_s < math.sqrt(s):
    flags.append(f'{registry.ONE_WAY_GT}: eta_s = {eta_s:.4g} < sqrt(S) = '
                 f'{math.sqrt(s):.4g}, outside Theorem C.2\'s assumption '
                 '(table 13).')
  check(registry.ONE_WAY_GT, 'eta', eta, 1.0 / (18 * beta * k * eta_s))
  return flags
