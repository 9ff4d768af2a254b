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
"""The README's install command and quickstart, as a user copies them.

  python scripts/readme_blocks.py README.md install      # one shell line
  python scripts/readme_blocks.py README.md quickstart   # Python code

The install command is the first line of the first ```sh block under
"## Install" (its comment dropped); the quickstart the first ```python block
under "## Quickstart". tests/quickstart_test.py and
scripts/check_wheel_install.sh run what this prints, so the README's text is
what is tested.
"""

import re
import sys

# Exit statuses of main().
_EXIT_OK = 0
_EXIT_USAGE = 2
_SECTIONS = {'install': ('Install', 'sh'), 'quickstart': ('Quickstart', 'python')}


def block(readme: str, heading: str, language: str) -> str:
  """The first ```language block of the README's section `## heading`."""
  parts = re.split(r'^## ', readme, flags=re.M)
  section = [p for p in parts if p.split('\n', 1)[0].strip() == heading]
  if not section:
    raise ValueError(f'README has no section "## {heading}".')
  found = re.search(rf'^```{language}\n(.*?)^```', section[0],
                    flags=re.M | re.S)
  if not found:
    raise ValueError(f'README\'s "## {heading}" has no ```{language} block.')
  return found.group(1)


def install_command(readme: str) -> str:
  """The install command: the Install block's first line, comment dropped."""
  line = block(readme, *_SECTIONS['install']).splitlines()[0]
  return line.split('#', 1)[0].strip()


def quickstart(readme: str) -> str:
  """The quickstart's Python code."""
  return block(readme, *_SECTIONS['quickstart'])


def main(argv: list[str]) -> int:
  if len(argv) != 3 or argv[2] not in _SECTIONS:
    print(f'usage: {argv[0]} README.md {{install|quickstart}}',
          file=sys.stderr)
    return _EXIT_USAGE
  with open(argv[1]) as f:
    readme = f.read()
  print(install_command(readme) if argv[2] == 'install' else quickstart(readme),
        end='\n' if argv[2] == 'install' else '')
  return _EXIT_OK


if __name__ == '__main__':
  sys.exit(main(sys.argv))
