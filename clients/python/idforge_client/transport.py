"""One idforge server as the client sees it: its URL, its kept-alive connections
(HTTP/1.1 or the Redis protocol, RESP2, on plain sockets) and one request with a
deadline covering connect, send and the whole answer."""

from __future__ import annotations

import errno
import json
import socket
import threading
import time
import urllib.parse
from typing import List, Optional, Tuple

from .errors import IdforgeError

# docs/clients.md: the answers that say the request itself is wrong (every server
# would answer the same). Any other error answer counts as the server failing, and the
# request moves on to the next server (fetching IDs is always safe to retry).
WRONG_REQUEST_CODES = frozenset({"invalid_argument", "out_of_range", "not_found"})
WRONG_REQUEST_STATUSES = frozenset({400, 404, 409})

# kind -> (HTTP route, RESP command)
ROUTES = {
    "snowflake": ("/v1/snowflake", b"ID.SNOWFLAKE"),
    "segment": ("/v1/segment/", b"ID.NEXT"),
    "uuid7": ("/v1/uuid7", b"ID.UUID7"),
    "ulid": ("/v1/ulid", b"ID.ULID"),
}
INTEGER_KINDS = ("snowflake", "segment")

_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 16 * 1024 * 1024
_IDLE_CONNECTIONS = 8  # kept per server; more concurrent requests open and close their own


class ServerFailure(Exception):
    """The server did not answer usefully: try another one."""

    def __init__(self, reason: str, clean: bool = False):
        super().__init__(reason)
        self.reason = reason
        # True when nothing of an answer arrived and the connection was a reused one:
        # the server may just have closed it while idle, so one fresh try is due.
        self.clean = clean


def _reason(exc: BaseException, timeout_ms: int) -> str:
    if isinstance(exc, socket.timeout):
        return f"timed out after {timeout_ms} ms"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, BrokenPipeError):
        return "connection closed while sending"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host: {exc.strerror or exc}"
    if isinstance(exc, OSError):
        name = errno.errorcode.get(exc.errno or 0, "")
        text = exc.strerror or str(exc)
        return f"{text} ({name})" if name else text
    return str(exc)


def parse_server_url(url: str) -> Tuple[str, str, int]:
    """``http://HOST:PORT`` or ``redis://HOST:PORT`` -> (scheme, host, port)."""
    if not isinstance(url, str):
        raise ValueError(f"a server is a URL string, got {url!r}")
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "redis"):
        raise ValueError(f"server {url!r}: the scheme must be http:// (the JSON API) or "
                         "redis:// (the Redis protocol)")
    try:
        port = parts.port
    except ValueError as e:
        raise ValueError(f"server {url!r}: {e}") from None
    if not parts.hostname:
        raise ValueError(f"server {url!r} has no host")
    if parts.username or parts.password:
        raise ValueError(f"server {url!r}: idforge servers take no user or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"server {url!r}: give only scheme://HOST:PORT")
    if port is None:
        port = 80 if scheme == "http" else 6380  # URL's default; idforge's RESP port
    return scheme, parts.hostname, port


class _Conn:
    """A socket with a read buffer; every operation checks the request's deadline."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = bytearray()
        self.used = False  # has answered a request before (kept alive)
        self.got_bytes = False  # bytes of the current answer arrived
        self.reusable = True  # False once the server said it closes the connection

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def _settimeout(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline passed")
        self.sock.settimeout(left)

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            self._settimeout(deadline)
            n = self.sock.send(view)
            view = view[n:]

    def fill(self, deadline: float) -> None:
        self._settimeout(deadline)
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionResetError(errno.ECONNRESET, "the server closed the connection")
        self.got_bytes = True
        self.buf += data

    def read_line(self, deadline: float, limit: int = _MAX_HEADER_BYTES) -> bytes:
        start = 0
        while True:
            i = self.buf.find(b"\r\n", start)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            if len(self.buf) > limit:
                raise ServerFailure("an answer line is too long")
            start = max(0, len(self.buf) - 1)
            self.fill(deadline)

    def read_exact(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            self.fill(deadline)
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_to_eof(self, deadline: float) -> bytes:
        while True:
            if len(self.buf) > _MAX_BODY_BYTES:
                raise ServerFailure("the answer is too large")
            self._settimeout(deadline)
            data = self.sock.recv(65536)
            if not data:
                out = bytes(self.buf)
                self.buf.clear()
                return out
            self.buf += data


class Server:
    """One server of a client: URL, back-off state (kept by the client) and a pool of
    idle connections."""

    def __init__(self, url: str):
        self.scheme, self.host, self.port = parse_server_url(url)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{self.scheme}://{host}:{self.port}"
        self._host_header = f"{host}:{self.port}"
        self._idle: List[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False
        # Failover state, guarded by the client's lock.
        self.failures = 0
        self.until = 0.0  # monotonic time when its back-off ends
        self.last_failure = 0.0
        self.last_error = ""

    # -- connections -------------------------------------------------------------------

    def _take(self) -> Optional[_Conn]:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _give_back(self, conn: _Conn) -> None:
        conn.used = True
        with self._lock:
            if (not self._closed and conn.reusable and not conn.buf
                    and len(self._idle) < _IDLE_CONNECTIONS):
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self, deadline: float) -> _Conn:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline passed")
        sock = socket.create_connection((self.host, self.port), timeout=left)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(sock)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- one request -------------------------------------------------------------------

    def fetch(self, kind: str, tag: Optional[str], count: int, timeout_ms: int) -> list:
        """``count`` IDs of ``kind`` (ints for snowflake and segment, text otherwise).

        Raises ServerFailure (try another server) or IdforgeError (the request is wrong).
        """
        deadline = time.monotonic() + timeout_ms / 1000.0
        conn = self._take()
        while True:
            fresh = conn is None
            try:
                if fresh:
                    conn = self._connect(deadline)
                conn.got_bytes = False
                if self.scheme == "http":
                    ids = self._http(conn, kind, tag, count, deadline)
                else:
                    ids = self._resp(conn, kind, tag, count, deadline)
            except IdforgeError:
                self._give_back(conn)  # a complete answer: the connection is fine
                raise
            except ServerFailure:
                if conn is not None:
                    conn.close()
                raise
            except OSError as e:
                reused = conn is not None and conn.used and not conn.got_bytes
                if conn is not None:
                    conn.close()
                if reused and not isinstance(e, socket.timeout):
                    # A kept-alive connection the server has closed (idle timeout, a
                    # restart): one fresh connection within the same deadline.
                    conn = None
                    continue
                raise ServerFailure(_reason(e, timeout_ms)) from None
            self._give_back(conn)
            if len(ids) != count:
                # docs/clients.md: any answer other than the IDs asked for is a failure,
                # as in the C++ and JavaScript clients.
                raise ServerFailure(f"answered {len(ids)} IDs, asked for {count}")
            return ids

    def _http(self, conn: _Conn, kind: str, tag: Optional[str], count: int,
              deadline: float) -> list:
        path = ROUTES[kind][0]
        if kind == "segment":
            path += urllib.parse.quote(tag, safe="")
        request = (f"GET {path}?count={count} HTTP/1.1\r\nHost: {self._host_header}\r\n"
                   "User-Agent: idforge-python\r\nAccept: application/json\r\n\r\n")
        conn.send(request.encode("ascii"), deadline)
        status_line = conn.read_line(deadline)
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ServerFailure(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(parts[1])
        length = None
        close = parts[0] == b"HTTP/1.0"
        total = 0
        while True:
            line = conn.read_line(deadline)
            total += len(line) + 2
            if total > _MAX_HEADER_BYTES:
                raise ServerFailure("the answer's headers are too large")
            if not line:
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            value = value.strip()
            if name == b"content-length":
                if not value.isdigit() or int(value) > _MAX_BODY_BYTES:
                    raise ServerFailure(f"bad Content-Length {value[:40]!r}")
                length = int(value)
            elif name == b"connection":
                lower = value.lower()
                close = b"close" in lower or (close and b"keep-alive" not in lower)
            elif name == b"transfer-encoding":
                raise ServerFailure("a Transfer-Encoding answer (idforge sends Content-Length)")
        if length is None:
            body = conn.read_to_eof(deadline)
            close = True
        else:
            body = conn.read_exact(length, deadline)
        if close:
            conn.reusable = False

        if not 200 <= status < 300:
            code, message = _http_error(body, status)
            if status in WRONG_REQUEST_STATUSES:
                raise IdforgeError(message, code, self.url, status)
            raise ServerFailure(f"HTTP {status} {code}: {message}")
        try:
            doc = json.loads(body)
            ids = doc["ids"]
            if not isinstance(ids, list) or not ids:
                raise ValueError("no ids")
            if kind in INTEGER_KINDS:
                ids = [int(x) for x in ids]
            elif not all(isinstance(x, str) for x in ids):
                raise ValueError("ids are not text")
        except (ValueError, KeyError, TypeError) as e:
            raise ServerFailure(f"a malformed answer ({e}): {body[:80]!r}") from None
        return ids

    def _resp(self, conn: _Conn, kind: str, tag: Optional[str], count: int,
              deadline: float) -> list:
        args = [ROUTES[kind][1]]
        if kind == "segment":
            args.append(tag.encode("utf-8"))
        args.append(str(count).encode("ascii"))
        out = bytearray(b"*%d\r\n" % len(args))
        for a in args:
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        conn.send(bytes(out), deadline)
        reply = read_reply(conn, deadline)
        if isinstance(reply, RespError):
            # -ERR not_found: unknown tag 'x' ... (src/server/resp/resp_reply.cc)
            word, _, rest = reply.text.partition(" ")
            code, colon, message = rest.partition(":")
            code = code.strip()
            if word == "ERR" and colon and code in WRONG_REQUEST_CODES:
                raise IdforgeError(message.strip(), code, self.url, None)
            raise ServerFailure(reply.text)
        if not isinstance(reply, list) or not reply:
            raise ServerFailure(f"unexpected answer {reply!r:.80}")
        try:
            if kind in INTEGER_KINDS:
                if not all(isinstance(x, int) for x in reply):
                    raise ValueError("not integers")
                return reply
            return [x.decode("ascii") for x in reply]
        except (ValueError, AttributeError, UnicodeDecodeError) as e:
            raise ServerFailure(f"a malformed answer ({e})") from None


def _http_error(body: bytes, status: int) -> Tuple[str, str]:
    try:
        err = json.loads(body)["error"]
        return str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        text = body[:200].decode("utf-8", "replace").strip()
        return f"http_{status}", text or f"HTTP {status}"


class RespError:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"-{self.text}"


def read_reply(conn: _Conn, deadline: float, depth: int = 0):
    """One RESP2 reply (RESP3 scalars too): int, bytes, None, list or RespError."""
    line = conn.read_line(deadline)
    if not line:
        raise ServerFailure("an empty RESP line")
    t, rest = line[:1], line[1:]
    if t == b"+":
        return rest
    if t == b"-":
        return RespError(rest.decode("utf-8", "replace"))
    if t == b":":
        try:
            return int(rest)
        except ValueError:
            raise ServerFailure(f"bad RESP integer {rest[:40]!r}") from None
    if t in (b"$", b"*", b"~", b">", b"%"):
        try:
            n = int(rest)
        except ValueError:
            raise ServerFailure(f"bad RESP length {rest[:40]!r}") from None
        if n < 0:
            return None
        if t == b"$":
            if n > _MAX_BODY_BYTES:
                raise ServerFailure("a RESP string is too large")
            data = conn.read_exact(n + 2, deadline)
            return data[:-2]
        if depth > 8 or n > 1_000_000:
            raise ServerFailure("a RESP array is too large or too deep")
        if t == b"%":
            n *= 2
        return [read_reply(conn, deadline, depth + 1) for _ in range(n)]
    if t == b"_":
        return None
    raise ServerFailure(f"not a RESP answer: {line[:80]!r}")
