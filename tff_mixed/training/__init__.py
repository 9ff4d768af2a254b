"""Training: the shared resumable experiment runner and what it writes.

`runner` (resumable training runs with metrics releases), `round_loop`
(the round loop it shares with asynchronous runs), `checkpoints`
(checkpoints that refuse to resume a different run and survive a corrupt
save or a full disk), `stop_signals` (a clean stop on SIGINT and SIGTERM),
`run_lock` (one process per run or output directory), `drop_report`
(warnings for the clients and rounds a run dropped) and `reports` (atomic
file writes and per-section Markdown reports).
Layer: above `runtime.py` and `core/`, the only tff_mixed code it may import;
below `asynchronous/`, `models/`, `tasks/`, `algorithms/` and the `tff_mixed`
facade, which all may use it.
"""
