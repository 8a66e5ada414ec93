"""A thread-safe pool of blocking connections to one server port.

Each thread borrows a :class:`~hsd_client.Connection` for as long as it
needs it (``with pool.connection() as conn``) and gives it back. A returned
connection keeps its socket, authentication and opened indexes, so the next
borrower's ``open_index`` of the same index sends nothing. A connection that
broke reconnects by itself on its next request.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator, List, Optional, Union

from .client import TLS, Connection
from .errors import HandlerSocketError

__all__ = ["ConnectionPool", "PoolTimeoutError"]


class PoolTimeoutError(HandlerSocketError):
    """No connection became free within the pool's ``wait`` time."""


class ConnectionPool:
    """At most ``size`` connections to ``host:port``, shared by threads.

    Connection options (``secret``, ``tls``, ``timeout``...) are those of
    :class:`~hsd_client.Connection`. ``wait`` bounds how long a borrower waits
    for a free connection (``None``: forever).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9999,
        *,
        size: int = 8,
        wait: Optional[float] = 30.0,
        secret: Union[bytes, str, None] = None,
        tls: TLS = None,
        server_hostname: Optional[str] = None,
        timeout: Optional[float] = 10.0,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs a size of at least 1")
        self.host = host
        self.port = port
        self.size = size
        self.wait = wait
        self._options = dict(secret=secret, tls=tls, server_hostname=server_hostname, timeout=timeout)
        self._idle: List[Connection] = []
        self._created = 0
        self._closed = False
        self._cond = threading.Condition()

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """Borrow a connection for the ``with`` block."""
        conn = self.acquire()
        try:
            yield conn
        finally:
            self.release(conn)

    def acquire(self) -> Connection:
        """Take a connection; give it back with :meth:`release`."""
        deadline = None if self.wait is None else time.monotonic() + self.wait
        with self._cond:
            while True:
                if self._closed:
                    raise HandlerSocketError("the pool is closed")
                if self._idle:
                    return self._idle.pop()
                if self._created < self.size:
                    self._created += 1
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise PoolTimeoutError(
                        f"all {self.size} connections to {self.host}:{self.port} stayed busy "
                        f"for {self.wait} s"
                    )
                self._cond.wait(remaining)
        try:
            return Connection(self.host, self.port, **self._options)  # type: ignore[arg-type]
        except BaseException:
            with self._cond:
                self._created -= 1
                self._cond.notify()
            raise

    def release(self, conn: Connection) -> None:
        """Give back a connection taken with :meth:`acquire`."""
        with self._cond:
            if self._closed:
                self._created -= 1
                conn.close()
            else:
                self._idle.append(conn)
            self._cond.notify()

    def close(self) -> None:
        """Close the idle connections now, and the borrowed ones as they come back."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._created -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()

    def __enter__(self) -> "ConnectionPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<ConnectionPool {self.host}:{self.port} size={self.size} "
            f"open={self._created} idle={len(self._idle)}>"
        )
