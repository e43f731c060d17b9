"""Child processes a test interrupts with SIGINT.

A process started in the background by a non-interactive shell (`pytest ... &` in a script, a
CI runner's job) ignores SIGINT, and its children inherit that: a test's `send_signal(SIGINT)`
would then do nothing and the test time out or fail. `interruptible` is a `preexec_fn` that
gives the child SIGINT's default action back, so the Ctrl-C tests test Ctrl-C wherever pytest
runs.
"""

from __future__ import annotations

import signal
from collections.abc import Callable


def interruptible(then: Callable[[], None] | None = None) -> Callable[[], None]:
    """A `preexec_fn`: SIGINT at its default in the child, then `then` (another preexec)."""

    def prepare() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if then is not None:
            then()

    return prepare
