"""Exceptions raised by hsd_client, one class per kind of failure.

An error answer from the server (``<code>\\t1\\t<reason>``) becomes a
:class:`ServerError` subclass that keeps ``code`` and ``reason``:

==========  =======================  ==========================================
code        class                    reasons
==========  =======================  ==========================================
1           :class:`StorageError`    a number from the storage engine (``121``
                                     is :class:`DuplicateKeyError`),
                                     ``open_table`` (:class:`OpenTableError`)
2           :class:`RequestError`    ``stmtnum``, ``op``, ``klen``, ``fld``...;
                                     ``readonly`` is :class:`ReadOnlyError`
3           :class:`AuthError`       ``unauth``, ``authtype``
==========  =======================  ==========================================

Failures of the connection itself are :class:`NetworkError`; a write whose
answer never came is :class:`WriteUnconfirmedError`, since it may or may not
have been applied (the client never sends it again).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

__all__ = [
    "HandlerSocketError",
    "ServerError",
    "StorageError",
    "DuplicateKeyError",
    "OpenTableError",
    "RequestError",
    "ReadOnlyError",
    "AuthError",
    "NetworkError",
    "WriteUnconfirmedError",
    "ProtocolError",
    "error_from_reply",
]

#: What each short reason of the protocol means, for error messages.
REASONS: Dict[str, str] = {
    "cmd": "not a request: empty line or unknown command",
    "stmtnum": "index id not opened on this connection",
    "op": "unknown find operator",
    "klen": "bad number of key values",
    "kpnum": "more key values than the index has columns",
    "invalueslen": "IN needs at least one value",
    "filtertype": "filter kind is not F or W",
    "filterfld": "filter column out of range of the opened filter columns",
    "filterblob": "cannot filter on a BLOB/TEXT column",
    "modop": "unknown modify operator",
    "readonly": "write sent to the read-only port",
    "idxnum": "no such index",
    "fld": "no such column",
    "open_table": "table cannot be opened",
    "unauth": "not authenticated (missing or wrong secret)",
    "authtype": "unknown authentication type",
    "121": "duplicate key",
    "1048": "NULL into a NOT NULL column",
}

#: The storage error number for a duplicate key (MySQL's HA_ERR_FOUND_DUPP_KEY).
DUPLICATE_KEY = 121


class HandlerSocketError(Exception):
    """Base class of every exception raised by hsd_client."""


class ServerError(HandlerSocketError):
    """The server answered ``<code> 1 <reason>`` to a request."""

    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason
        meaning = REASONS.get(reason)
        answer = f"{code} 1 {reason}".rstrip()
        super().__init__(f"server answered '{answer}'" + (f": {meaning}" if meaning else ""))

    def __reduce__(self) -> Tuple[type, Tuple[int, str]]:  # keep code and reason through pickling
        return (type(self), (self.code, self.reason))


class StorageError(ServerError):
    """Code 1: the table could not be opened, or the storage refused the request."""

    @property
    def errno(self) -> Optional[int]:
        """The storage error number (``121`` duplicate key...), if the reason is one."""
        return int(self.reason) if self.reason.isdigit() else None


class DuplicateKeyError(StorageError):
    """``1 1 121``: a row with the same unique key exists."""


class OpenTableError(StorageError):
    """``1 1 open_table``: no such database or table, or it cannot be opened."""


class RequestError(ServerError):
    """Code 2: the request was refused as malformed or not allowed here."""


class ReadOnlyError(RequestError):
    """``2 1 readonly``: a write was sent to the read port."""


class AuthError(ServerError):
    """Code 3: authentication is missing, wrong, or of an unknown type."""


class NetworkError(HandlerSocketError):
    """Could not connect, or the connection broke (reads were already retried once)."""


class WriteUnconfirmedError(NetworkError):
    """A write was sent but its answer never came: it may or may not be applied.

    The client never sends a write twice; look at the data to find out.
    """


class ProtocolError(HandlerSocketError):
    """The server's answer is not valid HandlerSocket."""


def error_from_reply(code: int, reason: str) -> ServerError:
    """The exception for an error answer ``<code> 1 <reason>``."""
    if code == 1:
        if reason == str(DUPLICATE_KEY):
            return DuplicateKeyError(code, reason)
        if reason == "open_table":
            return OpenTableError(code, reason)
        return StorageError(code, reason)
    if code == 2:
        if reason == "readonly":
            return ReadOnlyError(code, reason)
        return RequestError(code, reason)
    if code == 3:
        return AuthError(code, reason)
    return ServerError(code, reason)
