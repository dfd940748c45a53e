-- sqllock schema for SQLite, version 1.
-- Applied by `sqllock init` / sqllock_init() inside one transaction;
-- idempotent: every statement leaves an existing schema as it is.
-- Times are integer milliseconds since the Unix epoch, by the clock of the
-- host that runs SQLite (the embedded "server": every client of a SQLite
-- file is on that host).

CREATE TABLE IF NOT EXISTS sqllock_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The fencing-token counter (contract L5). One row; it is never deleted, so
-- tokens keep increasing when lease rows are released, taken over or reaped.
CREATE TABLE IF NOT EXISTS sqllock_fence (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    token INTEGER NOT NULL
);
INSERT OR IGNORE INTO sqllock_fence (id, token) VALUES (1, 0);

-- One row per held lease, keyed by the lock's name (contract L1).
CREATE TABLE IF NOT EXISTS sqllock_lease (
    name        TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    holder      TEXT NOT NULL DEFAULT '',
    token       INTEGER NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS sqllock_lease_expires
    ON sqllock_lease (expires_at);

-- A granted lease takes its token as fence.token + 1 inside the acquiring
-- statement; these triggers advance the counter in that same statement, so
-- the grant and the counter commit together.
CREATE TRIGGER IF NOT EXISTS sqllock_lease_fence_insert
AFTER INSERT ON sqllock_lease
BEGIN
    UPDATE sqllock_fence SET token = NEW.token
     WHERE id = 1 AND token < NEW.token;
END;

CREATE TRIGGER IF NOT EXISTS sqllock_lease_fence_update
AFTER UPDATE OF token ON sqllock_lease
BEGIN
    UPDATE sqllock_fence SET token = NEW.token
     WHERE id = 1 AND token < NEW.token;
END;

-- Versioned records (contract O1): a byte value per key and a version that
-- every successful write increases by one.
CREATE TABLE IF NOT EXISTS sqllock_record (
    key     TEXT NOT NULL PRIMARY KEY,
    value   BLOB NOT NULL,
    version INTEGER NOT NULL
);

-- Row locks (contract R5): one row per lock name, created on first use.
-- SQLite has no row locks; a row-lock transaction takes the database's
-- write lock (BEGIN IMMEDIATE), so the row only records the name.
CREATE TABLE IF NOT EXISTS sqllock_row (
    name TEXT PRIMARY KEY
) WITHOUT ROWID;

INSERT OR IGNORE INTO sqllock_meta (key, value) VALUES ('schema_version', '1');
