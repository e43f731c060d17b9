"""Fixtures shared by several test files."""

from __future__ import annotations

import pytest

from tests.fake_llm_server import FakeLLMServer


@pytest.fixture
def fake():
    """A fake OpenAI-compatible chat server on loopback, answering from scripted replies."""
    with FakeLLMServer() as server:
        yield server
