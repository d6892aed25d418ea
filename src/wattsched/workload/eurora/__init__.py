"""Eurora reader: the historical job instances of the Eurora simulator data (CINECA, 2014; paper 001).

One module per concern: :mod:`.reader` (:func:`read_eurora`), :mod:`.instances` (finding the files, one line per
job id over all of them), :mod:`.fields` (a line's sections and fields, Eurora's own rules) and
:mod:`.predictions` (:func:`read_eurora_power_predictions`).

Each ``*.log_crypt`` instance holds one job per line::

    job_id;executable;user;queue;arrival__(node;cores;gpus;mics;mem_KiB#)+__start;end;req_nodes;req_cores;
    req_mem_GB;walltime_hh:mm;NA;NA;status;app_type

The instances overlap (one job is in many files), so reading several keeps one row per job. The used-node entries
are the job's PBS chunks, which is what the multi-resource dispatchers of :mod:`wattsched.studies.multires.nodes` place.

Conventions (each is also recorded in ``provenance.conventions``):

* ``paths``: a file, a directory (every ``*.log_crypt`` below it, in sorted path order) or a list of either.
  Lines are keyed by their job id text: a repeat of an earlier line is a duplicate (counted in
  ``provenance.header["duplicate_lines"]``, not a reject); a repeat with different content is rejected (field
  ``job_id``, naming where the kept line is) and the first occurrence is kept. Blank lines are skipped and counted.
* Times are naive Eurora local time (Europe/Rome, CEST over this trace) read as UTC: epoch seconds with
  ``provenance.timezone`` "UTC" and ``unix_start_time`` 0 like the other readers, so wall-clock hours are local.
  ``submit_time`` = arrival; ``trace_start_time`` / ``trace_end_time`` = start / end; ``runtime`` = end − start.
* ``walltime`` = the hh:mm field × 60 s; empty, ``NA`` or zero use ``walltime_defaults[queue]`` (s) when given,
  else the job is rejected.
* Chunks: ``chunks`` = number of used-node entries (two entries may name the same node: chunks share nodes);
  ``chunk_cores/gpus/mics/mem`` = element-wise max over the entries (they agree for every job of the real trace;
  jobs where they differ are counted as ``heterogeneous_chunks``). Memory stays in the trace's KiB, the unit of
  :func:`wattsched.studies.multires.eurora.eurora_pool`.
* ``size`` = ``chunks`` (``provenance.size_unit`` = "chunks"; chunks may share a node, so no machine size is
  implied). Totals ``cores``, ``gpus``, ``mics`` = chunks × per chunk; ``mem`` = chunks × chunk_mem in GB (base
  1024), the canonical unit of ``mem``.
* Kept as given: ``nodes`` (requested nodes), ``req_cores`` (total), ``req_mem_gb`` (the trace's request field,
  labelled GB; its unit is unreliable: jobs using 200 MiB chunks request "200"), ``app_type`` (0/1/2, synthetic),
  ``state`` (status), ``name`` (executable), ``queue``, ``eurora_job_id`` (id text) and ``eurora_nodes`` (node ids
  as the trace numbers them, 1–64; the node files number the same nodes 0–63).
* ``user_id`` = :func:`wattsched.workload.sacct.user_code` of the user name (names are masked in the public data,
  so every job has the same code).
* ``predictions``: a ``power_predictions`` file (or its frame from :func:`read_eurora_power_predictions`) joined on
  ``job_id`` as ``pred_power`` (W per job, an ML prediction, null where absent; counts in the header).
* Rejected (``source`` = file, ``line`` = 1-based line, ``raw`` = the line), first failing rule wins: section or
  field counts, a non-integer job id, an empty queue, unparsable date-times, malformed used-node entries (not five
  non-negative integers, no cores), used-node entries beyond Eurora (a node id above its 64 nodes, more cores,
  GPUs, MICs or memory than its largest node has: the ``eurora`` multires preset) and jobs whose chunks need more
  of a resource than the whole machine, malformed request fields or app type, walltime not hh:mm or missing without a
  default, start before arrival; then the canonical rules of ``schema.validate_jobs`` (negative run time, ...).
* Jobs come back in queue order (submit time, job id).
"""

from wattsched.workload.eurora.instances import EURORA_SUFFIX, is_eurora_dir
from wattsched.workload.eurora.predictions import read_eurora_power_predictions
from wattsched.workload.eurora.reader import read_eurora

__all__ = ["EURORA_SUFFIX", "is_eurora_dir", "read_eurora", "read_eurora_power_predictions"]
