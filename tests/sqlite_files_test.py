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
"""`sqlite_files.new_database`: a database replaces its path whole or not."""

import os
import sqlite3

from absl.testing import absltest

from experiments.common import sqlite_files
from tests import temp_dirs


def _rows(path):
  with sqlite3.connect(path) as connection:
    return connection.execute('SELECT v FROM t ORDER BY v').fetchall()


class NewDatabaseTest(absltest.TestCase):

  def _write(self, path, values, fail=None):
    with sqlite_files.new_database(path) as connection:
      connection.execute('CREATE TABLE t (v INTEGER)')
      connection.executemany('INSERT INTO t VALUES (?)', [(v,) for v in values])
      if fail is not None:
        raise fail

  def test_replaces_the_database_and_leaves_nothing_beside_it(self):
    directory = os.path.join(temp_dirs.temp_dir(self), 'cache')  # Created.
    path = os.path.join(directory, 'db.sqlite')
    self._write(path, [1, 2])
    self._write(path, [3])
    self.assertEqual(_rows(path), [(3,)])
    self.assertEqual(os.listdir(directory), ['db.sqlite'])
    umask = os.umask(0)
    os.umask(umask)
    self.assertEqual(os.stat(path).st_mode & 0o777, 0o666 & ~umask)

  def test_a_failure_keeps_the_old_database_and_removes_the_new(self):
    directory = temp_dirs.temp_dir(self)
    path = os.path.join(directory, 'db.sqlite')
    self._write(path, [1])
    for error in (ValueError('bad row'), KeyboardInterrupt()):
      with self.subTest(type(error).__name__):
        with self.assertRaises(type(error)):
          self._write(path, [5, 6], fail=error)
        self.assertEqual(_rows(path), [(1,)])
        self.assertEqual(os.listdir(directory), ['db.sqlite'])


if __name__ == '__main__':
  absltest.main()
