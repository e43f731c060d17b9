"""Request parity with the original τ-bench: `tau-harness run` driven with the recorded runs'
command lines (`conformance/taubench/requests/<run>/command.json`, run.py's options, which
`run` takes as they are) against a fake OpenAI-compatible server that answers as the recording
server did, and every chat-completions request compared with the recorded one.

    python -m tests.support.taubench_parity [--strict] [--init-calls] [--only RUN]

The fake answers by the documented rules of the recording (requests/README.md): the agent's
k-th turn calls get_user_details (the task's user), then calculate("1 + 2"), then says "Thank
you, your request is complete." (act/react agents: get_user_details, then that reply); the
user answers "FIRST-TRY: ..." to the opening, "###STOP###" once the agent says "complete", and
"I need help with my order." otherwise (react users with a thought first); verify says "false"
for a FIRST-TRY response, else "true". A tool call's id is `call_<n>_0`, n the recorded
request's sequence number, so ids come out as recorded.

Without `--init-calls` the recorded requests the original's user simulator makes while it is
built (instruction-less prompts, and their verify/reflect calls) are left out of the
reference, since tau-mcp does not send them by default; with it, `run --user-init-calls` is
compared with every recorded request. `--strict` compares raw bodies; the default compares as
the tau2 kit's checker does (`conformance/requests/tools/request_parity.py`, whose comparison
this uses). Runs the original cut short with its crash on an unpriced model (`--model fake`
for act/react/few-shot, README item 9, a defect not kept) must match every recorded request and
then may go on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tau_mcp.conversation.taubench_texts import taubench_texts
from tests.support.data import CONFORMANCE_DIR, TAUBENCH_DIR

FIXTURES = CONFORMANCE_DIR / "taubench" / "requests"
KIT = CONFORMANCE_DIR / "requests" / "tools"

FIRST = "FIRST-TRY: I need help with my order."
AGAIN = "I need help with my order."
DONE = "Thank you, your request is complete."
STOP = "###STOP###"
THOUGHT = "Thought:\nI should answer briefly.\n\nUser Response:\n"
REFLECTION = "Reflection:\nI should be brief.\n\nResponse:\n" + AGAIN
COST_CRASH = "unsupported operand type(s) for +=: 'float' and 'NoneType'"


def _compare():
    sys.path.insert(0, str(KIT))
    try:
        from request_parity import compare_bodies  # the tau2 kit's comparison
    finally:
        sys.path.remove(str(KIT))
    return compare_bodies


class FakeOpenAI:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 answering as the recording's."""

    def __init__(self) -> None:
        self.texts = taubench_texts(TAUBENCH_DIR)
        self.user_marker = self.texts.users["llm"].bare.splitlines()[0]
        self.user_of = _users_by_instruction()
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []
        self.seqs: list[int] = []
        self.instruction: str | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                data = json.dumps(outer.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reset(self, seqs: list[int]) -> None:
        """Number the next run's requests as the recording did (`seqs`, then on from there)."""
        with self.lock:
            self.log, self.seqs, self.instruction = [], list(seqs), None

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            n = len(self.log)
            seq = self.seqs[n] if n < len(self.seqs) else (self.seqs[-1] if self.seqs else 0) + n
            caller, message = self.reply(body, seq)
            self.log.append({"caller": caller, "body": body})
        return {
            "id": f"chatcmpl-{seq}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def reply(self, body: dict[str, Any], seq: int) -> tuple[str, dict[str, Any]]:
        messages = body["messages"]
        first = messages[0].get("content") or ""
        if len(messages) == 1 and first.startswith(self.texts.reflect.head):
            return "reflect", _text(REFLECTION)
        if len(messages) == 1 and first.startswith(self.texts.verify.head):
            response = first.rsplit(self.texts.verify.middle, 1)[-1]
            return "verify", _text("false" if FIRST in response else "true")
        if messages[0]["role"] == "system" and first.startswith(self.user_marker):
            self._note_instruction(first)
            last = messages[-1].get("content") or ""
            if len(messages) == 2 and last == self.texts.opening:
                text = FIRST
            elif "complete" in last:
                text = STOP
            else:
                text = AGAIN
            prompt = self.texts.users["react"]
            react = first == prompt.bare or first.endswith(prompt.tail)
            return "user", _text(THOUGHT + text if react and text != STOP else text)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        user_id = self.user_of.get(self.instruction or "", "")
        if body.get("tools"):
            if turn == 0:
                return "agent", _call(seq, "get_user_details", {"user_id": user_id})
            if turn == 1:
                return "agent", _call(seq, "calculate", {"expression": "1 + 2"})
            return "agent", _text(DONE)
        if turn == 0:
            action = {"name": "get_user_details", "arguments": {"user_id": user_id}}
        else:
            action = {"name": "respond", "arguments": {"content": DONE}}
        return "agent", _text("Action:\n" + json.dumps(action))

    def _note_instruction(self, system: str) -> None:
        for prompt in self.texts.users.values():
            if system.startswith(prompt.head) and system.endswith(prompt.tail):
                self.instruction = system[len(prompt.head) : len(system) - len(prompt.tail)]
                return


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _call(seq: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {
        "id": f"call_{seq}_0",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _users_by_instruction() -> dict[str, str]:
    found = {}
    for path in (TAUBENCH_DIR / "taubench" / "domains").glob("*/tasks_*.json"):
        for task in json.loads(path.read_text()):
            found[task["instruction"]] = task["user_id"]
    return found


# --- the recorded runs -----------------------------------------------------------------------
def run_ids(folder: Path = FIXTURES) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if (p / "requests.json").is_file())


def is_build_request(body: dict[str, Any], texts: Any) -> bool:
    """A request the original's user simulator makes while it is built (no instruction)."""
    messages = body["messages"]
    first = messages[0].get("content") or ""
    bare = {prompt.bare for prompt in texts.users.values()}
    if messages[0]["role"] == "system":
        return first in bare
    return any(texts.labels["system"] + b + "\n" in first for b in bare)


def command(run: Path, out: Path, init_calls: bool) -> list[str]:
    argv = json.loads((run / "command.json").read_text())["argv"][1:]
    args = []
    for word in argv:
        if word == "<log-dir>":
            word = str(out.parent)
        elif word.startswith("few_shot_data/"):
            word = str(TAUBENCH_DIR / "taubench" / word)
        args.append(word)
    extra = ["--max-concurrency", "1", "--save-to", str(out), "--max-retries", "0"]
    if init_calls:
        extra.append("--user-init-calls")
    return [sys.executable, "-m", "tau_mcp.harness", "run", *args, *extra]


def check_run(
    fake: FakeOpenAI,
    name: str,
    strict: bool,
    init_calls: bool,
    workdir: Path,
    folder: Path = FIXTURES,
) -> dict[str, Any]:
    run = folder / name
    recorded = json.loads((run / "requests.json").read_text())
    results = json.loads((run / "results.json").read_text())
    if not init_calls:
        recorded = [r for r in recorded if not is_build_request(r["body"], fake.texts)]
    crashed = any(COST_CRASH in str((r.get("info") or {}).get("error")) for r in results)
    out = workdir / name / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    fake.reset([r["seq"] for r in recorded])
    env = dict(
        os.environ,
        OPENAI_API_BASE=fake.api_base,
        OPENAI_BASE_URL=fake.api_base,
        OPENAI_API_KEY="fake",
        TAUBENCH_DATA_DIR=str(TAUBENCH_DIR),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        command(run, out, init_calls),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    got = list(fake.log)
    compare = _compare()
    diffs = []
    same = 0
    for index, ref in enumerate(recorded):
        if index >= len(got):
            diffs.append(f"request {index}: not sent")
            continue
        found = compare(ref["body"], got[index]["body"], strict)
        if found:
            diffs.append(f"request {index} ({got[index]['caller']}): {found[0][:300]}")
        else:
            same += 1
    if len(got) > len(recorded) and not crashed:
        diffs.append(f"{len(got) - len(recorded)} requests more than recorded")
    rewards = {}
    if out.is_file():
        ours = json.loads(out.read_text())
        rewards = {
            (s["task_id"], s["trial"]): (s.get("reward_info") or {}).get("reward")
            for s in ours["simulations"]
        }
    argv = json.loads((run / "command.json").read_text())["argv"]
    split = argv[argv.index("--task-split") + 1] if "--task-split" in argv else "test"
    if not crashed:
        for record in results:
            mine = rewards.get((f"{split}_{record['task_id']}", record["trial"]))
            if mine != record["reward"]:
                diffs.append(
                    f"task {record['task_id']}: reward {mine}, recorded {record['reward']}"
                )
    if not crashed and out.is_file():
        diffs += _results_diffs(results, out)
    if done.returncode != 0:
        diffs.append(f"exit {done.returncode}: {(done.stderr or done.stdout)[-500:]}")
    return {
        "run": name,
        "same": same,
        "requests": len(recorded),
        "sent": len(got),
        "identical": not diffs,
        "diffs": diffs,
    }


def _results_diffs(recorded: list[dict[str, Any]], ours: Path) -> list[str]:
    """Our results written in the original's layout against the original's results file, its
    user cost aside (the original keeps the last user call's cost, we the sum)."""
    from tau_mcp.harness.results.layouts import read, single_file_text

    written = json.loads(single_file_text(read(ours), "tau-bench"))

    def key(result: dict[str, Any]) -> tuple[int, int]:
        return result["trial"], result["task_id"]

    diffs = []
    for mine, theirs in zip(sorted(written, key=key), sorted(recorded, key=key), strict=False):
        for result in (mine, theirs):
            result["info"].pop("user_cost", None)
        if mine != theirs:
            field = next(k for k in theirs if mine.get(k) != theirs[k])
            diffs.append(f"result of task {theirs['task_id']} differs in {field}")
    if len(written) != len(recorded):
        diffs.append(f"{len(written)} results, {len(recorded)} recorded")
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="compare raw request bodies")
    parser.add_argument("--init-calls", action="store_true", help="run with --user-init-calls")
    parser.add_argument("--only", action="append", default=[], help="a run's name (repeatable)")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="a folder of runs")
    args = parser.parse_args(argv)
    names = [n for n in run_ids(args.fixtures) if not args.only or n in args.only]
    fake = FakeOpenAI()
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="taubench_parity_") as tmp:
            for name in names:
                result = check_run(
                    fake, name, args.strict, args.init_calls, Path(tmp), args.fixtures
                )
                results.append(result)
                mark = "SAME" if result["identical"] else "DIFF"
                print(
                    f"[{mark}] {name}: {result['same']}/{result['requests']} requests identical "
                    f"({result['sent']} sent)",
                    flush=True,
                )
                for line in result["diffs"][:4]:
                    print(f"    {line}")
    finally:
        fake.stop()
    same_runs = sum(r["identical"] for r in results)
    same = sum(r["same"] for r in results)
    total = sum(r["requests"] for r in results)
    mode = ("strict" if args.strict else "plain") + (", with init calls" if args.init_calls else "")
    print(
        f"τ-bench request parity ({mode}): {same_runs}/{len(results)} runs identical, "
        f"{same}/{total} requests identical"
    )
    return 0 if same_runs == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
