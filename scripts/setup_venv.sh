#!/usr/bin/env bash
# Creates (or reuses) the project's virtualenv at .venv and installs TFF 0.87.
#
# `pip install tensorflow-federated==0.87.0` cannot work as is: TFF 0.87 pins
# jaxlib==0.4.14, which is no longer on PyPI. We install TFF's declared
# dependencies ourselves (requirements.txt, with jaxlib 0.4.13) and then TFF
# without dependencies, with uv (installed into the venv by pip). A stamp file keyed on requirements.txt makes reruns
# instant.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.tff_mixed_installed"
want="$(sha256sum requirements.txt | cut -d' ' -f1) tensorflow-federated==0.87.0 $PWD"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  exit 0
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "[setup] creating virtualenv at $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
echo "[setup] installing dependencies (first run takes a few minutes)" >&2
# uv installs what pip would, downloading in parallel, and keeps a cache
# (~/.cache/uv) that scripts/check_wheel_install.sh's fresh virtualenv then
# installs from without downloading TensorFlow again.
"$VENV/bin/python" -m pip install -q uv >&2
UV=("$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --compile-bytecode)
"${UV[@]}" -r requirements.txt >&2
"${UV[@]}" --no-deps tensorflow-federated==0.87.0 >&2
# Make the repository importable from the venv without a build step (offline).
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$PWD" > "$site/tff_mixed_repo.pth"
# Importing TFF does not start its worker process; only running a computation
# does, so this check cannot leave one behind. The explicit clean-up call
# keeps TFF's worker manager from printing an ignored AttributeError at
# interpreter exit (its __del__ runs after `subprocess` is torn down).
# TensorFlow's C++ log lines (oneDNN, CUDA, TensorRT) are off here as in the
# binaries (experiments/tf_log_level.py): a failing import still prints its
# Python error.
TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c 'import tensorflow_federated as tff, tff_mixed; tff_mixed.register_worker_cleanup(); print("[setup] TFF", tff.__version__, "and tff_mixed", tff_mixed.__version__, "ready")' >&2
echo "$want" > "$STAMP"
