"""gradtape's benchmark suite: each workload on gradtape and its peers, reported as ratios.

Run everything with ``python benchmarks/run.py`` (see ``benchmarks/run.py --help``).
"""
