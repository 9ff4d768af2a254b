"""Tests of tff_mixed."""
