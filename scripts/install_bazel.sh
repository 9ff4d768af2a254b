#!/usr/bin/env bash
# Installs Bazel if it is missing: Debian's bazel-bootstrap (Bazel 4.2.3),
# which works with no network beyond the package registry thanks to the
# stubs in third_party/bazel_offline/. Nothing to do where `bazel` exists.
#
# The install (apt-get update, then a JDK and Bazel's Java libraries: about
# 40 s on a fresh CI machine) needs no project file, so `.ci/run` starts it
# at the beginning, beside the virtualenv's set-up and the tests.
set -euo pipefail
if command -v bazel >/dev/null 2>&1; then
  exit 0
fi
echo "[bazel] installing Debian's bazel-bootstrap" >&2
SUDO=""
[[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bazel-bootstrap >&2
