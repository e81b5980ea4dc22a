"""Benchmarks and load generators (not installed; run from the repo root as ``python -m
bench.<name>``)."""
