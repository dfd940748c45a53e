"""The reaper thread (contract P1-P4): deletes expired lease rows."""
from __future__ import annotations

import ctypes
import dataclasses
import threading
from ctypes import byref, c_void_p
from typing import Any, Optional

from . import _convert as cv
from . import _lib, errors
from ._lib import lib


@dataclasses.dataclass(frozen=True)
class ReaperStats:
    """A running reaper's counters, copied at one moment."""

    reaped: int          #: rows deleted
    passes: int          #: passes completed, failed ones included
    errors: int          #: passes that failed
    last_status: int     #: status of the last pass (0: success)
    last_error: str      #: its message; "" after a success


class Reaper:
    """A thread of the C library, with its own connection to `url`, that
    deletes lease rows expired more than `grace` ago: a pass at once,
    then every `interval` (default 60 s), `batch` rows per statement.
    Errors of a pass are counted in stats(), not raised. Stop it with
    stop() (prompt, P3), or use it as a context manager. The reaper's
    calls are thread-safe."""

    def __init__(self, url: str, *, interval: Optional[cv.Duration] = None,
                 grace: Optional[cv.Duration] = None, batch: int = 0,
                 connect_timeout: Optional[cv.Duration] = None,
                 statement_timeout: Optional[cv.Duration] = None) -> None:
        self._lock = threading.Lock()
        self._h: Optional[int] = None
        dbo = _lib.Options.init(
            connect_timeout_ms=cv.duration_ms(connect_timeout,
                                              "connect_timeout"),
            statement_timeout_ms=cv.duration_ms(statement_timeout,
                                                "statement_timeout"))
        opts = _lib.ReaperOptions.init(
            interval_ms=cv.duration_ms(interval, "interval"),
            grace_ms=cv.duration_ms(grace, "grace"), batch=batch,
            db_options=ctypes.pointer(dbo))
        why = ctypes.create_string_buffer(512)
        h = c_void_p()
        rc = lib.sqllock_reaper_start(cv.text(url, "url"), byref(opts),
                                      byref(h), why, len(why))
        if rc != _lib.OK:
            raise _lib.error_for(rc, why.value)
        self._h = h.value

    def stats(self) -> ReaperStats:
        """The counters (sqllock_reaper_stats_get())."""
        out = _lib.ReaperStats()
        with self._lock:
            if self._h is None:
                raise errors.Misuse("the reaper was stopped")
            rc = lib.sqllock_reaper_stats_get(self._h, byref(out))
        if rc != _lib.OK:
            raise _lib.error_for(rc, None)
        return ReaperStats(out.reaped, out.passes, out.errors,
                           out.last_status,
                           out.last_error.decode("utf-8", "replace"))

    def stop(self) -> None:
        """Wakes the thread, waits for it to end (within one statement)
        and frees it; stopping twice is harmless."""
        with self._lock:
            if self._h is not None:
                lib.sqllock_reaper_stop(self._h)
                self._h = None

    @property
    def running(self) -> bool:
        return self._h is not None

    def __enter__(self) -> "Reaper":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:
            pass


def start_reaper(url: str, **options: Any) -> Reaper:
    """Starts a Reaper on `url` (see Reaper for the options)."""
    return Reaper(url, **options)
