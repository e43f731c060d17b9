"""Issue 10, item 7: a tool argument outside the schema's enum is accepted and stored, because
the reference accepts and stores it too (its tools are plain Python calls; nothing checks an
argument against the schema). The recorded reference episode fuzz-mock-6 is the evidence."""

from __future__ import annotations

import json

import pytest

from tests.support import conformance as conf
from tests.support.server import serving

pytestmark = pytest.mark.needs_data


def _recorded_reference_output(status: str) -> tuple[str, bool] | None:
    """The reference's recorded output for update_task_status(task_1, <status>), if any."""
    if not (conf.CONFORMANCE_DIR / "fuzz").is_dir():
        return None
    episodes, reference = conf.fuzz()
    for episode in episodes:
        for index, call in enumerate(episode["calls"]):
            args = call["arguments"]
            if call["name"] == "update_task_status" and args.get("status") == status:
                out = reference[episode["id"]]["outputs"][index]
                return out["output"], out["error"]
    return None


async def test_out_of_enum_status_is_kept_as_the_reference_keeps_it() -> None:
    recorded = _recorded_reference_output("ZZ_unknown_646")
    if recorded is None:
        pytest.skip(f"conformance fixtures not found at {conf.CONFORMANCE_DIR}")
    async with serving(["mock"]) as srv, srv.http() as http:
        await http.post("/mock/episodes", json={"episode_id": "p1"})
        async with srv.mcp("/mock/episodes/p1/agent/mcp") as client:
            tools = {t.name: t for t in await client.list_tools()}
            schema = tools["update_task_status"].input_schema["properties"]["status"]
            assert "enum" in json.dumps(schema)  # the schema does list the enum ...
            texts = []
            for status in ("ZZ_unknown_646", "exploded"):
                result = await client.call_tool(
                    "update_task_status",
                    {"task_id": "task_1", "status": status},
                    raise_on_error=False,
                )
                text = result.content[0].text
                assert result.is_error is False  # ... and, as in the reference, is not enforced
                assert json.loads(text)["status"] == status
                texts.append(text)
        state = (await http.get("/mock/episodes/p1/state")).json()
        assert state["agent_db"]["tasks"]["task_1"]["status"] == "exploded"
    expected_text, expected_error = recorded
    assert expected_error is False and texts[0] == expected_text
