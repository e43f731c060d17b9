"""One import namespace (issue 29): every module of ours is `tau_mcp.<folder>...`; nothing imports a
bare `servers`, `harness`, `simulator`, `conversation`, `grading` or the old `tau_mcp_data`, in the
package, the tests or the scripts, and a run loads no module under those names."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib

from tests.support.data import ROOT
from tests.support.import_graph import CODE_FOLDERS

BARE = {*CODE_FOLDERS, "data", "tau_mcp_data"}
SOURCES = ("tau_mcp", *CODE_FOLDERS, "data", "tests", "scripts")


def _bare_imports(path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in BARE
        ]
    return found


def test_no_source_file_imports_a_bare_package_name():
    files = [p for folder in SOURCES for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 200
    offenders = [hit for path in files for hit in _bare_imports(path)]
    assert offenders == []


CODE_IN_STRINGS = re.compile(
    r"(?:\bfrom|\bimport)\s+(?:" + "|".join(sorted(BARE)) + r")(?:\.|\s+import\b)"
)
"""`from harness.cli import main` or `import servers.app` inside a string: code a subprocess runs."""


def test_no_code_in_a_string_imports_a_bare_package_name():
    offenders = []
    for path in (p for folder in SOURCES for p in (ROOT / folder).rglob("*.py")):
        if path.name == "test_namespace.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if CODE_IN_STRINGS.search(node.value):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
    assert CODE_IN_STRINGS.search("python -c 'from servers.cli import app; app()'")


def test_the_finder_sees_a_bare_import():
    """The check above can fail."""
    probe = ROOT / "tests" / "fixtures" / "__namespace_probe__.py"
    probe.write_text("import harness.cli\nfrom servers.engine import data\n")
    try:
        assert len(_bare_imports(probe)) == 2
    finally:
        probe.unlink()


def test_entry_points_name_the_namespace():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    targets = [*project["scripts"].values()]
    for group in project["entry-points"].values():
        targets += group.values()
    assert targets and all(t.startswith("tau_mcp.") for t in targets), targets


def test_a_run_loads_no_module_under_a_bare_name(tmp_path):
    code = (
        "import atexit, sys\n"
        "from tau_mcp.harness.cli import main\n"
        "sys.argv = ['tau-harness', 'run', '--domain', 'mock', '--agent', 'oracle',"
        " '--user', 'scripted', '--save-to', 'r.json']\n"
        f"names = {sorted(BARE)!r}\n"
        "atexit.register(lambda: print('BARE', sorted(m for m in sys.modules"
        " if m.split('.')[0] in names), flush=True))\n"
        "main()\n"
    )
    # Run from a folder holding its own `servers/` and `harness/` (a user's project): ours must
    # not be shadowed by them, nor theirs imported.
    for name in ("servers", "harness"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the user folder')\n")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert "BARE []" in out.stdout, out.stdout + out.stderr
