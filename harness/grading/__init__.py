"""Scoring a finished simulation the way the reference does, from the server's snapshots."""

from harness.grading.grader import Grader
from harness.grading.judge import Judge

__all__ = ["Grader", "Judge"]
