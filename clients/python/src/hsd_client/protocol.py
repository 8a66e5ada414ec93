"""The HandlerSocket wire format: escaping, request lines, answer lines.

Everything here is pure computation on bytes, with no sockets and no state
beyond a line buffer, so that the blocking client (:mod:`hsd_client.client`)
and the asyncio client (:mod:`hsd_client.aio`) speak exactly the same
protocol through the same code.

A request or an answer is one line of TAB-separated tokens ending in LF. A
token is NULL (the single byte 0x00) or a byte string in which every byte
below 0x10 is sent as 0x01 followed by the byte plus 0x40.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from .errors import ProtocolError

__all__ = [
    "NULL",
    "FIND_OPS",
    "FILTER_OPS",
    "MODIFY_OPS",
    "Value",
    "Reply",
    "WireFilter",
    "LineBuffer",
    "escape",
    "unescape",
    "encode_value",
    "decode_token",
    "open_index_line",
    "auth_line",
    "find_line",
    "insert_line",
    "parse_reply",
    "split_rows",
]

#: What a caller may send as a key, filter or column value: ``None`` is NULL,
#: ``str`` is encoded (UTF-8 unless told otherwise), ``int`` is sent in decimal.
Value = Union[bytes, bytearray, memoryview, str, int, None]

#: The NULL token on the wire.
NULL = b"\x00"

#: Comparison operators a find accepts.
FIND_OPS = frozenset({"=", ">", ">=", "<", "<="})
#: Comparison operators a filter accepts.
FILTER_OPS = frozenset({"=", "!=", ">", ">=", "<", "<="})
#: Modify operators: update, delete, increment, decrement (``?`` appended
#: asks for the rows as they were before the change).
MODIFY_OPS = frozenset({"U", "D", "+", "-"})

_LOW_BYTE = re.compile(rb"[\x00-\x0f]")
_ESCAPES = {bytes((b,)): bytes((0x01, b + 0x40)) for b in range(0x10)}
_ESCAPED_PAIR = re.compile(rb"\x01(.)", re.DOTALL)
_UNESCAPES = {bytes((b,)): bytes(((b - 0x40) & 0xFF,)) for b in range(256)}
# Characters that cannot appear in a name sent in an open_index request.
_BAD_NAME = re.compile(r"[\x00-\x1f,]")


def escape(data: bytes) -> bytes:
    """Encode a byte string as a token: bytes 0x00-0x0f become 0x01, byte+0x40."""
    if _LOW_BYTE.search(data) is None:
        return data
    return _LOW_BYTE.sub(lambda m: _ESCAPES[m.group()], data)


def unescape(token: bytes) -> bytes:
    """Decode a token's bytes (the reverse of :func:`escape`)."""
    if b"\x01" not in token:
        return token
    return _ESCAPED_PAIR.sub(lambda m: _UNESCAPES[m.group(1)], token)


def encode_value(value: Value, encoding: str = "utf-8") -> bytes:
    """One value as a wire token: ``None`` is NULL, ``""`` the empty string."""
    if value is None:
        return NULL
    if isinstance(value, bytes):
        raw = value
    elif isinstance(value, str):
        raw = value.encode(encoding)
    elif isinstance(value, bool):
        raise TypeError("bool is not a HandlerSocket value; send 0/1 or a string")
    elif isinstance(value, int):
        raw = b"%d" % value
    elif isinstance(value, (bytearray, memoryview)):
        raw = bytes(value)
    else:
        raise TypeError(
            f"a HandlerSocket value is bytes, str, int or None, not {type(value).__name__}"
        )
    return escape(raw)


def decode_token(token: bytes) -> Optional[bytes]:
    """One wire token as a value: the lone byte 0x00 is NULL (``None``)."""
    if token == NULL:
        return None
    return unescape(token)


def _name(text: str, what: str) -> bytes:
    if _BAD_NAME.search(text):
        raise ValueError(f"{what} {text!r} contains a comma or a control character")
    return text.encode("utf-8")


def _names(items: Sequence[str], what: str) -> bytes:
    return b",".join(_name(item, what) for item in items)


def open_index_line(
    index_id: int,
    db: str,
    table: str,
    index: str,
    columns: Sequence[str],
    filter_columns: Sequence[str] = (),
) -> bytes:
    """``P <id> <db> <table> <index> <columns> [<fcolumns>]``."""
    tokens = [
        b"P",
        b"%d" % index_id,
        _name(db, "database name"),
        _name(table, "table name"),
        _name(index, "index name"),
        _names(columns, "column name"),
    ]
    if filter_columns:
        tokens.append(_names(filter_columns, "filter column name"))
    return b"\t".join(tokens) + b"\n"


def auth_line(secret: Union[bytes, str]) -> bytes:
    """``A 1 <secret>``: plain shared-secret authentication."""
    return b"A\t1\t" + encode_value(secret) + b"\n"


#: A filter as the wire wants it: (``F`` or ``W``, operator, position in the
#: index's filter columns, encoded value).
WireFilter = Tuple[str, str, int, bytes]


def find_line(
    index_id: int,
    op: str,
    key: Sequence[bytes],
    limit: int,
    offset: int,
    in_column: Optional[int] = None,
    in_values: Sequence[bytes] = (),
    filters: Iterable[WireFilter] = (),
    modify: Optional[str] = None,
    modify_values: Sequence[bytes] = (),
) -> bytes:
    """A find, or a find-and-modify when ``modify`` is given.

    ``key``, ``in_values`` and ``modify_values`` are already encoded tokens
    (:func:`encode_value`). ``limit`` and ``offset`` are always sent, so that
    the positional fields after them are read as intended.
    """
    if op not in FIND_OPS:
        raise ValueError(f"find operator {op!r} is not one of {sorted(FIND_OPS)}")
    if not key:
        raise ValueError("a find needs at least one key value")
    if limit < 0 or offset < 0:
        raise ValueError("limit and offset must not be negative")
    parts: List[bytes] = [b"%d" % index_id, op.encode(), b"%d" % len(key), *key]
    parts += [b"%d" % limit, b"%d" % offset]
    if in_column is not None:
        if not in_values:
            raise ValueError("IN needs at least one value")
        parts += [b"@", b"%d" % in_column, b"%d" % len(in_values), *in_values]
    for kind, fop, column, value in filters:
        if kind not in ("F", "W"):
            raise ValueError(f"filter kind {kind!r} is not 'F' (skip) or 'W' (stop)")
        if fop not in FILTER_OPS:
            raise ValueError(f"filter operator {fop!r} is not one of {sorted(FILTER_OPS)}")
        parts += [kind.encode(), fop.encode(), b"%d" % column, value]
    if modify is not None:
        if modify.rstrip("?") not in MODIFY_OPS or modify.count("?") > 1:
            raise ValueError(f"modify operator {modify!r} is not U, D, + or - (with optional ?)")
        parts.append(modify.encode())
        parts += modify_values
    return b"\t".join(parts) + b"\n"


def insert_line(index_id: int, values: Sequence[bytes]) -> bytes:
    """``<id> + <n> <v1> ... <vn>``, values already encoded."""
    if not values:
        raise ValueError("an insert needs at least one value")
    return b"\t".join([b"%d" % index_id, b"+", b"%d" % len(values), *values]) + b"\n"


class Reply:
    """One answer line: ``code``, ``ncols`` and the decoded values after them."""

    __slots__ = ("code", "ncols", "values")

    def __init__(self, code: int, ncols: int, values: List[Optional[bytes]]) -> None:
        self.code = code
        self.ncols = ncols
        self.values = values

    def __repr__(self) -> str:
        return f"Reply({self.code}, {self.ncols}, {self.values!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reply):
            return NotImplemented
        return (self.code, self.ncols, self.values) == (other.code, other.ncols, other.values)

    @property
    def ok(self) -> bool:
        return self.code == 0

    @property
    def reason(self) -> str:
        """An error answer's reason (``121``, ``open_table``, ``stmtnum``...)."""
        if not self.values or self.values[0] is None:
            return ""
        return self.values[0].decode("utf-8", "replace")


def parse_reply(line: bytes) -> Reply:
    """Parse one answer line, without its LF."""
    tokens = line.split(b"\t")
    if len(tokens) < 2:
        raise ProtocolError(f"answer has fewer than two tokens: {line[:80]!r}")
    try:
        code = int(tokens[0])
        ncols = int(tokens[1])
    except ValueError:
        raise ProtocolError(f"answer does not start with two numbers: {line[:80]!r}") from None
    if b"\x00" in line or b"\x01" in line:
        values: List[Optional[bytes]] = [decode_token(t) for t in tokens[2:]]
    else:  # nothing escaped and no NULL: the tokens are the values
        values = tokens[2:]  # type: ignore[assignment]
    return Reply(code, ncols, values)


def split_rows(reply: Reply) -> List[Tuple[Optional[bytes], ...]]:
    """The rows of a successful find answer, each a tuple of ``ncols`` values."""
    n = reply.ncols
    values = reply.values
    if n <= 0:
        if values:
            raise ProtocolError(f"{len(values)} values for 0 columns")
        return []
    if len(values) % n:
        raise ProtocolError(f"{len(values)} values do not make rows of {n} columns")
    return [tuple(values[i : i + n]) for i in range(0, len(values), n)]


class LineBuffer:
    """Collects bytes as they arrive and hands back complete lines."""

    __slots__ = ("_buf", "_scanned")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scanned = 0

    def feed(self, data: bytes) -> None:
        self._buf += data

    def pop(self) -> Optional[bytes]:
        """The next complete line without its LF, or ``None`` if there is none yet."""
        lines = self.pop_lines(1)
        return lines[0] if lines else None

    def pop_lines(self, limit: int) -> List[bytes]:
        """Up to ``limit`` complete lines, without their LFs (maybe none)."""
        buf = self._buf
        end = buf.rfind(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(buf)
            return []
        lines = bytes(buf[:end]).split(b"\n")
        if len(lines) > limit:
            lines = lines[:limit]
            end = sum(map(len, lines)) + limit - 1
        del buf[: end + 1]
        self._scanned = 0
        return lines

    def clear(self) -> None:
        self._buf.clear()
        self._scanned = 0

    def __len__(self) -> int:
        return len(self._buf)
