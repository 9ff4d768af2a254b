"""Small functional models used by the experiments and tests."""
