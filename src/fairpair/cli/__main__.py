"""``python -m fairpair.cli``: the same as the ``fairpair`` command."""

from fairpair.cli import main

main()
