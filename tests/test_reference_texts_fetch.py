"""Getting and checking `tau2/reference_texts/`: content pins, verify, the fetch pipeline and the
pure parts of the dump script. The dump run against the reference itself needs a Python 3.12+
with the release installed ($TAU_REFERENCE_PYTHON) and is skipped without one."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import data as data_cli
from tau_mcp.harness.cli.data import data_app
from tau_mcp.harness.reference_texts import build, dump
from tau_mcp.servers.engine import pins as pinmod
from tau_mcp.servers.engine.data import load_pins
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.pins import (
    archive_sources,
    content_pins,
    content_sha256,
    fetch_reference,
    value_at,
    verify_data_dir,
)
from tests.support.data import DATA_DIR

TEXTS = DATA_DIR / "tau2" / "reference_texts"
OFFLINE_URL = "http://127.0.0.1:9/{repository}/{commit}.tar.gz"


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


# --- pins and verify --------------------------------------------------------------------------


def _shapes() -> dict[str, Any]:
    """Each generated file's layout, by its path in the data folder."""
    return {f"{FOLDER}/{rel}": shape for rel, shape in dump.file_shapes(dump.load_layout()).items()}


def _pinned_count() -> int:
    pins = load_pins()
    return len(pins["files"]) + len(content_pins(pins))


FOLDER = "tau2/reference_texts"


def test_content_pins_hash_exactly_the_layouts_values() -> None:
    pins = content_pins(load_pins())
    shapes = _shapes()
    assert set(pins) == set(shapes)
    for rel, shape in shapes.items():
        optional = _optional(pins[rel])
        assert not set(pins[rel]["values"]) & set(optional), rel
        assert sorted(pins[rel]["values"] + optional) == sorted(dump.marker_paths(shape)), rel


def _optional(pin: dict[str, Any]) -> list[str]:
    """The paths of a content pin's optional group (values older generated texts lack)."""
    return list((pin.get("optional") or {}).get("values") or [])


def _has(document: Any, path: str) -> bool:
    try:
        value_at(document, path)
    except KeyError:
        return False
    return True


def _drop(document: Any, path: str) -> None:
    *parents, last = path.split("/")
    for key in parents:
        document = document[key]
    del document[last]


@pytest.mark.needs_data("manifest", "reference_texts")
def test_content_pins_equal_what_the_shared_texts_hold() -> None:
    manifest = json.loads((DATA_DIR / "MANIFEST.json").read_text())["files"]
    pins = load_pins()
    texts = content_pins(pins)
    # Every shared text is content-pinned and meets its pin. Release files: every one we pin is
    # in the shared data with the same hash; files the data gains that we do not use are
    # tolerated.
    assert set(texts) == {k for k in manifest if k.startswith(FOLDER + "/")}
    assert pins["files"] == {k: manifest[k] for k in pins["files"] if k in manifest}
    for rel, pin in texts.items():
        document = json.loads((DATA_DIR / rel).read_text())
        assert content_sha256(document, pin["values"]) == pin["sha256"], rel


def _linked_copy(tmp_path: Path) -> Path:
    """A data folder whose release files link to the shared copy and whose texts are real."""
    folder = tmp_path / "data"
    pins = load_pins()
    for rel in [*pins["files"], *content_pins(pins)]:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.startswith("tau2/reference_texts/"):
            shutil.copy(DATA_DIR / rel, target)
        else:
            target.symlink_to(DATA_DIR / rel)
    return folder


@pytest.mark.needs_data("manifest", "reference_texts")
def test_verify_checks_the_reference_texts(tmp_path: Path) -> None:
    folder = _linked_copy(tmp_path)
    good = verify_data_dir(folder)
    assert good.ok and good.checked == _pinned_count(), good.problems
    tools = folder / "tau2/reference_texts/tools/airline.json"
    schemas = json.loads(tools.read_text())
    schemas["agent"][0]["function"]["description"] += " "
    tools.write_text(json.dumps(schemas))
    (folder / "tau2/reference_texts/defaults.json").unlink()
    prompts = folder / "tau2/reference_texts/prompts.json"
    document = json.loads(prompts.read_text())
    del document["gt_agent"]["resolution_steps"]["line_joiner"]
    prompts.write_text(json.dumps(document))
    problems = "\n".join(verify_data_dir(folder).problems)
    assert "tools/airline.json: values differ from the content pin" in problems
    assert "defaults.json: missing (made by `tau-harness data fetch`)" in problems
    assert "prompts.json: has no value at gt_agent/resolution_steps/line_joiner" in problems
    assert verify_data_dir(folder, generated=False).ok


@pytest.mark.needs_data("manifest", "reference_texts")
def test_notes_and_layout_are_not_pinned(tmp_path: Path) -> None:
    """Changing only notes, key order or whitespace keeps a text verified: the pins are on the
    values, which is why our generated files (with our own notes) verify like the shared ones."""
    folder = _linked_copy(tmp_path)
    for rel in content_pins(load_pins()):
        path = folder / rel
        document = json.loads(path.read_text())
        marked = set(content_pins(load_pins())[rel]["values"])
        reordered = {"tau-mcp note": "ours", **dict(reversed(list(document.items())))}
        if "scenario_format" in reordered:
            reordered["scenario_format"]["optional_parts"] = {"persona": "a different note"}
        assert not any(p.startswith("tau-mcp note") for p in marked)
        path.write_text(json.dumps(reordered, indent=4, ensure_ascii=True))
        assert _sha(path.read_bytes()) != _sha((DATA_DIR / rel).read_bytes())
    result = verify_data_dir(folder)
    assert result.ok, result.problems


@pytest.mark.needs_data("manifest", "reference_texts")
def test_data_verify_command_reports_a_tampered_text(tmp_path: Path) -> None:
    folder = _linked_copy(tmp_path)
    ok = CliRunner().invoke(data_app, ["verify", "--data-dir", str(folder)])
    assert ok.exit_code == 0 and f"all {_pinned_count()} pinned files match" in ok.output
    (folder / "tau2/reference_texts/prompts.json").write_text("{}\n")
    bad = CliRunner().invoke(data_app, ["verify", "--data-dir", str(folder)])
    assert bad.exit_code == 1 and "prompts.json: has no value at agent/" in bad.output
    assert "Traceback" not in bad.output


# --- fetch --------------------------------------------------------------------------------------


def test_fetch_offline_fails_with_one_sentence_before_generating(tmp_path: Path) -> None:
    called = []
    with pytest.raises(DataError, match="could not download the reference data") as err:
        fetch_reference(
            tmp_path / "out",
            timeout=2,
            url="http://127.0.0.1:9/none.tar.gz",
            generate=lambda *args: called.append(args),
        )
    assert "\n" not in str(err.value) and not called and not (tmp_path / "out").exists()


def test_data_fetch_command_offline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pinmod, "ARCHIVE_URL", OFFLINE_URL)
    monkeypatch.setattr(data_cli, "find_python", lambda pins, explicit=None: sys.executable)
    result = CliRunner().invoke(
        data_app, ["fetch", "--dest", str(tmp_path / "out"), "--timeout", "2"]
    )
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1
    assert "could not download the reference data" in errors[0]
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def _release_archive(tmp_path: Path) -> Path:
    """A tar.gz laid out like the release's: top folder, data/ with the pinned files."""
    path = tmp_path / "release.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        top = tarfile.TarInfo("tau2-bench-x")
        top.type = tarfile.DIRTYPE
        archive.addfile(top)
        project = b"[project]\nname = 'stand-in'\n"
        info = tarfile.TarInfo("tau2-bench-x/pyproject.toml")
        info.size = len(project)
        archive.addfile(info, io.BytesIO(project))
        for rel, source in archive_sources(load_pins()).items():
            archive.add(DATA_DIR / rel, arcname=f"tau2-bench-x/{source}")
    return path


@pytest.mark.needs_data("manifest", "reference_texts")
@pytest.mark.parametrize("tamper", [False, True])
def test_fetch_installs_only_verified_texts(tmp_path: Path, tamper: bool) -> None:
    """The generate step writes into staging; the folder appears only if the texts match."""
    archive = _release_archive(tmp_path)
    seen: dict[str, Any] = {}

    def generate(payload: bytes, staging: Path, pins: dict) -> None:
        seen["project"] = build.unpack_source(payload, tmp_path / "src")
        shutil.copytree(TEXTS, staging / "tau2" / "reference_texts")
        if tamper:
            path = staging / "tau2/reference_texts/tools/mock.json"
            path.write_text(path.read_text().replace('"create_task"', '"make_task"', 1))

    dest = tmp_path / "out"
    if tamper:
        with pytest.raises(DataError, match="tools/mock.json: values differ from the content pin"):
            fetch_reference(dest, url=archive.as_uri(), generate=generate)
        assert not dest.exists()
    else:
        assert fetch_reference(dest, url=archive.as_uri(), generate=generate) == dest
        assert verify_data_dir(dest).ok
    assert (seen["project"] / "pyproject.toml").is_file()
    assert not (seen["project"] / "data").exists()  # the release's data is not unpacked twice


def test_python_for_the_reference_must_be_recent_enough(tmp_path: Path, monkeypatch) -> None:
    pins = load_pins()
    if sys.version_info[:2] < (3, 12):
        with pytest.raises(DataError, match="is not Python 3.12 to 3.13"):
            build.find_python(pins, sys.executable)
        monkeypatch.setenv("PATH", str(tmp_path))
        monkeypatch.delenv(build.PYTHON_ENV, raising=False)
        with pytest.raises(DataError, match="pass --python PATH"):
            build.find_python(pins)
    else:
        assert build.find_python(pins) == sys.executable
    with pytest.raises(DataError, match="is not Python"):
        build.find_python(pins, str(tmp_path / "no-such-python"))


def test_unreadable_archive_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a readable tar.gz"):
        build.unpack_source(b"not a tarball", tmp_path)


# --- the dump script's pure parts --------------------------------------------------------------


def test_fill_and_templates() -> None:
    layout = {"a": {"$value": "x"}, "b": [1, {"$value": "y"}], "c": "note"}
    assert dump.markers(layout) == {"x", "y"}
    assert dump.marker_paths(layout) == {"a": "x", "b/1": "y"}
    assert dump.fill(layout, {"x": {"k": 1}, "y": None}) == {
        "a": {"k": 1},
        "b": [1, None],
        "c": "note",
    }
    with pytest.raises(KeyError, match="no value computed for 'y'"):
        dump.fill(layout, {"x": 1})
    s = dump.sentinel("who")
    assert dump.as_template(f"Hi {s}!", {s: "who"}) == "Hi {who}!"
    with pytest.raises(ValueError):
        dump.as_template("Hi!", {s: "who"})
    assert dump.serialize({"é": [1]}) == '{\n  "é": [\n    1\n  ]\n}\n'
    assert dump.trial_seeds(7, 3) == dump.trial_seeds(7, 3) != dump.trial_seeds(8, 3)


@pytest.mark.needs_data("manifest", "reference_texts")
def test_layout_refilled_with_the_shared_values_verifies(tmp_path: Path) -> None:
    """The layout filled with the values the dump computes (here read back from the shared
    files) is a file our content pins accept, though its notes, and so its bytes, are ours."""
    folder = _linked_copy(tmp_path)
    manifest = json.loads((DATA_DIR / "MANIFEST.json").read_text())["files"]
    pins = content_pins(load_pins())
    for rel, shape in _shapes().items():
        shared = json.loads((DATA_DIR / rel).read_text())
        marked = dump.marker_paths(shape)
        absent = [path for path in marked if not _has(shared, path)]
        assert set(absent) <= set(_optional(pins[rel])), rel  # only optional values may lack
        values = {
            name: None if path in absent else value_at(shared, path)
            for path, name in marked.items()
        }
        filled = dump.fill(shape, values)
        for path in absent:
            _drop(filled, path)
        text = dump.serialize(filled)
        (folder / rel).write_text(text)
        assert _sha(text) != manifest[rel]
    result = verify_data_dir(folder)
    assert result.ok, result.problems
    defaults = json.loads((TEXTS / "defaults.json").read_text())
    assert dump.trial_seeds(300, 5) == defaults["per_trial_seed"]["seed_300_first_5_trials"]


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for child in node.values() for s in _strings(child)]
    if isinstance(node, list):
        return [s for child in node for s in _strings(child)]
    return []


def test_layout_holds_no_reference_text() -> None:
    """Every model-facing value, and every value our readers use, is a marker."""
    layout = dump.load_layout()
    names = set().union(*(dump.markers(shape) for shape in _shapes().values()))
    for needed in (
        "agent.system_prompt_template",
        "agent.instruction",
        "user_simulator.system_prompt_template",
        "user_simulator.guidelines_files",
        "user_simulator.persona_placeholder",
        "gt_agent.resolution_steps.line_joiner",
        "solo_agent.tool_choice",
        "nl_assertions_judge.system_prompt",
        "agent",
        "user",
        "solo.tools_in_order",
    ):
        assert needed in names
    text = json.dumps(layout)
    assert "<instructions>" not in text and '"parameters"' not in text


@pytest.mark.needs_data("manifest", "reference_texts")
def test_layout_copies_no_note_of_the_shared_texts() -> None:
    """No wording of the shared files (notes included) is in our layout: the words are ours."""
    ours = set(_strings(dump.load_layout()))
    theirs = set()
    for rel in _shapes():
        shared = _strings(json.loads((DATA_DIR / rel).read_text()))
        theirs.update(s for s in shared if len(s) > 24 and " " in s)  # words, not identifiers
    assert not [s for s in theirs if any(s in mine for mine in ours)]


def _reference_python() -> str | None:
    """$TAU_REFERENCE_PYTHON when it has the reference release (tau2) installed."""
    python = os.environ.get(build.PYTHON_ENV)
    if not python:
        return None
    probe = subprocess.run([python, "-c", "import tau2"], capture_output=True, timeout=60)
    return python if probe.returncode == 0 else None


@pytest.mark.e2e
@pytest.mark.needs_data("manifest", "reference_texts")
@pytest.mark.skipif(
    _reference_python() is None,
    reason=f"set ${build.PYTHON_ENV} to a Python with the tau2 1.0.1 release installed "
    "to run the dump script end to end",
)
def test_dump_with_the_reference_meets_the_content_pins(tmp_path: Path) -> None:
    """The real generator: our dump script run by the reference's interpreter writes files
    whose values meet the content pins, while their notes (and so their bytes) are ours."""
    folder = _linked_copy(tmp_path)
    out = tmp_path / "texts"
    env = dict(os.environ, TAU2_DATA_DIR=str(DATA_DIR), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run(
        [_reference_python(), str(build.DUMP_SCRIPT), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((DATA_DIR / "MANIFEST.json").read_text())["files"]
    for rel, pin in content_pins(load_pins()).items():
        generated = out / rel.removeprefix(FOLDER + "/")
        shutil.copy(generated, folder / rel)
        assert _sha(generated.read_bytes()) != manifest[rel]
        document = json.loads(generated.read_text())
        assert all(_has(document, path) for path in _optional(pin)), rel  # checked below too
    result = verify_data_dir(folder)
    assert result.ok, result.problems


# What tau-mcp reads from the new texts (grading/review.py, the banking engine's discoverable
# tools and tool listing): each must be a value our dump writes and the pins check.
READ_BY_OUR_CODE = {
    "review.json": [
        "defaults/review_model",
        "full_review/system_prompt",
        "full_review/user_prompt_template",
        "user_review/system_prompt_template",
        "user_review/user_prompt_template",
        "auth_classifier/system_prompt",
        "auth_classifier/user_prompt_template",
        "inputs/example_action_trajectory/action_key_order",
        "parsing/extract_json/fence_regex",
        "parsing/auth/regex",
        "trajectory_format/message_joiner",
        "trajectory_format/templates/turn_prefix",
        "trajectory_format/templates/tool",
        "trajectory_format/templates/tool_error",
        "trajectory_format/templates/assistant",
        "trajectory_format/templates/user",
        "trajectory_format/templates/system",
        "trajectory_format/templates/assistant_tool_calls_only",
        "vocabulary/agent_severities",
        "vocabulary/user_severities",
        "vocabulary/auth_statuses",
    ],
    "banking_knowledge.json": [
        "discoverable_tools/agent",
        "discoverable_tools/user",
        "retrieval_model_texts/reranker_prompt",
        "retrieval_model_texts/reranker_model",
        "retrieval_model_texts/qwen_query_prefix",
    ],
    "tools/banking_knowledge.json": ["schemas", "agent", "user"],
    "tools/telecom-workflow.json": ["agent", "user", "solo/done_tool"],
}


def test_the_values_our_code_reads_are_pinned() -> None:
    pins = content_pins(load_pins())
    for rel, paths in READ_BY_OUR_CODE.items():
        pin = pins[f"{FOLDER}/{rel}"]
        pinned = pin["values"] + _optional(pin)
        for path in paths:
            assert any(path == p or path.startswith(p + "/") for p in pinned), (rel, path)


# --- the texts the network backends send a model (retrieval_model_texts) ----------------------

BANKING_TEXTS = f"{FOLDER}/banking_knowledge.json"


@pytest.mark.needs_data("manifest", "reference_texts", "banking_knowledge", "conformance")
def test_the_optional_group_is_checked_where_a_file_holds_it(tmp_path: Path) -> None:
    """The shared texts predate retrieval_model_texts and verify without it; a file that holds
    it (as `data fetch` now writes) must hold the reference's values, here read off the
    reference's recorded requests: the pin is the reference's real texts."""
    from tests.support.knowledge import recorded_query_prefix, recorded_reranker_prompt

    folder = _linked_copy(tmp_path)
    path = folder / BANKING_TEXTS
    document = json.loads(path.read_text())
    assert "retrieval_model_texts" not in document and verify_data_dir(folder).ok
    texts = {
        "about": "a note of ours",
        "reranker_prompt": recorded_reranker_prompt(),
        "reranker_model": "gpt-5.2",
        "qwen_query_prefix": recorded_query_prefix("qwen_embeddings"),
    }

    def verify_with(section: dict[str, Any]) -> list[str]:
        path.write_text(json.dumps({**document, "retrieval_model_texts": section}))
        return verify_data_dir(folder).problems

    assert verify_with(texts) == []
    changed = {**texts, "reranker_prompt": texts["reranker_prompt"] + " "}
    assert verify_with(changed) == [
        "tau2/reference_texts/banking_knowledge.json: optional values differ from the content pin"
    ]
    partial = {k: v for k, v in texts.items() if k != "qwen_query_prefix"}
    assert verify_with(partial) == [
        "tau2/reference_texts/banking_knowledge.json: has no value at "
        "retrieval_model_texts/qwen_query_prefix"
    ]


def test_templates_and_prefixes_are_read_back_from_what_was_sent() -> None:
    q, d = dump.sentinel("q", "\x06"), dump.sentinel("d", "\x06")
    template = 'Rate {{"score": n}}.\nQuery: {}\nDoc: {}\nEnd {x}'.replace("{x}", "{{x}}")
    rendered = template.format(q, d)
    assert dump.positional_template(rendered, [q, d]) == template
    assert dump.positional_template(rendered, [q, d]).format("A", "B") == template.format("A", "B")
    for bad in ([d, q], [q, q], [q, dump.sentinel("other", "\x06")]):
        with pytest.raises(ValueError):
            dump.positional_template(rendered, bad)
    assert dump.text_before("Instruct: x\nQuery:hello", "hello") == "Instruct: x\nQuery:"
    assert dump.text_before("hello", "hello") == ""
    with pytest.raises(ValueError):
        dump.text_before("hello there", "hello")


SYNTHETIC_PIPELINE = '''
class RetrievalPipeline:
    """Stands in for the release's pipeline: indexing would need the network."""

    def __init__(self, postprocessors, input_preprocessors):
        self.postprocessors = postprocessors
        self.input_preprocessors = input_preprocessors
        self.index_documents([{"id": "d", "text": "t"}])

    def index_documents(self, documents):
        raise RuntimeError("indexing sends every document to a model")
'''


class _Client:
    """What the synthetic release's clients check at construction: a key in the environment."""

    def __init__(self, env: str) -> None:
        if not os.environ.get(env):
            raise RuntimeError(f"{env} is not set")


class _Reranker:
    def __init__(self, prompt: str, model: str) -> None:
        self.prompt, self.model, self.client = prompt, model, _Client("OPENAI_API_KEY")

    def _rate_passage(self, query: str, doc_id: str, passage: str) -> int:
        content = self.prompt.format(query, passage)
        messages = [{"role": "user", "content": content}]
        self.client.beta.chat.completions.parse(model=self.model, messages=messages)
        return 0


class _Embedder:
    def __init__(self, instruction: str) -> None:
        self.instruction, self.client = instruction, _Client("OPENROUTER_API_KEY")

    def embed(self, texts: list[str]) -> list[Any]:
        sent = [self.instruction + t for t in texts]
        reply = self.client.embeddings.create(input=sent, model="m", encoding_format="float")
        return [item.embedding for item in reply.data]


class _Encoder:
    def __init__(self, instruction: str) -> None:
        self.instruction = instruction

    def _get_embedder(self) -> _Embedder:
        return _Embedder(self.instruction)


def _synthetic_retrieval(prompts: list[str], instructions: list[str]) -> Any:
    """A stand-in for the release's retrieval module: one config per reranker prompt (BM25 +
    reranker) and per query instruction (dense), plus one without either."""
    from types import SimpleNamespace

    from tau2.knowledge.pipeline import RetrievalPipeline

    spec = SimpleNamespace
    variants = {"plain": spec(kb_search=None, kb_search_bm25=None, kb_search_dense=None)}
    for i, prompt in enumerate(prompts):
        variants[f"rerank{i}"] = spec(
            kb_search=spec(post=functools.partial(_Reranker, prompt, "rater"), pre=None),
            kb_search_bm25=None,
            kb_search_dense=None,
        )
    for i, instruction in enumerate(instructions):
        variants[f"dense{i}"] = spec(
            kb_search=None,
            kb_search_bm25=spec(post=None, pre=None),
            kb_search_dense=spec(post=None, pre=functools.partial(_Encoder, instruction)),
        )

    def create(spec: Any, knowledge_base: Any) -> Any:
        assert knowledge_base == "kb"
        # built here, as the release builds them: their clients want keys now
        return RetrievalPipeline(
            [spec.post()] if spec.post else [], [spec.pre()] if spec.pre else []
        )

    return SimpleNamespace(
        get_all_variant_names=lambda: list(variants),
        resolve_variant=variants.__getitem__,
        _create_kb_pipeline=create,
    )


def test_model_texts_are_caught_from_a_synthetic_release(tmp_path: Path, monkeypatch) -> None:
    """The dump builds each config's pipelines as the release does (no indexing, placeholder
    keys, stand-in clients) and reads back the reranker's template and model and the query
    instruction; configs that disagree are an error, not a guess."""
    package = tmp_path / "tau2" / "knowledge"
    package.mkdir(parents=True)
    (tmp_path / "tau2" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "pipeline.py").write_text(SYNTHETIC_PIPELINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "tau2" or m.startswith("tau2.")]:
        monkeypatch.delitem(sys.modules, name)
    for key in dump.PLACEHOLDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    prompt = 'Score {{"relevance": n}}: does\n{}\nanswer\n{}\n?'
    try:
        values = dump.model_text_values(_synthetic_retrieval([prompt], ["Instr: "] * 2), "kb")
        assert values == {
            "retrieval_model_texts.reranker_prompt": prompt,
            "retrieval_model_texts.reranker_model": "rater",
            "retrieval_model_texts.qwen_query_prefix": "Instr: ",
        }
        assert not any(os.environ.get(key) for key in dump.PLACEHOLDER_KEYS)  # restored
        for prompts, instructions in (([prompt, prompt + "!"], ["I: "]), ([prompt], [])):
            with pytest.raises(ValueError, match="expected one reranker prompt"):
                dump.model_text_values(_synthetic_retrieval(prompts, instructions), "kb")
    finally:
        for name in [m for m in sys.modules if m == "tau2" or m.startswith("tau2.")]:
            del sys.modules[name]
