"""Shared building blocks of the mixed FL processes (arXiv:2205.13655).

The components of a round, each in its own module: distributors (what the
server sends each client), client work (local training), aggregators (how
updates come back), central work (what the server computes from f_c) and
the finalizer (the new global model and augmenting-gradient state); the
composer `mixed_process.py` that wires them into a `LearningProcess`; and
what they stand on: the central objective and its example store, the
federated_select helpers, traced model types, validation, and the
communication and FLOP cost models.
"""
