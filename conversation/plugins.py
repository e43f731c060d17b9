"""Choosing a class by name: a built-in one, or a plug-in given as `package.module:ClassName`.

Shared by the agent and user-simulator registries (this package imports neither of them)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


def plugin_class(
    name: str,
    builtins: Mapping[str, type[T]],
    base: type[T],
    *,
    kind: str,
    base_label: str,
    search_cwd: bool = False,
    choices: str | None = None,
) -> type[T]:
    """The built-in class called `name`, or the `module:Class` it names, which must subclass
    `base`. Any problem is a one-sentence ValueError naming the `kind` ("agent", "user");
    `choices` is what an unknown name is told to use (default: the built-in names or
    module:Class). `search_cwd` lets console scripts import modules from the working
    directory."""
    if name in builtins:
        return builtins[name]
    if ":" not in name:
        choices = choices or f"one of {', '.join(builtins)} or module:Class"
        raise ValueError(f"unknown {kind} '{name}' (use {choices})")
    module_name, _, class_name = name.partition(":")
    if search_cwd and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {kind} module '{module_name}': {exc}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not issubclass(cls, base):
        raise ValueError(f"'{name}' is not a subclass of {base_label}")
    return cls
