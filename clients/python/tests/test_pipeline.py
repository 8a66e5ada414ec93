"""Pipelining: many requests written at once, answers read back in order."""

from __future__ import annotations

import pytest

from hsd_client import Connection, DuplicateKeyError, RequestError
from relay import Relay


def test_get_many_keeps_order(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"], encoding="utf-8")
    keys = [k % 20 for k in range(600)]  # 1..14 exist, 0 and 15..19 do not
    rows = emp.get_many(keys)
    assert rows == [(str(k),) if 1 <= k <= 14 else None for k in keys]
    assert emp.get_many([]) == []


def test_requests_go_out_before_any_answer_is_read(server, relay: Relay) -> None:
    # The relay holds every answer back until it has seen all 14 request
    # lines: a client waiting for each answer before sending on would time out.
    with Connection("127.0.0.1", relay.port, timeout=5) as conn:
        emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"])
        relay.hold_answers(14)
        p = conn.pipeline()
        for key in range(1, 15):
            p.get(emp, key)
        rows = p.execute()
    assert rows[8] == (b"KING",) and len(rows) == 14
    assert relay.request_lines == 15 and relay.accepted == 1


def test_mixed_pipeline_runs_in_order(conn: Connection, server, tag: str) -> None:
    kv = conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"], encoding="utf-8")
    counts = conn.open_index(server.db, "kv", "PRIMARY", ["n"])
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"], encoding="utf-8")
    p = conn.pipeline()
    p.insert(kv, [tag, "one", 1])
    p.get(kv, tag)
    p.update(kv, tag, [tag, "two", 2], returning=True)
    p.find(emp, 13, "<=", limit=2)
    p.increment(counts, tag, 40)
    p.get(kv, tag)
    p.delete(kv, tag)
    p.get(kv, tag)
    assert len(p) == 8
    assert p.execute() == [
        None,
        (tag, "one", "1"),
        [(tag, "one", "1")],
        [("FORD",), ("JAMES",)],
        1,
        (tag, "two", "42"),
        1,
        None,
    ]
    assert len(p) == 0 and p.execute() == []


def test_error_in_the_middle(conn: Connection, server, tag: str) -> None:
    kv = conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"], encoding="utf-8")
    kv.insert([tag, "x", 1])
    p = conn.pipeline()
    p.get(kv, tag)
    p.insert(kv, [tag, "again", 2])
    p.find(kv, (tag, "too", "long"))
    p.get(kv, tag)
    with pytest.raises(DuplicateKeyError):
        p.execute()
    # Every answer was read: the connection is still in step.
    assert kv.get(tag) == (tag, "x", "1")

    p.get(kv, tag)
    p.insert(kv, [tag, "again", 2])
    p.find(kv, (tag, "too", "long"))
    p.get(kv, tag)
    first, dup, bad, last = p.execute(raise_errors=False)
    assert first == last == (tag, "x", "1")
    assert isinstance(dup, DuplicateKeyError) and dup.reason == "121"
    assert isinstance(bad, RequestError) and bad.reason == "kpnum"
