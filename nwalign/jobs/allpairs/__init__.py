"""The allpairs command: the job (`job`), one process or one block (`run`), a block on a worker (`tasks`)."""
