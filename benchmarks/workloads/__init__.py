"""One module per workload; each has ``NAME``, ``TITLE`` and ``run(cfg) -> WorkloadResult``."""
