"""Seeded faults reach the agent on the surfaces a client drives itself (docs/faults.md, "One
option, every surface"): `tau-server serve --faults` (the default episode and every episode
that names none), `tau-server stdio --faults`, and `tau-harness serve --faults`, whose outside
agent meets the fault as the tool's own error and whose record and header say so."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import httpx
import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.results import load_results
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import make_hub
from tau_mcp.servers.engine.faults import parse_faults
from tests.support.harness import load, mcp_backend

pytestmark = pytest.mark.needs_data("airline")

TRANSIENT = "Error: Service temporarily unavailable (HTTP 503); please try again."
USER_ID = "raj_sanchez_7340"  # task 1's customer
READ = ("get_user_details", {"user_id": USER_ID})
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def call_over_http(client: httpx.AsyncClient, url: str, name: str, arguments: dict) -> dict:
    """One `tools/call` on an MCP endpoint of tau-server, as a sessionless client sends it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    reply = await client.post(url, content=json.dumps(body), headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]


def fault_of(result: dict) -> dict | None:
    return (result.get("_meta") or {}).get("tau-mcp/fault")


async def test_tau_server_faults_reach_the_default_episode_and_episodes_that_name_none():
    from tau_mcp.servers.app import ServerSettings, create_app

    settings = ServerSettings(warm=False, faults=parse_faults("transient=1"))
    app = create_app({"airline": load("airline")}, settings=settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            created = await client.post("/airline/episodes", json={"task_id": "1"})
            assert created.status_code == 201, created.text
            episode = created.json()
            for url in ("/airline/agent/mcp", episode["agent_mcp"]):
                first = await call_over_http(client, url, *READ)
                assert first["isError"] is True, url
                assert first["content"][0]["text"] == TRANSIENT
                assert fault_of(first)["kind"] == "transient"
                again = await call_over_http(client, url, *READ)
                assert again["isError"] is False and fault_of(again) is None, url
                assert json.loads(again["content"][0]["text"])["user_id"] == USER_ID
            log = (await client.get(f"/airline/episodes/{episode['episode_id']}/faults")).json()
            assert log["plan"]["rates"] == {"transient": 1.0}
            assert [(f["tool"], f["kind"]) for f in log["faults"]] == [
                ("get_user_details", "transient")
            ]


async def test_tau_server_stdio_episode_meets_the_faults():
    from tau_mcp.servers.stdio import build_stdio_server

    server = build_stdio_server("airline", "agent", "1", faults=parse_faults("transient=1"))
    async with FastMCPClient(server) as client:
        first = await client.call_tool(*READ, raise_on_error=False)
        assert first.is_error and first.content[0].text == TRANSIENT
        again = await client.call_tool(*READ, raise_on_error=False)
        assert not again.is_error
        assert json.loads(again.content[0].text)["user_id"] == USER_ID


@asynccontextmanager
async def harness_served(save_to, **settings):
    domain = load("airline")
    config = RunConfig(domain="airline", agent="mcp", user="scripted", judge_llm="none", **settings)
    async with mcp_backend(domain) as backend:
        hub = make_hub(backend, domain, config, save_to)
        try:
            async with hosted(hub, None) as base:
                async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
                    yield base, http
        finally:
            await hub.close()


async def test_tau_harness_serve_gives_its_outside_agent_the_faults_and_records_them(tmp_path):
    out = tmp_path / "serve.json"
    async with harness_served(out, faults="transient=1") as (base, http):
        created = await http.post("/simulations", json={"task_id": "1", "trial": 0})
        assert created.status_code == 201, created.text
        sim_path = f"/simulations/{created.json()['simulation_id']}"
        url = base + created.json()["mcp"]
        async with FastMCPClient(StreamableHttpTransport(url)) as client:
            first = await client.call_tool(*READ, raise_on_error=False)
            assert first.is_error and first.content[0].text == TRANSIENT
            again = await client.call_tool(*READ, raise_on_error=False)
            assert not again.is_error, again.content
        assert (await http.post(sim_path + "/end")).status_code == 200
        sim = (await http.get(sim_path)).json()
    faults = sim["info"]["faults"]
    assert [(f["tool"], f["kind"], f["requestor"]) for f in faults] == [
        ("get_user_details", "transient", "assistant")
    ]
    tool_message = sim["messages"][faults[0]["turn_idx"]]
    assert tool_message["role"] == "tool" and tool_message["content"] == TRANSIENT
    assert tool_message["id"] == faults[0]["tool_call_id"]
    saved = load_results(out)
    assert saved["info"]["faults"]["spec"] == "transient=1"
    assert saved["simulations"][0]["info"]["faults"] == faults
