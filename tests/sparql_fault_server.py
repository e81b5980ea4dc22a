"""A scripted loopback HTTP server for the SPARQL fault tests: each request takes the next scripted
answer (status, headers, body, delay, or a truncated body) and is recorded with its arrival time and
headers."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EMPTY_RESULTS = json.dumps(
    {"head": {"vars": ["e"]}, "results": {"bindings": []}, "boolean": True}
).encode()


@dataclass
class Reply:
    status: int = 200
    body: bytes = EMPTY_RESULTS
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    cut: int | None = (
        None  # send only this many bytes of the body, then close (Content-Length stays full)
    )
    # answer nothing; wait (up to 10 s) for the client to close the connection, and note when
    hold: bool = False


@dataclass
class Seen:
    at: float
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]


class FaultServer:
    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.default = Reply()
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.disconnects: list[
            float
        ] = []  # when clients closed connections held open by Reply(hold=True)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode() if length else ""
                parsed = urllib.parse.urlsplit(self.path)
                if self.headers.get("Content-Type", "").startswith("application/sparql-query"):
                    params = {
                        **dict(urllib.parse.parse_qsl(parsed.query)),
                        "query": raw,
                    }  # a direct POST
                else:
                    params = dict(urllib.parse.parse_qsl(parsed.query or raw))
                with server._lock:
                    server.seen.append(
                        Seen(
                            time.monotonic(), self.command, parsed.path, params, dict(self.headers)
                        )
                    )
                    reply = server.script.pop(0) if server.script else server.default
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if reply.hold:
                        self._wait_for_disconnect()
                        return
                    if reply.delay:
                        time.sleep(reply.delay)
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/sparql-results+json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(reply.body if reply.cut is None else reply.body[: reply.cut])
                    self.wfile.flush()
                    if reply.cut is not None:
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _wait_for_disconnect(self) -> None:
                self.connection.settimeout(10)
                try:
                    closed = self.connection.recv(1) == b""
                except (TimeoutError, OSError):
                    closed = False
                if closed:
                    with server._lock:
                        server.disconnects.append(time.monotonic())
                self.close_connection = True

            do_GET = do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/sparql"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> "FaultServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
