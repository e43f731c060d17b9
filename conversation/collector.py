"""Pausing Python's cyclic garbage collector while a process builds what it keeps.

Importing a large package (litellm: ~435,000 objects) or loading a domain's data allocates
objects that live as long as the process. The collector, which runs after every so many
allocations, meanwhile runs again and again, each full run walking every object made so far:
~0.6 s of litellm's ~2.2 s import. Paused, it walks nothing; frozen afterwards (`gc.freeze`),
those objects are also left out of every later collection (else the first full run after the
pause walks them all once).

Freezing is for a process that is ours: the `tau-harness` program turns it on. In someone
else's process (a training loop that imports our integrations), the objects alive when a
pause ends would never be collected if they later became cyclic garbage, so there a pause
only pauses.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze = False


def freeze_after_pauses(on: bool = True) -> None:
    """Freeze what exists at the end of each pause (for a process that is ours)."""
    global _freeze
    _freeze = on


@contextmanager
def paused() -> Iterator[None]:
    """The collector off meanwhile (nested pauses are one pause), then frozen if asked."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if _freeze:
                gc.freeze()
            gc.enable()
