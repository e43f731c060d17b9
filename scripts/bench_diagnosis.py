"""What grading a failed simulation costs beyond a passed one: the diagnosis and its DB evidence.

    python scripts/bench_diagnosis.py [--domain airline] [--data-dir DIR] [--rounds 3]

For every task with gold writes, a trajectory that fails its DB check (the gold plan with its
last write's first argument changed, or the write left out) is played on the server app
in-process, reached over HTTP as `tau-harness run` reaches it. Then, per failed simulation, CPU
milliseconds (`time.process_time`, best of `--rounds`) of:

- the DB evidence from changed records (`Grader._db_diff`: `GET .../changes` and
  `tau_mcp.grading.db_diff.diff_changes`, the gold changes cached per task as in a run);
- the DB evidence from whole snapshots (`GET .../state` and the gold episode's snapshot through
  `diff_states`: what the grader did before, and still does for telecom);
- `tau_mcp.grading.diagnosis.diagnose` (actions, closest calls, ending, categories);
- the whole `Grader.grade` of the failed simulation.

Both evidence paths are checked to give the same rows.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" for p in ROOT.parents[:2] if (p / "shared").is_dir()), ROOT.parent)
FAILED_DB = {"db_check": {"db_match": False, "db_reward": 0.0}}
cpu = time.process_time


def failing_calls(task, tool_kinds: dict[str, str]) -> list[dict] | None:
    """The gold plan with its last write bent: first argument changed, else left out."""
    actions = list((task.evaluation_criteria.actions if task.evaluation_criteria else None) or [])
    writes = [i for i, a in enumerate(actions) if tool_kinds.get(a.name) == "write"]
    if not writes:
        return None
    calls = [
        {"requestor": a.requestor, "name": a.name, "arguments": dict(a.arguments or {})}
        for a in actions
    ]
    last = calls[writes[-1]]
    strings = [k for k, v in last["arguments"].items() if isinstance(v, str)]
    if strings:
        last["arguments"][strings[0]] += "_x"
    else:
        calls.pop(writes[-1])
    return calls


def messages_of(calls: list[dict], outputs: list[dict | None]) -> list:
    from tau_mcp.conversation.messages import ChatMessage, ToolCall, ToolMessage

    messages: list = [ChatMessage(role="assistant", content="Hi! How can I help you today?")]
    for i, (call, out) in enumerate(zip(calls, outputs, strict=True)):
        role = "user" if call["requestor"] == "user" else "assistant"
        tool_call = ToolCall(id=f"c{i}", **call)
        messages.append(ChatMessage(role=role, tool_calls=[tool_call]))
        result = out or {"output": "", "error": False}
        messages.append(
            ToolMessage(
                id=f"c{i}",
                content=result["output"],
                requestor=call["requestor"],
                error=result["error"],
            )
        )
    messages.append(ChatMessage(role="user", content="Thanks. ###STOP###"))
    for index, message in enumerate(messages):
        message.turn_idx = index
    return messages


def best(func, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = cpu()
        func()
        times.append(cpu() - started)
    return min(times)


async def main_async(args: argparse.Namespace) -> None:
    from tau_mcp.grading import Grader
    from tau_mcp.grading.db_diff import diff_states
    from tau_mcp.grading.diagnosis import diagnose
    from tau_mcp.grading.gold import gold_episode
    from tau_mcp.harness.backends import EpisodeOptions
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.servers.domains.registry import load_domains

    domain = load_domains([args.domain], args.data_dir)[args.domain]
    domain.warm()
    backend = await in_process_backend({args.domain: domain})
    grader = Grader(backend, domain)
    # banking_knowledge's default retrieval config needs a key; the state does not depend on it
    options = EpisodeOptions("no_knowledge") if domain.spec.variants is not None else None
    figures: dict[str, list[float]] = {"changes": [], "snapshots": [], "diagnose": [], "grade": []}
    rows = 0
    try:
        for task in domain.tasks.values():
            calls = failing_calls(task, grader.tool_kinds)
            if calls is None:
                continue
            ref = await backend.create_episode(args.domain, task.id, options)
            outputs = await backend.replay(ref, calls, only_mutating=False)
            messages = messages_of(calls, outputs)
            info = await grader.grade(task, messages, "user_stop", ref)  # warms the gold caches
            if (info.get("db_check") or {}).get("db_match") is not False:
                await backend.delete_episode(ref)
                continue

            async def by_changes(task=task, ref=ref):
                return await grader._db_diff(task, FAILED_DB, ref)

            async def by_snapshots(task=task, ref=ref):
                got = await backend.state(ref)
                gold = gold_episode(domain, task)
                expected = gold.snapshot()
                view = domain.spec.hash_view
                if view is not None:
                    got, expected = view(gold, got), view(gold, expected)
                return diff_states(got, expected)

            new, old = await by_changes(), await by_snapshots()
            if new != old:
                sys.exit(f"error: task {task.id}: the two evidence paths differ")
            rows += len(new[0])
            for key, factory in (("changes", by_changes), ("snapshots", by_snapshots)):
                times = []
                for _ in range(args.rounds):
                    started = cpu()
                    await factory()
                    times.append(cpu() - started)
                figures[key].append(min(times))

            def diagnosed(task=task, messages=messages, info=info, new=new):
                return diagnose(task, messages, "user_stop", info, grader.tool_kinds, new)

            figures["diagnose"].append(best(diagnosed, args.rounds))
            times = []
            for _ in range(args.rounds):
                started = cpu()
                await grader.grade(task, messages, "user_stop", ref)
                times.append(cpu() - started)
            figures["grade"].append(min(times))
            await backend.delete_episode(ref)
    finally:
        await backend.close()
    n = len(figures["grade"])
    print(f"{args.domain}: {n} failed simulations (DB check failed), {rows} DB rows in all")
    labels = {
        "changes": "DB evidence as the grader reads it "
        + ("(its snapshots)" if domain.spec.hash_view else "(GET /changes + diff_changes)"),
        "snapshots": "DB evidence from whole snapshots (GET /state + gold snapshot + diff)",
        "diagnose": "diagnose() (actions, closest calls, ending, category)",
        "grade": "Grader.grade of the failed simulation, all in",
    }
    for key, label in labels.items():
        values = [1000 * v for v in figures[key]]
        if values:
            print(
                f"  {label}: mean {statistics.fmean(values):.3f} ms, "
                f"p50 {statistics.median(values):.3f} ms, max {max(values):.3f} ms CPU"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--data-dir", default=str(SHARED / "tau2-data"))
    parser.add_argument("--rounds", type=int, default=3, help="best of this many timings")
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
