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
"""Runs a command beside another at the lowest CPU priority: `.ci/run`.

  python3 scripts/beside.py COMMAND [ARG...] &

The command gets only the CPU time the foreground work leaves idle, so a
check that needs no test result (the API reference, the wheel) runs during
the test run instead of after it. Before exec-ing the command it:

* starts a session of its own: `scripts/with_worker_cleanup.sh` ends the TFF
  workers that appeared in its session while it ran, so the command's
  cleanup must not see the test run's workers, nor theirs the command's;
* restores SIGINT's default action, which a job started with `&` from a
  script ignores (and so would its TFF workers, which TFF could then not
  stop);
* sets the lowest priority, nice 19, and the same for its session's
  scheduling group where the kernel groups sessions (autogroup), since
  there nice only ranks processes within a session.
"""

import os
import signal
import sys


def main(argv: list[str]) -> None:
  if len(argv) < 2:
    sys.exit('usage: beside.py COMMAND [ARG...]')
  os.setsid()
  signal.signal(signal.SIGINT, signal.SIG_DFL)
  os.nice(19)
  try:
    with open('/proc/self/autogroup', 'w') as f:
      f.write('19')
  except OSError:
    pass  # No autogroup (or not allowed): nice alone ranks the processes.
  os.execvp(argv[1], argv[1:])


if __name__ == '__main__':
  main(sys.argv)
