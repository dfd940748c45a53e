"""Observers: following lock names without holding them (issue 31),
sqllock_observer_* of the C library.

An Observer reads the lease rows of its names, one query per poll for
all of them, on a connection of its own, and hands out each change of
their holds -- acquired, released, expired, taken over, freed by an
operator -- as a Change::

    with sqllock.Observer(db, ["nightly-report"], interval=0.5) as obs:
        for change in obs.changes(timeout=60):    # ends after 60 s quiet
            print(change.name, change.change, change.token, change.holder)

The C header (sqllock_observer_new()) says what each change means, what a
name covers (an election's "NAME [leader]", a semaphore's permits, ...)
and the bound: a change is seen within the poll interval plus a round
trip, a release on PostgreSQL at once. The observer looks at the database
only inside next() and changes(), in the calling thread: it has no thread
of its own.
"""
from __future__ import annotations

import dataclasses
import datetime
import threading
import weakref
from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

from . import _convert as cv
from . import _lib
from . import errors
from ._lib import lib

if TYPE_CHECKING:
    from ._db import Database


@dataclasses.dataclass(frozen=True)
class Change:
    """One change of a hold, as an Observer sees it. Times are the
    database server's clock."""

    change: str             #: "held", "free", "acquired", "released",
                            #: "expired", "taken_over", "force_released"
    name: str               #: the row, as ``sqllock list`` shows it
    watched: str            #: the name given that it falls under
    token: int              #: the hold's token (0 for "free")
    old_token: int          #: "taken_over": the expired hold's; else 0
    holder: str             #: the hold's holder text ("" for "free")
    expires_at: Optional[datetime.datetime]  #: its expiry as last seen
    seen_at: datetime.datetime   #: the poll that saw the change
    lag: float              #: seconds, at most, between it and the poll


def _ms_to_datetime(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


def _free(obs: int, h: int) -> None:
    lib.sqllock_observer_free(obs)
    lib.sqllock_close(h)


class Observer:
    """Follows `names` (one or several lock names) on `db` -- a Database,
    whose URL and options it opens a connection of its own with, or a
    URL. `interval` (seconds, a timedelta or a text such as "500ms";
    default 1 s, at least 50 ms) is the time between polls, the bound on
    how late a change is seen; with `initial`, the first changes are each
    name's state at the start ("held" per live row, else "free").

    The state it starts from is read here, so every change after this
    returns is reported. One thread at a time may call it (others get
    sqllock.Misuse). Close it with close(), a ``with`` block, or by
    dropping it.
    """

    def __init__(self, db: Union["Database", str], names: Sequence[str], *,
                 interval: Optional[cv.Duration] = None,
                 initial: bool = False) -> None:
        if isinstance(names, (str, bytes)):
            names = [names]
        self.names = list(names)
        self._busy = threading.Lock()
        self._obs: Optional[int] = None
        self._h = self._open(db)
        try:
            arr, raw = cv.names_array(self.names, "name")
            opts = _lib.ObserverOptions.init(
                interval_ms=cv.duration_ms(interval, "interval"),
                include_initial=1 if initial else 0)
            obs = c_void_p()
            rc = lib.sqllock_observer_new(self._h, arr, len(raw),
                                          byref(opts), byref(obs))
            if rc != _lib.OK:
                raise _lib.error_for(rc, lib.sqllock_errmsg(self._h))
        except BaseException:
            lib.sqllock_close(self._h)
            self._h = None
            raise
        self._obs = obs.value
        self._finalizer = weakref.finalize(self, _free, self._obs, self._h)

    @staticmethod
    def _open(db: Union["Database", str]) -> int:
        """A C handle of the observer's own."""
        if isinstance(db, str):
            h = c_void_p()
            rc = lib.sqllock_open(cv.text(db, "url"), None, byref(h))
            if rc != _lib.OK:
                msg = lib.sqllock_errmsg(h)
                lib.sqllock_close(h)
                raise _lib.error_for(rc, msg)
            return h.value
        if getattr(db, "borrowed", False) or not hasattr(db, "_open_c"):
            raise errors.Misuse("an Observer needs a connection of the "
                                "library's own: give it a Database of "
                                "sqllock.connect(), or a URL")
        if db.closed:
            raise errors.Misuse("the database handle is closed")
        return db._open_c()

    def next(self, timeout: Optional[cv.Duration] = None) -> Optional[Change]:
        """The next change, waiting up to `timeout` (None: for ever; 0:
        what a due poll brings); None when none came. Raises the
        database's error when a poll fails (the next call tries again,
        reporting what changed meanwhile)."""
        ms = cv.wait_ms(timeout)
        if not self._busy.acquire(blocking=False):
            raise errors.Misuse("this Observer is in use by another thread")
        try:
            if self._obs is None:
                raise errors.Misuse("the Observer is closed")
            c = _lib.Change.init()
            rc = lib.sqllock_observer_next(self._obs, byref(c), ms)
            if rc == _lib.OK:
                return Change(
                    lib.sqllock_change_name(c.type).decode(),
                    (c.name or b"").decode("utf-8", "replace"),
                    (c.watched or b"").decode("utf-8", "replace"),
                    c.token, c.old_token,
                    (c.holder or b"").decode("utf-8", "replace"),
                    _ms_to_datetime(c.expires_at_ms) if c.expires_at_ms
                    else None,
                    _ms_to_datetime(c.seen_at_ms), c.lag_ms / 1000)
            if rc == errors.Timeout.status:
                return None
            raise _lib.error_for(rc, lib.sqllock_errmsg(self._h))
        finally:
            self._busy.release()

    def changes(self, timeout: Optional[cv.Duration] = None
                ) -> Iterator[Change]:
        """The changes, as they come: a generator that ends when none
        came for `timeout` (None: it never ends; break out of it)."""
        while True:
            change = self.next(timeout)
            if change is None:
                return
            yield change

    def __iter__(self) -> Iterator[Change]:
        return self.changes()

    def close(self) -> None:
        """Frees the observer and closes its connection; twice is
        harmless."""
        with self._busy:
            if self._obs is None:
                return
            self._finalizer()
            self._obs = None
            self._h = None

    @property
    def closed(self) -> bool:
        return self._obs is None

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<sqllock.Observer of %r%s>" % (
            self.names, " closed" if self._obs is None else "")
