"""Measured memory per generated job, for the size bounds checked before a generator draws anything
(:func:`wattsched.core.bounds.check_fits`): by ``wattsched generate``, by the generators themselves and by a
campaign spec's ``generate = {jobs = ...}``: one place for the measured numbers.

Measured as the growth of the peak RSS of one process from 20,000 to 200,000 jobs (seed 0, defaults; Python
3.11, polars 1.x, 2-core VM), rounded up: a typo of 300 million m100 jobs is refused as "about 698 GiB" instead of
a MemoryError minutes later.
"""

#: Lublin–Feitelson: 16.5 → 58.0 MiB, 241 B a job.
LUBLIN_BYTES_PER_JOB = 300
#: Marconi100-like with power profiles: 210 → 601 MiB, 2,280 B a job.
M100_BYTES_PER_JOB = 2_500
#: By model name, as campaign specs name them.
BYTES_PER_JOB = {"lublin": LUBLIN_BYTES_PER_JOB, "m100": M100_BYTES_PER_JOB}
