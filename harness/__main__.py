"""`python -m harness ...` is `tau-harness ...`."""

from harness.cli import main

main()
