"""The real servers the tests talk to: hsd processes and MariaDB's plugin.

:func:`start_hsd` runs ``hsd serve`` on free ports and waits for its ready
line; :class:`MariaDB` runs SQL through the ``mariadb`` command-line client;
:data:`SCHEMA` is the tables every test server gets, in SQL that both SQLite
and MariaDB accept.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence
from urllib.parse import unquote, urlparse

REPO = Path(__file__).resolve().parents[3]

# Placeholders: @AUTOINC_PK@ (auto-increment primary key), @BINARY@ (bytes).
SCHEMA = """
CREATE TABLE emp (
  id INTEGER NOT NULL PRIMARY KEY,
  empno INTEGER NOT NULL,
  ename VARCHAR(32),
  dept INTEGER,
  sal INTEGER,
  note VARCHAR(64)
);
CREATE UNIQUE INDEX emp_empno ON emp (empno);
CREATE INDEX emp_dept_sal ON emp (dept, sal);
INSERT INTO emp (id, empno, ename, dept, sal, note) VALUES
  (1, 7369, 'SMITH', 20, 800, NULL),
  (2, 7499, 'ALLEN', 30, 1600, 'sales'),
  (3, 7521, 'WARD', 30, 1250, 'sales'),
  (4, 7566, 'JONES', 20, 2975, NULL),
  (5, 7654, 'MARTIN', 30, 1250, 'sales'),
  (6, 7698, 'BLAKE', 30, 2850, NULL),
  (7, 7782, 'CLARK', 10, 2450, NULL),
  (8, 7788, 'SCOTT', 20, 3000, ''),
  (9, 7839, 'KING', 10, 5000, 'boss'),
  (10, 7844, 'TURNER', 30, 1500, 'sales'),
  (11, 7876, 'ADAMS', 20, 1100, NULL),
  (12, 7900, 'JAMES', 30, 950, NULL),
  (13, 7902, 'FORD', 20, 3000, NULL),
  (14, 7934, 'MILLER', 10, 1300, NULL);
CREATE TABLE kv (
  k VARCHAR(64) NOT NULL PRIMARY KEY,
  v VARCHAR(255),
  n INTEGER
);
CREATE TABLE bin (
  k INTEGER NOT NULL PRIMARY KEY,
  v @BINARY@
);
CREATE TABLE seq (
  id @AUTOINC_PK@,
  name VARCHAR(64)
);
CREATE TABLE counter (
  id INTEGER NOT NULL PRIMARY KEY,
  hits INTEGER,
  score INTEGER
);
"""

SQLITE_TYPES = {"@AUTOINC_PK@": "INTEGER PRIMARY KEY AUTOINCREMENT", "@BINARY@": "BLOB"}
MYSQL_TYPES = {
    "@AUTOINC_PK@": "INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY",
    "@BINARY@": "VARBINARY(255)",
}


def schema_for(types: dict) -> str:
    text = SCHEMA
    for placeholder, sql_type in types.items():
        text = text.replace(placeholder, sql_type)
    return text


def hsd_binary() -> Path:
    """target/debug/hsd, or $HSD_BIN."""
    path = Path(os.environ.get("HSD_BIN", REPO / "target" / "debug" / "hsd"))
    if not path.is_file():
        raise RuntimeError(f"no hsd binary at {path}: run `cargo build -p hsd` (or set HSD_BIN)")
    return path


@dataclass
class HsdProcess:
    """A running ``hsd serve``; :meth:`stop` ends it (SIGTERM, then SIGKILL)."""

    proc: subprocess.Popen
    host: str
    read_port: int
    write_port: int
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


_READY = re.compile(r"^hsd: listening read=(\S+):(\d+) write=(\S+):(\d+)")


def start_hsd(data_dir: Path, extra: Sequence[str] = (), name: str = "hsd") -> HsdProcess:
    """``hsd serve --port 0 --port-wr 0`` in ``data_dir``; waits for its ready line."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / f"{name}.log"
    cmd = [str(hsd_binary()), "serve", "--address", "127.0.0.1", "--port", "0",
           "--port-wr", "0", "--data-dir", str(data_dir), *extra]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode(errors="replace")
    match = _READY.match(line)
    if not match:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"hsd did not start: {line!r}; log:\n{log.read_text(errors='replace')}")
    return HsdProcess(proc, match.group(1), int(match.group(2)), int(match.group(4)), log)


def hsd_sql(data_dir: Path, db: str, statement: str) -> List[List[str]]:
    """Run SQL on the embedded store with ``hsd sql``; rows as lists of text."""
    out = subprocess.run(
        [str(hsd_binary()), "sql", "--data-dir", str(data_dir), db, statement],
        check=True, capture_output=True, timeout=60,
    ).stdout.decode()
    return [line.split("\t") for line in out.splitlines()]


@dataclass
class MariaDB:
    """A MariaDB server reached with the ``mariadb`` client, from a mysql:// URL."""

    url: str
    host: str = field(init=False)
    port: int = field(init=False)
    user: str = field(init=False)
    password: str = field(init=False)

    def __post_init__(self) -> None:
        parts = urlparse(self.url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 3306
        self.user = unquote(parts.username or "root")
        self.password = unquote(parts.password or "")

    def sql(self, statement: str, db: Optional[str] = None) -> List[List[str]]:
        """Run SQL (one or more statements); rows as lists of text, NULL as 'NULL'."""
        client = shutil.which("mariadb") or shutil.which("mysql")
        if client is None:
            raise RuntimeError("no mariadb client on PATH (apt-get install mariadb-client)")
        cmd = [client, "--no-defaults", "--protocol=TCP", "-h", self.host, "-P", str(self.port),
               "-u", self.user, "--default-character-set=utf8mb4", "-N", "-B"]
        if db:
            cmd.append(db)
        env = dict(os.environ, MYSQL_PWD=self.password)
        done = subprocess.run(cmd, input=statement.encode(), capture_output=True, env=env, timeout=60)
        if done.returncode:
            raise RuntimeError(f"mariadb failed: {done.stderr.decode(errors='replace')}")
        return [line.split("\t") for line in done.stdout.decode().splitlines()]

    def recreate(self, db: str, schema: str) -> None:
        """Drop and create ``db`` and load ``schema`` into it.

        Waits at most 10 s for a lock: a live connection to the original plugin
        that opened one of its tables would block the DROP for ever.
        """
        self.sql(f"SET SESSION lock_wait_timeout = 10; DROP DATABASE IF EXISTS `{db}`; "
                 f"CREATE DATABASE `{db}` CHARACTER SET utf8mb4")
        self.sql(schema, db)


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
