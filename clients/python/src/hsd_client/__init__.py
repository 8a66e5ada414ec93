"""hsd_client: a HandlerSocket client for Python 3, blocking and asyncio.

Talks to hsd and to the original HandlerSocket plugin of MySQL/MariaDB::

    import hsd_client

    conn = hsd_client.connect("127.0.0.1", 9999)
    users = conn.open_index("test", "user", "PRIMARY", ["user_name", "user_email"])
    users.get(101)            # (b'Hiro Silva', b'hiro.silva101@example.com')

See the README for the whole API.
"""

from .aio import AsyncConnection, AsyncIndex, AsyncPipeline, connect_async
from .calls import Filter, Key, Row
from .client import Connection, Index, Pipeline, connect
from .errors import (
    AuthError,
    DuplicateKeyError,
    HandlerSocketError,
    NetworkError,
    OpenTableError,
    ProtocolError,
    ReadOnlyError,
    RequestError,
    ServerError,
    StorageError,
    WriteUnconfirmedError,
)
from .pool import ConnectionPool, PoolTimeoutError
from .protocol import Value

__version__ = "0.1.0"

__all__ = [
    "AsyncConnection",
    "AsyncIndex",
    "AsyncPipeline",
    "AuthError",
    "Connection",
    "ConnectionPool",
    "DuplicateKeyError",
    "Filter",
    "HandlerSocketError",
    "Index",
    "Key",
    "NetworkError",
    "OpenTableError",
    "Pipeline",
    "PoolTimeoutError",
    "ProtocolError",
    "ReadOnlyError",
    "RequestError",
    "Row",
    "ServerError",
    "StorageError",
    "Value",
    "WriteUnconfirmedError",
    "connect",
    "connect_async",
]
