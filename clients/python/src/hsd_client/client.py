"""The blocking client: :class:`Connection`, :class:`Index`, :class:`Pipeline`.

A connection is opened on first use, and again after it breaks: the new one
is authenticated and given every index the old one had (same ids) before the
request goes out. A batch of reads that fails on the network is sent once
more on a new connection; a batch holding any write never is (it raises
:class:`~hsd_client.errors.WriteUnconfirmedError` when the answer is lost).

A connection may be shared by threads: each request or pipeline holds it
for its whole exchange. :class:`~hsd_client.pool.ConnectionPool` gives
threads connections of their own.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
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
from .errors import NetworkError, WriteUnconfirmedError
from .protocol import LineBuffer, Reply, Value, parse_reply
from .session import IndexSpec, Session

__all__ = ["Connection", "Index", "Pipeline", "connect", "TLS"]

T = TypeVar("T")

#: ``True`` for TLS with the system's trusted certificates, or an
#: :class:`ssl.SSLContext` of your own; ``None``/``False`` for plain TCP.
TLS = Union[bool, ssl.SSLContext, None]

_RECV_SIZE = 256 * 1024


def tls_context(tls: TLS) -> Optional[ssl.SSLContext]:
    if tls is None or tls is False:
        return None
    if tls is True:
        return ssl.create_default_context()
    return tls


def column_list(columns: Union[str, Sequence[str]]) -> Tuple[str, ...]:
    """``"a,b"`` or ``["a", "b"]`` as a tuple of names."""
    if isinstance(columns, str):
        return tuple(c for c in columns.split(",") if c)
    return tuple(columns)


class _ServerClosed(ConnectionError):
    """The server closed the connection before answering everything."""


class Connection:
    """One HandlerSocket connection, re-established as needed.

    ``port`` is the server's read port (9998: finds only) or write port
    (9999: everything). ``secret`` is sent with ``A 1`` on every new
    connection. ``tls`` is ``True``, an :class:`ssl.SSLContext`, or ``None``.
    ``timeout`` bounds connecting and each wait for an answer, in seconds.
    Nothing is sent until the first request, or :meth:`connect`.
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
        self._sock: Optional[socket.socket] = None
        self._buffer = LineBuffer()
        self._lock = threading.RLock()
        #: How many times a socket was opened: 1 after the first request.
        self.connects = 0

    # -- lifecycle --------------------------------------------------------------

    def connect(self) -> "Connection":
        """Connect (and authenticate, and re-open indexes) now rather than on first use."""
        with self._lock:
            try:
                self._ready(check=False)
            except OSError as exc:
                raise NetworkError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return self

    def close(self) -> None:
        """Close the socket. The next request opens a new one."""
        with self._lock:
            self._drop()

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "connected" if self._sock else "idle"
        return f"<Connection {self.host}:{self.port} {state}>"

    # -- requests -----------------------------------------------------------------

    def auth(self, secret: Union[bytes, str]) -> None:
        """Authenticate with a plain secret; it is sent again after every reconnect.

        A secret the server refuses (:class:`~hsd_client.AuthError`) is not kept.
        """
        with self._lock:
            previous, self._session.secret = self._session.secret, secret
            try:
                self._run(auth_call(secret))
            except BaseException:
                self._session.secret = previous
                raise

    @overload
    def open_index(
        self,
        db: str,
        table: str,
        index: str = ...,
        columns: Union[str, Sequence[str]] = ...,
        filter_columns: Union[str, Sequence[str]] = ...,
        *,
        encoding: None = None,
    ) -> "Index[bytes]": ...

    @overload
    def open_index(
        self,
        db: str,
        table: str,
        index: str = ...,
        columns: Union[str, Sequence[str]] = ...,
        filter_columns: Union[str, Sequence[str]] = ...,
        *,
        encoding: str,
    ) -> "Index[str]": ...

    def open_index(
        self,
        db: str,
        table: str,
        index: str = "PRIMARY",
        columns: Union[str, Sequence[str]] = (),
        filter_columns: Union[str, Sequence[str]] = (),
        *,
        encoding: Optional[str] = None,
    ) -> "Index[Any]":
        """Open ``db.table`` by ``index`` (a name, ``PRIMARY``, or a position).

        ``columns`` are what finds return and writes set, in order;
        ``filter_columns`` are what :class:`~hsd_client.Filter` may name.
        Values come back as bytes, or as ``str`` decoded with ``encoding``.
        Opening the same index with the same columns again sends nothing.
        """
        spec = IndexSpec(db, table, index, column_list(columns), column_list(filter_columns))
        with self._lock:
            index_id = self._session.lookup(spec)
            if index_id is None:
                index_id = self._session.next_id()
                self._run(spec.call(index_id))
                self._session.opened(index_id, spec)
        return Index(self, index_id, spec, encoding)

    def pipeline(self) -> "Pipeline":
        """A batch of requests written at once; :meth:`Pipeline.execute` sends it."""
        return Pipeline(self)

    # -- the exchange ---------------------------------------------------------------

    def _run(self, call: Call[T]) -> T:
        return call.convert(self._exchange([call])[0])

    def _run_many(self, calls: Sequence[Call[Any]], raise_errors: bool = True) -> List[Any]:
        if not calls:
            return []
        return convert_all(calls, self._exchange(calls), raise_errors)

    def _exchange(self, calls: Sequence[Call[Any]]) -> List[Reply]:
        """Send the lines at once, read one answer each; reconnect and retry reads once."""
        payload = b"".join(c.line for c in calls)
        writes = any(c.writes for c in calls)
        with self._lock:
            for attempt in (1, 2):
                sent = False
                try:
                    sock = self._ready(check=writes)
                    sent = True
                    sock.sendall(payload)
                    return self._read(len(calls))
                except OSError as exc:
                    self._drop()
                    where = f"{self.host}:{self.port}"
                    if writes and sent:
                        raise WriteUnconfirmedError(
                            f"connection to {where} lost before a write was answered "
                            f"({exc}); it may or may not have been applied"
                        ) from exc
                    if writes or attempt == 2:
                        raise NetworkError(f"connection to {where} failed: {exc}") from exc
                except BaseException:
                    # A half-read exchange (ProtocolError, KeyboardInterrupt...)
                    # leaves answers in flight: never reuse that socket.
                    self._drop()
                    raise
        raise AssertionError("unreachable")

    def _ready(self, check: bool) -> socket.socket:
        """The socket, opened and restored if needed (a write checks it first)."""
        if self._sock is not None and check and not self._alive(self._sock):
            self._drop()
        if self._sock is None:
            self._sock = self._open()
            restore = self._session.restore_calls()
            try:
                if restore:
                    self._sock.sendall(b"".join(c.line for c in restore))
                    for call, reply in zip(restore, self._read(len(restore))):
                        call.convert(reply)  # raises AuthError, OpenTableError...
            except BaseException:
                self._drop()  # never use a connection left half restored
                raise
        return self._sock

    def _open(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._server_hostname)
        except BaseException:
            sock.close()
            raise
        self.connects += 1
        return sock

    def _alive(self, sock: socket.socket) -> bool:
        """False when the idle socket was closed by the server (or has stray bytes)."""
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return False
        try:
            if hasattr(select, "poll"):
                poller = select.poll()
                poller.register(sock, select.POLLIN)
                readable = bool(poller.poll(0))
            else:  # pragma: no cover - platforms without poll
                readable = bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            return False
        if not readable:
            return True
        # Readable with no answer due: end of stream, a reset, or (TLS) a
        # session ticket, which leaves nothing to read.
        sock.setblocking(False)
        try:
            sock.recv(1)
        except (ssl.SSLWantReadError, BlockingIOError):
            return True
        except OSError:
            return False
        finally:
            sock.settimeout(self.timeout)
        return False

    def _read(self, count: int) -> List[Reply]:
        assert self._sock is not None
        sock, buf = self._sock, self._buffer
        replies: List[Reply] = []
        while len(replies) < count:
            lines = buf.pop_lines(count - len(replies))
            if not lines:
                data = sock.recv(_RECV_SIZE)
                if not data:
                    raise _ServerClosed("the server closed the connection")
                buf.feed(data)
                continue
            replies += map(parse_reply, lines)
        return replies

    def _drop(self) -> None:
        sock, self._sock = self._sock, None
        self._buffer.clear()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


def connect(
    host: str = "127.0.0.1",
    port: int = 9999,
    *,
    secret: Union[bytes, str, None] = None,
    tls: TLS = None,
    server_hostname: Optional[str] = None,
    timeout: Optional[float] = 10.0,
) -> Connection:
    """A :class:`Connection`, connected now so that a wrong address fails here."""
    return Connection(
        host, port, secret=secret, tls=tls, server_hostname=server_hostname, timeout=timeout
    ).connect()


class Index(IndexCore[V]):
    """An index opened on a :class:`Connection` (see :meth:`Connection.open_index`).

    Keys are one value or a tuple of values for the leading index columns;
    values are ``bytes``, ``str``, ``int`` or ``None`` (NULL). ``op`` is one
    of ``= > >= < <=``. ``limit`` defaults to 1, as in the protocol.
    """

    def __init__(self, connection: Connection, index_id: int, spec: IndexSpec, encoding: Optional[str]) -> None:
        super().__init__(index_id, spec, encoding)
        self.connection = connection

    def find(
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
        """The rows from ``key`` in the direction of ``op``, after filters, offset, limit."""
        return self.connection._run(
            self.find_call(key, op, limit, offset, in_column, in_values, filters)
        )

    def get(self, key: Key) -> Optional[Row[V]]:
        """The row whose key equals ``key``, or ``None``."""
        return self.connection._run(self.get_call(key))

    def get_many(self, keys: Iterable[Key]) -> List[Optional[Row[V]]]:
        """One :meth:`get` per key, all written at once: one round trip."""
        return self.connection._run_many([self.get_call(k) for k in keys])

    def find_in(
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
        """The row each value of ``values`` finds at key column ``column`` (IN).

        ``prefix`` gives the key columns before ``column``; ``limit``
        defaults to the number of values.
        """
        return self.connection._run(
            self.find_in_call(values, column, prefix, op, limit, offset, filters)
        )

    def insert(self, values: Key) -> Optional[int]:
        """Insert a row (values for the first opened columns); its auto-increment id.

        ``None`` when the table has no auto-increment column; the original
        plugin answers 0 when the id was given in ``values``.
        """
        return self.connection._run(self.insert_call(values))

    @overload
    def update(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
               in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
               filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    def update(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
               in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
               filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    def update(self, key: Key, values: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
               in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
               filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        """Set the opened columns of the rows found to ``values``.

        The number of rows changed, or with ``returning`` the rows as they were.
        """
        return self.connection._run(self.modify_call(
            "U", key, values, op, limit, offset, in_column, in_values, filters, returning))

    @overload
    def delete(self, key: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
               in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
               filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    def delete(self, key: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
               in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
               filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    def delete(self, key: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
               in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
               filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        """Delete the rows found: their number, or with ``returning`` the rows."""
        return self.connection._run(self.modify_call(
            "D", key, None, op, limit, offset, in_column, in_values, filters, returning))

    @overload
    def increment(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                  in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                  filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    def increment(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                  in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                  filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    def increment(self, key: Key, values: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
                  in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
                  filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        """Add ``values`` (one integer per opened column) to the rows found."""
        return self.connection._run(self.modify_call(
            "+", key, values, op, limit, offset, in_column, in_values, filters, returning))

    @overload
    def decrement(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                  in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                  filters: Sequence[Filter] = ..., returning: Literal[False] = ...) -> int: ...

    @overload
    def decrement(self, key: Key, values: Key, op: str = ..., *, limit: int = ..., offset: int = ...,
                  in_column: Optional[int] = ..., in_values: Optional[Sequence[Value]] = ...,
                  filters: Sequence[Filter] = ..., returning: Literal[True]) -> List[Row[V]]: ...

    def decrement(self, key: Key, values: Key, op: str = "=", *, limit: int = 1, offset: int = 0,
                  in_column: Optional[int] = None, in_values: Optional[Sequence[Value]] = None,
                  filters: Sequence[Filter] = (), returning: bool = False) -> Any:
        """Subtract ``values`` from the rows found.

        As in the original server, a row where a column would change sign is
        left alone (and not counted).
        """
        return self.connection._run(self.modify_call(
            "-", key, values, op, limit, offset, in_column, in_values, filters, returning))


class Pipeline(PipelineCore):
    """Requests queued on a :class:`Connection`, written at once by :meth:`execute`.

    ``p.get(users, 1)``, ``p.insert(log, [...])``: each queues a request;
    :meth:`execute` returns their results in the same order.
    """

    def __init__(self, connection: Connection) -> None:
        super().__init__()
        self.connection = connection

    def execute(self, raise_errors: bool = True) -> List[Any]:
        """Send every queued request, read every answer; the results in order.

        With ``raise_errors`` the first error answer is raised after all
        answers are read; without, errors are returned in their places.
        """
        return self.connection._run_many(self._take(), raise_errors)
