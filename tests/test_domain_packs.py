"""Domain packs: how domains are found (installed entry points, pack folders), settled (clashes)
and imported (lazily, a broken pack costing only its own name), in-process.

Each test writes its own pack with `domain new`'s writer under a name of its own (a pack's
module stays imported for the rest of the process, so no two tests share one).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_mcp.harness.scaffold.pack import PackNames, write_pack
from tau_mcp.servers.domains import discovery, registry
from tau_mcp.servers.engine.data import DataLocation
from tau_mcp.servers.engine.errors import DomainPackError, UnknownDomain
from tests.support.data import DEMO_DIR

_numbers = itertools.count(1)


def unique(prefix: str = "pack") -> str:
    return f"{prefix}{os.getpid()}x{next(_numbers)}"


@pytest.fixture
def pack_path(monkeypatch):
    """Sets $TAU_DOMAIN_PATH to the given folders (the registry reads it at each lookup)."""

    def use(*folders: Path) -> None:
        monkeypatch.setenv(discovery.PATH_ENV, os.pathsep.join(str(f) for f in folders))

    monkeypatch.delenv(discovery.PATH_ENV, raising=False)
    return use


def new_pack(tmp_path: Path, name: str | None = None, declared: str | None = None) -> Path:
    """A pack folder written by `domain new`; `declared` renames its entry point only."""
    name = name or unique()
    folder = tmp_path / name
    write_pack(name, folder)
    if declared is not None:
        pyproject = folder / "pyproject.toml"
        pyproject.write_text(pyproject.read_text().replace(f"\n{name} = ", f"\n{declared} = ", 1))
    return folder


def test_tau_mcps_own_domains_are_declared_like_a_packs():
    own = [d for d in discovery.installed() if d.builtin]
    assert {"mock", "airline", "retail", "telecom", "telecom-workflow", "banking_knowledge"} <= {
        d.name for d in own
    }
    assert all(d.target.startswith("tau_mcp.servers.domains.") for d in own)
    assert all(d.target.endswith(":SPEC") for d in own)


def test_a_checkout_without_metadata_reads_its_own_pyproject(monkeypatch):
    monkeypatch.setattr(discovery, "entry_points", lambda group: [])
    own = discovery.installed()
    assert {d.name for d in own} >= {"mock", "airline"} and all(d.builtin for d in own)


def test_a_pack_folder_is_listed_without_importing_it_and_loads_when_used(tmp_path, pack_path):
    folder = new_pack(tmp_path)
    name = folder.name
    pack_path(folder)
    assert name in registry.domain_names() and "mock" in registry.domain_names()
    module = PackNames(name).module
    assert module not in sys.modules  # listed from its pyproject.toml alone
    domain = registry.load_domains([name], DEMO_DIR)[name]
    assert module in sys.modules
    assert domain.folder == folder / "src" / module / "data"
    assert sorted(domain.tasks) == ["downgrade", "plan_price", "upgrade_with_code"]
    assert registry.problems() == []


def test_a_folder_of_packs_and_the_same_pack_found_twice(tmp_path, pack_path):
    parent = tmp_path / "packs"
    first, second = new_pack(parent), new_pack(parent)
    pack_path(parent, first)  # the folder of packs, and one of them again
    names = registry.domain_names()
    assert first.name in names and second.name in names
    assert registry.problems() == []


def test_a_pack_named_like_one_of_ours_is_refused_and_ours_keeps_working(tmp_path, pack_path):
    folder = new_pack(tmp_path, declared="mock")
    pack_path(folder)
    (problem,) = registry.problems()
    assert problem == (
        f"domain 'mock' of the pack folder {folder} is refused: tau-mcp's own domain 'mock' "
        "has that name (rename the pack)"
    )
    assert registry.refusals("mock") == [problem]
    assert registry.declaration("mock").builtin
    assert registry.domain_spec("mock").name == "mock"


def test_two_packs_of_one_name_are_both_refused_and_others_work(tmp_path, pack_path):
    name = unique("twin")
    one = new_pack(tmp_path / "a", name)
    other = new_pack(tmp_path / "b", unique(), declared=name)
    pack_path(one, other)
    with pytest.raises(DomainPackError) as refused:
        registry.domain_spec(name)
    sentence = str(refused.value)
    assert sentence.startswith(f"domain '{name}' is declared by two packs, the pack folder {one}")
    assert str(other) in sentence and sentence.endswith("so neither is used (rename one)")
    assert "\n" not in sentence
    assert name not in registry.domain_names()
    assert registry.domain_spec("mock").name == "mock"


def test_a_pack_that_fails_to_import_costs_only_its_name(tmp_path, pack_path):
    broken, fine = new_pack(tmp_path), new_pack(tmp_path)
    module = PackNames(broken.name).module
    models = broken / "src" / module / "models.py"
    models.write_text("import no_such_module_anywhere\n" + models.read_text())
    pack_path(broken, fine)
    with pytest.raises(DomainPackError) as failed:
        registry.domain_spec(broken.name)
    assert str(failed.value) == (
        f"domain '{broken.name}' of the pack folder {broken} fails to load: "
        "ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    )
    with pytest.raises(DomainPackError):  # the failure is kept, not retried half-imported
        registry.domain_spec(broken.name)
    assert registry.load_domains([fine.name], DEMO_DIR)[fine.name].tasks
    assert registry.domain_spec("mock").name == "mock"
    statuses = {s.name: s for s in registry.statuses(DEMO_DIR)}
    assert statuses[broken.name].problem == str(failed.value)
    assert statuses[fine.name].folder is not None and statuses["mock"].folder is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("SPEC = None", "fails to load: {module}:SPEC is a NoneType, not a DomainSpec"),
        (
            "SPEC = __import__('dataclasses').replace(SPEC, name='other')",
            "fails to load: {module}:SPEC is named 'other' (the entry point's name and the "
            "spec's must agree)",
        ),
    ],
)
def test_a_pack_must_declare_its_own_spec(tmp_path, pack_path, change, message):
    folder = new_pack(tmp_path)
    module = PackNames(folder.name).module
    init = folder / "src" / module / "__init__.py"
    init.write_text(init.read_text() + f"\n{change}\n")
    pack_path(folder)
    with pytest.raises(DomainPackError, match="fails to load") as failed:
        registry.domain_spec(folder.name)
    assert str(failed.value).endswith(message.format(module=module))


@pytest.mark.parametrize(
    ("declared", "why"),
    [
        ("check", "'check' is reserved for `tau-harness domain check`"),
        ("new", "'new' is reserved for `tau-harness domain new`"),
        ("9lives", "'9lives' is not a domain name"),
        ('"two words"', "'two words' is not a domain name"),
    ],
)
def test_bad_names_are_refused(tmp_path, pack_path, declared, why):
    folder = new_pack(tmp_path, declared=declared)
    pack_path(folder)
    (problem,) = registry.problems()
    assert problem.startswith(f"domain '{declared.strip(chr(34))}' of the pack folder {folder}")
    assert why in problem
    assert folder.name not in registry.domain_names()


def test_folders_that_hold_no_pack_are_said_in_one_sentence(tmp_path, pack_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    no_group = tmp_path / "nogroup"
    no_group.mkdir()
    (no_group / "pyproject.toml").write_text('[project]\nname = "x"\n')
    bad_toml = tmp_path / "badtoml"
    bad_toml.mkdir()
    (bad_toml / "pyproject.toml").write_text("[project\n")
    pack_path(empty, no_group, bad_toml, tmp_path / "missing")
    problems = registry.problems()
    assert problems[0].startswith(f"domain path {empty} holds no domain pack")
    assert problems[1].startswith(f"the pack folder {no_group} declares no domain")
    assert problems[2].startswith(f"cannot read {bad_toml / 'pyproject.toml'}")
    assert problems[3] == f"domain path {tmp_path / 'missing'} is not a folder"
    assert "mock" in registry.domain_names()


def test_unknown_names_list_the_known_ones(tmp_path, pack_path):
    folder = new_pack(tmp_path)
    pack_path(folder)
    with pytest.raises(UnknownDomain) as unknown:
        registry.domain_spec("nosuch")
    assert str(unknown.value).startswith("unknown domain 'nosuch' (known: ")
    assert folder.name in str(unknown.value) and "mock" in str(unknown.value)


def test_domain_paths_go_ahead_of_the_variable_and_reach_child_processes(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.PATH_ENV, "/somewhere/else")
    folder = new_pack(tmp_path)
    registry.add_domain_paths([folder, folder])
    assert os.environ[discovery.PATH_ENV] == os.pathsep.join([str(folder), "/somewhere/else"])
    code = "from tau_mcp.servers.domains.registry import domain_names; print(domain_names())"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert folder.name in child.stdout, child.stderr


def test_data_beside_a_packs_code(tmp_path, monkeypatch):
    module_file = tmp_path / "pkg" / "__init__.py"
    location = DataLocation.beside(module_file)
    assert location.folder(DEMO_DIR, "whatever") == tmp_path / "pkg" / "data"
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.setenv("PKG_DATA", str(other))
    assert DataLocation.beside(module_file, env_var="PKG_DATA").folder(DEMO_DIR, "x") == other
