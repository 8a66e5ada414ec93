"""Values end to end: escaping, every byte, text encodings, NULL versus ''."""

from __future__ import annotations

from typing import Iterator

import pytest

from hsd_client import Connection, Index


@pytest.fixture
def kv(conn: Connection, server) -> Index[bytes]:
    return conn.open_index(server.db, "kv", "PRIMARY", ["k", "v", "n"])


def test_control_characters_round_trip(kv: Index[bytes], tag: str) -> None:
    value = b"tab\there\nnewline\x00nul\x01one\x0ffifteen\x10sixteen\r\n"
    kv.insert([tag, value, 1])
    assert kv.get(tag) == (tag.encode(), value, b"1")
    assert kv.get(tag.encode()) == (tag.encode(), value, b"1")


def test_every_byte_in_a_binary_column(conn: Connection, server, ids: Iterator[int]) -> None:
    binary = conn.open_index(server.db, "bin", "PRIMARY", ["k", "v"])
    low, high = next(ids), next(ids)
    binary.insert([low, bytes(range(0, 128))])
    binary.insert([high, bytes(range(128, 256))])
    assert binary.get_many([low, high]) == [
        (str(low).encode(), bytes(range(0, 128))),
        (str(high).encode(), bytes(range(128, 256))),
    ]


def test_null_empty_and_nul_byte_are_three_values(kv: Index[bytes], tag: str) -> None:
    kv.insert([tag + "null", None, None])
    kv.insert([tag + "empty", "", 0])
    kv.insert([tag + "nul", b"\x00", 0])
    assert kv.get(tag + "null") == ((tag + "null").encode(), None, None)
    assert kv.get(tag + "empty") == ((tag + "empty").encode(), b"", b"0")
    assert kv.get(tag + "nul") == ((tag + "nul").encode(), b"\x00", b"0")


def test_text_is_utf8_and_decoded_on_request(conn: Connection, server, tag: str) -> None:
    text = "Zoë Ærø 日本語 🎉"
    as_text = conn.open_index(server.db, "kv", "PRIMARY", ["k", "v"], encoding="utf-8")
    as_bytes = conn.open_index(server.db, "kv", "PRIMARY", ["k", "v"])
    as_text.insert([tag + "é", text])
    assert as_text.get(tag + "é") == (tag + "é", text)
    assert as_bytes.get(tag + "é") == ((tag + "é").encode(), text.encode())
    assert server.sql(f"SELECT v FROM kv WHERE k = '{tag}é'") == [[text]]


def test_integers_are_sent_in_decimal(kv: Index[bytes], tag: str) -> None:
    kv.insert([tag, 12345678901, -42])
    assert kv.get(tag) == (tag.encode(), b"12345678901", b"-42")
