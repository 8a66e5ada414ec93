"""The asyncio client: :class:`AsyncConnection`, :class:`AsyncIndex`, :class:`AsyncPipeline`.

The same requests, answers, reconnect and retry rules as the blocking client
(:mod:`hsd_client.client`), built by the same code (:mod:`hsd_client.calls`,
:mod:`hsd_client.protocol`); only the waiting differs. Concurrent tasks may
share a connection: each request or pipeline holds it for its exchange.
"""

from __future__ import annotations

import asyncio
import select
from typing import (
    Any,
    Iterable,
    List,
    Literal,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from .calls import Call, Filter, IndexCore, Key, PipelineCore, Row, V, auth_call, convert_all
from .client import TLS, column_list, tls_context
from .errors import NetworkError, WriteUnconfirmedError
from .protocol import LineBuffer, Reply, Value, parse_reply
from .session import IndexSpec, Session

__all__ = ["AsyncConnection", "AsyncIndex", "AsyncPipeline", "connect_async"]

T = TypeVar("T")

_RECV_SIZE = 256 * 1024


def _readable(fd: int) -> bool:
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover
    except (OSError, ValueError):
        return True


class _ServerClosed(ConnectionError):
    """The server closed the connection before answering everything."""


class AsyncConnection:
    """One HandlerSocket connection for asyncio, re-established as needed.

    Arguments as for :class:`hsd_client.Connection`. Nothing is sent until
    the first request, or :meth:`connect`.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9999,
        *,
        secret: Union[bytes, str, None] = None,
        tls: TLS = None,
        server_hostname: Optional[str] = None,
        timeout: Optional[float] = 10.0,
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self._tls = tls_context(tls)
        self._server_hostname = server_hostname or host
        self._session = Session(secret)
        self._stream: Optional[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = None
        self._buffer = LineBuffer()
        self._lock: Optional[asyncio.Lock] = None  # made in the loop that uses it
        #: How many times a socket was opened: 1 after the first request.
        self.connects = 0

    # -- lifecycle --------------------------------------------------------------

    async def connect(self) -> "AsyncConnection":
        """Connect (and authenticate, and re-open indexes) now rather than on first use."""
        async with self._locked():
            try:
                await self._ready(check=False)
            except OSError as exc:
                raise NetworkError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return self

    async def close(self) -> None:
        """Close the connection. The next request opens a new one."""
        stream = self._stream
        self._drop()
        if stream is not None:
            try:
                await asyncio.wait_for(stream[1].wait_closed(), self.timeout)
            except (OSError, asyncio.TimeoutError):
                pass

    @property
    def connected(self) -> bool:
        return self._stream is not None

    async def __aenter__(self) -> "AsyncConnection":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "connected" if self._stream else "idle"
        return f"<AsyncConnection {self.host}:{self.port} {state}>"

    # -- requests -----------------------------------------------------------------

    async def auth(self, secret: Union[bytes, str]) -> None:
        """Authenticate with a plain secret; it is sent again after every reconnect.

        A secret the server refuses (:class:`~hsd_client.AuthError`) is not kept.
        """
        call = auth_call(secret)
        async with self._locked():
            previous, self._session.secret = self._session.secret, secret
            try:
                call.convert((await self._exchange_locked([call]))[0])
            except BaseException:
                self._session.secret = previous
                raise

    @overload
    async def open_index(
        self,
        db: str,
        table: str,
        index: str = ...,
        columns: Union[str, Sequence[str]] = ...,
        filter_columns: Union[str, Sequence[str]] = ...,
        *,
        encoding: None = None,
    ) -> "AsyncIndex[bytes]": ...

    @overload
    async def open_index(
        self,
        db: str,
        table: str,
        index: str = ...,
        columns: Union[str, Sequence[str]] = ...,
        filter_columns: Union[str, Sequence[str]] = ...,
        *,
        encoding: str,
    ) -> "AsyncIndex[str]": ...

    async def open_index(
        self,
        db: str,
        table: str,
        index: str = "PRIMARY",
        columns: Union[str, Sequence[str]] = (),
        filter_columns: Union[str, Sequence[str]] = (),
        *,
        encoding: Optional[str] = None,
    ) -> "AsyncIndex[Any]":
        """As :meth:`hsd_client.Connection.open_index`."""
        spec = IndexSpec(db, table, index, column_list(columns), column_list(filter_columns))
        index_id = self._session.lookup(spec)
        if index_id is None:
            async with self._locked():
                index_id = self._session.lookup(spec)
                if index_id is None:
                    index_id = self._session.next_id()
                    call = spec.call(index_id)
                    call.convert((await self._exchange_locked([call]))[0])
                    self._session.opened(index_id, spec)
        return AsyncIndex(self, index_id, spec, encoding)

    def pipeline(self) -> "AsyncPipeline":
        """A batch of requests written at once; ``await p.execute()`` sends it."""
        return AsyncPipeline(self)

    # -- the exchange ---------------------------------------------------------------

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _run(self, call: Call[T]) -> T:
        async with self._locked():
            replies = await self._exchange_locked([call])
        return call.convert(replies[0])

    async def _run_many(self, calls: Sequence[Call[Any]], raise_errors: bool = True) -> List[Any]:
        if not calls:
            return []
        async with self._locked():
            replies = await self._exchange_locked(calls)
        return convert_all(calls, replies, raise_errors)

    async def _exchange_locked(self, calls: Sequence[Call[Any]]) -> List[Reply]:
        """Send the lines at once, read one answer each; reconnect and retry reads once."""
        payload = b"".join(c.line for c in calls)
        writes = any(c.writes for c in calls)
        for attempt in (1, 2):
            sent = False
            try:
                writer = await self._ready(check=writes)
                sent = True
                writer.write(payload)
                await self._within(writer.drain())
                return await self._read(len(calls))
            except OSError as exc:  # includes timeouts and TLS errors
                self._drop()
                where = f"{self.host}:{self.port}"
                if writes and sent:
                    raise WriteUnconfirmedError(
                        f"connection to {where} lost before a write was answered "
                        f"({exc!r}); it may or may not have been applied"
                    ) from exc
                if writes or attempt == 2:
                    raise NetworkError(f"connection to {where} failed: {exc!r}") from exc
            except BaseException:
                # Cancelled or a bad answer mid-exchange: answers are still in
                # flight, so this socket can never be used again.
                self._drop()
                raise
        raise AssertionError("unreachable")

    async def _within(self, awaitable: Any) -> Any:
        try:
            return await asyncio.wait_for(awaitable, self.timeout)
        except asyncio.TimeoutError as exc:  # not an OSError before Python 3.11
            raise TimeoutError("timed out") from exc

    async def _ready(self, check: bool) -> asyncio.StreamWriter:
        """The stream, opened and restored if needed (a write checks it first)."""
        if self._stream is not None and check and not await self._alive(*self._stream):
            self._drop()
        if self._stream is None:
            self._stream = await self._within(
                asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self._tls,
                    server_hostname=self._server_hostname if self._tls else None,
                )
            )
            self.connects += 1
            restore = self._session.restore_calls()
            try:
                if restore:
                    self._stream[1].write(b"".join(c.line for c in restore))
                    for call, reply in zip(restore, await self._read(len(restore))):
                        call.convert(reply)  # raises AuthError, OpenTableError...
            except BaseException:
                self._drop()  # never use a connection left half restored
                raise
        return self._stream[1]

    @staticmethod
    async def _alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """False when the idle stream was closed by the server."""
        sock = writer.get_extra_info("socket")
        if sock is not None and _readable(sock.fileno()):
            # Something came while no answer is due (an end of stream, or a
            # TLS session ticket): give the transport a few loop turns to take it.
            for _ in range(3):
                if reader.at_eof():
                    break
                await asyncio.sleep(0)
        return not (reader.at_eof() or reader.exception() is not None or writer.is_closing())

    async def _read(self, count: int) -> List[Reply]:
        assert self._stream is not None
        reader, buf = self._stream[0], self._buffer
        replies: List[Reply] = []
        while len(replies) < count:
            lines = buf.pop_lines(count - len(replies))
            if not lines:
                data = await self._within(reader.read(_RECV_SIZE))
                if not data:
                    raise _ServerClosed("the server closed the connection")
                buf.feed(data)
                continue
            replies += map(parse_reply, lines)
        return replies

    def _drop(self) -> None:
        stream, self._stream = self._stream, None
        self._buffer.clear()
        if stream is not None:
            stream[1].close()


async def connect_async(
    host: str = "127.0.0.1",
    port: int = 9999,
    *,
    secret: Union[bytes, str, None] = None,
    tls: TLS = None,
    server_hostname: Optional[str] = None,
    timeout: Optional[float] = 10.0,
) -> AsyncConnection:
    """An :class:`AsyncConnection`, connected now so that a wrong address fails here."""
    conn = AsyncConnection(
        host, port, secret=secret, tls=tls, server_hostname=server_hostname, timeout=timeout
    )
    return await conn.connect()


class AsyncIndex(IndexCore[V]):
    """An index opened on an :class:`AsyncConnection`; methods as :class:`hsd_client.Index`."""

    def __init__(self, connection: AsyncConnection, index_id: int, spec: IndexSpec, encoding: Optional[str]) -> None:
        super().__init__(index_id, spec, encoding)
        self.connection = connection

    async def find(
        self,
        key: Key,
        op: str = "=",
        *,
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
    ) -> List[Row[V]]:
        return await self.connection._run(
            self.find_call(key, op, limit, offset, in_column, in_values, filters)
        )

    async def get(self, key: Key) -> Optional[Row[V]]:
        return await self.connection._run(self.get_call(key))

    async def get_many(self, keys: Iterable[Key]) -> List[Optional[Row[V]]]:
        return await self.connection._run_many([self.get_call(k) for k in keys])

    async def find_in(
        self,
        values: Sequence[Value],
        *,
        column: int = 0,
        prefix: Sequence[Value] = (),
        op: str = "=",
        limit: Optional[int] = None,
        offset: int = 0,
        filters: Sequence[Filter] = (),
    ) -> List[Row[V]]:
        return await self.connection._run(
            self.find_in_call(values, column, prefix, op, limit, offset, filters)
        )

    async def insert(self, values: Key) -> Optional[int]:
        return await self.connection._run(self.insert_call(values))

    @overload
    async def update(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                     in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                     filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    async def update(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                     in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                     filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    async def update(self, key: Key, values: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
                     in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
                     filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        return await self.connection._run(self.modify_call(
            "U", key, values, op, limit, offset, in_column, in_values, filters, returning))

    @overload
    async def delete(self, key: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                     in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                     filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    async def delete(self, key: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                     in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                     filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    async def delete(self, key: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
                     in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
                     filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        return await self.connection._run(self.modify_call(
            "D", key, None, op, limit, offset, in_column, in_values, filters, returning))

    @overload
    async def increment(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                        in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                        filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    async def increment(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                        in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                        filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    async def increment(self, key: Key, values: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
                        in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
                        filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        return await self.connection._run(self.modify_call(
            "+", key, values, op, limit, offset, in_column, in_values, filters, returning))

    @overload
    async def decrement(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                        in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                        filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    async def decrement(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                        in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                        filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    async def decrement(self, key: Key, values: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
                        in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
                        filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        return await self.connection._run(self.modify_call(
            "-", key, values, op, limit, offset, in_column, in_values, filters, returning))


class AsyncPipeline(PipelineCore):
    """Requests queued on an :class:`AsyncConnection`; ``await execute()`` sends them."""

    def __init__(self, connection: AsyncConnection) -> None:
        super().__init__()
        self.connection = connection

    async def execute(self, raise_errors: bool = True) -> List[Any]:
        """As :meth:`hsd_client.Pipeline.execute`."""
        return await self.connection._run_many(self._take(), raise_errors)
