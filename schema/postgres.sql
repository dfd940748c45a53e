-- sqllock schema for PostgreSQL, version 1.
-- Applied by `sqllock init` / sqllock_init() as one script, in one
-- transaction; idempotent. Times are timestamptz by the server's clock
-- (contract L2).
--
-- Run-time privileges (contract S2): SELECT, INSERT, UPDATE, DELETE on the
-- tables and USAGE on the sequence:
--   GRANT SELECT, INSERT, UPDATE, DELETE
--     ON sqllock_meta, sqllock_lease, sqllock_record, sqllock_row TO app;
--   GRANT USAGE ON SEQUENCE sqllock_token_seq TO app;

-- Concurrent CREATE ... IF NOT EXISTS can still collide in the catalogs;
-- this transaction-scoped advisory lock makes concurrent inits take turns.
SELECT pg_catalog.pg_advisory_xact_lock(1936814924, 0);

CREATE TABLE IF NOT EXISTS sqllock_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- Fencing tokens (contract L5) come from a sequence, which outlives every
-- lease row. CACHE 1: with a per-session cache, two sessions would hand out
-- tokens out of order. After a crash a sequence resumes past every value
-- whose use was committed, so tokens never go backwards.
CREATE SEQUENCE IF NOT EXISTS sqllock_token_seq AS bigint CACHE 1;

-- One row per held lease, keyed by the lock's name (contract L1). The "C"
-- collation orders and compares names byte for byte, as on the other
-- databases.
CREATE TABLE IF NOT EXISTS sqllock_lease (
    name        text COLLATE "C" PRIMARY KEY,
    owner       text NOT NULL,
    holder      text NOT NULL DEFAULT '',
    token       bigint NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS sqllock_lease_expires
    ON sqllock_lease (expires_at);

-- Versioned records (contract O1): a byte value per key and a version that
-- every successful write increases by one. Keys compare byte for byte, as
-- lock names do.
CREATE TABLE IF NOT EXISTS sqllock_record (
    key     text COLLATE "C" PRIMARY KEY,
    value   bytea NOT NULL,
    version bigint NOT NULL
);

-- Row locks (contract R1-R5): one row per lock name, created on first use
-- and locked with SELECT ... FOR UPDATE inside the caller's transaction.
CREATE TABLE IF NOT EXISTS sqllock_row (
    name text COLLATE "C" PRIMARY KEY
);

INSERT INTO sqllock_meta (key, value) VALUES ('schema_version', '1')
    ON CONFLICT (key) DO NOTHING;
