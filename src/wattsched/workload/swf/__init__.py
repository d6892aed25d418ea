"""Standard Workload Format (SWF v2.2) reader and writer.

SWF is the Parallel Workloads Archive's format: one job per line, 18 whitespace-separated numeric fields,
``-1`` for "unknown", header comments ``; Key: value``.
Spec: https://www.cs.huji.ac.il/labs/parallel/workload/swf.html.

Conventions that turn SWF fields into canonical columns (each is also recorded in ``provenance.conventions``):

* ``size`` = requested processors (field 8) if > 0, else allocated processors (field 5); the unit is
  "processors".
* ``walltime`` = requested time (field 9); when it is missing (≤ 0) the walltime is the job's run time
  (field 4).
* ``runtime`` = run time (field 4); ``-1`` (unknown) becomes null and is rejected. The engine runs
  ``min(runtime, walltime)``.
* machine size = the ``machine_size`` argument, else header ``MaxProcs``, else ``MaxNodes``; when none
  exists it stays None and no size-versus-machine rejects are made.
* Submit times are kept as given (float seconds, usually relative to the log start); absolute time =
  ``UnixStartTime`` + submit.
* ``user_id`` (12), ``group_id`` (13), ``app_id`` (14), ``queue`` (15), ``partition`` (16) are null for
  ``-1``; the last three are strings. ``state`` is COMPLETED / FAILED / CANCELLED for status 1 / 0 / 5,
  else null.
* The raw fields without a canonical home are kept as ``swf_*`` columns (wait, alloc_procs, avg_cpu,
  used_mem, req_procs, req_time, req_mem, status, preceding_job, think_time), with ``-1`` (unknown) as null.
* Rejected (one row each, with the 1-based file line, job id if parsable, field, reason and raw text):
  fewer than 18 fields; a non-numeric token in one of the 18 fields; a non-integer value in an integer
  field; negative submit time; unknown or negative run time; size ≤ 0 or unknown; size > machine size;
  duplicate job id.
* Comment lines (first non-blank character ``;``) and blank lines are skipped; fields after the 18th are
  ignored (the lines that had them are counted in the conventions).
* Jobs come back in queue order (submit time, job id) whatever the line order.

One module per concern: :mod:`.reader` (:func:`read_swf`), :mod:`.tokenizer` (the numba pass over the bytes and
the Python path for the lines it flags), :mod:`.header` (``; Key: value`` comments), :mod:`.fields` (the 18
fields and the kept raw columns) and :mod:`.writer` (:func:`write_swf`).
"""

from wattsched.workload.swf.fields import SWF_EXTRA_COLUMNS, SWF_FIELDS
from wattsched.workload.swf.reader import read_swf
from wattsched.workload.swf.writer import write_swf

__all__ = ["SWF_EXTRA_COLUMNS", "SWF_FIELDS", "read_swf", "write_swf"]
