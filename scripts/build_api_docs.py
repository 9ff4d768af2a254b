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
"""Builds tff_mixed's API reference from its docstrings, with pdoc (`make docs`).

  python scripts/build_api_docs.py [OUTPUT_DIR]     # default build/api

Every module of the package gets a page (pdoc alone renders only what the
top package's `__all__` names). The build fails, exit status 1, naming each
fault, on:

*   a warning pdoc gives while it reads or renders the package (a module
    that cannot be imported, a docstring or annotation it cannot parse);
*   a broken reference in a docstring: a backticked dotted name under
    `tff_mixed.` that does not resolve to a module or an attribute (pdoc
    leaves such a name as plain code, silently), or a backticked path of a
    repository file (`docs/...`, `tests/..._test.py`, `README.md`, ...) that
    does not exist.

Run from the repository root with the project's interpreter; it writes only
OUTPUT_DIR.
"""

import importlib
import inspect
import os
import pathlib
import pkgutil
import re
import sys
import warnings

# Exit statuses of main().
_EXIT_OK = 0
_EXIT_FAILED = 1
_REPO = pathlib.Path(__file__).resolve().parent.parent
# A dotted name under the package, e.g. `tff_mixed.core.flops.local_step_flops`
# (a trailing call's parentheses allowed).
_NAME = re.compile(r'`(tff_mixed(?:\.\w+)+)(?:\(\))?`')
# A path of a file in the repository, as the docstrings cite them.
_PATH = re.compile(
    r'`((?:docs|tests|scripts|experiments|benchmarks|tff_mixed)/'
    r'[\w./-]+\.(?:py|md|sh|txt)|[A-Z]+\.md)`')


def module_names() -> list[str]:
  """tff_mixed and every module below it."""
  package = importlib.import_module('tff_mixed')
  names = ['tff_mixed']
  for info in pkgutil.walk_packages(package.__path__, 'tff_mixed.'):
    names.append(info.name)
  return sorted(names)


def _specs(names: list[str]) -> list[str]:
  """The fewest of `names` (parents first) whose pdoc specs cover them all.

  A package's spec adds its submodules unless the package's `__all__` leaves
  them out (as `tff_mixed`'s does); naming a module twice makes pdoc warn.
  """
  # pylint: disable=g-import-not-at-top
  from pdoc import extract
  specs, covered = [], set()
  for name in names:
    if name not in covered:
      specs.append(name)
      covered.update(extract.walk_specs([name]))
  return specs


def _resolves(dotted: str) -> bool:
  """Whether `dotted` names a module, or an attribute of one."""
  parts = dotted.split('.')
  for split in range(len(parts), 0, -1):
    try:
      obj = importlib.import_module('.'.join(parts[:split]))
    except ImportError:
      continue
    for attribute in parts[split:]:
      if not hasattr(obj, attribute):
        return False
      obj = getattr(obj, attribute)
    return True
  return False


def _docstrings(module):
  """(where, docstring) of a module and of what it defines."""
  yield module.__name__, inspect.getdoc(module) or ''
  for name, obj in vars(module).items():
    if getattr(obj, '__module__', None) != module.__name__:
      continue
    if inspect.isclass(obj) or inspect.isfunction(obj):
      yield f'{module.__name__}.{name}', inspect.getdoc(obj) or ''
    if inspect.isclass(obj):
      for member, value in vars(obj).items():
        if inspect.isfunction(value) or isinstance(value, property):
          yield (f'{module.__name__}.{name}.{member}',
                 inspect.getdoc(value) or '')


def broken_references(names: list[str]) -> list[str]:
  """One line per broken reference in the docstrings of modules `names`."""
  faults = []
  for module_name in names:
    module = importlib.import_module(module_name)
    for where, doc in _docstrings(module):
      for dotted in sorted(set(_NAME.findall(doc))):
        if not _resolves(dotted):
          faults.append(f'{where}: `{dotted}` names nothing')
      for path in sorted(set(_PATH.findall(doc))):
        if not (_REPO / path).exists():
          faults.append(f'{where}: `{path}` is not a file of the repository')
  return faults


def main(argv: list[str]) -> int:
  # This checkout's package, not one an environment's .pth points at.
  sys.path.insert(0, str(_REPO))
  output = pathlib.Path(argv[1] if len(argv) > 1 else 'build/api')
  # pylint: disable=g-import-not-at-top
  import pdoc
  import tff_mixed
  # Computations traced while importing start TFF's worker; it ends with us.
  tff_mixed.register_worker_cleanup()
  names = module_names()
  # Imported first, so that the warnings recorded below are pdoc's about our
  # package, not the import-time warnings of TensorFlow and its dependencies.
  for name in names:
    importlib.import_module(name)
  # Docstrings only, no "View Source" per function: highlighting every
  # function's source was most of the build's time, and the source is a
  # click away in the repository.
  pdoc.render.configure(show_source=False)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    pdoc.pdoc(*_specs(names), output_directory=output)
  faults = [f'pdoc: {w.category.__name__}: {w.message}' for w in caught]
  faults += broken_references(names)
  for fault in faults:
    print(f'error: {fault}', file=sys.stderr)
  if faults:
    print(f'error: the API reference has {len(faults)} fault(s).',
          file=sys.stderr)
    return _EXIT_FAILED
  print(f'API reference of {len(names)} modules in '
        f'{os.path.join(output, "index.html")}')
  return _EXIT_OK


if __name__ == '__main__':
  sys.exit(main(sys.argv))
