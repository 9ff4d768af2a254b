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
"""The paper's MovieLens claims and the rules that decide them.

Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning" (arXiv:2205.13655), section 4.3, figures 3 and 6,
tables 2 and 4: the paper's numbers (`PAPER`, `PAPER_TABLE_2`), the
tolerances each claim is decided with, and `claims` / `g2_claim`, which
decide them on the scenarios' `movielens_records`. The reference rows
(popularity floor, central ceiling) enter the recall claim where their
records match the scenarios' settings (`matching_references`).
"""

from collections.abc import Mapping, Sequence
import math
from typing import Optional

import numpy as np

from experiments.common import bgd_diagnostics
from experiments.common import claims as claims_lib
from experiments.common import run_store
from experiments.movielens import movielens_config
from experiments.movielens import movielens_records as records_lib
from experiments.movielens import movielens_reference


BASELINE = movielens_config.BASELINE
PT = movielens_config.PARALLEL_TRAINING
ONE_WAY_GT = movielens_config.ONE_WAY_GT
TWO_WAY_GT = movielens_config.TWO_WAY_GT
MIXED = (PT, ONE_WAY_GT, TWO_WAY_GT)
# The scenarios of the paper's figures 3 and 6 and table 2.
PAPER_SCENARIOS = (BASELINE, *MIXED)
LABELS = {BASELINE: 'baseline (all on clients)', PT: 'PT',
          ONE_WAY_GT: '1-w GT', TWO_WAY_GT: '2-w GT',
          movielens_config.ONE_WAY_GT_FEDADAM: '1-w GT, FedAdam'}

Record = records_lib.ScenarioRecord
References = records_lib.References
Claim = claims_lib.Claim
PaperNumber = claims_lib.PaperNumber

# Recall@10 and the loss move from one evaluation to the next with the
# sampled cohort: compare the mean of a scenario's last evaluations.
TAIL_EVALUATIONS = 5
# "No degradation" (section 4.3): a mixed algorithm's recall@10 at most
# this far below the baseline's, about two standard errors of a recall of
# 0.07 on the ~10,000 test examples of MovieLens 100K.
RECALL_TOLERANCE = 0.005
# "Around 0.1" (section 4.3): within this of 0.1.
RECALL_NEAR = 0.03
# "Reaches the same evaluation loss" (figure 3): within 2% of each GT's.
LOSS_TOLERANCE = 0.02
# Figure 3: PT catches up with GT at about this round.
PT_CATCH_UP_ROUND = 1500
# Section 4.3's savings of the mixed algorithms over the baseline.
PAPER_COMPUTATION_SAVING = 0.999
PAPER_COMMUNICATION_SAVING = 0.939
# Appendix B.3's per-client computation saving of mixed FL at the paper's N.
PAPER_FORMULA_COMPUTATION_SAVING = 0.9998
# Table 2, per client: (computation Mflop, communication KB). Its Mflop are
# one local step's (N^2 d / 2 for the baseline's spreadout, N = 3,952
# movies, d = 16, is 124.9 Mflop); ours are K steps, so compare savings.
PAPER_TABLE_2 = {BASELINE: (125.16, 494), PT: (0.025, 20),
                 ONE_WAY_GT: (0.025, 30), TWO_WAY_GT: (0.025, 30)}

PAPER = {
    'recall': PaperNumber('recall@10 ~0.1 for every algorithm',
                          'section 4.3, figure 6; MovieLens 1M, 2,000 '
                          'rounds'),
    'mixed_recall': PaperNumber('mixed FL = baseline',
                                'section 4.3, figure 6'),
    'computation': PaperNumber('> 99.9% less (125.16 to 0.025 Mflop)',
                               'section 4.3, table 2'),
    'communication': PaperNumber('> 93.9% less (494 KB to 20 KB PT, 30 KB '
                                 'GT)', 'section 4.3, table 2, appendix '
                                 'B.3'),
    'pt_slower': PaperNumber('PT converges slightly slower than either GT',
                             'section 4.3, figure 3'),
    'pt_catches_up': PaperNumber('PT reaches the same eval loss at ~1,500 '
                                 'rounds', 'section 4.3, figure 3'),
    'max_g2': PaperNumber('max G~^2 = 0.03', 'table 4, K = 1, rounds '
                          '10-100'),
    'max_b2': PaperNumber('max B~^2 = 1.50', 'table 4'),
}
# G~^2 "small": the paper contrasts 0.03 (this task: PT competitive) with
# 49.04 (CelebA: PT slower); the CelebA report calls 1.0 large.
SMALL_G2 = 1.0


def label(scenario: str) -> str:
  """The scenario's name in the tables (`LABELS`)."""
  return LABELS.get(scenario, scenario)


def _evaluations(record: Record, up_to: int) -> list[dict[str, float]]:
  """The evaluations after round 0 up to round `up_to`."""
  return [r for r in record.rows if 0 < r['round'] <= up_to]


def tail_mean(record: Record, key: str, up_to: Optional[int] = None) -> float:
  """Mean of `key` over the last `TAIL_EVALUATIONS` evaluations up to round
  `up_to` (default: the record's last round)."""
  rows = _evaluations(record, record.rounds if up_to is None else up_to)
  rows = rows[-TAIL_EVALUATIONS:] or record.rows[:1]
  return float(np.mean([r[key] for r in rows]))


def check_comparable(records: Sequence[Record]) -> None:
  """Raises `ValueError` unless all records share their settings (they may
  differ in rounds, and in settings one of the two does not depend on,
  such as PT's eta or the mixed algorithms' key budget), naming the
  settings that differ."""
  for i, first in enumerate(records):
    for record in records[i + 1:]:
      keys = records_lib.differing_between(first, record)
      if keys:
        raise ValueError(
            f'The records of {first.scenario} and {record.scenario} were '
            f'made with different settings ({", ".join(keys)}): one section '
            'cannot compare them. Delete the stale record (its .json and '
            '_metrics.csv) and run that scenario again.')


def saving(value: float, reference: float) -> float:
  """The fraction of `reference` that `value` saves."""
  saved = 1.0 - value / reference
  return saved


def communication(costs: Mapping[str, float]) -> float:
  """Bytes received and sent, per client and round."""
  return costs['down_bytes'] + costs['up_bytes']


def num_movies(record: Record) -> int:
  """The data's N, read back from the record's table 11 computation term
  (K N^2 d / 2 for the baseline, N^2 d / 2 for mixed FL)."""
  s = record.settings
  steps = s['client_steps'] if record.scenario == BASELINE else 1
  return round(math.sqrt(2 * record.costs['paper_flops']
                         / (s['embedding_dim'] * steps)))


def rows_per_client(record: Record) -> int:
  """The rows a mixed record's clients received: its key budget, or the
  whole table (N movies and the padding row) where that is smaller."""
  return min(record.settings['keys_per_client'], num_movies(record) + 1)


def _verdict(passes: Mapping[str, bool],
             required: Sequence[str]) -> Optional[bool]:
  """The verdict of a claim on every scenario of `required`, from whether
  each one present passes its rule: not reproduced as soon as one fails,
  reproduced once all are present and pass, else undecided (`None`: the
  claim is left out until the others have records)."""
  if not all(passes.values()):
    return False
  if all(s in passes for s in required):
    return True
  return None


def _recall_claims(by_name: Mapping[str, Record],
                   references: References) -> list[Claim]:
  found = []
  present = [by_name[s] for s in PAPER_SCENARIOS if s in by_name]
  tails = {r.scenario: tail_mean(r, 'recall_at_10') for r in present}
  verdict = _verdict({s: abs(t - 0.1) <= RECALL_NEAR for s, t in tails.items()},
                     PAPER_SCENARIOS)
  if verdict is not None:
    bounds = ', '.join(f'{name} {value:.4f}' for name, value in (
        ('popularity floor', floor(references)),
        ('central ceiling', ceiling(references))) if value is not None)
    found.append(Claim(
        'Every algorithm reaches recall@10 around 0.1', PAPER['recall'],
        verdict,
        f'recall@10, mean of the last {TAIL_EVALUATIONS} evaluations (rule: '
        f'within {RECALL_NEAR:g} of 0.1): ' + ', '.join(
            f'{label(s)} {t:.4f} after {by_name[s].rounds} rounds'
            for s, t in tails.items())
        + f'; on {present[0].settings.get("data", "?")}'
        + (f' (the same test examples: {bounds})' if bounds else '')))
  mixed = [by_name[s] for s in MIXED if s in by_name]
  if BASELINE not in by_name or not mixed:
    return found
  baseline = by_name[BASELINE]
  common = min(r.rounds for r in [baseline, *mixed])
  base = tail_mean(baseline, 'recall_at_10', common)
  gaps = {r.scenario: tail_mean(r, 'recall_at_10', common) - base
          for r in mixed}
  verdict = _verdict({s: g >= -RECALL_TOLERANCE for s, g in gaps.items()},
                     MIXED)
  if verdict is not None:
    found.append(Claim(
        "The mixed algorithms match the baseline's recall@10",
        PAPER['mixed_recall'], verdict,
        f'at round {common} (the shortest run; mean of the last '
        f'{TAIL_EVALUATIONS} evaluations up to it; rule: at most '
        f'{RECALL_TOLERANCE:g} below the baseline): baseline {base:.4f}; '
        + ', '.join(f'{label(s)} {g:+.4f}' for s, g in gaps.items())))
  return found


def _cost_claims(by_name: Mapping[str, Record]) -> list[Claim]:
  mixed = [by_name[s] for s in MIXED if s in by_name]
  if BASELINE not in by_name or not mixed:
    return []
  base = by_name[BASELINE].costs
  flops = {r.scenario: saving(r.costs['flops'], base['flops'])
           for r in mixed}
  comm = {
      r.scenario: saving(communication(r.costs), communication(base))
      for r in mixed
  }
  formula = {r.scenario: saving(r.costs['paper_comm_bytes'],
                                 base['paper_comm_bytes']) for r in mixed}
  movies = num_movies(by_name[BASELINE])
  short = any(v < PAPER_COMMUNICATION_SAVING for v in formula.values())
  computation = _verdict(
      {s: v >= PAPER_COMPUTATION_SAVING for s, v in flops.items()}, MIXED)
  communicated = _verdict(
      {s: v >= PAPER_COMMUNICATION_SAVING for s, v in comm.items()}, MIXED)
  found = [
      Claim('Mixed FL removes more than 99.9% of client computation',
            PAPER['computation'], computation,
            'client training FLOPs per round, saving against the baseline '
            f'({base["flops"] / 1e6:.1f} Mflop; rule: >= '
            f'{PAPER_COMPUTATION_SAVING:.1%}): ' + ', '.join(
                f'{label(s)} {v:.3%}' for s, v in flops.items())),
      Claim('Mixed FL removes more than 93.9% of communication',
            PAPER['communication'], communicated,
            'bytes received + sent per client and round, saving against the '
            f'baseline ({communication(base) / 1e3:.1f} KB; rule: >= '
            f'{PAPER_COMMUNICATION_SAVING:.1%}): ' + ', '.join(
                f'{label(s)} {v:.2%}' for s, v in comm.items())
            + '. The paper\'s own formulas (appendix B.3: 2Nd baseline, 2nd '
            f'PT, 3nd GT) with this data\'s N = {movies} movies (3,952 in '
            f'MovieLens 1M) and n = {mixed[0].mean_keys:.1f} (the mean '
            'distinct movies a client trains on) give ' + ', '.join(
                f'{label(s)} {v:.2%}' for s, v in formula.items())
            + (' (the table is too small for the paper\'s saving)'
               if short else '')
            + '; the measured bytes differ from them because each client '
            f'receives a fixed budget of {rows_per_client(mixed[0])} rows, '
            'not its n (federated_select takes one static key count; unused '
            'keys are padding), and sends its training metrics')]
  return [c for c in found if c.reproduced is not None]


def _convergence_claims(by_name: Mapping[str, Record]) -> list[Claim]:
  gts = [by_name[s] for s in (ONE_WAY_GT, TWO_WAY_GT) if s in by_name]
  if PT not in by_name or not gts:
    return []
  pt = by_name[PT]
  common = min(r.rounds for r in [pt, *gts])

  def early(record):
    rows = _evaluations(record, common // 2) or record.rows[:1]
    return float(np.mean([r['hinge_loss'] for r in rows]))

  pt_early = early(pt)
  both_gts = (ONE_WAY_GT, TWO_WAY_GT)
  found = [Claim(
      'PT converges slower than gradient transfer', PAPER['pt_slower'],
      _verdict({gt.scenario: pt_early > early(gt) for gt in gts}, both_gts),
      f'test client loss, mean over the evaluations of rounds 1-{common // 2} '
      f'(the first half of the shortest run; rule: PT\'s higher than each '
      f'GT\'s): PT {pt_early:.4f}, ' + ', '.join(
          f'{label(gt.scenario)} {early(gt):.4f}' for gt in gts))]
  pt_tail = tail_mean(pt, 'hinge_loss', common)
  gt_tails = {gt.scenario: tail_mean(gt, 'hinge_loss', common) for gt in gts}
  measured = (
      f'test client loss at round {common}, mean of the last '
      f'{TAIL_EVALUATIONS} evaluations (rule: PT\'s at most '
      f'{LOSS_TOLERANCE:.0%} above each GT\'s, by round '
      f'{PT_CATCH_UP_ROUND:,} or later): PT {pt_tail:.4f}, ' + ', '.join(
          f'{label(s)} {v:.4f}' for s, v in gt_tails.items()))
  caught_up = _verdict({s: pt_tail <= (1 + LOSS_TOLERANCE) * v
                        for s, v in gt_tails.items()}, both_gts)
  if common < PT_CATCH_UP_ROUND:
    measured += (f' (undecided: the runs end at round {common}, before '
                 f'round {PT_CATCH_UP_ROUND:,})')
    caught_up = False
  found.append(Claim('PT reaches the same eval loss as gradient transfer',
                     PAPER['pt_catches_up'], caught_up, measured))
  return [c for c in found if c.reproduced is not None]


def claims(records: Sequence[Record],
           references: References = References()) -> list[Claim]:
  """The paper's MovieLens claims, each decided by a stated rule.

  *   Recall@10 around 0.1: the mean recall@10 over the last
      `TAIL_EVALUATIONS` evaluations of every scenario of `PAPER_SCENARIOS`
      is within `RECALL_NEAR` of 0.1 (the popularity floor and central
      ceiling of `references` stated beside, where they match the records).
  *   Mixed FL matches the baseline: at the shortest run's last round, each
      mixed algorithm's tail recall@10 is at most `RECALL_TOLERANCE` below
      the baseline's.
  *   Computation: each mixed algorithm's client FLOPs per round are at
      least 99.9% below the baseline's.
  *   Communication: each one's bytes received + sent per client and round
      are at least 93.9% below the baseline's.
  *   PT converges slower: over the first half of the shortest run, PT's
      mean test client loss is above each GT's.
  *   PT catches up: at the shortest run's last round, round 1,500 or later,
      PT's tail client loss is at most `LOSS_TOLERANCE` above each GT's.

  Each claim is on every scenario it names: not reproduced as soon as one
  with a record fails its rule, reproduced once all have records and pass,
  and left out until then (`missing_text` says which scenarios are
  missing).
  """
  by_name = {r.scenario: r for r in records}
  references = matching_references(records, references)
  return (_recall_claims(by_name, references) + _cost_claims(by_name)
          + _convergence_claims(by_name))


def with_diagnostics(
    records: Sequence[Record]) -> list[bgd_diagnostics.Diagnostics]:
  """The table 4 estimates of the records that have them."""
  return [bgd_diagnostics.Diagnostics(**r.diagnostics) for r in records
          if r.diagnostics]


def g2_claim(diagnostics: Sequence[Record]) -> list[Claim]:
  """Table 4: the movie task's G~^2 is small (rule: max over the mixed
  algorithms below `SMALL_G2`); none without diagnostics records."""
  found = with_diagnostics(diagnostics)
  if not found:
    return []
  max_g2 = max(d.max_g2 for d in found)
  return [Claim(
      f'The gradient dissimilarity G~^2 is small (< {SMALL_G2:g}) on this '
      'task', PAPER['max_g2'], max_g2 < SMALL_G2,
      f'max G~^2 over rounds {min(d.first_round for d in found)}-'
      f'{max(d.last_round for d in found)}: ' + ', '.join(
          f'{label(d.scenario)} {d.max_g2:.4f}' for d in found)
      + '; max B~^2: ' + ', '.join(
          f'{label(d.scenario)} {d.max_b2:.3f}' for d in found)
      + f' (paper {PAPER["max_b2"].value.split()[-1]})')]


def reference_mismatches(records: Sequence[Record],
                         references: References) -> dict[str, list[str]]:
  """Per reference record made with other settings than `records`, the
  settings that differ (those both have)."""
  if not records:
    return {}
  settings = records[0].settings
  found = {}
  for name, reference in references._asdict().items():
    if reference is None:
      continue
    keys = [k for k in run_store.differing_settings(settings,
                                                    reference.settings)
            if k in settings and k in reference.settings]
    if keys:
      found[name] = keys
  return found


def matching_references(records: Sequence[Record],
                        references: References) -> References:
  """`references` without the records made with other settings than
  `records` (a floor or ceiling of another model or data says nothing of
  these scenarios)."""
  stale = reference_mismatches(records, references)
  return references._replace(**{name: None for name in stale})


def floor(references: References) -> Optional[float]:
  """The popularity floor's recall@10, or None."""
  return (references.popularity.recall_at_10 if references.popularity
          else None)


def ceiling(references: References) -> Optional[float]:
  """The central ceiling's recall@10 (its best epoch), or None."""
  if references.central is None:
    return None
  return movielens_reference.best_row(references.central)['recall_at_10']
