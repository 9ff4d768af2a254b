#!/usr/bin/env bash
# Runs `bazel test //...` (or the bazel command given as arguments) offline,
# with the project's virtualenv python. Installs Bazel if it is missing:
# Debian's bazel-bootstrap (Bazel 4.2.3) works with no network beyond the
# package registry, thanks to the stubs in third_party/bazel_offline/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
if ! command -v bazel >/dev/null 2>&1; then
  echo "[bazel] installing Debian's bazel-bootstrap" >&2
  SUDO=""
  [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bazel-bootstrap >&2
fi
export BAZEL_PYTHON="$PWD/.venv/bin/python"
if [[ $# -eq 0 ]]; then
  set -- test //...
fi
status=0
bazel "$@" || status=$?
# The Bazel server is a daemon: stop it so nothing outlives this script.
bazel shutdown >/dev/null 2>&1 || true
exit $status
