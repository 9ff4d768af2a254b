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
"""Small generated MovieLens ratings files for the tests (MovieLens files
may not be shipped)."""

import gzip

import numpy as np


def write_ratings(path: str, num_users=70, num_movies=40, seed=0,
                  extra_line=None, partial=False):
  """A u.data-style file: users rate 6-14 movies, popular ones more often.

  `partial`: instead, a gzipped ratings.dat-style subset of a larger file,
  as ML-1M's users 1-2999: the odd users of 1 to 2 `num_users`, movie ids
  with gaps (7 apart).
  """
  rng = np.random.default_rng(seed)
  popularity = 1.0 / np.arange(1, num_movies + 1)
  popularity /= popularity.sum()
  lines = []
  for user in range(1, num_users + 1):
    count = int(rng.integers(6, 15))
    movies = rng.choice(np.arange(1, num_movies + 1), count, replace=False,
                        p=popularity)
    for t, movie in enumerate(movies):
      fields = (2 * user - 1, 7 * movie - 3) if partial else (user, movie)
      lines.append(('::' if partial else '\t').join(map(str, (
          *fields, int(rng.integers(1, 6)), 880000000 + 1000 * t))))
  if extra_line is not None:
    lines.insert(3, extra_line)
  with (gzip.open if partial else open)(path, 'wt') as f:
    f.write('\n'.join(lines) + '\n')
  return path
