"""The ``wattsched`` command line: one typer app whose verbs mirror the Python API.

One module per sub-app (``generate``, ``predict``, ``data``, ``dataset``, ``campaign``, ``eamc``, ``rmap``) or
root command (``simulate``, ``reproduce``); :mod:`wattsched.cli.root_app` assembles them and holds ``policies`` and
``demo``; :mod:`wattsched.cli.common` has the consoles, the one-line error and the shared parsing and tables.
Each command parses its options, calls the API and prints. The commands import the toolkit inside their
bodies: at module top, every start (``wattsched --help`` included) would load numba's compiled code, SciPy,
pydantic and scikit-learn.
"""

from wattsched.cli.root_app import app

__all__ = ["app"]
