"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests that drive real litellm.

Each model name has a queue of replies (text or tool calls); every request pops the next one
and is kept for inspection. A model can instead have a responder, a function from the request
body to the reply: concurrent conversations (several simulations, several worker processes)
then get the same replies whatever order their requests arrive in. `delay` holds every reply
that long; `peak_in_flight` is the most requests the server held at once.

It also answers `/v1/embeddings` (kept in `embedding_requests`) with bag-of-words vectors
(`fake_embedding`), so texts that share words are similar, in the encoding the request asks for
(`float`, or `base64` little-endian float32 as OpenAI sends it).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def text(content: str) -> dict[str, Any]:
    return {"content": content}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [(name, arguments)]}


def failure(status: int, **headers: str) -> dict[str, Any]:
    """An error answer (e.g. 429 with a Retry-After header) in place of a reply."""
    return {"status": status, "headers": headers}


def echo_key(status: int = 401) -> dict[str, Any]:
    """An error answer whose message repeats the credentials the request carried, as some
    providers' "incorrect API key" errors do."""
    return {"status": status, "headers": {}, "echo_key": True}


class FakeLLMServer:
    def __init__(self) -> None:
        self.scripts: dict[str, deque] = defaultdict(deque)
        self.requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.port = _free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0
        self.responders: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self.delay = 0.0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_failures = 0  # answer this many embedding requests with a 500 first

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def llm_args(self) -> dict[str, Any]:
        return {"api_base": self.api_base, "api_key": "fake-key", "num_retries": 0}

    def run_config(
        self, domain: str, task_id: str, agent_model: str, user_model: str, **extra: Any
    ):
        """A run of the `llm` agent and the `llm` user, both answered by this server."""
        from tau_mcp.harness.config import RunConfig

        settings: dict[str, Any] = {
            "agent": "llm",
            "agent_llm": f"openai/{agent_model}",
            "agent_llm_args": self.llm_args(),
            "user": "llm",
            "user_llm": f"openai/{user_model}",
            "user_llm_args": self.llm_args(),
            "max_retries": 0,
            "judge_llm": "none",
        }
        return RunConfig(domain=domain, task_ids=[task_id], **{**settings, **extra})

    def script(self, model: str, *replies: dict[str, Any]) -> None:
        self.scripts[model].extend(replies)

    def respond(self, model: str, responder: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Answer every request to `model` with `responder(request body)`."""
        self.responders[model] = responder

    async def _complete(self, request: Request) -> JSONResponse:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return await self._reply(request)
        finally:
            self.in_flight -= 1

    async def _reply(self, request: Request) -> JSONResponse:
        body = await request.json()
        model = body.get("model", "")
        self.requests[model].append(body)
        queue = self.scripts.get(model)
        if model in self.responders:
            reply = self.responders[model](body)
        elif not queue:
            return JSONResponse(
                {"error": {"message": f"no scripted reply left for {model}"}}, status_code=500
            )
        else:
            reply = queue.popleft()
        if "status" in reply:
            error = {"error": {"message": f"scripted failure {reply['status']}"}}
            if reply.get("echo_key"):
                seen = {k: v for k, v in request.headers.items() if k.lower().startswith("x-")}
                auth = request.headers.get("authorization")
                error["error"]["message"] = f"Incorrect API key provided: {auth}; headers {seen}"
            return JSONResponse(error, status_code=reply["status"], headers=reply["headers"])
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if reply.get("refusal"):
            message["refusal"] = reply["refusal"]
        if reply.get("tool_calls"):
            message["tool_calls"] = []
            for name, arguments in reply["tool_calls"]:
                self._ids += 1
                message["tool_calls"].append(
                    {
                        "id": f"call_{self._ids}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                )
        return _AsciiJSONResponse(
            {
                "id": f"chatcmpl-{self._ids}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": reply.get("finish_reason")
                        or ("tool_calls" if reply.get("tool_calls") else "stop"),
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )

    async def _embed(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.embedding_requests.append(body)
        if self.embedding_failures > 0:
            self.embedding_failures -= 1
            return JSONResponse({"error": {"message": "scripted failure 500"}}, status_code=500)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text)
            if body.get("encoding_format") == "base64":
                packed = struct.pack(f"<{len(vector)}f", *vector)
                value: Any = base64.b64encode(packed).decode()
            else:
                value = vector
            data.append({"object": "embedding", "index": index, "embedding": value})
        tokens = sum(len(t.split()) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        model = body.get("model", "")
        return JSONResponse({"object": "list", "data": data, "model": model, "usage": usage})

    def __enter__(self) -> FakeLLMServer:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._complete, methods=["POST"]),
                Route("/v1/embeddings", self._embed, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.time() + 10
        while not self._server.started:
            if time.time() > deadline:
                raise RuntimeError("fake LLM server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=5)


class _AsciiJSONResponse(JSONResponse):
    """JSON with non-ASCII text escaped, as OpenAI writes it: a reply can then carry a lone
    UTF-16 surrogate (`\\ud800`), valid JSON that a model's output may hold."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


EMBEDDING_SIZE = 64


def fake_embedding(text: str) -> list[float]:
    """A bag-of-words vector: each lower-cased word adds 1 to a slot chosen by its hash."""
    vector = [0.0] * EMBEDDING_SIZE
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        slot = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
        vector[slot % EMBEDDING_SIZE] += 1.0
    return vector


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
