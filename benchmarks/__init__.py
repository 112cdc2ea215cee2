"""rubricflow's benchmark workloads; run `python -m benchmarks [NAME ...]`."""
