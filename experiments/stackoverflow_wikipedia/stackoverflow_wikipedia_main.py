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
r"""Stack Overflow + Wikipedia character LM: mixed FL, FL only, transfer.

The mixed FL paper's section 4.2 and appendix B.4.5 (arXiv:2205.13655).
Federated data: TFF's Stack Overflow database in `--cache_dir` (TFF's
loader; offline, convert a Stack Exchange `Posts.xml` first with
`convert_posts_main`). Central data: TFDS Wikipedia (`--tfds_data_dir`, the
paper's first 5,000,000 articles for training, the rest for evaluation) or
text files (`--central_train_text`, `--central_eval_text`: a file, a
directory or a glob; WikiText files are split into articles).

  python -m experiments.stackoverflow_wikipedia.convert_posts_main \
      --posts_xml=beer.stackexchange.com/Posts.xml --cache_dir=/tmp/so
  python -m experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main \
      --cache_dir=/tmp/so --central_train_text=wikitext-2/wiki.valid.tokens \
      --central_eval_text=wikitext-2/wiki.test.tokens --clients_per_round=10 \
      --embedding_dim=32 --gru_units=128 --central_batch_size=80 \
      --one_way_central_batch_size=640 --rounds=100

Writes `metrics.csv`, `accuracy.png`, `results.txt` and `config.json` to
`--output_dir` and prints the table.

The reproduction at tables 7-8 (`make results-lm`) runs one scenario per
invocation with `--records_dir`: each finished scenario leaves a small
record there (`lm_records`), a scenario already recorded with the same
settings and data is skipped, `--diagnostic_rounds` adds table 4's K = 1
runs of the mixed algorithms, and `--results_markdown` then writes
`lm_report`'s section, built from every record in the directory (with
`--report_only`, from the records alone, training nothing). Another data set
gets a section of its own with `--results_section`, `--results_title` and
`--make_target` beside its own `--records_dir` (`make results-lm-sites`:
eight Stack Exchange sites).

With `--advise_rounds=N` it first trains N rounds of a Parallel Training
probe with diagnostics at the run's settings (under `<output_dir>/advice/`,
resumable), prints the algorithm advisor's estimates and recommendation,
writes advice.json and advice.md to `--output_dir` (and to `--records_dir`,
if given), then goes on with the scenarios or, with `--advise_then=stop`,
stops (`lm_advice`).

Rounds run in groups of clients (`--clients_per_group`, default one group
per core; 1: one client per CLIENTS member, the same results, slower),
adaptive clipping included: each group clips its members' updates.
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
from experiments.common import bgd_diagnostics
from experiments.common import grouping
from experiments.common import markdown_sections
from experiments.common import results as results_lib
from experiments.common import shared_flags
from experiments.stackoverflow_wikipedia import lm_advice
from experiments.stackoverflow_wikipedia import lm_config
from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import lm_records
from experiments.stackoverflow_wikipedia import lm_report
from experiments.stackoverflow_wikipedia import stackoverflow_wikipedia_lib
from tff_mixed.tasks import text_corpus
from tff_mixed.training import reports as reports_lib

_DEFAULTS = lm_config.Config()
RESULTS_SECTION = 'stackoverflow_wikipedia'
_MODULE = 'experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main'

_CACHE_DIR = shared_flags.define_cache_dir_flag(
    None, 'Here: stackoverflow.sqlite.')
_CENTRAL_TRAIN_TEXT = flags.DEFINE_string(
    'central_train_text', None, 'Central training texts: a file, directory '
    'or glob (instead of --tfds_data_dir).')
_CENTRAL_EVAL_TEXT = flags.DEFINE_string(
    'central_eval_text', None, 'Central evaluation texts (with '
    '--central_train_text).')
_TFDS_DATA_DIR = flags.DEFINE_string(
    'tfds_data_dir', None, 'TFDS data directory with a prepared '
    'wikipedia/20201201.en.')
_MAX_CENTRAL_TEXTS = flags.DEFINE_integer(
    'max_central_texts', None, 'Read at most this many central training '
    'texts (default: all text files, or the first 20,000 of Wikipedia\'s '
    '5,000,000 training articles, which are held in memory as sequences).',
    lower_bound=1)
_MAX_EVAL_CLIENTS = flags.DEFINE_integer(
    'max_eval_clients', 1000, 'Stack Overflow evaluation clients to read.',
    lower_bound=1)
_MAX_EVAL_SEQUENCES = flags.DEFINE_integer(
    'max_eval_sequences', 4000, 'Cap on the sequences of each evaluation '
    'corpus.', lower_bound=1)
_SCENARIOS = shared_flags.define_scenarios_flag(lm_config.SCENARIOS)
_ROUNDS = shared_flags.define_rounds_flag(_DEFAULTS.rounds)
_CLIENTS_PER_ROUND = shared_flags.define_clients_per_round_flag(
    _DEFAULTS.clients_per_round)
_CLIENT_BATCH_SIZE = shared_flags.define_client_batch_size_flag(
    _DEFAULTS.client_batch_size)
_CLIENT_STEPS = shared_flags.define_client_steps_flag(
    _DEFAULTS.client_steps, 'Also the central steps.')
_CLIENT_LR = shared_flags.define_client_lr_flag(
    _DEFAULTS.client_lr, 'Also the central one (eta_c).')
_TWO_WAY_CLIENT_LR = flags.DEFINE_float(
    'two_way_client_lr', _DEFAULTS.two_way_client_lr, 'eta of 2-way GT.')
_CENTRAL_BATCH_SIZE = shared_flags.define_central_batch_size_flag(
    _DEFAULTS.central_batch_size,
    'Of PT and 2-way GT (and of central transfer training).')
_ONE_WAY_CENTRAL_BATCH_SIZE = flags.DEFINE_integer(
    'one_way_central_batch_size', _DEFAULTS.one_way_central_batch_size,
    '|B_c| of 1-way GT.', lower_bound=1)
_FEDERATED_WEIGHT = flags.DEFINE_float(
    'federated_weight', _DEFAULTS.federated_weight, 'w_f.')
_CENTRAL_WEIGHT = flags.DEFINE_float('central_weight',
                                     _DEFAULTS.central_weight, 'w_c.')
_CENTRAL_CLIP_NORM = flags.DEFINE_float(
    'central_clip_norm', _DEFAULTS.central_clip_norm,
    'Fixed L2 clip of central gradients.')
_ADAPTIVE_CLIPPING = flags.DEFINE_bool(
    'adaptive_clipping', _DEFAULTS.adaptive_clipping,
    'Clip federated updates adaptively (quantile, no noise).')
_EMBEDDING_DIM = shared_flags.define_embedding_dim_flag(
    _DEFAULTS.embedding_dim)
_GRU_UNITS = flags.DEFINE_integer('gru_units', _DEFAULTS.gru_units,
                                  'GRU units.', lower_bound=1)
_SEQUENCE_LENGTH = flags.DEFINE_integer(
    'sequence_length', _DEFAULTS.sequence_length, 'Characters per example.',
    lower_bound=1)
_SWITCH_ROUND = flags.DEFINE_integer(
    'switch_round', None, 'Transfer learning switches corpus after this '
    'round (default: rounds // 2).', lower_bound=1)
_EVAL_EVERY = shared_flags.define_eval_every_flag(_DEFAULTS.eval_every)
_SEED = shared_flags.define_seed_flag(0)
_CLIENTS_PER_GROUP = grouping.define_clients_per_group_flag()
_MEMBERS_AT_ONCE = grouping.define_members_at_once_flag()
_ROUNDS_PER_CALL = grouping.define_rounds_per_call_flag()
# Runs main on these TFF workers (cli.run); empty: the local runtime.
_WORKER_ADDRESSES = cli.define_worker_addresses_flag()
_OUTPUT_DIR = shared_flags.define_output_dir_flag(
    'outputs/stackoverflow_wikipedia')
_DATA_NOTE = shared_flags.define_data_note_flag(
    '', 'Here: e.g. which Posts.xml was converted.')
_RESULTS = results_lib.define_results_flags(RESULTS_SECTION)
# The reproduction at tables 7-8, one scenario per invocation.
_RECORDS_DIR = shared_flags.define_records_dir_flag(
    None, 'If set, each finished scenario is recorded here (a metrics CSV '
    'and a JSON summary), scenarios already recorded with the same settings '
    'and data are skipped, and --results_markdown gets the reproduction '
    'section built from every record here.')
_DIAGNOSTIC_ROUNDS = shared_flags.define_diagnostic_rounds_flag(
    0, 'With --records_dir: of those among --scenarios, run after them.')
_REPORT_ONLY = shared_flags.define_report_only_flag(
    'With --records_dir: the section and plot.')
_PLOT = shared_flags.define_plot_flag(
    None, 'With --records_dir: the accuracy plot of every record (default: '
    '<records_dir>/accuracy.png).')
_WHY_SETTINGS = flags.DEFINE_string(
    'why_settings', '', 'With --records_dir: why the settings differ from '
    'tables 7-8, for the section.')
_RESULTS_TITLE = flags.DEFINE_string(
    'results_title', lm_report.TITLE, 'With --records_dir: the heading of '
    'the section (e.g. naming its data, for a --results_section other than '
    f'{lm_report.RESULTS_SECTION}).')
_MAKE_TARGET = flags.DEFINE_string(
    'make_target', lm_report.MAKE_TARGET, 'With --records_dir: the make '
    'target the section names for adding a missing record.')
_ADVISE = advising.define_advise_flags()
# The shared bound is the loosest any binary takes (0: train epochs); here
# K >= 1.
shared_flags.require_at_least(_CLIENT_STEPS, 1)


def _central_texts():
  """(train texts, eval texts, name) from text files or TFDS Wikipedia."""
  corpus = text_corpus
  if _TFDS_DATA_DIR.value:
    if _CENTRAL_TRAIN_TEXT.value or _CENTRAL_EVAL_TEXT.value:
      raise ValueError('Pass either --tfds_data_dir or --central_train_text '
                       'and --central_eval_text, not both.')
    train = list(corpus.load_tfds_wikipedia(
        _TFDS_DATA_DIR.value, split=corpus.PAPER_TRAIN_SPLIT,
        max_articles=_MAX_CENTRAL_TEXTS.value or 20_000))
    # Each article gives at least one sequence: enough for the cap.
    evaluation = list(corpus.load_tfds_wikipedia(
        _TFDS_DATA_DIR.value, split=corpus.PAPER_EVAL_SPLIT,
        max_articles=_MAX_EVAL_SEQUENCES.value))
    return train, evaluation, 'Wikipedia (TFDS 20201201.en)'
  if not (_CENTRAL_TRAIN_TEXT.value and _CENTRAL_EVAL_TEXT.value):
    raise ValueError('The central corpus is missing: pass --tfds_data_dir, '
                     'or --central_train_text and --central_eval_text (text '
                     'files, e.g. WikiText\'s wiki.*.tokens).')
  train = corpus.read_text_files(_CENTRAL_TRAIN_TEXT.value)
  if _MAX_CENTRAL_TEXTS.value:
    train = train[:_MAX_CENTRAL_TEXTS.value]
  evaluation = corpus.read_text_files(_CENTRAL_EVAL_TEXT.value)
  return train, evaluation, 'text files'


def _record(records_dir: str, result, config, data_description: str,
            diagnostics: bool) -> None:
  """Writes a finished scenario's `lm_records.ScenarioRecord`."""
  summary = None
  if diagnostics:
    found = bgd_diagnostics.read_diagnostics(result.scenario,
                                             result.metrics_path)
    if found is None:
      raise ValueError(f'The diagnostics run of {result.scenario} reported '
                       f'no G~^2 (in {result.metrics_path}).')
    summary = dict(max_g2=found.max_g2, max_b2=found.max_b2,
                   first_round=found.first_round, last_round=found.last_round)
  lm_records.write_record(records_dir, lm_records.ScenarioRecord(
      name=_record_name(result.scenario, diagnostics),
      scenario=result.scenario, rows=result.rows,
      settings=_settings(config), data=data_description,
      machine=results_lib.machine_description(), date=results_lib.utc_now(),
      command=results_lib.command_line(_MODULE), seconds=result.seconds,
      seconds_per_round=result.seconds_per_round,
      resumed_from=result.resumed_from, diagnostics=summary))


def _record_name(scenario: str, diagnostics: bool) -> str:
  return scenario + (lm_records.DIAGNOSTICS_SUFFIX if diagnostics else '')


def _settings(config) -> dict:
  return dict(config._asdict(), switch_round=config.switch())


def _run_and_record(data, config, records_dir: str) -> None:
  """Runs the scenarios (and diagnostics runs) that have no record yet."""
  runs = [(config, list(_SCENARIOS.value), _OUTPUT_DIR.value, False)]
  if _DIAGNOSTIC_ROUNDS.value:
    runs.append((
        config._replace(rounds=_DIAGNOSTIC_ROUNDS.value, client_steps=1,
                        with_diagnostics=True),
        [s for s in _SCENARIOS.value if s in lm_config.MIXED],
        os.path.join(_OUTPUT_DIR.value, 'diagnostics'), True))
  for run_config, scenarios, output_dir, diagnostics in runs:
    todo = [s for s in scenarios if lm_records.recorded(
        records_dir, _record_name(s, diagnostics), _settings(run_config),
        data.description) is None]
    for s in sorted(set(scenarios) - set(todo)):
      logging.info('%s%s: recorded in %s with these settings; not rerun.', s,
                   ' (diagnostics)' if diagnostics else '', records_dir)
    if todo:
      stackoverflow_wikipedia_lib.run_experiment(
          data, run_config, scenarios=todo, output_dir=output_dir,
          on_result=lambda r, c=run_config, d=diagnostics: _record(
              records_dir, r, c, data.description, d),
          rounds_per_call=_ROUNDS_PER_CALL.value)


def _reproduction_section() -> str:
  """The reproduction's section: --results_section if given, else
  lm_report's (the beer.stackexchange one of make results-lm)."""
  if flags.FLAGS['results_section'].present:
    return _RESULTS.section.value
  return lm_report.RESULTS_SECTION


def _publish_reproduction(records_dir: str) -> None:
  """The plot and, with --results_markdown, the section, from the records."""
  records = lm_records.read_records(records_dir)
  if not records:
    raise ValueError(f'No record in {records_dir}: run some scenarios first.')
  plot = _PLOT.value or os.path.join(records_dir, 'accuracy.png')
  reports_lib.make_directory(os.path.dirname(os.path.abspath(plot)),
                             '--plot directory')
  lm_report.plot(plot, records)
  markdown_path = _RESULTS.markdown.value
  section = functools.partial(
      lm_report.results_markdown, records, records_dir=records_dir,
      command=results_lib.command_line(_MODULE), date=results_lib.utc_now(),
      why_settings=_WHY_SETTINGS.value, title=_RESULTS_TITLE.value,
      make_target=_MAKE_TARGET.value)
  if not markdown_path:
    print(section(plot_link=plot), end='')
    return
  name = _reproduction_section()
  results_lib.write_results_section(
      markdown_path, name, section(plot_link=os.path.relpath(
          os.path.abspath(plot), os.path.dirname(
              os.path.abspath(markdown_path)))),
      note=_RESULTS.note.value,
      # A new section goes after the one of make results-lm.
      after=(RESULTS_SECTION if name == lm_report.RESULTS_SECTION
             else lm_report.RESULTS_SECTION))
  if name == lm_report.RESULTS_SECTION:
    for stale in lm_report.STALE_SECTIONS:
      markdown_sections.remove_section(markdown_path, stale)
  logging.info('Wrote the %s section of %s and %s', name, markdown_path, plot)


def _check_flags() -> None:
  """Refuses flag combinations that cannot run."""
  for name in ('diagnostic_rounds', 'report_only', 'plot', 'why_settings',
               'results_title', 'make_target'):
    if flags.FLAGS[name].present and not _RECORDS_DIR.value:
      raise app.UsageError(f'--{name} needs --records_dir.')
  if flags.FLAGS['advise_then'].present and not _ADVISE.rounds.value:
    raise app.UsageError('--advise_then needs --advise_rounds=N, N > 0.')
  if _ADVISE.rounds.value and _REPORT_ONLY.value:
    raise app.UsageError('--advise_rounds trains a probe; --report_only '
                         'trains nothing: pass one of them.')
  if not _REPORT_ONLY.value and not _CACHE_DIR.value:
    raise app.UsageError(
        '--cache_dir is required: the directory of TFF\'s '
        'stackoverflow.sqlite (or convert a Posts.xml into it with '
        'experiments.stackoverflow_wikipedia.convert_posts_main).')


def _config() -> lm_config.Config:
  return lm_config.Config(
      rounds=_ROUNDS.value, clients_per_round=_CLIENTS_PER_ROUND.value,
      client_batch_size=_CLIENT_BATCH_SIZE.value,
      client_steps=_CLIENT_STEPS.value, client_lr=_CLIENT_LR.value,
      two_way_client_lr=_TWO_WAY_CLIENT_LR.value,
      central_batch_size=_CENTRAL_BATCH_SIZE.value,
      one_way_central_batch_size=_ONE_WAY_CENTRAL_BATCH_SIZE.value,
      federated_weight=_FEDERATED_WEIGHT.value,
      central_weight=_CENTRAL_WEIGHT.value,
      central_clip_norm=_CENTRAL_CLIP_NORM.value,
      adaptive_clipping=_ADAPTIVE_CLIPPING.value,
      embedding_dim=_EMBEDDING_DIM.value, gru_units=_GRU_UNITS.value,
      sequence_length=_SEQUENCE_LENGTH.value,
      switch_round=_SWITCH_ROUND.value, eval_every=_EVAL_EVERY.value,
      seed=_SEED.value, clients_per_group=_CLIENTS_PER_GROUP.value,
      members_at_once=_MEMBERS_AT_ONCE.value)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  _check_flags()
  if _REPORT_ONLY.value:
    _publish_reproduction(_RECORDS_DIR.value)
    return
  config = _config()
  train_texts, eval_texts, central_name = _central_texts()
  data = lm_data.load_data(
      _CACHE_DIR.value, train_texts, eval_texts,
      sequence_length=config.sequence_length,
      max_eval_clients=_MAX_EVAL_CLIENTS.value,
      max_eval_sequences=_MAX_EVAL_SEQUENCES.value, seed=config.seed,
      central_name=central_name)
  if _DATA_NOTE.value:
    data = data._replace(
        description=f'{_DATA_NOTE.value}; {data.description}')
  if _ADVISE.rounds.value:
    advice, files = lm_advice.run_advice(
        data, config, rounds=_ADVISE.rounds.value,
        output_dir=_OUTPUT_DIR.value, records_dir=_RECORDS_DIR.value)
    if not advising.report(advice, files, _ADVISE.then.value):
      return
  if _RECORDS_DIR.value:
    _run_and_record(data, config, _RECORDS_DIR.value)
    _publish_reproduction(_RECORDS_DIR.value)
    return
  result = stackoverflow_wikipedia_lib.run_experiment(
      data, config, scenarios=_SCENARIOS.value, output_dir=_OUTPUT_DIR.value,
      rounds_per_call=_ROUNDS_PER_CALL.value)
  results_lib.publish(
      result.table, result.files, _RESULTS,
      module='experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main',
      markdown_fn=functools.partial(
          stackoverflow_wikipedia_lib.results_markdown, result),
      after=RESULTS_SECTION)


if __name__ == '__main__':
  cli.run(main)
