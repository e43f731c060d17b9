"""A domain: its data models and toolkits (the spec) bound to a data folder (the domain).

Task sets: a domain's own tasks are its folder's `tasks.json` (or, with `DomainSpec.task_files`,
one task per file). The reference also registers named task sets for some domains, named after
the data folder and the file: `telecom_small` is `tasks_small.json` of the telecom folder. Any
`tasks_<name>.json` in a domain's folder is such a set (with its splits in
`split_tasks_<name>.json` when that exists, else one `base` split of all its tasks); a domain
bound to one (`Domain(..., task_set=...)`) serves that set's tasks instead of its own.

Where the data lives: by default tau2's layout, `tau2/domains/<folder>` of the data folder the
domains are loaded with. A domain whose data is elsewhere names its `DataLocation` (an
environment variable naming a root folder, and its layout under it; the original τ-bench's
domains use $TAUBENCH_DATA_DIR and `taubench/domains/<folder>`), and may keep its database as
one file per top-level field, read its tasks its own way (`DomainSpec.load_tasks`) and carry its
tool listing in its own folder (`DomainSpec.tools_file`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.canonical_doc import CANONICAL_JSON, TextFormat
from tau_mcp.servers.engine.cow import BaseState
from tau_mcp.servers.engine.errors import DataError, EngineError, UnknownTask, UnknownTaskSet
from tau_mcp.servers.engine.starts import StartCache
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.engine.toolkit import Toolkit
from tau_mcp.servers.engine.variants import Variant, VariantCatalog, VariantError


class EpisodeView(Protocol):
    """What a domain's hooks (`sync`, `hash_view`) use of an episode. They name only this, so
    the module needs nothing from episode.py (which builds on domains)."""

    domain: Domain
    agent_tools: Toolkit
    user_tools: Toolkit | None


# A domain's own tasks and splits: tasks by id, and split name -> task ids (see `load_tasks`).
TaskCatalog = tuple[dict[str, Task], dict[str, list[str]]]


@dataclass(frozen=True)
class DomainSpec:
    """Everything about a domain but the data folder it is loaded from (its `location` says
    where under that folder, or under which other root, its data is)."""

    name: str
    db_model: type[BaseModel]
    agent_tools: type[Toolkit]
    user_db_model: type[BaseModel] | None = None
    user_tools: type[Toolkit] | None = None
    policy_files: tuple[str, ...] = ("policy.md",)
    solo_policy_files: tuple[str, ...] = ("policy_solo.md",)
    # Called after every tool call and environment function (the reference's tool sync).
    sync: Callable[[EpisodeView], None] | None = None
    # Builds the policy from the texts of the policy files, in order; default: newline-joined.
    policy_layout: Callable[[list[str]], str] | None = None
    # Rewrites an episode's snapshot ({"agent_db", "user_db"}) before hashing, for values the
    # hash must not depend on (e.g. randomly minted ids); must not mutate its input.
    hash_view: Callable[[EpisodeView, dict[str, Any]], dict[str, Any]] | None = None
    # Splits a domain must offer (checked when the data is loaded).
    splits: tuple[str, ...] = ("base",)
    # Builds the domain's catalog of variants (banking_knowledge's retrieval configs), which
    # choose an episode's agent tools and policy; None for a domain with one set-up.
    variants: Callable[[Domain], VariantCatalog] | None = None
    # The folder under tau2/domains/ holding the data, when not named after the domain (a
    # domain that differs from another only in its policy shares that domain's folder).
    data_folder: str | None = None
    # Where the tasks are, relative to the folder, when not in tasks.json: a glob of files
    # holding one task each, read in sorted file-name order.
    task_files: str | None = None
    # The user's tools act on the agent's database: one database, no user database.
    shared_db: bool = False
    # Where the reference lists tools per variant of a run option (banking's retrieval
    # configs), the variant the domain's own toolkit is (see tool_listing.py).
    tool_variant: str | None = None
    # Where the data folder is (default: tau2's layout under the data folder given).
    location: datafiles.DataLocation = datafiles.TAU2_LOCATION
    # The database as one JSON file per top-level field (`<field>.json`), not `db.json`.
    db_file_per_field: bool = False
    # Reads the domain's own tasks and splits from its folder, when they are not tau2 task
    # files; a domain that has it serves no named task sets.
    load_tasks: Callable[[Path], TaskCatalog] | None = None
    # The reference's tool listing, a file of the domain's folder holding the agent's tools as
    # a JSON list of function schemas, when the data carries it there instead of tau2's
    # reference texts (see tool_listing.py).
    tools_file: str | None = None
    # The text the database's hash is taken of (None: canonical JSON, see canonical_doc.py).
    hash_format: TextFormat | None = None
    # Agent tools after whose call the conversation ends, the call's result included (the
    # original τ-bench's `transfer_to_human_agents`).
    terminate_tools: tuple[str, ...] = ()
    # COMMUNICATE looks only at the agent's replies to the user, assistant messages without
    # tool calls (the original τ-bench's `respond` actions); tau2 also reads the text of
    # messages that call tools.
    communicate_replies_only: bool = False
    # The benchmark the domain belongs to, which sets how its conversations run, the agents
    # and user simulators its names mean, its run defaults and whether a leaderboard takes it:
    # "tau2" (tau2-bench's domains) or "tau-bench" (the original τ-bench's).
    benchmark: str = "tau2"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def folder_name(self) -> str:
        return self.data_folder or self.name

    def folder(self, data_dir: Path) -> Path:
        """The domain's data folder, given the data folder domains are loaded with (DataError
        when the domain's own root folder is not set)."""
        return self.location.folder(data_dir, self.folder_name)


def _load_db(model: type[BaseModel], path: Path) -> BaseModel:
    return _validate_db(model, datafiles.load_structured(path), f"data file {path}")


def _load_db_per_field(model: type[BaseModel], folder: Path) -> BaseModel:
    """A database kept as one JSON file per top-level field, `<field>.json`."""
    raw = {name: datafiles.load_structured(folder / f"{name}.json") for name in model.model_fields}
    return _validate_db(model, raw, f"the data in {folder}")


def _validate_db(model: type[BaseModel], raw: Any, what: str) -> BaseModel:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DataError(
            f"{what} does not match the {model.__name__} schema "
            f"({exc.error_count()} errors; first at {where}: {first['msg']})"
        ) from None


def _load_task_list(path: Path) -> list[tuple[Path, Any]]:
    raw = datafiles.load_structured(path)
    if not isinstance(raw, list):
        raise DataError(f"data file {path} should hold a list of tasks")
    return [(path, item) for item in raw]


def _tasks_by_id(items: list[tuple[Path, Any]], listed_in: Path | None = None) -> dict[str, Task]:
    """Tasks by id; a malformed one names its file (and its position in a list file)."""
    tasks: dict[str, Task] = {}
    for index, (path, item) in enumerate(items):
        try:
            task = Task.model_validate(item)
        except ValidationError as exc:
            where = f"task #{index} in {path}" if listed_in is not None else f"task file {path}"
            raise DataError(f"{where} is malformed: {exc.errors()[0]['msg']}") from None
        tasks[task.id] = task
    return tasks


class Domain:
    """A domain's loaded data. DBs and tasks load lazily, once, and are then shared."""

    def __init__(self, spec: DomainSpec, data_dir: Path, task_set: str | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.data_dir = data_dir
        try:
            self.folder = spec.folder(data_dir)
        except DataError as exc:
            raise DataError(f"domain '{spec.name}': {exc}") from None
        if not self.folder.is_dir():
            raise DataError(f"domain folder missing: {self.folder}")
        # The named task set this domain serves; None: the domain's own tasks.
        self.task_set = self._check_task_set(task_set)
        self._lock = threading.Lock()
        # Each task's state right after its initialization, for new episodes of the task.
        self.starts = StartCache()
        # Other task sets of the same data, by name, loaded when an episode asks for one.
        self._other_sets: dict[str | None, Domain] = {}

    # --- databases --------------------------------------------------------------------------
    @cached_property
    def base(self) -> BaseState:
        text_format = self.spec.hash_format or CANONICAL_JSON
        if self.spec.db_file_per_field:
            return BaseState(_load_db_per_field(self.spec.db_model, self.folder), text_format)
        path = datafiles.find_db_file(self.folder, "db")
        if path is None:
            raise DataError(f"missing data file: {self.folder / 'db.json'} (or db.toml)")
        return BaseState(_load_db(self.spec.db_model, path), text_format)

    @cached_property
    def user_base(self) -> BaseState | None:
        if self.spec.user_db_model is None:
            return None
        path = datafiles.find_db_file(self.folder, "user_db")
        if path is None:
            # The reference builds the user DB from its defaults when no file exists.
            return BaseState(self.spec.user_db_model())
        return BaseState(_load_db(self.spec.user_db_model, path))

    # --- task sets --------------------------------------------------------------------------
    def task_sets(self) -> dict[str, str | None]:
        """The task sets this domain can serve: name -> tasks file (None: its own tasks). Its
        own tasks answer to the domain's name and the data folder's name."""
        sets: dict[str, str | None] = {self.name: None, self.spec.folder_name: None}
        if self.spec.load_tasks is not None:  # its tasks_*.json files are its own tasks
            return sets
        for path in sorted(self.folder.glob("tasks_*.json")):
            suffix = path.stem.removeprefix("tasks_")
            sets[f"{self.spec.folder_name}_{suffix}"] = path.name
        return sets

    def _check_task_set(self, name: str | None) -> str | None:
        if name is None:
            return None
        sets = self.task_sets()
        if name not in sets:
            raise UnknownTaskSet(
                f"unknown task set '{name}' for domain '{self.name}' "
                f"(have: {', '.join(sorted(sets))})"
            )
        return name if sets[name] is not None else None

    # --- tasks ------------------------------------------------------------------------------
    @property
    def task_set_file(self) -> str | None:
        """The tasks file of the bound task set (None: the domain's own tasks)."""
        return self.task_sets()[self.task_set] if self.task_set is not None else None

    @cached_property
    def _own_catalog(self) -> TaskCatalog:
        assert self.spec.load_tasks is not None
        return self.spec.load_tasks(self.folder)

    @cached_property
    def tasks(self) -> dict[str, Task]:
        if self.spec.load_tasks is not None:
            return self._own_catalog[0]
        set_file = self.task_set_file
        if set_file is not None:
            path = self.folder / set_file
            return _tasks_by_id(_load_task_list(path), path)
        if self.spec.task_files is not None:
            files = sorted(self.folder.glob(self.spec.task_files))
            if not files:
                raise DataError(f"no task files {self.folder / self.spec.task_files}")
            return _tasks_by_id([(path, datafiles.load_structured(path)) for path in files])
        path = self.folder / "tasks.json"
        return _tasks_by_id(_load_task_list(path), path)

    @cached_property
    def splits(self) -> dict[str, list[str]]:
        if self.spec.load_tasks is not None:
            return self._own_catalog[1]
        set_file = self.task_set_file
        stem = "tasks" if set_file is None else set_file.removesuffix(".json")
        path = self.folder / f"split_{stem}.json"
        if not path.is_file():
            return {"base": list(self.tasks)}
        raw = datafiles.load_structured(path)
        if not isinstance(raw, dict):
            raise DataError(f"data file {path} should map split names to task ids")
        return raw

    @property
    def default_split(self) -> str:
        """The split served when none is named: `base`, else the first split the domain
        declares that it has (the original τ-bench's `test`)."""
        splits = self.splits
        if "base" in splits:
            return "base"
        return next((name for name in self.spec.splits if name in splits), next(iter(splits)))

    def task(self, task_id: str, task_set: str | None = None) -> Task:
        """A task of this domain's tasks, or (`task_set` named) of that task set of its data:
        an episode created for a remote client bound to a set starts from the set's task."""
        tasks = self.tasks if task_set is None else self.tasks_of_set(task_set)
        task = tasks.get(task_id)
        if task is None:
            where = f"task set '{task_set}'" if task_set is not None else f"domain '{self.name}'"
            raise UnknownTask(f"unknown task '{task_id}' in {where}")
        return task

    def tasks_of_set(self, name: str) -> dict[str, Task]:
        """The tasks of a named task set of this domain's data (`task_sets()`; the domain's
        own name is its own tasks), whatever set this domain is bound to."""
        wanted = self._check_task_set(name)
        if wanted == self.task_set:
            return self.tasks
        with self._lock:
            other = self._other_sets.get(wanted)
            if other is None:
                other = self._other_sets[wanted] = Domain(self.spec, self.data_dir, wanted)
        return other.tasks

    def task_ids(self, split: str | None = "base") -> list[str]:
        if split is None:
            return list(self.tasks)
        if split not in self.splits:
            raise UnknownTask(
                f"unknown split '{split}' for domain '{self.name}' "
                f"(have: {', '.join(sorted(self.splits))})"
            )
        known = self.tasks
        return [t for t in self.splits[split] if t in known]

    # --- variants ---------------------------------------------------------------------------
    @cached_property
    def variants(self) -> VariantCatalog | None:
        return self.spec.variants(self) if self.spec.variants is not None else None

    def resolve_variant(
        self, name: str | None = None, kwargs: dict[str, Any] | None = None
    ) -> Variant | None:
        """The variant an episode asks for (None: the domain's default); None for a domain
        without variants, which refuses a name or options in one sentence."""
        catalog = self.variants
        if catalog is None:
            if name is not None or kwargs:
                raise VariantError(f"domain '{self.name}' has no retrieval configs")
            return None
        return catalog.resolve(name, kwargs)

    # --- texts ------------------------------------------------------------------------------
    @property
    def supports_solo(self) -> bool:
        return bool(self.spec.solo_policy_files)

    def policy(self, solo: bool = False) -> str:
        if solo and not self.supports_solo:
            raise EngineError(f"domain '{self.name}' does not support solo mode")
        files = self.spec.solo_policy_files if solo else self.spec.policy_files
        return self._join_texts(files)

    def _join_texts(self, files: tuple[str, ...]) -> str:
        texts = [datafiles.read_text(self.folder / f) for f in files]
        layout = self.spec.policy_layout
        return layout(texts) if layout is not None else "\n".join(texts)

    def load(self) -> None:
        """Read the databases and tasks now, so bad data fails at once; the canonical forms
        used for hashing are built when first needed (a harness's start-up skips them)."""
        _ = self.base, self.user_base, self.tasks

    def warm(self) -> None:
        """Load and cache everything now (a server does this before taking traffic)."""
        self.base.warm()
        if self.user_base is not None:
            self.user_base.warm()
        _ = self.tasks
