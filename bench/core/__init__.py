"""The core: specs and registries, data, metrics, results and the statistics that read them, caches,
errors and I/O. It imports nothing from the stages or the commands."""
