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
"""A paper's claims checked against measured numbers, for RESULTS.md.

Every reproduction (CelebA smile, MovieLens, the character LM) reports the
same way: each claim of the paper beside the paper's own number and where it
stands, marked reproduced or not by a rule its report states, with the
measured numbers that decided it. Numbers over seeds are a mean and a sample
standard deviation (`Spread`).
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class PaperNumber(NamedTuple):
  """What the paper reports for one quantity, and where (figure, table)."""

  value: str
  source: str


class Claim(NamedTuple):
  """One claim of the paper, checked against the measured numbers.

  Attributes:
    claim: The claim, in a few words.
    paper: What the paper reports, and where.
    reproduced: Whether the measured numbers satisfy it (the report that
      makes it states the rule).
    measured: The numbers that decided it.
  """

  claim: str
  paper: PaperNumber
  reproduced: bool
  measured: str


class Spread(NamedTuple):
  """Mean and sample standard deviation (0 for one value) over seeds."""

  mean: float
  std: float

  def __str__(self) -> str:
    return f'{self.mean:.3f} ± {self.std:.3f}'


def spread(values: Sequence[float]) -> Spread:
  """The `Spread` of `values` (at least one)."""
  values = np.asarray(values, np.float64)
  if not values.size:
    raise ValueError('`values` must not be empty.')
  return Spread(float(values.mean()),
                float(values.std(ddof=1)) if len(values) > 1 else 0.0)


def claims_markdown(claims: Sequence[Claim]) -> list[str]:
  """One Markdown bullet per claim: verdict, claim, paper, measured."""
  lines = []
  for claim in claims:
    verdict = 'reproduced' if claim.reproduced else 'not reproduced'
    lines.append(f'* **{verdict}**: {claim.claim} (paper: {claim.paper.value}'
                 f', {claim.paper.source}). Measured: {claim.measured}.')
  return lines
