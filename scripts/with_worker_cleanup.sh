#!/usr/bin/env bash
# Runs a command, then ends any TFF worker_binary process that appeared while
# it ran (by PID), so that no orphaned worker holds a pipe open after us.
# Only workers of this shell's session count: a worker outlives its Python
# parent but keeps its session, and an experiment started elsewhere (another
# terminal, `setsid` in the background) runs in a session of its own, so its
# workers are left alone.
#
# The binaries and tff_mixed's runners already kill the workers of their own
# process at exit (`tff_mixed.register_worker_cleanup()`, tff_mixed/runtime.py;
# importing tff_mixed alone does not); this is the belt to those braces for
# processes that die before their atexit hooks run (SIGKILL, crashes) or never
# make that call.
set -uo pipefail
# Local workers run as .../executor_stacks/../../../../data/worker_binary.
workers() { pgrep -s 0 -f 'tensorflow_federated/.*data/worker_binary' 2>/dev/null | sort; }
before="$(workers)"
"$@"
status=$?
after="$(workers)"
new="$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)"
if [[ -n "$new" ]]; then
  echo "[cleanup] ending TFF workers left by this run: $(echo $new)" >&2
  kill -9 $new 2>/dev/null || true
fi
exit $status
