"""Slurm ``sacct`` reader: ``--parsable2`` (``-P``) text or ``--json`` output into the canonical job table.

One module per concern: :mod:`.reader` (:func:`read_sacct`, the rules common to both forms), :mod:`.parsable`
(``-P`` text: records, free text, steps), :mod:`.json` (``--json``), :mod:`.clock` (local times, DST) and
:mod:`.units` (durations, TRES, memory, energy); :mod:`.record` holds what the parsers share.

sacct is the one history every Slurm site has, so this reader lets the toolkit run on a site's own jobs. Both forms
give the same columns; the JSON form is preferred (epoch times, no delimiter or time-zone traps).

Conventions (each is also recorded in ``provenance.conventions``):

* Form: a file whose first non-blank character is ``{`` is ``--json`` (the ``jobs`` array); anything else is
  ``-P`` text whose first non-blank line is the header. Header names are case-insensitive, in any order and subset;
  ``delimiter`` may be several characters (``--delimiter='^|^'``). ``.gz`` is read transparently.
* Times: ``YYYY-MM-DDTHH:MM:SS`` is the sacct client's local time in ``timezone`` (default UTC) and becomes epoch
  seconds; an ISO time with an offset (``SLURM_TIME_FORMAT=%FT%T%z``) uses its offset; bare digits
  (``SLURM_TIME_FORMAT=%s``) are epoch seconds; ``Unknown``, ``None`` and empty are null (JSON: 0 is null).
  A local time in the DST fall-back hour is ambiguous: it is read as the ``ambiguous`` occurrence (default the
  earlier) and counted; a time in the spring-forward gap (sacct never prints one) uses the pre-transition offset
  and is counted.
* ``job_id`` = ``JobIDRaw`` (integer; array tasks and het-job components have their own raw ids), else ``JobID``
  where ``123+0`` (het leader) is 123, while ``123+1``, ``123_4`` and ``123_[1-5]`` are rejected (no integer id:
  export ``JobIDRaw``). ``JobID`` is kept as ``sacct_job_id`` when present. Any other non-integer id is a reject.
* Steps (``123.batch``, ``123.0``, ``123.extern``) fold into their job line and are only counted. A job with steps
  but no allocation line is built from its steps: earliest Submit/Start, latest End, largest Elapsed, NNodes, NCPUS
  and energy (the extern step spans the allocation), the other fields from its first step.
* ``submit_time`` = Submit (epoch s; ``provenance.unix_start_time`` 0 and ``timezone`` "UTC", as for PM100).
  ``trace_start_time`` / ``trace_end_time`` = Start / End (epoch s), ``sacct_eligible_time`` = Eligible.
* ``walltime`` = ``TimelimitRaw`` × 60 (minutes), else ``Timelimit`` (``[D-]HH:MM:SS``); ``UNLIMITED``,
  ``Partition_Limit`` or empty are unknown: rejected ("walltime unknown") unless ``walltime_fallback`` is a number
  of seconds or ``"runtime"``. JSON ``time.limit`` is minutes, plain or ``{"set", "infinite", "number"}``.
* ``runtime`` = ``ElapsedRaw`` (s), else ``Elapsed``, else End − Start. End − Start of local times depends on
  the zone (a run across a DST change gains or loses its shift): when no ``timezone`` is given and a run time was
  computed so, the reader says which zone it assumed (UTC) in one line: an ``InputWarning`` (the command line
  prints it as a ``warning:``), also kept in the conventions. Elapsed, epoch and offset-qualified times do not
  depend on a zone.
* Never-started jobs (no Start: cancelled while pending) are rejected, like SWF's unknown run time; started jobs
  with no End (still running) are rejected as "not ended". Both name the field and the state.
* ``size`` = ``NNodes`` (``size_unit="nodes"``) or ``NCPUS`` (``"processors"``), falling back on AllocTRES
  ``node=`` / ``cpu=``. ``cores`` = NCPUS (or AllocCPUS, or TRES ``cpu=``). ``gpus`` = AllocTRES, else ReqTRES,
  ``gres/gpu=N`` (typed ``gres/gpu:<type>=N`` summed when the untyped one is absent). ``mem`` (GB, base 1024) =
  TRES ``mem=`` (unit suffix, MB when bare), else ``ReqMem`` (``16G`` total, or the older ``4000Mc`` per CPU ×
  NCPUS and ``16Gn`` per node × NNodes). ``energy`` (J) = ``ConsumedEnergyRaw``, else TRES ``energy=``; 0 (no
  energy plugin) and NO_VAL sentinels are null.
* ``user_id`` = ``UID``, else a stable code of ``User`` (48-bit BLAKE2b, the same in every file); ``group_id`` =
  ``GID``, else a code of ``Group``. ``name`` = JobName, ``queue`` = ``partition`` = Partition, ``state`` = State
  with ``by <uid>`` and a trailing ``+`` removed (JSON: the first entry of ``state.current``).
* Kept with a ``sacct_`` prefix: job_id (JobID text), user, qos, account, exit_code, nodelist, eligible_time.
* Free text (JobName, Comment, WorkDir, …) may hold the delimiter or newlines. A record with too many fields is
  re-joined into the free-text column when the header has exactly one free-text field; otherwise it is rejected. A
  physical line starts a new record when it alone has at least as many fields as the header; otherwise it continues
  a record that is still short of fields, and after a complete record it continues it unless its id field looks
  like a job id (a newline in a last-column free text). Blank lines are kept only inside a record. So a truncated
  line followed by a short line is joined with it; put free text in the middle of the header, not last, if it may
  hold newlines followed by digits.
* Rejects (one row per record; ``line`` = first physical line of the record, JSON: 1-based index in ``jobs``;
  ``raw`` = the record text): field count, unparsable value (names the header field), id rules above, never
  started, not ended, walltime unknown, then the canonical rules of ``schema.validate_jobs`` (with ``-D``, a
  requeued job's later records are duplicates).
* Jobs come back in queue order (submit time, job id).
"""

from wattsched.workload.sacct.parsable import FREE_TEXT_FIELDS
from wattsched.workload.sacct.reader import is_sacct_file, read_sacct
from wattsched.workload.sacct.record import user_code

__all__ = ["FREE_TEXT_FIELDS", "is_sacct_file", "read_sacct", "user_code"]
