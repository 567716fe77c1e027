"""Jobs on Dask: the client's driver, the workers' tasks, clusters and workers.

- :mod:`.driver`: :func:`.driver.run_job`, the client side of a job
- :mod:`.tasks`: the batch task and what a worker keeps between batches
- :mod:`.floyd_warshall_slabs`: Floyd-Warshall split in row slabs across workers
- :mod:`.report`: :class:`.report.JobReport`
- :mod:`.dashboard`: the job page's scheduler plugin, and the driver's reports to it
- :mod:`.jobstate`: the scheduler's record of the jobs (batches, workers, rows/s)
- :mod:`.jobpage`: the job page, ``/mgapsp`` on the dashboard (Bokeh)
- :mod:`.cluster`: a client of a running cluster or of the embedded one
- :mod:`.worker`: ``python -m mgapsp.jobs.worker``, the right Dask worker for a node
"""
