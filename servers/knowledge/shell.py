"""The `shell` retrieval tool: a command over the knowledge-base files, answered as the
reference answers it, run in our sandbox (`servers/knowledge/sandbox.py`).

What the reference does around the sandbox, and we keep (its outputs are the tool's contract):

- Before running, a command is refused when, after removing its quoted parts (`'...'` and then
  `"..."`, each replaced by `""`), it contains `..`, an absolute path (a `/` followed by a letter
  at the start or after whitespace, `;`, `|` or `&`), starts with `/`, contains `~`, or contains
  `$HOME` / `${HOME}`: exit code 1, no output, the message
  `Error: Command blocked - contains '<what>' which could escape the sandbox`. This check is the
  reference's whole defence; ours is the sandbox, which holds whatever gets past it.
- Output is decoded as UTF-8 with universal newlines (`\\r\\n` and `\\r` become `\\n`); output
  that is not UTF-8 fails the command with `Command failed: <the decoding error>`.
- `ls -l`-shaped lines have their owner, group and date replaced (`kb_user  kb_group`,
  `Jan  1 00:00`).
- The tool's text: on exit code 0 the standard output (or `(no output)`); otherwise, for exit
  code 1 of a command mentioning `grep` with nothing on standard error `No matches found.`, else
  `Error (exit code N): <standard error>` or `Command failed with exit code N`. A command that
  runs past the time limit gives exit code 124 and `Command timed out after 30 seconds`.

What we add: output past the sandbox's cap is cut (at a character boundary) and says so; a
writable workspace that grows past its limits is restored to the knowledge base as it was, and
its folder's own permissions are reset before each command (`chmod 000 .` must not lock the
episode out of its shell); a command stopped at the memory cap, or refused because the server
runs its most commands at once, says so in one sentence.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path

from tau_mcp.servers.knowledge.kb_files import FOLDERS, ProcessFolders, remove_tree
from tau_mcp.servers.knowledge.sandbox import (
    Completed,
    Limits,
    Sandbox,
    default_sandbox,
    workspace_owner,
)

_SINGLE_QUOTED = re.compile(r"'[^']*'")
_DOUBLE_QUOTED = re.compile(r'"[^"]*"')
_ABSOLUTE_START = re.compile(r"(?:^|[\s;|&])/[a-zA-Z]")
_ABSOLUTE_PATH = re.compile(r"(?:^|[\s;|&])(/[a-zA-Z][^\s;|&]*)")
_LS_LINE = re.compile(
    r"^(?P<mode_links>[d\-lrwxst@]+\s+\d+\s+)\S+\s+\S+\s+(?P<size>\d+)\s+"
    r"\w{3}\s+\d+\s+[\d:]+\s+(?P<name>.*)$",
    re.MULTILINE,
)
_LS_OWNER = "kb_user  kb_group"
_FOLDER_MODE = 0o755
_LS_DATE = "Jan  1 00:00"


def blocked_pattern(command: str) -> str | None:
    """What makes the reference refuse a command, or None."""
    bare = _DOUBLE_QUOTED.sub('""', _SINGLE_QUOTED.sub('""', command))
    if ".." in bare:
        return ".."
    if _ABSOLUTE_START.search(bare):
        found = _ABSOLUTE_PATH.search(bare)
        if found:
            return f"absolute path: {found.group(1)}"
    if bare.strip().startswith("/"):
        return "absolute path at start"
    if "~" in bare:
        return "~"
    if "$HOME" in bare or "${HOME}" in bare:
        return "$HOME"
    return None


def scrub_listing(text: str) -> str:
    """`ls -l`-shaped lines with a fixed owner, group and date."""
    if not text:
        return text
    return _LS_LINE.sub(
        lambda m: f"{m['mode_links']}{_LS_OWNER}  {m['size']} {_LS_DATE} {m['name']}", text
    )


def _decode(data: bytes) -> str:
    text = data.decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _cut(data: bytes, limit: int) -> str:
    """The first `limit` bytes as text, never splitting a character."""
    text = data[:limit].decode("utf-8", "ignore")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def tool_text(command: str, returncode: int, stdout: str, stderr: str) -> str:
    """The shell tool's result text for a finished command (the reference's rules)."""
    if returncode != 0:
        if returncode == 1 and "grep" in command and not stderr:
            return "No matches found."
        if stderr:
            return f"Error (exit code {returncode}): {stderr}"
        return f"Command failed with exit code {returncode}"
    return stdout if stdout else "(no output)"


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class ShellWorkspace:
    """One episode's shell: the shared read-only knowledge-base folder, or, when writes are
    allowed, a private copy made at the first command and removed by `close()` (or when the
    workspace is garbage collected, or at process exit with the rest of the process's folders).
    """

    def __init__(
        self,
        source: Path,
        *,
        writable: bool = False,
        sandbox: Sandbox | None = None,
        folders: ProcessFolders | None = None,
    ) -> None:
        self.source = source
        self.writable = writable
        self.sandbox = sandbox or default_sandbox()
        self.folders = folders or FOLDERS
        self._scratch: Path | None = None
        self._lock = threading.Lock()

    # The scratch copy belongs to one live episode: a copied episode starts without one.
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_scratch"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def folder(self) -> Path:
        if not self.writable:
            return self.source
        if self._scratch is None:
            self._scratch = self.folders.scratch_copy(self.source, workspace_owner())
        return self._scratch

    def run(self, command: str) -> str:
        """The tool's text for `command`."""
        returncode, stdout, stderr = self.execute(command)
        return tool_text(command, returncode, stdout, stderr)

    def execute(self, command: str) -> tuple[int, str, str]:
        """(exit code, standard output, standard error) as the reference's sandbox reports them."""
        pattern = blocked_pattern(command)
        if pattern:
            message = (
                f"Error: Command blocked - contains '{pattern}' which could escape the sandbox"
            )
            return 1, "", message
        # A read-only workspace has no state: every episode's commands run side by side. A
        # writable one runs its episode's commands one at a time.
        with self._lock if self.writable else contextlib.nullcontext():
            if self.writable:
                self._reopen()
            try:
                done = self.sandbox.run(command, self.folder, writable=self.writable)
            except ValueError as exc:  # a NUL byte cannot be passed to a process
                return 1, "", f"Command failed: {exc}"
            if done.workspace_overflow:
                self._reset()
        return self._report(done)

    def _reopen(self) -> None:
        """The workspace folder as it was made (`0755`): a command that ran `chmod 000 .` would
        otherwise leave the sandbox unable to enter it for the rest of the episode. What the
        commands did to the files and folders inside is theirs to keep."""
        try:
            os.chmod(self.folder, _FOLDER_MODE)
        except OSError:
            pass

    def _report(self, done: Completed) -> tuple[int, str, str]:
        limits: Limits = self.sandbox.limits
        if done.busy:
            return (
                1,
                "",
                (
                    f"Command not run: the server is running {limits.concurrent_commands} shell "
                    f"commands already and none finished within {_seconds(limits.queue_seconds)} "
                    "seconds; try again"
                ),
            )
        if done.memory_exceeded:
            return (
                137,
                "",
                (
                    "Command stopped: its processes held more than "
                    f"{limits.command_memory_bytes >> 20} MiB of memory together"
                ),
            )
        if done.timed_out:
            return 124, "", f"Command timed out after {_seconds(limits.wall_seconds)} seconds"
        if done.workspace_overflow:
            return (
                1,
                "",
                (
                    "Error: the workspace grew past its limit "
                    f"({limits.workspace_bytes >> 20} MiB, {limits.workspace_files} files); "
                    "it has been restored to the original knowledge base"
                ),
            )
        if done.output_overflow:
            note = (
                f"\n[output truncated: the command wrote more than {limits.output_bytes} bytes "
                "and was stopped]"
            )
            return 0, scrub_listing(_cut(done.stdout + done.stderr, limits.output_bytes)) + note, ""
        try:
            stdout, stderr = _decode(done.stdout), _decode(done.stderr)
        except UnicodeDecodeError as exc:
            return 1, "", f"Command failed: {exc}"
        assert done.returncode is not None
        return done.returncode, scrub_listing(stdout), scrub_listing(stderr)

    def _reset(self) -> None:
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            remove_tree(scratch.parent)

    def close(self) -> None:
        """Remove this episode's private copy, if it made one."""
        with self._lock:
            self._reset()

    def __del__(self) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            try:
                remove_tree(scratch.parent)
            except OSError:
                pass
