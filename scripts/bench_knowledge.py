"""Network and shell retrieval benchmark: the shell tool's grep and cat, and dense search.

    python scripts/bench_knowledge.py [--runs 50] [--data-dir DIR]

Shell times are wall-clock milliseconds of the whole tool call (`ShellWorkspace.run`: the escape
check, a fresh bubblewrap sandbox, the command, decoding), since the work happens in child
processes. Dense search runs on a warm cache: 698 random 3072-dimensional vectors (the size of
text-embedding-3-large) written to a temporary cache, so no network is involved; it times the
ranking of a query vector (top 10) and a full `retrieve` of a query already embedded once (the
tool's path for a repeated query). Goals: grep over the knowledge base < 50 ms, cat < 20 ms,
dense top-10 < 1 ms. The load average is printed with the figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tau_mcp.servers.knowledge import embeddings
from tau_mcp.servers.knowledge.kb_files import FOLDERS
from tau_mcp.servers.knowledge.sandbox import sandbox_problem
from tau_mcp.servers.knowledge.shell import ShellWorkspace


def documents(data_dir: Path) -> list[SimpleNamespace]:
    folder = data_dir / "tau2" / "domains" / "banking_knowledge" / "documents"
    if not folder.is_dir():
        raise SystemExit(f"no banking_knowledge documents in {folder} (pass --data-dir)")
    files = sorted(folder.glob("*.json"), key=lambda p: p.name)
    return [SimpleNamespace(**json.loads(p.read_text(encoding="utf-8"))) for p in files]


def timed(function, runs: int) -> list[float]:
    function()  # warm-up
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        out.append(time.perf_counter() - started)
    return out


def summary(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(seconds) * 1000:.3f} ms, p95 {p95 * 1000:.3f} ms"


def bench_shell(docs: list, runs: int) -> None:
    problem = sandbox_problem()
    if problem is not None:
        print(f"shell: skipped ({problem})")
        return
    started = time.perf_counter()
    folder = FOLDERS.shared(docs, "md")
    print(
        f"knowledge-base files written once per process: {(time.perf_counter() - started) * 1000:.0f} ms"
    )
    workspace = ShellWorkspace(folder)
    grep = "grep -ril 'annual fee' ."
    cat = "cat doc_credit_cards_gold_rewards_card_001.md"
    assert workspace.run(grep).count("\n") > 10 and workspace.run(cat).startswith("# Gold")
    print(
        f"shell `{grep}` (whole KB): {summary(timed(lambda: workspace.run(grep), runs))}  (goal < 50 ms)"
    )
    print(f"shell `{cat}`: {summary(timed(lambda: workspace.run(cat), runs))}  (goal < 20 ms)")


def bench_dense(docs: list, runs: int) -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        cache = embeddings.EmbeddingCache(Path(tmp))
        embedder = embeddings.Embedder("text-embedding-3-large", "openai", "base64")
        texts = [d.content for d in docs]
        cache.store(embedder, texts, rng.standard_normal((len(texts), 3072)))
        index = embeddings.DenseIndex([d.id for d in docs], texts, embedder, cache)
        started = time.perf_counter()
        index.build()
        print(
            f"dense index from a warm disk cache: {(time.perf_counter() - started) * 1000:.0f} ms"
        )
        query = rng.standard_normal(3072)
        retriever = embeddings.DenseRetriever(index, 10, embeddings.QueryMemo())
        key = (json.dumps(embedder.identity(), sort_keys=True), "", "annual fee")
        retriever.memo.put(key, query)
        print(
            f"dense top-10 (rank a query vector): {summary(timed(lambda: index.top(query, 10), runs * 20))}  (goal < 1 ms)"
        )
        print(
            f"dense retrieve, query embedded before: {summary(timed(lambda: retriever.retrieve('annual fee'), runs * 20))}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(
            os.environ.get(
                "TAU2_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "tau2-data"
            )
        ),
    )
    args = parser.parse_args()
    docs = documents(args.data_dir)
    print(
        f"{len(docs)} documents; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"on {os.cpu_count()} CPUs (a shared machine disturbs wall-clock times)"
    )
    bench_shell(docs, args.runs)
    bench_dense(docs, args.runs)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
