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
"""Traced `tf.function`s kept across calls, by key.

The asynchronous server steps (server SGD, FedDF's distillation, Feddle's
coefficient search) run a small TF loop every round or merge. A
`tf.function` made inside the call is traced anew each time (about a second
of CPU, against a few steps of work); kept under a key that names what the
function closes over (its model, its settings), it is traced once per key.
"""

import collections
from collections.abc import Callable, Hashable
from typing import Any, Optional


class TracedCache:
  """The most recently used functions, at most `max_size` of them.

  A key is held while its function is kept, so an object in it (a model,
  compared by identity) cannot be collected and its identity passed to a
  new object meanwhile.
  """

  def __init__(self, max_size: int = 16):
    self._functions: collections.OrderedDict = collections.OrderedDict()
    self._max_size = max_size

  def get(self, key: Optional[Hashable], make: Callable[[], Any]) -> Any:
    """The function kept under `key`, made by `make()` the first time.

    `key` None, or a key that cannot be hashed (e.g. holding a model that
    compares by value), is not kept: `make()` each call.
    """
    if key is None:
      return make()
    try:
      function = self._functions.get(key)
    except TypeError:
      return make()
    if function is None:
      function = self._functions[key] = make()
      while len(self._functions) > self._max_size:
        self._functions.popitem(last=False)
    else:
      self._functions.move_to_end(key)
    return function

  def __len__(self) -> int:
    return len(self._functions)
