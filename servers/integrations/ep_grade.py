"""Our grade of an Eval Protocol session, computed where the session lives: on the server.

The server holds the episode's databases and sees every tool call the agent makes on the EP
path, so it grades DB, ENV_ASSERTION and ACTION exactly as `tau-harness` does (the same
`Grader`). COMMUNICATE (when the task lists facts to communicate) and NL_ASSERTION (when it
lists statements) are judged on the agent's *text*, which never reaches the server: in Eval
Protocol the simulated user runs in the client. Those components are left out of the server's
reward and named in `needs_conversation`; `tau-harness evaluate` on the exported trajectory
grades them.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode

if TYPE_CHECKING:
    from tau_mcp.grading import Grader

SERVER_BASES = ("DB", "ENV_ASSERTION", "ACTION")

# The agent tool calls each EP episode received, in order. Weak keys: when a session restarts,
# its old episode (and its log) goes away with it.
_CALLS: weakref.WeakKeyDictionary[Episode, list[tuple[str, dict[str, Any]]]] = (
    weakref.WeakKeyDictionary()
)


def session_calls(episode: Episode) -> list[tuple[str, dict[str, Any]]]:
    return list(_CALLS.get(episode, ()))


def note_call(episode: Episode, name: str, arguments: dict[str, Any]) -> None:
    """Log one tool call made on an EP episode (see `tau_mcp.servers.integrations.ep_calls`)."""
    _CALLS.setdefault(episode, []).append((name, arguments))


class _LiveEpisodes:
    """The grader's view of the server's own live episodes: the episode is its own handle."""

    async def hashes(self, episode: Episode) -> dict[str, str | None]:
        with episode.lock:
            return episode.hashes()

    async def state(self, episode: Episode) -> dict[str, Any]:
        """The episode's databases, for the diagnosis of a failed DB check."""
        with episode.lock:
            return episode.snapshot()

    async def changed_records(self, episode: Episode) -> dict[str, Any]:
        """What the episode changed, record by record: the diagnosis's evidence when cheap."""
        with episode.lock:
            return episode.changed_records()

    async def assertions(self, episode: Episode, assertions: list[dict]) -> list[dict]:
        return episode.check_assertions(assertions)


class SessionGrader:
    """One grader per domain, so each task's gold state is computed once per server."""

    def __init__(self) -> None:
        self.live = _LiveEpisodes()
        self._graders: weakref.WeakKeyDictionary[Domain, Grader] = weakref.WeakKeyDictionary()

    def _grader(self, domain: Domain) -> Grader:
        from tau_mcp.grading import Grader  # with the first grade: the server starts without it

        grader = self._graders.get(domain)
        if grader is None:
            grader = self._graders[domain] = Grader(self.live, domain, judge=None)
        return grader

    async def grade(self, episode: Episode) -> dict[str, Any] | None:
        """The session's grade in the reference's reward_info layout plus `needs_conversation`
        and `graded_on_server`; None for a session without a task."""
        task = episode.task
        if task is None:
            return None
        from tau_mcp.conversation.messages import ChatMessage, ToolCall, history_messages

        messages = history_messages(task)
        calls = session_calls(episode)
        if calls:
            tool_calls = [
                ToolCall(id=f"ep_{i}", name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(calls)
            ]
            messages.append(ChatMessage(role="assistant", tool_calls=tool_calls))
        info = await self._grader(episode.domain).grade(task, messages, "agent_stop", episode)
        return server_side(info, task)


def server_side(info: dict[str, Any], task) -> dict[str, Any]:
    """Restrict a full grade to what the server can know: drop the components that need the
    agent's words, and recompute the reward over the rest."""
    criteria = task.evaluation_criteria
    basis = list(info.get("reward_basis") or [])
    pending = []
    if criteria is not None:
        if "COMMUNICATE" in basis and criteria.communicate_info:
            pending.append("COMMUNICATE")
        if "NL_ASSERTION" in basis and criteria.nl_assertions:
            pending.append("NL_ASSERTION")
    breakdown = info.get("reward_breakdown")
    if breakdown is None:
        reward = float(info.get("reward") or 0.0)
    else:
        breakdown = {k: v for k, v in breakdown.items() if k not in pending}
        reward = math.prod(breakdown.values()) if breakdown else 1.0
    graded = {**info, "reward": reward, "reward_breakdown": breakdown}
    if "COMMUNICATE" in pending:
        graded["communicate_checks"] = None
    graded["nl_assertions"] = None
    graded["needs_conversation"] = pending
    graded["graded_on_server"] = [b for b in basis if b not in pending]
    return graded
