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
"""The Stack Exchange dump files a `Posts.xml` conversion reads.

A conversion may read the dumps of several sites at once (`posts_xml_lib`).
Owner ids are per site: `OwnerUserId` 7 on beer.stackexchange.com and 7 on
history.meta.stackexchange.com are two people, so each post's client is
named by its site and owner. This module says which site a file holds
(from its name), checks that each site is given once, and opens a dump
whether it is plain XML or gzipped.

Site names come from file names, as the dumps are distributed and as
`../shared/data/stackexchange_posts/` holds them:

*   `beer.stackexchange.com_Posts.xml` -> `beer.stackexchange.com`
*   `history.meta.stackexchange.com.Posts.xml.gz` ->
    `history.meta.stackexchange.com`
*   `beer.stackexchange.com/Posts.xml` (an unpacked archive) ->
    `beer.stackexchange.com`, the folder's name.

A trailing `.gz` is part of the name only: whether a file is gzipped is read
from its first two bytes (gzip's magic number), so a renamed file still
opens.
"""

from collections.abc import Sequence
import gzip
import os
import re
from typing import BinaryIO

GZIP_MAGIC = b'\x1f\x8b'
_POSTS_NAME = 'Posts.xml'
_GZIP_SUFFIX = '.gz'
# Site names go into client ids, which TFF's loader splices between quotes
# into SQL (as the decimal owner ids are): host-name characters only.
_SITE = re.compile(r'[A-Za-z0-9][A-Za-z0-9.-]*')


def site_name(path: str) -> str:
  """Returns the Stack Exchange site whose dump `path` is, from its name.

  Args:
    path: `<site>_Posts.xml`, `<site>.Posts.xml` or `<site>/Posts.xml`, each
      optionally ending in `.gz` (see the module docstring).

  Returns:
    The site, e.g. `beer.stackexchange.com`.

  Raises:
    ValueError: If the name does not say the site.
  """
  name = os.path.basename(path)
  if name.endswith(_GZIP_SUFFIX):
    name = name[:-len(_GZIP_SUFFIX)]
  if name == _POSTS_NAME:
    site = os.path.basename(os.path.dirname(os.path.abspath(path)))
  elif name.endswith(_POSTS_NAME) and name[-len(_POSTS_NAME) - 1] in '._':
    site = name[:-len(_POSTS_NAME) - 1]
  else:
    site = ''
  if not _SITE.fullmatch(site):
    raise ValueError(
        f'Cannot tell the site of the dump {path} from its name: name it '
        '<site>_Posts.xml, <site>.Posts.xml or <site>/Posts.xml (each may '
        'end in .gz), the site being letters, digits, dots and dashes, e.g. '
        'beer.stackexchange.com_Posts.xml.')
  return site


def check_readable_file(path: str) -> None:
  """Raises FileNotFoundError if `path` is missing or not a file."""
  if not os.path.exists(path):
    raise FileNotFoundError(f'The posts file {path} does not exist.')
  if not os.path.isfile(path):
    raise FileNotFoundError(f'The posts file {path} is not a file.')


def dump_sites(paths: Sequence[str]) -> list[str]:
  """Returns the site of each dump, after checking each is given once.

  Args:
    paths: The dumps of one conversion, two or more.

  Returns:
    `site_name(p)` for each path, in order.

  Raises:
    FileNotFoundError: If a path is missing or not a file.
    ValueError: If a path is empty, a name does not say its site, or two
      paths hold the same site (their owner ids would be confused).
  """
  sites = {}
  for path in paths:
    if not path:
      raise ValueError('An empty path among the posts files: give them as '
                       'a comma-separated list without empty entries.')
    check_readable_file(path)
    site = site_name(path)
    if site in sites:
      raise ValueError(
          f'{sites[site]} and {path} are both dumps of {site}: give each '
          'site once (owner ids are per site).')
    sites[site] = path
  return list(sites)


def is_gzipped(path: str) -> bool:
  """Whether `path` starts with gzip's magic number."""
  with open(path, 'rb') as f:
    return f.read(len(GZIP_MAGIC)) == GZIP_MAGIC


def open_dump(path: str) -> BinaryIO:
  """Opens a dump for reading bytes, decompressing it if it is gzipped."""
  if is_gzipped(path):
    return gzip.open(path, 'rb')
  return open(path, 'rb')
