"""Public builders, one module per mixed FL algorithm."""
