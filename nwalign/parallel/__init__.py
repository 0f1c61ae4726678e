"""Work over this host's GPUs and Dask workers: `spread` (a job's tasks in order), `devicethreads` (a thread per GPU), `cluster` (Dask clusters and worker caches), `localworkers`, `workerexit`."""
