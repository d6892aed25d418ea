"""``python -m wattsched.cli``: the same app as the ``wattsched`` command."""

from wattsched.cli.entry import main

main()
