"""Experiment runtime: resumable training runs with metrics releases."""
