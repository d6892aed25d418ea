"""``python -m wattsched``: the same command line as ``wattsched``."""

from wattsched.cli.console_script import main

main(prog_name="wattsched")
