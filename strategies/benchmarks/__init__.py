"""Benchmark files, answer metrics, the resumable runner and the HTML trace report behind
``tot-search``."""
