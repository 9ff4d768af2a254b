# Copyright 2026, The tff_mixed Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""The repository speaks of the project alone: no work-tracking references.

Code, docs, generated Markdown, the Makefile, the changelog and the tests say
what the project does and why, never which ticket or working step asked for
it. The check reads every file git tracks (outside third_party/), so it runs
in a checkout and is skipped where there is none (Bazel's sandbox).
"""

import os
import re
import shutil
import subprocess

from absl.testing import absltest

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Built from parts so that this file does not match itself. This is the plain
# `grep -iE` pattern a reader would run; it also matches a `return` of a
# literal number, so the code names such values (`_EXIT_OK`,
# `strategy.NO_ROUNDS_YET`) and the plain grep stays clean.
_TRACKER = 'iss' + 'ue'
PATTERN = re.compile(
    rf'{_TRACKER} [0-9]|{_TRACKER}\'s|tu' r'rn [0-9]', re.IGNORECASE)


def _tracked_files():
  # `.git` is a directory in a clone and a file in a worktree.
  if shutil.which('git') is None or not os.path.exists(
      os.path.join(_REPO, '.git')):
    return None
  out = subprocess.run(['git', 'ls-files', '-z'], cwd=_REPO, check=True,
                       capture_output=True).stdout
  return [p for p in out.decode().split('\0')
          if p and not p.startswith('third_party/')]


def _hits(paths):
  hits = []
  for path in paths:
    try:
      with open(os.path.join(_REPO, path), encoding='utf-8') as f:
        text = f.read()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
      continue  # Binary files (plots, data) and files deleted in the tree.
    for number, line in enumerate(text.splitlines(), 1):
      if PATTERN.search(line):
        hits.append(f'{path}:{number}: {line.strip()[:100]}')
  return hits


class ProjectWordsTest(absltest.TestCase):

  def test_no_work_tracking_references(self):
    paths = _tracked_files()
    if paths is None:
      self.skipTest('not a git checkout')
    self.assertEmpty(_hits(paths))

  def test_the_pattern_can_fail(self):
    self.assertTrue(PATTERN.search(f'as {_TRACKER} 35 asks'))
    self.assertTrue(PATTERN.search(f"the {_TRACKER}'s horizon"))
    self.assertTrue(PATTERN.search('in tu' 'rn 4 we'))
    self.assertTrue(PATTERN.search('  ret' 'urn 0'))
    self.assertIsNone(PATTERN.search('see the issues page'))


if __name__ == '__main__':
  absltest.main()
