"""The asyncio client: the same calls and results as the blocking one."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Iterator

import pytest

from hsd_client import (
    AsyncConnection,
    DuplicateKeyError,
    Filter,
    ReadOnlyError,
    RequestError,
    WriteUnconfirmedError,
)
from relay import Relay


def run(server, scenario: Callable[[AsyncConnection], Awaitable[Any]], port: int = 0) -> Any:
    """Run ``scenario`` with a fresh connection in a fresh event loop."""

    async def main() -> Any:
        async with AsyncConnection(server.host if not port else "127.0.0.1",
                                   port or server.write_port, timeout=5) as conn:
            return await scenario(conn)

    return asyncio.run(main())


def test_finds(server) -> None:
    async def scenario(conn: AsyncConnection) -> None:
        emp = await conn.open_index(server.db, "emp", "PRIMARY", ["id", "ename"], ["sal"], encoding="utf-8")
        assert await emp.get(5) == ("5", "MARTIN")
        assert await emp.get(99) is None
        assert [r[0] for r in await emp.find(5, "<=", limit=3)] == ["5", "4", "3"]
        assert [r[0] for r in await emp.find(5, ">", limit=2, offset=1)] == ["7", "8"]
        assert [r[1] for r in await emp.find_in([3, 99, 1])] == ["WARD", "SMITH"]
        rows = await emp.find(0, ">=", limit=100, filters=[Filter("F", "sal", ">=", 3000)])
        assert [r[0] for r in rows] == ["8", "9", "13"]
        raw = await conn.open_index(server.db, "emp", "PRIMARY", ["note"])
        assert await raw.get_many([1, 8, 9]) == [(None,), (b"",), (b"boss",)]

    run(server, scenario)


def test_writes(server, tag: str) -> None:
    async def scenario(conn: AsyncConnection) -> None:
        seq = await conn.open_index(server.db, "seq", "PRIMARY", ["name"])
        first = await seq.insert([tag])
        assert isinstance(first, int) and await seq.insert([tag]) == first + 1
        kv = await conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"], encoding="utf-8")
        assert await kv.insert([tag, "a", 1]) is None
        with pytest.raises(DuplicateKeyError):
            await kv.insert([tag, "b", 2])
        assert await kv.update(tag, [tag, "b", 2], returning=True) == [(tag, "a", "1")]
        n = await conn.open_index(server.db, "kv", "PRIMARY", ["n"], encoding="utf-8")
        assert await n.increment(tag, 10) == 1
        assert await n.decrement(tag, 2, returning=True) == [("12",)]
        assert await kv.get(tag) == (tag, "b", "10")
        assert await kv.delete(tag, returning=True) == [(tag, "b", "10")]
        assert await kv.delete(tag) == 0

    run(server, scenario)


def test_read_port_refuses_writes(server) -> None:
    async def scenario(conn: AsyncConnection) -> None:
        kv = await conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"])
        with pytest.raises(ReadOnlyError):
            await kv.insert(["never", "x", 1])

    run(server, scenario, port=server.read_port)


def test_pipeline_and_concurrent_tasks(server) -> None:
    async def scenario(conn: AsyncConnection) -> None:
        emp = await conn.open_index(server.db, "emp", "PRIMARY", ["ename"], encoding="utf-8")
        p = conn.pipeline()
        p.get(emp, 9)
        p.find(emp, (1, 2))
        p.find(emp, 14, "<=", limit=2)
        king, bad, last_two = await p.execute(raise_errors=False)
        assert king == ("KING",) and isinstance(bad, RequestError)
        assert last_two == [("MILLER",), ("FORD",)]
        # Many tasks on one connection: each exchange keeps its own answers.
        keys = [k % 15 + 1 for k in range(60)]
        got = await asyncio.gather(*(emp.get(k) for k in keys))
        assert got == [await emp.get(k) for k in keys]
        assert got[8] == ("KING",)  # key 9
        assert conn.connects == 1

    run(server, scenario)


def test_reconnect(server, relay: Relay, ids: Iterator[int]) -> None:
    key = next(ids)

    async def scenario(conn: AsyncConnection) -> None:
        emp = await conn.open_index(server.db, "emp", "PRIMARY", ["ename"])
        counter = await conn.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"])
        hits = await conn.open_index(server.db, "counter", "PRIMARY", ["hits"])
        await counter.insert([key, 0, 0])
        relay.cut()
        assert await emp.get(9) == (b"KING",)  # read retried, indexes restored
        relay.cut()
        assert await hits.increment(key, 1) == 1  # write on a new connection
        relay.drop_answers = True
        with pytest.raises(WriteUnconfirmedError):
            await hits.increment(key, 1)
        relay.drop_answers = False
        assert await hits.get(key) == (b"2",)  # each increment applied once

    run(server, scenario, port=relay.port)
    assert relay.accepted == 4
