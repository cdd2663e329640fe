"""Newline-delimited JSON-RPC over a process's stdin and stdout, for ``serve_stdio``.

Reads and writes go through worker threads (``os.read``/``os.write`` on the raw file
descriptors), so the descriptors are never switched to non-blocking mode (which would leak
to a terminal shared with the parent). Outgoing messages are queued and written in batches
by `StdioStream.pump_output()`, in order.
"""

from __future__ import annotations

import math
import os

import trio

__all__ = ["StdioStream"]

_CHUNK = 65536


class StdioStream:
    """The server end of a stdio connection: one JSON-RPC message per line."""

    def __init__(self, input_fd: int, output_fd: int) -> None:
        self._input_fd = input_fd
        self._output_fd = output_fd
        self._buffer = bytearray()
        self._eof: bool = False
        self._outgoing, self._queued = trio.open_memory_channel[bytes](math.inf)

    async def receive(self) -> bytes:
        """Return the next non-empty line, without its line ending.

        Raises:
            trio.EndOfChannel: stdin reached end of file.
        """
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline]).rstrip(b"\r")
                del self._buffer[: newline + 1]
                if line.strip():
                    return line
                continue
            if self._eof:
                if self._buffer.strip():
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                raise trio.EndOfChannel
            chunk = await trio.to_thread.run_sync(
                os.read, self._input_fd, _CHUNK, abandon_on_cancel=True
            )
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    async def send(self, data: bytes) -> None:
        """Queue one message for stdout.

        Raises:
            trio.ClosedResourceError: The stream was closed.
        """
        self._outgoing.send_nowait(data)

    async def pump_output(self) -> None:
        """Write queued messages to stdout until the stream is closed and drained."""
        async with self._queued:
            async for first in self._queued:
                batch = [first, b"\n"]
                while True:
                    try:
                        batch.extend((self._queued.receive_nowait(), b"\n"))
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                try:
                    await trio.to_thread.run_sync(self._write_all, b"".join(batch))
                except OSError:  # the client closed our stdout: nobody is listening
                    return

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._output_fd, view)
            view = view[written:]

    async def aclose(self) -> None:
        """Stop accepting messages; `pump_output()` writes what is queued, then ends."""
        self._outgoing.close()
