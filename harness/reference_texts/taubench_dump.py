"""Export the original τ-bench's data and model-facing texts from its release's source, laid out
as tau-mcp reads them (`$TAUBENCH_DATA_DIR/taubench/...`).

    python taubench_dump.py SOURCE DEST

SOURCE is an unpacked release (the folder holding `tau_bench/` and `few_shot_data/`). The
release's own code runs here, in this Python (it needs pydantic and litellm, which tau-mcp
has): its data files and few-shot examples are copied; its tasks, tools and rules are written as
JSON (a task keeps its `annotator`, which the release's Task model drops, read from the source);
its agents and user simulators are built and asked what they would send, with a stand-in for
the model call that records the request and answers with a fixed reply, so the prompts come out
as the release renders them. `tau-harness data fetch --taubench` runs this and checks every file
against the pins (`data/taubench_pins.json`). Nothing of the release's text is in this file.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

DOMAINS = {"retail": ("test", "train", "dev"), "airline": ("test",)}
ENV_CLASSES = {"retail": "MockRetailDomainEnv", "airline": "MockAirlineDomainEnv"}
TASK_LISTS = {"test": "TASKS_TEST", "train": "TASKS_TRAIN", "dev": "TASKS_DEV"}
STRATEGIES = ("llm", "react", "verify", "reflection")
# The stand-in model's replies (the pinned texts were recorded with these).
GENERATION = "Thought:\nfake thought\n\nUser Response:\nHi, I want to exchange items."
REFLECTION = "Reflection:\nfake reflection\n\nResponse:\nfake new response"
OPENING = "Hi, I need help."
MODEL, PROVIDER = "fake", "openai"


def _json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


# --- domains ---------------------------------------------------------------------------------
def _task_list(source: Path, domain: str, split: str) -> list[dict[str, Any]]:
    """A split's tasks as the release's Task model gives them, with each task's index and the
    `annotator` its source passes (read with ast: the model drops it)."""
    name = f"tasks_{split}"
    module = importlib.import_module(f"tau_bench.envs.{domain}.{name}")
    variable = TASK_LISTS[split] if hasattr(module, TASK_LISTS[split]) else "TASKS"
    tasks = getattr(module, variable)
    tree = ast.parse((source / "tau_bench" / "envs" / domain / f"{name}.py").read_text())
    calls = next(
        node.value.elts
        for node in tree.body
        if isinstance(node, ast.Assign) and node.targets[0].id == variable  # type: ignore[attr-defined]
    )
    out = []
    for index, (task, call) in enumerate(zip(tasks, calls, strict=True)):
        keywords = {k.arg: k.value for k in call.keywords}  # type: ignore[attr-defined]
        annotator = ast.literal_eval(keywords["annotator"]) if "annotator" in keywords else None
        out.append({"task_index": index, "annotator": annotator, **task.model_dump()})
    return out


def dump_domain(source: Path, dest: Path, domain: str) -> None:
    folder = dest / "taubench" / "domains" / domain
    folder.mkdir(parents=True, exist_ok=True)
    package = source / "tau_bench" / "envs" / domain
    for data in sorted((package / "data").glob("*.json")):
        shutil.copyfile(data, folder / data.name)
    if (package / "data" / "readme.md").is_file():
        shutil.copyfile(package / "data" / "readme.md", folder / "data_readme.md")
    shutil.copyfile(package / "wiki.md", folder / "wiki.md")
    tools = importlib.import_module(f"tau_bench.envs.{domain}.tools").ALL_TOOLS
    _json(folder / "tools.json", [tool.get_info() for tool in tools])
    _json(folder / "rules.json", importlib.import_module(f"tau_bench.envs.{domain}.rules").RULES)
    for split in DOMAINS[domain]:
        _json(folder / f"tasks_{split}.json", _task_list(source, domain, split))


# --- prompts ---------------------------------------------------------------------------------
class Recorder:
    """Stands in for litellm's `completion`: records each call's arguments and answers with a
    litellm message, as the release reads it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        from litellm.types.utils import Message

        self.calls.append(json.loads(json.dumps(kwargs)))
        prompt = str(kwargs["messages"][-1].get("content"))
        if "Reflection:" in prompt:
            reply = REFLECTION
        elif "Classification:" in prompt:
            reply = "false"
        else:
            reply = GENERATION
        choice = type("Choice", (), {"message": Message(content=reply, role="assistant")})
        response = type(
            "Response", (), {"choices": [choice], "_hidden_params": {"response_cost": None}}
        )
        return response


def dump_prompts(source: Path, dest: Path) -> None:
    from tau_bench.agents import chat_react_agent
    from tau_bench.envs import user as users

    out = dest / "taubench" / "prompts"
    out.mkdir(parents=True, exist_ok=True)
    (out / "act_instruction.txt").write_text(chat_react_agent.ACT_INSTRUCTION, encoding="utf-8")
    (out / "react_instruction.txt").write_text(chat_react_agent.REACT_INSTRUCTION, encoding="utf-8")
    for domain in DOMAINS:
        env_module = importlib.import_module(f"tau_bench.envs.{domain}.env")
        tools = importlib.import_module(f"tau_bench.envs.{domain}.tools").ALL_TOOLS
        wiki = importlib.import_module(f"tau_bench.envs.{domain}.wiki").WIKI
        info = [tool.get_info() for tool in tools]
        (out / f"tool_calling_agent_{domain}_system_prompt.md").write_text(wiki, encoding="utf-8")
        for kind, reasoning in (("act", False), ("react", True)):
            agent = chat_react_agent.ChatReActAgent(info, wiki, MODEL, PROVIDER, reasoning)
            (out / f"{kind}_agent_{domain}_system_prompt.txt").write_text(
                agent.prompt, encoding="utf-8"
            )
        _tool_calling_request(out, domain, env_module, info, wiki)
    recorder = Recorder()
    users.completion = recorder
    from tau_bench.envs.retail.tasks_test import TASKS_TEST

    instruction = TASKS_TEST[0].instruction
    for strategy in STRATEGIES:
        recorder.calls = []
        simulator = users.load_user(strategy, model=MODEL, provider=PROVIDER)
        built = list(recorder.calls)
        recorder.calls = []
        first = simulator.reset(instruction=instruction)
        system = simulator.build_system_prompt(instruction=instruction)
        (out / f"user_{strategy}_system_prompt.txt").write_text(system, encoding="utf-8")
        _json(
            out / f"user_{strategy}_task0.json",
            {
                "note": (
                    f"Written by tau-mcp's taubench_dump.py: the completion() arguments of the "
                    f"{strategy} user simulator for retail test task 0, with a stand-in model; "
                    f"{len(built)} call(s) made while it was built are construction_requests."
                ),
                "strategy": strategy,
                "instruction": instruction,
                "system_prompt": system,
                "returned_first_message": first,
                "construction_requests": built,
                "requests": list(recorder.calls),
            },
        )


def _tool_calling_request(out: Path, domain: str, env_module: Any, info: list, wiki: str) -> None:
    """The tool-calling agent's first request on test task 0, the user's opening stood in."""
    from tau_bench.agents import tool_calling_agent
    from tau_bench.envs import user as users

    recorder = Recorder()
    users.completion = recorder  # the environment builds its user simulator
    env = getattr(env_module, ENV_CLASSES[domain])(
        user_strategy="llm", user_model=MODEL, user_provider=PROVIDER, task_index=0
    )
    env.user.reset = lambda instruction=None: OPENING

    class Stop(Exception):
        pass

    def first_call(**kwargs: Any) -> Any:
        recorder.calls = [json.loads(json.dumps(kwargs))]
        raise Stop

    tool_calling_agent.completion = first_call
    agent = tool_calling_agent.ToolCallingAgent(info, wiki, MODEL, PROVIDER, 0.0)
    try:
        agent.solve(env, task_index=0)
    except Stop:
        pass
    request = recorder.calls[0]
    _json(
        out / f"tool_calling_agent_{domain}_task0.json",
        {
            "note": (
                "Written by tau-mcp's taubench_dump.py: the tool-calling agent's first "
                "completion() arguments on test task 0, with the user's opening stood in."
            ),
            "system_prompt": request["messages"][0]["content"],
            **request,
        },
    )


def main(source: Path, dest: Path) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.path.insert(0, str(source))
    for domain in DOMAINS:
        dump_domain(source, dest, domain)
    shutil.copytree(source / "few_shot_data", dest / "taubench" / "few_shot_data")
    dump_prompts(source, dest)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
