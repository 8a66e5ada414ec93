"""hsd with its memcached port, for the real memcached clients' tests.

Each backend gets a fresh table in the InnoDB memcached plugin's demo
shape (key c1, value c2, flags c3, cas c4, expiry c5) named by a container
in a config file: ``sqlite`` (the embedded store), ``mariadb``
(``$HSD_TEST_MYSQL_URL``) and ``mysql8`` (``$HSD_TEST_MYSQL8_URL``). A
missing server skips its half, except under CI, where it is an error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator, List, Optional, Tuple
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"hsd: listening .*\bmemcached=(\S+):(\d+)")
DB = "mcclient"
TABLE = ("CREATE TABLE demo_test (c1 VARCHAR(32) NOT NULL PRIMARY KEY, c2 VARCHAR(1024), "
         "c3 INT, c4 BIGINT UNSIGNED, c5 INT)")
CONFIG = f"""
[[memcached.containers]]
name = "default"
db_schema = "{DB}"
db_table = "demo_test"
key_columns = "c1"
value_columns = "c2"
flags = "c3"
cas_column = "c4"
expire_time_column = "c5"
"""


def hsd_binary() -> Path:
    return Path(os.environ.get("HSD_BIN", ROOT / "target" / "debug" / "hsd"))


def mariadb_sql(url: str, statement: str) -> None:
    """Runs SQL with the ``mariadb`` client on the server of a mysql:// URL."""
    u = urlparse(url)
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        raise RuntimeError("no mariadb client on PATH (apt-get install mariadb-client)")
    env = dict(os.environ, MYSQL_PWD=unquote(u.password or ""))
    cmd = [client, "--no-defaults", "--protocol=TCP", "-h", u.hostname or "127.0.0.1",
           "-P", str(u.port or 3306), "-u", unquote(u.username or "")]
    subprocess.run(cmd, input=statement.encode(), env=env, check=True, timeout=60,
                   capture_output=True)


def backend_url(name: str) -> Optional[str]:
    var = {"mariadb": "HSD_TEST_MYSQL_URL", "mysql8": "HSD_TEST_MYSQL8_URL"}.get(name)
    if var is None:
        return None
    url = os.environ.get(var)
    if not url:
        if os.environ.get("CI"):
            raise RuntimeError(f"{var} is not set: CI runs every backend")
        pytest.skip(f"{var} not set")
    return url


@pytest.fixture(params=["sqlite", "mariadb", "mysql8"])
def memcached_addr(request: pytest.FixtureRequest) -> Iterator[Tuple[str, int]]:
    url = backend_url(request.param)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        args: List[str] = []
        if url is None:
            subprocess.run([str(hsd_binary()), "sql", "--data-dir", str(data), DB, TABLE],
                           check=True, capture_output=True, timeout=60)
        else:
            mariadb_sql(url, f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}; "
                             f"USE {DB}; {TABLE} ENGINE=InnoDB;")
            args = ["--backend", url]
        config = Path(tmp) / "hsd.toml"
        config.write_text(CONFIG)
        with open(Path(tmp) / "hsd.log", "wb") as log:
            proc = subprocess.Popen(
                [str(hsd_binary()), "serve", "--address", "127.0.0.1", "--port", "0",
                 "--port-wr", "0", "--data-dir", str(data), "--memcached-address",
                 "127.0.0.1:0", "--config", str(config), *args],
                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline().decode(errors="replace")
                match = READY.match(line)
                assert match, f"hsd did not start: {line!r}"
                yield match.group(1), int(match.group(2))
            finally:
                proc.kill()
                proc.wait()
                if proc.stdout:
                    proc.stdout.close()
