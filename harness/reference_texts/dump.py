"""Write `tau2/reference_texts/` by asking the pinned reference release's own code what it shows a
model: prompt templates, scenario layout, judge prompt, tool schemas and run defaults; the
banking_knowledge retrieval configs (tools, policies, discoverable tools, golden documents, and
what its reranker and Qwen embedder send a model) and telecom-workflow's policy; the review
prompts and what a review returns.

Runs with the interpreter of a throwaway virtualenv that has the release installed (see
`tau_mcp.harness.reference_texts.build`), never inside tau-mcp's own environment:

    TAU2_DATA_DIR=DATA_FOLDER python dump.py OUT_DIR

The documents' shape comes from `layout.json` beside this file, which holds only structure, value
markers and a few words of ours; every value the reference defines is read from its modules at run
time, so nothing of its text lives in our repository. The files therefore carry the reference's
values but not its notes, and are checked by content pins (see `marker_paths`), not byte pins.
The pure helpers at the top import nothing but the standard library, so tau-mcp's tests can check
them; everything that needs the reference is imported inside functions.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import hashlib
import importlib.metadata
import inspect
import json
import os
import random
import re
import sys
import textwrap
import typing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

LAYOUT_FILE = Path(__file__).with_name("layout.json")
DOMAINS = ("mock", "airline", "retail", "telecom")  # prompts.json composes their policies
WORKFLOW = "telecom-workflow"
BANKING = "banking_knowledge"
TOOL_DOMAINS = (*DOMAINS, WORKFLOW)  # tools/<domain>.json in the shape of the layout's tools
SOLO_DOMAINS = ("mock", "telecom", WORKFLOW)
MARKER = "$value"


# ------------------------------------------------------------------------------ pure helpers


def load_layout(path: Path = LAYOUT_FILE) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def fill(node: Any, values: dict[str, Any]) -> Any:
    """The layout with every {"$value": name} replaced by values[name]."""
    if isinstance(node, dict):
        if set(node) == {MARKER}:
            name = node[MARKER]
            if name not in values:
                raise KeyError(f"no value computed for '{name}'")
            return values[name]
        return {key: fill(child, values) for key, child in node.items()}
    if isinstance(node, list):
        return [fill(child, values) for child in node]
    return node


def marker_paths(node: Any, path: tuple[str, ...] = ()) -> dict[str, str]:
    """Where each value sits in a document: "/"-joined JSON path -> value name. The content
    pins hash the values at exactly these paths."""
    if isinstance(node, dict):
        if set(node) == {MARKER}:
            return {"/".join(path): node[MARKER]}
        items = node.items()
    elif isinstance(node, list):
        items = ((str(i), child) for i, child in enumerate(node))
    else:
        return {}
    found: dict[str, str] = {}
    for key, child in items:
        found.update(marker_paths(child, (*path, key)))
    return found


def markers(node: Any) -> set[str]:
    """Every value name a layout asks for."""
    if isinstance(node, dict):
        if set(node) == {MARKER}:
            return {node[MARKER]}
        return set().union(*(markers(child) for child in node.values()))
    if isinstance(node, list):
        return set().union(*(markers(child) for child in node))
    return set()


def serialize(document: Any) -> str:
    """The files' byte layout: two-space JSON, non-ASCII kept, one trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def as_template(rendered: str, slots: dict[str, str]) -> str:
    """Turn text rendered with sentinel values back into a template: sentinel -> {slot}."""
    for sentinel, slot in slots.items():
        if sentinel not in rendered:
            raise ValueError(f"sentinel for {{{slot}}} not found in the rendered text")
        rendered = rendered.replace(sentinel, "{" + slot + "}")
    return rendered


def file_shapes(layout: dict[str, Any]) -> dict[str, Any]:
    """Each generated file (relative to reference_texts/) and the layout it is filled from."""
    shapes = {name: layout[name] for name in ("prompts.json", "defaults.json")}
    for domain in TOOL_DOMAINS:
        key = "tools with solo" if domain in SOLO_DOMAINS else "tools without solo"
        shapes[f"tools/{domain}.json"] = layout[key]
    shapes[f"{WORKFLOW}.json"] = layout[f"{WORKFLOW}.json"]
    shapes[f"{BANKING}.json"] = layout[f"{BANKING}.json"]
    shapes[f"tools/{BANKING}.json"] = layout["banking tools"]
    shapes["review.json"] = layout["review.json"]
    return shapes


def template_values(template: str, text: str) -> dict[str, str]:
    """What each {slot} of `template` holds in `text` (the template filled in); ValueError
    when the text does not have the template's shape."""
    parts = re.split(r"\{(\w+)\}", template)
    pattern = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>.*?)" for i, part in enumerate(parts)
    )
    found = re.fullmatch(pattern, text, flags=re.DOTALL)
    if found is None:
        raise ValueError("the text does not have the template's shape")
    return found.groupdict()


def fenced_json(text: str) -> str:
    """The inside of the first ```json fenced block of a prompt ('' when there is none)."""
    found = re.search(r"```json\n(.*?)\n```", text, flags=re.DOTALL)
    return found.group(1) if found else ""


def listed_tags(prompt: str) -> list[str]:
    """The tag names a prompt's 'Error Tags' section lists as '- **tag**: ...' lines."""
    lines = prompt.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.lstrip("#").strip().startswith("Error Tags")
    )
    tags = []
    for line in lines[start + 1 :]:
        if not line.strip():
            if tags:
                break
            continue
        found = re.match(r"- \*\*([a-z_]+)\*\*:", line)
        if found:
            tags.append(found.group(1))
    return tags


def regex_literals(source: str) -> list[str]:
    """The patterns a function's source hands to `re` (`re.search(PATTERN, ...)`, directly or
    through a name it assigned the pattern to), in order."""
    tree = ast.parse(textwrap.dedent(source))
    named = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.args
        ):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append(first.value)
            elif isinstance(first, ast.Name) and first.id in named:
                found.append(named[first.id])
    return found


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def trial_seeds(seed: int, count: int) -> list[int]:
    """Per-trial seeds the way the reference draws them (Python's Mersenne Twister)."""
    rng = random.Random(seed)
    return [rng.randint(0, 1_000_000) for _ in range(count)]


def sentinel(name: str, mark: str = "\x03") -> str:
    return f"{mark}{name}{mark}"


def positional_template(rendered: str, sentinels: list[str]) -> str:
    """A `str.format` template with one positional `{}` per sentinel, from text rendered with
    the sentinels in those fields in this order (the text's own braces escaped)."""
    text = rendered.replace("{", "{{").replace("}", "}}")
    out, position = [], 0
    for mark in sentinels:
        at = text.find(mark, position)
        if at < 0 or text.count(mark) != 1:
            raise ValueError("a sentinel is missing, repeated or out of order in the rendered text")
        out.append(text[position:at] + "{}")
        position = at + len(mark)
    return "".join(out) + text[position:]


def text_before(sent: str, query: str) -> str:
    """What a model call put before the query it was given (the query must end the text)."""
    if not sent.endswith(query):
        raise ValueError("the text sent does not end with the query")
    return sent[: len(sent) - len(query)]


# ------------------------------------------------------------------------------ the reference


class Reference:
    """The reference's modules, imported once the interpreter is the reference's."""

    def __init__(self) -> None:
        from loguru import logger

        logger.remove()  # the reference logs at import; the dump prints only file names
        import tau2.agent.llm_agent as agents
        import tau2.config as config
        import tau2.orchestrator.orchestrator as orchestrator
        import tau2.user.user_simulator as user_sim
        import tau2.user.user_simulator_base as user_base
        from tau2.data_model import message, tasks
        from tau2.evaluator import evaluator_nl_assertions as judge
        from tau2.run import get_tasks
        from tau2.runner import build
        from tau2.utils import llm_utils
        from tau2.utils.utils import DATA_DIR

        self.agents, self.config, self.orchestrator = agents, config, orchestrator
        self.user_sim, self.user_base, self.message, self.tasks = (
            user_sim,
            user_base,
            message,
            tasks,
        )
        self.judge, self.get_tasks, self.build, self.llm_utils = judge, get_tasks, build, llm_utils
        self.data_dir = Path(DATA_DIR)

    def base_tasks(self, domain: str) -> list[Any]:
        return self.get_tasks(domain, task_split_name="base")


def source_values() -> dict[str, Any]:
    return {
        "source.version": importlib.metadata.version("tau2"),
        "source.pydantic": importlib.metadata.version("pydantic"),
        "source.litellm": importlib.metadata.version("litellm"),
    }


def gt_values(ref: Reference) -> dict[str, Any]:
    gt = ref.agents.LLMGTAgent
    Action = ref.tasks.Action
    prefix = "gt_agent.resolution_steps."

    def step(requestor: str, with_args: bool) -> str:
        name = sentinel("name", "\x01")
        text = gt.make_agent_instructions_from_action(
            Action(action_id="s", requestor=requestor, name=name, arguments={}),
            include_function_args=with_args,
        )
        return (
            text.replace(f"{name}()", "{func_format}")
            if with_args
            else as_template(text, {name: "name"})
        )

    one = Action(action_id="a", requestor="assistant", name="A", arguments={})
    stand_in = SimpleNamespace(
        task=SimpleNamespace(evaluation_criteria=SimpleNamespace(actions=[one])),
        provide_function_args=True,
        make_agent_instructions_from_action=gt.make_agent_instructions_from_action,
    )
    line = gt.make_agent_instructions_from_actions(stand_in)
    step_text = gt.make_agent_instructions_from_action(one, True)
    line_template = line.replace(step_text, "{step}").replace("1", "{n}", 1)
    stand_in.task.evaluation_criteria.actions = [one, one]
    both = gt.make_agent_instructions_from_actions(stand_in)
    second = line_template.replace("{n}", "2").replace("{step}", step_text)
    if not (both.startswith(line) and both.endswith(second)):
        raise ValueError("the resolution steps are not one templated line per action")
    line_joiner = both[len(line) : len(both) - len(second)]
    with_args = inspect.signature(gt.__init__).parameters["provide_function_args"].default

    def func(arguments: dict[str, Any], name: str = "f") -> str:
        return Action(action_id="f", name=name, arguments=arguments).get_func_format()

    n, k, v = sentinel("N", "\x02"), sentinel("K", "\x02"), sentinel("V", "\x02")
    k1, k2 = sentinel("K1", "\x02"), sentinel("K2", "\x02")
    pair = func({k1: "v1", k2: "v2"}, "n")[len("n(") : -1]
    examples_in = ["text", 3, 2.5, True, None, ["a", 1], {"k": "v", "n": 1.0}]

    examples = []
    for domain, wanted in (("airline", "1"), ("telecom", None)):
        task = next(
            t
            for t in ref.base_tasks(domain)
            if (wanted is None or t.id == wanted) and gt.check_valid_task(t)
        )
        env = ref.build.build_environment(domain)
        agent = ref.build.build_agent("llm_agent_gt", env, llm="fake", llm_args={}, task=task)
        examples.append(
            {
                "domain": domain,
                "task_id": task.id,
                "resolution_steps": agent.make_agent_instructions_from_actions(),
            }
        )
    return {
        "gt_agent.system_prompt_template": ref.agents.SYSTEM_PROMPT_GT,
        "gt_agent.instruction": ref.agents.AGENT_GT_INSTRUCTION,
        prefix + "line_template": line_template,
        prefix + "line_joiner": line_joiner,
        prefix + "provide_function_args_default": with_args,
        prefix + "step_templates": {r: step(r, True) for r in ("assistant", "user")},
        prefix + "step_templates_without_function_args": {
            r: step(r, False) for r in ("assistant", "user")
        },
        prefix + "func_format.template": func({k: v}, n)
        .replace(n, "{name}")
        .replace(f"{k}={v}", "{args}"),
        prefix + "func_format.args_joiner": pair.replace(f"{k1}=v1", "").replace(f"{k2}=v2", ""),
        prefix + "func_format.arg_template": as_template(
            func({k: v}, "n")[len("n(") : -1], {k: "key", v: "value"}
        ),
        prefix + "func_format.value_examples_json_to_rendered": {
            json.dumps(value): func({"x": value})[len("f(x=") : -1] for value in examples_in
        },
        prefix + "examples": examples,
    }


def solo_tool_choice(ref: Reference) -> Any:
    """The tool_choice the solo agent sends, caught by standing in for its model call."""
    m = ref.message
    domain = SOLO_DOMAINS[0]
    env = ref.build.build_environment(domain, solo_mode=True)
    task = next(t for t in ref.base_tasks(domain) if ref.agents.LLMSoloAgent.check_valid_task(t))
    solo = ref.build.build_agent(
        "llm_agent_solo", env, llm="fake", llm_args={}, task=task, solo_mode=True
    )
    seen: dict[str, Any] = {}

    def stand_in(*args, **kwargs):
        seen.update(kwargs)
        call = m.ToolCall(id="c", name=solo.STOP_FUNCTION_NAME, arguments={})
        return m.AssistantMessage(role="assistant", content=None, tool_calls=[call])

    original = ref.agents.generate
    ref.agents.generate = stand_in
    try:
        solo.generate_next_message(None, solo.get_init_state())
    finally:
        ref.agents.generate = original
    return seen["tool_choice"]


def solo_values(ref: Reference) -> dict[str, Any]:
    solo = ref.agents.LLMSoloAgent
    template = ref.agents.AGENT_SOLO_INSTRUCTION
    return {
        "solo_agent.system_prompt_template": ref.agents.SYSTEM_PROMPT_SOLO,
        "solo_agent.instruction_template": template,
        "solo_agent.instruction": template.format(
            stop_function_name=solo.STOP_FUNCTION_NAME, stop_token=solo.STOP_TOKEN
        ),
        "solo_agent.stop_function_name": solo.STOP_FUNCTION_NAME,
        "solo_agent.stop_token": solo.STOP_TOKEN,
        "solo_agent.transfer_tool_name": solo.TRANSFER_TOOL_NAME,
        "solo_agent.tool_choice": solo_tool_choice(ref),
    }


def persona_values(ref: Reference) -> dict[str, Any]:
    """The persona slot of the user's guidelines and what the default persona puts there.

    The slot is the one string literal the user prompt's code replaces in the guidelines (read
    from its source, since the data's guidelines files need not contain it); rendering a stand-in
    whose guidelines are just that slot confirms it and shows the default replacement."""
    module = ref.user_sim
    render = module.UserSimulator.system_prompt.fget
    tree = ast.parse(textwrap.dedent(inspect.getsource(render)))
    literals = [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "replace"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]
    if len(literals) != 1:
        raise ValueError("the user prompt's code does not replace exactly one slot")
    placeholder = literals[0]
    env = ref.build.build_environment("airline")
    default = ref.build.build_user(
        "user_simulator", env, ref.base_tasks("airline")[0], llm="fake", llm_args={}
    ).persona_config
    mark = sentinel("persona", "\x05")

    def rendered(persona: Any) -> str:
        stand_in = SimpleNamespace(
            instructions="", global_simulation_guidelines=placeholder, persona_config=persona
        )
        return render(stand_in)

    original = module.SYSTEM_PROMPT
    module.SYSTEM_PROMPT = "{global_user_sim_guidelines_with_persona}{instructions}"
    try:
        marked = rendered(SimpleNamespace(to_guidelines_text=lambda: mark))
        replacement = rendered(default)
    finally:
        module.SYSTEM_PROMPT = original
    if mark not in marked or placeholder in marked:
        raise ValueError("the persona guidelines do not go into the slot")
    data_dir = ref.data_dir
    return {
        "user_simulator.guidelines_files": {
            "with_tools": Path(module.GLOBAL_USER_SIM_GUIDELINES_PATH_TOOLS)
            .relative_to(data_dir)
            .as_posix(),
            "without_tools": Path(module.GLOBAL_USER_SIM_GUIDELINES_PATH)
            .relative_to(data_dir)
            .as_posix(),
        },
        "user_simulator.persona_placeholder": placeholder,
        "user_simulator.persona_replacement_default": replacement,
    }


def user_values(ref: Reference) -> dict[str, Any]:
    m = ref.message
    history = [
        m.AssistantMessage(role="assistant", content="agent text"),
        m.UserMessage(
            role="user",
            content=None,
            tool_calls=[m.ToolCall(id="c1", name="t", arguments={}, requestor="user")],
        ),
        m.ToolMessage(id="c1", role="tool", content="result", requestor="user"),
        m.UserMessage(role="user", content="user text"),
    ]
    state = ref.user_base.UserState(system_messages=[], messages=history)
    base = ref.user_base
    return {
        "user_simulator.system_prompt_template": ref.user_sim.SYSTEM_PROMPT,
        **persona_values(ref),
        "user_simulator.stop_tokens": [base.STOP, base.TRANSFER, base.OUT_OF_SCOPE],
        "user_simulator.role_flip.example_output_litellm_messages": (
            ref.llm_utils.to_litellm_messages(state.flip_roles())
        ),
        "stop_tokens": {
            "user_stop": base.STOP,
            "user_transfer": base.TRANSFER,
            "user_out_of_scope": base.OUT_OF_SCOPE,
            "solo_agent_stop": ref.agents.LLMSoloAgent.STOP_TOKEN,
            "solo_stop_function": ref.agents.LLMSoloAgent.STOP_FUNCTION_NAME,
        },
    }


def scenario_values(ref: Reference) -> dict[str, Any]:
    Structured, Scenario = ref.tasks.StructuredUserInstructions, ref.tasks.UserScenario
    names = ("domain", "reason_for_call", "known_info", "unknown_info", "task_instructions")
    slots = {sentinel(name): name for name in (*names, "persona", "instructions")}

    def template(rendered: str) -> str:
        for mark, slot in slots.items():
            rendered = rendered.replace(mark, "{" + slot + "}")
        return rendered

    all_parts = Structured(**{name: sentinel(name) for name in names})
    required = Structured(**{name: sentinel(name) for name in (names[0], names[1], names[4])})
    examples = []
    for domain, wanted in (("airline", "0"), ("telecom", None), ("mock", "create_task_1")):
        tasks = ref.base_tasks(domain)
        task = next(
            t for t in tasks if (t.id == wanted if wanted is not None else t.user_scenario.persona)
        )
        examples.append({"domain": domain, "task_id": task.id, "rendered": str(task.user_scenario)})
    multiline = Structured(
        domain="d", reason_for_call="line one\n\nline three", task_instructions="t"
    )
    return {
        "scenario_format.user_scenario_template_with_persona": template(
            str(Scenario(persona=sentinel("persona"), instructions=sentinel("instructions")))
        ),
        "scenario_format.user_scenario_template_without_persona": template(
            str(Scenario(instructions=sentinel("instructions")))
        ),
        "scenario_format.structured_instructions_template_all_parts": template(str(all_parts)),
        "scenario_format.structured_instructions_template_required_parts_only": template(
            str(required)
        ),
        "scenario_format.indent_rule_example_reason_for_call_multiline": str(multiline),
        "scenario_format.examples": examples,
    }


def policy_values(ref: Reference) -> dict[str, Any]:
    """How each domain's policy is put together from its files, in both modes."""

    def read(rel: str) -> str:
        return (ref.data_dir / rel).read_text()

    def entry(domain: str, solo: bool) -> dict[str, Any]:
        policy = ref.build.build_environment(domain, solo_mode=solo).get_policy()
        folder = f"tau2/domains/{domain}"
        if domain == "telecom":
            files = {
                "main_policy": f"{folder}/main_policy{'_solo' if solo else ''}.md",
                "tech_support_policy": f"{folder}/tech_support_manual.md",
            }
            template = policy
            for slot, rel in files.items():
                template = template.replace(read(rel), "{" + slot + "}", 1)
        else:
            files = {"policy": f"{folder}/policy{'_solo' if solo else ''}.md"}
            if policy != read(files["policy"]):
                raise ValueError(f"{domain}: the policy is not its file's text")
            template = "{policy}"
        if solo:
            return {"template": template, "files": files, "length": len(policy)}
        return {"length": len(policy), "template": template, "files": files}

    return {
        f"policy_composition.{domain}": {
            "normal": entry(domain, False),
            "solo": entry(domain, True) if domain in SOLO_DOMAINS else None,
        }
        for domain in DOMAINS
    }


def judge_values(ref: Reference) -> dict[str, Any]:
    """The NL-assertion judge's request, caught by standing in for its model call."""
    m = ref.message
    seen: dict[str, Any] = {}

    def stand_in(model, messages, tools=None, tool_choice=None, call_name=None, **kwargs):
        seen.update(model=model, messages=messages, tools=tools, kwargs=kwargs)
        return m.AssistantMessage(role="assistant", content=json.dumps({"results": []}))

    a, u, x, y = (sentinel(s, "\x04") for s in "AUXY")
    original = ref.judge.generate
    ref.judge.generate = stand_in
    try:
        ref.judge.NLAssertionsEvaluator.evaluate_nl_assertions(
            [
                m.AssistantMessage(role="assistant", content=a),
                m.UserMessage(role="user", content=u),
            ],
            [x, y],
        )
    finally:
        ref.judge.generate = original
    system, user = (message.content for message in seen["messages"][:2])
    trajectory = f"assistant: {a}\nuser: {u}"
    if trajectory not in user:
        raise ValueError("the judge's user prompt does not show the trajectory as expected")
    return {
        "nl_assertions_judge.model": seen["model"],
        "nl_assertions_judge.llm_args": seen["kwargs"],
        "nl_assertions_judge.tools": seen["tools"],
        "nl_assertions_judge.system_prompt": system,
        "nl_assertions_judge.user_prompt_template": user.replace(
            trajectory, "{trajectory}"
        ).replace(repr([x, y]), "{nl_assertions}"),
    }


def prompt_values(ref: Reference) -> dict[str, Any]:
    first = ref.orchestrator.DEFAULT_FIRST_AGENT_MESSAGE
    return {
        **source_values(),
        "agent.system_prompt_template": ref.agents.SYSTEM_PROMPT,
        "agent.instruction": ref.agents.AGENT_INSTRUCTION,
        **gt_values(ref),
        **solo_values(ref),
        **user_values(ref),
        **scenario_values(ref),
        "first_agent_message.role": first.role,
        "first_agent_message.content": first.content,
        **policy_values(ref),
        **judge_values(ref),
    }


def cli_defaults() -> dict[str, Any]:
    """`tau2 run`'s argument defaults, as its own parser sets them."""
    import argparse

    from tau2.cli import add_run_args

    parser = argparse.ArgumentParser()
    add_run_args(parser)
    parsed = vars(parser.parse_args(["--domain", "mock"]))
    plain = (str, int, float, bool, dict, list, type(None))
    return {key: value for key, value in parsed.items() if isinstance(value, plain)}


def default_values(ref: Reference) -> dict[str, Any]:
    c = ref.config
    cli = cli_defaults()
    return {
        **source_values(),
        "agent_implementation": c.DEFAULT_AGENT_IMPLEMENTATION,
        "user_implementation": c.DEFAULT_USER_IMPLEMENTATION,
        "agent_llm": c.DEFAULT_LLM_AGENT,
        "user_llm": c.DEFAULT_LLM_USER,
        "agent_llm_args": c.DEFAULT_LLM_ARGS_AGENT,
        "user_llm_args": c.DEFAULT_LLM_ARGS_USER,
        "max_steps": c.DEFAULT_MAX_STEPS,
        "max_errors": c.DEFAULT_MAX_ERRORS,
        "seed": c.DEFAULT_SEED,
        "max_concurrency": c.DEFAULT_MAX_CONCURRENCY,
        "num_trials": c.DEFAULT_NUM_TRIALS,
        "task_split_name": cli.get("task_split_name"),
        "timeout": cli.get("timeout"),
        "log_level": c.DEFAULT_LOG_LEVEL,
        "simulation_max_retries": c.DEFAULT_RETRY_ATTEMPTS,
        "simulation_retry_delay_s": c.DEFAULT_RETRY_MIN_WAIT,
        "litellm.num_retries": c.DEFAULT_MAX_RETRIES,
        "per_trial_seed.seed_300_first_5_trials": trial_seeds(300, 5),
        "nl_assertions_judge.model": c.DEFAULT_LLM_NL_ASSERTIONS,
        "nl_assertions_judge.llm_args": c.DEFAULT_LLM_NL_ASSERTIONS_ARGS,
        "first_agent_message": ref.orchestrator.DEFAULT_FIRST_AGENT_MESSAGE.content,
        "cli_run_defaults": cli,
    }


def tool_values(ref: Reference, domain: str) -> dict[str, Any]:
    env = ref.build.build_environment(domain)
    agent = [tool.openai_schema for tool in env.get_tools()]
    try:
        user = [tool.openai_schema for tool in env.get_user_tools()]
    except Exception:  # noqa: BLE001 - the reference raises when a domain has no user toolkit
        user = []
    tasks = ref.base_tasks(domain)
    if any(task.user_tools is not None for task in tasks):
        raise ValueError(f"{domain}: a base task restricts the user's tools")
    values: dict[str, Any] = {"domain": domain, "agent": agent, "user": user}
    gt_task = next((t for t in tasks if ref.agents.LLMGTAgent.check_valid_task(t)), None)
    gt = ref.build.build_agent(
        "llm_agent_gt", ref.build.build_environment(domain), llm="fake", llm_args={}, task=gt_task
    )
    if [tool.openai_schema for tool in gt.tools] != agent:
        raise ValueError(f"{domain}: the ground-truth agent's tools are not the agent's")
    if domain in SOLO_DOMAINS:
        solo_env = ref.build.build_environment(domain, solo_mode=True)
        task = next(t for t in tasks if ref.agents.LLMSoloAgent.check_valid_task(t))
        solo = ref.build.build_agent(
            "llm_agent_solo", solo_env, llm="fake", llm_args={}, task=task, solo_mode=True
        )
        schemas = [tool.openai_schema for tool in solo.tools]
        values["solo.tools_in_order"] = schemas
        values["solo.user_tools_included"] = [tool.name for tool in solo_env.get_user_tools()]
        values["solo.done_tool"] = schemas[-1]
    return values


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any):
    """`owner.name` set to `value` for the block, restored after."""
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


# ------------------------------------------------------------------------- telecom-workflow


def workflow_values(ref: Reference) -> dict[str, Any]:
    """telecom-workflow: telecom's tools and data under the workflow tech-support policy."""
    folder = "tau2/domains/telecom"

    def composition(solo: bool) -> dict[str, Any]:
        policy = ref.build.build_environment(WORKFLOW, solo_mode=solo).get_policy()
        suffix = "_solo" if solo else ""
        files = {
            "main_policy": f"{folder}/main_policy{suffix}.md",
            "tech_support_policy": f"{folder}/tech_support_workflow{suffix}.md",
        }
        template = policy
        for slot, rel in files.items():
            text = (ref.data_dir / rel).read_text()
            if text not in template:
                raise ValueError(f"{WORKFLOW}: {rel} is not part of the policy")
            template = template.replace(text, "{" + slot + "}", 1)
        return {"template": template, "files": files, "length": len(policy)}

    env = ref.build.build_environment(WORKFLOW)
    telecom = ref.build.build_environment("telecom")

    def schemas(tools: list[Any]) -> list[dict[str, Any]]:
        return [tool.openai_schema for tool in tools]

    def dumps(environment: Any) -> list[Any]:
        return [
            kit.db.model_dump(mode="json") for kit in (environment.tools, environment.user_tools)
        ]

    return {
        "policy_composition": {"normal": composition(False), "solo": composition(True)},
        "environment_domain_name": env.get_domain_name(),
        "same_as_telecom": {
            "agent_tools": schemas(env.get_tools()) == schemas(telecom.get_tools()),
            "user_tools": schemas(env.get_user_tools()) == schemas(telecom.get_user_tools()),
            "dbs": dumps(env) == dumps(telecom),
        },
    }


# ------------------------------------------------------------------------- banking_knowledge


@contextlib.contextmanager
def documents_in_file_name_order():
    """The knowledge base loaded in sorted file-name order, the same on every machine (the
    release lists the documents folder in whatever order the file system returns)."""
    from tau2.domains.banking_knowledge.data_model import KnowledgeBase

    as_released = KnowledgeBase.load.__func__

    def load(cls, documents_dir):
        loaded = as_released(cls, documents_dir)
        order = [
            json.loads(path.read_text())["id"]
            for path in sorted(Path(documents_dir).glob("*.json"))
        ]
        return cls(documents={doc_id: loaded.documents[doc_id] for doc_id in order})

    with patched(KnowledgeBase, "load", classmethod(load)):
        yield


@contextlib.contextmanager
def without_retrieval_backends(retrieval: Any):
    """Toolkits built with no search pipeline or sandbox behind them: the tools (and so their
    schemas) are the same, and nothing needs a network, a key or the sandbox."""
    with contextlib.ExitStack() as stack:
        for name in ("_create_kb_pipeline", "_create_grep_pipeline", "_create_sandbox"):
            stack.enter_context(patched(retrieval, name, lambda *args, **kwargs: None))
        yield


def python_parameters(method: Any) -> list[dict[str, Any]]:
    out = []
    for name, parameter in inspect.signature(method).parameters.items():
        if name == "self":
            continue
        annotation = parameter.annotation
        entry = {"name": name, "annotation": getattr(annotation, "__name__", str(annotation))}
        if parameter.default is not inspect.Parameter.empty:
            entry["default"] = parameter.default
        out.append(entry)
    return out


def banking_values(ref: Reference) -> tuple[dict[str, Any], dict[str, Any]]:
    """banking_knowledge.json's values, and tools/banking_knowledge.json's."""
    from tau2.cli import get_all_retrieval_config_names
    from tau2.domains.banking_knowledge import environment as bank
    from tau2.domains.banking_knowledge import retrieval
    from tau2.domains.banking_knowledge import tools as bank_tools
    from tau2.environment.toolkit import MUTATES_STATE_ATTR, TOOL_TYPE_ATTR
    from tau2.registry import registry

    def rel(path: Any) -> str:
        return Path(path).relative_to(ref.data_dir).as_posix()

    def spec(value: Any) -> Any:
        return dataclasses.asdict(value) if value is not None else None

    with documents_in_file_name_order(), without_retrieval_backends(retrieval):
        kb = bank.get_knowledge_base()
        docs = kb.get_all_documents()
        tasks = registry.get_tasks_loader(BANKING)(task_split_name=None)
        names = retrieval.get_all_variant_names()
        variants = {name: retrieval.resolve_variant(name) for name in names}
        envs = {name: bank.get_environment(retrieval_variant=name) for name in names}

    listed = {name: [t.openai_schema for t in env.get_tools()] for name, env in envs.items()}
    tool_names = {
        name: [s["function"]["name"] for s in schemas] for name, schemas in listed.items()
    }
    plain = [
        name
        for name, v in variants.items()
        if not any((v.kb_search, v.kb_search_bm25, v.kb_search_dense, v.grep, v.shell))
    ]
    base_tools = set(tool_names[plain[0]])
    schemas: dict[str, Any] = {}
    for name in names:
        for schema in listed[name]:
            if schemas.setdefault(schema["function"]["name"], schema) != schema:
                raise ValueError(f"{BANKING}: two schemas for {schema['function']['name']}")

    values: dict[str, Any] = {}
    full_kb = golden = None
    for name, v in variants.items():
        template = Path(v.prompt_template).read_text()
        prefix = f"retrieval_configs.{name}."
        values.update(
            {
                prefix + "prompt_file": rel(v.prompt_template),
                prefix + "prompt_builder": v.build_prompt.__name__,
                prefix + "template": template,
                prefix + "agent_tools": tool_names[name],
                prefix + "retrieval_tools": [t for t in tool_names[name] if t not in base_tools],
                prefix + "supports_top_k": v.supports_top_k,
                prefix + "kb_search": spec(v.kb_search),
                prefix + "kb_search_bm25": spec(v.kb_search_bm25),
                prefix + "kb_search_dense": spec(v.kb_search_dense),
                prefix + "grep": spec(v.grep),
                prefix + "shell": spec(v.shell),
            }
        )
        per_task = {retrieval.build_policy(v, kb, task) for task in tasks[:2]}
        if len(per_task) > 1:  # the policy depends on the task: one per task, below
            golden = v
            continue
        policy = per_task.pop()
        values[prefix + "policy"] = policy
        values[prefix + "policy_sha256"] = sha256_text(policy)
        values[prefix + "policy_length"] = len(policy)
        if "{{full_knowledge_base}}" in template:
            full_kb = policy
    if golden is None or full_kb is None:
        raise ValueError(f"{BANKING}: no per-task config or no full-knowledge-base config")

    titles, ids = {d.title for d in docs}, {d.id for d in docs}
    golden_tasks = {}
    for task in tasks:
        policy = retrieval.build_policy(golden, kb, task)
        wanted = list(task.required_documents or [])
        golden_tasks[task.id] = {
            "required_documents": wanted,
            "not_found": [d for d in wanted if d not in titles and d not in ids],
            "matched_by_title": [d for d in wanted if d in titles],
            "policy_sha256": sha256_text(policy),
            "policy_length": len(policy),
        }

    def discoverable(toolkit: Any, extra: Any) -> dict[str, Any]:
        out = {}
        for name, method in toolkit.get_discoverable_tools().items():
            info = bank_tools.parse_discoverable_tool_docstring(method)
            out[name] = {
                "tool_type": getattr(method, TOOL_TYPE_ATTR).value,
                "mutates_state": getattr(method, MUTATES_STATE_ATTR),
                "tool_info": info,
                **extra(name, info),
                "python_parameters": python_parameters(method),
            }
        return out

    def fresh() -> Any:
        return bank_tools.KnowledgeTools(bank.get_db())

    agent_tools = discoverable(
        fresh(),
        lambda name, info: {
            "formatted": bank_tools.format_discoverable_tool_for_agent(info),
            "unlock_output": fresh().unlock_discoverable_agent_tool(name),
        },
    )
    user_tools = discoverable(
        bank_tools.KnowledgeUserTools(bank.get_db()),
        lambda name, info: {"give_output_no_args": fresh().give_discoverable_user_tool(name, "{}")},
    )
    user_env = envs[names[0]]
    by_task = {}
    for task in tasks:
        entry: dict[str, Any] = {"task_user_tools": task.user_tools}
        try:  # what the runner gives the user simulator: the task's selection, or none
            got = user_env.get_user_tools(include=task.user_tools) or None
            entry["gets"] = [tool.name for tool in got] if got else None
        except Exception as exc:  # noqa: BLE001 - the reference raises on an unknown name
            entry.update(gets=None, error=f"{type(exc).__name__}: {exc}")
        by_task[task.id] = entry
    user_schemas = [tool.openai_schema for tool in user_env.get_user_tools()]

    values.update(
        {
            "default_config": retrieval.DEFAULT_RETRIEVAL_VARIANT,
            "aliases": retrieval.RETRIEVAL_VARIANT_ALIASES,
            "cli_choices": sorted(get_all_retrieval_config_names()),
            "documents.count": len(docs),
            "documents.dir": rel(bank.KNOWLEDGE_DOCUMENTS_DIR),
            "components": {
                path.stem: rel(path) for path in sorted(Path(retrieval.COMPONENTS_DIR).glob("*.md"))
            },
            "composition.all_tools_dense_sentence": {
                name: retrieval.format_all_tools_dense_instructions(v)
                for name, v in variants.items()
                if v.kb_search_bm25 is not None and v.kb_search_dense is not None
            },
            "golden_retrieval_tasks": golden_tasks,
            "full_kb": {
                "documents": len(docs),
                "policy_sha256": sha256_text(full_kb),
                "policy_length": len(full_kb),
                "first_document": docs[0].id,
                "last_document": docs[-1].id,
            },
            "discoverable_tools.agent": agent_tools,
            "discoverable_tools.user": user_tools,
            "user_tools_by_task": by_task,
        }
    )
    values.update(model_text_values(retrieval, kb))
    tools = {
        "schemas": schemas,
        "agent": tool_names,
        "user": [schema["function"]["name"] for schema in user_schemas],
        "user_schemas": user_schemas,
    }
    return values, tools


# What the network backends send a model besides the query and the documents. The release keeps
# these in its retrieval modules rather than its data: the pointwise reranker's prompt and model,
# and the instruction a Qwen embedding model gets before each query.
PLACEHOLDER_KEYS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY")


@contextlib.contextmanager
def placeholder_keys():
    """API keys set to a placeholder for the block, so the release's clients can be built;
    every call they would make is answered by a stand-in, so nothing is ever sent."""
    saved = {name: os.environ.get(name) for name in PLACEHOLDER_KEYS}
    os.environ.update({name: "tau-mcp-placeholder" for name in PLACEHOLDER_KEYS})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class ClientStandIn:
    """Takes the place of an OpenAI client: records each chat or embedding request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        completions = SimpleNamespace(parse=self._chat, create=self._chat)
        self.beta = SimpleNamespace(chat=SimpleNamespace(completions=completions))
        self.chat = SimpleNamespace(completions=completions)
        self.embeddings = SimpleNamespace(create=self._embed)

    def _chat(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        message = SimpleNamespace(parsed=None, content=None, refusal=None)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])

    def _embed(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        count = len(kwargs.get("input") or [])
        return SimpleNamespace(data=[SimpleNamespace(embedding=[0.0]) for _ in range(count)])


def rating_request(reranker: Any, query: str, passage: str) -> tuple[str, str]:
    """(prompt template, model) of the reranker's request to rate one passage."""
    client = ClientStandIn()
    reranker.client = client
    reranker._rate_passage(query, "doc", passage)
    (request,) = client.requests
    messages = request["messages"]
    if len(messages) != 1 or messages[0]["role"] != "user":
        raise ValueError(f"{BANKING}: the reranker does not send one user message")
    return positional_template(messages[0]["content"], [query, passage]), request["model"]


def query_request_text(encoder: Any, query: str) -> str:
    """The text the query encoder's embedder sends a model for `query`."""
    embedder = encoder._get_embedder()
    client = ClientStandIn()
    embedder.client = client
    embedder.embed([query])
    (request,) = client.requests
    return request["input"][0]


def model_text_values(retrieval: Any, knowledge_base: Any) -> dict[str, Any]:
    """retrieval_model_texts: every config's search pipelines built as the release builds them
    (indexing skipped, placeholder keys), their model calls answered by stand-ins; each
    reranker's prompt and model, and what a query encoder puts before a query, must agree."""
    from tau2.knowledge.pipeline import RetrievalPipeline

    query, passage = sentinel("query", "\x06"), sentinel("document", "\x06")
    rerankers: set[tuple[str, str]] = set()
    prefixes: set[str] = set()
    with placeholder_keys(), patched(RetrievalPipeline, "index_documents", lambda *a: None):
        for name in retrieval.get_all_variant_names():
            variant = retrieval.resolve_variant(name)
            for spec in (variant.kb_search, variant.kb_search_bm25, variant.kb_search_dense):
                if spec is None:
                    continue
                pipeline = retrieval._create_kb_pipeline(spec, knowledge_base)
                for postprocessor in pipeline.postprocessors:
                    rerankers.add(rating_request(postprocessor, query, passage))
                for preprocessor in pipeline.input_preprocessors:
                    prefix = text_before(query_request_text(preprocessor, query), query)
                    if prefix:
                        prefixes.add(prefix)
    if len(rerankers) != 1 or len(prefixes) != 1:
        raise ValueError(
            f"{BANKING}: expected one reranker prompt and one query instruction, found "
            f"{len(rerankers)} and {len(prefixes)}"
        )
    (prompt, model), (prefix,) = rerankers.pop(), prefixes
    return {
        "retrieval_model_texts.reranker_prompt": prompt,
        "retrieval_model_texts.reranker_model": model,
        "retrieval_model_texts.qwen_query_prefix": prefix,
    }


# ------------------------------------------------------------------------- review


class ModelStandIn:
    """Takes the place of the reference's model call in its review modules: keeps each
    request, answers `reply`."""

    def __init__(self, message_type: Any) -> None:
        self.message_type = message_type
        self.calls: list[dict[str, Any]] = []
        self.reply = "{}"

    def __call__(self, model, messages, tools=None, tool_choice=None, call_name=None, **kwargs):
        self.calls.append(
            {
                "model": model,
                "messages": messages,
                "tools": tools,
                "tool_choice": tool_choice,
                "call_name": call_name,
                "kwargs": kwargs,
            }
        )
        return self.message_type(role="assistant", content=self.reply, cost=None)

    def last(self) -> tuple[list[Any], dict[str, Any]]:
        call = self.calls[-1]
        wire = {
            "model_argument": call["model"],
            "tools": call["tools"],
            "tool_choice": call["tool_choice"],
            "extra_kwargs_passed_to_generate": call["kwargs"],
            "call_name": call["call_name"],
        }
        return call["messages"], wire


def literal_values(model: Any, field: str) -> list[Any]:
    """The values a pydantic field's Literal type admits, in order (through Optional)."""
    found: list[Any] = []

    def walk(annotation: Any) -> None:
        if typing.get_origin(annotation) is typing.Literal:
            found.extend(typing.get_args(annotation))
        else:
            for inner in typing.get_args(annotation):
                walk(inner)

    walk(model.model_fields[field].annotation)
    return found


def review_values(ref: Reference) -> dict[str, Any]:
    """What the review commands show a model (full and user review, the authentication
    classifier, the full-duplex reviewers), the trajectory layout, vocabularies and models."""
    import litellm
    import tau2.cli as cli
    import tau2.evaluator.auth_classifier as auth
    import tau2.evaluator.hallucination_reviewer as hallucination
    import tau2.evaluator.review_llm_judge as full
    import tau2.evaluator.review_llm_judge_user_only as user_only
    import tau2.evaluator.reviewer as reviewer
    from tau2.data_model import simulation as sims
    from tau2.user.user_simulator import get_global_user_sim_guidelines
    from tau2.utils.display import MarkdownDisplay

    m = ref.message
    model = ModelStandIn(m.AssistantMessage)
    slot = {
        name: sentinel(name, "\x01")
        for name in (
            "policy",
            "simulation_guidelines",
            "user_instructions",
            "example_action_trajectory",
            "natural_language_assertions",
            "conversation",
            "user_guidelines",
            "model",
        )
    }

    def template(text: str) -> str:
        shown = {mark: name for name, mark in slot.items() if mark in text}
        text = as_template(text, shown)
        if "\x01" in text:
            raise ValueError("a sentinel was left in a review prompt")
        return text

    conversation = slot["conversation"]
    shown_as = classmethod(lambda cls, *args, **kwargs: conversation)
    guidelines = get_global_user_sim_guidelines()
    values: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        for module in (full, user_only, auth, hallucination):
            stack.enter_context(patched(module, "generate", model))
        for name in ("display_messages", "display_ticks_consolidated"):
            stack.enter_context(patched(MarkdownDisplay, name, shown_as))

        full.ConversationReviewer.review_conversation(
            policy=slot["policy"],
            simulation_guidelines=slot["simulation_guidelines"],
            user_instructions=slot["user_instructions"],
            example_action_trajectory=slot["example_action_trajectory"],
            natural_language_assertions=slot["natural_language_assertions"],
            full_trajectory=[],
            review_model=slot["model"],
        )
        (system, user), wire = model.last()
        full_user_template = template(user.content)
        values.update(
            {
                "full_review.system_prompt": system.content,
                "full_review.system_prompt_sha256": sha256_text(system.content),
                "full_review.user_prompt_template": full_user_template,
                "full_review.reply_format_block": fenced_json(system.content),
                "full_review.error_tags": listed_tags(system.content),
                **{f"full_review.wire.{k}": v for k, v in wire.items()},
            }
        )

        user_only.UserOnlyReviewer.review_user_simulation(
            user_guidelines=slot["user_guidelines"],
            user_instructions=slot["user_instructions"],
            full_trajectory=[],
            review_model=slot["model"],
        )
        (system, user), wire = model.last()
        user_system = template(system.content)
        values.update(
            {
                "user_review.system_prompt_template": user_system,
                "user_review.user_prompt_template": template(user.content),
                "user_review.reply_format_block": fenced_json(user_system),
                "user_review.error_tags": listed_tags(user_system),
                **{f"user_review.wire.{k}": v for k, v in wire.items()},
            }
        )

        auth.AuthenticationClassifier.classify(messages=[], model=slot["model"])
        (system, user), wire = model.last()
        values.update(
            {
                "auth_classifier.system_prompt": system.content,
                "auth_classifier.user_prompt_template": template(user.content),
                "auth_classifier.reply_format_block": fenced_json(system.content),
                **{f"auth_classifier.wire.{k}": v for k, v in wire.items()},
            }
        )

        airline = ref.base_tasks("airline")
        scenario = type(airline[0].user_scenario)
        with patched(scenario, "__str__", lambda self: slot["user_instructions"]):
            hallucination.FullDuplexHallucinationReviewer.review(
                task=airline[0], full_trajectory=[]
            )
        (system, user), wire = model.last()
        try:
            reviewer.check_hallucination(
                sims.SimulationRun.model_construct(ticks=None, messages=[]), airline[0]
            )
            behaviour = "accepted"
        except ValueError as exc:
            behaviour = f"{type(exc).__name__}: {exc}"
        values.update(
            {
                "hallucination_reviewer.text_mode_behaviour": behaviour,
                "hallucination_reviewer.system_prompt": system.content,
                "hallucination_reviewer.user_prompt_template": template(user.content),
                "hallucination_reviewer.model": wire["model_argument"],
                **{f"hallucination_reviewer.wire.{k}": v for k, v in wire.items()},
            }
        )

        def review_inputs(task: Any) -> dict[str, str]:
            """The values a full review of `task` fills into its user prompt."""
            user_info = sims.UserInfo(
                implementation="user_simulator",
                llm="stand-in",
                llm_args={},
                global_simulation_guidelines=guidelines,
            )
            full.ConversationReviewer.review(
                user_info=user_info,
                task=task,
                full_trajectory=[],
                policy=slot["policy"],
                review_model="stand-in",
            )
            (_, user), _ = model.last()
            return template_values(full_user_template, user.content)

        examples = []
        for domain, wanted in (
            ("airline", "0"),
            ("airline", "1"),
            ("retail", "0"),
            ("telecom", None),
        ):
            task = next(t for t in ref.base_tasks(domain) if wanted is None or t.id == wanted)
            filled = review_inputs(task)
            examples.append(
                {
                    "domain": domain,
                    "task_id": task.id,
                    **{
                        k: filled[k]
                        for k in (
                            "user_instructions",
                            "example_action_trajectory",
                            "natural_language_assertions",
                        )
                    },
                }
            )
        without_nl = copy.deepcopy(airline[0])
        without_nl.evaluation_criteria.nl_assertions = None

        def severities_kept(source: str) -> list[str]:
            kept = []
            for severity in literal_values(sims.ReviewError, "severity"):
                error = {"source": source, "severity": severity, "reasoning": "r"}
                model.reply = json.dumps({"errors": [error], "summary": ""})
                review = full.ConversationReviewer.review_conversation(
                    policy="p",
                    simulation_guidelines="g",
                    user_instructions="u",
                    example_action_trajectory="a",
                    natural_language_assertions="n",
                    full_trajectory=[],
                    review_model="stand-in",
                )
                if review.errors and review.errors[0].severity == severity:
                    kept.append(severity)
            model.reply = "{}"
            return kept

        values.update(
            {
                "inputs.examples": examples,
                "inputs.natural_language_assertions.example_none": review_inputs(without_nl)[
                    "natural_language_assertions"
                ],
                "vocabulary.agent_severities": severities_kept("agent"),
                "vocabulary.user_severities": severities_kept("user"),
            }
        )

    values.update(trajectory_templates(ref, MarkdownDisplay))
    first = ref.message.AssistantMessage(role="assistant", content="first")
    second = ref.message.UserMessage(role="user", content="second")
    both = MarkdownDisplay.display_messages([first, second])
    one, two = MarkdownDisplay.display_message(first), MarkdownDisplay.display_message(second)
    if not (both.startswith(one) and both.endswith(two)):
        raise ValueError("a conversation is not its messages joined")
    fence = regex_literals(inspect.getsource(ref.llm_utils.extract_json_from_llm_response))
    auth_reply = regex_literals(inspect.getsource(auth._parse_classification_response))
    if len(fence) != 1 or len(auth_reply) != 1:
        raise ValueError("the reply parsers do not use one pattern each")
    Action = ref.tasks.Action
    result_models = [
        sims.Review,
        sims.ReviewError,
        sims.UserOnlyReview,
        sims.UserOnlyReviewError,
        sims.AuthenticationClassification,
        sims.HallucinationCheck,
        sims.HallucinationCheckError,
    ]
    modes = [mode.value for mode in reviewer.ReviewMode]
    review_args = cli_review_defaults(cli)
    run_args = cli_defaults()
    values.update(
        {
            "trajectory_format.message_joiner": both[len(one) : len(both) - len(two)],
            "parsing.extract_json.fence_regex": fence[0],
            "parsing.auth.regex": auth_reply[0],
            "full_duplex.full_review_system_prompt": full.FULL_DUPLEX_SYSTEM_PROMPT,
            "full_duplex.full_review_user_prompt_template": full.FULL_DUPLEX_USER_PROMPT,
            "full_duplex.user_review_system_prompt_template": user_only.FULL_DUPLEX_SYSTEM_PROMPT,
            "full_duplex.user_review_user_prompt_template": user_only.FULL_DUPLEX_USER_PROMPT,
            "inputs.example_action_trajectory.action_key_order": list(Action.model_fields),
            "inputs.simulation_guidelines_sha256": sha256_text(guidelines),
            "vocabulary.review_modes": modes,
            "vocabulary.sources": literal_values(sims.ReviewError, "source"),
            "vocabulary.review_error_severity_literal": literal_values(
                sims.ReviewError, "severity"
            ),
            "vocabulary.user_only_review_error_severity_literal": literal_values(
                sims.UserOnlyReviewError, "severity"
            ),
            "vocabulary.error_tags_full": values["full_review.error_tags"],
            "vocabulary.error_tags_user": values["user_review.error_tags"],
            "vocabulary.auth_statuses": literal_values(sims.AuthenticationClassification, "status"),
            "result_models.field_order": {c.__name__: list(c.model_fields) for c in result_models},
            "result_models.json_schemas": {
                c.__name__: c.model_json_schema() for c in result_models
            },
            "result_models.simulation_field_order": list(sims.SimulationRun.model_fields),
            "defaults.review_model": review_args["review_model"],
            "defaults.review_model_provider_per_litellm": litellm.get_llm_provider(
                review_args["review_model"]
            )[1],
            "defaults.num_retries": ref.llm_utils.DEFAULT_MAX_RETRIES,
            "defaults.review_modes": modes,
            "defaults.cli_review_args": review_args,
            "defaults.cli_run_review_args": {
                k: v for k, v in run_args.items() if "review" in k or "hallucination" in k
            },
        }
    )
    return values


def cli_review_defaults(cli: Any) -> dict[str, Any]:
    """`tau2 review PATH`'s parsed arguments, caught where the command would start."""
    seen: dict[str, Any] = {}
    with patched(cli, "run_review", lambda args: seen.update(vars(args))):
        with patched(sys, "argv", ["tau2", "review", "PATH"]):
            cli.main()
    seen.pop("func", None)
    return seen


def trajectory_templates(ref: Reference, display: Any) -> dict[str, Any]:
    """How the review prompts lay a conversation out, one template per kind of message."""
    m = ref.message
    content, name = sentinel("content", "\x01"), sentinel("name", "\x01")
    arguments = {"k": "v"}
    arguments_text = json.dumps(arguments, indent=2)

    def shown(message: Any) -> str:
        return display.display_message(message)

    def template(text: str) -> str:
        if arguments_text in text:
            text = text.replace(arguments_text, "{arguments_json}")
        return text.replace(content, "{content}").replace(name, "{name}")

    def call() -> Any:
        return [m.ToolCall(id="i", name=name, arguments=arguments)]

    def tool(error: bool) -> str:
        texts = [
            shown(m.ToolMessage(id="i", role="tool", content=content, requestor=r, error=error))
            for r in ("assistant", "user")
        ]
        start = len(os.path.commonprefix(texts))
        end = len(os.path.commonprefix([t[::-1] for t in texts]))
        return template(texts[0][:start] + "{requestor}" + texts[0][len(texts[0]) - end :])

    numbered = shown(m.AssistantMessage(role="assistant", content=content, turn_idx=98765))
    plain = shown(m.AssistantMessage(role="assistant", content=content))
    if not numbered.endswith(plain):
        raise ValueError("the turn number is not a prefix of the message")
    key = "trajectory_format.templates."
    return {
        key + "turn_prefix": numbered[: len(numbered) - len(plain)].replace("98765", "{turn_idx}"),
        key + "assistant": template(plain),
        key + "user": template(shown(m.UserMessage(role="user", content=content))),
        key + "assistant_with_tool_calls": template(
            shown(m.AssistantMessage(role="assistant", content=content, tool_calls=call()))
        ),
        key + "assistant_tool_calls_only": template(
            shown(m.AssistantMessage(role="assistant", content=None, tool_calls=call()))
        ),
        key + "user_with_tool_calls": template(
            shown(m.UserMessage(role="user", content=content, tool_calls=call()))
        ),
        key + "tool": tool(False),
        key + "tool_error": tool(True),
        key + "system": template(shown(m.SystemMessage(role="system", content=content))),
    }


def documents(ref: Reference, layout: dict[str, Any]) -> dict[str, str]:
    """Relative file name -> file text, for every generated file."""
    values: dict[str, dict[str, Any]] = {
        "prompts.json": prompt_values(ref),
        "defaults.json": default_values(ref),
        f"{WORKFLOW}.json": {**source_values(), **workflow_values(ref)},
        "review.json": {**source_values(), **review_values(ref)},
    }
    for domain in TOOL_DOMAINS:
        values[f"tools/{domain}.json"] = tool_values(ref, domain)
    banking, banking_tools = banking_values(ref)
    values[f"{BANKING}.json"] = {**source_values(), **banking}
    values[f"tools/{BANKING}.json"] = banking_tools
    return {rel: serialize(fill(shape, values[rel])) for rel, shape in file_shapes(layout).items()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: TAU2_DATA_DIR=DATA python dump.py OUT_DIR", file=sys.stderr)
        return 2
    out_dir = Path(argv[0])
    texts = documents(Reference(), load_layout())
    for rel, text in texts.items():
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
