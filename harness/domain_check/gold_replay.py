"""The gold plan, replayed on the engine as an agent's and user's calls would run: every gold
action runs without an error (the reference's grader logs and skips one that fails, so a broken
gold plan goes unnoticed there), the actions meet the task's own env assertions, and a second
replay from scratch ends in the same state (hashes) with the same outputs.

Each task's replay is handed back (`GoldRun`) for the checks that read its final state
(`id_refs`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_mcp.harness.domain_check.findings import Finding, error, warning
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode, ToolOutcome
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Action, Task
from tau_mcp.servers.engine.variants import Variant

#: How much of a failing tool's output a finding quotes.
QUOTED = 200


@dataclass
class GoldRun:
    """One task's gold replay: the episode after its gold actions (None: the initial state
    did not set up) and each action's outcome. `close()` once done reading the episode."""

    task: Task
    episode: Episode | None = None
    outcomes: list[ToolOutcome] = field(default_factory=list)

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()


def actions_of(task: Task) -> list[Action]:
    criteria = task.evaluation_criteria
    return list(criteria.actions or []) if criteria is not None else []


def failed(outcome: ToolOutcome) -> bool:
    """A call that raised, or a tool that answered with an error text (the discoverable-tool
    wrappers do: the reference records those as successful calls)."""
    return outcome.error or outcome.text.startswith("Error:")


class GoldReplayer:
    """Replays tasks' gold actions on fresh engine episodes of one domain (and retrieval
    config), with no cached starts, so the set-up is replayed too."""

    def __init__(self, domain: Domain, variant: Variant | None) -> None:
        self.domain, self.variant = domain, variant
        self._serial = 0

    def episode(self, task: Task) -> Episode:
        self._serial += 1
        return Episode(
            self.domain,
            f"domain-check-{self._serial}",
            task,
            use_start_cache=False,
            variant=self.variant,
        )

    @staticmethod
    def call(episode: Episode, action: Action) -> ToolOutcome:
        side = "user" if action.requestor == "user" else "agent"
        return episode.call(side, action.name, dict(action.arguments))

    def check(self, task: Task) -> tuple[GoldRun, list[Finding]]:
        run = GoldRun(task)
        try:
            first = self.episode(task)
        except Exception as exc:  # noqa: BLE001 - a domain's own set-up code may raise anything
            why = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
            return run, [
                error("initial-state", f"the initial state does not set up: {why}", task.id)
            ]
        run.episode = first
        actions = actions_of(task)
        findings: list[Finding] = []
        try:
            for index, action in enumerate(actions):
                outcome = self.call(first, action)
                run.outcomes.append(outcome)
                if failed(outcome):
                    findings.append(
                        error(
                            "gold-action",
                            f"gold action {index} fails: {_quote(outcome.text)}",
                            task.id,
                            action.name,
                        )
                    )
            findings += self._assertions(task, first)
            findings += self._determinism(task, first, run.outcomes)
        except Exception as exc:  # noqa: BLE001 - a domain's hooks (sync, hash view) may raise
            message = f"replaying the gold actions broke the engine: {type(exc).__name__}: {exc}"
            findings.append(error("gold-action", message, task.id))
        return run, findings

    def _assertions(self, task: Task, episode: Episode) -> list[Finding]:
        criteria = task.evaluation_criteria
        raw = (
            [a.model_dump(mode="json") for a in (criteria.env_assertions or [])] if criteria else []
        )
        findings = []
        for assertion, result in zip(raw, episode.check_assertions(raw), strict=True):
            if result["met"] is True:
                continue
            call = _call_text(assertion["func_name"], assertion.get("arguments") or {})
            why = f" ({result['error']})" if result.get("error") else ""
            findings.append(
                error(
                    "gold-assertions",
                    f"after the gold actions the env assertion {call} is not met{why}",
                    task.id,
                    assertion["func_name"],
                )
            )
        return findings

    def _determinism(
        self, task: Task, first: Episode, outcomes: list[ToolOutcome]
    ) -> list[Finding]:
        second = self.episode(task)
        try:
            again = [self.call(second, action) for action in actions_of(task)]
            same_state = second.hashes() == first.hashes()
        finally:
            second.close()
        if not same_state:
            return [self._divergence(task)]
        actions = actions_of(task)
        return [
            warning(
                "determinism",
                f"gold action {index}'s output differs between two replays from scratch",
                task.id,
                actions[index].name,
            )
            for index, (one, two) in enumerate(zip(outcomes, again, strict=True))
            if one.text != two.text
        ]

    def _divergence(self, task: Task) -> Finding:
        """Where two replays first part: after the set-up, or after which action (found by
        replaying twice more, comparing the hashes at every step)."""
        one, two = self.episode(task), self.episode(task)
        try:
            if one.hashes() != two.hashes():
                return error(
                    "determinism",
                    "two set-ups of the initial state from scratch end in different states",
                    task.id,
                )
            for index, action in enumerate(actions_of(task)):
                self.call(one, action)
                self.call(two, action)
                if one.hashes() != two.hashes():
                    return error(
                        "determinism",
                        f"two replays of the gold actions part after action {index}: the tool "
                        "depends on more than its arguments and the state (randomness, the clock)",
                        task.id,
                        action.name,
                    )
        finally:
            one.close()
            two.close()
        return error(
            "determinism",
            "two replays of the gold actions from scratch end in different states",
            task.id,
        )


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTED else flat[: QUOTED - 3] + "..."


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
