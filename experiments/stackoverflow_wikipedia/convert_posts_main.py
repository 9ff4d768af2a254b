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
r"""Converts Stack Exchange `Posts.xml` dumps to TFF's `stackoverflow.sqlite`.

  python -m experiments.stackoverflow_wikipedia.convert_posts_main \
    --posts_xml=DUMP/Posts.xml --cache_dir=DIR
  python -m experiments.stackoverflow_wikipedia.convert_posts_main \
    --posts_xml=beer.stackexchange.com_Posts.xml,history.meta.stackexchange.com.Posts.xml.gz \
    --cache_dir=DIR

writes `DIR/stackoverflow.sqlite`, which
`tff.simulation.datasets.stackoverflow.load_data(cache_dir=DIR)` reads
without downloading, so that the Stack Overflow experiments run offline on
real posts of any Stack Exchange site. See `posts_xml_rows` for the
features and the conversion rules, and `posts_splits` for the
train/heldout/test splits: without `--test_cutoff`, the cutoff is derived
so that the latest tenth of the posts are on or after it, and the summary
prints it. Dumps may be gzipped.
Several dumps (a comma-separated list) keep their sites apart: a client is
`<site>:<OwnerUserId>`, the site taken from the file name, and each dump
gets its own derived cutoff; one dump converts exactly as before. A bad
input (a missing file, a damaged gzip file, two dumps of one site, ...)
prints one `error: ...` line and exits with status 1. `--data_note_file`
also writes a one-line description of the converted data, e.g. for the LM
binary's `--data_note`.
"""

from collections.abc import Sequence

# First: quiets TensorFlow's C++ logs before TensorFlow loads.
# pylint: disable=g-bad-import-order,unused-import
from experiments import tf_log_level
# pylint: enable=unused-import
from experiments.common import cli
from absl import app
from absl import flags

from experiments.common import shared_flags
from experiments.stackoverflow_wikipedia import posts_splits
from experiments.stackoverflow_wikipedia import posts_xml_lib
from tff_mixed.training import reports as reports_lib

_POSTS_XML = flags.DEFINE_list(
    'posts_xml', None, "A Stack Exchange data dump's Posts.xml, or a "
    'comma-separated list of dumps of different sites (named '
    '<site>_Posts.xml, <site>.Posts.xml or <site>/Posts.xml), each plain or '
    'gzipped.')
_CACHE_DIR = shared_flags.define_cache_dir_flag(
    None, 'Here: where to write stackoverflow.sqlite (created if missing); '
    'pass it as cache_dir to tff.simulation.datasets.stackoverflow.load_data.')
_TEST_CUTOFF = flags.DEFINE_string(
    'test_cutoff', None, 'ISO 8601 date or date and time (UTC): posts '
    'created on or after it go to the test split, earlier ones to train '
    '(held-out clients aside). Unset: derived from the dump, as the creation '
    'time that puts the latest tenth of the posts on or after it; the '
    'summary prints it.')
_HELDOUT_FRACTION = flags.DEFINE_float(
    'heldout_fraction', posts_splits.DEFAULT_HELDOUT_FRACTION, 'Fraction of '
    'the clients, in (0, 1), whose posts of all dates form the heldout split.')
_SEED = shared_flags.define_seed_flag(
    0, 'Here: the draw of the held-out clients.')
_DATA_NOTE_FILE = flags.DEFINE_string(
    'data_note_file', None, 'Also write a one-line description of the '
    'converted data (sites, posts, clients, splits) to this file, e.g. for '
    "stackoverflow_wikipedia_main's --data_note.")

flags.mark_flags_as_required(['posts_xml', 'cache_dir'])


def _count(n: int, noun: str) -> str:
  return f'{n} {noun}' + ('' if n == 1 else 's')


def _tenth() -> str:
  return f'{1 / posts_splits.TEST_FRACTION_DENOMINATOR:.0%}'


def _cutoff_text(summary: posts_xml_lib.ConversionSummary) -> str:
  if not summary.test_cutoff_derived:
    return (f'test cutoff {summary.test_cutoff.isoformat(sep=" ")} '
            '(--test_cutoff)')
  if summary.test_cutoff is None:
    return (f"test cutoff per site (derived: the latest {_tenth()} of each "
            "site's posts are on or after its cutoff; --test_cutoff sets one "
            'for all)')
  return (f'test cutoff {summary.test_cutoff.isoformat(sep=" ")} (derived: '
          f'the latest {_tenth()} of the posts are on or after it; '
          '--test_cutoff sets another)')


def _sites_text(summary: posts_xml_lib.ConversionSummary) -> str:
  if not summary.sites:
    return ''
  lines = [f'\n  {len(summary.sites)} sites (client ids <site>:<owner>):']
  for site in summary.sites:
    lines.append(
        f'    {site.site}: {_count(site.posts_converted, "post")} of '
        f'{_count(site.clients, "client")} ({_count(site.rows_read, "row")} '
        f'read), test cutoff {site.test_cutoff.isoformat(sep=" ")}')
  return '\n'.join(lines)


def data_note(summary: posts_xml_lib.ConversionSummary) -> str:
  """One line on the converted data, for a results section's data note."""
  splits = (f'train {summary.train_examples} posts of '
            f'{summary.train_clients} clients, heldout '
            f'{summary.heldout_examples} of {summary.heldout_clients}, test '
            f'{summary.test_examples} of {summary.test_clients}')
  if not summary.sites:
    return (f'{summary.examples_written} posts ({splits}; '
            f'{_cutoff_text(summary)})')
  cutoff = (f"each site's latest {_tenth()} of posts in test"
            if summary.test_cutoff_derived else _cutoff_text(summary))
  return (
      f'{len(summary.sites)} Stack Exchange sites, '
      f'{sum(s.clients for s in summary.sites)} clients (a client is one '
      f'owner on one site), {summary.examples_written} posts: ' + ', '.join(
          f'{s.site} {s.posts_converted} posts of {s.clients} clients'
          for s in summary.sites) + f'; {splits}; {cutoff}')


def _summary_text(summary: posts_xml_lib.ConversionSummary) -> str:
  skipped = (summary.skipped_other_type + summary.skipped_no_owner
             + summary.skipped_empty_body)
  return (
      f'Wrote {summary.database_path}: {_count(summary.rows_read, "row")} '
      f'read, {_count(summary.examples_written, "post")} converted, '
      f'{skipped} skipped ({summary.skipped_other_type} neither question nor '
      f'answer, {summary.skipped_no_owner} without owner, '
      f'{summary.skipped_empty_body} with an empty body).\n'
      f'  train:   {_count(summary.train_examples, "post")} of '
      f'{_count(summary.train_clients, "client")}\n'
      f'  heldout: {_count(summary.heldout_examples, "post")} of '
      f'{_count(summary.heldout_clients, "client")}\n'
      f'  test:    {_count(summary.test_examples, "post")} of '
      f'{_count(summary.test_clients, "client")}\n'
      f'  {_cutoff_text(summary)}' + _sites_text(summary))


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  summary = posts_xml_lib.convert_posts(
      _POSTS_XML.value,
      _CACHE_DIR.value,
      test_cutoff=_TEST_CUTOFF.value,
      heldout_fraction=_HELDOUT_FRACTION.value,
      seed=_SEED.value)
  print(_summary_text(summary))
  if _DATA_NOTE_FILE.value:
    reports_lib.atomic_write_text(_DATA_NOTE_FILE.value,
                                  data_note(summary) + '\n')
  print('Use it with tff.simulation.datasets.stackoverflow.load_data('
        f'cache_dir={_CACHE_DIR.value!r}).')


if __name__ == '__main__':
  cli.run(main)
