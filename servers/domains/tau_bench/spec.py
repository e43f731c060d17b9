"""The domain spec every τ-bench domain shares: where its data lives and how it runs.

The data comes from $TAUBENCH_DATA_DIR, laid out as `taubench/domains/<domain>/` (the tables as
one JSON file each, `wiki.md` the policy, `tools.json` the tool listing, `tasks_<split>.json`
the tasks), read at run time; nothing of it is copied into tau-mcp.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel

from tau_mcp.servers.domains.tau_bench.data_hash import DATA_HASH
from tau_mcp.servers.domains.tau_bench.tasks import catalog_loader
from tau_mcp.servers.domains.tau_bench.toolkit import OriginalTools
from tau_mcp.servers.engine.data import DataLocation, bundled
from tau_mcp.servers.engine.domain import DomainSpec

ENV_VAR = "TAUBENCH_DATA_DIR"
PINS_FILE = "taubench_pins.json"


def taubench_cache_dir() -> Path:
    """Where `tau-harness data fetch --taubench` puts the pinned release (one folder per pinned
    commit); the τ-bench domains read it when $TAUBENCH_DATA_DIR is unset."""
    try:
        commit = json.loads(bundled(PINS_FILE).read_text())["commit"]
    except (OSError, ValueError, KeyError):
        commit = "unpinned"
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "tau-mcp" / f"taubench-data-{commit[:12]}"


LOCATION = DataLocation(
    layout="taubench/domains/{folder}", env_var=ENV_VAR, default_root=taubench_cache_dir()
)
# The original ends an episode right after one of these tools runs.
TERMINATE_TOOLS = ("transfer_to_human_agents",)
BENCHMARK = "tau-bench"


def tau_bench_spec(
    name: str,
    folder: str,
    db_model: type[BaseModel],
    tools: type[OriginalTools],
    splits: tuple[str, ...],
) -> DomainSpec:
    """A τ-bench domain: its data in `taubench/domains/<folder>` of $TAUBENCH_DATA_DIR, its
    tasks in the given splits. The agent's policy is `wiki.md` alone, as the original's
    tool-calling agent is shown it; there is no user database, user tool or solo mode."""
    return DomainSpec(
        name=name,
        db_model=db_model,
        agent_tools=tools,
        policy_files=("wiki.md",),
        solo_policy_files=(),
        splits=splits,
        data_folder=folder,
        location=LOCATION,
        db_file_per_field=True,
        load_tasks=catalog_loader(splits),
        tools_file="tools.json",
        hash_format=DATA_HASH,
        terminate_tools=TERMINATE_TOOLS,
        communicate_replies_only=True,
        benchmark=BENCHMARK,
    )
