"""The harness's MCP clients: the lean sessionless one, and the SDK client it falls back to for
servers without the sessionless protocol revision. Both must see the same tools and results."""

from __future__ import annotations

import pytest

from tests.support.harness import load

pytestmark = pytest.mark.needs_data("airline")


async def _play(backend) -> tuple[list[str], str, bool, str, bool]:
    ref = await backend.create_episode("airline", "0")
    session = await backend.open_session(ref, "agent")
    try:
        names = [tool.name for tool in await session.list_tools()]
        found = await session.call_tool("get_user_details", {"user_id": "mia_li_3668"})
        missing = await session.call_tool("get_user_details", {"user_id": "nobody"})
    finally:
        await session.close()
        await backend.delete_episode(ref)
    return names, found.text, found.error, missing.text, missing.error


async def test_the_sdk_fallback_sees_what_the_lean_client_sees():
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.backends.mcp_wire import WireMcpSession

    domain = load("airline")
    lean = await in_process_backend({"airline": domain})
    try:
        ref = await lean.create_episode("airline", "0")
        assert isinstance(await lean.open_session(ref, "agent"), WireMcpSession)
        got_lean = await _play(lean)
    finally:
        await lean.close()
    sdk = await in_process_backend({"airline": domain})
    sdk._modern = False  # as if the server had answered no to `server/discover`
    try:
        ref = await sdk.create_episode("airline", "0")
        session = await sdk.open_session(ref, "agent")
        assert not isinstance(session, WireMcpSession)
        await session.close()
        got_sdk = await _play(sdk)
    finally:
        await sdk.close()
    assert got_lean == got_sdk
    names, text, error, missing, missing_error = got_lean
    assert len(names) == 14 and "Mia" in text and not error
    assert missing.startswith("Error: ") and missing_error


async def test_a_path_that_is_no_mcp_endpoint_is_not_taken_for_a_modern_one():
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.backends.mcp_wire import supports_modern

    backend = await in_process_backend({"airline": load("airline")})
    try:
        ref = await backend.create_episode("airline", "0")
        assert await supports_modern(backend.exchange, ref.agent_mcp)
        assert not await supports_modern(backend.exchange, "/airline/no/such/mcp")
        assert not await supports_modern(backend.exchange, "/health")
    finally:
        await backend.close()
