"""Keeping keys off disk and off the screen.

A key can reach the harness by several routes: a model argument (`api_key`, a `*_key`, a
`*token*`, a `*secret*`, a password, an authorization header, anything in `extra_headers`), a
litellm `os.environ/NAME` argument, an environment variable (`OPENAI_API_KEY`, `HF_TOKEN`, ...),
a server or serve token. From there it can come back out in a results header, in an error text
(providers echo keys in their error messages), in a program's output (an `--agent cmd` program
that prints its environment) or in a crash report.

Two rules stop it, and every writer and printer applies them through this module:

* by name: the value of a secret-named model argument is replaced by `[redacted]` wherever
  model arguments are recorded (the results header);
* by value: every secret value in play is replaced by `[redacted]` in whatever is written or
  printed: the secrets of the run's own model arguments and tokens (remembered as they are
  parsed), and those of the environment's secret-named variables.

Values shorter than MIN_LENGTH (or, for the environment, ENV_MIN_LENGTH, no whitespace) are too
short to be keys and too likely to occur in ordinary text to be replaced by value.
"""

from __future__ import annotations

import json
import logging
import os
import re
from functools import lru_cache
from typing import Any

REDACTED = "[redacted]"
MIN_LENGTH = 8
ENV_MIN_LENGTH = 12
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwd",
        "credential",
        "credentials",
        "authorization",
        "cookie",
    }
)
HEADER_ARGS = frozenset({"extra_headers", "headers", "default_headers"})
ENV_PREFIX = "os.environ/"  # litellm reads such a model argument from the environment
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")

_remembered: set[str] = set()


@lru_cache(maxsize=4096)  # the environment's names are checked at every results write
def is_secret_name(name: str) -> bool:
    """`api_key`, `openai_key`, `aws_secret_access_key`, `access_token`, `Authorization`,
    `apiKey`, ...; not `max_tokens` or `top_k` (plural counts and short names)."""
    words = _SPLIT.split(_CAMEL.sub("_", str(name)).lower())
    return any(word in _SECRET_WORDS for word in words)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def _with_parts(value: str) -> list[str]:
    """A secret, its `os.environ/NAME` target, and the credential of an auth header value."""
    found = [value]
    if value.startswith(ENV_PREFIX):
        target = os.environ.get(value[len(ENV_PREFIX) :])
        found = [target] if target else []
    scheme, _, credential = value.partition(" ")
    if credential and scheme.lower() in {"bearer", "basic", "token", "apikey"}:
        found.append(credential.strip())
    return found


def secret_values(args: Any) -> set[str]:
    """The secret values in model arguments: those under secret names or header arguments, at
    any depth (litellm `os.environ/NAME` values resolved)."""
    found: set[str] = set()
    if isinstance(args, dict):
        for name, value in args.items():
            if is_secret_name(name) or name in HEADER_ARGS:
                for text in _strings(value):
                    found.update(_with_parts(text))
            else:
                found |= secret_values(value)
    elif isinstance(args, list | tuple):
        for item in args:
            found |= secret_values(item)
    return {value for value in found if len(value) >= MIN_LENGTH}


def literal_secret_names(args: Any, where: str = "") -> list[str]:
    """The places in model arguments that hold a key written out (at least MIN_LENGTH long, not
    an `os.environ/NAME` reference): `api_key`, `extra_headers.Authorization`, ..."""
    found: list[str] = []
    if isinstance(args, dict):
        for name, value in args.items():
            place = f"{where}{name}"
            if is_secret_name(name) or name in HEADER_ARGS:
                if any(
                    len(text) >= MIN_LENGTH and not text.startswith(ENV_PREFIX)
                    for text in _strings(value)
                ):
                    found.append(place)
            else:
                found += literal_secret_names(value, f"{place}.")
    elif isinstance(args, list | tuple):
        for item in args:
            found += literal_secret_names(item, where)
    return found


def remember(*values: str | None) -> None:
    """Secrets to redact by value from now on in this process (tokens, keys)."""
    for value in values:
        if value and len(value) >= MIN_LENGTH:
            _remembered.add(value)


def remember_args(args: Any) -> None:
    """Remember the secrets in some model arguments."""
    _remembered.update(secret_values(args))


def environment_secrets(environ: Any = None) -> set[str]:
    environ = os.environ if environ is None else environ
    return {
        value
        for name, value in environ.items()
        if is_secret_name(name)
        and len(value) >= ENV_MIN_LENGTH
        and not any(c.isspace() for c in value)
    }


def secrets_in_play() -> list[str]:
    """Every secret to redact by value, longest first (so a header value goes before the key
    inside it)."""
    return sorted(_remembered | environment_secrets(), key=len, reverse=True)


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    for secret in secrets_in_play() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {redact_text(str(k), secrets): _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(item, secrets) for item in value]
    return value


def leaks(text: str, secrets: list[str]) -> bool:
    """Does a JSON text hold one of the secrets (in its JSON-escaped form)?"""
    return any(json.dumps(s)[1:-1] in text for s in secrets)


def redact(value: Any, secrets: list[str] | None = None) -> Any:
    """`value` with every secret in play replaced; the same object when none occurs in it."""
    secrets = secrets_in_play() if secrets is None else secrets
    if not secrets or not leaks(json.dumps(value, default=str), secrets):
        return value
    return _walk(value, secrets)


# A secret-named setting on a command line: `NAME=value` (an environment assignment, an
# `--option=value`), `--option value`, or an authorization header's credential.
_ASSIGNED = re.compile(r"(?P<name>[-\w.]+)=(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\";|&]+)")
_OPTION = re.compile(r"(?P<name>--?[A-Za-z][-\w]*)\s+(?P<value>'[^']*'|\"[^\"]*\"|[^-\s][^\s;|&]*)")
_BEARER = re.compile(r"(?i)\b(?P<name>bearer|basic|token)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})")
_VARIABLE = re.compile(r"[\"']?\$\{?\w+\}?[\"']?")  # `$TOKEN`, `"${TOKEN}"`: a reference, no key


def redact_command(command: str) -> str:
    """A shell command as it may be recorded or shown: the values of secret-named settings
    (`OPENAI_API_KEY=...`, `--api-key ...`, `--token=...`, a bearer credential) replaced by
    `[redacted]`, and remembered so that they are redacted wherever else they appear (the
    program's output); then every secret in play, by value."""

    def hide(match: re.Match[str]) -> str:
        name, value = match["name"], match["value"]
        if match.re is not _BEARER and not is_secret_name(name.lstrip("-")):
            return match[0]
        if _VARIABLE.fullmatch(value):
            return match[0]
        remember(value.strip("'\""))
        return match[0][: match.start("value") - match.start()] + REDACTED

    for pattern in (_ASSIGNED, _OPTION, _BEARER):
        command = pattern.sub(hide, command)
    return redact_text(command)


def redact_args(args: Any) -> Any:
    """Model arguments as they may be recorded: secret-named values (and every header value)
    replaced by name, whatever their value; other values kept (numbers, booleans as they are)."""
    if isinstance(args, dict):
        out = {}
        for name, value in args.items():
            if name in HEADER_ARGS and isinstance(value, dict):
                out[name] = {h: REDACTED if v not in (None, "") else v for h, v in value.items()}
            elif is_secret_name(name) and _strings(value):
                out[name] = _mask(value)
            else:
                out[name] = redact_args(value)
        return out
    if isinstance(args, list):
        return [redact_args(item) for item in args]
    return args


def without_secrets(args: dict[str, Any] | None) -> dict[str, Any] | None:
    """Model arguments to hand to another program through a file: secret-named and header
    arguments left out (that program reads keys from its own environment)."""
    if args is None:
        return None
    return {
        name: value
        for name, value in args.items()
        if not is_secret_name(name) and name not in HEADER_ARGS
    }


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return REDACTED if value else value
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v) for v in value]
    return value


# Where a results header records model arguments.
HEADER_ARG_PATHS = (
    ("agent_info", "llm_args"),
    ("user_info", "llm_args"),
    ("judge_llm_args",),
)


def header_secrets(info: Any) -> set[str]:
    """The secret values a results header's recorded model arguments hold (an old file's)."""
    found: set[str] = set()
    for path in HEADER_ARG_PATHS:
        found |= {s for s in secret_values(_at(info, path)) if s != REDACTED}
    return found


def redact_header(info: Any) -> Any:
    """A results header (`info`) with its recorded model arguments redacted by name."""
    if not isinstance(info, dict):
        return info
    info = dict(info)
    for path in HEADER_ARG_PATHS:
        holder = info
        for key in path[:-1]:
            if not isinstance(holder.get(key), dict):
                break
            holder[key] = holder = dict(holder[key])
        else:
            if path[-1] in holder:
                holder[path[-1]] = redact_args(holder[path[-1]])
    return info


def redact_document(document: dict[str, Any]) -> dict[str, Any]:
    """A results document as any writer may write it: the header's recorded model arguments
    redacted by name, and their values (with every other secret in play) wherever they occur.
    A document without keys comes back unchanged, so its bytes do too."""
    info = document.get("info")
    secrets = sorted(set(secrets_in_play()) | header_secrets(info), key=len, reverse=True)
    if isinstance(info, dict):
        document = {**document, "info": redact_header(info)}
    return redact(document, secrets)


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


class RedactingFilter(logging.Filter):
    """A log filter that replaces every secret in play in the formatted message (and its
    traceback), for the handlers of a long-running process such as `tau-harness serve`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = redact_text(message), None
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def redact_logging(*logger_names: str) -> None:
    """Put a RedactingFilter on every handler of the root logger and of the named ones."""
    for name in ("", *logger_names):
        for handler in logging.getLogger(name or None).handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())
