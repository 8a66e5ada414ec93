"""Error answers become typed exceptions keeping the server's code and reason."""

from __future__ import annotations

import pickle

import pytest

import hsd_client
from hsd_client import (
    AuthError,
    Connection,
    DuplicateKeyError,
    Filter,
    OpenTableError,
    ReadOnlyError,
    RequestError,
    ServerError,
    StorageError,
)


def raised(exc_info: pytest.ExceptionInfo) -> tuple:
    return type(exc_info.value), exc_info.value.code, exc_info.value.reason


def test_unknown_table_and_db(server) -> None:
    # On the read port: on the original's write port a failed open leaves an
    # error behind that changes later inserts until MariaDB restarts
    # (docs/compatibility.md, explicit_ids_after_an_error).
    with server.connect(write=False) as reader:
        with pytest.raises(OpenTableError) as caught:
            reader.open_index(server.db, "no_such_table", "PRIMARY", ["id"])
        assert raised(caught) == (OpenTableError, 1, "open_table")
        with pytest.raises(OpenTableError):
            reader.open_index("no_such_db", "emp", "PRIMARY", ["id"])


def test_unknown_index_and_column(conn: Connection, server) -> None:
    with pytest.raises(RequestError) as caught:
        conn.open_index(server.db, "emp", "no_such_index", ["id"])
    assert raised(caught) == (RequestError, 2, "idxnum")
    with pytest.raises(RequestError) as caught:
        conn.open_index(server.db, "emp", "PRIMARY", ["id", "no_such_column"])
    assert raised(caught) == (RequestError, 2, "fld")


def test_write_on_the_read_port(server) -> None:
    with server.connect(write=False) as reader:
        kv = reader.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"])
        with pytest.raises(ReadOnlyError) as caught:
            kv.insert(["never", "x", 1])
        assert raised(caught) == (ReadOnlyError, 2, "readonly")
        with pytest.raises(ReadOnlyError):
            kv.delete("never")
        assert kv.get("never") is None  # reads are fine there


def test_more_key_values_than_index_columns(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"])
    with pytest.raises(RequestError) as caught:
        emp.find((1, 2))
    assert raised(caught) == (RequestError, 2, "kpnum")


def test_filter_column_out_of_range(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"], ["sal"])
    with pytest.raises(RequestError) as caught:
        emp.find(1, filters=[Filter("F", 5, "=", 1)])
    assert raised(caught) == (RequestError, 2, "filterfld")


def test_connection_stays_usable_after_errors(conn: Connection, server, tag: str) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"])
    kv = conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"])
    kv.insert([tag, "x", 1])
    for _ in range(3):
        with pytest.raises(DuplicateKeyError):
            kv.insert([tag, "y", 2])
        with pytest.raises(RequestError):
            emp.find((1, 2))
        assert emp.get(9) == (b"KING",)
    assert conn.connects == 1


def test_wrong_secret_where_none_is_set(conn: Connection, server) -> None:
    # Neither server here has a secret: the plugin refuses a wrong one and
    # accepts the empty one, and requests work either way.
    with pytest.raises(AuthError) as caught:
        conn.auth("wrong")
    assert raised(caught) == (AuthError, 3, "unauth")
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"])
    assert emp.get(9) == (b"KING",)
    conn.auth("")


def test_client_side_mistakes_raise_before_sending(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"], ["sal"])
    with pytest.raises(ValueError):
        emp.find(1, "==")
    with pytest.raises(ValueError):
        emp.find(1, filters=[Filter("F", "no_such_filter_column", "=", 1)])
    with pytest.raises(ValueError):
        Filter("X", "sal", "=", 1)
    with pytest.raises(ValueError):
        emp.find_in([])
    with pytest.raises(TypeError):
        emp.get(1.5)  # type: ignore[arg-type]


def test_exception_hierarchy_and_pickling() -> None:
    exc = hsd_client.errors.error_from_reply(1, "121")
    assert isinstance(exc, DuplicateKeyError) and isinstance(exc, StorageError)
    assert isinstance(exc, ServerError) and isinstance(exc, hsd_client.HandlerSocketError)
    assert "duplicate key" in str(exc) and "1 1 121" in str(exc)
    copy = pickle.loads(pickle.dumps(exc))
    assert (type(copy), copy.code, copy.reason) == (DuplicateKeyError, 1, "121")
    assert isinstance(hsd_client.errors.error_from_reply(3, "authtype"), AuthError)
    assert type(hsd_client.errors.error_from_reply(7, "new")) is ServerError
