"""Shared and exclusive holds on one name (contract M2): sqllock_rw_*."""
from __future__ import annotations

from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Optional

from . import _convert as cv
from ._lease import Lease
from ._lib import lib

if TYPE_CHECKING:
    from ._db import Database


class RWLease(Lease):
    """A shared or exclusive hold of a name's shared/exclusive lock (a
    sqllock_rw), made by ``db.rw_lock(name, ttl, shared=..., wait=...)``.

    Many shared holders at once, or one exclusive holder. An exclusive
    holder that waits stops new shared holders and waits only for those
    already in (writer preference). Everything else is a Lease's: the
    context manager, watchdog renewal, `token` (an exclusive hold's grows
    with every exclusive grant of the name: it fences writes), `owner`,
    `state`, `lost`. Reentrant, as every kind (L8): a second acquire
    while it holds counts the hold up and renews it; the hold ends at the
    last release.
    `shared` says which kind it is.
    """

    def __init__(self, db: Database, name: str, ttl: cv.Duration,
                 wait: Optional[cv.Duration] = None, *, shared: bool = True,
                 **options: Any) -> None:
        self.shared: bool = bool(shared)
        self._rw: Optional[int] = None
        super().__init__(db, name, ttl, wait, **options)

    def _new_c(self, dbh: int, raw_name: bytes, opts: Any, h: c_void_p) -> int:
        rw = c_void_p()
        rc = lib.sqllock_rw_new(dbh, raw_name, 1 if self.shared else 0,
                                byref(opts), byref(rw))
        if rc == 0:
            self._rw = rw.value
            h.value = lib.sqllock_rw_lease(self._rw)
        return rc

    def _free_token(self) -> Any:
        return (lib.sqllock_rw_free, self._rw)

    def _forget_c(self) -> None:
        super()._forget_c()
        self._rw = None

    # sqllock_rw_acquire()'s wait: no C cancel ends it.
    _C_CANCEL = False

    def _acquire_c(self, h: int, wait_ms: int) -> int:
        return lib.sqllock_rw_acquire(self._rw, wait_ms)

    def _release_c(self, h: int) -> int:
        return lib.sqllock_rw_release(self._rw)

    def _free_c(self) -> None:
        lib.sqllock_rw_free(self._rw)
        self._rw = None

    def locked(self) -> bool:
        """True when this hold could not be taken now: for an exclusive
        hold, when anyone holds the name (shared or exclusive); for a
        shared one, when an exclusive holder holds it or waits for it.
        Reads the name's rows (a shared hold's are one per reader: a scan
        of the lease table). Added in 0.10.0."""
        if self.shared:
            return self._db.locked(self.name + "\x1fw")
        prefix = self.name + "\x1f"
        return any(i.remaining > 0 for i in self._db.list()
                   if i.name.startswith(prefix))

    def __repr__(self) -> str:
        return "<sqllock.RWLease %s %r>" % (
            "shared" if self.shared else "exclusive", self.name)
