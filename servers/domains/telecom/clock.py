"""The telecom world's fixed clock: every episode lives on the same day, so results replay."""

from __future__ import annotations

import datetime

# Day new customer records default to when no creation time is given.
ACCOUNT_EPOCH = datetime.date(2025, 1, 1)

# "Today" in the telecom scenarios (EST).
TODAY = datetime.date(2025, 2, 25)


def first_of_next_month(day: datetime.date) -> datetime.date:
    return (day.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)


def last_of_month(first: datetime.date) -> datetime.date:
    """Last day of the month that starts on `first`."""
    return first_of_next_month(first) - datetime.timedelta(days=1)
