"""Semaphores with N permits (contract M1): sqllock_sem_*."""
from __future__ import annotations

from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Optional

from . import _convert as cv
from . import _lib
from . import errors
from ._lease import Lease
from ._lib import lib

if TYPE_CHECKING:
    from ._db import Database


class SemaphoreLease(Lease):
    """One permit of a semaphore (a sqllock_sem), made by
    ``db.semaphore(name, permits, ttl, wait=...)``.

    At most `permits` holders of the semaphore hold a permit at once,
    among callers that give the same number (one that gives a lower
    number takes only the permits below it: see the C header). The permit
    held is a lease of its own: the context manager, watchdog renewal,
    `token`, `owner`, `state` and `lost` are a Lease's, and `permit` says
    which permit it is (0..permits-1; -1 while none is held). A permit of
    a holder that died comes back when its ttl has run out. Reentrant, as
    every kind (L8): a second acquire while it holds counts the same
    permit up and renews it; the permit goes at the last release.

    The C lease behind it is the permit's, and changes from one hold to
    the next; the semaphore handle owns it.
    """

    def __init__(self, db: Database, name: str, permits: int,
                 ttl: cv.Duration, wait: Optional[cv.Duration] = None,
                 **options: Any) -> None:
        if isinstance(permits, bool) or not isinstance(permits, int):
            raise TypeError("permits must be an int")
        self.permits: int = permits
        self._sem: Optional[int] = None
        self._permit = -1
        super().__init__(db, name, ttl, wait, **options)

    def _new_c(self, dbh: int, raw_name: bytes, opts: Any, h: c_void_p) -> int:
        sem = c_void_p()
        rc = lib.sqllock_sem_new(dbh, raw_name, self.permits, byref(opts),
                                 byref(sem))
        if rc == _lib.OK:
            self._sem = sem.value
            h.value = self._sem
        return rc

    def _made_c(self, h: int) -> None:
        # The permit's lease handle comes with each hold (_h); the
        # semaphore's is the key.
        self._key = h
        self._h = None

    def _free_token(self) -> Any:
        return (lib.sqllock_sem_free, self._sem)

    def _forget_c(self) -> None:
        super()._forget_c()
        self._sem = None

    def _sem_handle(self) -> int:
        self._s.handle()
        if self._sem is None:
            raise errors.Misuse("the semaphore handle was freed (its "
                                "database was closed)")
        return self._sem

    # A permit's wait is sqllock_sem_acquire()'s: no C cancel ends it.
    _C_CANCEL = False

    def _acquire_locked(self, wait_ms: int, quiet: bool = False,
                        cancel: Any = None, poll: bool = True) -> None:
        sem = self._sem_handle()
        if self._watch and self._count == 0:
            rc = lib.sqllock_watch_prepare(self._s.h)
            if rc != _lib.OK:
                raise self._s.fail(rc)
        rc = lib.sqllock_sem_acquire(sem, wait_ms)
        if rc != _lib.OK:
            err = self._s.fail(rc)
            if isinstance(err, errors.Lost) and self._h is not None:
                self._mark_lost(err)     # a reentrant renewal found it lost
                self._unhold()
                if self._count == 0:
                    self._permit = -1
            raise err
        h = lib.sqllock_sem_lease(sem)
        count = lib.sqllock_lease_count(h)
        if count > 1:                    # L8: the same permit, counted up
            self._count = count
            return
        if self._h is not None and self._h != h:
            self._s.held.pop(self._h, None)
        with self._hlock:
            self._h = h
        self._permit = lib.sqllock_sem_permit(sem)
        self._count = 1
        self._token = lib.sqllock_lease_token(h)
        self._owner = lib.sqllock_lease_owner(h).decode()
        self._hold()
        if self._watch:
            self._start_watch()

    def _start_watch(self) -> None:
        try:
            super()._start_watch()
        except errors.Error:
            # Lease._start_watch released the permit's lease directly: the
            # semaphore must hear of it too.
            lib.sqllock_sem_release(self._sem)
            self._permit = -1
            raise

    def _release_locked(self) -> None:
        sem = self._sem_handle()
        rc = lib.sqllock_sem_release(sem)
        err = self._s.fail(rc) if rc != _lib.OK else None
        if self._h is not None:
            self._unhold()
        if self._count == 0:
            self._permit = -1
        if err is not None:
            if isinstance(err, errors.Lost):
                self._mark_lost(err)
            raise err

    def _free(self) -> None:
        """Frees the semaphore handle (the database's close); with its
        lock held."""
        if self._sem is None:
            return
        if self._h is not None:
            lib.sqllock_lease_unwatch(self._h)
            self._s.held.pop(self._h, None)
        self._s.leases.pop(self._key, None)
        with self._hlock:
            self._finalizer.detach()
            lib.sqllock_sem_free(self._sem)
            self._sem = None
            self._h = None
        self._count = 0
        self._permit = -1

    def locked(self) -> bool:
        """True when no permit is free now (asyncio.Semaphore's
        locked()): ``permits`` of them are live by the database's clock.
        Added in 0.10.0."""
        return self._db.semaphore_count(self.name) >= self.permits

    @property
    def permit(self) -> int:
        """The permit held, 0..permits-1, or -1 when none is."""
        return self._permit if self._count > 0 else -1

    def __repr__(self) -> str:
        return "<sqllock.SemaphoreLease %r permit %d of %d>" % (
            self.name, self.permit, self.permits)
