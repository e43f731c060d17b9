"""The shell retrieval tool: the reference's recorded outputs, and a sandbox that holds.

Every escape below must fail safely: the host's files, processes, network and environment stay
out of reach and untouched, limits stop what would run away, and the next command still works.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from pathlib import Path

import pytest

from tau_mcp.servers.knowledge import kb_files, sandbox
from tau_mcp.servers.knowledge.kb_files import FOLDERS, ProcessFolders, file_stem
from tau_mcp.servers.knowledge.sandbox import Limits, Sandbox, sandbox_problem
from tau_mcp.servers.knowledge.shell import (
    ShellWorkspace,
    blocked_pattern,
    scrub_listing,
    tool_text,
)
from tests.support.knowledge import (
    Doc,
    banking_documents,
    needs_documents,
    needs_retrieval_fixtures,
    retrieval_cases,
    shell_case_differs,
)

PROBLEM = sandbox_problem()
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"no shell sandbox: {PROBLEM}")


@pytest.fixture(scope="module")
def kb_folder() -> Path:
    return FOLDERS.shared(banking_documents(), "md")


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        info = path.lstat()
        digest.update(f"{path.name}|{info.st_mode}|{info.st_size}|{info.st_mtime_ns}".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


# --- what the reference does around its sandbox ---------------------------------------------------
@pytest.mark.parametrize(
    ("command", "blocked"),
    [
        ("ls ../", ".."),
        ("cat ~/.bashrc", "~"),
        ("cat /etc/passwd", "absolute path: /etc/passwd"),
        ("echo $HOME", "$HOME"),
        ("echo ${HOME}", "$HOME"),
        ("/bin/ls", "absolute path: /bin/ls"),
        ("ls;/bin/ls", "absolute path: /bin/ls"),
        ("/ 1", "absolute path at start"),
        ("echo 'a..b'", None),
        ('cat "/etc/passwd"', None),
        ("grep -r 'a/b' .", None),
        ("ls a/b", None),
    ],
)
def test_blocked_patterns(command, blocked):
    assert blocked_pattern(command) == blocked


def test_tool_text_rules():
    assert tool_text("grep x f", 1, "", "") == "No matches found."
    assert tool_text("cat f", 1, "", "") == "Command failed with exit code 1"
    assert tool_text("grep x f", 2, "", "bad\n") == "Error (exit code 2): bad\n"
    assert tool_text("ls", 0, "", "warning") == "(no output)"
    assert tool_text("ls", 3, "out", "") == "Command failed with exit code 3"


def test_listing_lines_get_fixed_owner_and_date():
    line = "-rw-r--r-- 1 alice staff 75831 Nov 24 06:00 INDEX.md\n"
    assert scrub_listing(line) == "-rw-r--r-- 1 kb_user  kb_group  75831 Jan  1 00:00 INDEX.md\n"
    assert scrub_listing("plain text\n") == "plain text\n"


def test_file_names_and_layouts(tmp_path):
    assert file_stem("doc_bank_(general)_001") == "doc_bank__general__001"
    assert file_stem("a/b\\c..d é") == "a_b_c_d_é"
    assert len(file_stem("x" * 300)) == 255
    docs = [Doc("b", "Bee", "second"), Doc("a/1", "Ay", "first"), Doc("a_1", "Dup", "later")]
    folders = ProcessFolders(tmp_path)
    md = folders.shared(docs, "md")
    assert sorted(p.name for p in md.iterdir()) == ["INDEX.md", "a_1.md", "b.md"]
    assert (md / "a_1.md").read_text() == "# Dup\n\nlater"  # the later id wins the file
    index = (md / "INDEX.md").read_text()
    assert index.startswith("# Knowledge Base Index\n\n**Total documents:** 3\n\n## Documents\n\n")
    assert index.endswith("- **a_1.md** - Ay\n- **a_1.md** - Dup\n- **b.md** - Bee\n")
    txt = folders.shared(docs, "txt")
    assert (txt / "b.txt").read_text() == "Title: Bee\n" + "=" * 50 + "\n\nsecond"
    assert "INDEX.txt" in {p.name for p in txt.iterdir()}
    js = folders.shared(docs, "json")
    assert (
        js / "b.json"
    ).read_text() == '{\n  "id": "b",\n  "title": "Bee",\n  "content": "second"\n}'
    assert folders.shared(docs, "md") == md  # built once
    assert {oct(p.stat().st_mode & 0o777) for p in md.iterdir()} == {"0o644"}
    assert {p.stat().st_mtime for p in md.iterdir()} == {kb_files.FIXED_MTIME}
    with pytest.raises(ValueError, match="unknown knowledge-base file format"):
        folders.shared(docs, "pdf")
    root = folders.root
    folders.cleanup()
    assert not root.exists()


def test_stale_folders_of_dead_processes_are_swept(tmp_path):
    dead = tmp_path / "tau-mcp-kb-999999999-abc"
    (dead / "kb-x-md").mkdir(parents=True)
    mine = ProcessFolders(tmp_path)
    _ = mine.root
    assert not dead.exists()
    mine.cleanup()


def test_missing_bubblewrap_is_one_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("TAU_MCP_BWRAP", str(tmp_path / "no-such-bwrap"))
    sandbox_problem.cache_clear()
    try:
        problem = sandbox_problem()
        assert problem is not None and "bubblewrap" in problem and "\n" not in problem
        with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap"):
            Sandbox(support_dir=tmp_path).run("true", tmp_path)
    finally:
        monkeypatch.undo()
        sandbox_problem.cache_clear()
        assert sandbox_problem() == PROBLEM


# --- the recorded outputs ----------------------------------------------------------------------
@needs_documents
@needs_retrieval_fixtures
@needs_sandbox
def test_recorded_shell_outputs(kb_folder):
    cases = retrieval_cases("shell")
    assert len(cases) >= 30
    workspace = ShellWorkspace(kb_folder)
    mismatches = []
    for query, answer in cases:
        command = query["arguments"]["command"]
        got, want = workspace.run(command), answer["output"]
        if shell_case_differs(query["id"], command, got, want, kb_folder):
            mismatches.append((query["id"], command, got[:300], want[:300]))
    assert not mismatches


# --- escapes ---------------------------------------------------------------------------------------
SECRET_ENV = "OPENAI_API_KEY"
FIRST_DOC = "doc_bank_accounts_bank_accounts__general__001.md"
FIRST_LINE = "# Internal: Opening Personal Checking Accounts\n"
SECRET_VALUE = "sk-test-do-not-leak-7f3a"


@pytest.fixture(scope="module")
def host_secret(tmp_path_factory):
    path = tmp_path_factory.mktemp("host") / "secret.txt"
    path.write_text("host-secret-9b1e\n")
    return path


@pytest.fixture(scope="module")
def listener():
    """A TCP server on the host's loopback that must never be reached."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    yield server
    server.close()


def _escapes(secret: Path, port: int) -> list[tuple[str, str]]:
    s = str(secret)
    return [
        ("dot-dot", "ls ../"),
        ("dot-dot quoted", 'cd ".."; ls; cat "../etc/hostname"'),
        ("tilde", "cat ~/.bashrc"),
        ("home variable", "echo $HOME; ls $HOME/.."),
        ("home quoted", 'cd "$HOME"; cd ".."; ls'),
        ("absolute path", f"cat {s}"),
        ("absolute path quoted", f'cat "{s}"'),
        ("host passwd", 'cat "/etc/passwd" "/etc/shadow" "/etc/hostname"'),
        ("host root", 'ls "/"; ls "/root" "/home" "/work" "/var"'),
        ("proc host processes", 'ls "/proc"; cat "/proc/1/cmdline"'),
        ("proc root link", f'ls "/proc/self/root/"; cat "/proc/1/root{s}"'),
        ("proc environ", 'cat "/proc/self/environ" "/proc/1/environ"'),
        ("environment", "env; set"),
        ("symlink out", f'ln -s "{s}" link; cat link; ln -s "/" up; ls up/'),
        ("symlink through proc", f'ln -s "/proc/1/root" r; cat "r{s}"'),
        ("write in place", "echo x >> INDEX.md; touch new.md"),
        ("write outside", 'echo x > "/usr/x"; touch "/x"; mkdir "/etc/x"'),
        ("curl loopback", f'curl -sS -m 2 "http://127.0.0.1:{port}/"'),
        ("bash dev tcp", f'echo x > "/dev/tcp/127.0.0.1/{port}"'),
        ("dns", "getent hosts example.com"),
        ("nested namespace", "unshare -r id"),
        ("mount", "mkdir -p m; mount -t tmpfs none m"),
        ("kill everything", "kill -9 -1; echo after"),
        ("background survivor", "(sleep 1001 &); nohup sleep 1002 > o 2>&1 & echo started"),
        ("fork bomb", "bomb(){ bomb | bomb & }; bomb; sleep 1004"),
        ("output flood", "yes"),
        ("long sleep", "sleep 1003"),
        ("busy loop", "while :; do :; done"),
        ("huge memory", "perl -e '$x = q(a) x (3 * 1024 ** 3); print length $x'"),
        ("big file", 'head -c 200000000 "/dev/zero" > big; ls -l big'),
    ]


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.e2e
@needs_documents
@needs_sandbox
@pytest.mark.parametrize("writable", [False, True], ids=["read-only", "writable"])
def test_escapes_fail_safely(kb_folder, host_secret, listener, monkeypatch, writable):
    monkeypatch.setenv(SECRET_ENV, SECRET_VALUE)
    limits = Limits(wall_seconds=3, cpu_seconds=2, output_bytes=1 << 16, file_bytes=1 << 20)
    sandbox_ = Sandbox(limits, support_dir=FOLDERS.root)
    workspace = ShellWorkspace(kb_folder, writable=writable, sandbox=sandbox_)
    port = listener.getsockname()[1]
    shared_before = _tree_digest(kb_folder)
    secret_before = host_secret.read_bytes()
    host_tmp_before = set(os.listdir(host_secret.parent))
    results = {}
    for name, command in _escapes(host_secret, port):
        started = time.monotonic()
        text = workspace.run(command)
        results[name] = text
        assert time.monotonic() - started < limits.wall_seconds + 5, name
        for leak in ("host-secret-9b1e", SECRET_VALUE, "TAU2_DATA_DIR", str(kb_folder)):
            assert leak not in text, (name, leak, text[:500])
        # The next command still works.
        assert workspace.run(f"head -1 {FIRST_DOC}") == FIRST_LINE, name
    with pytest.raises(TimeoutError):
        listener.accept()
    for marker in ("sleep 1001", "sleep 1002", "sleep 1003", "sleep 1004"):
        assert _processes_with(marker) == [], marker
    assert _tree_digest(kb_folder) == shared_before
    assert host_secret.read_bytes() == secret_before
    assert set(os.listdir(host_secret.parent)) == host_tmp_before

    assert "Command blocked - contains '..'" in results["dot-dot"]
    assert "Command blocked - contains '~'" in results["tilde"]
    assert "Command blocked - contains 'absolute path:" in results["absolute path"]
    assert "No such file or directory" in results["absolute path quoted"]
    assert results["host passwd"].count("No such file or directory") == 2  # shadow, hostname
    assert "cannot access '/root': No such file or directory" in results["host root"]
    assert (
        "Connection refused" in results["bash dev tcp"] or "unreachable" in results["bash dev tcp"]
    )
    assert "No space left on device" in results["nested namespace"]  # no user namespaces inside
    assert results["output flood"].endswith("bytes and was stopped]")
    assert len(results["output flood"]) < (1 << 16) + 200
    assert results["long sleep"] == "Error (exit code 124): Command timed out after 3 seconds"
    assert results["fork bomb"] == "Error (exit code 124): Command timed out after 3 seconds"
    assert "Out of memory" in results["huge memory"]
    assert results["kill everything"] == "after\n"
    env_lines = results["environment"].splitlines()
    assert "HOME=/knowledge_base" in env_lines and f"{SECRET_ENV}=" not in results["environment"]
    assert results["write outside"].count("Read-only file system") == 3
    if writable:
        assert "Read-only file system" not in results["write in place"]
        assert " 1048576 " in results["big file"]  # stopped at the file-size limit
    else:
        assert "Read-only file system" in results["write in place"]
        assert "Read-only file system" in results["big file"]
    if os.environ.get("TAU_SHOW_ESCAPES"):
        for name, text in results.items():
            print(f"[{'writable' if writable else 'read-only'}] {name}: {text[:300]!r}")
    workspace.close()


@needs_documents
@needs_sandbox
def test_writable_workspace_is_private_persistent_and_removed(kb_folder):
    first = ShellWorkspace(kb_folder, writable=True)
    second = ShellWorkspace(kb_folder, writable=True)
    reader = ShellWorkspace(kb_folder)
    assert first.run("echo note > notes.md && sed -i 's/Index/INDEX/' INDEX.md") == "(no output)"
    assert first.run("cat notes.md; head -1 INDEX.md") == "note\n# Knowledge Base INDEX\n"
    assert second.run("cat notes.md") == (
        "Error (exit code 1): cat: notes.md: No such file or directory\n"
    )
    assert reader.run("head -1 INDEX.md") == "# Knowledge Base Index\n"
    first.run("mkdir -p locked/inner && touch locked/inner/f && chmod 000 locked/inner locked")
    scratch = first.folder.parent
    first.close()
    assert not scratch.exists()
    assert (kb_folder / "INDEX.md").read_text().startswith("# Knowledge Base Index")


@needs_documents
@needs_sandbox
def test_workspace_past_its_limit_is_restored(kb_folder):
    limits = Limits(workspace_bytes=8 << 20, workspace_files=2000, file_bytes=4 << 20)
    workspace = ShellWorkspace(
        kb_folder, writable=True, sandbox=Sandbox(limits, support_dir=FOLDERS.root)
    )
    workspace.run("echo mine > notes.md")
    text = workspace.run('for i in 1 2 3; do head -c 3000000 "/dev/zero" > f$i; done')
    assert "workspace grew past its limit" in text
    assert workspace.run("ls f1 notes.md 2>&1 | wc -l; ls | wc -l") == "2\n699\n"
    text = workspace.run("for i in $(seq 1500); do : > n$i; done")
    assert "workspace grew past its limit" in text
    workspace.close()


@pytest.mark.e2e
@needs_documents
@needs_sandbox
def test_nothing_is_left_behind():
    """A process removes its knowledge-base folders (and writable copies) when it exits; those
    of a process that was killed are removed by the next one."""
    import shutil
    import subprocess
    import sys
    import tempfile

    # A temp folder the sandbox's user can reach even when we run as root (see kb_files.py).
    tmp_path = Path(tempfile.mkdtemp(prefix="tau-mcp-test-", dir="/tmp"))
    os.chmod(tmp_path, 0o755)

    root = Path(__file__).resolve().parents[1]
    script = (
        "import os, signal, sys\n"
        "from tau_mcp.servers.knowledge.kb_files import FOLDERS\n"
        "from tau_mcp.servers.knowledge.shell import ShellWorkspace\n"
        "from tests.support.knowledge import banking_documents\n"
        "folder = FOLDERS.shared(banking_documents()[:20], 'md')\n"
        "w = ShellWorkspace(folder, writable=True)\n"
        "assert w.run('echo x > notes.md && ls | wc -l') == '22\\n'\n"
        "if sys.argv[1] == 'kill':\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    def run(mode: str) -> int:
        return subprocess.run([sys.executable, "-c", script, mode], cwd=root, env=env).returncode

    def left() -> list[str]:
        return sorted(p.name for p in tmp_path.iterdir())

    try:
        assert run("exit") == 0
        assert left() == []
        assert run("kill") == -9
        assert len(left()) == 1 and left()[0].startswith("tau-mcp-kb-")
        assert run("exit") == 0
        assert left() == []
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


# --- memory and concurrency caps ---------------------------------------------------------------------
#: Four processes, each allocating 28 chunks of 25 MiB (700 MiB, under the 1 GiB per-process
#: address-space limit) and printing `<process> <chunks held>` after each one.
_CHUNK = 25 << 20
_FOUR_ALLOCATORS = (
    "for p in 1 2 3 4; do perl -e '$|=1; my @a; for my $i (1..28) "
    '{ push @a, "a" x (25 << 20); print "$ARGV[0] $i\\n" }\' $p & done; wait'
)


@pytest.fixture
def open_folder() -> Path:
    """An empty folder the sandbox's user can reach (under the process's knowledge-base root)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="caps-", dir=FOLDERS.root))
    os.chmod(folder, 0o755)
    return folder


@needs_sandbox
def test_a_command_s_processes_share_one_memory_cap(open_folder):
    """Four processes of one command once held 2.7 GB between them (the limit was per process):
    now the command is stopped once they hold the cap together."""
    limits = Limits()
    done = Sandbox(limits, support_dir=FOLDERS.root).run(_FOUR_ALLOCATORS, open_folder)
    held: dict[str, int] = {}
    for line in done.stdout.decode().splitlines():
        process, chunks = line.split()
        held[process] = max(held.get(process, 0), int(chunks))
    total = sum(held.values()) * _CHUNK
    # What the processes reported holding when stopped: the cap, plus what four processes can
    # add between two of the watchdog's looks (and the chunk each was building).
    assert total <= (1 << 30) + 4 * _CHUNK + (128 << 20), (total, held)
    assert limits.command_memory_bytes == 1 << 30
    assert done.memory_exceeded and done.returncode is None
    text = ShellWorkspace(open_folder, sandbox=Sandbox(limits, support_dir=FOLDERS.root)).run(
        _FOUR_ALLOCATORS
    )
    assert text == (
        "Error (exit code 137): Command stopped: its processes held more than 1024 MiB of "
        "memory together"
    )


@needs_sandbox
def test_tmpfs_folders_cannot_hold_memory_past_their_size(open_folder):
    """/dev (and /dev/shm) were an unbounded tmpfs: files there hold memory no process shows."""
    done = Sandbox(support_dir=FOLDERS.root).run(
        'for i in 1 2 3; do head -c 12000000 "/dev/zero" > "/dev/shm/f$i"; done; '
        'echo x > "/dev/f"; du -sc "/dev/shm" | tail -1',
        open_folder,
    )
    err = done.stderr.decode()
    assert "No space left on device" in err and "Read-only file system" in err, err


@needs_sandbox
def test_concurrent_commands_wait_for_a_slot_or_are_refused(open_folder):
    """At most `concurrent_commands` commands run at once per sandbox (per server process); the
    next waits up to `queue_seconds` for a slot, then is refused in one sentence."""
    from concurrent.futures import ThreadPoolExecutor

    waiting = Sandbox(Limits(concurrent_commands=2, queue_seconds=10), support_dir=FOLDERS.root)
    started = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: waiting.run("sleep 1; echo ok", open_folder), range(3)))
    elapsed = time.monotonic() - started
    assert [r.stdout for r in results] == [b"ok\n"] * 3
    assert elapsed >= 2.0  # the third waited for one of the first two

    refusing = Sandbox(Limits(concurrent_commands=2, queue_seconds=0.5), support_dir=FOLDERS.root)
    workspace = ShellWorkspace(open_folder, sandbox=refusing)
    with ThreadPoolExecutor(3) as pool:
        texts = list(pool.map(lambda n: workspace.run(f"sleep 2; echo {n}"), range(3)))
    assert sorted(texts)[:2] == [t for t in sorted(texts) if not t.startswith("Error")]
    refused = [t for t in texts if t.startswith("Error")]
    assert refused == [
        "Error (exit code 1): Command not run: the server is running 2 shell commands already "
        "and none finished within 0.5 seconds; try again"
    ]
    assert refusing.run("echo free", open_folder).stdout == b"free\n"  # the slots came back


def test_a_copy_of_the_process_sandbox_shares_its_slots():
    import copy
    import pickle

    from tau_mcp.servers.knowledge.sandbox import default_sandbox

    assert copy.deepcopy(default_sandbox()) is default_sandbox()
    assert pickle.loads(pickle.dumps(default_sandbox())) is default_sandbox()
    own = Sandbox(Limits(concurrent_commands=3))
    copied = copy.deepcopy(own)
    assert copied is not own and copied.limits == own.limits


@needs_sandbox
def test_a_sandbox_whose_memory_cannot_be_read_is_said_once(open_folder, monkeypatch, caplog):
    monkeypatch.setattr(sandbox.SandboxMemory, "resident_bytes", lambda self: None)
    monkeypatch.setattr(sandbox, "_unwatched_warned", __import__("threading").Event())
    own = Sandbox(support_dir=FOLDERS.root)
    with caplog.at_level("WARNING", logger=sandbox.__name__):
        assert own.run("sleep 0.6; echo ok", open_folder).stdout == b"ok\n"
        assert own.run("sleep 0.6; echo ok", open_folder).stdout == b"ok\n"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "total memory is not enforced" in warnings[0]


@needs_documents
@needs_sandbox
def test_a_writable_workspace_survives_chmod_000_of_itself(kb_folder):
    workspace = ShellWorkspace(kb_folder, writable=True)
    workspace.run("echo mine > notes.md")
    workspace.run("chmod 000 .")
    assert workspace.run("cat notes.md; ls INDEX.md") == "mine\nINDEX.md\n"
    workspace.run("chmod 000 . && chmod 000 notes.md")  # the folder is reset, not the files
    assert workspace.run("cat INDEX.md | head -1") == "# Knowledge Base Index\n"
    workspace.close()
