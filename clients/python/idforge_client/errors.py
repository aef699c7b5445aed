"""The exceptions of the idforge client (docs/clients.md, "Errors")."""

from __future__ import annotations

from typing import List, Optional, Tuple


class IdforgeError(Exception):
    """A server refused the request itself (a bad tag, a bad count, ...).

    ``code`` is the server's error code (``not_found``, ``invalid_argument``,
    ``out_of_range``, ...), ``message`` its text, ``server`` the URL of the server
    that answered and ``status`` the HTTP status (``None`` for the Redis protocol).
    Such a request is never retried on another server: every server would give the
    same answer.
    """

    def __init__(self, message: str, code: str = "error", server: Optional[str] = None,
                 status: Optional[int] = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.server = server
        self.status = status

    def __str__(self) -> str:
        where = f" (from {self.server})" if self.server else ""
        return f"{self.code}: {self.message}{where}"

    def _copy(self) -> "IdforgeError":
        # One failed refill may be reported to several waiting threads; each raises
        # its own instance so that tracebacks do not mix.
        return IdforgeError(self.message, self.code, self.server, self.status)


class IdforgeUnavailable(IdforgeError):
    """No server could answer: every server failed, timed out or was backing off.

    ``errors`` lists ``(server URL, why)`` for every server of the client, in the
    order of the client's list; the message says the same.
    """

    def __init__(self, message: str, errors: Optional[List[Tuple[str, str]]] = None):
        super().__init__(message, code="unavailable")
        self.errors = list(errors or [])

    def __str__(self) -> str:
        return self.message

    @property
    def servers(self) -> List[dict]:
        """The same as ``errors``, as ``[{"url": ..., "error": ...}]``."""
        return [{"url": url, "error": why} for url, why in self.errors]

    def _copy(self) -> "IdforgeUnavailable":
        return IdforgeUnavailable(self.message, self.errors)
