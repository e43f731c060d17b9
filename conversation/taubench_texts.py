"""What the original τ-bench shows its models, read at run time from its data folder.

`$TAUBENCH_DATA_DIR/taubench/prompts/` holds the texts as the original rendered them for retail
test task 0: the user simulator's system prompt per strategy (with the task's instruction, and
the instruction-less one it sends while it is being built), its opening line, the verify and
reflect prompts around a transcript and a response, the act/react instructions and the act
agent's whole system prompt. The templates are cut out of those renderings here, around the
parts we know (the instruction, the transcript, the reply), and checked to rebuild them, so
nothing of the original's wording lives in our code. `few_shot_data/` holds the few-shot
agent's example conversations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.errors import DataError

USER_STRATEGIES = ("llm", "react", "verify", "reflection")
#: How the original's transcripts label a message of the simulated user's own replies: it plays
#: the `assistant` role of its model (the original's `map_role_label`; no recorded prompt has one).
ASSISTANT_LABEL = "Agent: "
#: The field of a few-shot file's lines that holds a displayed example.
DISPLAY_FIELD = "messages_display"


@dataclass(frozen=True)
class Frame:
    """A prompt around a transcript and a response: head + transcript + middle + response + tail."""

    head: str
    middle: str
    tail: str

    def render(self, transcript: str, response: str) -> str:
        return f"{self.head}{transcript}{self.middle}{response}{self.tail}"


@dataclass(frozen=True)
class UserPrompt:
    """A user strategy's system prompt: with an instruction, and the instruction-less form the
    original sends while it builds the simulator."""

    head: str
    tail: str
    bare: str

    def system(self, instruction: str | None) -> str:
        return self.bare if instruction is None else f"{self.head}{instruction}{self.tail}"


class TauBenchTexts:
    """The original τ-bench's model-facing texts under `<root>/taubench` (see the module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.prompts_dir = root / "taubench" / "prompts"
        if not self.prompts_dir.is_dir():
            raise DataError(
                f"no τ-bench prompts in {self.prompts_dir}: set TAUBENCH_DATA_DIR to a folder "
                "laid out as the pinned τ-bench release (tau-harness data fetch --taubench)"
            )
        llm = self._json("user_llm_task0.json")
        self.opening: str = _user_turn(llm)
        self.instruction_example: str = llm["instruction"]
        self.reply_example: str = llm["returned_first_message"]
        self.users = {s: self._user_prompt(s) for s in USER_STRATEGIES}
        self.labels, self.verify = self._frame("user_reflection_task0.json", 1)
        _, self.reflect = self._frame("user_reflection_task0.json", 2)
        self.message_repr = self._message_repr()

    # --- files ------------------------------------------------------------------------------
    def _path(self, name: str) -> Path:
        path = self.prompts_dir / name
        if not path.is_file():
            raise DataError(f"the τ-bench data folder lacks {path}")
        return path

    def _json(self, name: str) -> dict[str, Any]:
        return json.loads(self._path(name).read_text(encoding="utf-8"))

    def text(self, name: str) -> str:
        return self._path(name).read_text(encoding="utf-8")

    @property
    def version(self) -> str:
        """The release the texts come from (MANIFEST.json's `reference`), else the folder."""
        manifest = self.root / "MANIFEST.json"
        try:
            return str(json.loads(manifest.read_text())["reference"])
        except (OSError, ValueError, KeyError, TypeError):
            return str(self.root)

    # --- the user simulator -----------------------------------------------------------------
    def _user_prompt(self, strategy: str) -> UserPrompt:
        recorded = self._json(f"user_{strategy}_task0.json")
        rendered, instruction = recorded["system_prompt"], recorded["instruction"]
        if rendered.count(instruction) != 1:
            raise DataError(
                f"user_{strategy}_task0.json: the instruction is not in its prompt once"
            )
        head, tail = rendered.split(instruction)
        bare = recorded["construction_requests"][0]["messages"][0]["content"]
        return UserPrompt(head, tail, bare)

    def _frame(self, name: str, index: int) -> tuple[dict[str, str], Frame]:
        """A verify/reflect prompt of the recorded reset, cut around its transcript (the
        system prompt and the opening line) and its response (the recorded reply)."""
        recorded = self._json(name)
        asked = recorded["requests"][0]["messages"]
        prompt = recorded["requests"][index]["messages"][0]["content"]
        system, opening = asked[0]["content"], asked[1]["content"]
        at_system = prompt.index(system)
        line = prompt.rfind("\n", 0, at_system) + 1
        at_opening = prompt.index(opening, at_system + len(system))
        between = prompt[at_system + len(system) : at_opening]
        if not between.startswith("\n"):
            raise DataError(f"{name}: the transcript's lines are not where they should be")
        labels = {"system": prompt[line:at_system], "user": between[1:]}
        end = at_opening + len(opening)
        reply = self.reply_example
        at_reply = prompt.index(reply, end)
        frame = Frame(prompt[:line], prompt[end:at_reply], prompt[at_reply + len(reply) :])
        transcript = "\n".join((labels["system"] + system, labels["user"] + opening))
        if frame.render(transcript, reply) != prompt:
            raise DataError(f"{name}: its prompt does not rebuild from its parts")
        return labels, frame

    def _message_repr(self) -> tuple[str, str]:
        """The verify strategy's response is the repr of the model's message object (one line);
        its text around the repr of the reply's content."""
        prompt = self._json("user_verify_task0.json")["requests"][1]["messages"][0]["content"]
        shown = repr(self.reply_example)
        at = prompt.index(shown)
        start = prompt.rfind("\n", 0, at) + 1
        stop = prompt.find("\n", at)
        return prompt[start:at], prompt[at + len(shown) : stop]

    def label(self, role: str) -> str:
        if role in self.labels:
            return self.labels[role]
        return ASSISTANT_LABEL if role == "assistant" else f"{role.capitalize()}: "

    def transcript(self, messages: list[dict[str, Any]]) -> str:
        return "\n".join(f"{self.label(m['role'])}{m.get('content')}" for m in messages)

    def message_text(self, content: str | None) -> str:
        """How the original prints the model's reply object in the verify prompt."""
        head, tail = self.message_repr
        return f"{head}{content!r}{tail}"

    # --- the agents -------------------------------------------------------------------------
    def react_instruction(self, reasoning: bool) -> str:
        return self.text("react_instruction.txt" if reasoning else "act_instruction.txt")

    @property
    def tools_separator(self) -> str:
        """What the act/react system prompt puts between the policy and the tools' JSON (cut
        out of a recorded act prompt, `act_agent_<folder>_system_prompt.txt`)."""
        prefix, suffix = "act_agent_", "_system_prompt.txt"
        found = sorted(self.root.glob(f"taubench/prompts/{prefix}*{suffix}"))
        if not found:
            raise DataError(f"no {prefix}<domain>{suffix} in {self.root / 'taubench' / 'prompts'}")
        name = found[0].name
        folder = name[len(prefix) : -len(suffix)]
        recorded = self.text(name)
        domain = self.root / "taubench" / "domains" / folder
        wiki = (domain / "wiki.md").read_text(encoding="utf-8")
        tools = json.dumps(json.loads((domain / "tools.json").read_text(encoding="utf-8")))
        if not recorded.startswith(wiki) or tools not in recorded:
            raise DataError(f"{name} does not hold the {folder} policy and tools")
        return recorded[len(wiki) : recorded.index(tools)]

    def few_shot_file(self, folder: str) -> Path:
        """The few-shot examples of a domain folder (`retail`: MockRetailDomainEnv-few_shot.jsonl)."""
        where = self.root / "taubench" / "few_shot_data"
        found = sorted(p for p in where.glob("*.jsonl") if folder.lower() in p.name.lower())
        if len(found) != 1:
            raise DataError(f"no single few-shot file for '{folder}' in {where}")
        return found[0]


def _user_turn(recorded: dict[str, Any]) -> str:
    return recorded["requests"][0]["messages"][1]["content"]


def read_displays(path: Path) -> list[str]:
    """A few-shot file's examples, one JSON object a line (`messages_display`)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)[DISPLAY_FIELD] for line in lines if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"cannot read few-shot examples from {path}: {exc}") from None


@lru_cache(maxsize=4)
def taubench_texts(root: Path) -> TauBenchTexts:
    """The texts under a τ-bench data folder (the folder holding `taubench/`), read once."""
    return TauBenchTexts(root)


def texts_for_domain_folder(folder: Path) -> TauBenchTexts:
    """The texts of the data folder a τ-bench domain's folder (`<root>/taubench/domains/<d>`)
    is in."""
    return taubench_texts(folder.parents[2])
