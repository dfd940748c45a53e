"""libsqllock through ctypes: finding it, its structs and prototypes.

The library is found, in this order, at:

1. ``$SQLLOCK_LIBRARY``: the path of a libsqllock.so (a build tree's,
   say); nothing else is tried when it is set;
2. the package's own copy, ``sqllock/_libs/libsqllock.so.0``, which the
   wheel carries (bindings/python/tools/build_wheel.py): the libraries
   of the system it needs (``_libs/DEPENDS``: libpq5, libmariadb3,
   libsqlite3-0 on Debian) are checked first, and a missing one is
   named with its package;
3. ``ctypes.util.find_library("sqllock")`` (the loader's cache: an
   installed copy after ``ldconfig``, such as Debian's libsqllock0);
4. the soname ``libsqllock.so.0`` through the loader's own search
   (``LD_LIBRARY_PATH``, /usr/local/lib, ...).

Every function is called through ``ctypes.CDLL``, which releases the GIL
for the duration of each call: a thread blocked in an acquire or a row
lock leaves the interpreter to the others. Callbacks from the library
(the watchdog's, the record update function, the list walk) take the GIL
again while they run.

The structs below mirror include/sqllock.h field by field, with each
*_INIT macro's struct_version; tests/test_layout.py compares their sizes
and offsets with those a small C program built from the header prints
(bindings/python/layout.c). At load time the library's version, its
status table, its lease-state and row-lock-scope names are checked
against what this module expects.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import warnings
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int,
                    c_int64, c_size_t, c_uint, c_void_p)
from typing import List, Optional

from . import errors

# The major version of the C API this module was written against.
ABI_MAJOR = 0

# Constants of include/sqllock.h (test_layout.py checks each value).
NAME_MAX = 255
OWNER_LEN = 32
HOLDER_MAX = 255
PRIMITIVE_NAME_MAX = 200
VALUE_MAX = 1024 * 1024
WAIT_FOREVER = 2**63 - 1
SCHEMA_VERSION = 1
STATUS_END = 33

STATE_NOT_HELD = 0
STATE_HELD = 1
STATE_UNCERTAIN = 2
STATE_LOST = 3

ROW_LOCKS_EXCLUSIVE = 1
ROW_LOCKS_NODE = 2
ROW_LOCKS_DATABASE = 3

LOCK_WAIT = 0
LOCK_NOWAIT = 1
LOCK_SKIP_LOCKED = 2

OP_SET, OP_ADD, OP_SUB, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE = range(9)

LEASE_NO_WAKEUP = 1 << 0
LEASE_FAST = 1 << 1
LEASE_FAIR = 1 << 2

(PARAM_QMARK, PARAM_DOLLAR, PARAM_FORMAT, PARAM_PYFORMAT, PARAM_NAMED,
 PARAM_NUMERIC) = range(6)
GUARD_SQL_MAX = 512

OPTIONS_VERSION = 2
LEASE_OPTIONS_VERSION = 3
WATCH_OPTIONS_VERSION = 1
REAPER_OPTIONS_VERSION = 1
TXN_OPTIONS_VERSION = 1
RETRY_OPTIONS_VERSION = 1
FORCE_OPTIONS_VERSION = 1
OBSERVER_OPTIONS_VERSION = 1
CHANGE_VERSION = 1
OBSERVER_INTERVAL_MIN_MS = 50
OBSERVER_NAMES_MAX = 256
# sqllock_change_type (observers; added in 0.11.0).
(CHANGE_HELD, CHANGE_FREE, CHANGE_ACQUIRED, CHANGE_RELEASED, CHANGE_EXPIRED,
 CHANGE_TAKEN_OVER, CHANGE_FORCE_RELEASED) = range(1, 8)
LEADER_OPTIONS_VERSION = 1

OK = 0


class _Versioned(Structure):
    """A versioned options struct: ``init()`` is its *_INIT macro."""

    VERSION = 0

    @classmethod
    def init(cls, **fields: object) -> "_Versioned":
        """The *_INIT value (struct_version set, the rest zero), then
        `fields`."""
        return cls(struct_version=cls.VERSION, **fields)


class Options(_Versioned):
    """sqllock_options (SQLLOCK_OPTIONS_INIT)."""

    C_NAME = "sqllock_options"
    VERSION = OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("busy_timeout_ms", c_int64),
                ("connect_timeout_ms", c_int64),
                ("statement_timeout_ms", c_int64)]


class LeaseOptions(_Versioned):
    """sqllock_lease_options (SQLLOCK_LEASE_OPTIONS_INIT)."""

    C_NAME = "sqllock_lease_options"
    VERSION = LEASE_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("ttl_ms", c_int64),
                ("safety_margin_ms", c_int64),
                ("backoff_min_ms", c_int64),
                ("backoff_max_ms", c_int64),
                ("holder", c_char_p),
                ("flags", c_uint),
                ("release_timeout_ms", c_int64)]


# void (*sqllock_watch_fn)(void *ctx, sqllock_lease *lease, int state,
#                          int status, const char *msg)
WATCH_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_int, c_int, c_char_p)


class WatchOptions(_Versioned):
    """sqllock_watch_options (SQLLOCK_WATCH_OPTIONS_INIT)."""

    C_NAME = "sqllock_watch_options"
    VERSION = WATCH_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("interval_ms", c_int64),
                ("retry_ms", c_int64),
                ("callback", WATCH_FN),
                ("ctx", c_void_p)]


class ReaperOptions(_Versioned):
    """sqllock_reaper_options (SQLLOCK_REAPER_OPTIONS_INIT)."""

    C_NAME = "sqllock_reaper_options"
    VERSION = REAPER_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("interval_ms", c_int64),
                ("grace_ms", c_int64),
                ("batch", c_int),
                ("db_options", POINTER(Options))]


class ReaperStats(Structure):
    """sqllock_reaper_stats."""

    C_NAME = "sqllock_reaper_stats"
    _fields_ = [("reaped", c_int64),
                ("passes", c_int64),
                ("errors", c_int64),
                ("last_status", c_int),
                ("last_error", c_char * 256)]


class LeaseInfo(Structure):
    """sqllock_lease_info."""

    C_NAME = "sqllock_lease_info"
    _fields_ = [("name", c_char_p),
                ("owner", c_char_p),
                ("holder", c_char_p),
                ("token", c_int64),
                ("acquired_at_ms", c_int64),
                ("expires_at_ms", c_int64),
                ("remaining_ms", c_int64)]


class TxnOptions(_Versioned):
    """sqllock_txn_options (SQLLOCK_TXN_OPTIONS_INIT)."""

    C_NAME = "sqllock_txn_options"
    VERSION = TXN_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("lock_timeout_ms", c_int64)]


class RetryOptions(_Versioned):
    """sqllock_retry_options (SQLLOCK_RETRY_OPTIONS_INIT)."""

    C_NAME = "sqllock_retry_options"
    VERSION = RETRY_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("max_attempts", c_int),
                ("backoff_min_ms", c_int64),
                ("backoff_max_ms", c_int64)]


class ForceOptions(_Versioned):
    """sqllock_force_options (SQLLOCK_FORCE_OPTIONS_INIT)."""

    C_NAME = "sqllock_force_options"
    VERSION = FORCE_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("token", c_int64),
                ("live", c_int),
                ("who", c_char_p)]


class Table(Structure):
    """struct sqllock_table."""

    C_NAME = "sqllock_table"
    _fields_ = [("table", c_char_p),
                ("key_column", c_char_p),
                ("version_column", c_char_p)]


class Cell(Structure):
    """struct sqllock_cell (op is the enum sqllock_op, an int)."""

    C_NAME = "sqllock_cell"
    _fields_ = [("column", c_char_p),
                ("op", c_int),
                ("text", c_char_p),
                ("number", c_int64)]


# Leader election (added in 0.9.0): the three callbacks.
# void (*)(void *ctx, sqllock_leader *, int64_t token)
LEADER_ELECTED_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_int64)
# void (*)(void *ctx, sqllock_leader *, int64_t token, int status,
#          const char *msg)
LEADER_LOST_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_int64, c_int, c_char_p)
# void (*)(void *ctx, sqllock_leader *, const char *holder, int64_t token)
LEADER_OBSERVED_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_char_p, c_int64)


class LeaderOptions(_Versioned):
    """sqllock_leader_options (SQLLOCK_LEADER_OPTIONS_INIT)."""

    C_NAME = "sqllock_leader_options"
    VERSION = LEADER_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("ttl_ms", c_int64),
                ("safety_margin_ms", c_int64),
                ("renew_interval_ms", c_int64),
                ("resign_hold_ms", c_int64),
                ("holder", c_char_p),
                ("db_options", POINTER(Options)),
                ("on_elected", LEADER_ELECTED_FN),
                ("on_lost", LEADER_LOST_FN),
                ("on_observed", LEADER_OBSERVED_FN),
                ("ctx", c_void_p)]


class LeaderInfo(Structure):
    """sqllock_leader_info."""

    C_NAME = "sqllock_leader_info"
    _fields_ = [("holder", c_char * (HOLDER_MAX + 1)),
                ("token", c_int64),
                ("remaining_ms", c_int64)]


class Event(Structure):
    """sqllock_event: what the log hook is told (sqllock_log_set())."""

    C_NAME = "sqllock_event"
    _fields_ = [("struct_version", c_int),
                ("type", c_int),
                ("level", c_int),
                ("status", c_int),
                ("name", c_char_p),
                ("token", c_int64),
                ("value_ms", c_int64),
                ("msg", c_char_p),
                ("db", c_char_p)]


class ObserverOptions(_Versioned):
    """sqllock_observer_options (SQLLOCK_OBSERVER_OPTIONS_INIT)."""

    C_NAME = "sqllock_observer_options"
    VERSION = OBSERVER_OPTIONS_VERSION
    _fields_ = [("struct_version", c_int),
                ("interval_ms", c_int64),
                ("include_initial", c_int)]


class Change(_Versioned):
    """sqllock_change (SQLLOCK_CHANGE_INIT): one change an observer hands
    out; its texts are borrowed until the next call on the observer."""

    C_NAME = "sqllock_change"
    VERSION = CHANGE_VERSION
    _fields_ = [("struct_version", c_int),
                ("type", c_int),
                ("name", c_char_p),
                ("watched", c_char_p),
                ("token", c_int64),
                ("old_token", c_int64),
                ("holder", c_char_p),
                ("expires_at_ms", c_int64),
                ("seen_at_ms", c_int64),
                ("lag_ms", c_int64)]


# void (*sqllock_log_fn)(void *ctx, const sqllock_event *event)
LOG_FN = CFUNCTYPE(None, c_void_p, POINTER(Event))

STRUCTS = (Options, LeaseOptions, WatchOptions, ReaperOptions, ReaperStats,
           LeaseInfo, TxnOptions, RetryOptions, Table, Cell, LeaderOptions,
           LeaderInfo, ForceOptions, Event, ObserverOptions, Change)

# int (*sqllock_update_fn)(void *ctx, const void *old, size_t old_len,
#                          const void **out, size_t *out_len)
UPDATE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t, POINTER(c_void_p),
                      POINTER(c_size_t))
# int (*cb)(void *ctx, const sqllock_lease_info *)
LIST_FN = CFUNCTYPE(c_int, c_void_p, POINTER(LeaseInfo))
# sqllock_record_list()'s callback: ctx, key, value, len, version.
RECORD_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_void_p, c_size_t, c_int64)

_P = c_void_p               # an opaque handle
_PP = POINTER(c_void_p)     # where a handle is returned
_i64p = POINTER(c_int64)
_ip = POINTER(c_int)

# name: (restype, argtypes)
PROTOTYPES = {
    "sqllock_version_string": (c_char_p, []),
    "sqllock_retryable": (c_int, [c_int]),
    "sqllock_strerror": (c_char_p, [c_int]),
    "sqllock_errname": (c_char_p, [c_int]),
    "sqllock_open": (c_int, [c_char_p, POINTER(Options), _PP]),
    "sqllock_close": (None, [_P]),
    "sqllock_errmsg": (c_char_p, [_P]),
    "sqllock_errcode": (c_int, [_P]),
    "sqllock_db_driver": (c_char_p, [_P]),
    "sqllock_db_native": (c_void_p, [_P]),
    "sqllock_init": (c_int, [_P]),
    "sqllock_lease_new": (c_int, [_P, c_char_p, POINTER(LeaseOptions), _PP]),
    "sqllock_lease_try_acquire": (c_int, [_P]),
    "sqllock_lease_acquire": (c_int, [_P, c_int64]),
    "sqllock_lease_renew": (c_int, [_P]),
    "sqllock_lease_renew_ttl": (c_int, [_P, c_int64]),
    "sqllock_lease_release": (c_int, [_P]),
    "sqllock_lease_acquire_many": (c_int, [_P, POINTER(c_void_p), c_int,
                                           c_int64]),
    "sqllock_lease_release_many": (c_int, [_P, POINTER(c_void_p), c_int]),
    "sqllock_lease_free": (None, [_P]),
    "sqllock_lease_name": (c_char_p, [_P]),
    "sqllock_lease_held": (c_int, [_P]),
    "sqllock_lease_count": (c_int, [_P]),
    "sqllock_lease_token": (c_int64, [_P]),
    "sqllock_lease_owner": (c_char_p, [_P]),
    "sqllock_lease_remaining_ms": (c_int64, [_P]),
    "sqllock_lease_state": (c_int, [_P]),
    "sqllock_lease_state_name": (c_char_p, [c_int]),
    "sqllock_lease_watch": (c_int, [_P, POINTER(WatchOptions)]),
    "sqllock_lease_unwatch": (c_int, [_P]),
    "sqllock_watch_prepare": (c_int, [_P]),
    "sqllock_rw_new": (c_int, [_P, c_char_p, c_int, POINTER(LeaseOptions),
                               _PP]),
    "sqllock_rw_try_acquire": (c_int, [_P]),
    "sqllock_rw_acquire": (c_int, [_P, c_int64]),
    "sqllock_rw_release": (c_int, [_P]),
    "sqllock_rw_lease": (_P, [_P]),
    "sqllock_rw_shared": (c_int, [_P]),
    "sqllock_rw_free": (None, [_P]),
    "sqllock_sem_new": (c_int, [_P, c_char_p, c_int, POINTER(LeaseOptions),
                                _PP]),
    "sqllock_sem_acquire": (c_int, [_P, c_int64]),
    "sqllock_sem_release": (c_int, [_P]),
    "sqllock_sem_lease": (_P, [_P]),
    "sqllock_sem_permit": (c_int, [_P]),
    "sqllock_sem_permits": (c_int, [_P]),
    "sqllock_sem_free": (None, [_P]),
    "sqllock_sem_count": (c_int, [_P, c_char_p, POINTER(c_int)]),
    "sqllock_lease_attach": (c_int, [_P, c_char_p, c_char_p, c_int64,
                                     POINTER(LeaseOptions), _PP]),
    "sqllock_reap": (c_int, [_P, c_int64, c_int, _i64p]),
    "sqllock_reaper_start": (c_int, [c_char_p, POINTER(ReaperOptions), _PP,
                                     c_char_p, c_size_t]),
    "sqllock_reaper_stats_get": (c_int, [_P, POINTER(ReaperStats)]),
    "sqllock_reaper_stop": (None, [_P]),
    "sqllock_list": (c_int, [_P, LIST_FN, c_void_p]),
    "sqllock_lease_lookup": (c_int, [_P, c_char_p, LIST_FN, c_void_p]),
    "sqllock_force_release": (c_int, [_P, c_char_p, POINTER(ForceOptions),
                                      LIST_FN, c_void_p]),
    "sqllock_row_lock_scope": (c_int, [_P, _ip]),
    "sqllock_row_lock_scope_name": (c_char_p, [c_int]),
    "sqllock_txn_begin": (c_int, [_P, POINTER(TxnOptions), _PP]),
    "sqllock_txn_lock": (c_int, [_P, POINTER(c_char_p), c_int, c_int, _ip]),
    "sqllock_txn_lock_rows": (c_int, [_P, POINTER(Table), POINTER(Cell),
                                      c_int, c_int, _ip]),
    "sqllock_txn_native": (c_void_p, [_P]),
    "sqllock_txn_commit": (c_int, [_P]),
    "sqllock_txn_rollback": (c_int, [_P]),
    "sqllock_txn_free": (None, [_P]),
    "sqllock_record_get": (c_int, [_P, c_char_p, _PP, POINTER(c_size_t),
                                   _i64p]),
    "sqllock_record_create": (c_int, [_P, c_char_p, c_char_p, c_size_t]),
    "sqllock_record_cas": (c_int, [_P, c_char_p, c_int64, c_char_p, c_size_t,
                                   _i64p]),
    "sqllock_record_delete": (c_int, [_P, c_char_p, c_int64]),
    "sqllock_record_list": (c_int, [_P, c_char_p, RECORD_FN, c_void_p]),
    "sqllock_record_update": (c_int, [_P, c_char_p, UPDATE_FN, c_void_p,
                                      POINTER(RetryOptions), _ip]),
    "sqllock_table_get": (c_int, [_P, POINTER(Table), POINTER(Cell),
                                  POINTER(c_char_p), c_int, _i64p, _i64p]),
    "sqllock_table_cas": (c_int, [_P, POINTER(Table), POINTER(Cell), c_int64,
                                  POINTER(Cell), c_int, POINTER(Cell), c_int,
                                  _i64p]),
    "sqllock_table_update": (c_int, [_P, POINTER(Table), POINTER(Cell),
                                     POINTER(Cell), c_int, POINTER(Cell),
                                     c_int]),
    "sqllock_table_fenced_update": (c_int, [_P, POINTER(Table), POINTER(Cell),
                                            c_char_p, c_int64, POINTER(Cell),
                                            c_int, POINTER(Cell), c_int]),
    "sqllock_guard_sql": (c_int, [_P, c_char_p, c_int64, c_int, c_int,
                                  POINTER(c_char), c_size_t,
                                  POINTER(c_size_t)]),
    "sqllock_table_guarded_update": (c_int, [_P, _P, POINTER(Table),
                                             POINTER(Cell), c_char_p,
                                             POINTER(Cell), c_int,
                                             POINTER(Cell), c_int]),
    "sqllock_free": (None, [c_void_p]),
    "sqllock_parse_duration_why": (c_int, [c_char_p, _i64p,
                                           POINTER(c_char_p)]),
    "sqllock_url_redact": (c_int, [c_char_p, POINTER(c_void_p)]),
    "sqllock_now_us": (c_int64, []),
    "sqllock_lease_deadline_us": (c_int64, [_P]),
    "sqllock_db_exec": (c_int, [_P, c_char_p, POINTER(Cell), c_int, _ip,
                                _i64p, _i64p]),
    # The application's own connection (contract G2; added in 0.2.0).
    "sqllock_borrow": (c_int, [c_char_p, c_void_p, POINTER(Options), _PP]),
    "sqllock_db_borrowed": (c_int, [_P]),
    "sqllock_txn_join": (c_int, [_P, POINTER(TxnOptions), _PP]),
    # Leader election (contract M4; added in 0.9.0).
    "sqllock_leader_start": (c_int, [c_char_p, c_char_p,
                                     POINTER(LeaderOptions), _PP, c_char_p,
                                     c_size_t]),
    "sqllock_metrics_text": (c_int, [_P, POINTER(c_void_p)]),
    "sqllock_log_set": (c_void_p, [LOG_FN, c_void_p, c_int]),
    "sqllock_event_name": (c_char_p, [c_int]),
    "sqllock_leader_is_leader": (c_int, [_P]),
    "sqllock_leader_token": (c_int64, [_P]),
    "sqllock_leader_remaining_ms": (c_int64, [_P]),
    "sqllock_leader_name": (c_char_p, [_P]),
    "sqllock_leader_resign": (c_int, [_P]),
    "sqllock_leader_stop": (None, [_P]),
    "sqllock_leader_error": (None, [_P, c_char_p, c_size_t]),
    "sqllock_leader_get": (c_int, [_P, c_char_p, POINTER(LeaderInfo)]),
    "sqllock_leader_lease_new": (c_int, [_P, c_char_p, POINTER(LeaseOptions),
                                         _PP]),
    # The database's view in OpenMetrics text, a candidate's health
    # (issue 31; added in 0.11.0).
    "sqllock_metrics_db_text": (c_int, [_P, POINTER(c_void_p)]),
    "sqllock_leader_health": (c_int, [_P, _i64p]),
    # Observers: following lock names without holding them (issue 31;
    # added in 0.11.0).
    "sqllock_observer_new": (c_int, [_P, POINTER(c_char_p), c_int,
                                     POINTER(ObserverOptions), _PP]),
    "sqllock_observer_next": (c_int, [_P, POINTER(Change), c_int64]),
    "sqllock_observer_free": (None, [_P]),
    "sqllock_change_name": (c_char_p, [c_int]),
}

# Entry points the binding uses when the library has them and does
# without otherwise (an older libsqllock still loads): set on `lib` when
# present; has(name) says which.
OPTIONAL_PROTOTYPES = {
    # A wait in sqllock_lease_acquire() ended from another thread (the
    # cancel of a fair wait; added in 0.12.0). Without it a fair wait's
    # cancel is noticed only when its C wait ends.
    "sqllock_lease_cancel": (c_int, [_P, c_int]),
}


class LibraryNotFound(ImportError):
    """libsqllock could not be loaded, or is not one this binding knows."""


BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_libs")


def _check_bundled_depends() -> None:
    """The system libraries the wheel's libsqllock needs, each loaded
    once by its soname: LibraryNotFound naming every missing one and its
    Debian package, rather than the loader's message about the first."""
    path = os.path.join(BUNDLED, "DEPENDS")
    if not os.path.exists(path):
        return
    missing = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 2:
                continue
            try:
                ctypes.CDLL(parts[0])
            except OSError:
                missing.append(parts)
    if missing:
        raise LibraryNotFound(
            "the libsqllock in this sqllock package needs libraries of the "
            "system that are not installed: %s. On Debian or Ubuntu: "
            "apt-get install %s" % (
                ", ".join("%s (package %s)" % (so, pkg)
                          for so, pkg in missing),
                " ".join(pkg for _, pkg in missing)))


def _candidates() -> List[str]:
    path = os.environ.get("SQLLOCK_LIBRARY")
    if path:
        return [path]
    own = os.path.join(BUNDLED, "libsqllock.so.0")
    if os.path.exists(own):
        _check_bundled_depends()
        return [own]
    found = ctypes.util.find_library("sqllock")
    names = [found] if found else []
    if "libsqllock.so.0" not in names:
        names.append("libsqllock.so.0")
    return names


def load() -> ctypes.CDLL:
    """Loads libsqllock (see the module's docstring), sets every
    prototype, and checks the library against this module."""
    why = []
    lib = None
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            why.append("%s: %s" % (name, e))
    if lib is None:
        raise LibraryNotFound(
            "cannot load libsqllock (%s). Install the wheel (it carries the "
            "library) or Debian's libsqllock0, set SQLLOCK_LIBRARY to the "
            "path of libsqllock.so (a build tree's: build/libsqllock.so), or "
            "install the library (cmake --install, then ldconfig)"
            % "; ".join(why))
    missing = [n for n in PROTOTYPES if not hasattr(lib, n)]
    if missing:
        raise LibraryNotFound(
            "%s lacks %s: it is older than this binding" %
            (getattr(lib, "_name", "libsqllock"), ", ".join(missing)))
    for name, (restype, argtypes) in list(PROTOTYPES.items()) + [
            (n, p) for n, p in OPTIONAL_PROTOTYPES.items()
            if hasattr(lib, n)]:
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _check(lib)
    return lib


def _check(lib: ctypes.CDLL) -> None:
    """What can be compared at load time: the version, the status table
    and the state names. (Struct layouts are checked by the tests.)"""
    version = lib.sqllock_version_string().decode()
    if int(version.split(".")[0]) != ABI_MAJOR:
        raise LibraryNotFound("libsqllock %s: this binding is for version %d.x"
                              % (version, ABI_MAJOR))
    for code, name in errors.STATUS_NAMES.items():
        got = lib.sqllock_errname(code).decode()
        if got != name:
            raise LibraryNotFound("libsqllock %s names status %d %s, this "
                                  "binding %s" % (version, code, got, name))
    extra = [c for c in range(STATUS_END + 64)
             if c not in errors.STATUS_NAMES and
             lib.sqllock_errname(c) != b"SQLLOCK_UNKNOWN"]
    if extra:
        warnings.warn("libsqllock %s has status codes this binding does not "
                      "know (%s): they raise sqllock.Error" %
                      (version, ", ".join(str(c) for c in extra)))
    for cls in errors.BY_STATUS.values():
        cls.retryable = bool(lib.sqllock_retryable(cls.status))
    for value, want in ((STATE_NOT_HELD, b"not-held"), (STATE_HELD, b"held"),
                        (STATE_UNCERTAIN, b"uncertain"),
                        (STATE_LOST, b"lost")):
        if lib.sqllock_lease_state_name(value) != want:
            raise LibraryNotFound("libsqllock %s: lease state %d is not %s"
                                  % (version, value, want.decode()))


lib = load()


def has(name: str) -> bool:
    """True when the loaded library has the optional entry point `name`
    (OPTIONAL_PROTOTYPES)."""
    return name in OPTIONAL_PROTOTYPES and hasattr(lib, name)


def error_for(status: int, message: Optional[bytes | str]) -> errors.Error:
    """The exception of `status`, carrying `message` (the library's)."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    if not message:
        message = lib.sqllock_strerror(status).decode()
    cls = errors.BY_STATUS.get(status, errors.Error)
    return cls(message, status)
