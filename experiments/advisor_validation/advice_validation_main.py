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
r"""Records one task's advice beside its measured winner; rebuilds the section.

An experiment binary run with `--advise_rounds=N` writes `advice.json`; its
full runs of Parallel Training, 1-way and 2-way GT leave per-round curves.
This binary reads both, finds the first round each algorithm reaches the
target (per curve, i.e. per seed), writes the task's record to
`--records_dir` and rebuilds the RESULTS.md section from every record there
(`validation_lib`):

  python -m experiments.advisor_validation.advice_validation_main \
    --task=digits --title='Digits, K = 10, S = 10' \
    --advice_json=outputs/advice/digits/advice.json \
    --curve='parallel_training:outputs/advice/digits/metrics.csv' \
    --curve='one_way_gt:outputs/advice/digits/metrics.csv' \
    --curve='two_way_gt:outputs/advice/digits/metrics.csv' \
    --metric=eval_auc --target=0.95 --results_markdown=RESULTS.md

With `--report_only`, only the section is rebuilt.
"""

from collections.abc import Sequence
import json

from experiments import tf_log_level  # pylint: disable=unused-import
from experiments.common import cli
from absl import app
from absl import flags
from absl import logging

from experiments.advisor_validation import validation_lib
from experiments.common import results as results_lib
from experiments.common import shared_flags

_TASK = flags.DEFINE_string(
    'task', None, 'The task\'s short name (its record is <task>.json).')
_TITLE = flags.DEFINE_string(
    'title', None, 'The task and its settings, as the table names it.')
_ADVICE_JSON = flags.DEFINE_string(
    'advice_json', None, 'The advice.json a binary run with --advise_rounds '
    'wrote.')
_CURVES = flags.DEFINE_multi_string(
    'curve', [], 'ALGORITHM:GLOB: the CSV files of one algorithm\'s full '
    'runs (one per seed); repeat for each of parallel_training, '
    'one_way_gt, two_way_gt.')
_METRIC = flags.DEFINE_string(
    'metric', None, 'The CSV column of the evaluation metric (higher is '
    'better, unless --minimize).')
_TARGET = flags.DEFINE_float(
    'target', None, 'The target value of --metric.')
_TARGET_SHARE = flags.DEFINE_float(
    'target_share', None, 'Instead of --target: this share of the lowest '
    'last-quarter mean of --metric over the three algorithms\' curves '
    '(with --minimize: the highest divided by it).')
_MINIMIZE = flags.DEFINE_bool(
    'minimize', False, 'Lower values of --metric are better (a loss): the '
    'target is reached at or below it.')
_NOTE = flags.DEFINE_string(
    'note', '', 'One sentence a reader should know beside the task\'s '
    'numbers (e.g. what else its own section measured).')
_RECORDS_DIR = shared_flags.define_records_dir_flag('docs/results/advice')
_REPORT_ONLY = shared_flags.define_report_only_flag()
_RESULTS = results_lib.define_results_flags('advisor_validation')

_MODULE = 'experiments.advisor_validation.advice_validation_main'


def _record() -> validation_lib.Validation:
  missing = [f'--{name}' for name, holder in (
      ('task', _TASK), ('title', _TITLE), ('advice_json', _ADVICE_JSON),
      ('metric', _METRIC)) if not holder.value]
  if missing:
    raise app.UsageError(f'{", ".join(missing)} must be given (or '
                         '--report_only).')
  if (_TARGET.value is None) == (_TARGET_SHARE.value is None):
    raise app.UsageError('Give exactly one of --target and --target_share.')
  if _TARGET_SHARE.value is not None and not 0 < _TARGET_SHARE.value <= 1:
    raise app.UsageError('--target_share must be in (0, 1].')
  try:
    with open(_ADVICE_JSON.value) as f:
      advice = json.load(f)
    advice['recommendation']  # pylint: disable=pointless-statement
  except (OSError, ValueError, KeyError) as e:
    raise app.UsageError(f'--advice_json={_ADVICE_JSON.value} is not a '
                         f'readable advice.json: {e}') from e
  curves = validation_lib.expand_curves(_CURVES.value)
  target, rule, measured, resolution = validation_lib.measure(
      curves, _METRIC.value, target=_TARGET.value,
      target_share=_TARGET_SHARE.value, minimize=_MINIMIZE.value)
  return validation_lib.Validation(
      task=_TASK.value, title=_TITLE.value, advice=advice,
      metric=_METRIC.value, target=target, target_rule=rule,
      measured=measured, curves=curves, minimize=_MINIMIZE.value,
      resolution=resolution, note=_NOTE.value,
      machine=results_lib.machine_description(), date=results_lib.utc_now(),
      command=results_lib.command_line(_MODULE))


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  # A damaged record stops the run before anything is written.
  validation_lib.read_records(_RECORDS_DIR.value)
  if not _REPORT_ONLY.value:
    record = _record()
    path = validation_lib.write_record(_RECORDS_DIR.value, record)
    result = validation_lib.outcome(record)
    print(f'{record.title}: advice {record.advice["recommendation"]}, '
          f'measured winner {result.winner or "none"}; rounds to the '
          f'target {result.mean_rounds}', flush=True)
    logging.info('Wrote %s', path)
  records = validation_lib.read_records(_RECORDS_DIR.value)
  if _RESULTS.markdown.value:
    if not records:
      raise app.UsageError(f'No record in {_RECORDS_DIR.value} to report.')
    results_lib.write_results_section(
        _RESULTS.markdown.value, _RESULTS.section.value,
        validation_lib.results_markdown(
            records, command=results_lib.command_line(_MODULE),
            date=results_lib.utc_now()),
        note=_RESULTS.note.value)
    logging.info('Wrote %s', _RESULTS.markdown.value)


if __name__ == '__main__':
  cli.run(main)
