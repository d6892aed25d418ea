"""``python -m wattsched.cli``: the same app as the ``wattsched`` command."""

from wattsched.cli.console_script import main

main()
