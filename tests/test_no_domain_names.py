"""Nothing outside the built-in domains' own folders names a domain.

Servers, harness, simulated users, grading and conversation take domains by name from the
registry, so a pack works everywhere a built-in domain does (issue 30). This test reads every
string the code holds (help texts, defaults, comparisons; not comments or docstrings, which may
use a domain as an example) and fails on any that names one of tau-mcp's domains.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tau_mcp.servers.domains import discovery

ROOT = Path(__file__).resolve().parents[1]
CODE = ("servers", "harness", "simulator", "conversation", "grading", "tau_mcp")
#: Files that must name domains, and why. Keep it short.
ALLOWED = {
    # Runs the reference's own code to record its texts: it asks the reference about its domains.
    "harness/reference_texts/dump.py",
}


def builtin_domains() -> list[str]:
    return sorted({d.name for d in discovery.installed() if d.builtin})


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def _own_folder(path: Path) -> bool:
    """A built-in domain's own folder (servers/domains/<package>/), the registry excepted."""
    parts = path.relative_to(ROOT).parts
    return parts[:2] == ("servers", "domains") and len(parts) > 3


def named_domains(path: Path, names: list[str]) -> list[tuple[int, str]]:
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            match = pattern.search(node.value)
            if match:
                hits.append((node.lineno, match.group(1)))
    return hits


def test_the_registry_knows_the_builtin_domains():
    assert len(builtin_domains()) >= 6


def test_no_code_outside_the_domains_names_a_domain():
    names = builtin_domains()
    found = []
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if _own_folder(path) or relative in ALLOWED:
                continue
            found += [f"{relative}:{line}: {name}" for line, name in named_domains(path, names)]
    assert found == [], "code naming a domain:\n" + "\n".join(found)


def test_the_check_sees_a_domain_named_in_code(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Docstrings may say airline."""\n'
        "# and comments may say retail\n"
        'HELP = "e.g. --domain telecom"\n'
        'OTHER = "telecom-workflow is its own name; not-mock-ish neither"\n'
    )
    assert named_domains(sample, builtin_domains()) == [(3, "telecom"), (4, "telecom-workflow")]
