"""The base of every sqllock exception (errors.py derives one per status)."""
from __future__ import annotations

from typing import Optional


class Error(Exception):
    """A status other than SQLLOCK_OK from the C library.

    ``str(e)`` is the library's own message (``sqllock_errmsg()``), which
    names what was wrong and includes the database's message where there
    is one; it never contains a password. ``status`` is the C status code,
    ``errname`` its name (``"SQLLOCK_BUSY"``), ``description`` the
    sentence of the C status table, and ``retryable`` says whether the
    same operation may simply be tried again (``sqllock_retryable()``).

    Each status has its own subclass (``sqllock.Busy``,
    ``sqllock.Timeout``, ...): catch those, or ``sqllock.Error`` for all.
    """

    status: int = -1
    errname: str = "SQLLOCK_UNKNOWN"
    description: str = "unknown status code"
    retryable: bool = False

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None and status != type(self).status:
            # A code this binding has no class for (a newer library).
            self.status = status

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.message)
