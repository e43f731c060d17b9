"""Set-up every entry point shares, written once: loading a domain and opening the backend its
episodes live on.

The command line, `tau-harness serve`, the worker processes, the Ray actors and the Gymnasium,
verifiers and Inspect integrations all start here, so a URL means the same thing everywhere.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from tau_mcp.conversation import collector
from tau_mcp.harness import redaction
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.servers.engine.domain import Domain

Readiness = Literal["load", "warm", "lazy"]

log = logging.getLogger("tau_mcp.domains")


def load_domain(
    name: str,
    data_dir: str | Path | None,
    ready: Readiness = "load",
    task_set: str | None = None,
    domain_paths: Iterable[str | os.PathLike] | None = None,
) -> Domain:
    """One domain bound to a data folder (and to a named task set of it, `--task-set-name`:
    None is the domain's own tasks), found among tau-mcp's domains and the installed packs,
    or in the pack folders `domain_paths` (`--domain-path`) and `$TAU_DOMAIN_PATH` name.
    `load` reads its databases and tasks now (bad data fails at once; canonical forms wait
    for the first grading, so start-up reaches work sooner); `warm` builds everything now (a
    long-lived process that grades a lot); `lazy` reads nothing yet."""
    from tau_mcp.servers.domains import registry

    registry.add_domain_paths(domain_paths or ())
    for refused in registry.refusals(name):  # a pack named like one of ours: say so
        log.warning("warning: %s", refused)
    with collector.paused():  # the domain's data lives as long as the process
        domain = registry.load_domains([name], data_dir, task_set)[name]
        if ready == "load":
            domain.load()
        elif ready == "warm":
            domain.warm()
    return domain


_shared: dict[tuple[str, str, str | None], Domain] = {}
_shared_lock = threading.Lock()


def shared_domain(
    name: str,
    data_dir: str | Path | None,
    task_set: str | None = None,
    domain_paths: Iterable[str | os.PathLike] | None = None,
) -> Domain:
    """A warm domain (bound to `task_set`, if named) loaded once per process and shared by
    every environment or task that asks for it (its data is read-only)."""
    key = (name, str(data_dir or ""), task_set)
    with _shared_lock:
        domain = _shared.get(key)
        if domain is None:
            domain = _shared[key] = load_domain(
                name, data_dir, ready="warm", task_set=task_set, domain_paths=domain_paths
            )
        return domain


async def open_backend(
    domain: Domain, server: str | None = None, token: str | None = None
) -> EpisodeBackend:
    """The backend a run's episodes live on: the running `tau-server` at the URL `server`
    (checked to serve the domain), else the server app in this process, with no socket."""
    from tau_mcp.harness.backends.http import in_process_backend, remote_backend

    redaction.remember(token)  # never written or printed (see harness.redaction)
    if server:
        return await remote_backend(server, token, domain.name)
    return await in_process_backend({domain.name: domain}, token)
