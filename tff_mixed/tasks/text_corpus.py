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
"""Central (datacenter) text corpora for the mixed-FL character LM.

In the language-model experiment of Augenstein et al., "Mixed Federated
Learning: Joint Decentralized and Centralized Learning" (arXiv:2205.13655,
section 4.2), the federated clients hold Stack Overflow posts and the
datacenter holds Wikipedia: the central loss is computed on Wikipedia
articles, the first 5,000,000 of TFDS `wikipedia/20201201.en` for training
and the rest for evaluation. This module turns either source into a list (or
stream) of article strings; tokenization into characters and batching are
left to the task that uses them.

Two sources:

*   `load_tfds_wikipedia`: the paper's corpus, read with TensorFlow Datasets
    from a directory where it was prepared beforehand (`tfds build
    wikipedia/20201201.en --data_dir=...` on a machine with network; this
    module never downloads). `PAPER_TRAIN_SPLIT` and `PAPER_EVAL_SPLIT` are
    the paper's two slices (`wikipedia_splits` makes others).
*   `read_text_files`: plain UTF-8 text files, meant for WikiText
    (`wiki.{train,valid,test}.tokens`), which stands in for Wikipedia
    offline: it is made of Wikipedia articles too.

WikiText conventions (`read_text_files` applies them to every file; a file
without heading lines is simply one text):

*   ` = Title = ` (one '=' each side) is the heading line that starts an
    article; ` = = Section = = ` (two or more on each side) is a section
    heading inside an article; a heading line has blank lines (or the
    file's start or end) on both sides, as everywhere in WikiText. Headings
    are turned into their plain text (`Section`), like TFDS's cleaned
    Wikipedia text shows section headings. With `split_articles=True` an
    article's text does NOT include its title line, matching TFDS, whose
    `text` feature leaves the title out; with `split_articles=False` title
    lines stay in (as plain text) so that the article boundaries remain
    visible.
*   WikiText split hyphens and number separators into tokens `@-@`, `@,@`
    and `@.@` with spaces around them (`well @-@ known`, `1 @,@ 000`,
    `3 @.@ 5`); they are mapped back to `-`, `,` and `.` and the spaces
    around them removed (`well-known`, `1,000`, `3.5`). Its other
    tokenization (spaces around punctuation, `<unk>` for rare words) is kept:
    it cannot be undone reliably.
*   Each line is stripped; blank lines (paragraph separators) are dropped;
    the remaining lines are joined with '\\n'.

Licences: WikiText-2 and Wikipedia text are CC BY-SA 3.0 (attribution,
share-alike); TFDS's `wikipedia`, built from the Wikimedia dumps, states CC
BY-SA 3.0 too. Neither is shipped with this project.
"""

from collections.abc import Iterator, Sequence
import glob
import os
import re
from typing import Optional, Union

from absl import logging

DEFAULT_WIKIPEDIA_CONFIG = '20201201.en'
# The paper trains on the first 5,000,000 articles of wikipedia/20201201.en
# and evaluates on the rest; TFDS slices select them without copying data.
# TFDS rejects a slice bound beyond the split's end, so these two need a
# split of more than 5,000,000 articles.
PAPER_NUM_TRAIN_ARTICLES = 5_000_000

# Files a directory contributes (WikiText's `.tokens` and plain `.txt`).
TEXT_FILE_SUFFIXES = ('.txt', '.tokens')

# WikiText's `@-@`, `@,@` and `@.@` with the spaces it put around them.
_ARTIFACT_RE = re.compile(r' ?@([-,.])@ ?')
_GLOB_CHARS_RE = re.compile(r'[*?[]')


class DataNotFoundError(FileNotFoundError):
  """The prepared TFDS dataset is not in the given data directory."""


def wikipedia_splits(
    num_train_articles: int = PAPER_NUM_TRAIN_ARTICLES) -> tuple[str, str]:
  """The TFDS slices of the paper's train / eval division of `train`.

  Args:
    num_train_articles: How many articles, from the start of TFDS's `train`
      split, are for training; the rest are for evaluation.

  Returns:
    `('train[:N]', 'train[N:]')` for N = `num_train_articles`, to pass as
    `split` to `load_tfds_wikipedia`.

  Raises:
    ValueError: If `num_train_articles` is not an integer >= 1.
  """
  if (isinstance(num_train_articles, bool) or
      not isinstance(num_train_articles, int) or num_train_articles < 1):
    raise ValueError('num_train_articles must be an integer >= 1, got '
                     f'{num_train_articles!r}')
  return (f'train[:{num_train_articles}]', f'train[{num_train_articles}:]')


PAPER_TRAIN_SPLIT, PAPER_EVAL_SPLIT = wikipedia_splits()


def read_text_files(path_or_glob: Union[str, os.PathLike[str]],
                    *,
                    split_articles: bool = True) -> list[str]:
  """Reads UTF-8 text files (WikiText or plain text) into texts.

  See the module docstring for the WikiText conventions applied to every
  file. A leading UTF-8 byte order mark is ignored; line ends may be '\\n',
  '\\r\\n' or '\\r'.

  Args:
    path_or_glob: A file; a directory, of which every file ending in `.txt` or
      `.tokens` is read (not recursively); or a glob pattern such as
      `'data/wiki.*.tokens'` (`**` recurses), of which every matching regular
      file is read. Files are read in sorted path order.
    split_articles: If True, one text per article: a ` = Title = ` line starts
      a new article and is not part of its text; text before the first such
      line, if any, or a whole file without one, is an article of its own.
      If False, one text per file, title lines included as plain text.

  Returns:
    The non-empty texts, in file order and, within a file, in article order.
    Texts that are empty after cleaning (an empty file, a title with no body)
    are dropped; their number is logged.

  Raises:
    FileNotFoundError: If `path_or_glob` does not exist and is not a glob, or
      if the directory or glob has no matching file.
    ValueError: If `path_or_glob` is neither a file nor a directory (e.g. a
      pipe), if a file cannot be read (the message names the file and the
      reason) or is not valid UTF-8 (the message names the file, byte offset
      and line), or if all texts are empty.
  """
  paths = _resolve_paths(os.fspath(path_or_glob))
  texts = []
  num_empty = 0
  for path in paths:
    lines = _read_lines(path)
    if split_articles:
      candidates = _split_articles(lines)
    else:
      candidates = ['\n'.join(text for _, text in _clean_lines(lines))]
    for text in candidates:
      # Cleaned lines are non-blank, so only a text without lines is empty.
      if text:
        texts.append(text)
      else:
        num_empty += 1
  unit = 'article' if split_articles else 'file'
  logging.info('Read %d %s text(s) from %d file(s) (%s); dropped %d empty '
               '%s text(s).', len(texts), unit, len(paths),
               os.fspath(path_or_glob), num_empty, unit)
  if not texts:
    raise ValueError(
        f'No text in {os.fspath(path_or_glob)!r}: all {num_empty} {unit} '
        f'text(s) of its {len(paths)} file(s) are empty; point it at '
        'non-empty UTF-8 text files.')
  return texts


def _resolve_paths(path: str) -> list[str]:
  """The files `read_text_files` reads for `path`, sorted."""
  how_to = ("give a text file, a directory of '*.txt' / '*.tokens' files, or "
            "a glob such as 'wikitext-2/wiki.*.tokens'")
  if os.path.isfile(path):
    return [path]
  if os.path.isdir(path):
    paths = sorted(
        os.path.join(path, name) for name in os.listdir(path)
        if name.endswith(TEXT_FILE_SUFFIXES) and
        os.path.isfile(os.path.join(path, name)))
    if not paths:
      raise FileNotFoundError(
          f'Directory {path!r} has no {" or ".join(TEXT_FILE_SUFFIXES)} file '
          f'(not searched recursively); {how_to}.')
    return paths
  if os.path.exists(path):
    raise ValueError(f'{path!r} is neither a regular file nor a directory; '
                     f'{how_to}.')
  if not _GLOB_CHARS_RE.search(path):
    raise FileNotFoundError(f'Text corpus path not found: {path!r}; {how_to}.')
  paths = sorted(p for p in glob.glob(path, recursive=True)
                 if os.path.isfile(p))
  if not paths:
    raise FileNotFoundError(
        f'Glob {path!r} matches no file (directories do not count); check '
        'the pattern and the directory it starts from.')
  return paths


def _read_lines(path: str) -> list[str]:
  """The lines of a UTF-8 file, without line ends and byte order mark."""
  try:
    with open(path, 'rb') as f:
      data = f.read()
  except OSError as e:
    raise ValueError(
        f'Cannot read text file {path!r}: {e.strerror or e}; check that it '
        'is a readable regular file.') from e
  try:
    text = data.decode('utf-8')
  except UnicodeDecodeError as e:
    line_number = data.count(b'\n', 0, e.start) + 1
    raise ValueError(
        f'Text file {path!r} is not valid UTF-8: byte offset {e.start} (line '
        f'{line_number}), {data[e.start:e.end]!r}: {e.reason}. Re-encode it '
        'as UTF-8 (for example `iconv -f latin1 -t utf-8`).') from None
  text = text.removeprefix('\ufeff')
  # Not `str.splitlines`: it also splits at characters such as '\x85' or
  # '\u2028', which can occur inside Wikipedia text.
  return text.replace('\r\n', '\n').replace('\r', '\n').split('\n')


def _heading(stripped: str) -> Optional[tuple[int, str]]:
  """(level, title) of a stripped WikiText heading line, else None.

  `= Title =` is level 1 (an article), `= = Section = =` level 2, and so on;
  a line whose '=' counts differ on the two sides is not a heading.

  Args:
    stripped: A line without surrounding whitespace.
  """
  if not (stripped.startswith('= ') and stripped.endswith(' =')):
    return None
  inner = stripped
  left = 0
  while inner.startswith('= '):
    inner = inner[2:]
    left += 1
  right = 0
  while inner.endswith(' ='):
    inner = inner[:-2]
    right += 1
  inner = inner.strip()
  if left != right or not inner:
    return None
  return left, _ARTIFACT_RE.sub(r'\1', inner)


def _clean_lines(lines: Sequence[str]) -> list[tuple[bool, str]]:
  """(is_title, text) for each non-blank line of a file, cleaned.

  Headings become their plain text; `is_title` is True for article titles
  (level-1 headings). Only a line with blank lines (or the file's start or
  end) on both sides can be a heading: WikiText always writes headings so,
  and some formula lines such as ` = 1 <unk> and <unk> C = ` in
  wiki.test.tokens would pass for one otherwise.

  Args:
    lines: The file's lines, without line ends.
  """
  cleaned = []
  last = len(lines) - 1
  for i, line in enumerate(lines):
    stripped = line.strip()
    if not stripped:
      continue  # Paragraph separators.
    heading = None
    if ((i == 0 or not lines[i - 1].strip()) and
        (i == last or not lines[i + 1].strip())):
      heading = _heading(stripped)
    if heading is not None:
      level, title = heading
      cleaned.append((level == 1, title))
    else:
      cleaned.append((False, _ARTIFACT_RE.sub(r'\1', stripped).strip()))
  return cleaned


def _split_articles(lines: Sequence[str]) -> list[str]:
  """Article texts (without title lines) of a file's lines."""
  articles = []
  current = []
  seen_title = False
  for is_title, text in _clean_lines(lines):
    if is_title:
      # Nothing before the first title (as in WikiText files) is no article;
      # a title without body is an empty one.
      if seen_title or current:
        articles.append(current)
      seen_title = True
      current = []
    else:
      current.append(text)
  # The last article, or the whole file if it has no title (maybe empty).
  articles.append(current)
  return ['\n'.join(article) for article in articles]


def load_tfds_wikipedia(data_dir: Union[str, os.PathLike[str]],
                        *,
                        split: str = 'train',
                        config: str = DEFAULT_WIKIPEDIA_CONFIG,
                        max_articles: Optional[int] = None,
                        include_title: bool = False) -> Iterator[str]:
  """Streams article texts of the prepared TFDS `wikipedia` dataset.

  The dataset is opened (and a missing one reported) when this function is
  called; the texts are then read lazily, so the paper's 5,000,000-article
  slice is never held in memory at once. Wrap the result in `list(...)` for
  small slices. Articles come in the dataset's stored order (no shuffling),
  so a slice always holds the same articles. `tensorflow_datasets` is
  imported here, not at module import, so `import tff_mixed` does not need
  it.

  Args:
    data_dir: The TFDS data directory that holds
      `wikipedia/<config>/<version>/` (what `tfds build
      wikipedia/20201201.en --data_dir=DATA_DIR` wrote). Local or any path
      `tf.io.gfile` reads (e.g. `gs://...`).
    split: A TFDS split or slice, e.g. `'train'`, `'train[:1000]'`,
      `'train[:10%]'`, `PAPER_TRAIN_SPLIT` (`'train[:5000000]'`) or
      `PAPER_EVAL_SPLIT` (`'train[5000000:]'`); see `wikipedia_splits`.
      TFDS's `wikipedia` has only a `train` split.
    config: The TFDS config, `<dump date>.<language>`.
    max_articles: If given, at most this many articles (>= 1) are returned,
      the first ones of `split`.
    include_title: If True, each text is `title + '\\n' + text`; by default
      the `text` feature alone (which does not contain the title).

  Returns:
    An iterator over the non-empty article texts (`str`). Empty texts are
    skipped and their number logged once the iterator is exhausted.

  Raises:
    DataNotFoundError: If `data_dir` does not exist or holds no prepared
      `wikipedia/<config>`; the message says how to prepare it.
    ImportError: If `tensorflow_datasets` is not installed.
    ValueError: If `max_articles` is not an integer >= 1, or TFDS rejects
      `config` or `split` (an unknown one, or a slice bound beyond the end of
      the split; TFDS's message says which).
  """
  if max_articles is not None and (isinstance(max_articles, bool) or
                                   not isinstance(max_articles, int) or
                                   max_articles < 1):
    raise ValueError(
        f'max_articles must be None or an integer >= 1, got {max_articles!r}')
  try:
    import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        'load_tfds_wikipedia needs tensorflow_datasets: install the pinned '
        'version from requirements.txt (scripts/setup_venv.sh does), or use '
        'read_text_files on WikiText files instead.') from e
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  data_dir = os.fspath(data_dir)
  name = f'wikipedia/{config}'
  how_to = (
      f'Prepare it on a machine with network access with `tfds build {name} '
      f'--data_dir={data_dir}` (needs `pip install '
      'tensorflow-datasets[wikipedia]`, i.e. apache-beam, mwparserfromhell '
      'and mwxml, and downloads the whole Wikipedia dump) and copy the data '
      'directory here, or read WikiText files with read_text_files instead.')
  if not tf.io.gfile.isdir(data_dir):
    raise DataNotFoundError(
        f'TFDS data directory {data_dir!r} does not exist, so {name} has not '
        f'been prepared there. {how_to}')
  try:
    ds = tfds.load(name, split=split, data_dir=data_dir, download=False,
                   shuffle_files=False)
  except AssertionError as e:
    # TFDS reports a dataset that was never prepared with a bare assertion
    # ("could not find data in ..."); other assertions are not ours to hide.
    if 'could not find data' not in str(e):
      raise
    raise DataNotFoundError(
        f'No prepared {name} in TFDS data directory {data_dir!r} (expected '
        f'{os.path.join(data_dir, "wikipedia", config)}/<version>/ with '
        f'dataset_info.json). {how_to}') from None
  if max_articles is not None:
    ds = ds.take(max_articles)
  return _article_texts(ds, name=name, split=split,
                        include_title=include_title)


def _article_texts(ds, *, name: str, split: str,
                   include_title: bool) -> Iterator[str]:
  """Decodes the `text` (and `title`) features of a TFDS wikipedia split."""
  num_texts = 0
  num_empty = 0
  for example in ds.as_numpy_iterator():
    text = example['text'].decode('utf-8')
    if not text.strip():
      num_empty += 1
      continue
    if include_title:
      text = example['title'].decode('utf-8') + '\n' + text
    num_texts += 1
    yield text
  logging.info('Read %d article text(s) from TFDS %s split %r; skipped %d '
               'empty one(s).', num_texts, name, split, num_empty)
