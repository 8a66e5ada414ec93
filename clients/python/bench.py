"""Gets per second from one CPython process: one at a time, and pipelined.

Against ``hsd serve --demo`` (table test.user, ids 1..100000):

    python clients/python/bench.py --port 9998 --seconds 3 --batch 100

Each mode runs for ``--seconds``, reading random ids by primary key with the
blocking client (and once with the asyncio client, pipelined), and prints
one line of gets per second. Keep it short on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Callable

import hsd_client

COLUMNS = ["user_name", "user_email", "created"]


def measure(label: str, seconds: float, step: Callable[[], int]) -> None:
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        done += step()
    elapsed = time.perf_counter() - start
    print(f"{label:<40} {done / elapsed:>10,.0f} gets/s  ({done:,} in {elapsed:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9998)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batch", type=int, default=100, help="gets per pipelined call")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    rng = random.Random(1)

    conn = hsd_client.connect(args.host, args.port)
    users = conn.open_index("test", "user", "PRIMARY", COLUMNS)
    assert users.get(1) is not None, "no test.user rows: start hsd with --demo"

    def one() -> int:
        users.get(rng.randint(1, args.rows))
        return 1

    def batch() -> int:
        rows = users.get_many([rng.randint(1, args.rows) for _ in range(args.batch)])
        return len(rows)

    measure("blocking, one get per round trip", args.seconds, one)
    measure(f"blocking, pipelined ({args.batch} per call)", args.seconds, batch)
    conn.close()

    async def pipelined_async() -> None:
        aconn = await hsd_client.connect_async(args.host, args.port)
        ausers = await aconn.open_index("test", "user", "PRIMARY", COLUMNS)
        done = 0
        start = time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            done += len(await ausers.get_many([rng.randint(1, args.rows) for _ in range(args.batch)]))
        elapsed = time.perf_counter() - start
        label = f"asyncio, pipelined ({args.batch} per call)"
        print(f"{label:<40} {done / elapsed:>10,.0f} gets/s  ({done:,} in {elapsed:.1f} s)")
        await aconn.close()

    asyncio.run(pipelined_async())


if __name__ == "__main__":
    main()
