"""A strict HTTP/1.1 client over a plain socket, for the tests of what goes on the wire: it sends
requests on one keep-alive connection and parses each answer by RFC 9112 (status line, header
fields, the body by ``transfer-encoding: chunked`` or ``content-length``), failing on anything a
strict parser refuses, so a desynchronised connection shows up as the next answer not parsing.
Every read has a socket timeout, never a wall-clock assertion."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field

__all__ = ["Answer", "Connection", "Malformed", "answer_to", "post"]

_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([1-5][0-9][0-9]) [\t -~\x80-\xff]*")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([\t -~\x80-\xff]*?)[ \t]*")
_NO_BODY = (204, 304)


class Malformed(AssertionError):
    """An answer a strict HTTP/1.1 parser refuses."""


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    complete: bool = True  # False: the connection ended before the body did
    ended: str = "open"  # after the answer: open (kept alive), eof or reset

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]


@dataclass
class Connection:
    """One connection to ``host:port``; ``timeout``: the most any read waits."""

    host: str
    port: int
    timeout: float = 5.0
    _buffer: bytes = b""
    _sock: socket.socket | None = field(default=None, repr=False)
    closed: str = ""

    def __enter__(self) -> Connection:
        self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sock is not None:
            self._sock.close()

    def send(self, data: bytes) -> None:
        assert self._sock is not None
        self._sock.sendall(data)

    def _more(self) -> bool:
        """Read what comes; False at the end of the connection (a FIN or a reset)."""
        assert self._sock is not None
        if self.closed:
            return False
        try:
            data = self._sock.recv(65536)
        except ConnectionResetError:
            self.closed = "reset"
            return False
        if not data:
            self.closed = "eof"
            return False
        self._buffer += data
        return True

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            if not self._more():
                raise Malformed(f"the connection ended ({self.closed}) inside a line: "
                                f"{self._buffer[:200]!r}")
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def _exactly(self, size: int) -> tuple[bytes, bool]:
        while len(self._buffer) < size:
            if not self._more():
                data, self._buffer = self._buffer, b""
                return data, False
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data, True

    def _chunked(self) -> tuple[bytes, bool]:
        body = b""
        while True:
            try:
                size_line = self._line()
            except Malformed:
                return body, False
            if not re.fullmatch(rb"[0-9a-fA-F]+", size_line):
                raise Malformed(f"not a chunk size: {size_line[:100]!r}")
            size = int(size_line, 16)
            data, whole = self._exactly(size)
            body += data
            if not whole:
                return body, False
            if size == 0:
                trailer = self._line()
                if trailer:
                    raise Malformed(f"a trailer field after the last chunk: {trailer!r}")
                return body, True
            if self._line() != b"":
                raise Malformed("a chunk not followed by CRLF")

    def ends(self) -> bool:
        """Whether the connection ends (a FIN or a reset) with nothing more sent; a socket
        timeout if it stays open."""
        while self._more():
            pass
        return not self._buffer.strip(b"0\r\n")  # at most a chunked body's last chunk

    def read_answer(self) -> Answer:
        """The next answer, parsed strictly (``Malformed`` otherwise)."""
        line = self._line()
        match = _STATUS_LINE.fullmatch(line)
        if match is None:
            raise Malformed(f"not an HTTP/1.1 status line: {line[:200]!r}")
        status = int(match.group(1))
        headers: list[tuple[str, str]] = []
        while (line := self._line()) != b"":
            field_match = _FIELD.fullmatch(line)
            if field_match is None:
                raise Malformed(f"not a header field: {line[:200]!r}")
            headers.append((field_match.group(1).decode("latin-1").lower(),
                            field_match.group(2).decode("latin-1")))
        answer = Answer(status, headers)
        lengths = answer.header("content-length")
        codings = answer.header("transfer-encoding")
        if lengths and codings:
            raise Malformed(f"both content-length {lengths} and transfer-encoding {codings}")
        if len(set(lengths)) > 1 or any(not v.isdigit() for v in lengths):
            raise Malformed(f"content-length {lengths}")
        if status < 200 or status in _NO_BODY:
            if lengths and status == 204:
                raise Malformed("a content-length on a 204")
            return answer
        if codings:
            if [c.strip().lower() for c in ",".join(codings).split(",")] != ["chunked"]:
                raise Malformed(f"transfer-encoding {codings}")
            answer.body, answer.complete = self._chunked()
        elif lengths:
            answer.body, answer.complete = self._exactly(int(lengths[0]))
        else:  # read to the end of the connection
            while self._more():
                pass
            answer.body, self._buffer = self._buffer, b""
        answer.ended = self.closed or "open"
        return answer


def post(path: str, body: bytes, host: str = "127.0.0.1") -> bytes:
    """A keep-alive ``POST`` of a JSON body, as bytes."""
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


def answer_to(host: str, port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """What a server answers a request of which only ``data`` was sent (the rest of a declared
    body never is): its head and its body, read by its length."""
    with socket.create_connection((host, port), timeout=timeout) as sock, \
            sock.makefile("rb") as stream:
        sock.sendall(data)
        answer = b""
        while not answer.endswith(b"\r\n\r\n"):
            line = stream.readline()  # socket.timeout here: nothing came back in time
            assert line, f"the server closed the connection after {answer!r}"
            answer += line
        length = re.search(rb"\r\ncontent-length: (\d+)\r\n", answer.lower())
        assert length is not None, answer
        return answer + stream.read(int(length.group(1)))
