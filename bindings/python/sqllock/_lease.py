"""Lease locks (contract L1-L10): acquire, watchdog renewal, release."""
from __future__ import annotations

import enum
import threading
import time
import traceback
import weakref
from ctypes import byref, c_void_p
from typing import (TYPE_CHECKING, Any, Callable, List, Optional, Sequence,
                    Tuple)

from . import _convert as cv
from . import _lib, errors
from ._lib import lib

if TYPE_CHECKING:
    from ._db import Database


class LeaseState(enum.IntEnum):
    """What a lease handle knows of its lease (sqllock_lease_state())."""

    NOT_HELD = _lib.STATE_NOT_HELD
    HELD = _lib.STATE_HELD
    #: Renewals are failing, but the local deadline is still ahead.
    UNCERTAIN = _lib.STATE_UNCERTAIN
    #: Another owner took it, it was removed, or the local deadline
    #: passed without a successful renewal: stop acting as the holder.
    LOST = _lib.STATE_LOST


_UNSET: Any = object()

#: How often the thread that watches a sync wait's `cancel` event looks
#: at it (seconds): a cancel ends the C wait within this and one pause of
#: its backoff.
CANCEL_POLL = 0.05


class Lease:
    """A lease lock on one name through a Database (a sqllock_lease).

    Made by ``db.lock(name, ttl, wait)``. As a context manager it
    acquires (waiting up to `wait` seconds: None waits for ever, 0 tries
    once and raises Busy), puts the lease under watchdog renewal (unless
    ``watch=False``), and releases it at the end of the block. A release
    that finds the lease lost raises Lost (contract L4) unless the block
    already raised.

    ttl:        how long the lease lasts after each acquire or renewal, by
                the database server's clock (seconds, a timedelta or a
                text like "30s"); required, positive.
    wait:       how long acquire() waits by default.
    watch:      renew automatically on the handle's renewer thread (every
                `renew_every`, default ttl/3; contract L7).
    on_lost:    ``fn(lease)``, called once per hold when the lease is found
                lost -- by the renewer (on ITS thread: keep it short, and
                do not call the Database from it) or by a release or
                renewal (on the calling thread).
    on_state:   ``fn(lease, state, error)`` for every change the renewer
                reports (UNCERTAIN with the failed renewal's error, HELD
                again, LOST), on the renewer's thread.
    holder:     the text `sqllock list` shows (default "host:pid").
    safety_margin, backoff=(min, max), renew_every, retry_every: the
                lease and watch options of include/sqllock.h.
    no_wakeup, fast: SQLLOCK_LEASE_NO_WAKEUP, SQLLOCK_LEASE_FAST.
    fair:       SQLLOCK_LEASE_FAIR: waiters queue and are served oldest
                first (contract M3); a try finds the lock busy while any
                waiter is queued. A fair wait is one wait of the C
                library (a wait in slices would lose its place at each);
                ``acquire(cancel=event)`` and a cancelled asyncio task
                end it at once (sqllock_lease_cancel()), its queue row
                gone.
    release_timeout: how long a release keeps trying on fresh connections
                after the connection was lost or the database cannot be
                reached (contract C3; default 60 s, never past the lease's
                local deadline); a tiny value (0.001) tries again once.

    `lost` (a bool), `lost_event` (a threading.Event), `state`, `held`,
    `remaining`, `token` and `owner` may be read from any thread.
    """

    def __init__(self, db: Database, name: str, ttl: cv.Duration,
                 wait: Optional[cv.Duration] = None, *, watch: bool = True,
                 on_lost: Optional[Callable[["Lease"], None]] = None,
                 on_state: Optional[Callable[["Lease", LeaseState,
                                              Optional[errors.Error]], None]] = None,
                 holder: Optional[str] = None,
                 safety_margin: Optional[cv.Duration] = None,
                 backoff: Optional[Sequence[cv.Duration]] = None,
                 renew_every: Optional[cv.Duration] = None,
                 retry_every: Optional[cv.Duration] = None,
                 no_wakeup: bool = False, fast: bool = False,
                 fair: bool = False,
                 release_timeout: Optional[cv.Duration] = None,
                 _attach: Optional[Tuple[str, int]] = None) -> None:
        self._db = db
        self._h: Optional[int] = None
        self._hlock = threading.Lock()   # the handle's life, for readers
        self._wait = wait
        self._wait_ms = cv.wait_ms(wait)
        self._watch = watch
        self._on_lost = on_lost
        self._on_state = on_state
        self._loss_hooks: List[Callable[["Lease"], None]] = []
        self._count = 0
        self._token = 0
        self._owner = ""
        self._loss: Optional[errors.Error] = None
        self._loss_lock = threading.Lock()
        self._cb: Any = None
        # The C wait that a cancel may end: (handle, its cancel event),
        # under _hlock, so that no cancel reaches a handle being freed.
        self._waiting: Optional[Tuple[int, threading.Event]] = None
        #: Set when the current hold is found lost (cleared by the next
        #: acquire that starts a new hold).
        self.lost_event = threading.Event()
        self._holder = cv.text(holder, "holder")
        opts = _lib.LeaseOptions.init(
            ttl_ms=cv.duration_ms(ttl, "ttl"),
            safety_margin_ms=cv.duration_ms(safety_margin, "safety_margin"),
            holder=self._holder,
            release_timeout_ms=cv.duration_ms(release_timeout,
                                              "release_timeout"),
            flags=(_lib.LEASE_NO_WAKEUP if no_wakeup else 0) |
                  (_lib.LEASE_FAST if fast else 0) |
                  (_lib.LEASE_FAIR if fair else 0))
        if backoff is not None:
            lo, hi = backoff
            opts.backoff_min_ms = cv.duration_ms(lo, "backoff")
            opts.backoff_max_ms = cv.duration_ms(hi, "backoff")
        self._wopts = _lib.WatchOptions.init(
            interval_ms=cv.duration_ms(renew_every, "renew_every"),
            retry_ms=cv.duration_ms(retry_every, "retry_every"))
        self._raw_name = cv.text(name, "name")
        self._opts = opts
        self._ttl_ms = opts.ttl_ms
        self.name: str = name
        # A lease is made on the database's first connection; a wait may
        # move it, not held, to a connection of the pool (_rebind).
        self._s: Any = db._main
        self._key = 0
        self._make_c(_attach)
        if _attach is not None:
            self._count = 1
            self._owner, self._token = _attach[0], _attach[1]
            self._hold()

    # ---- plumbing ---------------------------------------------------------

    def _make_c(self, attach: Optional[Tuple[str, int]] = None) -> None:
        """Makes the C handle on the lease's connection self._s."""
        s = self._s
        h = c_void_p()
        with s.lock:
            dbh = s.handle()
            if attach is None:
                rc = self._new_c(dbh, self._raw_name, self._opts, h)
            else:
                rc = lib.sqllock_lease_attach(
                    dbh, self._raw_name, cv.text(attach[0], "owner"),
                    attach[1], byref(self._opts), byref(h))
            if rc != _lib.OK:
                raise s.fail(rc)
            with self._hlock:
                self._made_c(h.value)
            s.leases[self._key] = self
            s.drain()
        # Dropped without its database being closed: the handle is freed
        # under its connection's lock later (never from the collector).
        # Not at exit: the atexit hook of _db.py closes the database, which
        # frees every live lease's handle itself (a finalizer run at exit
        # would queue the same handle a second time: a double free).
        self._finalizer = weakref.finalize(self, s.defer_free,
                                           self._free_token())
        self._finalizer.atexit = False

    def _made_c(self, h: int) -> None:
        """Keeps the C handle _new_c() made (under _hlock)."""
        self._h = h
        self._key = h

    def _free_token(self) -> Any:
        """What _Session.drain() frees this lease's C handle with."""
        return self._h

    def _rebind(self, s: Any) -> None:
        """Moves the lease, not held, to connection `s`: a new C handle
        there; the old one is freed under its own connection's lock (by
        the next call there), not now -- that connection may be another
        thread's wait's."""
        old = self._s
        if s is old:
            return
        assert self._count == 0
        if self._key:
            old.leases.pop(self._key, None)
            old.held.pop(self._h, None)
            self._finalizer.detach()
            token = self._free_token()
            with self._hlock:
                self._forget_c()
            old.defer_free(token)
        self._s = s
        self._make_c()

    def _forget_c(self) -> None:
        """Forgets the C handle (freed elsewhere); under _hlock."""
        self._h = None
        self._key = 0

    def _home(self) -> Any:
        """The connection a call of this lease runs on. A lease not held
        goes back to the first connection: a connection of the pool
        hosts only the holds its waits acquired, so that no wait there
        holds up their release."""
        if self._count == 0 and self._s is not self._db._main and \
                not self._db.closed:
            self._rebind(self._db._main)
        return self._s

    def _handle(self) -> int:
        """The C handle; call with its connection's lock held."""
        self._s.handle()
        if self._h is None:
            raise errors.Misuse("the lease handle was freed (its database "
                                "was closed)")
        return self._h

    # The C calls that make, take, give up and free the handle (RWLease,
    # _rw.py, makes them those of a shared/exclusive hold).

    def _new_c(self, dbh: int, raw_name: bytes, opts: Any, h: c_void_p) -> int:
        return lib.sqllock_lease_new(dbh, raw_name, byref(opts), byref(h))

    def _acquire_c(self, h: int, wait_ms: int) -> int:
        return lib.sqllock_lease_acquire(h, wait_ms)

    #: Whether _acquire_c's wait can be ended by sqllock_lease_cancel()
    #: (a plain lease's; not a shared/exclusive hold's or a permit's).
    _C_CANCEL = True

    def _cancellable(self) -> bool:
        return self._C_CANCEL and _lib.has("sqllock_lease_cancel")

    def _wait_c(self, h: int, wait_ms: int,
                cancel: Optional[threading.Event], poll: bool) -> int:
        """_acquire_c(), which `cancel` (set from any thread) ends with
        SQLLOCK_ECANCELED: `poll` starts a thread that watches the event
        for the wait's length; without it whoever sets the event calls
        _cancel_wait() (asyncio's loop does)."""
        if cancel is None or wait_ms == 0 or not self._cancellable():
            return self._acquire_c(h, wait_ms)
        with self._hlock:
            self._waiting = (h, cancel)
            if cancel.is_set():          # set before the wait began
                lib.sqllock_lease_cancel(h, 1)
        done = threading.Event()
        if poll:
            def watch() -> None:
                while not done.is_set():
                    if cancel.wait(CANCEL_POLL):
                        self._cancel_wait(cancel)
                        return
            threading.Thread(target=watch, daemon=True,
                             name="sqllock-cancel").start()
        try:
            return self._acquire_c(h, wait_ms)
        finally:
            done.set()
            # From here no cancel reaches the C handle (_cancel_wait()
            # finds no wait): withdraw a request that came too late for
            # the wait, so that it does not end the next one.
            with self._hlock:
                self._waiting = None
                lib.sqllock_lease_cancel(h, 0)

    def _cancel_wait(self, cancel: threading.Event) -> None:
        """Sets `cancel` and ends the C wait it belongs to, if one runs
        (sqllock_lease_cancel(); any thread). Under _hlock: the handle
        of a running wait is neither freed nor forgotten meanwhile."""
        cancel.set()
        with self._hlock:
            w = self._waiting
            if w is not None and w[1] is cancel:
                lib.sqllock_lease_cancel(w[0], 1)

    def _release_c(self, h: int) -> int:
        return lib.sqllock_lease_release(h)

    def _free_c(self) -> None:
        lib.sqllock_lease_free(self._h)

    def _hold(self) -> None:
        # A new hold: the database keeps the Lease (and its callback)
        # alive while it is held, whatever the caller keeps.
        self._s.held[self._h] = self
        self.lost_event.clear()
        self._loss = None

    def _unhold(self) -> None:
        self._count = lib.sqllock_lease_count(self._h)
        if self._count == 0:
            s = self._s
            if s.held.pop(self._h, None) is not None and not s.held:
                self._db._pool_changed()

    def _free(self) -> None:
        """Frees the C handle (the database's close); with its lock held."""
        if self._h is None:
            return
        lib.sqllock_lease_unwatch(self._h)   # waits for a callback running
        self._s.held.pop(self._h, None)
        self._s.leases.pop(self._key, None)
        with self._hlock:
            self._finalizer.detach()
            self._free_c()
            self._h = None
        self._count = 0

    def _mark_lost(self, err: errors.Error) -> None:
        """The hold is lost: record why, set the event, tell on_lost once."""
        with self._loss_lock:
            if self._loss is not None:
                return
            self._loss = err
        self.lost_event.set()
        for fn in [self._on_lost] + self._loss_hooks:
            if fn is not None:
                try:
                    fn(self)
                except Exception:
                    traceback.print_exc()

    def _watched(self, ctx: Any, lease: Any, state: int, status: int,
                 msg: Optional[bytes]) -> None:
        # On the renewer thread (the GIL taken again by ctypes). It must
        # not raise into C, and must not take the database's lock: the
        # thread that holds it may be waiting for this callback to end.
        try:
            err = None
            if status != _lib.OK:
                err = _lib.error_for(status, msg)
            if state == _lib.STATE_LOST and err is not None:
                self._mark_lost(err)
            if self._on_state is not None:
                self._on_state(self, LeaseState(state), err)
        except Exception:
            traceback.print_exc()

    def _start_watch(self) -> None:
        """Watches the held lease; with the database's lock held."""
        self._cb = _lib.WATCH_FN(self._watched)
        self._wopts.callback = self._cb
        rc = lib.sqllock_lease_watch(self._h, byref(self._wopts))
        if rc != _lib.OK:
            err = self._s.fail(rc)
            lib.sqllock_lease_release(self._h)
            self._unhold()
            raise err

    def _acquire_locked(self, wait_ms: int, quiet: bool = False,
                        cancel: Optional[threading.Event] = None,
                        poll: bool = True) -> None:
        """acquire() with the connection's lock held; `quiet`: a Busy
        raised does not name the holder (a try before a wait); `cancel`,
        `poll`: see _wait_c()."""
        h = self._handle()
        if self._watch and self._count == 0:
            rc = lib.sqllock_watch_prepare(self._s.h)
            if rc != _lib.OK:
                raise self._s.fail(rc)
        rc = self._wait_c(h, wait_ms, cancel, poll)
        if rc != _lib.OK:
            # Busy and Timeout name the holder of the lease's own row (not
            # of a semaphore's or a shared lock's rows).
            row = lib.sqllock_lease_name(h)
            err = self._s.fail(rc, row if row == self.name.encode() and
                               not quiet else None)
            if rc == errors.Lost.status:
                self._mark_lost(err)     # a reentrant renewal found it lost
                self._unhold()
            raise err
        self._count = lib.sqllock_lease_count(h)
        if self._count == 1:
            self._token = lib.sqllock_lease_token(h)
            self._owner = lib.sqllock_lease_owner(h).decode()
            self._hold()
            if self._watch:
                self._start_watch()
        if cancel is not None and cancel.is_set() and wait_ms != 0 and \
                self._count == 1:
            # Granted as it was cancelled: released before the cancel is
            # reported, so that a cancelled wait never leaves it held.
            try:
                self._release_locked()
            except errors.Error:
                pass
            raise errors.Canceled(
                "lock '%s': the wait was canceled as it was granted; the "
                "lease was released" % self.name)

    def _release_locked(self) -> None:
        """release() with the connection's lock held."""
        h = self._handle()
        rc = self._release_c(h)
        err = self._s.fail(rc) if rc != _lib.OK else None
        self._unhold()
        if err is not None:
            if isinstance(err, errors.Lost):
                self._mark_lost(err)
            raise err

    # ---- the lease --------------------------------------------------------

    def acquire(self, wait: Optional[cv.Duration] = _UNSET, *,
                blocking: Optional[bool] = None,
                timeout: Optional[float] = None,
                cancel: Optional[threading.Event] = None) -> Any:
        """Takes the lease, waiting up to `wait` (default: the lock's)
        while another owner holds it (contract L1, L9), and returns the
        lease. Busy when a single try (wait 0) finds it held, Timeout
        when the wait ends with it held. On a lease already held it
        counts up and renews (L8).

        With `blocking` or `timeout` it is threading.Lock's acquire and
        returns a bool: ``acquire(blocking=False)`` tries once,
        ``acquire(timeout=5)`` waits up to 5 s, ``acquire(blocking=True)``
        (timeout None or -1) waits for ever; False when another owner
        still holds it. Other errors raise as above. Added in 0.10.0.

        `cancel`, a threading.Event: setting it (from any thread) ends
        the wait within about CANCEL_POLL and one pause of its backoff,
        a fair wait's included, with Canceled and the lease not held (a
        fair waiter's queue row gone); one set before the call raises
        Canceled without a try. A plain lease's (db.lock); a
        shared/exclusive hold or a permit refuses it (Unsupported), as
        does a libsqllock older than 0.12.0 (no
        sqllock_lease_cancel())."""
        if blocking is not None or timeout is not None:
            if cancel is not None:
                raise TypeError("cancel= goes with wait=, not with "
                                "blocking= or timeout=")
            return self._acquire_bool(blocking, timeout)
        return self._acquire(wait, cancel, True)

    def _acquire(self, wait: Optional[cv.Duration],
                 cancel: Optional[threading.Event], poll: bool) -> Any:
        """acquire(wait, cancel=...); `poll`: see _wait_c()."""
        wait_ms = self._wait_ms if wait is _UNSET else cv.wait_ms(wait)
        self._db._no_txn_here("lock '%s'" % self.name)
        if cancel is not None:
            if not isinstance(cancel, threading.Event):
                raise TypeError("cancel must be a threading.Event")
            if not self._cancellable():
                raise errors.Unsupported(
                    "lock '%s': cancel= needs a plain lease (db.lock) and "
                    "a libsqllock with sqllock_lease_cancel() (0.12.0)"
                    % self.name)
            if cancel.is_set() and self._count == 0:
                raise errors.Canceled("lock '%s': canceled before the "
                                      "acquire" % self.name)
        if self._count > 0 or wait_ms <= 0 or self._db._max == 1:
            s = self._home()
            with s.lock:
                self._acquire_locked(wait_ms, cancel=cancel, poll=poll)
            return self
        # A wait: one try on the first connection, then the wait on a
        # connection of the pool's own, so that it holds up no other
        # thread's call. The lease stays there while it is held.
        start = time.monotonic()
        s = self._home()
        with s.lock:
            try:
                self._acquire_locked(0, quiet=True)
                return self
            except errors.Busy:
                pass
        deadline = (None if wait_ms == _lib.WAIT_FOREVER
                    else start + wait_ms / 1000)
        w = self._db._checkout(deadline, "lock '%s'" % self.name, cancel)
        try:
            self._rebind(w)
            left = (wait_ms if deadline is None else
                    max(1, int((deadline - time.monotonic()) * 1000)))
            with w.lock:
                self._acquire_locked(left, cancel=cancel, poll=poll)
        finally:
            self._db._checkin(w)
        return self

    def _acquire_bool(self, blocking: Optional[bool],
                      timeout: Optional[float]) -> bool:
        if blocking is False:
            if timeout is not None and timeout != -1:
                raise ValueError("can't specify a timeout for a non-blocking "
                                 "call")
            wait: Optional[cv.Duration] = 0
        elif timeout is None or timeout == -1:
            wait = None
        else:
            if isinstance(timeout, bool) or \
                    not isinstance(timeout, (int, float)):
                raise TypeError("timeout must be a number of seconds")
            if timeout < 0:
                raise ValueError("timeout value must be a non-negative "
                                 "number or -1")
            wait = timeout
        try:
            self.acquire(wait)
        except (errors.Busy, errors.Timeout):
            return False
        return True

    def try_acquire(self) -> bool:
        """One try: True when acquired, False when another owner holds it."""
        return self._acquire_bool(False, None)

    def owned(self) -> bool:
        """True while this lease holds the lock (and its local deadline is
        ahead): ``held``, as the lock clients of Python call it. Added in
        0.10.0."""
        return self.held

    def locked(self) -> bool:
        """True when the lock is held now, by anyone (this lease or
        another owner), by the database's clock: one round trip
        (Database.locked()). Added in 0.10.0."""
        return self._db.locked(self.name)

    @property
    def ttl(self) -> float:
        """The lease's ttl in seconds: the one it was made with, or the
        last renew(ttl=...)'s."""
        return self._ttl_ms / 1000

    def extend(self, seconds: cv.Duration) -> None:
        """Renews the held lease so that it lasts `seconds` longer than it
        had left: ``renew(ttl=remaining + seconds)``, ``remaining`` being
        this host's reckoning (never later than the server's). The ttl
        then stays that for later renewals. Added in 0.10.0."""
        add = cv.duration_ms(seconds, "seconds")
        if add <= 0:
            raise errors.InvalidArgument("extend: the time to add must be "
                                         "positive")
        self.renew(ttl=(int(self.remaining * 1000) + add) / 1000)

    def renew(self, ttl: Optional[cv.Duration] = None) -> None:
        """Extends the held lease to ttl from now (server clock). With
        `ttl` (seconds, a timedelta or "30s"), the lease's ttl becomes it
        from now on -- this renewal and every later one, the watchdog's
        included (sqllock_lease_renew_ttl(): a shorter ttl shortens the
        hold on this host at once). Lost when another owner took it over
        or it was removed."""
        ttl_ms = None if ttl is None else cv.duration_ms(ttl, "ttl")
        s = self._home()
        with s.lock:
            if ttl_ms is None:
                rc = lib.sqllock_lease_renew(self._handle())
            else:
                rc = lib.sqllock_lease_renew_ttl(self._handle(), ttl_ms)
                # Refused (nothing changed), or the new ttl stays (C).
                if rc == _lib.OK or errors.BY_STATUS.get(rc) not in (
                        errors.InvalidArgument, errors.NotHeld,
                        errors.Misuse):
                    self._ttl_ms = ttl_ms
            if rc != _lib.OK:
                err = s.fail(rc)
                if isinstance(err, errors.Lost):
                    self._mark_lost(err)
                    self._unhold()
                raise err

    def release(self) -> None:
        """Counts a reentrant hold down; at zero deletes the lease row if
        it is still ours. Lost when another owner took it over or the row
        was removed (the handle is released all the same: L4)."""
        s = self._home()
        with s.lock:
            self._release_locked()

    def check(self) -> None:
        """Raises unless the lease is held right now: the loss's error
        (Lost, or Timeout when its local deadline passed), or NotHeld.
        Call it before each step of the work (contract L6)."""
        state = self.state
        if state == LeaseState.LOST or self._loss is not None:
            raise self._loss or errors.Lost(
                "lock '%s' is lost: its local deadline passed" % self.name)
        if state == LeaseState.NOT_HELD:
            raise errors.NotHeld("lock '%s' is not held" % self.name)

    def __enter__(self) -> "Lease":
        return self.acquire()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._count == 0:
            return
        try:
            self.release()
        except errors.Error:
            if exc_type is None:
                raise
            # The block's own exception goes on; lease.loss keeps this.

    # ---- state, readable from any thread ----------------------------------

    @property
    def state(self) -> LeaseState:
        """The handle's view of its lease (exact: past its local deadline
        a lease is LOST even before the renewer notices, L6)."""
        with self._hlock:
            if self._h is None:
                return LeaseState.NOT_HELD
            return LeaseState(lib.sqllock_lease_state(self._h))

    @property
    def held(self) -> bool:
        """True while held and the local deadline is ahead."""
        return self.state in (LeaseState.HELD, LeaseState.UNCERTAIN)

    @property
    def lost(self) -> bool:
        """True once the current (or last) hold was found lost."""
        return self._loss is not None or self.state == LeaseState.LOST

    @property
    def loss(self) -> Optional[errors.Error]:
        """Why the hold was lost: Lost (taken over or removed) or Timeout
        (the local deadline passed without a renewal); None otherwise."""
        if self._loss is None and self.state == LeaseState.LOST:
            return errors.Timeout("lock '%s': the local deadline passed "
                                  "without a successful renewal" % self.name)
        return self._loss

    @property
    def remaining(self) -> float:
        """Seconds the holder may still trust the lease (contract L6)."""
        with self._hlock:
            if self._h is None or self._count == 0:
                return 0.0
            deadline = lib.sqllock_lease_deadline_us(self._h)
        if deadline == 0:
            return 0.0
        return max(0.0, (deadline - lib.sqllock_now_us()) / 1e6)

    @property
    def token(self) -> int:
        """The fencing token of the current hold (contract L5); 0 when
        not held, and in fast mode."""
        return self._token if self._count else 0

    def guard(self, paramstyle: Any = "qmark",
              first: int = 1) -> Tuple[str, Any]:
        """The guard of this hold for a write of the application's own
        (contract G1): ``(sql, params)``, a condition to AND into the
        WHERE of the write and what to bind to its two placeholders (the
        lock name and the token, in that order; a dict for the named
        styles). The write then commits only if the lease is still this
        hold's when it commits; a takeover that races the commit waits for
        it or makes it fail. `paramstyle` is a DB-API module or a
        connection of one (psycopg, psycopg2, MySQLdb, PyMySQL: %s;
        sqlite3: ?), or a name: "qmark", "format", "pyformat", "named",
        "numeric" or "dollar" ($n, libpq's); `first` numbers the first
        placeholder of "numeric" and "dollar". E.g. with psycopg::

            guard, params = lease.guard(conn)
            cur.execute("UPDATE stock SET qty = qty - 1 WHERE id = %s AND "
                        + guard, (item,) + params)
            # cur.rowcount == 0: the lease is no longer held

        On SQLite put it in the write statement itself (or begin with
        BEGIN IMMEDIATE). Commit before releasing the lease: the lease
        row stays locked until the guarded transaction ends. NotHeld when
        the lease is not held; InvalidArgument in fast mode (no token).
        Added in 0.2.0."""
        from . import _guard
        style = _guard.style_of(paramstyle)
        with self._s.lock:
            self._handle()
            if self._count == 0:
                raise errors.NotHeld("lock '%s' is not held by this lease"
                                     % self.name)
            token = lib.sqllock_lease_token(self._h)
        sql = _guard.guard_sql(self._db, self.name, token, style, first)
        return sql, _guard.params_for(style, self.name, token)

    @property
    def owner(self) -> str:
        """The owner id of the current hold ("" when not held)."""
        return self._owner if self._count else ""

    @property
    def count(self) -> int:
        """The reentrancy count (0: not held)."""
        return self._count

    def __repr__(self) -> str:
        return "<sqllock.Lease %r %s token=%d>" % (
            self.name, self.state.name.lower(), self.token)


class LeaseSet:
    """Several leases taken together, all or none (contract L12; a
    sqllock_lease_acquire_many()).

    Made by ``db.lock_many(names, ttl, wait)``. As a context manager it
    takes every name in one transaction (in byte order of the names,
    whatever order they are given in, so two such sets never deadlock)
    or none, each name with its own lease, owner and token, puts each
    under watchdog renewal (unless ``watch=False``), and releases them all
    at the end of the block. The options are those of Lease, for every
    name. `leases` are the Lease objects, in the order of `names`;
    `tokens` maps each name to its token.
    """

    def __init__(self, db: Database, names: Sequence[str], ttl: cv.Duration,
                 wait: Optional[cv.Duration] = None, **options: Any) -> None:
        if isinstance(names, (str, bytes)):
            raise TypeError("lock_many() takes a sequence of names, not one "
                            "name")
        self._db = db
        self._wait_ms = cv.wait_ms(wait)
        self.leases: List[Lease] = [Lease(db, n, ttl, wait, **options)
                                    for n in names]

    def _array(self) -> Any:
        arr = (c_void_p * max(len(self.leases), 1))()
        for i, l in enumerate(self.leases):
            arr[i] = l._handle()
        return arr

    def _blocker(self, dbh: int) -> Optional[bytes]:
        """The row of the name the handle's message says was found held
        ("lock 'NAME' is held ..."), for Busy's holder; None if none is
        named. With the lock held, right after the call."""
        msg = lib.sqllock_errmsg(dbh) or b""
        for l in self.leases:
            row = l.name.encode()
            if b"lock '" + row + b"'" in msg:
                return row
        return None

    def acquire(self, wait: Optional[cv.Duration] = _UNSET) -> "LeaseSet":
        """Takes every name or none, waiting up to `wait` (default: the
        set's) for the name found held. Busy (wait 0) or Timeout names
        that lock, and its holder, token and time left (as Lease's
        do); nothing is held then."""
        wait_ms = self._wait_ms if wait is _UNSET else cv.wait_ms(wait)
        db = self._db
        db._no_txn_here("lock_many")
        s = self._home()
        if wait_ms <= 0 or db._max == 1 or not self.leases:
            with s.lock:
                self._acquire_locked(s, wait_ms)
            return self
        # As Lease.acquire(): a try here, then the wait on a connection
        # of the pool's own, where the leases stay while held.
        start = time.monotonic()
        with s.lock:
            try:
                self._acquire_locked(s, 0, quiet=True)
                return self
            except errors.Busy:
                pass
        deadline = (None if wait_ms == _lib.WAIT_FOREVER
                    else start + wait_ms / 1000)
        w = db._checkout(deadline, "lock_many")
        try:
            for l in self.leases:
                l._rebind(w)
            left = (wait_ms if deadline is None else
                    max(1, int((deadline - time.monotonic()) * 1000)))
            with w.lock:
                self._acquire_locked(w, left)
        finally:
            db._checkin(w)
        return self

    def _home(self) -> Any:
        """The connection of the set's leases (all on one): the first,
        unless they are held on a connection of the pool."""
        if self.leases and any(l.count for l in self.leases):
            return self.leases[0]._s
        for l in self.leases:
            l._home()
        return self._db._main

    def _acquire_locked(self, s: Any, wait_ms: int,
                        quiet: bool = False) -> None:
        """acquire() on connection `s`, with its lock held."""
        arr = self._array()
        dbh = s.handle()
        if any(l._watch for l in self.leases):
            rc = lib.sqllock_watch_prepare(dbh)
            if rc != _lib.OK:
                raise s.fail(rc)
        rc = lib.sqllock_lease_acquire_many(dbh, arr, len(self.leases),
                                            wait_ms)
        if rc != _lib.OK:
            raise s.fail(rc, None if quiet else self._blocker(dbh))
        for l in self.leases:
            l._count = lib.sqllock_lease_count(l._h)
            l._token = lib.sqllock_lease_token(l._h)
            l._owner = lib.sqllock_lease_owner(l._h).decode()
            l._hold()
        for l in self.leases:
            if l._watch:
                l._start_watch()

    def try_acquire(self) -> bool:
        """One try: True when every name was taken, False when one is
        held by another owner (then none was taken)."""
        try:
            self.acquire(0)
        except errors.Busy:
            return False
        return True

    def release(self) -> None:
        """Releases every lease of the set (each whatever the others
        find); raises the first failure (Lost: that name had been
        lost)."""
        s = self._home()
        with s.lock:
            arr = self._array()
            rc = lib.sqllock_lease_release_many(s.handle(), arr,
                                                len(self.leases))
            err = s.fail(rc) if rc != _lib.OK else None
            for l in self.leases:
                l._unhold()
            if err is not None:
                if isinstance(err, errors.Lost):
                    for l in self.leases:
                        if l.name in str(err):
                            l._mark_lost(err)
                raise err

    @property
    def tokens(self) -> dict:
        return {l.name: l.token for l in self.leases}

    @property
    def held(self) -> bool:
        return bool(self.leases) and all(l.held for l in self.leases)

    def __iter__(self) -> Any:
        return iter(self.leases)

    def __len__(self) -> int:
        return len(self.leases)

    def __enter__(self) -> "LeaseSet":
        return self.acquire()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not any(l.count for l in self.leases):
            return
        try:
            self.release()
        except errors.Error:
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        return "<sqllock.LeaseSet %r>" % ([l.name for l in self.leases],)
