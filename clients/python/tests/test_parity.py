"""Corners of the protocol where a server could easily answer differently.

The same calls against the three servers; the expected results are what
the original plugin answers. Where hsd answers otherwise the test is a
strict expected failure on hsd (see conftest.hsd_differs) whose reason
says what hsd does instead.
"""

from __future__ import annotations

import itertools
from typing import List, Optional

import pytest

from hsd_client import Connection, Filter, Index

_keys = itertools.count()


@pytest.fixture
def kv(conn: Connection, server) -> Index[str]:
    return conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"], encoding="utf-8")


@pytest.fixture
def n(conn: Connection, server) -> Index[str]:
    return conn.open_index(server.db, "kv", "PRIMARY", ["n"], ["n"], encoding="utf-8")


def row(kv: Index[str], tag: str, v: Optional[str] = "x", n: Optional[int] = 1) -> str:
    key = f"{tag}{next(_keys)}"
    kv.insert([key, v, n])
    return key


def ids(rows: List[tuple]) -> List[str]:
    return [r[0] for r in rows]


@pytest.mark.parametrize("op", ["=", "!=", ">", ">=", "<", "<="])
@pytest.mark.parametrize("value", [None, "", "sales", "z"])
def test_filters_with_null_and_empty(conn: Connection, server, op: str, value: Optional[str]) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"], ["note"], encoding="utf-8")
    rows = emp.find(0, ">=", limit=100, filters=[Filter("F", "note", op, value)])
    # NULL equals NULL and is below every value; '' is a value, below 'sales'.
    notes = {1: None, 2: "sales", 3: "sales", 4: None, 5: "sales", 6: None, 7: None,
             8: "", 9: "boss", 10: "sales", 11: None, 12: None, 13: None, 14: None}

    def key(v: Optional[str]) -> tuple:
        return (0, "") if v is None else (1, v)

    compare = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b,
               ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}[op]
    want = [str(i) for i, note in notes.items() if compare(key(note), key(value))]
    assert ids(rows) == want


def test_limit_zero_means_one(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"], encoding="utf-8")
    assert ids(emp.find(1, ">=", limit=0)) == ["1"]


def test_null_key_sorts_first(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"], encoding="utf-8")
    assert ids(emp.find(None, ">=", limit=2)) == ["1", "2"]


def test_key_is_converted_to_the_column_type(conn: Connection, server) -> None:
    emp = conn.open_index(server.db, "emp", "PRIMARY", ["id"], encoding="utf-8")
    assert ids(emp.find("5abc")) == ["5"]


def test_in_on_a_column_beyond_the_key(conn: Connection, server) -> None:
    by_dept = conn.open_index(server.db, "emp", "emp_dept_sal", ["ename"], encoding="utf-8")
    rows = by_dept.find(30, in_column=1, in_values=[1250, 1600], limit=10)
    assert rows == [("JAMES",), ("JAMES",)]


def test_decrement_keeps_the_sign(n: Index[str], kv: Index[str], tag: str) -> None:
    positive, negative, zero = row(kv, tag, n=1), row(kv, tag, n=-3), row(kv, tag, n=0)
    assert n.decrement(positive, 5) == 0 and n.get(positive) == ("1",)
    assert n.increment(negative, 5) == 1 and n.get(negative) == ("2",)  # + may cross zero
    assert n.decrement(zero, 1) == 1 and n.get(zero) == ("-1",)  # from 0 is no change of sign
    assert n.decrement(positive, -2) == 1 and n.get(positive) == ("3",)


def test_increment_reads_a_leading_integer(n: Index[str], kv: Index[str], tag: str) -> None:
    key = row(kv, tag, n=5)
    assert n.increment(key, "abc") == 1 and n.get(key) == ("5",)
    assert n.increment(key, "3xyz") == 1 and n.get(key) == ("8",)


def test_modify_a_filtered_range_returning(n: Index[str], kv: Index[str], tag: str) -> None:
    keys = [row(kv, tag, n=i) for i in range(4)]
    old = n.increment(keys[0], 10, ">=", limit=3, filters=[Filter("F", "n", "!=", 1)], returning=True)
    assert old == [("0",), ("2",), ("3",)]
    assert [n.get(k) for k in keys] == [("10",), ("1",), ("12",), ("13",)]


def test_delete_in_returning(kv: Index[str], tag: str) -> None:
    keys = [row(kv, tag, n=i) for i in range(3)]
    old = kv.delete(keys[0], in_column=0, in_values=[keys[2], keys[0], tag + "none"], limit=10,
                    returning=True)
    assert old == [(keys[2], "x", "2"), (keys[0], "x", "0")]
    assert kv.get_many(keys) == [None, (keys[1], "x", "1"), None]


def test_insert_null_into_not_null_column(kv: Index[str], tag: str) -> None:
    kv.insert([None, "null key", 1])
    assert kv.get("") == ("", "null key", "1")
    kv.delete("")


def test_update_null_into_not_null_column(kv: Index[str], tag: str) -> None:
    key = row(kv, tag)
    try:
        assert kv.update(key, [None, "was null", 2]) == 1
        assert kv.get(key) == (key, "was null", "2")
    finally:
        kv.delete("")  # what hsd-mysql makes of it


def test_written_values_take_the_column_type(n: Index[str], kv: Index[str], tag: str, hsd_differs) -> None:
    hsd_differs("the embedded store keeps 300 characters in a VARCHAR(255) as given "
                "(SQLite's TEXT has no length; the plugin stores 255)",
                only="hsd-sqlite")
    key = row(kv, tag)
    n.update(key, "12abc")
    kv.update(key, [key, "y" * 300, 12])
    assert kv.get(key) == (key, "y" * 255, "12")
