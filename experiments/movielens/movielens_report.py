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
"""The MovieLens section of RESULTS.md at the paper's horizon.

Augenstein et al., "Mixed Federated Learning: Joint Decentralized and
Centralized Learning" (arXiv:2205.13655), section 4.3, figures 3 and 6,
table 2 and appendix B.3 (table 11), at tables 9-10's settings. The section
is assembled from the scenarios' `movielens_records` (each may come from
another run, machine and date, and may be shorter than the horizon; the
section says so), and puts the paper's numbers beside ours:

*   recall@10 and the test client loss (the column `hinge_loss` of the
    records: the squared hinge of the cited model by default) per scenario,
    final and over the last evaluations, with each scenario's rounds, wall
    time and machine, and the model's forms (context layer, client loss and
    margin, spreadout and lambda; the earlier forms named as such);
*   beside them the reference rows of `movielens_reference`, where their
    records exist: the popularity floor, the central ceiling, the search
    of the spreadout's lambda on the validation users, and each scenario
    against the floor and the ceiling;
*   per client and round, the bytes received and sent and the training
    FLOPs, against table 2;
*   the paper's claims, each marked reproduced or not by the rule
    `movielens_claims.claims` states, with the numbers that decided it.
"""

import math
from collections.abc import Mapping, Sequence
from typing import Optional

from experiments.common import claims as claims_lib
from experiments.common import tables
from experiments.movielens import movielens_claims as ml_claims
from experiments.movielens import movielens_config
from experiments.movielens import movielens_lib
from experiments.movielens import movielens_records as records_lib
from experiments.movielens import movielens_reference

RESULTS_SECTION = 'movielens_reproduction'
Record = records_lib.ScenarioRecord
References = records_lib.References


def step_flops_formula(settings: Mapping[str, object], movies: int,
                       baseline: bool) -> float:
  """Appendix B.3's FLOPs of one client step: B d + 3 B d^2 + 3 B^2 d +
  2 B for the network, hinge and their gradients, plus 0.5 N^2 d + N d
  for the spreadout and its gradient on the baseline's clients."""
  b, d = settings['client_batch_size'], settings['embedding_dim']
  network = b * d + 3 * b * d**2 + 3 * b**2 * d + 2 * b
  return network + (0.5 * movies**2 * d + movies * d if baseline else 0.0)


def formula_table(records: Sequence[Record]) -> str:
  """Per client and round, appendix B.3's formulas (table 11) at this
  data's N and each scenario's n, with the savings they imply (Markdown)."""
  s = records[0].settings
  movies = ml_claims.num_movies(records[0])
  base_flops = step_flops_formula(s, movies, baseline=True)
  base_comm = 2 * movies * s['embedding_dim'] * 4
  paper_base = ml_claims.PAPER_TABLE_2[ml_claims.BASELINE]
  rows = []
  for r in records:
    mixed = r.scenario != ml_claims.BASELINE
    flops = step_flops_formula(s, movies, baseline=not mixed)
    comm = r.costs['paper_comm_bytes']
    paper = ml_claims.PAPER_TABLE_2.get(r.scenario)
    rows.append(
        (ml_claims.label(r.scenario),
         f'{r.mean_keys:.1f}' if mixed else f'N = {movies}',
         f'{comm / 1e3:.1f}',
         f'{ml_claims.saving(comm, base_comm):.2%}' if mixed else '-',
         f'{ml_claims.saving(paper[1], paper_base[1]):.2%}'
         if mixed and paper else '-', f'{flops / 1e6:.4f}',
         f'{ml_claims.saving(flops, base_flops):.3%}' if mixed else '-',
         f'{ml_claims.PAPER_FORMULA_COMPUTATION_SAVING:.2%}' if mixed else '-'))
  return '\n'.join(tables.markdown_table(
      ('scenario', 'n (rows per client)', 'comm. KB (2Nd / 2nd / 3nd)',
       'comm. saving', 'paper (table 2)', 'client Mflop per step (B.3)',
       'comp. saving', 'paper (B.3)'), rows))








def diagnostics_lines(diagnostics: Sequence[Record]) -> list[str]:
  """Table 4 beside the paper's, or why it is absent."""
  found = ml_claims.with_diagnostics(diagnostics)
  if not found:
    return ["Table 4's (G, B)-BGD estimates: not measured (no diagnostics "
            'record; `--diagnostic_rounds` runs them).']
  settings = diagnostics[0].settings
  lines = [
      "Table 4's (G, B)-BGD estimates (eq. 7): separate runs of "
      f'{diagnostics[0].rounds} rounds with K = {settings["client_steps"]} '
      '(appendix B.1), otherwise as above, except that the whole table is '
      'broadcast to the clients: the federated_select processes do not '
      'report the estimates. Max over the rounds:', '']
  lines += tables.markdown_table(
      ('algorithm', 'rounds', 'max G~^2', 'max B~^2',
       'paper (table 4, the task)'),
      [(ml_claims.label(d.scenario), f'{d.first_round}-{d.last_round}',
        f'{d.max_g2:.4f}', f'{d.max_b2:.3f}', '0.03 / 1.50') for d in found])
  weight = settings['federated_weight']
  if weight == settings['central_weight'] and all(
      abs(d.max_b2 - 1 / weight) <= 0.01 / weight for d in found):
    lines += ['', f'Every max B~^2 is within 1% of 1/w_f = {1 / weight:g}: '
              'with w_f = w_c, eq. 7 gives B~^2 = (|w_f g_f|^2 + |w_c '
              'g_c|^2) / (w |w_f g_f + w_c g_c|^2), which tends to 1/w when '
              'one of the two gradients (the clients\' hinge, the server\'s '
              'spreadout) is much larger than the other.']
  return lines


_REFERENCE_NAMES = {records_lib.POPULARITY: 'popularity floor',
                    records_lib.CENTRAL: 'central ceiling',
                    records_lib.LAMBDA_SEARCH: 'lambda search',
                    records_lib.CENTRAL_SGD: 'central SGD'}






def _hours(record: Record) -> str:
  prefix = '' if record.seconds_complete else '>= '
  return f'{prefix}{record.seconds / 3600:.2f} h'


def recall_table(records: Sequence[Record],
                 references: References = References()) -> str:
  """Recall@10 and loss per scenario (Markdown), the paper's beside, then
  the reference rows of `references` (use `matching_references`) in the
  columns that apply: the popularity floor's one number; the central
  ceiling's last epoch, best epoch, loss and wall time."""
  header = ('scenario', 'rounds', 'recall@10',
            f'mean of last {ml_claims.TAIL_EVALUATIONS} evals', 'best',
            'test client loss', 'paper recall@10 (1M)', 's/round',
            'wall time')
  rows = []
  for r in records:
    last = r.rows[-1]
    paper = ('~0.1' if r.scenario in ml_claims.PAPER_SCENARIOS
             else '- (appendix B.4.4)')
    rows.append(
        (ml_claims.label(r.scenario), str(r.rounds),
         f'{last["recall_at_10"]:.4f}',
         f'{ml_claims.tail_mean(r, "recall_at_10"):.4f}',
         f'{max(row["recall_at_10"] for row in r.rows):.4f}',
         f'{last["hinge_loss"]:.4f}', paper, f'{r.seconds_per_round:.2f}',
         _hours(r)))
  if references.popularity is not None:
    rows.append(('popularity floor', '-', f'{ml_claims.floor(references):.4f}',
                 '-', '-', '-', '-', '-', '-'))
  central = references.central
  if central is not None:
    last, best = central.rows[-1], movielens_reference.best_row(central)
    rows.append((
        'central ceiling', f'{last["epoch"]} epochs',
        f'{last["recall_at_10"]:.4f}', '-',
        f'{best["recall_at_10"]:.4f} (epoch {best["epoch"]})',
        f'{last["hinge_loss"]:.4f}', '-', '-',
        f'{central.seconds / 3600:.2f} h'))
  sgd = references.central_sgd
  if sgd is not None:
    last, best = sgd.rows[-1], movielens_reference.best_row(sgd)
    rows.append((
        f'central, SGD at {sgd.settings["central_learning_rate"]:g}',
        f'{last["epoch"]} epochs', f'{last["recall_at_10"]:.4f}', '-',
        f'{best["recall_at_10"]:.4f} (epoch {best["epoch"]})',
        f'{last["hinge_loss"]:.4f}', '-', '-',
        f'{sgd.seconds / 3600:.2f} h'))
  return '\n'.join(tables.markdown_table(header, rows))


def _federated_epochs(records: Sequence[Record],
                      references: References) -> str:
  """How many epochs of central SGD steps the scenarios' rounds amount to
  (a sentence; empty without the popularity record, which counts the
  training examples)."""
  pop, sgd = references.popularity, references.central_sgd
  if pop is None:
    return ''
  rounds = max(r.rounds for r in records)
  steps = records[0].settings['client_steps']
  epoch = pop.train_examples / sgd.settings['central_batch_size']
  return (' A federated round averages its clients\' K steps, so R rounds '
          'move the model about as far as R K central SGD steps: '
          f'{rounds:,} rounds of K = {steps} are {rounds * steps / epoch:.1f}'
          ' epochs of these.')


def _percent(value: float, reference: float) -> str:
  return f'{value / reference:.0%}' if reference else '-'


def _parallel_training_lr_text(records: Sequence[Record]) -> str:
  """Parallel Training's eta where it is not the clients' (the settings
  line's words), from its own record."""
  pt = next((r for r in records
             if r.scenario == movielens_config.PARALLEL_TRAINING), None)
  if pt is None:
    return ''
  lr, s = pt.settings['parallel_training_lr'], pt.settings
  if lr == s['client_lr']:
    return ''
  why = ''
  if math.isclose(lr, s['federated_weight'] * s['client_lr']):
    why = (', w_f eta: its clients step on the client loss alone and its '
           'server on the spreadout alone, where the baseline\'s clients '
           'step on w_f times one plus w_c times the other; this gives both '
           'the baseline\'s step')
  return f' (Parallel Training: {lr:g}{why})'


def reference_lines(records: Sequence[Record],
                    references: References) -> list[str]:
  """What the reference rows are, the lambda search, and each scenario
  against the floor and the ceiling (Markdown); records of other settings
  are named and left out."""
  s = records[0].settings
  lines = ['Reference rows (`experiments/movielens/movielens_reference.py`),'
           ' on the same test examples with the same recall@10 over all '
           'movies:', '']
  stale = ml_claims.reference_mismatches(records, references)
  references = ml_claims.matching_references(records, references)
  pop = references.popularity
  if pop is not None:
    lines.append(
        '* Popularity floor: the 10 movies most often a label among the '
        f'{pop.train_examples:,} training examples, the same 10 for each of '
        f'the {pop.test_examples:,} test examples: recall@10 '
        f'{pop.recall_at_10:.4f}. A model that learns anything about the '
        'next movie is above it.')
  central = references.central
  if central is not None:
    c = central.settings
    best = movielens_reference.best_row(central)
    lines.append(
        '* Central ceiling: the baseline clients\' model and objective '
        '(w_f client loss + w_c spreadout of the whole table, the forms '
        'above) trained centrally on the union of the training users\' '
        f'examples with Adam (learning rate {c["central_learning_rate"]:g}, '
        f'batch {c["central_batch_size"]}; the cited launcher\'s) for '
        f'{c["central_epochs"]} epochs ({central.seconds / 60:.1f} minutes):'
        f' best test recall@10 {best["recall_at_10"]:.4f} at epoch '
        f'{best["epoch"]} (picked on the test users: a generous bound); '
        'per epoch from 0: ' + ', '.join(
            f'{r["recall_at_10"]:.4f}' for r in central.rows) + '.')
  sgd = references.central_sgd
  if sgd is not None:
    c = sgd.settings
    lines.append(
        '* Central SGD: the same central training with the paper\'s '
        f'optimizer instead, SGD at the clients\' eta '
        f'({c["central_learning_rate"]:g}, batch {c["central_batch_size"]}),'
        f' for {c["central_epochs"]} epochs ({sgd.seconds / 60:.1f} '
        'minutes); per epoch from 0: ' + ', '.join(
            f'{r["recall_at_10"]:.4f}' for r in sgd.rows) + '.'
        + _federated_epochs(records, references))
  for name, keys in stale.items():
    lines.append(f'* The {_REFERENCE_NAMES[name]} record was made with '
                 f'other settings ({", ".join(keys)}): left out; a run with '
                 'these settings and --records_dir makes it again.')
  for name in ('popularity', 'central'):
    if getattr(references, name) is None and name not in stale:
      lines.append(f'* {_REFERENCE_NAMES[name].capitalize()}: no record yet'
                   ' (made by a run with --records_dir).')
  lines += ['', *_lambda_lines(s, references.lambda_search)]
  floor_value, ceiling_value = ml_claims.floor(references), ml_claims.ceiling(
      references)
  if floor_value is None and ceiling_value is None:
    return lines
  lines += ['', 'Each scenario against them (recall@10, mean of its last '
            f'{ml_claims.TAIL_EVALUATIONS} evaluations):', '']
  for r in records:
    tail = ml_claims.tail_mean(r, 'recall_at_10')
    parts = []
    if floor_value is not None:
      side = ('above' if tail > floor_value else
              'below' if tail < floor_value else 'at')
      parts.append(f'{side} the popularity floor ({floor_value:.4f}) by '
                   f'{tail - floor_value:+.4f}')
    if ceiling_value is not None:
      parts.append(f'{_percent(tail, ceiling_value)} of the central '
                   f'ceiling ({ceiling_value:.4f})')
    lines.append(f'* {ml_claims.label(r.scenario)}: {tail:.4f}, '
                 + ', '.join(parts) + '.' + _collapse_text(r, tail,
                                                           floor_value,
                                                           references))
  return lines


def _collapse_text(record: Record, tail_recall: float,
                   floor_value: Optional[float],
                   references: References) -> str:
  """A sentence if the scenario's table collapsed, else ''.

  The rule: its test client loss (mean of the last evaluations) is below
  the central model's last one while its recall@10 is below popularity. A
  lower loss with a worse ranking than the model that ranks best means the
  loss was lowered without learning: the client loss only pulls each
  positive pair together (it has no negatives), so the rows can align
  until every cosine is near 1, which only the spreadout opposes.
  """
  central = references.central
  if floor_value is None or central is None or tail_recall >= floor_value:
    return ''
  loss = ml_claims.tail_mean(record, 'hinge_loss')
  central_loss = central.rows[-1]['hinge_loss']
  if loss >= central_loss:
    return ''
  return (f' Its test client loss ({loss:.4f}) is below the central '
          f'model\'s ({central_loss:.4f}) with a ranking below popularity: '
          'the table collapsed (the client loss pulls positive pairs '
          'together and has no negatives; only the spreadout keeps the '
          'rows apart).')


def _lambda_lines(settings: Mapping[str, object],
                  search: Optional[records_lib.LambdaSearchRecord]
                  ) -> list[str]:
  """The spreadout's lambda: the search's grid, scores and choice, or
  that it was not searched."""
  used = settings['spreadout_lambda']
  if search is None:
    return [f'The spreadout\'s lambda ({used:g}) was not searched (the '
            'paper states none; 0.001 is the cited README\'s example; '
            '`--spreadout_lambdas` searches a grid on the validation '
            'users).']
  c = search.settings
  lines = [
      'The spreadout\'s lambda (the paper states none), searched on the '
      'validation users\' examples: the central model above trained '
      f'{c["central_epochs"]} epochs once per lambda '
      f'({search.seconds / 60:.1f} minutes in all), scored by recall@10 '
      'after its last epoch; the best is selected (ties: the smaller '
      'lambda). Central because a lambda costs minutes there where a '
      'federated scenario costs hours; it stands in for the scenarios\' '
      'lambda because the central model is the same model with the same '
      'objective, lambda weighing the same spreadout against the same '
      'client loss.', '']
  lines += tables.markdown_table(
      ('lambda', 'validation recall@10', ''),
      [(f'{x:g}', f'{score:.4f}', 'selected' if x == search.selected
        else '') for x, score in zip(search.lambdas, search.scores)])
  if used == search.selected:
    ran = ' (the selected one).'
  else:
    ran = f', not the selected {search.selected:g}'
    scores = dict(zip(search.lambdas, search.scores))
    if float(used) in scores:
      ran += (f' (validation recall@10 {scores[float(used)]:.4f} against the '
              f'selected one\'s {scores[search.selected]:.4f})')
    ran += '.'
  lines += ['', f'The scenarios ran at lambda {used:g}{ran}']
  return lines


def reference_summary(references: References) -> list[str]:
  """The reference records in a few lines, for the terminal."""
  lines = []
  if references.popularity is not None:
    lines.append('popularity floor: recall@10 '
                 f'{references.popularity.recall_at_10:.4f}')
  if references.central is not None:
    best = movielens_reference.best_row(references.central)
    lines.append(f'central ceiling: recall@10 {best["recall_at_10"]:.4f} '
                 f'(epoch {best["epoch"]} of '
                 f'{references.central.rows[-1]["epoch"]})')
  search = references.lambda_search
  if search is not None:
    lines.append(f'spreadout lambda: {search.selected:g} selected of '
                 + ', '.join(f'{x:g} ({score:.4f})' for x, score in
                             zip(search.lambdas, search.scores))
                 + ' (validation recall@10)')
  return lines


def cost_table(records: Sequence[Record]) -> str:
  """Per client and round, measured and table 2's (Markdown)."""
  base = next((r.costs for r in records if r.scenario == ml_claims.BASELINE),
              None)
  paper_base = ml_claims.PAPER_TABLE_2[ml_claims.BASELINE]
  header = ('scenario', 'down KB', 'up KB', 'comm. saving',
            'paper KB (table 2)', 'paper saving', 'client Mflop',
            'comp. saving', 'paper Mflop (table 2, one step)', 'paper saving')
  rows = []
  for r in records:
    c = r.costs
    paper = ml_claims.PAPER_TABLE_2.get(r.scenario)
    mixed = r.scenario != ml_claims.BASELINE

    def pct(value, reference, show=mixed):
      if not (show and reference):
        return '-'
      return f'{ml_claims.saving(value, reference):.2%}'

    rows.append(
        (ml_claims.label(r.scenario), f'{c["down_bytes"] / 1e3:.1f}',
         f'{c["up_bytes"] / 1e3:.1f}',
         pct(
             ml_claims.communication(c),
             ml_claims.communication(base) if base else 0),
         str(paper[1]) if paper else '-',
         pct(paper[1], paper_base[1], mixed and paper) if paper else '-',
         f'{c["flops"] / 1e6:.3f}', pct(c['flops'],
                                        base['flops'] if base else 0),
         str(paper[0]) if paper else '-',
         pct(paper[0], paper_base[0], mixed and paper) if paper else '-'))
  return '\n'.join(tables.markdown_table(header, rows))


def missing_text(records: Sequence[Record], horizon: int) -> str:
  """Which paper scenarios have no record, and which are shorter."""
  names = {r.scenario for r in records}
  missing = [
      ml_claims.label(s) for s in ml_claims.PAPER_SCENARIOS if s not in names
  ]
  short = [f'{ml_claims.label(r.scenario)} ({r.rounds} rounds)' for r in records
           if r.rounds < horizon]
  parts = []
  if missing:
    parts.append('Missing (no record yet, so their claims are not checked): '
                 + ', '.join(missing) + '.')
  if short:
    parts.append(f'Shorter than the {horizon:,}-round horizon: '
                 + ', '.join(short) + '; comparisons between scenarios use '
                 "the shortest run's last round.")
  return ' '.join(parts) or (f'Every scenario ran the {horizon:,}-round '
                             'horizon.')


def _rows_text(records: Sequence[Record]) -> str:
  """What the clients receive: the mixed records' rows through
  federated_select (they share them, `check_comparable`), and the
  baseline's whole table."""
  mixed = [r for r in records if r.scenario != ml_claims.BASELINE]
  table = 'the whole table, broadcast'
  if not mixed:
    return f'the baseline: {table}'
  return (f'{ml_claims.rows_per_client(mixed[0])} embedding rows per client '
          f'through federated_select (the baseline: {table})')


def _runs_lines(records: Sequence[Record]) -> list[str]:
  machines = sorted({r.machine for r in records})
  lines = []
  for r in records:
    machine = (f'machine {machines.index(r.machine) + 1}'
               if len(machines) > 1 else 'the machine below')
    lines.append(
        f'* {ml_claims.label(r.scenario)}: {r.rounds} rounds, finished '
        f'{r.date} on {machine}, wall time {_hours(r)} '
        f'({r.seconds_per_round:.2f} s per round in its last invocation): '
        f'`{r.command}`.')
  if len(machines) > 1:
    lines += [f'* Machine {i + 1}: {m}.' for i, m in enumerate(machines)]
  else:
    lines.append(f'* Machine: {machines[0]}.')
  return lines


def plot(path: str, records: Sequence[Record]) -> None:
  """Recall@10 and test client loss against rounds, one line per record."""
  title = 'MovieLens dual encoder'
  if records:
    title += f' ({records[0].settings.get("data", "")})'
  movielens_lib.plot(
      path, [movielens_lib.result_from_record(r) for r in records], title)


def results_markdown(records: Sequence[Record], *,
                     diagnostics: Sequence[Record] = (),
                     references: References = References(), horizon: int,
                     plot_link: str, records_link: str, command: str,
                     date: str, data_name: str = '',
                     data_note: str = '') -> str:
  """The RESULTS.md section: runs, tables beside the paper's, claims.

  Args:
    records: The scenarios' records (`check_comparable` ones), in order.
    diagnostics: The records of table 4's runs (`--diagnostic_rounds`).
    references: The reference records (`movielens_records.
      read_references`); those of other settings are named and left out.
    horizon: The rounds the section aims at (the paper's 2,000).
    plot_link: The plot, relative to the Markdown file.
    records_link: The records' directory, relative to the Markdown file.
    command: The command that wrote the section.
    date: `results.utc_now()`.
    data_name: A short name of the data for the heading (e.g. 'MovieLens
      1M, users 1-2999'), so that sections of several data sets differ.
    data_note: A sentence on the data beside the paper's MovieLens 1M (e.g.
      which part of it this is), after the records' own description.

  Raises:
    ValueError: Without records, or with records of different settings.
  """
  if not records:
    raise ValueError('No MovieLens record to report: run some scenarios '
                     'with --records_dir first.')
  ml_claims.check_comparable(records)
  s = records[0].settings
  total = sum(r.seconds for r in records) / 3600
  at_least = '' if all(r.seconds_complete for r in records) else 'at least '
  search = references.lambda_search
  if search is not None and s['spreadout_lambda'] != search.selected:
    # A section beside the selected lambda's: its heading says which.
    data_name = ', '.join(x for x in (
        data_name, f'spreadout lambda {s["spreadout_lambda"]:g}') if x)
  lines = [
      '## MovieLens dual encoder at the paper\'s horizon (' +
      (f'{data_name}; ' if data_name else '') +
      'arXiv:2205.13655, section 4.3, tables 2, 9-10)', '',
      f'Generated on {date} by `{command}` from the per-scenario records in '
      f'[`{records_link}`]({records_link}) (each scenario may come from '
      'another run; its own rounds, date, machine and wall time are '
      f'below). Wall time: {at_least}{total:.2f} h over the '
      f'{len(records)} scenarios.', '',
      f'* Data: {s["data"]}. The paper uses MovieLens 1M (6,040 users, '
      'movie ids up to 3,952, 3,865 train users)' +
      (f'; {data_note.strip().rstrip(".")}.' if data_note else '.'),
      f'* Horizon: {horizon:,} rounds (the paper\'s), evaluation every '
      f'{s["eval_every"]} rounds on all test users\' examples' +
      (f' (a sample of {s["max_eval_examples"]})'
       if s.get('max_eval_examples') else '') + f', seed {s["seed"]}.',
      f'* Settings (tables 9-10): S = {s["clients_per_round"]}, |B_i| = '
      f'{s["client_batch_size"]}, K = {s["client_steps"]}, eta = eta_c = '
      f'{s["client_lr"]}{_parallel_training_lr_text(records)}, eta_s = '
      f'eta_m = 1, w_f = {s["federated_weight"]}, '
      f'w_c = {s["central_weight"]}, SGD, d = {s["embedding_dim"]}, context '
      f'{s["context_length"]} movies, ' + _rows_text(records) + '.',
      f'* Model: {movielens_config.forms_text(s)}. "Cited": the forms of the '
      'code the paper cites (Ning et al. 2021, google-research/federated '
      '`dual_encoder/`).', *_runs_lines(records), '',
      missing_text(
          records,
          horizon), '', 'Test recall@10 (over all movies) and client loss:', '',
      recall_table(records, ml_claims.matching_references(
          records, references)), '', *reference_lines(records, references), '',
      f'![Recall@10 and test client loss over rounds]({plot_link})', '',
      'Per client and round: bytes measured on the compiled TFF computation '
      '(`tff_mixed.core.communication`), client FLOPs for K local steps '
      '(TF\'s profiler on one step, `tff_mixed.core.flops`); savings are '
      'against the baseline. Table 2 counts one step\'s FLOPs on MovieLens '
      '1M, so compare savings, not Mflop:', '',
      cost_table(records), '',
      'The baseline\'s clients compute the spreadout of the N-row table as '
      'the squared d x d Gram matrix of its columns (`dual_encoder.'
      'spreadout`, equal to the pairwise definition up to float rounding, '
      'tests/spreadout_test.py): O(N d^2) FLOPs per step where table 2 '
      'counts N^2 d / 2, so our baseline is N / (2 d) times cheaper than the '
      'paper\'s and the measured computation saving of mixed FL is smaller '
      'than table 2\'s by construction.', '',
      'The paper\'s formulas (appendix B.3, table 11) at this data\'s N, '
      'with each scenario\'s n (the mean distinct movies a client trains '
      'on) and |B_i| = '
      f'{s["client_batch_size"]}, d = {s["embedding_dim"]}: what the savings '
      'would be if each client moved exactly its n rows and computed what '
      'B.3 counts:', '',
      formula_table(records), '', *diagnostics_lines(diagnostics), '',
      'Claims of the paper, decided by the rules of '
      '`experiments/movielens/movielens_claims.claims` and `g2_claim`:', ''
  ]
  lines += claims_lib.claims_markdown(ml_claims.claims(records, references)
                                      + ml_claims.g2_claim(diagnostics))
  return '\n'.join(lines) + '\n'
