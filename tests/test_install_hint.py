"""The command that adds an extra is the one that works for how tau-mcp was installed."""

from __future__ import annotations

import json
import shlex
import sys
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import pytest

from tau_mcp.harness import install_hint

REQUIRES = ['ray<3,>=2.40; extra == "ray"', "typer>=0.12", 'gymnasium<1.0,>=0.29.1; extra == "gym"']


class FakeDist:
    def __init__(self, direct_url: dict | None, installer: str = "pip") -> None:
        self.files = {"INSTALLER": installer + "\n"}
        if direct_url is not None:
            self.files["direct_url.json"] = json.dumps(direct_url)
        self.requires = REQUIRES

    def read_text(self, name: str) -> str | None:
        return self.files.get(name)


@pytest.fixture
def installed(monkeypatch, tmp_path):
    # as if the package ran from site-packages, not from this checkout
    monkeypatch.setattr(
        install_hint, "__file__", str(tmp_path / "site" / "tau_mcp" / "harness" / "x.py")
    )

    def set_up(dist, prefix=None):
        monkeypatch.setattr(install_hint, "distribution", lambda name: dist)
        monkeypatch.setattr(sys, "prefix", str(prefix or tmp_path / "venv"))

    return set_up


PY = shlex.quote(sys.executable)


def test_editable_checkout(installed):
    installed(FakeDist({"url": "file:///src/tau-mcp", "dir_info": {"editable": True}}))
    assert install_hint.install_command("ray") == f"{PY} -m pip install -e '/src/tau-mcp[ray]'"


def test_wheel_or_plain_pip_install(installed):
    installed(FakeDist({"url": "file:///tmp/tau_mcp-0.1.0-py3-none-any.whl", "archive_info": {}}))
    assert install_hint.install_command("ray") == f"{PY} -m pip install 'ray<3,>=2.40'"
    installed(FakeDist({"url": "file:///src/tau-mcp", "dir_info": {}}))
    assert install_hint.install_command("gym") == f"{PY} -m pip install 'gymnasium<1.0,>=0.29.1'"


def test_pipx(installed, tmp_path):
    prefix = tmp_path / ".local" / "pipx" / "venvs" / "tau-mcp"
    installed(FakeDist({"url": "file:///src/tau-mcp", "dir_info": {}}), prefix)
    assert install_hint.install_command("ray") == "pipx inject tau-mcp 'ray<3,>=2.40'"


def test_uv_tool_and_uv_pip(installed, tmp_path):
    prefix = tmp_path / "tools" / "tau-mcp"
    prefix.mkdir(parents=True)
    (prefix / "uv-receipt.toml").write_text("[tool]\n")
    installed(FakeDist({"url": "file:///src/tau-mcp", "dir_info": {}}, "uv"), prefix)
    assert install_hint.install_command("ray") == (
        "uv tool install --force --with 'ray<3,>=2.40' /src/tau-mcp"
    )
    installed(FakeDist({"url": "file:///w.whl", "archive_info": {}}, "uv"))
    assert install_hint.install_command("ray") == f"uv pip install --python {PY} 'ray<3,>=2.40'"


def test_a_source_tree_installs_itself_with_the_extra():
    root = Path(install_hint.__file__).resolve().parents[1]
    assert install_hint.install_command("ray") == f"{PY} -m pip install -e '{root}[ray]'"


def test_not_installed(monkeypatch, tmp_path):
    monkeypatch.setattr(
        install_hint, "__file__", str(tmp_path / "site" / "tau_mcp" / "harness" / "x.py")
    )

    def missing(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(install_hint, "distribution", missing)
    assert install_hint.install_command("ray") == f"{PY} -m pip install 'tau-mcp[ray]'"


def test_the_ray_refusal_names_the_command(monkeypatch):
    from tau_mcp.harness.distributed import ray_pool
    from tau_mcp.harness.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError) as refused:
        ray_pool.import_ray()
    assert str(refused.value).startswith("--ray needs Ray, which is not installed: ")
    assert "install" in str(refused.value)
