"""Guarding the application's own writes (contract G1): the guard's SQL
in the placeholder style of the application's DB-API module, with its
parameters.

A guard is a condition for the WHERE of a write the application makes on
its own connection (psycopg, psycopg2, mysqlclient, sqlite3, ...), in its
own transaction: the write commits only if the lease is still held when
it commits; a takeover racing the commit waits for it or makes it fail.
docs/guard.md says under which isolation levels, and what it costs.
"""
from __future__ import annotations

import sys
from ctypes import byref, c_size_t, create_string_buffer
from typing import Any, Dict, Tuple, Union

from . import _lib, errors
from ._lib import lib

# The DB-API paramstyles, and libpq's $n ("dollar").
STYLES = {
    "qmark": _lib.PARAM_QMARK,
    "dollar": _lib.PARAM_DOLLAR,
    "format": _lib.PARAM_FORMAT,
    "pyformat": _lib.PARAM_PYFORMAT,
    "named": _lib.PARAM_NAMED,
    "numeric": _lib.PARAM_NUMERIC,
}

Params = Union[Tuple[str, int], Dict[str, Any]]


def style_of(paramstyle: Any) -> str:
    """The paramstyle name of `paramstyle`: one of STYLES' names, a
    DB-API module (its ``paramstyle``), or a connection or cursor of one
    (its module's). A module that declares ``pyformat`` (psycopg,
    psycopg2, PyMySQL) gets ``format``: those take ``%s`` too, and a query
    cannot mix ``%s`` with ``%(name)s``; ask for "pyformat" by name for
    the named form."""
    if isinstance(paramstyle, str):
        if paramstyle not in STYLES:
            raise errors.InvalidArgument(
                "unknown paramstyle %r: use one of %s, or pass the DB-API "
                "module or a connection of it" %
                (paramstyle, ", ".join(sorted(STYLES))))
        return paramstyle
    declared = getattr(paramstyle, "paramstyle", None)
    if not isinstance(declared, str):
        top = type(paramstyle).__module__.split(".")[0]
        declared = getattr(sys.modules.get(top), "paramstyle", None)
    if not isinstance(declared, str) or declared not in STYLES:
        raise errors.InvalidArgument(
            "cannot tell the paramstyle of %r: pass one of %s" %
            (paramstyle, ", ".join(sorted(STYLES))))
    return "format" if declared == "pyformat" else declared


def guard_sql(db: Any, name: str, token: int, style: str, first: int) -> str:
    """sqllock_guard_sql() on the Database `db`."""
    buf = create_string_buffer(_lib.GUARD_SQL_MAX)
    length = c_size_t()
    db._call(lib.sqllock_guard_sql, name.encode("utf-8"), token,
             STYLES[style], first, buf, len(buf), byref(length))
    return buf.value.decode("utf-8")


def params_for(style: str, name: str, token: int) -> Params:
    """What to bind to the guard's placeholders: (name, token) in that
    order, or a dict for the named styles."""
    if style in ("named", "pyformat"):
        return {"sqllock_name": name, "sqllock_token": token}
    return (name, token)
