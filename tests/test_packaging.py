"""tau-mcp as a built wheel, installed the way Python tools are installed, used from a folder that
has nothing to do with the checkout.

The wheel is built from a copy of the source tree (so nothing of an earlier build or of the
working tree leaks in) with `pip wheel`, whose isolated build fetches setuptools from the package
registry. It is installed with `--no-deps` into a fresh virtualenv; the dependencies come from
this test's own environment through a `.pth` file naming its site-packages folders (plain path
entries: none of their `.pth` files, so no editable install of the checkout, is read). Every
import then resolves to the installed wheel, which the test checks before anything else.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.support.data import DATA_DIR, ROOT

pytestmark = pytest.mark.e2e

CODE = ("servers", "conversation", "grading", "simulator", "harness")
"""The code folders of the checkout; the wheel holds each as `tau_mcp/<folder>/`."""
NOT_SHIPPED = ("tests/", "scripts/", "docs/", "data/", ".ci/")


_SCRATCH = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
)


def _not_source(folder: str, names: list[str]) -> set[str]:
    """What a checkout holds besides its source: caches and build output anywhere, and the
    checkout's own `results/` folder (runs' output; `harness/results/` is code)."""
    skipped = set(_SCRATCH(folder, names))
    if Path(folder) == ROOT and "results" in names:
        skipped.add("results")
    return skipped


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=_not_source)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(work / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if built.returncode != 0 and "satisfies the requirement setuptools" in built.stderr:
        pytest.skip("the build backend (setuptools) could not be fetched from the package registry")
    assert built.returncode == 0, built.stderr
    (found,) = (work / "dist").glob("tau_mcp-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv holding the wheel, its dependencies borrowed from this environment."""
    home = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True)
    python = home / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [*site.getsitepackages(), site.getusersitepackages()]
    deps = [p for p in ours if Path(p).is_dir() and Path(p).resolve() != ROOT.resolve()]
    (Path(purelib) / "zz_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    return home


@pytest.fixture
def clean_env(tmp_path) -> dict[str, str]:
    """No data configured, no fetched data, nothing of the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("TAU2_DATA_DIR", "PYTHONPATH")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), COLUMNS="120", NO_COLOR="1")
    return env


def _run(venv: Path, tool: str, *args: str, cwd: Path, env: dict[str, str], timeout=300):
    return subprocess.run(
        [str(venv / "bin" / tool), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_wheel_holds_every_package_and_the_data_and_nothing_test_only(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for package in CODE:
        for init in (ROOT / package).rglob("__init__.py"):
            wanted = f"tau_mcp/{init.relative_to(ROOT).as_posix()}"
            assert wanted in names, f"{init} is not in the wheel"
    demo = ROOT / "data" / "demo"
    for file in (p for p in demo.rglob("*") if p.is_file()):
        assert f"tau_mcp/data/demo/{file.relative_to(demo).as_posix()}" in names
    for needed in (
        "tau_mcp/__init__.py",
        "tau_mcp/data/__init__.py",
        "tau_mcp/data/reference_pins.json",
        "tau_mcp/harness/report/templates/report.html.j2",
        "tau_mcp/harness/reference_texts/layout.json",
        "tau_mcp/harness/reference_texts/dump.py",
        "tau_mcp/harness/presets/tau2-leaderboard.toml",
    ):
        assert needed in names
    assert not [n for n in names if n.startswith(NOT_SHIPPED)]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "tau-harness = tau_mcp.harness.cli:main" in scripts
    assert "tau-server = tau_mcp.servers.cli:app" in scripts
    metadata = zipfile.ZipFile(wheel).read(entry_points.replace("entry_points.txt", "METADATA"))
    assert b"matplotlib" not in metadata  # the report draws its own charts


def test_the_wheel_has_one_top_level_name(wheel):
    """Everything installs under `tau_mcp`: no generic top-level package (`servers`, `harness`,
    ...) to clash with PyPI's or with a user's own folders (issue 29)."""
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert top == {"tau_mcp"}


def test_installed_wheel_runs_from_an_unrelated_folder(venv, clean_env, tmp_path):
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import tau_mcp.harness as harness, tau_mcp.data as tau_mcp_data, tau_mcp.servers.engine.data as d; "
         "print(harness.__file__, tau_mcp_data.__file__, d.DEMO_DIR, d.PINS_FILE, sep='\\n')"],
        cwd=tmp_path, env=clean_env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert all(Path(p).is_relative_to(venv.resolve()) for p in where), where

    version = _run(venv, "tau-harness", "--version", cwd=tmp_path, env=clean_env)
    assert version.stdout.strip() == "tau-harness 0.1.0"

    run = _run(
        venv, "tau-harness", "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted",
        cwd=tmp_path, env=clean_env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (saved,) = (tmp_path / "results").glob("*_mock_oracle_scripted.json")
    document = json.loads(saved.read_text())
    assert len(document["simulations"]) == 5
    assert {s["reward_info"]["reward"] for s in document["simulations"]} == {1.0}
    assert document["info"]["git_commit"] == "unknown"  # not the repository it happens to run in


def test_installed_server_answers_health(venv, clean_env, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(venv / "bin" / "tau-server"), "serve", "--domains", "mock", "--port", str(port)],
        cwd=tmp_path,
        env=clean_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    assert r.status == 200 and json.loads(r.read())["domains"] == ["mock"]
                    break
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "tau-server did not come up"
                time.sleep(0.3)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_installed_data_commands(venv, clean_env, tmp_path):
    verify = _run(venv, "tau-harness", "data", "verify", cwd=tmp_path, env=clean_env)
    assert verify.returncode == 1 and "Traceback" not in verify.stdout + verify.stderr
    assert (
        "no reference data is configured" in verify.stderr or "pinned files fail" in verify.stderr
    )
    if (DATA_DIR / "tau2" / "domains").is_dir():  # the pins read from the wheel, on real data
        real = _run(
            venv, "tau-harness", "data", "verify", "--data-dir", str(DATA_DIR), cwd=tmp_path,
            env=clean_env,
        )  # fmt: skip
        assert real.returncode == 0 and "pinned files match" in real.stdout, real.stderr
    offline = {k: v for k, v in clean_env.items() if k.lower() != "no_proxy"}
    offline.update(https_proxy="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    fetch = _run(
        venv, "tau-harness", "data", "fetch", "--no-texts", "--timeout", "10", cwd=tmp_path,
        env=offline,
    )  # fmt: skip
    assert fetch.returncode == 1
    assert "Traceback" not in fetch.stdout + fetch.stderr
    lines = fetch.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: could not download"), fetch.stderr
