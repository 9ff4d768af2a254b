"""Shared building blocks of the mixed FL processes."""
