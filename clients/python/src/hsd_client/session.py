"""What a connection must restore after reconnecting: its secret and indexes.

Shared by the blocking and the asyncio clients, with no I/O. Index ids are
allocated here, one per distinct :class:`IndexSpec` (opening the same index
with the same columns again reuses its id), and :meth:`Session.restore_calls`
lists the requests that bring a new connection to the state of the old one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from . import protocol
from .calls import Call, auth_call, expect_ok

__all__ = ["IndexSpec", "Session"]


@dataclass(frozen=True)
class IndexSpec:
    """What an open_index request names."""

    db: str
    table: str
    index: str
    columns: Tuple[str, ...]
    filter_columns: Tuple[str, ...] = ()

    def call(self, index_id: int) -> Call[None]:
        line = protocol.open_index_line(
            index_id, self.db, self.table, self.index, self.columns, self.filter_columns
        )
        return Call(line, False, expect_ok)


class Session:
    """The secret and the indexes opened on one logical connection."""

    def __init__(self, secret: Union[bytes, str, None] = None) -> None:
        self.secret = secret
        self._specs: Dict[int, IndexSpec] = {}
        self._ids: Dict[IndexSpec, int] = {}

    def lookup(self, spec: IndexSpec) -> Optional[int]:
        """The id under which this spec is already open, if it is."""
        return self._ids.get(spec)

    def next_id(self) -> int:
        """The id for the next index to open."""
        return len(self._specs)

    def opened(self, index_id: int, spec: IndexSpec) -> None:
        """Record that the server accepted open_index for this id."""
        self._specs[index_id] = spec
        self._ids[spec] = index_id

    @property
    def indexes(self) -> Dict[int, IndexSpec]:
        return dict(self._specs)

    def restore_calls(self) -> List[Call[None]]:
        """Authentication, then every open_index, in order: all of them reads."""
        calls: List[Call[None]] = []
        if self.secret is not None:
            calls.append(auth_call(self.secret))
        calls.extend(spec.call(index_id) for index_id, spec in self._specs.items())
        return calls
