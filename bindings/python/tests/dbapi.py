"""The application's side of the borrow tests: a DB-API connection of
each library that sqllock.borrow() takes, to the database of a test URL,
opened as an application opens it (its library's default transaction
mode: psycopg, psycopg2 and MySQLdb with autocommit off, sqlite3 in its
legacy mode with isolation_level "").

scripts/test.sh installs the libraries (python3-psycopg, python3-psycopg2,
python3-mysqldb); a missing one fails the test that needs it."""
from __future__ import annotations

import sqlite3
import urllib.parse
from typing import Any, List

# The libraries of each driver, in the order the tests use them.
LIBRARIES = {"sqlite": ["sqlite3"], "postgres": ["psycopg", "psycopg2"],
             "mysql": ["MySQLdb"]}


def scheme(url: str) -> str:
    s = url.split(":", 1)[0].lower()
    return {"postgresql": "postgres", "mariadb": "mysql"}.get(s, s)


def libraries(url: str) -> List[str]:
    return LIBRARIES[scheme(url)]


def sqlite_path(url: str) -> str:
    rest = url.split(":", 1)[1]
    if rest.startswith("//"):
        rest = rest[2:]
    return rest.split("?", 1)[0]


def connect(url: str, library: str, **kw: Any) -> Any:
    """A connection of `library` to the database of `url` (keywords go
    to the library's connect())."""
    if library == "sqlite3":
        kw.setdefault("timeout", 10)
        return sqlite3.connect(sqlite_path(url), **kw)
    if library == "psycopg":
        import psycopg
        return psycopg.connect(url, **kw)
    if library == "psycopg2":
        import psycopg2
        return psycopg2.connect(url, **kw)
    import MySQLdb
    u = urllib.parse.urlsplit(url)
    return MySQLdb.connect(host=u.hostname or "localhost", port=u.port or 3306,
                           user=urllib.parse.unquote(u.username or ""),
                           passwd=urllib.parse.unquote(u.password or ""),
                           db=urllib.parse.unquote(u.path.lstrip("/")),
                           charset="utf8mb4", **kw)


def ph(conn: Any) -> str:
    """The connection's placeholder."""
    return "?" if isinstance(conn, sqlite3.Connection) else "%s"


def run(conn: Any, sql: str, *args: Any) -> Any:
    """Executes `sql` ({} stands for the placeholder) on a cursor of the
    connection; the first column of the first row, when there is one,
    else the cursor's rowcount."""
    cur = conn.cursor()
    try:
        cur.execute(sql.replace("{}", ph(conn)), args)
        if cur.description is not None:
            row = cur.fetchone()
            return None if row is None else row[0]
        return cur.rowcount
    finally:
        cur.close()
