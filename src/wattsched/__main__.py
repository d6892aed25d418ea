"""``python -m wattsched``: the same command line as ``wattsched``."""

from wattsched.cli import app

app(prog_name="wattsched")
