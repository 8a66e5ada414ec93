"""Secrets and TLS, against hsd processes started with them.

The original plugin of the test MariaDB has neither (its secrets are set
empty, and it has no TLS), so these run on hsd: secrets on both backends,
TLS on the embedded store.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Iterator

import pytest

import hsd_client
from hsd_client import AsyncConnection, AuthError, Connection, HandlerSocketError, NetworkError
from relay import Relay
from servers import MYSQL_TYPES, SQLITE_TYPES, hsd_sql, schema_for, start_hsd

# No byte below 0x10: such a byte travels escaped, and the original (whose
# answers hsd gives) compares the secret's raw length, so it never matches.
READ_SECRET = "read-secret with space"
WRITE_SECRET = "write-secret"


@pytest.fixture(scope="module", params=["sqlite", "mysql"])
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """(hsd with a secret on each port, db name)."""
    data = tmp_path_factory.mktemp(f"secured-{request.param}")
    (data / "secret").write_text(READ_SECRET + "\n")
    (data / "secret-wr").write_text(WRITE_SECRET + "\n")
    args = ["--plain-secret-file", str(data / "secret"), "--plain-secret-wr-file", str(data / "secret-wr")]
    if request.param == "sqlite":
        db = "secured"
        hsd_sql(data, db, schema_for(SQLITE_TYPES))
    else:
        mariadb = request.getfixturevalue("mariadb")
        db = "pyclient_hsd_secured"
        mariadb.recreate(db, schema_for(MYSQL_TYPES))
        args += ["--backend", mariadb.url]
    proc = start_hsd(data, args)
    yield proc, db
    proc.stop()


def test_requests_need_the_secret(secured: tuple) -> None:
    proc, db = secured
    with Connection(proc.host, proc.write_port) as anonymous:
        with pytest.raises(AuthError) as caught:
            anonymous.open_index(db, "emp", "PRIMARY", ["ename"])
        assert (caught.value.code, caught.value.reason) == (3, "unauth")
    # Each port has its own secret.
    with pytest.raises(AuthError):
        Connection(proc.host, proc.write_port, secret=READ_SECRET).connect()
    with Connection(proc.host, proc.read_port, secret=READ_SECRET) as reader:
        assert reader.open_index(db, "emp", "PRIMARY", ["ename"]).get(9) == (b"KING",)


def test_a_wrong_secret_can_be_replaced(secured: tuple) -> None:
    proc, db = secured
    with Connection(proc.host, proc.write_port, secret="wrong") as conn:
        with pytest.raises(AuthError):
            conn.open_index(db, "emp", "PRIMARY", ["ename"])
        assert not conn.connected  # not left half set up
        conn.auth(WRITE_SECRET)
        assert conn.open_index(db, "emp", "PRIMARY", ["ename"]).get(9) == (b"KING",)


def test_reconnect_authenticates_again(secured: tuple) -> None:
    proc, db = secured
    relay = Relay(proc.host, proc.write_port)
    try:
        with Connection("127.0.0.1", relay.port, secret=WRITE_SECRET) as conn:
            emp = conn.open_index(db, "emp", "PRIMARY", ["ename"])
            kv = conn.open_index(db, "kv", "PRIMARY", ["k", "v", "n"])
            relay.cut()
            assert emp.get(9) == (b"KING",)  # a read, retried
            relay.cut()
            assert kv.insert(["after-cut", "x", 1]) is None  # a write on a new connection
            assert relay.accepted == 3
    finally:
        relay.close()


def test_auth_call_is_remembered(secured: tuple) -> None:
    proc, db = secured
    relay = Relay(proc.host, proc.write_port)
    try:
        with Connection("127.0.0.1", relay.port) as conn:
            conn.auth(WRITE_SECRET)
            emp = conn.open_index(db, "emp", "PRIMARY", ["ename"])
            relay.cut()
            assert emp.get(1) == (b"SMITH",)
    finally:
        relay.close()


def test_async_reconnect_authenticates_again(secured: tuple) -> None:
    proc, db = secured
    relay = Relay(proc.host, proc.write_port)

    async def scenario() -> None:
        async with AsyncConnection("127.0.0.1", relay.port, secret=WRITE_SECRET) as conn:
            emp = await conn.open_index(db, "emp", "PRIMARY", ["ename"])
            relay.cut()
            assert await emp.get(9) == (b"KING",)
            assert conn.connects == 2
        async with AsyncConnection("127.0.0.1", relay.port, secret="wrong") as conn:
            with pytest.raises(AuthError):
                await conn.open_index(db, "emp", "PRIMARY", ["ename"])
            with pytest.raises(AuthError):
                await conn.auth("still wrong")
            await conn.auth(WRITE_SECRET)
            relay.cut()
            emp = await conn.open_index(db, "emp", "PRIMARY", ["ename"])
            assert await emp.get(9) == (b"KING",)

    try:
        asyncio.run(scenario())
    finally:
        relay.close()


@pytest.fixture(scope="module")
def tls_hsd(tmp_path_factory: pytest.TempPathFactory, tls_files: Path) -> Iterator[tuple]:
    data = tmp_path_factory.mktemp("tls-hsd")
    hsd_sql(data, "tls", schema_for(SQLITE_TYPES))
    proc = start_hsd(data, ["--tls-cert", str(tls_files / "cert.pem"), "--tls-key", str(tls_files / "key.pem")])
    yield proc, "tls"
    proc.stop()


@pytest.fixture(scope="module")
def trust(tls_files: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls_files / "cert.pem"))


def test_tls_on_both_ports(tls_hsd: tuple, trust: ssl.SSLContext) -> None:
    proc, db = tls_hsd
    with Connection(proc.host, proc.read_port, tls=trust) as reader:
        assert reader.open_index(db, "emp", "PRIMARY", ["ename"]).get(7) == (b"CLARK",)
    with Connection(proc.host, proc.write_port, tls=trust) as writer:
        kv = writer.open_index(db, "kv", "PRIMARY", ["k", "v", "n"], encoding="utf-8")
        kv.insert(["tls", "secret stuff", 1])
        assert kv.get("tls") == ("tls", "secret stuff", "1")


def test_tls_verifies_the_server(tls_hsd: tuple, trust: ssl.SSLContext) -> None:
    proc, _ = tls_hsd
    with pytest.raises(NetworkError):
        hsd_client.connect(proc.host, proc.read_port, tls=True, timeout=5)  # system CAs
    with pytest.raises(NetworkError):
        hsd_client.connect(proc.host, proc.read_port, tls=trust, server_hostname="example.com", timeout=5)
    with pytest.raises(HandlerSocketError):  # plain text on a TLS port
        Connection(proc.host, proc.read_port, timeout=5).open_index("tls", "emp", "PRIMARY", ["ename"])


def test_tls_reconnects(tls_hsd: tuple, trust: ssl.SSLContext) -> None:
    proc, db = tls_hsd
    relay = Relay(proc.host, proc.write_port)
    try:
        with Connection("127.0.0.1", relay.port, tls=trust, server_hostname="localhost") as conn:
            kv = conn.open_index(db, "kv", "PRIMARY", ["k", "v", "n"])
            emp = conn.open_index(db, "emp", "PRIMARY", ["ename"])
            assert emp.get(2) == (b"ALLEN",)
            kv.insert(["tls-before", "x", 1])  # an idle TLS connection, a write: still alive
            assert relay.accepted == 1
            relay.cut()
            assert kv.insert(["tls-after", "x", 1]) is None
            assert emp.get(2) == (b"ALLEN",)
            assert relay.accepted == 2
    finally:
        relay.close()


def test_async_tls(tls_hsd: tuple, trust: ssl.SSLContext) -> None:
    proc, db = tls_hsd

    async def scenario() -> None:
        conn = await hsd_client.connect_async(proc.host, proc.write_port, tls=trust)
        try:
            emp = await conn.open_index(db, "emp", "PRIMARY", ["ename"], encoding="utf-8")
            assert await emp.get_many([7, 9]) == [("CLARK",), ("KING",)]
        finally:
            await conn.close()

    asyncio.run(scenario())
