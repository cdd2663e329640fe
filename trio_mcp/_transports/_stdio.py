"""The stdio transport: an MCP server as a child process, newline-delimited JSON on its pipes.

* Line reassembly is linear in message size: each received chunk is scanned for a newline
  once, from where the previous scan stopped.
* The child runs in its own process group; its stderr is drained continuously by a task, each
  line forwarded to a logger (or a callback) and the tail kept for error messages.
* Writes from many callers are coalesced by one writer task: callers hand their line to a
  bounded queue (``send`` waits while it is full), and the writer writes each line whole, so a
  caller cancelled after ``send`` returned never leaves half a line on the pipe. While nothing
  is queued a line goes straight to the non-blocking pipe (what it does not take is queued
  whole); the writer task and its queue start with the first line that has to wait.
* Shutdown follows the spec: close stdin, wait, SIGTERM the group, wait, SIGKILL the group;
  every step bounded and shielded, so it completes even when the caller is cancelled.

POSIX only: the transport reads and writes the pipes' file descriptors directly (non-blocking
``os.read``/``os.write`` and `trio.lowlevel.wait_readable()`), which trio does not offer
for pipes on Windows; there, opening it raises [`TransportError`][trio_mcp.TransportError] at once.
"""

from __future__ import annotations

import collections
import logging
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import cast

import trio

from .._exceptions import ConnectionClosed, MCPError, MessageTooLargeError, TransportError
from .._redact import redacted_repr
from ._base import MessageInfo, Transport

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "StdioParameters", "StdioTransport", "default_environment"]

logger = logging.getLogger("trio_mcp.stdio")
stderr_logger = logging.getLogger("trio_mcp.server_stderr")

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
"""The default maximum size of one incoming message (64 MiB)."""

_READ_CHUNK = 256 * 1024
_STDERR_TAIL_LINES = 50
_STDERR_TAIL_BYTES = 8192
_STDERR_MAX_LINE = 16384

_WRITE_QUEUE_SIZE = 1024
"""How many lines may wait for the writer task before ``send`` waits (backpressure). The writer
joins everything queued into one write, so the queue only has to absorb what arrives during one
write: 1,024 lines take a burst of 1,000 concurrent requests without any caller waiting (a 64-line
queue made most of them wait and switch tasks: 1,000 concurrent calls ran about 12 % slower), while
a server that stops reading stdin holds at most 1,024 of this client's own messages (plus the pipe's
buffer, 64 KiB on Linux) in this process instead of an ever-growing queue."""

_KILL_WAIT = 5.0
"""Seconds to wait for a SIGKILLed process to be reaped before giving up on it."""

_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")


def default_environment() -> dict[str, str]:
    """The safe environment a stdio server inherits by default.

    Only a handful of variables needed to find programs and behave normally (``PATH``,
    ``HOME``, ``USER``, locale, ...) are passed on, so secrets in the parent's environment
    do not leak into third-party servers. Values that look like shell functions are skipped.
    """
    env: dict[str, str] = {}
    for key in _ENV_KEYS:
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):
            env[key] = value
    return env


@dataclass(frozen=True)
class StdioParameters:
    """How to launch a stdio MCP server.

    Args:
        command: The program and its arguments (an argv list), or a command line string,
            which is split like a POSIX shell would (`shlex.split()`; no shell runs).
        env: Extra environment variables, added to `default_environment()` (or to the
            full parent environment when ``inherit_env`` is true).
        cwd: The working directory of the server.
        inherit_env: Pass the whole parent environment instead of the safe default.
        max_message_size: The largest message accepted from the server, in bytes; a larger
            one fails the session with [`MessageTooLargeError`][trio_mcp.MessageTooLargeError].
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

    def __repr__(self) -> str:
        return redacted_repr(self, ("env",))  # env values are often credentials

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
        return _OpenStdio(self, nursery)


class _OpenStdio:
    """``async with``: start the server and its stderr drain; close it all on exit.

    A plain class, not a generator context manager: an open session keeps nothing of the
    start-up alive (no suspended frame holding the environment, argv, ...).
    """

    __slots__ = ("_nursery", "_params", "_transport")

    def __init__(self, params: StdioParameters, nursery: trio.Nursery) -> None:
        self._params = params
        self._nursery = nursery
        self._transport: StdioTransport | None = None

    async def __aenter__(self) -> StdioTransport:
        self._transport = await _start_stdio(self._params, self._nursery)
        return self._transport

    async def __aexit__(self, *exc_info: object) -> None:
        if self._transport is not None:
            await self._transport.aclose()


async def _start_stdio(params: StdioParameters, nursery: trio.Nursery) -> StdioTransport:
    argv = params.argv
    if not argv:
        raise ValueError("empty command: give the program to run and its arguments")
    if sys.platform == "win32":
        raise TransportError(
            "the stdio transport is POSIX-only (Linux, macOS): it uses non-blocking pipe file "
            "descriptors that trio does not offer on Windows; run the client under WSL, or "
            "reach the server over HTTP or WebSocket"
        )
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
    try:
        transport = StdioTransport(process, params, nursery)
    except BaseException:
        await _kill_now(process)
        raise
    try:
        # The writer task starts with the first line that has to wait (see _queue).
        nursery.start_soon(transport._drain_stderr, name=f"trio_mcp stderr {argv[0]}")
    except BaseException:
        await transport.aclose()
        raise
    return transport


class StdioTransport(Transport):
    """A running stdio MCP server process. Created by
    [`StdioParameters`][trio_mcp.transports.StdioParameters]."""

    def __init__(
        self, process: trio.Process, params: StdioParameters, nursery: trio.Nursery
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        self._process = process
        self._params = params
        self._nursery = nursery
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._max = params.max_message_size
        self._chunk = b""  # the last chunk read
        self._pos = 0  # start of its unconsumed part
        self._parts: list[bytes | memoryview] = []  # earlier pieces of an unfinished line
        self._parts_size = 0
        # The write queue and its writer task exist from the first line that cannot be
        # written at once (most sessions never have one: an idle task and its queue cost
        # about 4 KiB); until then lines go straight to the non-blocking pipe.
        self._out_send: trio.MemorySendChannel[bytes] | None = None
        self._writer_done: trio.Event | None = None  # while the writer task runs
        self._stderr_tail: collections.deque[str] | None = None  # from the first line on
        self._stderr_finished = False
        self._stderr_done: trio.Event | None = None  # made by the first waiter
        self._write_error: BaseException | None = None
        self._writer_ended = False  # the writer task ended: nothing more can be written
        self._writer_cancelled = False  # the transport's nursery was cancelled under it
        self._stdin_fd: int = cast(trio.lowlevel.FdStream, self._stdin).fileno()
        self._stdout_fd: int = cast(trio.lowlevel.FdStream, self._stdout).fileno()
        self._stderr_fd: int = cast(trio.lowlevel.FdStream, process.stderr).fileno()
        self._stderr_closed = False
        self._drained = False  # the last read came back short: wait before reading again
        self._writer_busy = False  # lines are queued (or being written) by the writer task
        self._eof_note = ""
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The process id (and process group id) of the server; None once it has exited
        (then ``returncode`` is its exit code)."""
        process = self._process
        return process.pid if process.returncode is None else None

    @property
    def returncode(self) -> int | None:
        """The server's exit code, or None while it runs."""
        return self._process.returncode

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        text = "\n".join(self._stderr_tail or ())
        return text[-_STDERR_TAIL_BYTES:]

    @property
    def era_key(self) -> str:
        """The command line (and working directory, if set) that started the server."""
        command = shlex.join(self._params.argv)
        cwd = self._params.cwd
        if cwd is not None:
            command = f"cd {shlex.quote(os.fspath(cwd))} && {command}"
        return f"stdio:{command}"

    # -- sending -------------------------------------------------------------------------

    needs_info = False

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Write one message: straight to the pipe while nothing is queued, else queue it.

        A line the pipe takes only in part, and every line after it while some wait, go to
        the writer task (started then), which coalesces queued lines into one write and
        writes each line whole, even when the caller is cancelled after this returned.

        Args:
            data: The encoded message, without the newline.
            info: Ignored (a byte pipe needs no routing information).

        Raises:
            trio.ClosedResourceError: The transport was closed.
            ConnectionClosed: The server's stdin is gone, or the writer task ended because
                the nursery the transport was opened with was cancelled.
        """
        if self._closed:
            raise trio.ClosedResourceError("the stdio transport is closed")
        if self._writer_ended or self._writer_cancelled or self._write_error is not None:
            raise self.closed_error() from self._write_error
        if not self._writer_busy:
            # Nothing queued: straight to the pipe (the rest, if any, queued whole), with
            # the checkpoint around it (cancelled before: nothing was handed over).
            await trio.lowlevel.checkpoint_if_cancelled()
            if self.try_send_now(data):
                await trio.lowlevel.cancel_shielded_checkpoint()
                return
            if self._write_error is not None:
                raise self.closed_error() from self._write_error
        out = self._writer_queue()
        if out is None:
            raise self.closed_error() from self._write_error
        self._writer_busy = True
        try:
            await out.send(data + b"\n")
        except trio.BrokenResourceError as exc:  # the writer ended while we waited
            raise self.closed_error() from (self._write_error or exc)
        except trio.ClosedResourceError:  # closed while we waited
            raise trio.ClosedResourceError("the stdio transport is closed") from None

    def queue_nowait(self, data: bytes) -> bool:
        """Queue one message for the writer without waiting, if the queue has room.

        Args:
            data: The encoded message, without the newline.

        Returns:
            True if the line was queued (and will be written whole).
        """
        if self._closed or self._writer_ended or self._writer_cancelled:
            return False
        out = self._writer_queue()
        if out is None:
            return False
        try:
            out.send_nowait(data + b"\n")
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        self._writer_busy = True
        return True

    def _writer_queue(self) -> trio.MemorySendChannel[bytes] | None:
        """The writer task's queue, starting the task first if it is not running yet.

        None when it cannot run: the nursery the transport was opened with no longer takes
        tasks (then nothing more can be written), or it already ended.
        """
        out = self._out_send
        if out is not None or self._writer_ended:
            return out
        out, receive = trio.open_memory_channel[bytes](_WRITE_QUEUE_SIZE)
        try:
            self._nursery.start_soon(
                self._write_loop, receive, name=f"trio_mcp writer {self._params.argv[0]}"
            )
        except RuntimeError as exc:  # the nursery is closed to new tasks
            self._writer_cancelled = True
            self._writer_ended = True
            self._write_error = exc
            return None
        self._out_send = out
        self._writer_done = trio.Event()
        return out

    def try_send_now(self, data: bytes) -> bool:
        """Write a lone message straight to the non-blocking pipe while the writer is idle.

        The writer is idle only when its queue is empty, so whatever the pipe does not take
        is queued for it without waiting (the queue has room), ahead of any later message:
        this never blocks and keeps lines whole and in order. While the writer is busy this
        returns False, and the session calls `send()`.

        Args:
            data: The encoded message, without the newline.

        Returns:
            True if the line was written or queued.
        """
        if (
            self._writer_busy
            or self._closed
            or self._write_error is not None
            or self._writer_ended
            or self._writer_cancelled
        ):
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
            out = self._writer_queue()
            if out is None:  # (the owner's nursery is gone: the line stays cut)
                return True
            self._writer_busy = True
            out.send_nowait(framed[written:])  # cannot block: the queue is empty
        return True

    async def _write_loop(self, receive: trio.MemoryReceiveChannel[bytes]) -> None:
        try:
            while True:
                first: bytes | None
                try:
                    first = receive.receive_nowait()
                except trio.WouldBlock:
                    first = None  # (wait outside the handler: it would keep the exception)
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    break
                if first is None:
                    self._writer_busy = False
                    try:
                        first = await receive.receive()
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
        except trio.Cancelled:
            self._writer_cancelled = not self._closed
            raise
        except Exception as exc:  # pragma: no cover - never raise into the user's nursery
            self._write_error = exc
            logger.exception("the stdio writer failed")
        finally:
            self._writer_busy = True  # no more fast-path writes
            self._writer_ended = True
            receive.close()  # senders waiting for room get BrokenResourceError
            if self._writer_done is not None:
                self._writer_done.set()
            with trio.CancelScope(shield=True):
                try:
                    await self._stdin.aclose()
                except (trio.BrokenResourceError, OSError):  # pragma: no cover
                    pass

    # -- receiving -----------------------------------------------------------------------

    async def receive(self) -> bytes:
        """Return the next whole line from the server's stdout (without the newline).

        Raises:
            trio.EndOfChannel: The server closed its stdout after a whole line.
            ConnectionClosed: The server's stdout broke, or ended in the middle of a line.
            MessageTooLargeError: A line is longer than ``max_message_size``.
            trio.ClosedResourceError: The transport was closed.
        """
        while True:
            chunk = self._chunk
            start = self._pos
            newline = chunk.find(b"\n", start)
            if newline >= 0:
                self._pos = newline + 1
                parts = self._parts
                if parts:  # the line began in earlier chunks: one copy of each piece
                    size = self._parts_size + newline - start
                    self._parts = []
                    self._parts_size = 0
                    if size > self._max:
                        raise MessageTooLargeError(size, self._max)
                    parts.append(memoryview(chunk)[start:newline])
                    message = b"".join(parts)
                else:
                    if newline - start > self._max:
                        raise MessageTooLargeError(newline - start, self._max)
                    message = chunk[start:newline]
                if message[-1:] == b"\r":  # tolerate CRLF
                    message = message[:-1]
                if message.strip():
                    return message
                continue
            rest = len(chunk) - start
            if rest:  # no newline in the rest of the chunk: keep it, without copying
                self._parts.append(memoryview(chunk)[start:] if start else chunk)
                self._parts_size += rest
            self._chunk = b""
            self._pos = 0
            pending = self._parts_size
            if pending > self._max:
                raise MessageTooLargeError(pending, self._max)
            try:
                chunk = await self._read_chunk()
            except (trio.BrokenResourceError, OSError) as exc:
                await self._collect_exit()
                raise self.closed_error() from exc
            except trio.ClosedResourceError:
                raise
            if not chunk:
                await self._collect_exit()
                if b"".join(self._parts).strip():
                    self._eof_note = (
                        f" in the middle of a message ({pending} bytes without a trailing newline)"
                    )
                    raise self.closed_error()
                raise trio.EndOfChannel
            self._chunk = chunk

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
            await self._stderr_drained()

    async def _stderr_drained(self) -> None:
        """Wait until the stderr drain task has ended (its end of stream, or closed)."""
        if not self._stderr_finished:
            if self._stderr_done is None:  # (an Event costs 272 bytes: made when needed)
                self._stderr_done = trio.Event()
            await self._stderr_done.wait()

    async def _drain_stderr(self) -> None:
        # Reads the descriptor directly, as for stdout: no stream wrapper frame per session.
        fd = self._stderr_fd
        callback = self._params.on_stderr
        pending = b""
        try:
            while True:
                try:
                    await trio.lowlevel.wait_readable(fd)
                    if self._stderr_closed:  # closed while this task was being woken
                        break
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
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
        except trio.Cancelled:
            # The nursery the transport was opened with was cancelled: no task of the
            # transport runs any more, so nothing more can be written either.
            self._writer_cancelled = not self._closed
            raise
        finally:
            self._stderr_finished = True
            if self._stderr_done is not None:
                self._stderr_done.set()

    def _emit_stderr(self, raw: bytes, callback: Callable[[str], None] | None) -> None:
        line = raw.rstrip(b"\r").decode("utf-8", "replace")
        tail = self._stderr_tail
        if tail is None:  # an empty deque costs 760 bytes; most servers never write stderr
            tail = self._stderr_tail = collections.deque(maxlen=_STDERR_TAIL_LINES)
        tail.append(line[:_STDERR_MAX_LINE])
        if callback is not None:
            try:
                callback(line)
            except Exception:
                logger.exception("the on_stderr callback raised")
        else:
            stderr_logger.info("%s", line)

    def closed_error(self) -> MCPError:
        """A [`ConnectionClosed`][trio_mcp.ConnectionClosed] with the exit code and the tail of
        stderr."""
        if self._writer_cancelled and self._process.returncode is None:
            message = (
                "the stdio transport stopped: the nursery it was opened with was cancelled, "
                "so nothing more can be written to the MCP server"
            )
        else:
            message = f"the MCP server process closed its output{self._eof_note}"
        return ConnectionClosed(
            message, exit_code=self._process.returncode, stderr_tail=self.stderr_tail
        )

    # -- shutdown ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group. Idempotent.

        Every step is shielded and bounded by ``shutdown_timeout`` (the wait after SIGKILL
        by a few seconds), so this completes even when the caller is cancelled. Where the
        group cannot be signalled, the server process itself is.
        """
        if self._closed:
            return
        self._closed = True
        process = self._process
        grace = self._params.shutdown_timeout
        with trio.CancelScope(shield=True):
            if self._out_send is not None:
                self._out_send.close()  # the writer flushes what is queued, then closes stdin
            if self._writer_done is not None:
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
                if not _signal_group(process.pid, signal.SIGTERM):
                    _signal(process, signal.SIGTERM)
                with trio.move_on_after(grace):
                    await process.wait()
            if process.returncode is None:
                if not _signal_group(process.pid, signal.SIGKILL):
                    _signal(process, signal.SIGKILL)
                with trio.move_on_after(_KILL_WAIT):
                    await process.wait()
                if process.returncode is None:  # pragma: no cover - stuck in the kernel
                    logger.warning("the MCP server (pid %d) survived SIGKILL", process.pid)
            # Grandchildren that outlived the server are part of its group: end them too.
            if _signal_group(process.pid, signal.SIGTERM):
                await trio.sleep(min(0.05, grace))
                _signal_group(process.pid, signal.SIGKILL)
            with trio.move_on_after(grace):
                await self._stderr_drained()
            self._stderr_closed = True
            if process.stderr is not None:
                await process.stderr.aclose()


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to a process group; False if that failed (no such group, not allowed)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal(process: trio.Process, sig: signal.Signals) -> None:
    """Send ``sig`` to the server process alone (a no-op once it has been reaped)."""
    try:
        process.send_signal(sig)
    except OSError:  # pragma: no cover - it exited between the check and the signal
        pass


async def _kill_now(process: trio.Process) -> None:
    """Kill a server that never got a transport, reap it and close its pipes (shielded)."""
    if not _signal_group(process.pid, signal.SIGKILL):
        _signal(process, signal.SIGKILL)
    with trio.CancelScope(shield=True):
        with trio.move_on_after(_KILL_WAIT):
            await process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                await pipe.aclose()
