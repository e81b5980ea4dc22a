"""The LLM APIs' wire formats for the loopback fake servers of the LLM tests: one place that knows
what an Anthropic Messages reply and an OpenAI Chat Completions reply look like, how a handler sends
JSON, and how a fake is served."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def anthropic_message(model: str | None, text: str, usage: dict) -> dict:
    """A ``POST /v1/messages`` reply carrying ``text``."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def openai_completion(model: str | None, text: str, usage: dict) -> dict:
    """A ``POST /v1/chat/completions`` reply carrying ``text``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": usage,
    }


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    ctype: str = "application/json",
    headers: dict | None = None,
) -> None:
    handler.send_response(status)
    handler.send_header("content-type", ctype)
    handler.send_header("content-length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)


def send_json(
    handler: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict | None = None
) -> None:
    send(handler, status, json.dumps(payload).encode(), "application/json", headers)


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The fake on 127.0.0.1 (a free port) in a daemon thread; yields its base URL."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
