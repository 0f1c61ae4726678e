"""The search command: the job (`job`), the one-process pipeline (`pipeline`), its scale-out over GPUs and Dask workers (`scaleout`, `shards`)."""
