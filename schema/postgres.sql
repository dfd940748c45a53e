-- sqllock schema for PostgreSQL, version 1 (DRAFT: the driver arrives with
-- the next milestone; this is the shape it will use).
-- Times are timestamptz by the server's clock (DESIGN L2).

CREATE TABLE IF NOT EXISTS sqllock_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- Fencing tokens come from a sequence, which outlives every lease row and
-- never goes backwards across restarts for committed grants (DESIGN L5).
CREATE SEQUENCE IF NOT EXISTS sqllock_token_seq AS bigint;

CREATE TABLE IF NOT EXISTS sqllock_lease (
    name        text PRIMARY KEY,
    owner       text NOT NULL,
    holder      text NOT NULL DEFAULT '',
    token       bigint NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS sqllock_lease_expires
    ON sqllock_lease (expires_at);

INSERT INTO sqllock_meta (key, value) VALUES ('schema_version', '1')
    ON CONFLICT (key) DO NOTHING;

-- Acquire, one round trip (for the driver):
--   INSERT INTO sqllock_lease (name, owner, holder, token, acquired_at, expires_at)
--   VALUES ($1, $2, $3, nextval('sqllock_token_seq'), now(),
--           now() + $4 * interval '1 millisecond')
--   ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, ...
--    WHERE sqllock_lease.expires_at <= now()
--   RETURNING token;
-- (now() is the transaction's start; in autocommit that is this statement.)
