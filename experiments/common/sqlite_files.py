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
"""A sqlite database written whole or not at all.

The data converters (Stack Exchange dumps, raw CelebA) write the sqlite files
TFF's loaders read. A loader must never open a half-written file, and a
database already there must survive a failed or interrupted conversion, so
the database is written to a hidden temporary file beside its path and
renamed onto it once complete.
"""

import contextlib
import os
import sqlite3
from typing import Iterator

from tff_mixed.training import reports

# The schema of TFF's sqlite client data (`celeba.sqlite`,
# `stackoverflow.sqlite`): every example with its split and client, and each
# client's example count per split; the index is made after the inserts.
CLIENT_DATA_TABLES = (
    'CREATE TABLE examples (split_name TEXT NOT NULL, client_id TEXT NOT NULL,'
    ' serialized_example_proto BLOB NOT NULL);',
    'CREATE TABLE client_metadata (client_id TEXT NOT NULL,'
    ' split_name TEXT NOT NULL, num_examples INTEGER NOT NULL);',
)
CLIENT_DATA_INDEX = ('CREATE INDEX examples_client_split ON examples'
                     ' (client_id, split_name);')


@contextlib.contextmanager
def new_database(path: str) -> Iterator[sqlite3.Connection]:
  """A connection to an empty database that replaces `path` on success.

  Parent directories are created. The database is a hidden
  `.<name>.*.tmp` file in `path`'s directory until the `with` block ends
  without an exception: it is then committed, synced to disk, given the
  mode a new file gets under the umask, and renamed onto `path`. On any
  exception, KeyboardInterrupt included, the temporary file is removed and
  whatever was at `path` is left as it was.

  Args:
    path: The database's final path.

  Yields:
    The open `sqlite3.Connection`.
  """
  temp_path = reports.temp_path_beside(path)
  try:
    connection = sqlite3.connect(temp_path)
    try:
      # The file is private until the rename, so durability is not needed
      # while writing; an interrupted write just deletes it.
      connection.execute('PRAGMA journal_mode = MEMORY;')
      connection.execute('PRAGMA synchronous = OFF;')
      yield connection
      connection.commit()
    finally:
      connection.close()
    with open(temp_path, 'rb') as f:
      os.fsync(f.fileno())
    # mkstemp makes the file private (0600); give it the usual mode.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temp_path, 0o666 & ~umask)
    os.replace(temp_path, path)
  except BaseException:  # KeyboardInterrupt too: never leave the temp file.
    reports.remove_quietly(temp_path)
    raise
