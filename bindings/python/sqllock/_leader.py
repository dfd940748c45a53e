"""Leader election (contract M4): one leader at a time among candidates."""
from __future__ import annotations

import ctypes
import threading
import time
from ctypes import byref, c_int64, c_void_p
from typing import Any, Callable, Optional, Tuple

from . import _convert as cv
from . import _lib, errors
from ._db import Database, LeaderInfo
from ._lib import lib


class Leader:
    """A candidate of the election `name` on `url`: a thread of the C
    library, with connections of its own, that campaigns for the
    leadership and keeps it renewed (sqllock_leader_start()).

    Act only while `is_leader` is true (it turns false at the local
    deadline by itself) and fence each action with `token`. Callbacks run
    on the library's campaign thread, one at a time: on_elected(term),
    on_lost(term, error, message) -- `error` is None after a hand-over,
    else sqllock.Lost or sqllock.Timeout -- and on_observed(holder, term)
    for each new leader seen. A callback may read is_leader and token and
    call resign(), never stop(); an exception it raises is printed and
    dropped. resign() hands over (the next candidate is woken at once)
    and stays out of the next round until another candidate has been
    leader, however briefly, or `resign_hold` has passed; stop() resigns
    if leader and ends the candidate (or use it as a context manager). The candidate's calls are
    thread-safe.

    Without callbacks: ``wait_for_leadership(timeout)`` blocks until this
    candidate leads (True) or the time is up (False), and ``leader`` reads
    the election's current leader (holder, term, time left) from the
    database. With ``init=True`` (the default) the candidate first
    creates the sqllock tables if they are missing (as
    sqllock.connect(url, init=True); a current schema is only read)."""

    def __init__(self, url: str, name: str, *, ttl: cv.Duration,
                 holder: Optional[str] = None,
                 safety_margin: Optional[cv.Duration] = None,
                 renew_interval: Optional[cv.Duration] = None,
                 resign_hold: Optional[cv.Duration] = None,
                 on_elected: Optional[Callable[[int], Any]] = None,
                 on_lost: Optional[Callable[[int, Optional[errors.Error],
                                             str], Any]] = None,
                 on_observed: Optional[Callable[[str, int], Any]] = None,
                 connect_timeout: Optional[cv.Duration] = None,
                 statement_timeout: Optional[cv.Duration] = None,
                 init: bool = True) -> None:
        self._lock = threading.Lock()
        self._h: Optional[int] = None
        self._name = name
        self._url = url
        self._db: Any = None
        # Signalled on each election and loss (wait_for_leadership()).
        self._changed = threading.Condition(threading.Lock())
        self._timeouts = (connect_timeout, statement_timeout)
        if init:
            self._reader().init()
        self._dbo = _lib.Options.init(
            connect_timeout_ms=cv.duration_ms(connect_timeout,
                                              "connect_timeout"),
            statement_timeout_ms=cv.duration_ms(statement_timeout,
                                                "statement_timeout"))

        def elected(ctx: Any, h: Any, token: int) -> None:
            self._notify()
            if on_elected is not None:
                on_elected(token)

        def lost(ctx: Any, h: Any, token: int, status: int,
                 msg: Optional[bytes]) -> None:
            self._notify()
            if on_lost is not None:
                text = (msg or b"").decode("utf-8", "replace")
                err = None if status == _lib.OK else _lib.error_for(status,
                                                                    text)
                on_lost(token, err, text)

        def observed(ctx: Any, h: Any, who: Optional[bytes],
                     token: int) -> None:
            if on_observed is not None:
                on_observed((who or b"").decode("utf-8", "replace"), token)

        # Kept alive as long as the candidate: the C thread calls them.
        self._cbs = (_lib.LEADER_ELECTED_FN(elected),
                     _lib.LEADER_LOST_FN(lost),
                     _lib.LEADER_OBSERVED_FN(observed))
        self._holder = cv.text(holder, "holder")
        opts = _lib.LeaderOptions.init(
            ttl_ms=cv.duration_ms(ttl, "ttl"),
            safety_margin_ms=cv.duration_ms(safety_margin, "safety_margin"),
            renew_interval_ms=cv.duration_ms(renew_interval,
                                             "renew_interval"),
            resign_hold_ms=cv.duration_ms(resign_hold, "resign_hold"),
            holder=self._holder, db_options=ctypes.pointer(self._dbo),
            on_elected=self._cbs[0], on_lost=self._cbs[1],
            on_observed=self._cbs[2])
        why = ctypes.create_string_buffer(700)
        h = c_void_p()
        rc = lib.sqllock_leader_start(cv.text(url, "url"),
                                      cv.text(name, "name"), byref(opts),
                                      byref(h), why, len(why))
        if rc != _lib.OK:
            raise _lib.error_for(rc, why.value)
        self._h = h.value

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _reader(self) -> Any:
        """A Database of one connection on the URL, for init and reads."""
        with self._lock:
            if self._db is None:
                self._db = Database(self._url, max_connections=1,
                                    connect_timeout=self._timeouts[0],
                                    statement_timeout=self._timeouts[1])
            return self._db

    @property
    def name(self) -> str:
        return self._name

    def wait_for_leadership(self, timeout: Optional[float] = None) -> bool:
        """Blocks until this candidate is the leader (True), or `timeout`
        seconds have passed (False; None waits for ever). Leadership can
        end right after: act only while ``is_leader``, and fence each
        action with ``token``. Added in 0.10.0."""
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must not be negative")
        end = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not self.is_leader:
                if self._h is None:
                    raise errors.Misuse("the candidate was stopped")
                left = 0.1 if end is None else min(0.1, end - time.monotonic())
                if left <= 0:
                    return False
                # In slices: the local deadline ends a leadership without
                # a callback, and a stop() ends the wait.
                self._changed.wait(left)
        return True

    @property
    def leader(self) -> Optional[LeaderInfo]:
        """The election's current leader as the database has it (this
        candidate or another), or None when there is none: one read on a
        connection of its own. Added in 0.10.0."""
        return leader_get(self._reader(), self._name)

    @property
    def is_leader(self) -> bool:
        """True while leader and before the local deadline (L6)."""
        h = self._h
        return h is not None and bool(lib.sqllock_leader_is_leader(h))

    @property
    def token(self) -> int:
        """The term (fencing token) while leader, else 0."""
        h = self._h
        return lib.sqllock_leader_token(h) if h is not None else 0

    @property
    def remaining(self) -> float:
        """Seconds the leader may still act without a renewal (0 when not
        leader)."""
        h = self._h
        return lib.sqllock_leader_remaining_ms(h) / 1000 if h else 0.0

    def health(self) -> Tuple[str, Optional[float]]:
        """The candidate's health, for a readiness probe
        (sqllock_leader_health()): ``("ok", age)`` while it leads and its
        last renewal (or grant), `age` seconds ago, is within the ttl
        minus the safety margin; ``("stalled", age)`` when its term is
        not over yet but its local deadline passed without a renewal (a
        database that stopped answering) -- it must not act; and
        ``("not_leader", None)`` otherwise (a follower, between terms,
        resigned, stopped). Thread-safe. Added in 0.11.0."""
        age = c_int64(-1)
        h = self._h
        if h is None:
            return ("not_leader", None)
        rc = lib.sqllock_leader_health(h, byref(age))
        if rc == _lib.OK:
            return ("ok", age.value / 1000)
        if rc == errors.Timeout.status:
            return ("stalled", age.value / 1000)
        return ("not_leader", None)

    def healthy(self) -> bool:
        """True while this candidate leads within its local deadline:
        ``health()[0] == "ok"`` (a readiness probe's answer). Added in
        0.11.0."""
        return self.health()[0] == "ok"

    def resign(self) -> bool:
        """Hands the leadership over; False when this candidate was not
        the leader. Raises sqllock.Lost when it had been lost already,
        or the release's error."""
        h = self._h
        if h is None:
            raise errors.Misuse("the candidate was stopped")
        rc = lib.sqllock_leader_resign(h)
        if rc == _lib.OK:
            return True
        if rc == errors.NotHeld.status:
            return False
        raise _lib.error_for(rc, self.error() or None)

    def error(self) -> str:
        """The last error the campaign met ("" when none)."""
        buf = ctypes.create_string_buffer(700)
        h = self._h
        if h is not None:
            lib.sqllock_leader_error(h, buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def stop(self) -> None:
        """Resigns if leader, ends the campaign and frees the candidate;
        stopping twice is harmless. Not from a callback."""
        with self._lock:
            if self._h is not None:
                lib.sqllock_leader_stop(self._h)
                self._h = None
            if self._db is not None:
                self._db.close()
                self._db = None
        self._notify()

    def __enter__(self) -> "Leader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:
            pass


def leader_get(db: Database, name: str) -> Optional[LeaderInfo]:
    """The current leader of election `name`, read on the Database `db`
    (sqllock_leader_get()); None when there is none: db.leader(name)."""
    return db.leader(name)
