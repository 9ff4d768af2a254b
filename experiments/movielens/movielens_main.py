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
r"""MovieLens dual encoder: mixed FL with federated_select vs all-on-client.

Clients compute the client loss (a hinge) on their own next-movie examples;
the server computes the spreadout regularizer; each client receives only its
movies' embedding rows (arXiv:2205.13655, section 4.3; see `movielens_lib`).
By default the model takes the forms of the code the paper cites
(`--context_layer`, `--client_loss`, `--spreadout_form`; the earlier ones by
name), with the spreadout's `--spreadout_lambda`.

Data: a MovieLens ratings file, `ratings.dat` of MovieLens 1M
(`UserID::MovieID::Rating::Timestamp`) or `u.data` of MovieLens 100K
(tab-separated), or a subset of either's users, possibly gzipped, from
https://grouplens.org/datasets/movielens/ (their licence forbids
redistribution, so none ships here):

  python -m experiments.movielens.movielens_main --ratings_file=ml-1m/ratings.dat

Writes `metrics.csv`, `recall.png`, `results.txt`, `costs.txt` (bytes and
FLOPs per client and round, measured and the paper's formulas) and
`config.json` to `--output_dir` and prints the tables. Every scenario runs
in groups of clients (`--clients_per_group`, default one group per core;
1: one client per CLIENTS member, the same results, slower).

With `--advise_rounds=N` it first trains a Parallel Training probe with
diagnostics for N rounds at the run's settings (`movielens_advice`, under
`<output_dir>/advice/`), prints the algorithm advisor's estimates and
recommendation, writes `advice.json` and `advice.md` to `--output_dir` (and
to `<records_dir>/advice/`), then goes on, or stops with
`--advise_then=stop`.

With `--records_dir`, the section's reference rows (`movielens_reference`)
are made before the scenarios train, unless `--noreference_rows`: the
popularity floor and the central ceiling (`--central_epochs` of Adam at
`--central_lr`), each kept as a record under `<records_dir>/reference/` and
read back while the settings stay the same. `--spreadout_lambdas=a,b,...`
first selects the spreadout's lambda on the validation users (the central
model trained once per lambda, recorded there too) and runs everything at
the selected one.
"""

from collections.abc import Sequence
import functools
import os

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
from absl import logging

from experiments.common import advising
from experiments.common import grouping
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.movielens import movielens_advice
from experiments.movielens import movielens_claims
from experiments.movielens import movielens_config
from experiments.movielens import movielens_lib
from experiments.movielens import movielens_records
from experiments.movielens import movielens_reference
from experiments.movielens import movielens_report
from tff_mixed.models import dual_encoder
from tff_mixed.training import reports as reports_lib

_DEFAULTS = movielens_config.Config()

_RATINGS_FILE = shared_flags.define_ratings_file_flag(None)
_SKIP_MALFORMED = flags.DEFINE_bool(
    'skip_malformed', False, 'Skip malformed rating lines (counted) instead '
    'of stopping at the first one.')
_SCENARIOS = shared_flags.define_scenarios_flag(movielens_config.SCENARIOS)
_ROUNDS = shared_flags.define_rounds_flag(_DEFAULTS.rounds)
_CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(
    _DEFAULTS.clients_per_round)
_CLIENT_BATCH_SIZE = shared_flags.define_client_batch_size_flag(
    _DEFAULTS.client_batch_size)
_CLIENT_STEPS = shared_flags.define_client_steps_flag(
    _DEFAULTS.client_steps, 'Also the central steps.')
_CLIENT_LR = shared_flags.define_client_lr_flag(
    _DEFAULTS.client_lr, 'Also the central one (eta_c).')
_PARALLEL_TRAINING_LR = flags.DEFINE_float(
    'parallel_training_lr', _DEFAULTS.parallel_training_lr,
    'eta = eta_c of Parallel Training (tables 9-10: the clients\' 0.5). Its '
    'clients step on the client loss alone and its server on the spreadout '
    'alone, where the baseline\'s clients step on w_f times one plus w_c '
    'times the other: w_f times --client_lr gives both parts the '
    'baseline\'s step.')
_FEDADAM_LR = flags.DEFINE_float(
    'fedadam_lr', _DEFAULTS.fedadam_lr, 'Server Adam learning rate of '
    'one_way_gt_fedadam.')
_EMBEDDING_DIM = shared_flags.define_embedding_dim_flag(
    _DEFAULTS.embedding_dim)
_CONTEXT_LENGTH = flags.DEFINE_integer(
    'context_length', _DEFAULTS.context_length, 'Context movies per example.',
    lower_bound=1)
_KEYS_PER_CLIENT = flags.DEFINE_integer(
    'keys_per_client', _DEFAULTS.keys_per_client, 'Embedding rows each '
    'mixed client receives per round (federated_select keys); a client '
    'using more movies keeps its most frequent ones and the others carry '
    'no loss. Default: batch size x steps x (context length + 1), every '
    'movie a round can hold, so nothing is cut.', lower_bound=1)
_CONTEXT_LAYER = flags.DEFINE_enum(
    'context_layer', _DEFAULTS.context_layer, dual_encoder.CONTEXT_LAYERS,
    'The context tower\'s layer after the mean of the context movies: '
    f'{dual_encoder.RELU_DENSE} (the cited model\'s Dense(d) with ReLU) or '
    f'{dual_encoder.IDENTITY_LINEAR} (the earlier identity-initialized '
    'linear layer).')
_CLIENT_LOSS = flags.DEFINE_enum(
    'client_loss', _DEFAULTS.client_loss, dual_encoder.CLIENT_LOSSES,
    f'The clients\' loss: {dual_encoder.SQUARED_HINGE} (the cited model\'s,'
    f' margin 0.9) or {dual_encoder.HINGE} (the earlier, margin 1).')
_MARGIN = flags.DEFINE_float(
    'margin', None, 'The client loss\'s margin; unset: the form\'s own.')
_SPREADOUT_FORM = flags.DEFINE_enum(
    'spreadout_form', _DEFAULTS.spreadout_form, dual_encoder.SPREADOUTS,
    f'The server\'s spreadout: {dual_encoder.FROBENIUS} (the cited model\'s '
    'Frobenius norm of the off-diagonal cosines) or '
    f'{dual_encoder.MEAN_SQUARED} (the earlier mean of their squares).')
_SPREADOUT_LAMBDA = flags.DEFINE_float(
    'spreadout_lambda', _DEFAULTS.spreadout_lambda, 'lambda of the '
    'spreadout (the paper states none; 0.001 is the cited README\'s '
    'example). Not with --spreadout_lambdas, which selects it.',
    lower_bound=0.0)
_SPREADOUT_LAMBDAS = flags.DEFINE_list(
    'spreadout_lambdas', [], 'With --records_dir: a grid of lambdas (e.g. '
    '1e-4,1e-3,1e-2,1e-1); the central model trains --central_epochs once '
    'per lambda, the best recall@10 on the validation users is selected '
    '(ties: the smaller lambda; recorded in '
    '<records_dir>/reference/lambda_search.json and read back) and the run '
    'uses it. Empty: --spreadout_lambda.')
_REFERENCE_ROWS = flags.DEFINE_bool(
    'reference_rows', True, 'With --records_dir: before the scenarios, the '
    'popularity floor and the central ceiling (movielens_reference) for the '
    'section, made when their records under <records_dir>/reference/ are '
    'missing or of other settings, read back otherwise.')
_CENTRAL_EPOCHS = flags.DEFINE_integer(
    'central_epochs', movielens_reference.EPOCHS, 'Epochs of the central '
    'ceiling and of each lambda of --spreadout_lambdas.', lower_bound=1)
_CENTRAL_LR = flags.DEFINE_float(
    'central_lr', movielens_reference.LEARNING_RATE, 'Adam\'s learning rate '
    'for the central ceiling and the lambda search (the cited launcher\'s '
    '0.01).', lower_bound=0.0)
_EVAL_EVERY = shared_flags.define_eval_every_flag(_DEFAULTS.eval_every)
_MAX_EVAL_EXAMPLES = shared_flags.define_max_eval_examples_flag(None)
_SEED = shared_flags.define_seed_flag(0)
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
_ROUNDS_PER_CALL = grouping.define_rounds_per_call_flag()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
_OUTPUT_DIR = shared_flags.define_output_dir_flag('outputs/movielens')
_RESULTS = results_lib.define_results_flags(movielens_lib.RESULTS_SECTION)

# A long horizon, resumable after an interruption (`make results-movielens`).
_BASELINE_ROUNDS = flags.DEFINE_integer(
    'baseline_rounds', None, 'Rounds of the baseline scenario (each of its '
    'rounds costs ~15 mixed ones at S = 100); unset: --rounds.',
    lower_bound=1)
_RECORDS_DIR = shared_flags.define_records_dir_flag(
    '', 'If set, each finished scenario leaves its record here (metrics CSV '
    'and JSON summary), a scenario whose record has the same settings and '
    'rounds is read back instead of trained, and --results_markdown gets '
    'the report of every record here (movielens_report) instead of this '
    'run\'s tables.')
_PLOT = shared_flags.define_plot_flag(
    '', 'With --records_dir: the recall@10 plot of every record (default: '
    '<records_dir>/../movielens.png).')
_DIAGNOSTIC_ROUNDS = shared_flags.define_diagnostic_rounds_flag(
    0, 'Of those among --scenarios, after the others; they broadcast the '
    'whole table (the federated_select processes do not report the '
    'estimates). Records in <records_dir>/diagnostics.')
_ADVISE = advising.define_advise_flags()
_DATA_NAME = flags.DEFINE_string(
    'data_name', '', 'With --records_dir: a short name of the data for the '
    "section's heading (e.g. 'MovieLens 1M, users 1-2999'), so that "
    'sections of several data sets differ.')
_DATA_NOTE = shared_flags.define_data_note_flag(
    '', "With --records_dir: a sentence on the data beside the paper's "
    'MovieLens 1M (e.g. which part of it this is).')
_DROP_SECTIONS = flags.DEFINE_list(
    'drop_sections', [], 'Sections of --results_markdown that the written '
    'one supersedes: removed once it is written.')
# The shared bound is the loosest any binary takes (0: train epochs); here
# K >= 1.
shared_flags.require_at_least(_CLIENT_STEPS, 1)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  if not _RATINGS_FILE.value:
    raise app.UsageError(
        '--ratings_file is required: a MovieLens ratings.dat (1M) or u.data '
        '(100K) from https://grouplens.org/datasets/movielens/.')
  config = movielens_config.Config(
      rounds=_ROUNDS.value, clients_per_round=_CLIENTS_PER_ROUND.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      client_steps=_CLIENT_STEPS.value, client_lr=_CLIENT_LR.value,
      parallel_training_lr=_PARALLEL_TRAINING_LR.value,
      fedadam_lr=_FEDADAM_LR.value, embedding_dim=_EMBEDDING_DIM.value,
      context_length=_CONTEXT_LENGTH.value,
      keys_per_client=_KEYS_PER_CLIENT.value,
      context_layer=_CONTEXT_LAYER.value, client_loss=_CLIENT_LOSS.value,
      margin=_MARGIN.value, spreadout_form=_SPREADOUT_FORM.value,
      spreadout_lambda=_SPREADOUT_LAMBDA.value, eval_every=_EVAL_EVERY.value,
      max_eval_examples=_MAX_EVAL_EXAMPLES.value, seed=_SEED.value,
      clients_per_group=_CLIENTS_PER_GROUP.value)
  if _DROP_SECTIONS.value and not _RESULTS.markdown.value:
    raise app.UsageError('--drop_sections needs --results_markdown.')
  if _RESULTS.section.value in _DROP_SECTIONS.value:
    raise app.UsageError('--drop_sections must not name --results_section '
                         f'({_RESULTS.section.value}).')
  records_dir = _RECORDS_DIR.value or None
  if _DIAGNOSTIC_ROUNDS.value and records_dir is None:
    raise app.UsageError('--diagnostic_rounds needs --records_dir.')
  if _ADVISE.then.value == advising.STOP and not _ADVISE.rounds.value:
    raise app.UsageError('--advise_then=stop needs --advise_rounds=N (N > 0):'
                         ' without a probe there is no advice to stop after.')
  try:
    lambdas = [float(x) for x in _SPREADOUT_LAMBDAS.value]
  except ValueError as e:
    raise app.UsageError(f'--spreadout_lambdas must be numbers: {e}') from e
  if lambdas and records_dir is None:
    raise app.UsageError('--spreadout_lambdas needs --records_dir.')
  if lambdas and flags.FLAGS['spreadout_lambda'].present:
    raise app.UsageError('--spreadout_lambda and --spreadout_lambdas '
                         'exclude each other: the search selects lambda.')
  if records_dir is not None:
    reports_lib.make_directory(records_dir, '--records_dir')
    # A damaged record stops the run before hours of training, not after.
    movielens_records.read_records(records_dir)
    movielens_records.read_references(records_dir)
  module = 'experiments.movielens.movielens_main'
  command = results_lib.command_line(module)
  data = None
  if records_dir is not None and (lambdas or _REFERENCE_ROWS.value):
    movielens_config.check_forms(config)
    data = movielens_lib.load_data(_RATINGS_FILE.value, config,
                                   _SKIP_MALFORMED.value)
    description = movielens_lib.data_description(_RATINGS_FILE.value, data)
  if lambdas:
    search = movielens_reference.search_lambda(
        data, config, description, records_dir, lambdas,
        epochs=_CENTRAL_EPOCHS.value, learning_rate=_CENTRAL_LR.value,
        command=command)
    logging.info('Selected lambda %g of %s (validation recall@10 %s)',
                 search.selected, search.lambdas, search.scores)
    config = config._replace(spreadout_lambda=search.selected)
  if _ADVISE.rounds.value and not _advise(config, records_dir, module):
    return
  if data is not None and _REFERENCE_ROWS.value:
    # Stale scenario records stop the run here, before minutes of central
    # training, as they would before the scenarios.
    movielens_records.check_settings(
        records_dir, movielens_lib.record_settings(config, description))
    movielens_reference.reference_rows(
        data, config, description, records_dir,
        epochs=_CENTRAL_EPOCHS.value, learning_rate=_CENTRAL_LR.value,
        command=command)
  scenario_rounds = ({} if _BASELINE_ROUNDS.value is None else
                     {movielens_config.BASELINE: _BASELINE_ROUNDS.value})
  result = movielens_lib.run_experiment(
      _RATINGS_FILE.value, scenarios=_SCENARIOS.value, config=config,
      output_dir=_OUTPUT_DIR.value, skip_malformed=_SKIP_MALFORMED.value,
      scenario_rounds=scenario_rounds, records_dir=records_dir,
      command=command, rounds_per_call=_ROUNDS_PER_CALL.value)
  if records_dir is None:
    results_lib.publish(
        result.table + '\n' + result.cost_table, result.files, _RESULTS,
        module=module,
        markdown_fn=functools.partial(movielens_lib.results_markdown, result),
        after=movielens_lib.RESULTS_SECTION)
  else:
    diagnostic_scenarios = [s for s in _SCENARIOS.value
                            if s in movielens_claims.MIXED]
    if _DIAGNOSTIC_ROUNDS.value and diagnostic_scenarios:
      movielens_lib.run_experiment(
          _RATINGS_FILE.value, scenarios=diagnostic_scenarios,
          config=config._replace(rounds=_DIAGNOSTIC_ROUNDS.value,
                                 client_steps=1),
          output_dir=os.path.join(_OUTPUT_DIR.value, 'diagnostics'),
          skip_malformed=_SKIP_MALFORMED.value,
          records_dir=os.path.join(records_dir, 'diagnostics'),
          command=results_lib.command_line(module), with_diagnostics=True,
          rounds_per_call=_ROUNDS_PER_CALL.value)
    _report(records_dir, config.rounds, result, module)
  for section in _DROP_SECTIONS.value:
    if markdown_sections.remove_section(_RESULTS.markdown.value, section):
      logging.info('Removed the superseded section %s of %s', section,
                   _RESULTS.markdown.value)


def _advise(config: movielens_config.Config, records_dir, module: str) -> bool:
  """`--advise_rounds`: the probe, its advice printed and written (also to
  <records_dir>/advice/); whether the run goes on (`--advise_then`)."""
  advice, files = movielens_advice.run_advice(
      _RATINGS_FILE.value, rounds=_ADVISE.rounds.value, config=config,
      output_dir=_OUTPUT_DIR.value, skip_malformed=_SKIP_MALFORMED.value,
      records_dir=records_dir, command=results_lib.command_line(module))
  return advising.report(advice, files, _ADVISE.then.value)


def _report(records_dir: str, horizon: int,
            result: movielens_lib.ExperimentResult, module: str) -> None:
  """Plot and section of every record in `records_dir` (this run's and
  earlier runs'), the latter into --results_markdown."""
  records = movielens_records.read_records(records_dir,
                                           movielens_config.SCENARIOS)
  diagnostics = movielens_records.read_records(
      os.path.join(records_dir, 'diagnostics'), movielens_claims.MIXED)
  movielens_claims.check_comparable(records)
  plot = _PLOT.value or os.path.join(os.path.dirname(
      os.path.abspath(records_dir)), 'movielens.png')
  movielens_report.plot(plot, records)
  references = movielens_records.read_references(records_dir)
  print(result.table + '\n' + result.cost_table, end='', flush=True)
  for line in movielens_report.reference_summary(references):
    print(line, flush=True)
  markdown = _RESULTS.markdown.value
  if markdown:
    base = os.path.dirname(os.path.abspath(markdown))
    section = movielens_report.results_markdown(
        records, diagnostics=diagnostics, references=references,
        horizon=horizon,
        plot_link=os.path.relpath(os.path.abspath(plot), base),
        records_link=os.path.relpath(os.path.abspath(records_dir), base),
        command=results_lib.command_line(module),
        date=results_lib.utc_now(), data_name=_DATA_NAME.value,
        data_note=_DATA_NOTE.value)
    # A new section goes after the MovieLens sections already there.
    present = [name for name in markdown_sections.section_names(markdown)
               if name.startswith(movielens_lib.RESULTS_SECTION)
               and name != _RESULTS.section.value]
    after = present[-1] if present else None
    results_lib.write_results_section(
        markdown, _RESULTS.section.value, section,
        note=_RESULTS.note.value, after=after)
    logging.info('Wrote %s', markdown)
  logging.info('Wrote the plot %s and the records in %s', plot, records_dir)


if __name__ == '__main__':
  cli.run(main)
