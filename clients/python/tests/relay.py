"""A TCP relay between a client and a real server, for breaking connections.

The client connects to the relay; every connection is forwarded byte for
byte to the server. A test can then cut every connection (as a server
restart or a network failure would), refuse new ones, let requests reach
the server and drop its answers (a write applied whose answer is lost), or
hold the answers back until some number of request lines has come in (a
client that waits for each answer before the next request never gets one).
"""

from __future__ import annotations

import socket
import threading
from typing import List, Tuple


class Relay:
    """Forwards 127.0.0.1:<port> to ``target``; counts the connections it accepted."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.accepted = 0
        #: Close each new connection at once, as a server that is going away.
        self.refuse = False
        #: Drop the server's answers and close the connection when one comes.
        self.drop_answers = False
        #: Request lines seen from clients so far.
        self.request_lines = 0
        self._hold_until = 0
        self._released = threading.Event()
        self._released.set()
        self._pairs: List[Tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                refuse = self.refuse or self._closed
            if refuse:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, answers: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if answers:
                    if self.drop_answers:
                        break
                    self._released.wait(10)
                else:
                    with self._lock:
                        self.request_lines += data.count(b"\n")
                        if self.request_lines >= self._hold_until:
                            self._released.set()
                dst.sendall(data)
        except OSError:
            pass
        self._close_pair(src, dst)

    def _close_pair(self, a: socket.socket, b: socket.socket) -> None:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def hold_answers(self, lines: int) -> None:
        """Forward no answer until ``lines`` more request lines have come in."""
        with self._lock:
            self._hold_until = self.request_lines + lines
            self._released.clear()

    def cut(self) -> None:
        """Close every forwarded connection, on both sides."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, upstream in pairs:
            self._close_pair(client, upstream)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self._listener.close()
        self.cut()
