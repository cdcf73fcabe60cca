"""Benchmarks: each prints its table and, with --write, records it in docs/benchmarks.md."""
