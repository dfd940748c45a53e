"""The library's metrics and its log hook, for Python (issue 31).

``metrics_text()`` is the process's counts -- every handle of every
Database, the watchdogs and reapers included -- in the OpenMetrics text
format that Prometheus scrapes (sqllock_metrics_text() with a NULL
handle; docs/observability.md lists the metrics). ``MetricsCollector``
hands them to prometheus_client (Debian's python3-prometheus-client)::

    from prometheus_client import REGISTRY, start_http_server
    REGISTRY.register(sqllock.MetricsCollector())
    start_http_server(9108)

``log_to(logger)`` sends the library's events (acquired, released,
renewed late, uncertain, lost, reconnected, refused, release lost) to a
``logging.Logger``, or to any callable taking an ``Event``; they come
from whichever thread they happened on (a watchdog's, say), so the
handler must be thread-safe, as logging's are. ``log_to(None)`` stops
them.
"""
from __future__ import annotations

import atexit
import ctypes
import dataclasses
import logging
import threading
from ctypes import byref, c_char_p, c_void_p
from typing import Any, Callable, Iterator, Optional, Union

from . import _lib
from ._lib import lib

__all__ = ["metrics_text", "MetricsCollector", "Event", "log_to"]


def metrics_text() -> str:
    """The process's metrics, in the OpenMetrics text format (ends with
    "# EOF")."""
    out = c_void_p()
    rc = lib.sqllock_metrics_text(None, byref(out))
    if rc != _lib.OK:
        raise _lib.error_for(rc, None)
    try:
        return ctypes.cast(out, c_char_p).value.decode("utf-8", "replace")
    finally:
        lib.sqllock_free(out)


class MetricsCollector:
    """A prometheus_client collector of the process's sqllock metrics:
    ``REGISTRY.register(sqllock.MetricsCollector())``. Each scrape reads
    the counts afresh (relaxed atomics: no lock, no statement)."""

    def collect(self) -> Iterator[Any]:
        # Imported here: prometheus_client is needed only by those who
        # register the collector.
        from prometheus_client.openmetrics.parser import \
            text_string_to_metric_families
        yield from text_string_to_metric_families(metrics_text())

    def describe(self) -> list:
        # No description ahead of a scrape: the registry then calls
        # collect() once at registration to learn the names.
        return list(self.collect())


@dataclasses.dataclass(frozen=True)
class Event:
    """One event of the library (sqllock_event)."""

    type: str            # "acquired", "released", "renewed_late", ...
    level: int           # logging.DEBUG ... logging.ERROR
    status: int          # a status code, 0 when none
    name: Optional[str]  # the lock's name, or None
    token: int           # the lease's token, 0 when none
    value_ms: int        # per type: wait, hold, time left (ms)
    message: str
    db: Optional[str]    # the handle's URL, password hidden


_hook_lock = threading.Lock()
# Every ctypes callback ever handed to the library: one replaced may still
# be running in another thread, so none is freed (a process sets a few).
_kept: list = []


@atexit.register
def _unhook() -> None:
    # No event may reach Python while the interpreter is finalizing.
    lib.sqllock_log_set(_lib.LOG_FN(), None, 0)


def _text(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode("utf-8", "replace")


def _make_callback(target: Union[logging.Logger, Callable[[Event], Any]]):
    if isinstance(target, logging.Logger):
        def deliver(ev: Event) -> None:
            target.log(ev.level, "%s", ev.message,
                       extra={"sqllock_event": ev.type,
                              "sqllock_name": ev.name,
                              "sqllock_token": ev.token})
    else:
        deliver = target

    def cb(ctx, p):              # noqa: ARG001 (ctx is NULL)
        e = p.contents
        try:
            deliver(Event(
                type=lib.sqllock_event_name(e.type).decode(),
                level=e.level, status=e.status, name=_text(e.name),
                token=e.token, value_ms=e.value_ms,
                message=_text(e.msg) or "", db=_text(e.db)))
        except Exception:        # never into the library's thread
            logging.getLogger("sqllock").exception("sqllock log handler")
    return _lib.LOG_FN(cb)


def log_to(target: Union[None, logging.Logger, Callable[[Event], Any]],
           level: int = logging.INFO) -> None:
    """Sends the library's events at `level` or above to `target`: a
    logging.Logger (each event logged at its level, with extra fields
    sqllock_event, sqllock_name, sqllock_token), a callable taking an
    Event, or None to stop. One target per process: a second call
    replaces the first."""
    with _hook_lock:
        if target is None:
            lib.sqllock_log_set(_lib.LOG_FN(), None, 0)
            return
        fn = _make_callback(target)
        _kept.append(fn)
        lib.sqllock_log_set(fn, None, int(level))
