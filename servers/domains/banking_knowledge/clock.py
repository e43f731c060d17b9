"""The banking scenarios' fixed moment: every task happens at 03:40 EST on 11/14/2025."""

from __future__ import annotations

from datetime import datetime

NOW = datetime(2025, 11, 14, 3, 40, 0)
TODAY = NOW.strftime("%m/%d/%Y")  # the date format every banking record uses
CURRENT_TIME = "2025-11-14 03:40:00 EST"
