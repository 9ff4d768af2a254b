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
"""Tiny generated data for the character LM's tests: Stack Exchange-style
posts converted as the binary converts them, and WikiText-style files."""

import os

import numpy as np

from experiments.stackoverflow_wikipedia import lm_data
from experiments.stackoverflow_wikipedia import posts_xml_lib
from tff_mixed.tasks import text_corpus

_WORDS = ('hops malt yeast lager stout ale brew barrel cask foam glass pint '
          'bitter sweet sour dark pale').split()


def write_posts(path: str, num_users: int = 12, seed: int = 0) -> str:
  """A Posts.xml: each user asks and answers a few posts, 2014-2017."""
  rng = np.random.default_rng(seed)
  rows, post_id = [], 1
  for user in range(1, num_users + 1):
    for _ in range(int(rng.integers(2, 5))):
      body = ' '.join(rng.choice(_WORDS, int(rng.integers(8, 40))))
      year = int(rng.integers(2014, 2018))
      kind = int(rng.integers(1, 3))
      title = f' Title="About {rng.choice(_WORDS)}"' if kind == 1 else ''
      rows.append(
          f'  <row Id="{post_id}" PostTypeId="{kind}" CreationDate="{year}-'
          f'03-0{post_id % 9 + 1}T10:00:00.000" Score="1" Body="&lt;p&gt;'
          f'{body}&lt;/p&gt;" OwnerUserId="{user}"{title} />')
      post_id += 1
  with open(path, 'w') as f:
    f.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n'
            + '\n'.join(rows) + '\n</posts>\n')
  return path


def write_wikitext(path: str, seed: int) -> str:
  """A WikiText-style file: a few articles of generated sentences."""
  rng = np.random.default_rng(seed)
  lines = ['']
  for article in range(4):
    lines += [f' = Article {article} = ', '']
    for _ in range(3):
      lines += [' ' + ' '.join(rng.choice(_WORDS, 30)) + ' 1 @,@ 000 . ', '']
  with open(path, 'w') as f:
    f.write('\n'.join(lines))
  return path


def convert_posts(directory: str) -> str:
  """Generated posts converted into `directory/so`; returns that path."""
  cache_dir = os.path.join(directory, 'so')
  posts_xml_lib.convert_posts(
      write_posts(os.path.join(directory, 'Posts.xml')), cache_dir,
      test_cutoff='2017-01-01', heldout_fraction=0.2)
  return cache_dir


def data_args(directory: str) -> list[str]:
  """The binary's data flags: generated posts, WikiText-style files."""
  texts = [write_wikitext(os.path.join(directory, f'wiki.{n}.tokens'),
                          seed=seed) for n, seed in (('valid', 1),
                                                     ('test', 2))]
  return [f'--cache_dir={convert_posts(directory)}',
          f'--central_train_text={texts[0]}',
          f'--central_eval_text={texts[1]}']


def load_tiny(directory: str) -> lm_data.Data:
  """The generated posts and texts loaded as the binary loads its data."""
  cache_dir = convert_posts(directory)
  texts = [text_corpus.read_text_files(write_wikitext(
      os.path.join(directory, f'wiki.{name}.tokens'), seed=seed))
           for name, seed in (('valid', 1), ('test', 2))]
  return lm_data.load_data(
      cache_dir, *texts, sequence_length=20, max_eval_sequences=20)
