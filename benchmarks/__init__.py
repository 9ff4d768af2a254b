"""Benchmarks of tff_mixed."""
