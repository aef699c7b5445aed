"""The idforge client: a list of servers with failover and back-off, and a local
buffer per kind and tag refilled in the background (docs/clients.md)."""

from __future__ import annotations

import collections
import queue
import threading
import time
import weakref
from typing import Dict, List, Optional, Sequence, Tuple, Union

from . import layout as _layout
from .errors import IdforgeError, IdforgeUnavailable
from .transport import Server, ServerFailure

KINDS = ("snowflake", "segment", "uuid7", "ulid")

_IDLE, _QUEUED, _RUNNING = 0, 1, 2
_NO_ID = object()


class _NothingTried(Exception):
    """A background refill found every server backing off and tried none."""


class _Buffer:
    """IDs of one kind (and tag), in batches: ``chunks`` holds [fetched_at, ids
    reversed] so that taking one is a list pop."""

    __slots__ = ("kind", "tag", "what", "lock", "cond", "chunks", "size", "max_age",
                 "state", "gen", "error", "retry_at", "dropped", "refills", "waiters")

    def __init__(self, kind: str, tag: Optional[str], max_age_s: float):
        self.kind = kind
        self.tag = tag
        self.what = f"{kind} IDs" if tag is None else f"segment IDs of tag '{tag}'"
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.chunks: collections.deque = collections.deque()
        self.size = 0
        self.max_age = max_age_s  # 0: no age limit
        self.state = _IDLE
        self.gen = 0  # counts finished refills
        self.error: Optional[IdforgeError] = None  # of the last refill, None if it worked
        self.retry_at = 0.0  # no background refill before this (monotonic)
        self.dropped = 0  # IDs dropped by the age limit
        self.refills = 0
        # Callers waiting on an empty buffer, in order: a refill hands each its ID
        # first (a one-item list), so busy threads cannot starve a waiting one.
        self.waiters: collections.deque = collections.deque()

    def expire(self, now: float) -> None:
        chunks = self.chunks
        while chunks and now - chunks[0][0] > self.max_age:
            n = len(chunks.popleft()[1])
            self.size -= n
            self.dropped += n

    def take(self):
        chunk = self.chunks[0]
        ids = chunk[1]
        value = ids.pop()
        if not ids:
            self.chunks.popleft()
        self.size -= 1
        return value


def _check_int(name: str, value, low: int, high: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


class Client:
    """IDs from a list of idforge servers, through the loss of any of them.

    ``Client(["http://10.0.0.1:8080", "redis://10.0.0.2:6380"])``; then
    ``snowflake()``, ``segment(tag)``, ``uuid7()``, ``ulid()``. Thread-safe. Options
    as in docs/clients.md: ``timeout_ms`` per request (connect, send and the whole
    answer), ``batch`` IDs per request, a background refill when fewer than
    ``refill_below`` (default batch // 2) are left, time-ordered IDs older than
    ``max_age_ms`` dropped (segment IDs: ``segment_max_age_ms``, 0 = no limit), a
    failed server skipped for ``backoff_ms`` doubling to ``max_backoff_ms``;
    ``buffer=False`` (or ``batch=1``) makes every call one request.
    """

    def __init__(self, servers: Union[str, Sequence[str]], timeout_ms: int = 1000,
                 batch: int = 256, refill_below: Optional[int] = None,
                 max_age_ms: Optional[int] = 2000, segment_max_age_ms: Optional[int] = 0,
                 backoff_ms: int = 500, max_backoff_ms: int = 30000, buffer: bool = True):
        if isinstance(servers, str):
            servers = [servers]
        servers = list(servers)
        if not servers:
            raise ValueError("a Client needs at least one server URL")
        self._servers = [Server(url) for url in servers]
        self._timeout_ms = _check_int("timeout_ms", timeout_ms, 1)
        self._batch = _check_int("batch", batch, 1)
        if refill_below is None:
            refill_below = self._batch // 2
        self._refill_below = _check_int("refill_below", refill_below, 0, self._batch)
        self._max_age_s = _check_int("max_age_ms", max_age_ms or 0, 0) / 1000.0
        self._segment_max_age_s = _check_int("segment_max_age_ms", segment_max_age_ms or 0,
                                             0) / 1000.0
        self._backoff_s = _check_int("backoff_ms", backoff_ms, 0) / 1000.0
        self._max_backoff_s = _check_int("max_backoff_ms", max_backoff_ms, backoff_ms) / 1000.0
        self._buffered = bool(buffer) and self._batch > 1

        self._lock = threading.Lock()  # the servers' failover state and _current
        self._current = 0  # the server that answered last
        self._buffers: Dict[Tuple[str, Optional[str]], _Buffer] = {}
        self._buffers_lock = threading.Lock()
        self._queue: "queue.SimpleQueue[Optional[_Buffer]]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._thread_lock = threading.Lock()
        self._closed = False

    # -- the IDs -----------------------------------------------------------------------

    def snowflake(self) -> int:
        """The next Snowflake ID (an int)."""
        return self._next("snowflake", None)

    def segment(self, tag: str) -> int:
        """The next segment ID of ``tag`` (an int)."""
        return self._next("segment", _check_tag(tag))

    def uuid7(self) -> str:
        """The next UUIDv7, as text."""
        return self._next("uuid7", None)

    def ulid(self) -> str:
        """The next ULID, as text."""
        return self._next("ulid", None)

    def next(self, kind: str = "snowflake", tag: Optional[str] = None):
        """The next ID of ``kind`` (snowflake, segment with ``tag``, uuid7, ulid)."""
        if kind == "segment":
            return self._next("segment", _check_tag(tag))
        if kind not in KINDS or tag is not None:
            raise ValueError(f"kind must be one of {', '.join(KINDS)} (a tag only with "
                             f"segment), got {kind!r}")
        return self._next(kind, None)

    def snowflakes(self, n: int) -> List[int]:
        """``n`` Snowflake IDs (from the buffer; without it, in requests of ``batch``)."""
        return self._many("snowflake", None, n)

    def segments(self, tag: str, n: int) -> List[int]:
        return self._many("segment", _check_tag(tag), n)

    def uuid7s(self, n: int) -> List[str]:
        return self._many("uuid7", None, n)

    def ulids(self, n: int) -> List[str]:
        return self._many("ulid", None, n)

    parse = staticmethod(_layout.parse)

    # -- looking inside ----------------------------------------------------------------

    def buffered(self, kind: str = "snowflake", tag: Optional[str] = None) -> int:
        """How many IDs the buffer of ``kind`` (and ``tag``) holds now."""
        buf = self._buffers.get((kind, tag))
        if buf is None:
            return 0
        with buf.lock:
            return buf.size

    def server_states(self) -> List[dict]:
        """Each server's failover state: url, failures in a row, ms of back-off left,
        the last error."""
        now = time.monotonic()
        with self._lock:
            return [{"url": s.url, "failures": s.failures,
                     "backing_off_ms": max(0, round((s.until - now) * 1000)),
                     "last_error": s.last_error, "current": i == self._current}
                    for i, s in enumerate(self._servers)]

    @property
    def servers(self) -> List[str]:
        return [s.url for s in self._servers]

    # -- closing -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop the refill thread and close the connections. The buffered IDs are
        dropped (never issued again by the servers: a gap)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        with self._buffers_lock:
            buffers = list(self._buffers.values())
        for buf in buffers:
            with buf.lock:
                buf.chunks.clear()
                buf.size = 0
                buf.cond.notify_all()
        for s in self._servers:
            s.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=0.2)  # a daemon: one in a request ends on its own

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"Client({self.servers!r})"

    # -- the buffer ----------------------------------------------------------------------

    def _buffer(self, kind: str, tag: Optional[str]) -> _Buffer:
        key = (kind, tag)
        buf = self._buffers.get(key)
        if buf is None:
            with self._buffers_lock:
                buf = self._buffers.get(key)
                if buf is None:
                    max_age = self._segment_max_age_s if kind == "segment" else self._max_age_s
                    buf = _Buffer(kind, tag, max_age)
                    self._buffers[key] = buf
        return buf

    def _next(self, kind: str, tag: Optional[str]):
        if self._closed:
            raise _closed_error()
        if not self._buffered:
            return self._request(kind, tag, 1, must_try=True)[0][0]
        buf = self._buffers.get((kind, tag)) or self._buffer(kind, tag)
        with buf.lock:
            if buf.max_age:
                now = time.monotonic()
                buf.expire(now)
            if buf.size:
                value = buf.take()
                if buf.size < self._refill_below and buf.state == _IDLE:
                    self._maybe_refill(buf)
                return value
        return self._next_slow(buf)

    def _many(self, kind: str, tag: Optional[str], n: int) -> list:
        _check_int("n", n, 0)
        if self._buffered:
            return [self._next(kind, tag) for _ in range(n)]
        if self._closed:
            raise _closed_error()
        out: list = []
        while len(out) < n:
            out += self._request(kind, tag, min(self._batch, n - len(out)), must_try=True)[0]
        return out

    def _next_slow(self, buf: _Buffer):
        """The buffer is empty: wait for the refill in progress, or run one here, for at
        most timeout_ms times the number of servers."""
        wait_s = self._timeout_ms * len(self._servers) / 1000.0
        deadline = time.monotonic() + wait_s
        while True:
            with buf.lock:
                if self._closed:
                    raise _closed_error()
                if buf.max_age:
                    buf.expire(time.monotonic())
                if buf.size:
                    value = buf.take()
                    if buf.size < self._refill_below and buf.state == _IDLE:
                        self._maybe_refill(buf)
                    return value
                if buf.state == _RUNNING:
                    gen = buf.gen
                    slot = [_NO_ID]
                    buf.waiters.append(slot)
                    try:
                        while slot[0] is _NO_ID and buf.gen == gen and not self._closed:
                            left = deadline - time.monotonic()
                            if left <= 0:
                                raise IdforgeUnavailable(
                                    f"no {buf.what} within {round(wait_s * 1000)} ms "
                                    f"(timeout_ms x {len(self._servers)} servers): the refill "
                                    f"in progress has not finished; servers: "
                                    f"{self._describe_servers()}", self._server_errors())
                            buf.cond.wait(left)
                    finally:
                        if slot[0] is _NO_ID:
                            try:
                                buf.waiters.remove(slot)
                            except ValueError:
                                pass
                    if slot[0] is not _NO_ID:
                        return slot[0]
                    if buf.size == 0 and buf.error is not None:
                        raise buf.error._copy()
                    continue
                # Idle, or queued for the refill thread: this thread runs it now (the
                # refill thread skips a buffer no longer queued), in the time left.
                if deadline - time.monotonic() <= 0.001:
                    raise IdforgeUnavailable(
                        f"no {buf.what} within {round(wait_s * 1000)} ms (timeout_ms x "
                        f"{len(self._servers)} servers): other callers took the IDs of the "
                        f"refills; servers: {self._describe_servers()}", self._server_errors())
                buf.state = _RUNNING
            value = self._refill(buf, must_try=True, take_one=True, deadline=deadline)
            if value is not None:
                return value

    def _maybe_refill(self, buf: _Buffer) -> None:
        """Queue a background refill (called with buf.lock held, the buffer below
        refill_below and idle) unless a failed one asked to wait."""
        if buf.retry_at and time.monotonic() < buf.retry_at:
            return
        buf.state = _QUEUED
        self._queue.put(buf)
        if self._thread is None:
            with self._thread_lock:
                if self._thread is None:
                    # The thread holds the client weakly, so that a client dropped
                    # without close() is collected and its __del__ stops the thread.
                    self._thread = threading.Thread(
                        target=_refill_loop, args=(weakref.ref(self), self._queue),
                        daemon=True, name="idforge-client-refill")
                    self._thread.start()

    def _refill(self, buf: _Buffer, must_try: bool, take_one: bool,
                deadline: Optional[float] = None):
        """One request of ``batch`` IDs into ``buf`` (whose state is _RUNNING).

        must_try=False (the background): when every server is backing off, nothing is
        tried and a caller that finds the buffer empty will try. take_one: return the
        first ID to the calling thread. Errors are kept in buf.error and raised."""
        ids = None
        error: Optional[IdforgeError] = None
        try:
            ids, fetched_at = self._request(buf.kind, buf.tag, self._batch, must_try, deadline)
        except IdforgeError as e:
            error = e
        except _NothingTried:
            pass
        finally:
            with buf.lock:
                buf.state = _IDLE
                buf.gen += 1
                value = None
                if ids:
                    buf.refills += 1
                    buf.error = None
                    buf.retry_at = 0.0
                    if not self._closed:
                        ids = ids[::-1]
                        if take_one:
                            value = ids.pop()
                        while ids and buf.waiters:
                            buf.waiters.popleft()[0] = ids.pop()
                        if ids:
                            buf.chunks.append([fetched_at, ids])
                            buf.size += len(ids)
                elif error is not None:
                    buf.error = error
                    buf.retry_at = self._retry_time(error)
                else:  # nothing tried (background, every server backing off) or a surprise:
                    # a caller that finds the buffer empty tries, rather than failing
                    buf.error = None
                    buf.retry_at = self._retry_time(None)
                buf.cond.notify_all()
        if error is not None:
            raise error
        return value

    def _retry_time(self, error: Optional[IdforgeError]) -> float:
        """When a background refill may start again after one that got no IDs."""
        now = time.monotonic()
        if error is not None and not isinstance(error, IdforgeUnavailable):
            return now + self._backoff_s  # a wrong request: do not repeat it on every call
        with self._lock:
            return max(now, min(s.until for s in self._servers))

    # -- failover ------------------------------------------------------------------------

    def _request(self, kind: str, tag: Optional[str], count: int, must_try: bool,
                 deadline: Optional[float] = None) -> Tuple[list, float]:
        """``count`` IDs from the first server that answers, starting at the one that
        answered last and skipping those backing off; each server at most once, each
        try within timeout_ms (and what is left before ``deadline``, if given)."""
        servers = self._servers
        n = len(servers)
        with self._lock:
            start = self._current
        tried: Dict[int, str] = {}
        for k in range(n):
            i = (start + k) % n
            with self._lock:
                if time.monotonic() < servers[i].until:
                    continue
            if deadline is not None and deadline - time.monotonic() <= 0.001:
                break
            ids, t0, why = self._attempt(i, kind, tag, count, deadline)
            if ids is not None:
                return ids, t0
            tried[i] = why
        if not tried and not must_try:
            raise _NothingTried()
        if must_try:
            # Every server left is backing off: a waiting caller tries them too, the one
            # whose period ends first first (docs/clients.md), so a server just back
            # answers rather than the call failing untried there.
            with self._lock:
                rest = sorted((j for j in range(n) if j not in tried),
                              key=lambda j: servers[j].until)
            for i in rest:
                if tried and deadline is not None and deadline - time.monotonic() <= 0.001:
                    break
                ids, t0, why = self._attempt(i, kind, tag, count, deadline)
                if ids is not None:
                    return ids, t0
                tried[i] = why
        errors = self._server_errors(tried)
        raise IdforgeUnavailable(
            f"no idforge server could give {_what(kind, tag)}: "
            + "; ".join(f"{url} {why}" for url, why in errors), errors)

    def _attempt(self, i: int, kind: str, tag: Optional[str], count: int,
                 deadline: Optional[float] = None):
        server = self._servers[i]
        t0 = time.monotonic()
        timeout_ms = self._timeout_ms
        if deadline is not None:
            timeout_ms = max(1, min(timeout_ms, round((deadline - t0) * 1000)))
        try:
            ids = server.fetch(kind, tag, count, timeout_ms)
        except ServerFailure as f:
            self._failed(server, f.reason, t0)
            return None, t0, f.reason
        except IdforgeError:
            self._answered(i)  # the server is well; the request is wrong
            raise
        self._answered(i)
        return ids, t0, ""

    def _answered(self, i: int) -> None:
        with self._lock:
            s = self._servers[i]
            s.failures = 0
            s.until = 0.0
            s.last_error = ""
            self._current = i

    def _failed(self, server: Server, reason: str, started: float) -> None:
        with self._lock:
            now = time.monotonic()
            server.last_error = reason
            if server.last_failure >= started:
                return  # a failure another thread saw during this same attempt: counted
            server.failures += 1
            backoff = self._backoff_s * (2 ** min(server.failures - 1, 40))
            server.until = now + min(backoff, self._max_backoff_s)
            server.last_failure = now

    def _server_errors(self, tried: Optional[Dict[int, str]] = None) -> List[Tuple[str, str]]:
        """(url, why) for every server: its error in this request, or its back-off."""
        tried = tried or {}
        now = time.monotonic()
        out = []
        with self._lock:
            for i, s in enumerate(self._servers):
                if i in tried:
                    out.append((s.url, f"failed: {tried[i]}"))
                elif s.until > now:
                    out.append((s.url, f"skipped: backing off {round((s.until - now) * 1000)} "
                                       f"ms more after {s.failures} failure"
                                       f"{'s' if s.failures != 1 else ''} in a row "
                                       f"(last: {s.last_error})"))
                elif s.last_error:
                    out.append((s.url, f"last failed: {s.last_error}"))
                else:
                    out.append((s.url, "not tried"))
        return out

    def _describe_servers(self) -> str:
        return "; ".join(f"{url} {why}" for url, why in self._server_errors())


def _refill_loop(client_ref, q) -> None:
    """The refill thread of one client: runs the refills queued by next()."""
    while True:
        buf = q.get()
        if buf is None:
            return
        client = client_ref()
        if client is None or client._closed:
            return
        with buf.lock:
            if buf.state != _QUEUED:
                del client
                continue  # a caller that found the buffer empty runs it already
            buf.state = _RUNNING
        try:
            client._refill(buf, must_try=False, take_one=False)
        except IdforgeError:
            pass  # kept in buf.error; a caller meets it when the buffer is empty
        except Exception:  # noqa: BLE001 - the thread must outlive any surprise
            pass
        del client


def _what(kind: str, tag: Optional[str]) -> str:
    return f"{kind} IDs" if tag is None else f"segment IDs of tag '{tag}'"


def _closed_error() -> IdforgeError:
    return IdforgeError("the client is closed", code="closed")


def _check_tag(tag) -> str:
    if not isinstance(tag, str) or not tag:
        raise ValueError(f"a segment tag is a non-empty string, got {tag!r}")
    return tag
