#!/usr/bin/env bash
# Builds tff_mixed's wheel and installs it, with README.md's install command
# (uv and overrides.txt; the wheel in place of its `.`), into a fresh
# virtualenv outside the repository, then, from a directory outside the
# repository, runs scripts/wheel_smoke_check.py with it (the import has no
# side effects, the package is tff_mixed alone) and README.md's quickstart as
# written (scripts/readme_blocks.py reads both out of the README). Everything
# lives in a temporary directory, removed at the end (KEEP=1 keeps it); the
# repository is not written to. `make wheel-check` runs it.
#
#   scripts/check_wheel_install.sh            # python3 for the new venv
#   PYTHON=python3.10 scripts/check_wheel_install.sh
#
# Needs PyPI (or a warm uv cache: ~/.cache/uv). uv comes from PATH, or is
# installed into a scratch venv in the temporary directory.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tff_mixed_wheel.XXXXXX")"
if [[ "${KEEP:-0}" != 1 ]]; then
  trap 'rm -rf "$WORK"' EXIT
fi
start=$SECONDS
say() { echo "[wheel-check $((SECONDS - start))s] $*" >&2; }

# The repository's venv has uv (scripts/setup_venv.sh installs with it), and
# its cache makes the fresh install below quick.
UV="${UV:-$(command -v uv || true)}"
if [[ -z "$UV" && -x "$REPO/.venv/bin/uv" ]]; then
  UV="$REPO/.venv/bin/uv"
fi
if [[ -z "$UV" ]]; then
  say "installing uv into $WORK/tools"
  "$PYTHON" -m venv "$WORK/tools"
  "$WORK/tools/bin/python" -m pip install -q uv >&2
  UV="$WORK/tools/bin/uv"
fi
# The README's command calls `uv` by name.
PATH="$(dirname "$UV"):$PATH"
BLOCKS="$REPO/scripts/readme_blocks.py"
install="$("$PYTHON" "$BLOCKS" "$REPO/README.md" install)"
if [[ "$install" != *" ." ]]; then
  say "FAIL: README.md's install command does not end in ' .': $install"
  exit 1
fi

# The source tree as a clone would have it (tracked and new, unignored
# files), so the build writes nothing into the repository.
say "copying the source tree"
mkdir -p "$WORK/src" "$WORK/dist" "$WORK/elsewhere"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
  | xargs -0 -I{} sh -c 'test -e "$1" && printf "%s\0" "$1"' _ {} \
  | tar --null -T - -cf -) | tar -C "$WORK/src" -xf -
say "building the wheel"
"$UV" build -q --wheel --out-dir "$WORK/src/dist" "$WORK/src" >&2
wheel="$(ls "$WORK"/src/dist/tff_mixed-*-py3-none-any.whl)"
say "built $(basename "$wheel")"
# A wheel holds tff_mixed and its metadata, nothing else.
extra="$("$PYTHON" -m zipfile -l "$wheel" | awk 'NR > 1 {print $1}' \
  | grep -v -E '^tff_mixed/.*\.py$|^tff_mixed-[^/]*\.dist-info/' || true)"
if [[ -n "$extra" ]]; then
  say "FAIL: the wheel holds more than tff_mixed: $extra"
  exit 1
fi

say "creating a fresh virtualenv at $WORK/venv"
"$UV" venv -q --python "$PYTHON" "$WORK/venv" >&2
# README.md's command, as a user types it in the clone with the venv active,
# installing the wheel just built.
install="${install% .} dist/$(basename "$wheel")"
say "installing: $install"
(
  cd "$WORK/src"
  # shellcheck disable=SC1091
  source "$WORK/venv/bin/activate"
  eval "$install" >&2
)

say "checking the installed package from $WORK/elsewhere, then running README.md's quickstart there"
cd "$WORK/elsewhere"
"$PYTHON" "$BLOCKS" "$REPO/README.md" quickstart > quickstart.py
# One interpreter does both: the checks, then the quickstart as __main__.
status=0
env -u PYTHONPATH "$REPO/scripts/with_worker_cleanup.sh" \
  "$WORK/venv/bin/python" "$WORK/src/scripts/wheel_smoke_check.py" \
  quickstart.py 2> "$WORK/check.stderr" || status=$?
if [[ $status -ne 0 ]]; then
  tail -20 "$WORK/check.stderr" >&2
  say "FAIL (status $status)"
  exit $status
fi
say "ok: the wheel installs with the documented command, and the quickstart runs"
