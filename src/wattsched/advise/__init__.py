"""wattsched.advise: keep a real Slurm cluster under a power cap with learned job power (docs/advisor.md).

A reconcile loop beside slurmctld: observe the queue, completed jobs and node power through a backend
(``backends``), learn each job's power from completed jobs with the simulator's own predictors (``learn``),
decide the power license every pending job needs under the cap (``decide``), and apply only the differences,
with every action in an audit log (``store``). ``replay`` runs the same decisions on a recorded history in
simulation. The information boundary holds here as in the simulator: a decision never reads a job's true power
(the testbed's power convention, the job comment, is never parsed).
"""
