"""The errors the command line catches by name, in a module that imports nothing heavy.

They are defined here, not beside the code that raises them (``core.schema``, ``core.store``, which re-export
them), so that importing the CLI to print ``--help`` does not import polars and numpy just to name two
exception classes in ``except`` clauses (measured: polars alone is ~75 ms of a 0.3 s ``--help``).
"""

from __future__ import annotations


class WorkloadError(ValueError):
    """Input that cannot be read at all (missing file, empty file, wrong format), or rejects under ``strict``."""


class CampaignError(ValueError):
    """A campaign that cannot be run or read (a bad spec, a directory holding another campaign), with the file
    and the field."""


class InputWarning(UserWarning):
    """An input read, or an option taken, on an assumption the user must hear about, though nothing is wrong enough
    to refuse: a time zone assumed for local times that run times depend on, a power cap above what the machine can
    draw. Python shows it as a warning; the command line prints it as one ``warning:`` line
    (``cli/command_group.py``), once per message in a command."""
