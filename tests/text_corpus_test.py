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
"""Tests of the central text corpora (WikiText files and TFDS Wikipedia).

All inputs are generated here. The TFDS tests run offline: with
`tfds.testing.mock_data` (`MockPolicy.USE_CODE` fakes examples from the
`wikipedia` builder's feature spec in code; TFDS's pip package ships no
metadata files for `MockPolicy.USE_FILES`) and with a tiny dataset written
under the official builder's name, config and version, which the real
`wikipedia` builder then reads like a prepared one. The mock ignores split
slices, so slices are tested on the tiny dataset.
"""

import os
import pathlib
import shutil
import tempfile
from unittest import mock

from absl.testing import absltest
import tensorflow as tf
import tensorflow_datasets as tfds

from tff_mixed.tasks import text_corpus
from tests import temp_dirs

# Two articles in WikiText's layout (a space before each line end, blank
# " " lines around headings and between paragraphs), with a section, a
# subsection, @-@ / @,@ / @.@ artifacts, a title without body (dropped) and a
# formula line that looks like a title but has text lines next to it.
_WIKITEXT = (
    ' \n'
    ' = Alpha Lobster = \n'
    ' \n'
    ' The alpha lobster is a well @-@ known species of 1 @,@ 000 kinds . \n'
    ' It weighs 3 @.@ 5 kg . \n'
    ' \n'
    ' = = Description = = \n'
    ' \n'
    ' It is blue . \n'
    ' \n'
    ' = = = Colour @-@ morphs = = = \n'
    ' \n'
    ' Rarely red . \n'
    ' \n'
    ' \n'
    ' = Empty Title = \n'
    ' \n'
    ' \n'
    ' = Beta = \n'
    ' \n'
    ' The formula \n'
    ' = 1 k = \n'
    ' holds . \n'
    ' \n'
)
_ALPHA = ('The alpha lobster is a well-known species of 1,000 kinds .\n'
          'It weighs 3.5 kg .\n'
          'Description\n'
          'It is blue .\n'
          'Colour-morphs\n'
          'Rarely red .')
_BETA = 'The formula\n= 1 k =\nholds .'
_WHOLE_FILE = ('Alpha Lobster\n' + _ALPHA + '\nEmpty Title\nBeta\n' + _BETA)

_GAMMA_FILE = ' = Gamma = \n \n Gamma text . \n'
_GAMMA = 'Gamma text .'

_WIKIPEDIA = 'wikipedia/20201201.en'
# (title, text) of the tiny locally built wikipedia/20201201.en; the empty
# text is skipped by load_tfds_wikipedia.
_TINY_ARTICLES = (
    ('Zero', 'Article zero.'),
    ('One', 'Article one,\nsecond line.'),
    ('Two', ''),
    ('Three', 'Article three.'),
    ('Four', 'Article four.'),
)


def _write(directory: str, name: str, content, encoding='utf-8') -> str:
  path = os.path.join(directory, name)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  data = content if isinstance(content, bytes) else content.encode(encoding)
  with open(path, 'wb') as f:
    f.write(data)
  return path


class ReadTextFilesTest(absltest.TestCase):

  def test_wikitext_articles(self):
    path = _write(temp_dirs.temp_dir(self), 'wiki.valid.tokens', _WIKITEXT)
    with self.assertLogs('absl', level='INFO') as logs:
      texts = text_corpus.read_text_files(path)
    self.assertEqual(texts, [_ALPHA, _BETA])
    self.assertIn('Read 2 article text(s) from 1 file(s)', logs.output[-1])
    self.assertIn('dropped 1 empty article text(s)', logs.output[-1])

  def test_whole_files(self):
    directory = temp_dirs.temp_dir(self)
    _write(directory, 'a.tokens', _WIKITEXT)
    _write(directory, 'b.tokens', _GAMMA_FILE)
    self.assertEqual(
        text_corpus.read_text_files(directory, split_articles=False),
        [_WHOLE_FILE, 'Gamma\n' + _GAMMA])

  def test_crlf_line_ends_and_byte_order_mark(self):
    content = '\ufeff' + _WIKITEXT.replace('\n', '\r\n')
    path = _write(temp_dirs.temp_dir(self), 'wiki.test.tokens', content)
    self.assertEqual(text_corpus.read_text_files(path), [_ALPHA, _BETA])
    path = _write(temp_dirs.temp_dir(self), 'old_mac.txt', _GAMMA_FILE.replace(
        '\n', '\r'))
    self.assertEqual(text_corpus.read_text_files(path), [_GAMMA])

  def test_plain_text_and_text_before_first_title(self):
    directory = temp_dirs.temp_dir(self)
    path = _write(directory, 'plain.txt',
                  'First line\n\n  indented @-@ line\nno = heading =\n')
    self.assertEqual(text_corpus.read_text_files(path),
                     ['First line\nindented-line\nno = heading ='])
    path = _write(directory, 'lead.txt', 'Lead text\n\n' + _GAMMA_FILE)
    self.assertEqual(text_corpus.read_text_files(path), ['Lead text', _GAMMA])

  def test_unbalanced_heading_is_text(self):
    path = _write(temp_dirs.temp_dir(self), 'a.txt',
                  ' = Title = \n \n x \n \n = = Odd = \n \n y \n')
    self.assertEqual(text_corpus.read_text_files(path), ['x\n= = Odd =\ny'])

  def test_directory_reads_txt_and_tokens_files_sorted(self):
    directory = temp_dirs.temp_dir(self)
    _write(directory, 'b.tokens', _WIKITEXT)
    _write(directory, 'a.txt', _GAMMA_FILE)
    _write(directory, 'notes.md', 'ignored\n')
    _write(directory, os.path.join('sub', 'c.txt'), 'not recursive\n')
    os.makedirs(os.path.join(directory, 'dir.txt'))  # Not a file.
    expected = [_GAMMA, _ALPHA, _BETA]
    self.assertEqual(text_corpus.read_text_files(directory), expected)
    self.assertEqual(text_corpus.read_text_files(pathlib.Path(directory)),
                     expected)

  def test_glob(self):
    directory = temp_dirs.temp_dir(self)
    _write(directory, 'wiki.valid.tokens', _WIKITEXT)
    _write(directory, 'wiki.test.tokens', _GAMMA_FILE)
    _write(directory, 'wiki.train.raw', 'not matched\n')
    _write(directory, os.path.join('deep', 'wiki.extra.tokens'),
           ' = Delta = \n \n Delta . \n')
    self.assertEqual(
        text_corpus.read_text_files(
            os.path.join(directory, 'wiki.*.tokens')),
        [_GAMMA, _ALPHA, _BETA])
    self.assertEqual(
        text_corpus.read_text_files(
            os.path.join(directory, '**', 'wiki.*.tokens'),
            split_articles=False),
        ['Delta\nDelta .', 'Gamma\n' + _GAMMA, _WHOLE_FILE])

  def test_empty_texts_are_dropped_and_counted(self):
    directory = temp_dirs.temp_dir(self)
    _write(directory, 'a.txt', '')
    _write(directory, 'b.txt', ' \n\n \t\n')
    _write(directory, 'c.tokens', _GAMMA_FILE + ' \n = No Body = \n \n')
    with self.assertLogs('absl', level='INFO') as logs:
      texts = text_corpus.read_text_files(directory)
    self.assertEqual(texts, [_GAMMA])
    self.assertIn('Read 1 article text(s) from 3 file(s)', logs.output[-1])
    self.assertIn('dropped 3 empty article text(s)', logs.output[-1])
    with self.assertLogs('absl', level='INFO') as logs:
      texts = text_corpus.read_text_files(directory, split_articles=False)
    self.assertEqual(texts, ['Gamma\n' + _GAMMA + '\nNo Body'])
    self.assertIn('dropped 2 empty file text(s)', logs.output[-1])

  def test_all_empty_raises(self):
    directory = temp_dirs.temp_dir(self)
    _write(directory, 'a.txt', '')
    _write(directory, 'b.tokens', ' \n = Title Only = \n \n')
    with self.assertRaisesRegex(
        ValueError, r"No text in '.*': all 2 article text\(s\) of its 2 "
        r'file\(s\) are empty; point it at non-empty UTF-8 text files'):
      text_corpus.read_text_files(directory)

  def test_missing_path(self):
    path = os.path.join(temp_dirs.temp_dir(self), 'wiki.valid.tokens')
    with self.assertRaisesRegex(
        FileNotFoundError,
        "Text corpus path not found: '.*wiki.valid.tokens'; give a text "
        "file, a directory of '\\*.txt' / '\\*.tokens' files, or a glob"):
      text_corpus.read_text_files(path)

  def test_directory_without_text_files(self):
    directory = temp_dirs.temp_dir(self)
    _write(directory, 'notes.md', 'x\n')
    _write(directory, os.path.join('sub', 'a.txt'), 'x\n')
    with self.assertRaisesRegex(
        FileNotFoundError,
        r"Directory '.*' has no \.txt or \.tokens file \(not searched "
        r'recursively\)'):
      text_corpus.read_text_files(directory)

  def test_glob_without_match(self):
    directory = temp_dirs.temp_dir(self)
    os.makedirs(os.path.join(directory, 'x.tokens'))  # A directory only.
    with self.assertRaisesRegex(
        FileNotFoundError,
        r"Glob '.*\*\.tokens' matches no file \(directories do not count\); "
        'check the pattern'):
      text_corpus.read_text_files(os.path.join(directory, '*.tokens'))

  def test_not_a_regular_file(self):
    path = os.path.join(temp_dirs.temp_dir(self), 'pipe.txt')
    os.mkfifo(path)
    with self.assertRaisesRegex(
        ValueError, "'.*pipe.txt' is neither a regular file nor a directory"):
      text_corpus.read_text_files(path)

  def test_non_utf8_file(self):
    # 'café' in latin-1: the 0xe9 byte is the 24th of the second line.
    content = ' = T = \n'.encode() + b'  A line about a caf\xe9 . \n'
    path = _write(temp_dirs.temp_dir(self), 'latin1.tokens', content)
    offset = len(' = T = \n  A line about a caf')
    with self.assertRaisesRegex(
        ValueError,
        rf"Text file '.*latin1.tokens' is not valid UTF-8: byte offset "
        rf"{offset} \(line 2\), b'\\xe9': invalid continuation byte\. "
        'Re-encode it as UTF-8'):
      text_corpus.read_text_files(path)

  def test_unreadable_file(self):
    # Simulated: permissions do not stop root, who may run the tests.
    path = _write(temp_dirs.temp_dir(self), 'secret.txt', 'x\n')
    error = PermissionError(13, 'Permission denied', path)
    with mock.patch('builtins.open', side_effect=error):
      with self.assertRaisesRegex(
          ValueError,
          "Cannot read text file '.*secret.txt': Permission denied; check "
          'that it is a readable regular file'):
        text_corpus.read_text_files(path)


class _TinyWikipedia(tfds.core.GeneratorBasedBuilder, skip_registration=True):
  """Writes `_TINY_ARTICLES` where TFDS's own `wikipedia` builder reads."""

  name = 'wikipedia'
  VERSION = tfds.core.Version('1.0.0')
  BUILDER_CONFIGS = [tfds.core.BuilderConfig(name='20201201.en')]

  def _info(self):
    return tfds.core.DatasetInfo(
        builder=self,
        features=tfds.features.FeaturesDict({
            'title': tfds.features.Text(),
            'text': tfds.features.Text(),
        }),
        # Keeps the generation order, so slices hold known articles.
        disable_shuffling=True,
    )

  def _split_generators(self, dl_manager):
    del dl_manager  # Nothing to download.
    return {'train': self._generate_examples()}

  def _generate_examples(self):
    for i, (title, text) in enumerate(_TINY_ARTICLES):
      yield i, {'title': title, 'text': text}


class LoadTfdsWikipediaTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls._data_dir = tempfile.mkdtemp()
    _TinyWikipedia(data_dir=cls._data_dir,
                   config='20201201.en').download_and_prepare()

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls._data_dir, ignore_errors=True)
    super().tearDownClass()

  def _load(self, **kwargs):
    return list(text_corpus.load_tfds_wikipedia(self._data_dir, **kwargs))

  def test_paper_splits(self):
    self.assertEqual(text_corpus.PAPER_TRAIN_SPLIT, 'train[:5000000]')
    self.assertEqual(text_corpus.PAPER_EVAL_SPLIT, 'train[5000000:]')
    self.assertEqual(text_corpus.wikipedia_splits(3),
                     ('train[:3]', 'train[3:]'))
    for bad in (0, -1, 2.0, True, '3'):
      with self.assertRaisesRegex(
          ValueError, 'num_train_articles must be an integer >= 1'):
        text_corpus.wikipedia_splits(bad)

  def test_local_dataset_is_read_by_the_official_builder(self):
    builder = tfds.builder(_WIKIPEDIA, data_dir=self._data_dir)
    self.assertEqual(type(builder).__module__,
                     'tensorflow_datasets.text.wikipedia')
    self.assertEqual(builder.info.splits['train'].num_examples, 5)

  def test_texts_in_stored_order_without_empty_ones(self):
    iterator = text_corpus.load_tfds_wikipedia(self._data_dir)
    self.assertNotIsInstance(iterator, list)
    with self.assertLogs('absl', level='INFO') as logs:
      texts = list(iterator)
    self.assertEqual(texts, ['Article zero.', 'Article one,\nsecond line.',
                             'Article three.', 'Article four.'])
    self.assertIn("Read 4 article text(s) from TFDS wikipedia/20201201.en "
                  "split 'train'; skipped 1 empty one(s)", logs.output[-1])

  def test_include_title(self):
    self.assertEqual(
        self._load(split='train[:2]', include_title=True),
        ['Zero\nArticle zero.', 'One\nArticle one,\nsecond line.'])

  def test_split_slices(self):
    train, evaluation = text_corpus.wikipedia_splits(3)
    self.assertEqual(self._load(split=train),
                     ['Article zero.', 'Article one,\nsecond line.'])
    self.assertEqual(self._load(split=evaluation),
                     ['Article three.', 'Article four.'])
    self.assertEqual(self._load(split='train[40%:60%]'), [])  # Only 'Two'.
    # TFDS rejects bounds beyond the split, e.g. the paper's on 5 articles.
    with self.assertRaisesRegex(ValueError, 'incompatible with 5 examples'):
      self._load(split=text_corpus.PAPER_TRAIN_SPLIT)
    with self.assertRaisesRegex(ValueError, "Unknown split 'validation'"):
      self._load(split='validation')

  def test_max_articles(self):
    self.assertEqual(self._load(max_articles=1), ['Article zero.'])
    # `max_articles` counts examples of the split, empty ones included.
    self.assertEqual(self._load(split='train[1:]', max_articles=2),
                     ['Article one,\nsecond line.'])
    self.assertLen(self._load(max_articles=100), 4)
    for bad in (0, -2, 1.5, True, '3'):
      with self.assertRaisesRegex(
          ValueError, 'max_articles must be None or an integer >= 1'):
        text_corpus.load_tfds_wikipedia(self._data_dir, max_articles=bad)

  def test_mock_data_from_code(self):
    # Random texts from the builder's feature spec, no file or network.
    data_dir = temp_dirs.temp_dir(self)
    with tfds.testing.mock_data(num_examples=6,
                                policy=tfds.testing.MockPolicy.USE_CODE):
      expected = [
          example['text'].decode('utf-8') for example in tfds.load(
              _WIKIPEDIA, split='train', data_dir=data_dir,
              download=False).as_numpy_iterator()
      ]
      texts = list(text_corpus.load_tfds_wikipedia(data_dir))
      first_two = list(
          text_corpus.load_tfds_wikipedia(data_dir, max_articles=2))
    self.assertLen(expected, 6)
    self.assertTrue(all(text.strip() for text in expected), expected)
    self.assertEqual(texts, expected)
    self.assertEqual(first_two, expected[:2])

  def test_mock_data_with_given_examples(self):

    def as_dataset(self, split, decoders=None, read_config=None,
                   shuffle_files=False):
      del self, split, decoders, read_config, shuffle_files  # Unused.
      return tf.data.Dataset.from_tensor_slices({
          'title': ['A', 'B', 'C', 'D'],
          'text': ['alpha', '', 'gamma', 'delta'],
      })

    data_dir = temp_dirs.temp_dir(self)
    with tfds.testing.mock_data(policy=tfds.testing.MockPolicy.USE_CODE,
                                as_dataset_fn=as_dataset):
      self.assertEqual(
          list(text_corpus.load_tfds_wikipedia(data_dir)),
          ['alpha', 'gamma', 'delta'])
      self.assertEqual(
          list(text_corpus.load_tfds_wikipedia(
              data_dir, max_articles=3, include_title=True)),
          ['A\nalpha', 'C\ngamma'])

  def test_missing_data(self):
    data_dir = temp_dirs.temp_dir(self)
    with self.assertRaises(text_corpus.DataNotFoundError) as raised:
      text_corpus.load_tfds_wikipedia(data_dir)
    self.assertIsInstance(raised.exception, FileNotFoundError)
    message = str(raised.exception)
    self.assertIn(
        f'No prepared wikipedia/20201201.en in TFDS data directory '
        f'{data_dir!r} (expected '
        f'{os.path.join(data_dir, "wikipedia", "20201201.en")}/<version>/',
        message)
    self.assertIn('tfds build wikipedia/20201201.en '
                  f'--data_dir={data_dir}', message)
    self.assertIn('read WikiText files with read_text_files', message)
    # A config prepared nowhere, next to one that is.
    with self.assertRaisesRegex(text_corpus.DataNotFoundError,
                                'No prepared wikipedia/20230601.en'):
      text_corpus.load_tfds_wikipedia(self._data_dir, config='20230601.en')

  def test_missing_data_dir(self):
    data_dir = os.path.join(temp_dirs.temp_dir(self), 'absent')
    with self.assertRaisesRegex(
        text_corpus.DataNotFoundError,
        f"TFDS data directory '{data_dir}' does not exist, so "
        r'wikipedia/20201201.en has not been prepared there\. Prepare it '
        'on a machine with network access with `tfds build '
        f'wikipedia/20201201.en --data_dir={data_dir}`'):
      text_corpus.load_tfds_wikipedia(data_dir)


if __name__ == '__main__':
  absltest.main()
