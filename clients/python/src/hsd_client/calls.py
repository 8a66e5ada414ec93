"""How a method call becomes a request, and its answer a result.

Shared by the blocking and the asyncio clients, and free of I/O like
:mod:`hsd_client.protocol`: a :class:`Call` is a request line plus the
function that turns its answer into the caller's result; :class:`IndexCore`
builds the calls for one opened index from keyword arguments, and
:class:`PipelineCore` queues calls to send together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generic,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from . import protocol
from .errors import HandlerSocketError, ProtocolError, error_from_reply
from .protocol import Reply, Value

if TYPE_CHECKING:
    from .session import IndexSpec

__all__ = ["Filter", "Call", "IndexCore", "PipelineCore", "Row", "Key", "V"]

T = TypeVar("T")
#: The type of the values an index gives back: ``bytes`` (default) or ``str``.
V = TypeVar("V", bytes, str)
#: One row: the opened columns' values, ``None`` for NULL.
Row = Tuple[Optional[V], ...]
#: A key: one value, or a tuple/list of values for the leading index columns.
Key = Union[Value, Sequence[Value]]


@dataclass(frozen=True)
class Filter:
    """A filter on a find: ``Filter("F", "sal", ">=", 1000)``.

    ``kind`` ``"F"`` skips the rows where the condition is false; ``"W"`` ends
    the scan at the first such row. ``column`` is a name from the index's
    ``filter_columns`` or a position in them; ``op`` is one of
    ``= != > >= < <=``; the row's value is on the left.
    """

    kind: str
    column: Union[str, int]
    op: str
    value: Value

    def __post_init__(self) -> None:
        if self.kind not in ("F", "W"):
            raise ValueError(f"filter kind {self.kind!r} is not 'F' (skip) or 'W' (stop)")
        if self.op not in protocol.FILTER_OPS:
            raise ValueError(f"filter operator {self.op!r} is not one of {sorted(protocol.FILTER_OPS)}")


class Call(Generic[T]):
    """One request line, whether it writes, and how its answer becomes a result."""

    __slots__ = ("line", "writes", "convert")

    def __init__(self, line: bytes, writes: bool, convert: Callable[[Reply], T]) -> None:
        self.line = line
        self.writes = writes
        self.convert = convert

    def __repr__(self) -> str:
        return f"Call({self.line!r}, writes={self.writes})"


def expect_ok(reply: Reply) -> None:
    """Convert an answer that carries nothing but success."""
    if reply.code:
        raise error_from_reply(reply.code, reply.reason)


def _expect_count(reply: Reply) -> int:
    expect_ok(reply)
    if not reply.values or reply.values[0] is None or not reply.values[0].isdigit():
        raise ProtocolError(f"a modify answered no row count: {reply}")
    return int(reply.values[0])


def _expect_insert_id(reply: Reply) -> Optional[int]:
    expect_ok(reply)
    if not reply.values or reply.values[0] is None:
        return None
    try:
        return int(reply.values[0])
    except ValueError:
        raise ProtocolError(f"an insert answered a non-numeric id: {reply}") from None


def auth_call(secret: Union[bytes, str]) -> Call[None]:
    return Call(protocol.auth_line(secret), False, expect_ok)


def _key_parts(key: Key) -> List[Value]:
    if isinstance(key, (list, tuple)):
        return list(key)
    return [key]  # type: ignore[list-item]


class IndexCore(Generic[V]):
    """An opened index: its id, its columns, and the calls made on it.

    The blocking :class:`~hsd_client.client.Index` and the asyncio
    :class:`~hsd_client.aio.AsyncIndex` add the methods that send them.
    """

    def __init__(self, index_id: int, spec: IndexSpec, encoding: Optional[str]) -> None:
        self.id = index_id
        self.spec = spec
        #: ``None``: values come back as bytes; else they are decoded with it.
        self.encoding = encoding
        self._in_encoding = encoding or "utf-8"

    @property
    def columns(self) -> Tuple[str, ...]:
        """The opened columns: what finds return and writes set, in this order."""
        return self.spec.columns

    @property
    def filter_columns(self) -> Tuple[str, ...]:
        return self.spec.filter_columns

    def __repr__(self) -> str:
        s = self.spec
        return f"<{type(self).__name__} {self.id}: {s.db}.{s.table}.{s.index} {','.join(s.columns)}>"

    # -- conversion of answers -------------------------------------------------

    def _rows(self, reply: Reply) -> List[Row[V]]:
        expect_ok(reply)
        rows = protocol.split_rows(reply)
        if self.encoding is None:
            return rows  # type: ignore[return-value]
        enc = self.encoding
        return [tuple(None if v is None else v.decode(enc) for v in row) for row in rows]  # type: ignore[misc]

    def _first_row(self, reply: Reply) -> Optional[Row[V]]:
        rows = self._rows(reply)
        return rows[0] if rows else None

    # -- building requests -------------------------------------------------------

    def _enc(self, value: Value) -> bytes:
        return protocol.encode_value(value, self._in_encoding)

    def _filter(self, f: Filter) -> protocol.WireFilter:
        if isinstance(f.column, str):
            try:
                pos = self.spec.filter_columns.index(f.column)
            except ValueError:
                raise ValueError(
                    f"filter column {f.column!r} is not among this index's filter_columns "
                    f"{list(self.spec.filter_columns)}"
                ) from None
        else:
            pos = f.column
        return (f.kind, f.op, pos, self._enc(f.value))

    def _find_line(
        self,
        key: Key,
        op: str,
        limit: int,
        offset: int,
        in_column: Optional[int],
        in_values: Optional[Sequence[Value]],
        filters: Sequence[Filter],
        modify: Optional[str] = None,
        modify_values: Sequence[Value] = (),
    ) -> bytes:
        if (in_column is None) != (in_values is None):
            raise ValueError("give both in_column and in_values, or neither")
        return protocol.find_line(
            self.id,
            op,
            [self._enc(v) for v in _key_parts(key)],
            limit,
            offset,
            in_column,
            [self._enc(v) for v in in_values or ()],
            [self._filter(f) for f in filters],
            modify,
            [self._enc(v) for v in modify_values],
        )

    def find_call(
        self,
        key: Key,
        op: str = "=",
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
    ) -> Call[List[Row[V]]]:
        line = self._find_line(key, op, limit, offset, in_column, in_values, filters)
        return Call(line, False, self._rows)

    def get_call(self, key: Key) -> Call[Optional[Row[V]]]:
        if isinstance(key, (list, tuple)):
            line = self._find_line(key, "=", 1, 0, None, None, ())
        else:  # the common case, built directly: "<id> = 1 <key> 1 0"
            line = b"%d\t=\t1\t%s\t1\t0\n" % (self.id, self._enc(cast(Value, key)))
        return Call(line, False, self._first_row)

    def find_in_call(
        self,
        values: Sequence[Value],
        column: int = 0,
        prefix: Sequence[Value] = (),
        op: str = "=",
        limit: Optional[int] = None,
        offset: int = 0,
        filters: Sequence[Filter] = (),
    ) -> Call[List[Row[V]]]:
        values = list(values)
        if not values:
            raise ValueError("find_in needs at least one value")
        if len(prefix) < column:
            raise ValueError(f"IN on key column {column} needs {column} prefix values")
        key = [*prefix[:column], values[0], *prefix[column + 1 :]]
        if limit is None:
            limit = len(values)
        return self.find_call(key, op, limit, offset, column, values, filters)

    def insert_call(self, values: Key) -> Call[Optional[int]]:
        vals = _key_parts(values)
        if len(vals) > len(self.columns):
            raise ValueError(f"{len(vals)} values for {len(self.columns)} opened columns")
        line = protocol.insert_line(self.id, [self._enc(v) for v in vals])
        return Call(line, True, _expect_insert_id)

    def modify_call(
        self,
        mop: str,
        key: Key,
        values: Optional[Key],
        op: str,
        limit: int,
        offset: int,
        in_column: Optional[int],
        in_values: Optional[Sequence[Value]],
        filters: Sequence[Filter],
        returning: bool,
    ) -> Call[Any]:
        if mop == "D":
            vals: List[Value] = []
        else:
            vals = _key_parts(values) if values is not None else []
            if len(vals) != len(self.columns):
                raise ValueError(
                    f"{len(vals)} values for {len(self.columns)} opened columns "
                    f"{list(self.columns)}: give one per column"
                )
        line = self._find_line(
            key, op, limit, offset, in_column, in_values, filters,
            mop + ("?" if returning else ""), vals,
        )
        return Call(line, True, self._rows if returning else _expect_count)


class PipelineCore:
    """Calls queued to be written at once; their answers come back in order.

    Each method takes the index first and the same arguments as that index's
    method, and queues the request; the results come back in queuing order.
    """

    def __init__(self) -> None:
        self._calls: List[Call[Any]] = []

    def __len__(self) -> int:
        return len(self._calls)

    def _add(self, call: Call[Any]) -> None:
        self._calls.append(call)

    def _take(self) -> List[Call[Any]]:
        calls, self._calls = self._calls, []
        return calls

    def get(self, index: IndexCore[Any], key: Key) -> None:
        """Queue ``index.get(key)``: its result is the row or ``None``."""
        self._add(index.get_call(key))

    def find(
        self,
        index: IndexCore[Any],
        key: Key,
        op: str = "=",
        *,
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
    ) -> None:
        """Queue ``index.find(...)``: its result is a list of rows."""
        self._add(index.find_call(key, op, limit, offset, in_column, in_values, filters))

    def find_in(
        self,
        index: IndexCore[Any],
        values: Sequence[Value],
        *,
        column: int = 0,
        prefix: Sequence[Value] = (),
        op: str = "=",
        limit: Optional[int] = None,
        offset: int = 0,
        filters: Sequence[Filter] = (),
    ) -> None:
        """Queue ``index.find_in(...)``: its result is a list of rows."""
        self._add(index.find_in_call(values, column, prefix, op, limit, offset, filters))

    def insert(self, index: IndexCore[Any], values: Key) -> None:
        """Queue ``index.insert(values)``: its result is the auto-increment id or ``None``."""
        self._add(index.insert_call(values))

    def _modify(
        self,
        mop: str,
        index: IndexCore[Any],
        key: Key,
        values: Optional[Key],
        op: str,
        limit: int,
        offset: int,
        in_column: Optional[int],
        in_values: Optional[Sequence[Value]],
        filters: Sequence[Filter],
        returning: bool,
    ) -> None:
        self._add(
            index.modify_call(
                mop, key, values, op, limit, offset, in_column, in_values, filters, returning
            )
        )

    def update(
        self,
        index: IndexCore[Any],
        key: Key,
        values: Key,
        op: str = "=",
        *,
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
        returning: bool = False,
    ) -> None:
        """Queue ``index.update(...)``: a row count, or the old rows with ``returning``."""
        self._modify(
            "U", index, key, values, op, limit, offset, in_column, in_values, filters, returning
        )

    def delete(
        self,
        index: IndexCore[Any],
        key: Key,
        op: str = "=",
        *,
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
        returning: bool = False,
    ) -> None:
        """Queue ``index.delete(...)``: a row count, or the old rows with ``returning``."""
        self._modify(
            "D", index, key, None, op, limit, offset, in_column, in_values, filters, returning
        )

    def increment(
        self,
        index: IndexCore[Any],
        key: Key,
        values: Key,
        op: str = "=",
        *,
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
        returning: bool = False,
    ) -> None:
        """Queue ``index.increment(...)``: a row count, or the old rows with ``returning``."""
        self._modify(
            "+", index, key, values, op, limit, offset, in_column, in_values, filters, returning
        )

    def decrement(
        self,
        index: IndexCore[Any],
        key: Key,
        values: Key,
        op: str = "=",
        *,
        limit: int = 1,
        offset: int = 0,
        in_column: Optional[int] = None,
        in_values: Optional[Sequence[Value]] = None,
        filters: Sequence[Filter] = (),
        returning: bool = False,
    ) -> None:
        """Queue ``index.decrement(...)``: a row count, or the old rows with ``returning``."""
        self._modify(
            "-", index, key, values, op, limit, offset, in_column, in_values, filters, returning
        )


def convert_all(calls: Sequence[Call[Any]], replies: Sequence[Reply], raise_errors: bool) -> List[Any]:
    """The results of a batch, in order.

    With ``raise_errors`` the first error answer is raised once every answer
    has been read (the connection stays usable); without, each error is put
    in its request's place as the exception object.
    """
    results: List[Any] = []
    first: Optional[HandlerSocketError] = None
    for call, reply in zip(calls, replies):
        try:
            results.append(call.convert(reply))
        except HandlerSocketError as exc:
            if first is None:
                first = exc
            results.append(exc)
    if raise_errors and first is not None:
        raise first
    return results
