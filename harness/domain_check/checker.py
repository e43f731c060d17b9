"""`check_domain`: every check of a domain, in stages, each timed; the static ones first (the
data, the tools, what tasks name), then the engine's gold replays, then simulations and
gradings on one in-process backend (the oracle's, the idle agent's), then the warnings.

A stage that cannot run (the tasks did not load) is skipped and says why; the data's errors
are then the report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tau_mcp.grading import Grader, Judge
from tau_mcp.harness.backends import EpisodeOptions
from tau_mcp.harness.domain_check import data_checks, suspicious, task_refs, tool_checks
from tau_mcp.harness.domain_check.findings import Report
from tau_mcp.harness.domain_check.gold_replay import GoldReplayer, actions_of
from tau_mcp.harness.domain_check.id_refs import IdIndex
from tau_mcp.harness.domain_check.inaction import check_inaction
from tau_mcp.harness.domain_check.oracle_run import run_oracle
from tau_mcp.harness.wiring import open_backend
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.variants import Variant

#: Simulations and gradings in flight at once (they share one process and one backend).
DEFAULT_CONCURRENCY = 32

Progress = Callable[[str], None]
#: How often, at most, a stage's progress is told (seconds).
TELL_EVERY = 0.2


@dataclass(frozen=True)
class CheckOptions:
    #: A domain with retrieval configs: the one episodes are set up with (None: the config
    #: the domain's own toolkit is, e.g. banking_knowledge's no_knowledge).
    retrieval_config: str | None = None
    #: Judges NL assertions in the inaction check; None: they are not judged (a warning says so).
    judge: Judge | None = None
    concurrency: int = DEFAULT_CONCURRENCY


def resolve_variant(domain: Domain, options: CheckOptions) -> Variant | None:
    """The retrieval config the check sets episodes up with (a `VariantError` for one that is
    unknown or cannot run here)."""
    name = options.retrieval_config
    if name is None and domain.variants is not None:
        name = domain.spec.tool_variant
    return domain.resolve_variant(name, None)


async def check_domain(
    domain: Domain, options: CheckOptions | None = None, progress: Progress | None = None
) -> Report:
    options = options or CheckOptions()
    say = progress or (lambda _stage: None)
    report = Report(
        domain.name, domain.data_dir, judge=options.judge.model if options.judge else None
    )
    stage = _stages(report, say)

    with stage("data"):
        findings, loaded = data_checks.check_data(domain)
        report.add(findings)
    if not loaded:
        for name in ("tools", "task refs", "gold replay", "oracle", "inaction", "warnings"):
            report.skipped[name] = "the databases or tasks do not load"
        return report
    variant = resolve_variant(domain, options)
    report.variant = variant.name if variant is not None else None
    tasks = [domain.task(task_id) for task_id in domain.task_ids(None)]
    report.counts["tasks"] = len(tasks)

    with stage("data"):
        findings, policy = data_checks.check_policies(domain, variant)
        report.add(findings)
    with stage("tools"):
        findings, report.counts["tools"] = tool_checks.check_tools(domain)
        report.add(findings)
    with stage("task refs"):
        report.add(task_refs.check_task_refs(domain))
    with stage("gold replay"):
        replayer, ids = GoldReplayer(domain, variant), IdIndex(domain)
        set_up = []  # the tasks whose initial state sets up: the ones worth simulating
        tick = Ticker(say, "gold replay", len(tasks))
        for task in tasks:
            tick()
            run, findings = replayer.check(task)
            try:
                report.add(findings + ids.check(run))
            finally:
                run.close()
            if run.episode is not None:
                set_up.append(task)
        report.counts["gold actions"] = sum(len(actions_of(task)) for task in tasks)

    backend = await open_backend(domain)
    try:
        episode_options = EpisodeOptions(report.variant) if report.variant else None
        # One grader: one gold state per task; verdicts only, no diagnosis of failures.
        grader = Grader(backend, domain, None, episode_options, diagnose=False)
        with stage("oracle"):
            report.add(
                await run_oracle(
                    domain,
                    set_up,
                    backend,
                    grader,
                    report.variant,
                    options.concurrency,
                    Ticker(say, "oracle", len(set_up)),
                )
            )
            report.counts["oracle simulations"] = len(set_up)
        with stage("inaction"):
            report.add(
                await check_inaction(
                    domain,
                    set_up,
                    backend,
                    grader,
                    episode_options,
                    options.judge,
                    options.concurrency,
                    Ticker(say, "inaction", len(set_up)),
                )
            )
    finally:
        await backend.close()

    with stage("warnings"):
        report.add(suspicious.check_tasks(tasks, judged=options.judge is not None))
        if policy.strip():  # a policy that does not load is already an error
            listed = tool_checks.DOMAIN_CHECK.tools(domain, "agent", report.variant).tools
            report.add(suspicious.check_policy(policy, [tool.name for tool in listed]))
    return report


def _stages(report: Report, say: Progress) -> Callable[[str], contextmanager]:
    @contextmanager
    def stage(name: str) -> Iterator[None]:
        say(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            report.timings[name] = report.timings.get(name, 0.0) + time.perf_counter() - start

    return stage


class Ticker:
    """Tells a stage's progress (`stage n/total`) as its tasks go, at most every TELL_EVERY s."""

    def __init__(self, say: Progress, stage: str, total: int) -> None:
        self.say, self.stage, self.total = say, stage, total
        self.done = 0
        self.told = 0.0

    def __call__(self) -> None:
        self.done += 1
        now = time.monotonic()
        if now - self.told >= TELL_EVERY or self.done == self.total:
            self.told = now
            self.say(f"{self.stage} {self.done}/{self.total}")
