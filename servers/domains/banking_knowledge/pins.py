"""What makes a debit card PIN acceptable."""

from __future__ import annotations

from typing import Any

# Runs of four consecutive digits, up or down.
SEQUENTIAL = {"0123456789"[i : i + 4] for i in range(7)} | {
    "9876543210"[i : i + 4] for i in range(7)
}


def pin_problem(pin: Any) -> str | None:
    """Why `pin` is refused, or None when it is fine."""
    if not pin or not pin.isdigit() or len(pin) != 4:
        return "PIN must be exactly 4 digits."
    if pin in SEQUENTIAL:
        return "PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN."
    if len(set(pin)) == 1:
        return "PIN cannot be all the same digit (e.g., 1111). Please choose a more secure PIN."
    return None
