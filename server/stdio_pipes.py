"""Stdin and stdout as non-blocking pipes on the event loop, for the SDK's ``stdio_server(stdin,
stdout)``.

Why: the SDK reads each line and writes (and flushes) each message through ``anyio.wrap_file``, a
worker-thread hop per call — three per request and answer. On a two-core machine those hops were
about a fifth of a ``get_edges`` round trip (``bench.stdio_side_by_side``, docs/architecture.md).
When both standard streams are pipes or sockets (how every MCP client starts a server), this module
serves them from the event loop instead: one read per chunk of input, one write per message, no
thread. Anything else (a regular file, a terminal, Windows) keeps the SDK's files.

As the SDK does for its own files, fd 0 and fd 1 are pointed at the null device and at stderr while
serving, so a handler's or a child's stray ``print`` cannot corrupt the wire; the wire is served
from private duplicates and put back, blocking again, on exit.
"""

from __future__ import annotations

import asyncio
import json
import re
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

#: input held before the reader pauses the pipe (the client then blocks, as it would on a full pipe)
_HIGH_WATER = 1 << 20
#: the longest line read (a request); a longer one is dropped as it arrives and answered with one
#: JSON-RPC error, so one huge line cannot hold memory. Checked per chunk read, so a line may run
#: one chunk (256 KiB) over.
MAX_LINE = 16 << 20


def _invalid_request(why: str) -> str:
    """A JSON-RPC -32600 line for a request that cannot be read far enough to know its id."""
    error = {"code": -32600, "message": f"Invalid Request: {why}"}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}) + "\n"


_TOO_LONG = _invalid_request(f"a line longer than {MAX_LINE:,} bytes was dropped unread")


_ODD_ID = re.compile(r'"id"\s*:\s*(?:[\[{]|true|false|-?\d+(?:\.\d|[eE]))')
_BAD_ID = _invalid_request("id must be a string or an integer")


def _bad_id(line: str) -> bool:
    """A request whose ``id`` is an object, array, boolean or fraction: the SDK drops it unanswered,
    so the client would wait forever (#36). Only lines the pattern flags are parsed a second
    time."""
    if not _ODD_ID.search(line):
        return False
    try:
        message = json.loads(line)
    except ValueError:
        return False
    rid = message.get("id") if isinstance(message, dict) else None
    return isinstance(rid, (dict, list, bool, float))


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _std_fd(stream, fd: int) -> bool:
    try:
        return stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


class _LineReader(asyncio.Protocol):
    """Bytes from the pipe, handed out as text lines (``async for line in reader``, as
    ``anyio.AsyncFile``)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._skipping = False  # inside a line over MAX_LINE: dropped up to its newline
        self.dropped = 0  # lines dropped and not yet answered
        self.writer: _Writer | None = None  # where a dropped line is answered

    def connection_made(self, transport) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if self._skipping:
            end = data.find(b"\n")
            if end < 0:
                return
            data, self._skipping = data[end + 1 :], False
        self._buf += data
        last = self._buf.rfind(b"\n")
        # the line being read is too long: drop it, not buffer it
        if len(self._buf) - last - 1 > MAX_LINE:
            del self._buf[last + 1 :]
            self._scanned = min(self._scanned, len(self._buf))
            self._skipping = True
            self.dropped += 1
        if len(self._buf) > _HIGH_WATER and not self._paused and self._transport is not None:
            self._transport.pause_reading()
            self._paused = True
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False

    def connection_lost(self, exc: BaseException | None) -> None:
        self._eof = True
        self._error = exc
        self._wake()

    def _resume(self) -> None:
        if self._paused and self._transport is not None:
            self._transport.resume_reading()
            self._paused = False

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            while self.dropped and self.writer is not None and not self.writer.lost:
                self.dropped -= 1
                await self.writer.write(_TOO_LONG)
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                self._scanned = 0
                if len(self._buf) < _HIGH_WATER // 2:
                    self._resume()
                text = line.decode("utf-8", errors="replace")
                if _bad_id(text) and self.writer is not None and not self.writer.lost:
                    await self.writer.write(_BAD_ID)
                    continue
                return text
            self._scanned = len(self._buf)
            if self._eof:
                if self._buf:  # a last line without its newline, as a file's iterator gives it
                    line = bytes(self._buf)
                    self._buf.clear()
                    self._scanned = 0
                    return line.decode("utf-8", errors="replace")
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._resume()  # paused, a line longer than the mark: keep reading it
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None


class _Writer(asyncio.Protocol):
    """``await write(text)`` / ``await flush()`` over the pipe, waiting only while the client is not
    reading."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._paused = False
        self._lost: BaseException | None = None
        self._drained: asyncio.Future | None = None

    def connection_made(self, transport) -> None:
        self._transport = transport

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._release()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._lost = exc or BrokenPipeError("the client closed stdout")
        self._release()

    @property
    def lost(self) -> bool:
        """The client stopped reading (a write would fail)."""
        return self._lost is not None

    def _release(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def write(self, text: str) -> None:
        if self._lost is not None:
            raise self._lost
        assert self._transport is not None
        self._transport.write(text.encode("utf-8"))
        await self.flush()

    async def flush(self) -> None:
        while self._paused and self._lost is None:
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await self._drained
            finally:
                self._drained = None
        if self._lost is not None:
            raise self._lost


@asynccontextmanager
async def pipe_stdio() -> AsyncIterator[tuple[_LineReader, _Writer] | tuple[None, None]]:
    """``(stdin, stdout)`` for ``stdio_server`` when both are pipes or sockets on fd 0 and 1 (POSIX,
    asyncio); ``(None, None)`` otherwise, which makes the SDK open its own."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another async library
        loop = None
    if (
        loop is None
        or sys.platform == "win32"
        or not (_std_fd(sys.stdin, 0) and _std_fd(sys.stdout, 1))
        or not (_is_pipe(0) and _is_pipe(1))
    ):
        yield None, None
        return
    import fcntl

    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader, writer = _LineReader(), _Writer()
    reader.writer = writer
    in_transport = out_transport = None
    try:
        in_transport, _ = await loop.connect_read_pipe(
            lambda: reader, os.fdopen(wire_in, "rb", 0, closefd=False)
        )
        out_transport, _ = await loop.connect_write_pipe(
            lambda: writer, os.fdopen(wire_out, "wb", 0, closefd=False)
        )
        yield reader, writer
    finally:
        if in_transport is not None:
            in_transport.close()
        if out_transport is not None:
            for _ in range(
                100
            ):  # what the client has not read yet, for up to a second, then the wire goes back
                if not out_transport.get_write_buffer_size() or writer.lost:
                    break
                await asyncio.sleep(0.01)
            out_transport.close()
        await asyncio.sleep(0)  # let the transports finish closing before the descriptors move
        for fd, wire in ((0, wire_in), (1, wire_out)):
            with suppress(OSError):
                os.set_blocking(wire, True)
                os.dup2(wire, fd)
            with suppress(OSError):
                os.close(wire)
