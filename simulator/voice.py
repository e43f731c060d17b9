"""A scripted customer's own words: a task's scenario is written to a simulated user, in the
second person ("You want to cancel...", "Your user id is..."), and mixes what the customer
knows with instructions on how to behave ("If the agent refuses, insist"). A person playing the
agent should hear a customer instead: the statements turned into the first person, the
instructions left out.

The rewriting is plain word rules, with no model: `your` becomes `my`, `yours` `mine`, `you're`
`I'm`; `you` becomes `me` after a preposition or a verb that takes it as an object ("told you",
"for you") and `I` elsewhere, with `are`/`were` after it agreeing ("you were" -> "I was").
"""

from __future__ import annotations

import re
from typing import Any

from tau_mcp.simulator.scenario import reason_for_call

#: Words after which `you` is an object ("me"): prepositions and verbs that take a person.
_OBJECT_AFTER = frozenset(
    """
    to for with at from about of by on upon into onto toward towards without against
    tell tells told give gives gave given ask asks asked help helps helped let lets call calls
    called owe owes owed send sends sent show shows showed shown offer offers offered charge
    charges charged remind reminds reminded contact contacts contacted thank thanks thanked
    assure assured promise promised inform informs informed transfer transferred refund
    refunded pay paid email emailed allow allows allowed bill billed make makes made keep
    kept cost costs warn warned connect connected notify notified advise advised
    """.split()
)
_SIMPLE = {
    "your": "my",
    "yours": "mine",
    "yourself": "myself",
    "you're": "I'm",
    "you've": "I've",
    "you'd": "I'd",
    "you'll": "I'll",
}
#: `are`/`were` (and their negations) after `you` used as the subject.
_AGREEMENT = {"are": "am", "were": "was", "aren't": "'m not", "weren't": "wasn't"}
_SECOND_PERSON = re.compile(
    r"\b(you're|you've|you'd|you'll|yourself|yours|your|you)\b"
    r"(?:(\s+)(are|were|aren't|weren't)\b)?",
    re.IGNORECASE,
)
_LAST_WORD = re.compile(r"([A-Za-z']+)\W*$")
_NEXT_WORD = re.compile(r"\s+([A-Za-z']+)")
#: Words that follow an object `you`, never a subject one ("gave you back", "you and").
_NOT_A_VERB = frozenset(
    """
    and or but to for with about at from in on again back too as if when because so than
    clearly directly now today later before after there here that this
    """.split()
)
#: Things a customer has: after `you`, a `your` that lost its r ("You name is ...").
_OWNED = frozenset("name mobile phone reservation order account email address user".split())
_QUOTED = re.compile(r'"[^"\n]*(?:"|$)', re.MULTILINE)
#: A list marker ("- ", "1. ") or a short label ("My goal: ") at the start of a line.
_LINE_PREFIX = re.compile(r"^[ \t]*(?:[-*][ \t]+|\d+\.[ \t]+)?(?:[\w' ]{1,30}:[ \t]+)?", re.M)
#: Sentences that speak of the simulation rather than the customer's matter.
_META_WORDS = ("agent", "###", "role", "character", "simulat", "persona", "scenario")
#: Where sentences end: after . ! ? (and a closing quote or bracket), or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\s*\n\s*")
#: First words of instructions to a simulator ("If the agent...", "Insist once..."), which a
#: customer does not say.
_INSTRUCTION_START = frozenset(
    """
    if once when whenever unless ask tell insist end do don't never try make mention say
    accept be first then after before only always under please note remember keep wait
    refuse reject agree provide give confirm check dismiss
    """.split()
)

OPENING_FALLBACK = "I need some help, please."
#: At most this many lines after the opening.
MAX_DETAILS = 4


def first_person(text: str) -> str:
    """`text` with the second person addressed to a simulated user turned into the first.
    Quoted words ("...") are what the customer would say verbatim, their `you` the agent: kept."""
    out: list[str] = []
    position = 0
    for quoted in _QUOTED.finditer(text):
        out.append(_rewrite(text[position : quoted.start()]))
        out.append(quoted.group())
        position = quoted.end()
    out.append(_rewrite(text[position:]))
    return "".join(out)


def _rewrite(text: str) -> str:
    out: list[str] = []
    position = 0
    for match in _SECOND_PERSON.finditer(text):
        out.append(text[position : match.start()])
        position = match.end()
        word, gap, verb = match.group(1), match.group(2), match.group(3)
        capital = word[0].isupper()
        lower = word.lower()
        if lower != "you":
            said = _SIMPLE[lower]
            out.append(said[0].upper() + said[1:] if capital else said)
            if verb:
                out.append(gap + verb)
            continue
        following = _NEXT_WORD.match(text, match.end(1))
        if not verb and following is not None and following.group(1).lower() in _OWNED:
            out.append("My" if capital else "my")  # "You name is": a `your` missing its r
        elif not capital and _is_object(text[: match.start()], text[match.end(1) :]):
            out.append("me" + (gap + verb if verb else ""))
        elif verb:
            agreed = _AGREEMENT[verb.lower()]
            out.append("I" + agreed if agreed.startswith("'") else f"I{gap}{agreed}")
        else:
            out.append("I")
    out.append(text[position:])
    return "".join(out)


def _is_object(before: str, after: str) -> bool:
    """Whether `you` between these is an object: after a preposition or a verb that takes a
    person ("told you"), or before the end of a clause or a word that cannot follow a subject
    ("attracted you clearly")."""
    previous = _LAST_WORD.search(before[-40:])
    if previous is not None and previous.group(1).lower() in _OBJECT_AFTER:
        return True
    following = _NEXT_WORD.match(after)
    return following is None or following.group(1).lower() in _NOT_A_VERB


def _plain(text: str) -> str:
    """Markdown emphasis, list markers and leading labels ("My goal:") taken out."""
    text = text.replace("**", "").replace("__", "")
    return _LINE_PREFIX.sub("", text)


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def sayable(text: str) -> list[str]:
    """The sentences of `text` a customer would say, in the first person: not the ones that
    instruct the simulator (starting "If", "Insist", ...) or speak of the agent or the role."""
    kept = []
    for sentence in _sentences(first_person(_plain(text))):
        words = sentence.split()
        first = words[0].strip(",;:").lower() if words else ""
        lowered = sentence.lower()
        if first in _INSTRUCTION_START or any(word in lowered for word in _META_WORDS):
            continue
        kept.append(sentence)
    return kept


def _as_dict(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


def customer_lines(user_scenario: Any) -> tuple[str, list[str]]:
    """(the opening line, what the customer tells next, one line a turn): the reason for the
    call (its first three sentences open, the rest follow two at a time), what the customer
    knows (name, ids) first among the rest."""
    scenario = _as_dict(user_scenario)
    instructions = _as_dict(scenario.get("instructions")) if isinstance(scenario, dict) else None
    known: list[str] = []
    if isinstance(instructions, dict):
        said = sayable(str(instructions.get("reason_for_call") or ""))
        known = sayable(str(instructions.get("known_info") or ""))
    else:
        text = instructions if isinstance(instructions, str) else scenario
        said = sayable(text) if isinstance(text, str) else []
    if not said:
        said = sayable(reason_for_call(user_scenario)) or [OPENING_FALLBACK]
    opening, rest = said[:3], said[3:]
    details = [" ".join(known)] if known else []
    details += [" ".join(rest[i : i + 2]) for i in range(0, len(rest), 2)]
    return "Hi! " + " ".join(opening), details[:MAX_DETAILS]


_ANYTHING_ELSE = re.compile(r"\b(?:anything|something) else\b|\bother questions?\b", re.I)


def asks_if_done(text: str | None) -> bool:
    """Whether the agent's message asks if the customer needs anything more."""
    return bool(text and _ANYTHING_ELSE.search(text))
