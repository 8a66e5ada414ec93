"""Reconnecting: reads retried once on a new connection, writes never resent.

The client talks to the server through a relay (relay.Relay) that the
tests use to break connections the way a restart or a network fault does.
"""

from __future__ import annotations

import socket
from typing import Iterator

import pytest

from hsd_client import Connection, NetworkError, WriteUnconfirmedError
from relay import Relay


@pytest.fixture
def via_relay(relay: Relay) -> Iterator[Connection]:
    conn = Connection("127.0.0.1", relay.port, timeout=5)
    yield conn
    conn.close()


def test_read_is_retried_on_a_new_connection(via_relay: Connection, relay: Relay, server) -> None:
    emp = via_relay.open_index(server.db, "emp", "PRIMARY", ["ename"])
    assert emp.get(9) == (b"KING",)
    relay.cut()
    assert emp.get(9) == (b"KING",)
    assert (relay.accepted, via_relay.connects) == (2, 2)


def test_every_index_is_reopened_under_its_id(via_relay: Connection, relay: Relay, server) -> None:
    names = via_relay.open_index(server.db, "emp", "PRIMARY", ["ename"])
    depts = via_relay.open_index(server.db, "emp", "emp_dept_sal", ["ename"])
    salaries = via_relay.open_index(server.db, "emp", "emp_empno", ["sal"])
    assert (names.id, depts.id, salaries.id) == (0, 1, 2)
    relay.cut()
    # Used in another order than opened: each id must name the same index again.
    assert salaries.get(7839) == (b"5000",)
    assert depts.find(10, limit=3) == [(b"MILLER",), (b"CLARK",), (b"KING",)]
    assert names.get(1) == (b"SMITH",)
    assert relay.accepted == 2


def test_pipeline_of_reads_is_retried_whole(via_relay: Connection, relay: Relay, server) -> None:
    emp = via_relay.open_index(server.db, "emp", "PRIMARY", ["id"], encoding="utf-8")
    emp.get(1)
    relay.cut()
    assert emp.get_many(range(1, 15)) == [(str(i),) for i in range(1, 15)]


def test_a_read_fails_after_one_retry(via_relay: Connection, relay: Relay, server) -> None:
    emp = via_relay.open_index(server.db, "emp", "PRIMARY", ["ename"])
    emp.get(1)
    relay.cut()
    relay.refuse = True
    with pytest.raises(NetworkError) as caught:
        emp.get(1)
    assert not isinstance(caught.value, WriteUnconfirmedError)
    assert relay.accepted == 2  # the first connection and exactly one retry
    relay.refuse = False
    assert emp.get(1) == (b"SMITH",)  # and it comes back by itself


def test_write_after_the_server_closed_an_idle_connection(
    via_relay: Connection, relay: Relay, server, ids: Iterator[int]
) -> None:
    counter = via_relay.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"])
    hits = via_relay.open_index(server.db, "counter", "PRIMARY", ["hits"])
    key = next(ids)
    counter.insert([key, 0, 0])
    relay.cut()
    # The dead connection is noticed before the write goes out, so the write
    # is sent once, on a new connection, and succeeds.
    assert hits.increment(key, 1) == 1
    assert server.sql(f"SELECT hits FROM counter WHERE id = {key}") == [["1"]]
    assert relay.accepted == 2


def test_write_whose_answer_is_lost_is_never_resent(
    via_relay: Connection, relay: Relay, server, ids: Iterator[int]
) -> None:
    hits = via_relay.open_index(server.db, "counter", "PRIMARY", ["hits"])
    counter = via_relay.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"])
    key = next(ids)
    counter.insert([key, 0, 0])
    relay.drop_answers = True
    with pytest.raises(WriteUnconfirmedError):
        hits.increment(key, 1)
    assert relay.accepted == 1  # no second connection: nothing was sent again
    relay.drop_answers = False
    # Applied exactly once; the next request reconnects.
    assert server.sql(f"SELECT hits FROM counter WHERE id = {key}") == [["1"]]
    assert hits.get(key) == (b"1",)
    assert relay.accepted == 2


def test_pipeline_holding_a_write_is_never_resent(
    via_relay: Connection, relay: Relay, server, ids: Iterator[int]
) -> None:
    counter = via_relay.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"])
    hits = via_relay.open_index(server.db, "counter", "PRIMARY", ["hits"])
    key = next(ids)
    counter.insert([key, 0, 0])
    relay.drop_answers = True
    p = via_relay.pipeline()
    p.get(hits, key)
    p.increment(hits, key, 5)
    p.get(hits, key)
    with pytest.raises(WriteUnconfirmedError):
        p.execute()
    relay.drop_answers = False
    assert hits.get(key) == (b"5",)


def test_cannot_connect(server) -> None:
    with socket.socket() as probe:  # a free port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(NetworkError):
        Connection("127.0.0.1", port, timeout=2).connect()
    conn = Connection("127.0.0.1", port, timeout=2)
    with pytest.raises(NetworkError) as caught:
        conn.open_index(server.db, "emp", "PRIMARY", ["ename"])
    assert not isinstance(caught.value, WriteUnconfirmedError)
