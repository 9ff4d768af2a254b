#!/usr/bin/env bash
# Runs `bazel test //...` (or the bazel command given as arguments) offline,
# with the project's virtualenv python. Installs Bazel if it is missing
# (scripts/install_bazel.sh: Debian's bazel-bootstrap, which works with no
# network beyond the package registry, thanks to the stubs in
# third_party/bazel_offline/).
#
#   scripts/bazel_test.sh [BAZEL COMMAND...]   # default: test //...
#   scripts/bazel_test.sh check [TEST FLAGS...]
#
# `check` is what CI runs (the pytest run has already run every test once):
# it builds every target, checks that each target's deps provide every
# first-party module its sources import (scripts/check_bazel_deps.py, on the
# graph Bazel resolved), and runs under Bazel the tests only a run can
# check: those that read files through `data` (but for the binaries' runs,
# tagged `binary_run_data`), and those tagged `ci_bazel`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
bash scripts/install_bazel.sh
export BAZEL_PYTHON="$PWD/.venv/bin/python"
if [[ $# -eq 0 ]]; then
  set -- test //...
fi
check() {
  bazel build //... &&
    "$BAZEL_PYTHON" scripts/check_bazel_deps.py &&
    # An empty `data` reads "[]" to attr(): a non-empty one has a label.
    # Tagged binary_run_data: the data serves only runs of a binary from the
    # source tree, which this check skips (TFF_MIXED_SKIP_BINARY_RUNS).
    bazel test "$@" $(bazel query \
      'attr(data, "\[.+\]", kind(py_test, //...))
       - attr(tags, "binary_run_data", //...) + attr(tags, "ci_bazel", //...)')
}
status=0
if [[ "$1" == "check" ]]; then
  shift
  check "$@" || status=$?
else
  bazel "$@" || status=$?
fi
# The Bazel server is a daemon: stop it so nothing outlives this script.
bazel shutdown >/dev/null 2>&1 || true
exit $status
