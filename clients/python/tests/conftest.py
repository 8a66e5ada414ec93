"""Fixtures: the three servers every client test runs against.

- ``hsd-sqlite``: hsd on its embedded store, in a fresh data directory;
- ``hsd-mysql``: hsd serving database ``pyclient_hsd`` of the MariaDB at
  ``$HSD_TEST_MYSQL_URL``;
- ``plugin``: MariaDB's own HandlerSocket plugin (``$HSD_HS_ORIGINAL_PORT``,
  ``$HSD_HS_ORIGINAL_PORT_WR``) on database ``pyclient_plugin`` of that MariaDB.

All three get the same tables (servers.SCHEMA), and the tests make the same
client calls and expect the same results from each. Without the MariaDB
variables the last two are skipped, except under CI (``$CI`` set), where a
missing server is an error: ``scripts/mariadb.sh`` provides them.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

import hsd_client
from relay import Relay
from servers import (
    MYSQL_TYPES,
    SQLITE_TYPES,
    HsdProcess,
    MariaDB,
    hsd_sql,
    schema_for,
    start_hsd,
)

SERVERS = ["hsd-sqlite", "hsd-mysql", "plugin"]
IN_CI = bool(os.environ.get("CI"))


@dataclass
class Server:
    """Where a server listens, which db holds the test tables, and SQL on it."""

    name: str
    host: str
    read_port: int
    write_port: int
    db: str
    sql: Callable[[str], List[List[str]]]
    #: The hsd process, or None for the plugin.
    process: Optional[HsdProcess] = None

    @property
    def is_plugin(self) -> bool:
        return self.name == "plugin"

    def connect(self, write: bool = True, **options) -> hsd_client.Connection:
        port = self.write_port if write else self.read_port
        return hsd_client.Connection(self.host, port, timeout=10, **options)


def _require(var: str) -> str:
    value = os.environ.get(var)
    if not value:
        message = f"${var} is not set: start MariaDB with scripts/mariadb.sh and eval its env"
        if IN_CI:
            pytest.fail(message + " (under CI nothing may be skipped)", pytrace=False)
        pytest.skip(message)
    return value


@pytest.fixture(scope="session")
def mariadb() -> MariaDB:
    return MariaDB(_require("HSD_TEST_MYSQL_URL"))


@pytest.fixture(scope="session")
def hsd_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("hsd-sqlite")
    db = "pyclient"
    hsd_sql(data, db, schema_for(SQLITE_TYPES))
    proc = start_hsd(data)
    yield Server("hsd-sqlite", proc.host, proc.read_port, proc.write_port, db,
                 lambda s: hsd_sql(data, db, s), proc)
    proc.stop()


@pytest.fixture(scope="session")
def hsd_mysql(tmp_path_factory: pytest.TempPathFactory, mariadb: MariaDB) -> Iterator[Server]:
    db = "pyclient_hsd"
    mariadb.recreate(db, schema_for(MYSQL_TYPES))
    proc = start_hsd(tmp_path_factory.mktemp("hsd-mysql"), ["--backend", mariadb.url])
    yield Server("hsd-mysql", proc.host, proc.read_port, proc.write_port, db,
                 lambda s: mariadb.sql(s, db), proc)
    proc.stop()


@pytest.fixture(scope="session")
def plugin(mariadb: MariaDB) -> Server:
    read_port = int(_require("HSD_HS_ORIGINAL_PORT"))
    write_port = int(_require("HSD_HS_ORIGINAL_PORT_WR"))
    db = "pyclient_plugin"
    mariadb.recreate(db, schema_for(MYSQL_TYPES))
    return Server("plugin", mariadb.host, read_port, write_port, db,
                  lambda s: mariadb.sql(s, db))


@pytest.fixture(scope="session", params=SERVERS)
def server(request: pytest.FixtureRequest) -> Server:
    """Each test taking ``server`` runs once per server, same calls, same expectations."""
    return request.getfixturevalue(request.param.replace("-", "_"))


@pytest.fixture
def conn(server: Server) -> Iterator[hsd_client.Connection]:
    """A connection to the server's write port, closed after the test."""
    c = server.connect()
    yield c
    c.close()


@pytest.fixture
def hsd_differs(request: pytest.FixtureRequest, server: Server) -> Callable[..., None]:
    """Mark this test as a known difference of hsd from the original plugin.

    ``hsd_differs(reason)`` for both backends, ``hsd_differs(reason,
    only="hsd-sqlite")`` for one. There the test is expected to fail (strict: once hsd matches the plugin
    the test passes, and that is reported as a failure until the mark goes).
    """

    def mark(reason: str, only: Optional[str] = None) -> None:
        if not server.is_plugin and only in (None, server.name):
            request.applymarker(pytest.mark.xfail(
                strict=True, reason=f"{server.name} differs from the original plugin: {reason}"))

    return mark


_ids = itertools.count(1000, 1000)


@pytest.fixture
def ids() -> Iterator[int]:
    """A fresh block of 1000 integer keys for this test (rows no other test touches)."""
    base = next(_ids)
    return iter(range(base, base + 1000))


@pytest.fixture
def tag(request: pytest.FixtureRequest, ids: Iterator[int]) -> str:
    """A string key prefix no other test uses."""
    return f"t{next(ids)}-"


@pytest.fixture
def relay(server: Server) -> Iterator[Relay]:
    """A relay to the server's write port (see relay.Relay)."""
    r = Relay(server.host, server.write_port)
    yield r
    r.close()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate for localhost/127.0.0.1 (cert.pem, key.pem), by openssl."""
    import shutil
    import subprocess

    directory = tmp_path_factory.mktemp("tls")
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is needed to make a test certificate (apt-get install openssl)")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(directory / "key.pem"), "-out", str(directory / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )
    return directory
