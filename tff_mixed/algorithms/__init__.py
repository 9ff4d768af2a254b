"""Public builders, one module per mixed FL algorithm.

Each builder (Parallel Training, 1-way and 2-way Gradient Transfer,
arXiv:2205.13655; Example Transfer and FedAvg with shared data,
arXiv:2111.12150 and arXiv:1806.00582) checks its arguments once
(`arguments.py`), chooses the `tff_mixed.core` components of its process
(`choices.py` holds the choices they share) and composes them with
`components.compose_mixed_process`. `components.py` is the public side of
the same components and that composer (`tff_mixed.components`), for
writing a new algorithm without changing the library.
"""
