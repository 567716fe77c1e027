"""Benchmarks of mgapsp against its peers, each a script run as ``python -m bench.NAME``
from the repository's root; their results are in ``bench/results/``."""
