"""Where the tests find their data, and the one `needs_data` marker.

The reference data (`TAU2_DATA_DIR`, default `../shared/tau2-data`) and the recorded conformance
fixtures (`TAU_CONFORMANCE_DIR`, default `../shared/conformance`) live outside the repository.
Relative settings are made absolute here, once, in this process's environment too, so a
subprocess a test starts in another directory sees the same folders. Tests that can run on the
bundled demo data (`data/demo`, the mock domain) use `DEMO_DIR` and need neither.

`@pytest.mark.needs_data(*what)` skips a test, saying why, when what it needs is absent: with no
arguments the reference data; a domain name, that domain's data; "conformance", the conformance
fixtures; "reference_texts", the reference texts; "manifest", the pinned data's MANIFEST.json;
"taubench", the original τ-bench's data (`TAUBENCH_DATA_DIR`, default `../shared/taubench-data`)
and its conformance fixtures (`conformance/taubench`), which need no tau2 data.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "data" / "demo"


def _shared(name: str) -> Path:
    """`shared/NAME` beside the checkout, or beside its parent (a git worktree under wt/)."""
    for parent in (ROOT.parent, ROOT.parent.parent):
        if (parent / "shared" / name).is_dir():
            return parent / "shared" / name
    return ROOT.parent / "shared" / name


def _folder(variable: str, default: Path) -> Path:
    raw = os.environ.get(variable)
    if not raw:
        return default
    folder = Path(raw).expanduser().absolute()
    os.environ[variable] = str(folder)  # subprocesses started elsewhere see the same folder
    return folder


DATA_DIR = _folder("TAU2_DATA_DIR", _shared("tau2-data"))
CONFORMANCE_DIR = _folder("TAU_CONFORMANCE_DIR", _shared("conformance"))
TAUBENCH_DIR = _folder("TAUBENCH_DATA_DIR", _shared("taubench-data"))
if TAUBENCH_DIR.is_dir():  # the τ-bench domains read it from the environment
    os.environ.setdefault("TAUBENCH_DATA_DIR", str(TAUBENCH_DIR))
TEXTS_DIR = DATA_DIR / "tau2" / "reference_texts"
KINDS = ("conformance", "reference_texts", "manifest", "taubench")


def _missing_taubench() -> str | None:
    if not (TAUBENCH_DIR / "taubench" / "domains").is_dir():
        return f"τ-bench data not found at {TAUBENCH_DIR} (set TAUBENCH_DATA_DIR)"
    if not (CONFORMANCE_DIR / "taubench" / "gold").is_dir():
        return (
            f"τ-bench conformance fixtures not found at {CONFORMANCE_DIR / 'taubench'} "
            "(set TAU_CONFORMANCE_DIR)"
        )
    return None


def missing(*what: str) -> str | None:
    """Why a test needing `what` cannot run here, or None when it can."""
    if what == ("taubench",):
        return _missing_taubench()
    if not (DATA_DIR / "tau2" / "domains").is_dir():
        return f"reference data not found at {DATA_DIR} (set TAU2_DATA_DIR)"
    for need in what:
        if need == "taubench":
            reason = _missing_taubench()
            if reason is not None:
                return reason
        elif need not in KINDS:  # a domain's name, as the registry knows it
            from tau_mcp.servers.domains import registry

            if need not in registry.domain_names():
                return f"no domain named {need} is installed"
            if not registry.has_data(need, DATA_DIR):
                return f"no {need} data under {DATA_DIR}"
        elif need == "conformance":
            if not (CONFORMANCE_DIR / "gold").is_dir():
                return (
                    f"conformance fixtures not found at {CONFORMANCE_DIR} (set TAU_CONFORMANCE_DIR)"
                )
        elif need == "reference_texts":
            if not TEXTS_DIR.is_dir():
                return f"no reference texts under {TEXTS_DIR}"
        elif not (DATA_DIR / "MANIFEST.json").is_file():  # "manifest"
            return f"no MANIFEST.json in {DATA_DIR} (not the pinned reference data)"
    return None
