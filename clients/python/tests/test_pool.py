"""The thread-safe connection pool, and one connection shared by threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import pytest

from hsd_client import Connection, ConnectionPool, HandlerSocketError, PoolTimeoutError
from relay import Relay


def bump(pool: ConnectionPool, db: str, key: int, times: int) -> None:
    for _ in range(times):
        with pool.connection() as conn:
            hits = conn.open_index(db, "counter", "PRIMARY", ["hits"])
            assert hits.increment(key, 1) == 1


def test_threads_share_a_few_connections(server, relay: Relay, ids: Iterator[int]) -> None:
    key = next(ids)
    with server.connect() as setup:
        setup.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"]).insert([key, 0, 0])
    with ConnectionPool("127.0.0.1", relay.port, size=3) as pool:
        with ThreadPoolExecutor(8) as workers:
            for done in [workers.submit(bump, pool, server.db, key, 25) for _ in range(8)]:
                done.result()
        assert relay.accepted <= 3
    assert server.sql(f"SELECT hits FROM counter WHERE id = {key}") == [["200"]]


def test_a_returned_connection_keeps_its_indexes(server, relay: Relay) -> None:
    with ConnectionPool("127.0.0.1", relay.port, size=1) as pool:
        for _ in range(3):
            with pool.connection() as conn:
                emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"])
                assert emp.get(9) == (b"KING",)
    assert (relay.accepted, relay.request_lines) == (1, 1 + 3)  # one P, three finds


def test_waiting_for_a_free_connection_times_out(server) -> None:
    pool = ConnectionPool(server.host, server.write_port, size=1, wait=0.2)
    held = pool.acquire()
    try:
        with pytest.raises(PoolTimeoutError):
            pool.acquire()
        freed = threading.Timer(0.05, pool.release, [held])
        freed.start()
        again = pool.acquire()  # waits until the timer gives it back
        assert again is held
        freed.join()
        pool.release(again)
    finally:
        pool.close()
    with pytest.raises(HandlerSocketError):
        pool.acquire()


def test_one_connection_shared_by_threads(server, ids: Iterator[int]) -> None:
    key = next(ids)
    conn: Connection = server.connect()
    with conn:
        counter = conn.open_index(server.db, "counter", "PRIMARY", ["id", "hits", "score"])
        counter.insert([key, 0, 0])
        hits = conn.open_index(server.db, "counter", "PRIMARY", ["hits"])
        emp = conn.open_index(server.db, "emp", "PRIMARY", ["ename"])

        def work(_: int) -> None:
            for _ in range(20):
                hits.increment(key, 1)
                assert emp.get(9) == (b"KING",)

        with ThreadPoolExecutor(4) as workers:
            list(workers.map(work, range(4)))
        assert hits.get(key) == (b"80",)
        assert conn.connects == 1
