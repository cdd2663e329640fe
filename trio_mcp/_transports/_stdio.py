"""The stdio transport: an MCP server as a child process, newline-delimited JSON on its pipes.

* Line reassembly is linear in message size: each received chunk is scanned for a newline
  once, from where the previous scan stopped.
* The child runs in its own process group; its stderr is drained continuously by a task, each
  line forwarded to a logger (or a callback) and the tail kept for error messages.
* Writes from many callers are coalesced by one writer task: callers only append to a queue.
* Shutdown follows the spec: close stdin, wait, SIGTERM the group, wait, SIGKILL the group;
  every step bounded and shielded, so it completes even when the caller is cancelled.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import cast

import trio

from .._exceptions import ConnectionClosed, MCPError, MessageTooLargeError
from ._base import MessageInfo, RequestFailed, Transport

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "StdioParameters", "StdioTransport", "default_environment"]

logger = logging.getLogger("trio_mcp.stdio")
stderr_logger = logging.getLogger("trio_mcp.server_stderr")

#: The default maximum size of one incoming message (64 MiB).
DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024

_READ_CHUNK = 256 * 1024
_STDERR_TAIL_LINES = 50
_STDERR_TAIL_BYTES = 8192
_STDERR_MAX_LINE = 16384

_POSIX_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
_WINDOWS_ENV_KEYS = (
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
)


def default_environment() -> dict[str, str]:
    """The safe environment a stdio server inherits by default.

    Only a handful of variables needed to find programs and behave normally (``PATH``,
    ``HOME``, ``USER``, locale, ...) are passed on, so secrets in the parent's environment
    do not leak into third-party servers. Values that look like shell functions are skipped.
    """
    keys = _WINDOWS_ENV_KEYS if sys.platform == "win32" else _POSIX_ENV_KEYS
    env: dict[str, str] = {}
    for key in keys:
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):
            env[key] = value
    return env


@dataclass(frozen=True)
class StdioParameters:
    """How to launch a stdio MCP server.

    Args:
        command: The program and its arguments (an argv list), or a command line string,
            which is split like a POSIX shell would (:func:`shlex.split`; no shell runs).
        env: Extra environment variables, added to :func:`default_environment` (or to the
            full parent environment when ``inherit_env`` is true).
        cwd: The working directory of the server.
        inherit_env: Pass the whole parent environment instead of the safe default.
        max_message_size: The largest message accepted from the server, in bytes; a larger
            one fails the session with :class:`~trio_mcp.MessageTooLargeError`.
        on_stderr: Called with each line the server writes to stderr (decoded, without the
            newline). By default lines go to the ``trio_mcp.server_stderr`` logger at INFO.
        shutdown_timeout: Seconds each graceful shutdown step may take before escalating.
    """

    command: Sequence[str] | str
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    inherit_env: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    on_stderr: Callable[[str], None] | None = field(default=None, compare=False)
    shutdown_timeout: float = 2.0

    @property
    def argv(self) -> list[str]:
        """The command as an argv list."""
        if isinstance(self.command, str):
            return shlex.split(self.command)
        return [os.fspath(part) for part in self.command]

    def open_transport(self, nursery: trio.Nursery) -> AbstractAsyncContextManager[StdioTransport]:
        """Start the server process; its helper tasks run in ``nursery``.

        Args:
            nursery: The nursery that owns the writer and stderr-drain tasks.
        """
        return _open_stdio(self, nursery)


@asynccontextmanager
async def _open_stdio(
    params: StdioParameters, nursery: trio.Nursery
) -> AsyncGenerator[StdioTransport, None]:
    argv = params.argv
    if not argv:
        raise ValueError("empty command: give the program to run and its arguments")
    env = dict(os.environ) if params.inherit_env else default_environment()
    if params.env:
        env.update(params.env)
    try:
        process = await trio.lowlevel.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=params.cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise ConnectionClosed(f"could not start the MCP server {argv[0]!r}: {exc}") from exc
    transport = StdioTransport(process, params)
    try:
        nursery.start_soon(transport._drain_stderr, name=f"trio_mcp stderr {argv[0]}")
        nursery.start_soon(transport._write_loop, name=f"trio_mcp writer {argv[0]}")
        yield transport
    finally:
        await transport.aclose()


class StdioTransport(Transport):
    """A running stdio MCP server process. Created by :class:`StdioParameters`."""

    def __init__(self, process: trio.Process, params: StdioParameters) -> None:
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._params = params
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._max = params.max_message_size
        self._buffer = bytearray()
        self._pos = 0  # start of the unconsumed part of _buffer
        self._scan = 0  # where the next newline search starts
        self._out_send, self._out_receive = trio.open_memory_channel[bytes](math.inf)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._stderr_done = trio.Event()
        self._writer_done = trio.Event()
        self._write_error: BaseException | None = None
        self._stdin_fd: int = cast(trio.lowlevel.FdStream, self._stdin).fileno()
        self._stdout_fd: int = cast(trio.lowlevel.FdStream, self._stdout).fileno()
        self._drained = False  # the last read came back short: wait before reading again
        self._writer_busy = True  # until the writer task parks on its queue
        self._eof_note = ""
        self._closed = False

    @property
    def pid(self) -> int:
        """The process id (and process group id) of the server."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The server's exit code, or None while it runs."""
        return self._process.returncode

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        text = "\n".join(self._stderr_tail)
        return text[-_STDERR_TAIL_BYTES:]

    # -- sending -------------------------------------------------------------------------

    needs_info = False

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Queue one message for the writer task, which coalesces queued lines into one write."""
        if self._closed:
            raise trio.ClosedResourceError("the stdio transport is closed")
        if self._write_error is not None:
            raise self.closed_error() from self._write_error
        self._writer_busy = True
        self._out_send.send_nowait(data + b"\n")

    def try_send_now(self, data: bytes) -> bool:
        """Write a lone message straight to the non-blocking pipe while the writer is idle.

        Whatever the pipe does not take is queued for the writer task, so this never blocks.
        """
        if self._writer_busy or self._closed or self._write_error is not None:
            return False
        framed = data + b"\n"
        try:
            written = os.write(self._stdin_fd, framed)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            self._write_error = exc
            return False
        if written < len(framed):
            self._writer_busy = True
            self._out_send.send_nowait(framed[written:])
        return True

    async def _write_loop(self) -> None:
        receive = self._out_receive
        try:
            while True:
                try:
                    first = receive.receive_nowait()
                except trio.WouldBlock:
                    self._writer_busy = False
                    try:
                        first = await receive.receive()
                    except (trio.EndOfChannel, trio.ClosedResourceError):
                        break
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    break
                batch = [first]
                while True:
                    try:
                        batch.append(receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                        break
                await self._stdin.send_all(batch[0] if len(batch) == 1 else b"".join(batch))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._write_error = exc
            logger.debug("stdin of the server closed: %r", exc)
        finally:
            self._writer_busy = True  # no more fast-path writes
            self._writer_done.set()
            with trio.CancelScope(shield=True):
                try:
                    await self._stdin.aclose()
                except (trio.BrokenResourceError, OSError):  # pragma: no cover
                    pass

    # -- receiving -----------------------------------------------------------------------

    async def receive(self) -> bytes | RequestFailed:
        """Return the next whole line from the server's stdout."""
        buffer = self._buffer
        while True:
            newline = buffer.find(b"\n", self._scan)
            if newline >= 0:
                start = self._pos
                end = newline
                if end > start and buffer[end - 1] == 0x0D:  # tolerate CRLF
                    end -= 1
                message = bytes(buffer[start:end])
                self._pos = self._scan = newline + 1
                if self._pos >= len(buffer):
                    buffer.clear()
                    self._pos = self._scan = 0
                elif self._pos > _READ_CHUNK:
                    del buffer[: self._pos]
                    self._scan -= self._pos
                    self._pos = 0
                if end - start > self._max:
                    raise MessageTooLargeError(end - start, self._max)
                if message.strip():
                    return message
                continue
            pending = len(buffer) - self._pos
            if pending > self._max:
                raise MessageTooLargeError(pending, self._max)
            self._scan = len(buffer)
            try:
                chunk = await self._read_chunk()
            except (trio.BrokenResourceError, OSError) as exc:
                await self._collect_exit()
                raise self.closed_error() from exc
            except trio.ClosedResourceError:
                raise
            if not chunk:
                await self._collect_exit()
                if buffer[self._pos :].strip():
                    self._eof_note = (
                        f" in the middle of a message ({pending} bytes without a trailing newline)"
                    )
                    raise self.closed_error()
                raise trio.EndOfChannel
            buffer += chunk

    async def _read_chunk(self) -> bytes:
        """Read what the server wrote, waiting for readability first once the pipe is drained.

        A generic stream tries a read before waiting, which costs a failing read per message
        when messages arrive one at a time; after a short read the pipe is almost surely
        empty, so this waits first (one syscall saved per message on the hot path).
        """
        if self._closed:
            raise trio.ClosedResourceError("the stdio transport is closed")
        if self._drained:
            await trio.lowlevel.wait_readable(self._stdout_fd)
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            if self._closed:
                raise trio.ClosedResourceError("the stdio transport is closed")
            try:
                chunk = os.read(self._stdout_fd, _READ_CHUNK)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._stdout_fd)
                continue
            self._drained = len(chunk) < _READ_CHUNK
            return chunk

    async def _collect_exit(self) -> None:
        """After end of stdout, give the process a moment to exit and stderr to drain."""
        with trio.move_on_after(self._params.shutdown_timeout) as scope:
            scope.shield = True
            await self._process.wait()
            await self._stderr_done.wait()

    async def _drain_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        callback = self._params.on_stderr
        pending = b""
        try:
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    break
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if len(pending) > _STDERR_MAX_LINE:
                    lines.append(pending)
                    pending = b""
                for raw in lines:
                    self._emit_stderr(raw, callback)
            if pending:
                self._emit_stderr(pending, callback)
        finally:
            self._stderr_done.set()

    def _emit_stderr(self, raw: bytes, callback: Callable[[str], None] | None) -> None:
        line = raw.rstrip(b"\r").decode("utf-8", "replace")
        self._stderr_tail.append(line[:_STDERR_MAX_LINE])
        if callback is not None:
            try:
                callback(line)
            except Exception:
                logger.exception("the on_stderr callback raised")
        else:
            stderr_logger.info("%s", line)

    def closed_error(self) -> MCPError:
        """A :class:`ConnectionClosed` with the exit code and the tail of stderr."""
        return ConnectionClosed(
            f"the MCP server process closed its output{self._eof_note}",
            exit_code=self._process.returncode,
            stderr_tail=self.stderr_tail,
        )

    # -- shutdown ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group. Idempotent."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        grace = self._params.shutdown_timeout
        with trio.CancelScope(shield=True):
            self._out_send.close()  # the writer flushes what is queued, then closes stdin
            with trio.move_on_after(grace):
                await self._writer_done.wait()
            try:
                await self._stdin.aclose()
            except (trio.BrokenResourceError, OSError):  # pragma: no cover
                pass
            # Nothing more will be read: a server blocked writing to a full pipe gets EPIPE.
            await self._stdout.aclose()
            with trio.move_on_after(grace):
                await process.wait()
            if process.returncode is None:
                _signal_group(process.pid, signal.SIGTERM)
                with trio.move_on_after(grace):
                    await process.wait()
            if process.returncode is None:
                _signal_group(process.pid, signal.SIGKILL)
                await process.wait()
            # Grandchildren that outlived the server are part of its group: end them too.
            if _signal_group(process.pid, signal.SIGTERM):
                with trio.move_on_after(min(grace, 0.2)):
                    await trio.sleep(0.05)
                _signal_group(process.pid, signal.SIGKILL)
            with trio.move_on_after(grace):
                await self._stderr_done.wait()
            await self._stdout.aclose()
            if process.stderr is not None:
                await process.stderr.aclose()


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to a process group; False if the group no longer exists."""
    if sys.platform == "win32":  # pragma: no cover
        return False
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return False
    return True
