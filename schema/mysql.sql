-- sqllock schema for MySQL 8.0 and MariaDB, version 1.
-- Only SQL that MySQL 8.0 also runs (contract D4): no RETURNING, no
-- sequences, no MariaDB-only syntax. The driver runs this script one
-- statement at a time (split at a ';' that ends a line), so each statement
-- ends with ';' at the end of its last line and no ';' ends a line inside
-- one. Every statement is idempotent, so the script may run again, and
-- from several processes at once.
--
-- Names are VARBINARY so that they compare byte for byte (no collation, no
-- PAD SPACE: 'a' and 'a ' are different locks, as on the other databases).
-- Times are DATETIME(6) by the server's clock, NOW(6) (contract L2); the
-- driver sets the session time zone to UTC, so no daylight-saving jump can
-- move an expiry.

CREATE TABLE IF NOT EXISTS sqllock_meta (
    `key`   VARCHAR(64) NOT NULL PRIMARY KEY,
    `value` VARCHAR(255) NOT NULL
) ENGINE = InnoDB;

-- Fencing tokens (contract L5). MySQL has no sequences, so the counter is
-- this table's AUTO_INCREMENT. There is one row per lock name: each grant
-- runs REPLACE INTO sqllock_token (name), which gives the name's row a new
-- AUTO_INCREMENT value, and that value is the token. The counter belongs
-- to the table, so tokens increase across all names. The name is the
-- primary key, so that REPLACE rewrites the name's own row under a lock
-- on that row alone; with the name as a secondary unique key, InnoDB's
-- duplicate check takes gap locks next to the name, and grants of
-- neighbouring names deadlock. InnoDB keeps the counter across server
-- restarts and never hands out a value again when rows are deleted:
-- MySQL 8.0 and MariaDB 10.2.4 and later persist it (older servers
-- recomputed it from MAX(token) at start-up, so there a deleted newest
-- row could let a token come back after a restart).
CREATE TABLE IF NOT EXISTS sqllock_token (
    name  VARBINARY(255) NOT NULL PRIMARY KEY,
    token BIGINT NOT NULL AUTO_INCREMENT,
    KEY sqllock_token_token (token)
) ENGINE = InnoDB;

-- One row per held (or expired, not yet reaped) lease.
CREATE TABLE IF NOT EXISTS sqllock_lease (
    name        VARBINARY(255) NOT NULL PRIMARY KEY,
    owner       CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    holder      VARBINARY(255) NOT NULL DEFAULT '',
    token       BIGINT NOT NULL,
    acquired_at DATETIME(6) NOT NULL,
    expires_at  DATETIME(6) NOT NULL,
    KEY sqllock_lease_expires (expires_at)
) ENGINE = InnoDB;

-- Versioned records (contract O1): a byte value per key and a version that
-- every successful write increases by one. Keys are VARBINARY, as lock
-- names are.
CREATE TABLE IF NOT EXISTS sqllock_record (
    `key`   VARBINARY(255) NOT NULL PRIMARY KEY,
    `value` LONGBLOB NOT NULL,
    version BIGINT NOT NULL
) ENGINE = InnoDB;

-- Row locks (contract R1-R5): one row per lock name, created on first use
-- and locked with SELECT ... FOR UPDATE inside the caller's transaction.
CREATE TABLE IF NOT EXISTS sqllock_row (
    name VARBINARY(255) NOT NULL PRIMARY KEY
) ENGINE = InnoDB;

INSERT IGNORE INTO sqllock_meta (`key`, `value`) VALUES ('schema_version', '1');
