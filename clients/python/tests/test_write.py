"""Writes: insert, update, delete, increment, decrement, with and without ``?``.

Every result is also checked with SQL on the server's own store, not only
through the client that made the change.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from hsd_client import Connection, DuplicateKeyError, Filter, Index, StorageError


@pytest.fixture
def kv(conn: Connection, server) -> Index[str]:
    return conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"], ["n", "k"], encoding="utf-8")


@pytest.fixture
def counter(conn: Connection, server) -> Index[str]:
    return conn.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"], encoding="utf-8")


def sql_one(server, query: str) -> list:
    rows = server.sql(query)
    assert len(rows) == 1, rows
    return rows[0]


def test_insert_returns_auto_increment_id(conn: Connection, server, tag: str) -> None:
    seq = conn.open_index(server.db, "seq", "PRIMARY", ["name"])
    first = seq.insert([tag + "a"])
    second = seq.insert([tag + "b"])
    assert isinstance(first, int) and first > 0
    assert second == first + 1
    assert sql_one(server, f"SELECT name FROM seq WHERE id = {second}") == [tag + "b"]


def test_insert_into_table_without_auto_increment(kv: Index[str], server, tag: str) -> None:
    assert kv.insert([tag, "v", 7]) is None
    assert kv.get(tag) == (tag, "v", "7")
    assert sql_one(server, f"SELECT v, n FROM kv WHERE k = '{tag}'") == ["v", "7"]


def test_insert_with_explicit_auto_increment_value(conn: Connection, server, ids: Iterator[int]) -> None:
    # The value is stored and the answer's id is 0: nothing was generated.
    # (The plugin answers 1 1 167 instead once its write thread has met any
    # error, so these tests open missing tables only on the read port: see
    # test_errors.py.)
    seq = conn.open_index(server.db, "seq", "PRIMARY", ["id", "name"], encoding="utf-8")
    given = 10_000_000 + next(ids)
    assert seq.insert([given, "explicit"]) == 0
    assert seq.get(given) == (str(given), "explicit")


def test_insert_fills_the_first_columns(kv: Index[str], tag: str) -> None:
    kv.insert([tag])
    # The original clears NULL flags: columns not given become '' and 0.
    assert kv.get(tag) == (tag, "", "0")


def test_duplicate_key(kv: Index[str], tag: str) -> None:
    kv.insert([tag, "one", 1])
    with pytest.raises(DuplicateKeyError) as caught:
        kv.insert([tag, "two", 2])
    assert (caught.value.code, caught.value.reason, caught.value.errno) == (1, "121", 121)
    assert kv.get(tag) == (tag, "one", "1")


def test_update(kv: Index[str], server, tag: str) -> None:
    kv.insert([tag, "old", 1])
    assert kv.update(tag, [tag, "new", 2]) == 1
    assert kv.get(tag) == (tag, "new", "2")
    assert kv.update(tag + "missing", [tag, "x", 0]) == 0
    assert sql_one(server, f"SELECT v, n FROM kv WHERE k = '{tag}'") == ["new", "2"]


def test_update_returning_old_rows(kv: Index[str], tag: str) -> None:
    kv.insert([tag, "old", 1])
    assert kv.update(tag, [tag, "new", 2], returning=True) == [(tag, "old", "1")]
    assert kv.get(tag) == (tag, "new", "2")
    assert kv.update(tag + "missing", [tag, "x", 0], returning=True) == []


def test_update_to_null_and_to_empty(kv: Index[str], server, tag: str) -> None:
    kv.insert([tag, "x", 1])
    kv.update(tag, [tag, None, None])
    assert kv.get(tag) == (tag, None, None)
    assert sql_one(server, f"SELECT v IS NULL, n IS NULL FROM kv WHERE k = '{tag}'") == ["1", "1"]
    kv.update(tag, [tag, "", 0])
    assert kv.get(tag) == (tag, "", "0")


def test_update_a_range_with_limit(conn: Connection, server, kv: Index[str], tag: str) -> None:
    for i in range(5):
        kv.insert([f"{tag}{i}", "before", i])
    values = conn.open_index(server.db, "kv", "PRIMARY", ["v"], encoding="utf-8")
    assert values.update(f"{tag}0", ["after"], ">=", limit=3) == 3
    assert [r[1] for r in kv.find(f"{tag}0", ">=", limit=5)] == ["after"] * 3 + ["before"] * 2


def test_delete(kv: Index[str], server, tag: str) -> None:
    kv.insert([tag, "x", 1])
    assert kv.delete(tag) == 1
    assert kv.get(tag) is None
    assert kv.delete(tag) == 0
    assert server.sql(f"SELECT k FROM kv WHERE k = '{tag}'") == []


def test_delete_returning(kv: Index[str], tag: str) -> None:
    kv.insert([tag, "x", 1])
    assert kv.delete(tag, returning=True) == [(tag, "x", "1")]
    assert kv.get(tag) is None


def test_delete_with_in_and_filter(kv: Index[str], tag: str) -> None:
    for i in range(5):
        kv.insert([f"{tag}{i}", "v", i])
    assert kv.delete(f"{tag}0", in_column=0, in_values=[f"{tag}1", f"{tag}3"], limit=5) == 2
    # F skips n <= 2; W keeps the scan on this test's keys.
    mine = Filter("W", "k", "<=", f"{tag}4")
    assert kv.delete(f"{tag}0", ">=", limit=3, filters=[Filter("F", "n", ">", 2), mine]) == 1
    assert [r[0] for r in kv.find(f"{tag}0", ">=", limit=3)][:2] == [f"{tag}0", f"{tag}2"]


def test_increment(counter: Index[str], server, ids: Iterator[int]) -> None:
    key = next(ids)
    counter.insert([key, 10, 5])
    assert counter.increment(key, [key * 0, 1, 20]) == 1
    assert counter.get(key) == (str(key), "11", "25")
    assert counter.increment(key, [0, 1, 1], returning=True) == [(str(key), "11", "25")]
    assert sql_one(server, f"SELECT hits, score FROM counter WHERE id = {key}") == ["12", "26"]


def test_increment_leaves_null_alone(counter: Index[str], ids: Iterator[int]) -> None:
    key = next(ids)
    counter.insert([key, None, 5])
    assert counter.get(key) == (str(key), None, "5")
    assert counter.increment(key, [0, 3, 3]) == 1
    assert counter.get(key) == (str(key), None, "8")


def test_decrement(counter: Index[str], ids: Iterator[int]) -> None:
    key = next(ids)
    counter.insert([key, 10, 5])
    assert counter.decrement(key, [0, 1, 2]) == 1
    assert counter.get(key) == (str(key), "9", "3")
    assert counter.decrement(key, [0, 1, 1], returning=True) == [(str(key), "9", "3")]
    assert counter.get(key) == (str(key), "8", "2")


def test_decrement_that_would_change_sign_is_skipped(counter: Index[str], ids: Iterator[int]) -> None:
    key = next(ids)
    counter.insert([key, 10, 5])
    assert counter.decrement(key, [0, 1, 10]) == 0  # score 5 - 10 < 0: row left alone
    assert counter.get(key) == (str(key), "10", "5")


def test_values_are_given_per_opened_column(kv: Index[str], tag: str) -> None:
    with pytest.raises(ValueError):
        kv.update(tag, ["only one"])
    with pytest.raises(ValueError):
        kv.insert([tag, "v", 1, "one too many"])
