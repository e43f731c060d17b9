"""Scoring a finished simulation the way the reference does, and explaining its failures: the
grader, the NL judge, the trajectory checks, the gold state, the diagnosis of a failure and the
reference's LLM review.

A peer below the server and the harness: it imports the engine and the conversation primitives
only, so the server (its Eval Protocol grade) and the harness (runs, re-grades) share one grader.
"""

from tau_mcp.grading.grader import Grader
from tau_mcp.grading.judge import Judge

__all__ = ["Grader", "Judge"]
