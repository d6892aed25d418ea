"""wattsched.campaign: grids of runs of every kind, executed here, on local processes or on Dask, resumable, with
reports. ``runner`` is the one runner (:func:`~wattsched.campaign.runner.run_experiment`, ``status``,
``load_results``, ``report``); ``kinds`` maps a spec's ``kind`` to its experiment; ``power`` (with ``spec``,
``workloads`` and ``summary``) is paper 000's power campaign and ``queue`` the plain queue-policy comparison. The
papers' own kinds live with their systems under ``wattsched.studies``."""
