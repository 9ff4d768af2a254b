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
"""Local ports where no TFF worker can answer, however loaded the machine.

A port that was free when picked may be taken a moment later: by a TFF
worker that a test running beside this one starts (they pick free ports
too), which would then answer a test that expects nobody to. A socket bound
to the port, and never listening, holds it: nothing else can bind it, and
a connection to it is refused at once. Pure standard library.
"""

import socket


def refused_port() -> tuple[int, socket.socket]:
  """`(port, holder)`: a local port that refuses connections while
  `holder` stays open. Close `holder` when done."""
  holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  holder.bind(('127.0.0.1', 0))
  return holder.getsockname()[1], holder
