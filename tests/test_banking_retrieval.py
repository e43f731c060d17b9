"""banking_knowledge's offline retrieval against the reference's recorded outputs.

Every tool case of `conformance/retrieval/` (KB_search under bm25 and bm25_grep, grep under
grep_only and bm25_grep, the alltools KB_search_bm25 tool with `k`, `--retrieval-config-kwargs`)
must give the reference's output exactly, the timing line's numbers aside. The policies of all
20 configurations and the 97 per-task golden_retrieval policies must hash as the reference's
texts record. The fast BM25 and grep paths are checked against the plain computations they
replace (rank-bm25's own `get_scores`; `re` over every document).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache

import pytest

from tau_mcp.servers.domains.banking_knowledge.retrieval import BankingVariants
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import EpisodeStore
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.engine.variants import VariantError
from tau_mcp.servers.knowledge import backends, registry
from tau_mcp.servers.knowledge.documents import load_knowledge_base
from tau_mcp.servers.knowledge.sandbox import sandbox_problem
from tests.support.data import CONFORMANCE_DIR, DATA_DIR
from tests.support.knowledge import shell_case_differs

RETRIEVAL = CONFORMANCE_DIR / "retrieval"
DOMAIN_DIR = DATA_DIR / "tau2" / "domains" / "banking_knowledge"
TEXTS = DATA_DIR / "tau2" / "reference_texts" / "banking_knowledge.json"
OFFLINE = ["no_knowledge", "full_kb", "golden_retrieval", "bm25_grep", "bm25", "grep_only"]

pytestmark = pytest.mark.needs_data("banking_knowledge", "reference_texts", "conformance")

TIMING = re.compile(r"\[Timing: retrieval=\d+ms(, reranking=\d+ms)?, total=\d+ms\]")


def normalise_timing(text: str) -> str:
    """The fixtures write the wall-clock numbers of the timing line as `<ms>`."""
    return TIMING.sub(
        lambda m: (
            "[Timing: retrieval=<ms>ms"
            + (", reranking=<ms>ms" if m.group(1) else "")
            + ", total=<ms>ms]"
        ),
        text,
    )


def _cases() -> list[dict]:
    path = RETRIEVAL / "queries.json"
    return json.loads(path.read_text()) if path.is_file() else []


@cache
def reference() -> dict:
    return json.loads((RETRIEVAL / "reference.json").read_text())


@cache
def texts() -> dict:
    return json.loads(TEXTS.read_text())


@cache
def domain() -> Domain:
    return load_domains(["banking_knowledge"], DATA_DIR)["banking_knowledge"]


def variants() -> BankingVariants:
    catalog = domain().variants
    assert isinstance(catalog, BankingVariants)
    return catalog


def run_case(case: dict) -> str:
    # The alltools cases use its BM25 tool alone (its dense search and shell need a network and
    # a sandbox), as the fixtures were recorded.
    retrieval = variants().resolve(case["config"], case["retrieval_kwargs"], check=False)
    args = case["arguments"]
    if case["tool"] == "shell":
        return retrieval.shell(args["command"])
    if case["tool"] == "grep":
        return retrieval.grep(args["pattern"])
    if case["tool"] == "KB_search":
        return retrieval.search("KB_search", args["query"])
    return retrieval.search(case["tool"], args["query"], args.get("k", 10))


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_tool_output_is_the_reference_output(case: dict) -> None:
    want = reference()[case["id"]]["output"]
    if case["tool"] == "shell":
        problem = sandbox_problem()
        if problem is not None:
            pytest.skip(f"no shell sandbox here: {problem}")
        folder = variants().resolve("terminal_use", None)._backend("shell").folder
        command = case["arguments"]["command"]
        assert not shell_case_differs(case["id"], command, run_case(case), want, folder)
        return
    assert normalise_timing(run_case(case)) == want


def test_every_offline_tool_case_is_covered() -> None:
    tools = [c for c in _cases() if c["tool"] != "shell"]
    assert len(tools) >= 75
    assert {c["tool"] for c in tools} == {"KB_search", "grep", "KB_search_bm25"}


# --- the fast paths against what they replace ---------------------------------------------------


def test_bm25_scores_are_rank_bm25s_bit_for_bit() -> None:
    index = variants().resolve("bm25", None)._backend("KB_search").retriever.index
    queries = [c["arguments"]["query"] for c in _cases() if "query" in c["arguments"]]
    queries += ["fee fee fee", "THE the The", "rho-bank+ savings-account", "zzzz unknown"]
    for query in queries:
        ours = index.scores(query)
        theirs = index.model.get_scores(query.lower().split())
        assert ours.tobytes() == theirs.tobytes(), query


def test_bm25_ranks_ties_in_knowledge_base_order_and_pads_with_zero_scores() -> None:
    index = variants().resolve("bm25", None)._backend("KB_search").retriever.index
    docs = load_knowledge_base(DOMAIN_DIR / "documents").documents
    assert index.search("qqqq-no-such-token", 10) == [(d.id, 0.0) for d in docs[:10]]
    assert index.search("   ", 10) == []
    assert len(index.search("card", -1)) == len(docs) - 1  # Python slice, as the reference


GREP_PATTERNS = [
    "annual fee",
    "ANNUAL FEE",
    "credit.*card",
    "fee|charge",
    "(?:annual|monthly) fee",
    "(fee)+",
    "gold{1,3}",
    "(?-i:Gold) rewards",
    "(?i)WIRE TRANSFER",
    "(?a)GOLD",
    r"\bAPR\b",
    "[a-z]+ly",
    r"\d{4}",
    "^## ",
    "(?m)^- ",
    "$100",
    "Rho-Bank+",
    "(unclosed",
    "[",
    "overdraft(?= fee)",
    "(?<=annual )fee",
    "(?P<a>fee) (?P=a)",
    "a*",
    "x*",
    "fee{0}",
    "(ab|)",
    "the",
    "e e",
    "ſ",  # long s: `re` matches it with s and S under IGNORECASE
    "K",  # Kelvin sign: matches k
    "İ",
    "ß",
    "’s",
    "—",
    "café",
    "no-such-phrase-xyz",
]


@pytest.mark.parametrize("case_sensitive", [False, True])
def test_grep_finds_what_re_finds_in_every_document(case_sensitive: bool) -> None:
    index = variants().resolve("grep_only", None)._backend("grep").index
    docs = load_knowledge_base(DOMAIN_DIR / "documents").documents
    flags = 0 if case_sensitive else re.IGNORECASE
    for pattern in GREP_PATTERNS:
        try:
            compiled = re.compile(pattern, flags)
        except re.error:
            compiled = re.compile(re.escape(pattern), flags)
        want = [(d.id, float(n)) for d in docs if (n := len(compiled.findall(d.content)))]
        want.sort(key=lambda item: item[1], reverse=True)
        assert index.search(pattern, 1000, case_sensitive) == want, pattern


# --- documents and policies ---------------------------------------------------------------------


def test_documents_load_in_sorted_file_name_order() -> None:
    base = load_knowledge_base(DOMAIN_DIR / "documents")
    names = sorted(p.name for p in (DOMAIN_DIR / "documents").glob("*.json"))
    assert [f"{d.id}.json" for d in base.documents] == names
    order = json.loads((RETRIEVAL / "golden_prompts.json").read_text())["full_kb"]["document_order"]
    assert [d.id for d in base.documents] == order
    assert load_knowledge_base(DOMAIN_DIR / "documents") is base  # once per process


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_configs_policy_is_the_references() -> None:
    for name, entry in texts()["retrieval_configs"].items():
        if name == "golden_retrieval":
            continue
        policy = variants().resolve(name, None, check=False).policy(None)
        assert (len(policy), _sha(policy)) == (entry["policy_length"], entry["policy_sha256"]), name


def test_full_kb_policy_inlines_the_whole_base_in_sorted_order() -> None:
    want = json.loads((RETRIEVAL / "golden_prompts.json").read_text())["full_kb"]
    policy = variants().resolve("full_kb", None).policy(None)
    assert len(policy) == want["policy_length"] == 866655
    assert _sha(policy) == want["policy_sha256"]
    assert policy.startswith(want["head"]) and policy.endswith(want["tail"])


def test_golden_retrieval_policy_is_per_task() -> None:
    retrieval = variants().resolve("golden_retrieval", None)
    tasks = {t["id"]: t for t in json.loads((DOMAIN_DIR / "tasks.json").read_text())}
    for task_id, entry in texts()["golden_retrieval_tasks"].items():
        task = Task.model_validate(tasks.get(task_id) or {"id": task_id})
        task = task.model_copy(update={"required_documents": entry["required_documents"]})
        assert _sha(retrieval.policy(task)) == entry["policy_sha256"], task_id
    full = json.loads((RETRIEVAL / "golden_prompts.json").read_text())["golden_retrieval"]
    for task_id, entry in full.items():
        task = Task(id=task_id, required_documents=entry["required_documents"])
        assert retrieval.policy(task) == entry["policy"], task_id
    assert "(No documents provided)" in retrieval.policy(Task(id="none"))


# --- configs: names, kwargs, refusals -----------------------------------------------------------


def test_offline_configs_run_and_the_others_are_refused_in_one_sentence(monkeypatch) -> None:
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    catalog = variants()
    assert catalog.offline() == OFFLINE
    assert catalog.default == "alltools"
    assert len(catalog.names) == 20
    runnable = OFFLINE + (
        ["terminal_use", "terminal_use_write"] if sandbox_problem() is None else []
    )
    for name in catalog.names:
        if name in runnable:
            assert catalog.resolve(name, None).name == name
            continue
        with pytest.raises(VariantError) as refused:
            catalog.resolve(name, None)
        message = str(refused.value)
        assert message.count(". ") == 0 and "\n" not in message, message
        assert f"'{name}' cannot run here" in message
        assert "--retrieval-config bm25_grep" in message
    with pytest.raises(VariantError, match=r"'alltools' \(the default\) cannot run here"):
        catalog.resolve(None, None)


def test_alias_and_kwargs() -> None:
    catalog = variants()
    assert catalog.resolve("AllTools", None, check=False).name == "alltools"
    assert catalog.resolve("bm25", {"top_k": 3}).config.searches["KB_search"].top_k == 3
    grep = catalog.resolve("bm25_grep", {"grep_top_k": 2, "case_sensitive": True}).config.grep
    assert (grep.top_k, grep.case_sensitive) == (2, True)
    assert catalog.resolve("no_knowledge", {"top_k": 3}).kwargs == {"top_k": 3}
    with pytest.raises(VariantError, match="unknown retrieval config 'nope'"):
        catalog.resolve("nope", None)
    with pytest.raises(VariantError, match="unknown retrieval config kwarg 'topk'"):
        catalog.resolve("bm25", {"topk": 3})
    with pytest.raises(VariantError, match="'top_k' must be an integer"):
        catalog.resolve("bm25", {"top_k": "3"})
    with pytest.raises(VariantError, match="'case_sensitive' must be true or false"):
        catalog.resolve("grep_only", {"case_sensitive": 1})


def test_registering_a_backend_kind_makes_its_configs_run(monkeypatch) -> None:
    """How the shell and network retrieval plug in: register a kind with its requirements; the
    configurations that use it then run when the requirements are met, and only then."""

    class EchoShell:
        def __init__(self, params: dict) -> None:
            self.params = params

        def run(self, command: str) -> str:
            return f"ran {command!r} with {sorted(self.params.items())}"

    kind = registry.BackendKind(
        "shell",
        "tool",
        lambda base, params: EchoShell(dict(params)),
        lambda params: [registry.env_var("TAU_TEST_SANDBOX", "a test sandbox")],
    )
    monkeypatch.setattr(backends, "_KINDS", {**backends._KINDS, "shell": kind})
    monkeypatch.delenv("TAU_TEST_SANDBOX", raising=False)
    catalog = variants()
    with pytest.raises(VariantError, match=r"needs TAU_TEST_SANDBOX \(a test sandbox\);"):
        catalog.resolve("terminal_use", None)
    monkeypatch.setenv("TAU_TEST_SANDBOX", "1")
    shell = catalog.resolve("terminal_use_write", None)
    assert shell.shell("ls") == "ran 'ls' with [('allow_writes', True), ('file_format', 'md')]"
    assert "terminal_use" not in catalog.offline()  # it needs something from the machine


# --- episodes -----------------------------------------------------------------------------------


def test_an_episode_serves_its_configs_tools_only() -> None:
    store = EpisodeStore({"banking_knowledge": domain()})
    bm25 = store.create("banking_knowledge", "task_001", variant=domain().resolve_variant("bm25"))
    found = bm25.call("agent", "KB_search", {"query": "annual fee"})
    assert not found.error and found.text.startswith("1. ")
    assert bm25.call("agent", "grep", {"pattern": "fee"}).text == "Error: Tool 'grep' not found."
    # Python's message for a bad argument names the reference's mixin class.
    assert bm25.call("agent", "KB_search", {"query": "x", "k": 1}).text == (
        "Error: KBSearchMixin.KB_search() got an unexpected keyword argument 'k'"
    )
    plain = store.create(
        "banking_knowledge", "task_001", variant=domain().resolve_variant("no_knowledge")
    )
    assert plain.call("agent", "KB_search", {"query": "fee"}).text == (
        "Error: Tool 'KB_search' not found."
    )
    # Same task, same start: the config is not part of the state.
    assert bm25.hashes() == plain.hashes()
    assert bm25.policy() == variants().resolve("bm25", None).policy(None)
    golden = store.create(
        "banking_knowledge", "task_001", variant=domain().resolve_variant("golden_retrieval")
    )
    want = texts()["golden_retrieval_tasks"]["task_001"]["policy_sha256"]
    assert _sha(golden.policy()) == want


def test_agent_listing_per_config_is_the_references() -> None:
    from tau_mcp.servers.engine.tool_listing import tool_listing

    reference = json.loads((TEXTS.parent / "tools" / "banking_knowledge.json").read_text())
    for name in variants().names:
        listed = tool_listing(domain(), "agent", name).tools
        assert [t.name for t in listed] == reference["agent"][name], name
        for spec in listed:
            assert spec.input_schema == reference["schemas"][spec.name]["function"]["parameters"]
            assert spec.description == reference["schemas"][spec.name]["function"]["description"]
