"""wattsched.campaign: grids of simulation runs, executed locally or on Dask, resumable, with reports."""
