"""Write `tau2/reference_texts/` by asking the pinned reference release's own code what it shows a
model: prompt templates, scenario layout, judge prompt, tool schemas and run defaults.

Runs with the interpreter of a throwaway virtualenv that has the release installed (see
`harness.reference_texts.build`), never inside tau-mcp's own environment:

    TAU2_DATA_DIR=DATA_FOLDER python dump.py OUT_DIR

The documents' shape and format notes come from `layout.json` beside this file; every value
that the reference defines is read from its modules at run time, so nothing of its text lives in
our repository. The pure helpers at the top import nothing but the standard library, so tau-mcp's
tests can check them; everything that needs the reference is imported inside functions.
"""

from __future__ import annotations

import importlib.metadata
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

LAYOUT_FILE = Path(__file__).with_name("layout.json")
DOMAINS = ("mock", "airline", "retail", "telecom")
SOLO_DOMAINS = ("mock", "telecom")
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


def trial_seeds(seed: int, count: int) -> list[int]:
    """Per-trial seeds the way the reference draws them (Python's Mersenne Twister)."""
    rng = random.Random(seed)
    return [rng.randint(0, 1_000_000) for _ in range(count)]


def sentinel(name: str, mark: str = "\x03") -> str:
    return f"{mark}{name}{mark}"


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


def source_values(ref: Reference, data_default: str) -> dict[str, Any]:
    manifest = ref.data_dir / "MANIFEST.json"
    data = (
        json.loads(manifest.read_text()).get("source", data_default)
        if manifest.is_file()
        else data_default
    )
    return {
        "source.version": importlib.metadata.version("tau2"),
        "source.data": data,
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

    def func(arguments: dict[str, Any], name: str = "f") -> str:
        return Action(action_id="f", name=name, arguments=arguments).get_func_format()

    n, k, v = sentinel("N", "\x02"), sentinel("K", "\x02"), sentinel("V", "\x02")
    k1, k2 = sentinel("K1", "\x02"), sentinel("K2", "\x02")
    both = func({k1: "v1", k2: "v2"}, "n")[len("n(") : -1]
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
        prefix + "step_templates": {r: step(r, True) for r in ("assistant", "user")},
        prefix + "step_templates_without_function_args": {
            r: step(r, False) for r in ("assistant", "user")
        },
        prefix + "func_format.template": func({k: v}, n)
        .replace(n, "{name}")
        .replace(f"{k}={v}", "{args}"),
        prefix + "func_format.args_joiner": both.replace(f"{k1}=v1", "").replace(f"{k2}=v2", ""),
        prefix + "func_format.arg_template": as_template(
            func({k: v}, "n")[len("n(") : -1], {k: "key", v: "value"}
        ),
        prefix + "func_format.value_examples_json_to_rendered": {
            json.dumps(value): func({"x": value})[len("f(x=") : -1] for value in examples_in
        },
        prefix + "examples": examples,
    }


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


def prompt_values(ref: Reference, data_default: str) -> dict[str, Any]:
    first = ref.orchestrator.DEFAULT_FIRST_AGENT_MESSAGE
    return {
        **source_values(ref, data_default),
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


def default_values(ref: Reference, data_default: str) -> dict[str, Any]:
    c = ref.config
    cli = cli_defaults()
    return {
        **source_values(ref, data_default),
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


def tool_values(ref: Reference, domain: str, choices: dict[str, str]) -> dict[str, Any]:
    env = ref.build.build_environment(domain)
    agent = [tool.openai_schema for tool in env.get_tools()]
    try:
        user = [tool.openai_schema for tool in env.get_user_tools()]
    except Exception:  # noqa: BLE001 - the reference raises when a domain has no user toolkit
        user = []
    tasks = ref.base_tasks(domain)
    if any(task.user_tools is not None for task in tasks):
        raise ValueError(f"{domain}: a base task restricts the user's tools")
    simulator = ref.build.build_user("user_simulator", env, tasks[0], llm="fake", llm_args={})
    values: dict[str, Any] = {
        "domain": domain,
        "agent": agent,
        "user": user,
        "user_simulator_gets": choices["with_tools" if simulator.tools else "without_tools"],
    }
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


def documents(ref: Reference, layout: dict[str, Any]) -> dict[str, str]:
    """Relative file name -> file text, for every generated file."""
    data_default = layout["fallbacks"]["source.data"]
    out = {
        "prompts.json": serialize(fill(layout["prompts.json"], prompt_values(ref, data_default))),
    }
    for domain in DOMAINS:
        shape = layout["tools with solo" if domain in SOLO_DOMAINS else "tools without solo"]
        values = tool_values(ref, domain, layout["choices"]["user_simulator_gets"])
        out[f"tools/{domain}.json"] = serialize(fill(shape, values))
    out["defaults.json"] = serialize(
        fill(layout["defaults.json"], default_values(ref, data_default))
    )
    return out


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
