"""``python -m wattsched``: the same command line as ``wattsched``."""

from wattsched.cli.entry import main

main(prog_name="wattsched")
