"""``python -m mgapsp``: the same command line as ``mgapsp``."""

from .cli import main

main(prog_name="mgapsp")
