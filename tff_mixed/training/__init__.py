"""Training: the shared resumable experiment runner and what it writes.

`runner` (resumable training runs with metrics releases), `checkpoints`
(checkpoints that refuse to resume a different run and survive a corrupt
save) and `reports` (atomic file writes and per-section Markdown reports).
Layer: above `runtime.py` and `core/`, the only tff_mixed code it may import;
below `asynchronous/`, `models/`, `tasks/`, `algorithms/` and the `tff_mixed`
facade, which all may use it.
"""
