"""connect() without a URL reads the database as the sqllock tool does
($SQLLOCK_DB, else the file $SQLLOCK_DB_FILE names; issue 27), and a
Busy or Timeout of a lease names who holds it and for how long."""
from __future__ import annotations

import os

import pytest

import sqllock


@pytest.fixture
def no_db_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("SQLLOCK_DB", raising=False)
    monkeypatch.delenv("SQLLOCK_DB_FILE", raising=False)
    return monkeypatch


def _write(path: str, text: str, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def test_C4_connect_reads_SQLLOCK_DB(url: str, driver: str,
                                     no_db_env: pytest.MonkeyPatch) -> None:
    no_db_env.setenv("SQLLOCK_DB", url)
    with sqllock.connect() as db:
        assert db.driver == driver
    # Set but empty counts as unset, as for the tool.
    no_db_env.setenv("SQLLOCK_DB", "")
    with pytest.raises(sqllock.InvalidArgument) as none:
        sqllock.connect()
    assert "SQLLOCK_DB" in str(none.value)
    assert "SQLLOCK_DB_FILE" in str(none.value)


def test_C4_connect_reads_SQLLOCK_DB_FILE(url: str, driver: str, tmp: str,
                                          no_db_env: pytest.MonkeyPatch) -> None:
    path = os.path.join(tmp, "db.url")
    # Its first line that is not blank, without the white space around.
    _write(path, "\n  \t\r\n %s \r\nsqlite:///nowhere.db\n" % url)
    no_db_env.setenv("SQLLOCK_DB_FILE", path)
    with sqllock.connect() as db:
        assert db.driver == driver
    # $SQLLOCK_DB goes first.
    no_db_env.setenv("SQLLOCK_DB", url)
    _write(path, "nosuch://x\n")
    with sqllock.connect() as db:
        assert db.driver == driver


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_C4_connect_refuses_a_file_others_may_read(
        tmp: str, mode: int, no_db_env: pytest.MonkeyPatch) -> None:
    path = os.path.join(tmp, "db.url")
    _write(path, "sqlite:///tmp/x.db?Zq8=1\n", mode)
    no_db_env.setenv("SQLLOCK_DB_FILE", path)
    with pytest.raises(sqllock.InvalidArgument) as refused:
        sqllock.connect()
    msg = str(refused.value)
    assert "chmod 600" in msg and path in msg and "%04o" % mode in msg
    assert "Zq8" not in msg


@pytest.mark.parametrize("text", [
    "127.0.0.1:5432:db:app:Zq8-S3cret\n", "Zq8-S3cret\n", "Zq8:S3cret\n",
])
def test_C4_connect_file_that_holds_no_url(
        tmp: str, text: str, no_db_env: pytest.MonkeyPatch) -> None:
    path = os.path.join(tmp, "db.url")
    _write(path, text)
    no_db_env.setenv("SQLLOCK_DB_FILE", path)
    with pytest.raises(sqllock.BadURL) as bad:
        sqllock.connect()
    msg = str(bad.value)
    assert "not a database URL" in msg and path in msg
    assert "Zq8" not in msg and "S3cret" not in msg


def test_C4_connect_file_errors(tmp: str,
                                no_db_env: pytest.MonkeyPatch) -> None:
    path = os.path.join(tmp, "missing.url")
    no_db_env.setenv("SQLLOCK_DB_FILE", path)
    with pytest.raises(FileNotFoundError) as missing:
        sqllock.connect()
    assert path in str(missing.value)
    assert "SQLLOCK_DB_FILE" in str(missing.value)
    path = os.path.join(tmp, "empty.url")
    _write(path, " \n\t\n")
    no_db_env.setenv("SQLLOCK_DB_FILE", path)
    with pytest.raises(sqllock.InvalidArgument, match="empty"):
        sqllock.connect()


def test_L9_busy_and_timeout_name_the_holder(url: str, name: str) -> None:
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        with a.lock(name, ttl=30, holder="the holder") as held:
            with pytest.raises(sqllock.Busy) as busy:
                b.lock(name, ttl=30, wait=0).acquire()
            e = busy.value
            assert e.holder == "the holder"
            assert e.token == held.token
            assert e.remaining is not None and 0 < e.remaining <= 30
            assert "the holder" in str(e) and "left" in str(e)
            assert "token %d" % held.token in str(e)
            with pytest.raises(sqllock.Timeout) as late:
                b.lock(name, ttl=30).acquire(0.2)
            assert late.value.holder == "the holder"
            assert late.value.token == held.token
            assert "the holder" in str(late.value)
    # Where nobody read the row, the attributes are None.
    assert sqllock.Busy("x").holder is None
    assert sqllock.Timeout("x").remaining is None
