"""`tau-harness` with the τ-bench domains known by name, for tests that run the command line
before domain packs register them (`python -m tests.support.taubench_cli run --env retail ...`).

Registering them is what a pack will do; until then this adds their names to the registry's
list for this process only.
"""

from __future__ import annotations

from tau_mcp.servers.domains import registry

TAU_BENCH_DOMAINS = ("tau-bench-retail", "tau-bench-airline")


def register() -> None:
    missing = tuple(n for n in TAU_BENCH_DOMAINS if n not in registry.DOMAIN_NAMES)
    registry.DOMAIN_NAMES = (*registry.DOMAIN_NAMES, *missing)


if __name__ == "__main__":
    register()
    from tau_mcp.harness.cli import main

    main()
