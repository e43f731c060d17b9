"""Fixtures shared by several test files, and the `needs_data` marker's skipping
(tests/support/data.py says what it takes)."""

from __future__ import annotations

import pytest

from tests.support.data import missing  # first: makes TAU2_DATA_DIR & co. absolute
from tests.support.fake_llm_server import FakeLLMServer


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in item.iter_markers("needs_data"):
            reason = missing(*marker.args)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture
def fake():
    """A fake OpenAI-compatible chat server on loopback, answering from scripted replies."""
    with FakeLLMServer() as server:
        yield server
