"""Finds on the emp table: every operator, limit/offset, IN, F and W filters.

Each test runs against hsd (both backends) and the original plugin with
the same calls and the same expected rows.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import pytest

from hsd_client import Connection, Filter, Index


def names(rows: Sequence[Sequence[Optional[str]]], col: int = -1) -> List[Optional[str]]:
    return [row[col] for row in rows]


@pytest.fixture
def emp(conn: Connection, server) -> Index[str]:
    """PRIMARY of emp: id, ename; filters on dept, sal, note; values as str."""
    return conn.open_index(server.db, "emp", "PRIMARY", ["id", "ename"],
                           ["dept", "sal", "note"], encoding="utf-8")


@pytest.fixture
def by_dept(conn: Connection, server) -> Index[str]:
    """emp_dept_sal (dept, sal): ename."""
    return conn.open_index(server.db, "emp", "emp_dept_sal", ["ename"], encoding="utf-8")


def test_equal_and_missing(emp: Index[str]) -> None:
    assert emp.find(5) == [("5", "MARTIN")]
    assert emp.get(9) == ("9", "KING")
    assert emp.find(99) == []
    assert emp.get(99) is None


def test_values_are_bytes_unless_decoded(conn: Connection, server) -> None:
    raw = conn.open_index(server.db, "emp", "PRIMARY", "id,ename")
    assert raw.get(5) == (b"5", b"MARTIN")


@pytest.mark.parametrize(
    "op, key, want",
    [
        (">", 5, ["6", "7", "8"]),
        (">=", 5, ["5", "6", "7"]),
        ("<", 5, ["4", "3", "2"]),
        ("<=", 5, ["5", "4", "3"]),
        ("<", 100, ["14", "13", "12"]),
        (">", 14, []),
        ("<", 1, []),
    ],
)
def test_every_operator(emp: Index[str], op: str, key: int, want: List[str]) -> None:
    assert names(emp.find(key, op, limit=3), 0) == want


def test_limit_offset(emp: Index[str]) -> None:
    assert len(emp.find(1, ">=")) == 1  # the protocol's default limit
    assert names(emp.find(5, ">=", limit=2, offset=2), 0) == ["7", "8"]
    assert names(emp.find(0, ">=", limit=100), 0) == [str(i) for i in range(1, 15)]
    assert emp.find(0, ">=", limit=5, offset=20) == []


def test_prefix_of_composite_index(by_dept: Index[str]) -> None:
    assert names(by_dept.find(30, limit=10)) == ["JAMES", "WARD", "MARTIN", "TURNER", "ALLEN", "BLAKE"]
    assert names(by_dept.find((30, 1250), limit=10)) == ["WARD", "MARTIN"]
    assert names(by_dept.find(20, ">", limit=2)) == ["JAMES", "WARD"]


def test_descending_on_composite_index(by_dept: Index[str]) -> None:
    assert names(by_dept.find((20, 3000), "<", limit=3)) == ["JONES", "ADAMS", "SMITH"]
    assert names(by_dept.find((20, 3000), "<=", limit=3)) == ["FORD", "SCOTT", "JONES"]
    assert names(by_dept.find(20, "<=", limit=2)) == ["FORD", "SCOTT"]


def test_index_by_name_and_by_position(conn: Connection, server) -> None:
    by_name = conn.open_index(server.db, "emp", "emp_empno", ["ename"], encoding="utf-8")
    by_pos = conn.open_index(server.db, "emp", "1", ["ename"], encoding="utf-8")
    assert by_name.get(7788) == ("SCOTT",)
    assert by_pos.get(7788) == ("SCOTT",)
    assert by_name.id != by_pos.id


def test_in_on_primary(emp: Index[str]) -> None:
    assert names(emp.find_in([3, 99, 1, 7])) == ["WARD", "SMITH", "CLARK"]
    assert names(emp.find_in([1, 2, 3, 4], limit=2, offset=1)) == ["ALLEN", "WARD"]
    assert names(emp.find(1, in_column=0, in_values=[14, 13], limit=5)) == ["MILLER", "FORD"]


def test_in_takes_one_row_per_value(by_dept: Index[str]) -> None:
    # (30, 1250) matches WARD and MARTIN, but an IN seek takes only the first.
    assert names(by_dept.find_in([1250, 1600, 42], column=1, prefix=(30,))) == ["WARD", "ALLEN"]


def test_in_with_range_operator(emp: Index[str]) -> None:
    assert names(emp.find_in([5, 10], op=">=")) == ["MARTIN", "TURNER"]
    assert names(emp.find_in([5, 10], op="<", limit=10)) == ["JONES", "KING"]


@pytest.mark.parametrize(
    "op, value, want",
    [
        ("=", 3000, [8, 13]),
        ("!=", 3000, [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14]),
        (">", 3000, [9]),
        (">=", 3000, [8, 9, 13]),
        ("<", 1000, [1, 12]),
        ("<=", 950, [1, 12]),
    ],
)
def test_f_filter_operators(emp: Index[str], op: str, value: int, want: List[int]) -> None:
    rows = emp.find(0, ">=", limit=100, filters=[Filter("F", "sal", op, value)])
    assert names(rows, 0) == [str(i) for i in want]


def test_f_filter_by_position_and_combined(emp: Index[str]) -> None:
    assert names(emp.find(0, ">=", limit=100, filters=[Filter("F", 0, "=", 10)])) == ["CLARK", "KING", "MILLER"]
    both = [Filter("F", "dept", "=", 30), Filter("F", "sal", "<", 1500)]
    assert names(emp.find(0, ">=", limit=100, filters=both)) == ["WARD", "MARTIN", "JAMES"]


def test_filters_count_before_offset_and_limit(emp: Index[str]) -> None:
    dept30 = [Filter("F", "dept", "=", 30)]  # ids 2 3 5 6 10 12
    assert names(emp.find(0, ">=", limit=2, offset=1, filters=dept30), 0) == ["3", "5"]


def test_w_filter_ends_the_scan(emp: Index[str]) -> None:
    rows = emp.find(1, ">=", limit=100, filters=[Filter("W", "sal", "<", 2000)])
    assert names(rows, 0) == ["1", "2", "3"]
    rows = emp.find(14, "<=", limit=100, filters=[Filter("W", "dept", "!=", 20)])
    assert names(rows, 0) == ["14"]


def test_filter_on_text_and_empty_string(emp: Index[str]) -> None:
    assert names(emp.find(0, ">=", limit=100, filters=[Filter("F", "note", "=", "sales")]), 0) == ["2", "3", "5", "10"]
    assert names(emp.find(0, ">=", limit=100, filters=[Filter("F", "note", "=", "")]), 0) == ["8"]


def test_null_and_empty_string_come_back_distinct(conn: Connection, server) -> None:
    notes = conn.open_index(server.db, "emp", "PRIMARY", ["note"])
    assert notes.get_many([1, 8, 9]) == [(None,), (b"",), (b"boss",)]
