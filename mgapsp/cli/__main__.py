"""``python -m mgapsp.cli``: the command line, as ``mgapsp``."""

from . import main

main()
