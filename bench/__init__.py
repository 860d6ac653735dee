"""Benchmarks of the pool, each figure measured next to its baseline in the same run: ``bench/run``."""
