"""Where the shared data folder is when a command is not told (``--data-dir``): one lookup for every command.

The papers' inputs (traces, Eurora instances, the EAMC coefficients, Cab measurements) sit in one folder,
``../shared/data`` beside a checkout. ``reproduce`` and ``eamc`` used to look in different places under
different variables (``WATTSCHED_DATA`` and ``WATTSCHED_SHARED_DATA``, issue 30): now both, and every other
command with a ``--data-dir``, ask :func:`shared_data_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "OLD_DATA_ENV", "shared_data_dir"]

#: The variable that names the shared data folder.
DATA_ENV = "WATTSCHED_DATA"
#: Its old name, still read when ``WATTSCHED_DATA`` is not set (the EAMC commands and the tests used it).
OLD_DATA_ENV = "WATTSCHED_SHARED_DATA"


def shared_data_dir(checkout: Path | None = None) -> Path | None:
    """``$WATTSCHED_DATA``, else ``$WATTSCHED_SHARED_DATA``, else ``../shared/data`` or ``shared/data`` from the
    working directory, else (given a ``checkout`` folder, as the benchmarks do) ``shared/data`` beside it, else
    None. A variable set to the empty string counts as not set."""
    for name in (DATA_ENV, OLD_DATA_ENV):
        value = os.environ.get(name)
        if value:
            return Path(value)
    beside = [checkout.parent / "shared" / "data"] if checkout is not None else []
    for cand in (Path("../shared/data"), Path("shared/data"), *beside):
        if cand.is_dir():
            return cand.resolve()
    return None
