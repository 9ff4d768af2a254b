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
"""Characters to next-character training sequences, in TF and in numpy.

The mixed FL paper's language model (arXiv:2205.13655, section 4.2 and
appendix B.2.2) predicts the next character; all raw text is cut into
sequences of 100 characters. The ids are the fixed vocabulary of
`tff_mixed.models.char_vocabulary` (0 padding, 1 out of vocabulary, 2/3
beginning/end of a text, 4..98 printable ASCII); its constants are importable
from here as well.

A text becomes `[BOS] + characters + [EOS]`, cut into pieces of
`sequence_length + 1` ids (the last one padded with 0); each piece gives one
example `(inputs = piece[:-1], targets = piece[1:])`, like TFF's Shakespeare
preprocessing, unless its targets are all padding (a lone EOS). The TF
version (for client datasets built inside TFF's worker) maps code points
arithmetically, without a lookup table; the numpy version (for central
corpora and evaluation sets) also counts what fell out of the vocabulary.
Both give identical sequences (tested).
"""

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from tff_mixed.models import char_vocabulary

# The vocabulary lives with the model (the lower layer). The public names keep
# `char_sequences.PAD_ID` etc. working; the private ones keep the mapping
# below short.
PAD_ID = char_vocabulary.PAD_ID
OOV_ID = char_vocabulary.OOV_ID
BOS_ID = char_vocabulary.BOS_ID
EOS_ID = char_vocabulary.EOS_ID
VOCAB_SIZE = char_vocabulary.VOCAB_SIZE
DEFAULT_SEQUENCE_LENGTH = char_vocabulary.DEFAULT_SEQUENCE_LENGTH
_FIRST_CHAR_ID = char_vocabulary.FIRST_CHAR_ID
_FIRST_CODE_POINT = char_vocabulary.FIRST_CODE_POINT
_LAST_CODE_POINT = char_vocabulary.LAST_CODE_POINT
_WHITESPACE = char_vocabulary.WHITESPACE_CODE_POINTS


def _check_length(sequence_length: int) -> None:
  if isinstance(sequence_length, bool) or not isinstance(
      sequence_length, int) or sequence_length < 1:
    raise ValueError('`sequence_length` must be a positive int, got '
                     f'{sequence_length!r}.')


def char_ids(text: str) -> tuple[np.ndarray, int]:
  """The ids of `text`'s characters (no BOS/EOS) and how many were OOV."""
  code_points = np.frombuffer(text.encode('utf-32-le'), np.uint32).astype(
      np.int64)
  code_points = np.where(np.isin(code_points, _WHITESPACE), _FIRST_CODE_POINT,
                         code_points)
  in_vocab = (code_points >= _FIRST_CODE_POINT) & (
      code_points <= _LAST_CODE_POINT)
  ids = np.where(in_vocab, code_points - _FIRST_CODE_POINT + _FIRST_CHAR_ID,
                 OOV_ID).astype(np.int32)
  return ids, int(np.sum(~in_vocab))


def decode(ids: Iterable[int]) -> str:
  """Readable text of ids (padding dropped; OOV, BOS, EOS shown as marks)."""
  marks = {OOV_ID: '\ufffd', BOS_ID: '<', EOS_ID: '>'}
  return ''.join(
      marks.get(int(i), chr(int(i) - _FIRST_CHAR_ID + _FIRST_CODE_POINT))
      for i in ids if int(i) != PAD_ID)


class Sequences(NamedTuple):
  """Next-character examples of a corpus.

  Attributes:
    inputs: int32 `[num_sequences, sequence_length]`.
    targets: int32 `[num_sequences, sequence_length]` (0 = padding).
    num_characters: Characters read (before BOS/EOS and padding).
    num_oov: Characters outside the vocabulary (mapped to `OOV_ID`).
    num_texts: Texts read (empty texts give no sequence and are counted in
      `num_empty`).
    num_empty: Empty texts skipped.
  """

  inputs: np.ndarray
  targets: np.ndarray
  num_characters: int
  num_oov: int
  num_texts: int
  num_empty: int


def text_sequences(texts: Iterable[str],
                   sequence_length: int = DEFAULT_SEQUENCE_LENGTH
                  ) -> Sequences:
  """Cuts texts into next-character examples (numpy).

  Args:
    texts: The texts (e.g. articles, posts); empty ones are skipped.
    sequence_length: Characters per example (the paper: 100).

  Returns:
    `Sequences`, in text order.

  Raises:
    ValueError: For a non-positive `sequence_length` or a text that is not a
      `str`.
  """
  _check_length(sequence_length)
  piece = sequence_length + 1
  pieces, characters, oov, count, empty = [], 0, 0, 0, 0
  for index, text in enumerate(texts):
    if not isinstance(text, str):
      raise ValueError(f'Text {index} is a {type(text).__name__}, not a str.')
    count += 1
    if not text:
      empty += 1
      continue
    ids, text_oov = char_ids(text)
    characters += ids.size
    oov += text_oov
    ids = np.concatenate([[BOS_ID], ids, [EOS_ID]]).astype(np.int32)
    ids = np.pad(ids, (0, -ids.size % piece))
    pieces.append(ids.reshape(-1, piece))
  if pieces:
    stacked = np.concatenate(pieces)
    stacked = stacked[np.any(stacked[:, 1:] != PAD_ID, axis=1)]
  else:
    stacked = np.zeros([0, piece], np.int32)
  return Sequences(stacked[:, :-1].copy(), stacked[:, 1:].copy(), characters,
                   oov, count, empty)


def tf_char_ids(text: tf.Tensor) -> tf.Tensor:
  """`char_ids` in TF: a scalar string to int32 ids (no BOS/EOS)."""
  code_points = tf.strings.unicode_decode(text, 'UTF-8',
                                          replacement_char=0xFFFD)
  is_space = tf.reduce_any(
      tf.equal(code_points[:, tf.newaxis], tf.constant(_WHITESPACE)), axis=1)
  code_points = tf.where(is_space, _FIRST_CODE_POINT, code_points)
  in_vocab = tf.logical_and(code_points >= _FIRST_CODE_POINT,
                            code_points <= _LAST_CODE_POINT)
  return tf.where(in_vocab,
                  code_points - _FIRST_CODE_POINT + _FIRST_CHAR_ID, OOV_ID)


def tf_text_pieces(text: tf.Tensor,
                   sequence_length: int = DEFAULT_SEQUENCE_LENGTH
                  ) -> tf.Tensor:
  """One text to int32 `[num_pieces, sequence_length + 1]` (none if empty)."""
  _check_length(sequence_length)
  piece = sequence_length + 1
  ids = tf_char_ids(text)
  ids = tf.concat([[BOS_ID], ids, [EOS_ID]], axis=0)
  padding = tf.math.floormod(-tf.size(ids), piece)
  ids = tf.pad(ids, [[0, padding]])
  pieces = tf.reshape(ids, [-1, piece])
  # An empty text gives no example, as in the numpy version.
  keep = tf.greater(tf.strings.length(text), 0)
  return tf.cond(keep, lambda: pieces,
                 lambda: tf.zeros([0, piece], tf.int32))


def to_examples(texts: tf.data.Dataset,
                sequence_length: int = DEFAULT_SEQUENCE_LENGTH
               ) -> tf.data.Dataset:
  """A dataset of scalar strings to `(inputs, targets)` int32 examples."""
  _check_length(sequence_length)
  pieces = texts.flat_map(lambda text: tf.data.Dataset.from_tensor_slices(
      tf_text_pieces(text, sequence_length)))
  examples = pieces.map(lambda p: (p[:-1], p[1:]))
  return examples.filter(
      lambda inputs, targets: tf.reduce_any(tf.not_equal(targets, PAD_ID)))
