"""The wire format on its own: escaping, request lines, answer parsing."""

from __future__ import annotations

import pytest

from hsd_client import protocol
from hsd_client.errors import ProtocolError


def test_every_byte_survives_escaping_and_low_bytes_never_appear_raw() -> None:
    data = bytes(range(256))
    token = protocol.escape(data)
    assert all(b >= 0x10 or b == 0x01 for b in token)
    assert b"\t" not in token and b"\n" not in token
    assert protocol.unescape(token) == data


def test_escape_uses_prefix_0x01_and_plus_0x40() -> None:
    assert protocol.escape(b"a\tb") == b"a\x01\x49b"
    assert protocol.escape(b"\x00") == b"\x01\x40"
    assert protocol.escape(b"\x01") == b"\x01\x41"
    assert protocol.escape(b"\x10\xff") == b"\x10\xff"


def test_null_and_empty_string_are_different_tokens() -> None:
    assert protocol.encode_value(None) == b"\x00"
    assert protocol.encode_value("") == b""
    assert protocol.encode_value(b"\x00") == b"\x01\x40"
    assert protocol.decode_token(b"\x00") is None
    assert protocol.decode_token(b"") == b""
    assert protocol.decode_token(b"\x01\x40") == b"\x00"


def test_values_accept_str_bytes_int() -> None:
    assert protocol.encode_value("Zoë") == "Zoë".encode()
    assert protocol.encode_value("Zoë", "latin-1") == b"Zo\xeb"
    assert protocol.encode_value(-42) == b"-42"
    assert protocol.encode_value(bytearray(b"x")) == b"x"
    with pytest.raises(TypeError):
        protocol.encode_value(True)
    with pytest.raises(TypeError):
        protocol.encode_value(1.5)  # type: ignore[arg-type]


def test_open_index_line() -> None:
    line = protocol.open_index_line(3, "db", "t", "PRIMARY", ["a", "b"], ["c"])
    assert line == b"P\t3\tdb\tt\tPRIMARY\ta,b\tc\n"
    assert protocol.open_index_line(0, "db", "t", "", []) == b"P\t0\tdb\tt\t\t\n"
    with pytest.raises(ValueError):
        protocol.open_index_line(0, "db", "t", "PRIMARY", ["a,b"])
    with pytest.raises(ValueError):
        protocol.open_index_line(0, "d\tb", "t", "PRIMARY", ["a"])


def test_find_line_with_everything() -> None:
    line = protocol.find_line(
        1, ">=", [b"10", b"x"], 5, 2,
        in_column=1, in_values=[b"a", b"b"],
        filters=[("F", "!=", 0, b"\x00"), ("W", "<", 1, b"9")],
        modify="U?", modify_values=[b"n", b"\x01\x40"],
    )
    assert line.split(b"\t") == [
        b"1", b">=", b"2", b"10", b"x", b"5", b"2",
        b"@", b"1", b"2", b"a", b"b",
        b"F", b"!=", b"0", b"\x00", b"W", b"<", b"1", b"9",
        b"U?", b"n", b"\x01\x40\n",
    ]


def test_find_line_refuses_what_the_server_would() -> None:
    with pytest.raises(ValueError):
        protocol.find_line(0, "==", [b"1"], 1, 0)
    with pytest.raises(ValueError):
        protocol.find_line(0, "=", [], 1, 0)
    with pytest.raises(ValueError):
        protocol.find_line(0, "=", [b"1"], 1, 0, in_column=0, in_values=[])
    with pytest.raises(ValueError):
        protocol.find_line(0, "=", [b"1"], 1, 0, filters=[("X", "=", 0, b"1")])
    with pytest.raises(ValueError):
        protocol.find_line(0, "=", [b"1"], 1, 0, modify="U??")
    with pytest.raises(ValueError):
        protocol.find_line(0, "=", [b"1"], -1, 0)


def test_insert_and_auth_lines() -> None:
    assert protocol.insert_line(2, [b"1", b"\x00", b""]) == b"2\t+\t3\t1\t\x00\t\n"
    assert protocol.auth_line("s\te") == b"A\t1\ts\x01\x49e\n"


def test_parse_reply_rows_and_errors() -> None:
    reply = protocol.parse_reply(b"0\t2\ta\t\x00\t\t\x01\x49")
    assert (reply.code, reply.ncols) == (0, 2)
    assert protocol.split_rows(reply) == [(b"a", None), (b"", b"\t")]
    error = protocol.parse_reply(b"1\t1\t121")
    assert (error.code, error.reason) == (1, "121")
    assert protocol.split_rows(protocol.parse_reply(b"0\t3")) == []
    with pytest.raises(ProtocolError):
        protocol.parse_reply(b"hello")
    with pytest.raises(ProtocolError):
        protocol.split_rows(protocol.parse_reply(b"0\t2\ta"))


def test_line_buffer_splits_across_chunks() -> None:
    buf = protocol.LineBuffer()
    buf.feed(b"0\t1\n0\t")
    assert buf.pop() == b"0\t1"
    assert buf.pop() is None
    buf.feed(b"1\t5\n\n")
    assert buf.pop() == b"0\t1\t5"
    assert buf.pop() == b""
    assert buf.pop() is None and len(buf) == 0


def test_line_buffer_pops_many_lines_but_no_more_than_asked() -> None:
    buf = protocol.LineBuffer()
    buf.feed(b"0\t1\n1\t1\t121\n0\t1\t5\npartial")
    assert buf.pop_lines(2) == [b"0\t1", b"1\t1\t121"]
    assert buf.pop_lines(5) == [b"0\t1\t5"]
    assert buf.pop_lines(5) == []
    buf.feed(b" line\n")
    assert buf.pop_lines(5) == [b"partial line"]
    assert len(buf) == 0


def test_parse_reply_without_escapes_keeps_tokens_as_values() -> None:
    assert protocol.parse_reply(b"0\t2\ta\tb").values == [b"a", b"b"]
    assert protocol.parse_reply(b"0\t2\ta\x01\x49\t\x00").values == [b"a\t", None]
