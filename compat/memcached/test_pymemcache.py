"""pymemcache (PyPI), used as its users do, against hsd's memcached port."""

from __future__ import annotations

from typing import Tuple

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheClientError


def client(addr: Tuple[str, int]) -> Client:
    # noreply off: every store's answer is checked.
    return Client(addr, connect_timeout=5, timeout=10, default_noreply=False)


def test_storage_commands(memcached_addr: Tuple[str, int]) -> None:
    c = client(memcached_addr)
    assert c.set("greeting", b"hello") is True
    assert c.get("greeting") == b"hello"
    assert c.add("greeting", b"again") is False
    assert c.add("other", b"1") is True
    assert c.replace("missing", b"x") is False
    assert c.replace("other", b"2") is True
    assert c.append("greeting", b", world") is True
    assert c.prepend("greeting", b">> ") is True
    assert c.get_many(["greeting", "other", "missing"]) == {
        "greeting": b">> hello, world",
        "other": b"2",
    }
    assert c.delete("other") is True
    assert c.delete("other") is False
    assert c.get("other") is None


def test_flags_and_gets(memcached_addr: Tuple[str, int]) -> None:
    c = client(memcached_addr)
    assert c.set("raw", b"bytes", flags=42) is True
    assert c.get("raw") == b"bytes"
    value, cas = c.gets("raw")
    assert value == b"bytes" and cas is not None


def test_cas(memcached_addr: Tuple[str, int]) -> None:
    c = client(memcached_addr)
    c.set("cas-key", b"v1")
    value, token = c.gets("cas-key")
    assert value == b"v1"
    assert c.cas("cas-key", b"v2", token) is True
    assert c.cas("cas-key", b"v3", token) is False
    assert c.get("cas-key") == b"v2"
    assert c.cas("nope", b"x", token) is None


def test_counters_and_touch(memcached_addr: Tuple[str, int]) -> None:
    c = client(memcached_addr)
    assert c.incr("counter", 1) is None
    c.set("counter", b"10")
    assert c.incr("counter", 5) == 15
    assert c.decr("counter", 20) == 0
    assert c.touch("counter", 100) is True
    assert c.touch("absent", 100) is False
    # As memcached keeps it: the shorter number padded to the value's length.
    assert c.get("counter") == b"0 "


def test_expiry(memcached_addr: Tuple[str, int]) -> None:
    c = client(memcached_addr)
    assert c.set("gone", b"x", expire=-1) is True
    assert c.get("gone") is None
    assert c.add("gone", b"back") is True
    assert c.get("gone") == b"back"


def test_version_stats_and_refused_flush(memcached_addr: Tuple[str, int]) -> None:
    c = client(memcached_addr)
    assert c.version()
    assert c.stats()[b"containers"] == 1
    # The container names no flush_policy: flush_all is refused as by a
    # memcached started with -F (CLIENT_ERROR flush_all not allowed).
    with pytest.raises(MemcacheClientError):
        c.flush_all(noreply=False)
