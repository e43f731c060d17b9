"""Our import graph under the one namespace, for grimp and import-linter.

The packaging maps the repository's top-level folders under `tau_mcp` (setup.py); grimp walks a
package's own folder and so would see only `tau_mcp/__init__.py`. This module lays the mapping out
as a folder of symbolic links (`<tmp>/tau_mcp/servers -> ./servers`, ...) and points grimp or
`lint-imports` at it, so both read the real files under their installed names.

`python tests/support/import_graph.py` runs `lint-imports` that way (CI does).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "tau_mcp"
CODE_FOLDERS = ("servers", "conversation", "grading", "simulator", "harness")
"""The folders whose modules import each other (data/ holds files only)."""


@contextlib.contextmanager
def namespace_tree() -> Iterator[Path]:
    """A temporary folder holding `tau_mcp/` as the installed names see it, made of links to
    the checkout's own files."""
    with tempfile.TemporaryDirectory(prefix="tau-mcp-graph-") as tmp:
        package = Path(tmp) / NAMESPACE
        package.mkdir()
        for module in (ROOT / NAMESPACE).glob("*.py"):  # the namespace's own modules
            (package / module.name).symlink_to(module)
        for folder in CODE_FOLDERS:
            (package / folder).symlink_to(ROOT / folder, target_is_directory=True)
        yield Path(tmp)


def build_graph():
    """grimp's graph of every module of ours (function-local and TYPE_CHECKING imports included),
    under the `tau_mcp.` names."""
    import grimp

    with namespace_tree() as tree:
        saved = sys.modules.pop(NAMESPACE, None)  # else grimp would find the installed package
        sys.path.insert(0, str(tree))
        importlib.invalidate_caches()
        try:
            # No cache: grimp's cache can serve a graph of files that have since changed.
            return grimp.build_graph(NAMESPACE, include_external_packages=False, cache_dir=None)
        finally:
            sys.path.remove(str(tree))
            if saved is not None:
                sys.modules[NAMESPACE] = saved


def lint_imports() -> subprocess.CompletedProcess[str]:
    """`lint-imports` (pyproject's layer contracts) over the namespace tree."""
    with namespace_tree() as tree:
        paths = [str(tree), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        return subprocess.run(
            ["lint-imports", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        )


if __name__ == "__main__":
    result = lint_imports()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.exit(result.returncode)
