"""Build the grading-agreement fixture (tests/fixtures/reference_grading.json).

Two steps, with the reference's grader run in between by a separate scratch script that is not
part of this repository (see docs/harness.md, "Differences from the reference"):

    # 1. oracle trajectories, then perturbed variants of them
    tau-harness run --domain airline --agent oracle --user scripted --judge-llm none \\
        --save-to /tmp/grading/base_airline.json            # (and mock, retail, telecom)
    python scripts/make_grading_fixture.py perturb --base /tmp/grading/base_airline.json \\
        --domain airline --out /tmp/grading/pert_airline.json

    # 2. grade pert_<domain>.json with the reference into ref_<domain>.json
    #    ({simulation id: reference reward_info}), then keep a representative subset
    python scripts/make_grading_fixture.py fixture --dir /tmp/grading \\
        --out tests/fixtures/reference_grading.json

Perturbations are deterministic (seeded). Every variant keeps the message structure the
reference requires (each tool call answered by its tool message, in order), because the
reference refuses anything else.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DOMAINS = ("mock", "airline", "retail", "telecom")
KEEP_MESSAGE_FIELDS = ("role", "content", "tool_calls", "id", "requestor", "error")


# --- helpers ----------------------------------------------------------------------------------
def mutating_tools(domain: str) -> set[str]:
    from tau_mcp.servers.domains.registry import domain_spec

    spec = domain_spec(domain)
    names = set()
    for toolkit in (spec.agent_tools, spec.user_tools):
        if toolkit is not None:
            names |= {n for n, s in toolkit.specs.items() if s.mutates}
    return names


def call_positions(messages: list[dict], names: set[str] | None = None, requestor=None):
    """(message index, call index) of every tool call, optionally only of the given tools."""
    out = []
    for i, m in enumerate(messages):
        for j, call in enumerate(m.get("tool_calls") or []):
            if names is not None and call["name"] not in names:
                continue
            if requestor is not None and call.get("requestor", "assistant") != requestor:
                continue
            out.append((i, j))
    return out


def tool_message_index(messages: list[dict], i: int, call_id: str) -> int:
    for k in range(i + 1, len(messages)):
        if messages[k].get("role") == "tool" and messages[k].get("id") == call_id:
            return k
    raise ValueError(f"no tool message for call {call_id}")


def drop_call(messages: list[dict], i: int, j: int) -> list[dict]:
    messages = copy.deepcopy(messages)
    call = messages[i]["tool_calls"][j]
    k = tool_message_index(messages, i, call["id"])
    del messages[k]
    del messages[i]["tool_calls"][j]
    if not messages[i]["tool_calls"]:
        del messages[i]
    return messages


def insert_call(messages: list[dict], at: int, call: dict, output: str, error: bool) -> list:
    role = "user" if call.get("requestor") == "user" else "assistant"
    return (
        messages[:at]
        + [
            {"role": role, "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "id": call["id"],
                "content": output,
                "requestor": call.get("requestor", "assistant"),
                "error": error,
            },
        ]
        + messages[at:]
    )


def changed_value(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + rng.choice([1, 2, 5]) if value == value else value
    if isinstance(value, str):
        return value + "X" if rng.random() < 0.5 else value[:-1] + "9" if value else "X"
    if isinstance(value, list):
        return value[:-1] if value else ["X"]
    if isinstance(value, dict):
        return {k: changed_value(v, rng) for k, v in value.items()}
    return "X"


def redact(text: str, needle: str) -> str:
    low, n = text.lower(), needle.lower()
    out, start = [], 0
    while True:
        k = low.find(n, start)
        if k < 0:
            break
        out.append(text[start:k] + "[redacted]")
        start = k + len(n)
    out.append(text[start:])
    return "".join(out)


# --- perturbations ----------------------------------------------------------------------------
def variants(sim: dict, task: dict, writes: set[str], rng: random.Random) -> list:
    """(label, messages, termination reason) for the perturbed copies of one simulation."""
    msgs = sim["messages"]
    end = sim["termination_reason"]
    history = len(((task.get("initial_state") or {}).get("message_history")) or [])
    out: list[tuple[str, list[dict], str]] = [("base", msgs, end)]
    criteria = task.get("evaluation_criteria") or {}

    def own(positions):
        return [(i, j) for i, j in positions if i >= history]

    write_calls = own(call_positions(msgs, writes))
    if write_calls:
        i, j = rng.choice(write_calls)
        out.append(("drop_write", drop_call(msgs, i, j), end))
        i, j = rng.choice(write_calls)
        changed = copy.deepcopy(msgs)
        args = changed[i]["tool_calls"][j]["arguments"]
        if args:
            key = rng.choice(sorted(args))
            args[key] = changed_value(args[key], rng)
            out.append(("change_arg", changed, end))
        i, j = rng.choice(write_calls)
        call = copy.deepcopy(msgs[i]["tool_calls"][j])
        k = tool_message_index(msgs, i, call["id"])
        call["id"] = f"{call['id']}_again"
        out.append(("repeat_write", insert_call(msgs, k + 1, call, "{}", False), end))
        if call["arguments"]:
            key = rng.choice(sorted(call["arguments"]))
            call = copy.deepcopy(call)
            call["id"] += "_wrong"
            call["arguments"][key] = changed_value(call["arguments"][key], rng)
            out.append(("extra_wrong_write", insert_call(msgs, k + 1, call, "{}", False), end))
        i, j = rng.choice(write_calls)
        flipped = copy.deepcopy(msgs)
        c = flipped[i]["tool_calls"][j]
        k = tool_message_index(flipped, i, c["id"])
        other = "user" if c.get("requestor", "assistant") == "assistant" else "assistant"
        c["requestor"] = other
        flipped[k]["requestor"] = other
        out.append(("swap_requestor", flipped, end))
    user_writes = own(call_positions(msgs, writes, requestor="user"))
    if user_writes:
        i, j = rng.choice(user_writes)
        out.append(("drop_user_write", drop_call(msgs, i, j), end))
        call = copy.deepcopy(msgs[i]["tool_calls"][j])
        k = tool_message_index(msgs, i, call["id"])
        call["id"] = f"{call['id']}_twice"
        out.append(("repeat_user_write", insert_call(msgs, k + 1, call, "ok", False), end))
        i, j = rng.choice(write_calls)
        fewer = copy.deepcopy(msgs)
        args = fewer[i]["tool_calls"][j]["arguments"]
        if args:
            del args[rng.choice(sorted(args))]
            out.append(("drop_arg", fewer, end))
        i, j = rng.choice(write_calls)
        more = copy.deepcopy(msgs)
        more[i]["tool_calls"][j]["arguments"]["note"] = "extra"
        out.append(("extra_arg", more, end))
        floats = copy.deepcopy(msgs)
        touched = False
        for i, j in write_calls:
            args = floats[i]["tool_calls"][j]["arguments"]
            for key, value in args.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    args[key] = float(value)
                    touched = True
        if touched:
            out.append(("int_to_float", floats, end))
    for reason in ("max_steps", "too_many_errors", "user_stop", "agent_error"):
        if reason != end:
            out.append((f"end_{reason}", msgs, reason))
    infos = criteria.get("communicate_info") or []
    if infos:
        info = rng.choice(infos)
        redacted = copy.deepcopy(msgs)
        for m in redacted:
            if m.get("role") == "assistant" and m.get("content"):
                m["content"] = redact(m["content"], info)
        out.append(("no_communicate", redacted, end))
        shouted = copy.deepcopy(msgs)
        for m in shouted:
            if m.get("role") == "assistant" and m.get("content"):
                m["content"] = m["content"].upper()
        out.append(("communicate_upper", shouted, end))
        said_by_user = copy.deepcopy(redacted)
        said_by_user.insert(len(said_by_user) - 1, {"role": "user", "content": f"So {info}?"})
        out.append(("communicate_by_user_only", said_by_user, end))
        with_commas = copy.deepcopy(redacted)
        spaced = ",".join(info[k : k + 2] for k in range(0, len(info), 2))
        with_commas.insert(len(with_commas) - 1, {"role": "assistant", "content": f"({spaced})"})
        out.append(("communicate_with_commas", with_commas, end))
    blank = copy.deepcopy(msgs)
    blank.insert(len(blank) - 1, {"role": "assistant", "content": "   "})
    out.append(("blank_text", blank, end))
    if infos and write_calls:
        spoken = copy.deepcopy(redacted)
        i, j = write_calls[-1]
        spoken[i]["content"] = f"Noting: {rng.choice(infos)}"
        out.append(("communicate_in_tool_call_text", spoken, end))
    fake = {"id": "hallucinated_1", "name": "refund_everything", "arguments": {"all": True}}
    at = len(msgs) - 1
    out.append(
        (
            "hallucinated_tool",
            insert_call(msgs, at, fake, "Error: Tool 'refund_everything' not found.", True),
            end,
        )
    )
    reads = [
        p for p in own(call_positions(msgs)) if msgs[p[0]]["tool_calls"][p[1]]["name"] not in writes
    ]
    if reads:
        i, j = rng.choice(reads)
        out.append(("drop_read", drop_call(msgs, i, j), end))
    if write_calls and len(write_calls) > 1:
        stripped = msgs
        for i, j in sorted(write_calls, reverse=True):
            stripped = drop_call(stripped, i, j)
        out.append(("no_writes", stripped, end))
    return out


def perturb(base: Path, domain: str, out: Path, seed: int) -> None:
    document = json.loads(base.read_text())
    writes = mutating_tools(domain)
    tasks = {t["id"]: t for t in document.get("tasks") or []}
    if not tasks:
        from tau_mcp.servers.domains.registry import load_domains

        loaded = load_domains([domain])[domain]
        tasks = {k: t.model_dump(mode="json") for k, t in loaded.tasks.items()}
    rng = random.Random(seed)
    sims = []
    for sim in document["simulations"]:
        for label, messages, end in variants(sim, tasks[sim["task_id"]], writes, rng):
            sims.append(
                {
                    **{k: v for k, v in sim.items() if k != "reward_info"},
                    "id": f"{domain}:{sim['task_id']}:{label}",
                    "termination_reason": end,
                    "messages": messages,
                    "info": {"perturbation": label},
                }
            )
    document = {**document, "simulations": sims}
    out.write_text(json.dumps(document, indent=1))
    print(f"{domain}: {len(sims)} simulations -> {out}")


# --- fixture ----------------------------------------------------------------------------------
def strip_message(m: dict) -> dict:
    """Keep what grading reads. User messages and tool outputs are elided: no grading rule
    reads them, and they would repeat the data's task texts and database records."""
    kept = {k: m[k] for k in KEEP_MESSAGE_FIELDS if k in m and m[k] is not None}
    if m.get("role") == "tool":
        kept["content"] = "(tool output elided)"
    elif m.get("role") == "user" and kept.get("content"):
        kept["content"] = "(elided)"
    return kept


def _comparable(reward_info):
    from tests.support.verdicts import comparable

    return comparable(reward_info)


def fixture(folder: Path, out: Path, per_label: int, seed: int) -> None:
    rng = random.Random(seed)
    result: dict[str, Any] = {
        "about": (
            "Simulations with the reward the reference tau2-bench v1.0.1 grader gives them "
            "(NL assertions judged 'met' by a stub on both sides). Built by "
            "scripts/make_grading_fixture.py; checked by tests/test_grading_vs_reference.py. "
            "User messages and tool outputs are elided: grading reads neither, and they would "
            "repeat task texts and database records."
        ),
        "domains": {},
    }
    for domain in DOMAINS:
        sims_path, ref_path = folder / f"pert_{domain}.json", folder / f"ref_{domain}.json"
        if not sims_path.exists():
            continue
        document = json.loads(sims_path.read_text())
        reference = json.loads(ref_path.read_text())
        by_label: dict[str, list[dict]] = {}
        for sim in document["simulations"]:
            graded = reference.get(sim["id"])
            if graded is None or "error" in graded and len(graded) == 1:
                continue
            by_label.setdefault(sim["info"]["perturbation"], []).append(sim)
        chosen = []
        for label in sorted(by_label):
            group = by_label[label]
            chosen += rng.sample(group, min(per_label, len(group)))
        result["domains"][domain] = [
            {
                "id": sim["id"],
                "task_id": sim["task_id"],
                "termination_reason": sim["termination_reason"],
                "messages": [strip_message(m) for m in sim["messages"]],
                "reference": _comparable(reference[sim["id"]]),
            }
            for sim in sorted(chosen, key=lambda s: s["id"])
        ]
        print(f"{domain}: {len(chosen)} simulations")
    out.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"{out}: {out.stat().st_size / 1e6:.2f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("perturb")
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--domain", choices=DOMAINS, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=7)
    f = sub.add_parser("fixture")
    f.add_argument("--dir", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--per-label", type=int, default=2)
    f.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    if args.command == "perturb":
        perturb(args.base, args.domain, args.out, args.seed)
    else:
        fixture(args.dir, args.out, args.per_label, args.seed)


if __name__ == "__main__":
    main()
