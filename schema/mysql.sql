-- sqllock schema for MySQL 8.0 and MariaDB, version 1 (DRAFT: the driver
-- arrives with the next milestone; this is the shape it will use).
-- Only SQL that MySQL 8.0 also runs (DESIGN D4). Names are VARBINARY so
-- that they compare byte for byte (no collation, no PAD SPACE: 'a' and
-- 'a ' are different locks, as on the other databases).
-- Times are DATETIME(6) by the server's clock, NOW(6) (DESIGN L2).

CREATE TABLE IF NOT EXISTS sqllock_meta (
    `key`   VARCHAR(64) NOT NULL PRIMARY KEY,
    `value` VARCHAR(255) NOT NULL
) ENGINE = InnoDB;

-- Fencing tokens: MySQL has no sequences, so each grant inserts a row here
-- and takes its AUTO_INCREMENT id (LAST_INSERT_ID()). InnoDB keeps the
-- counter across restarts (MySQL 8.0, MariaDB 10.6+), and rows may be
-- trimmed without resetting it as long as the newest row stays.
CREATE TABLE IF NOT EXISTS sqllock_token (
    token BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS sqllock_lease (
    name        VARBINARY(255) NOT NULL PRIMARY KEY,
    owner       CHAR(32) CHARACTER SET ascii NOT NULL,
    holder      VARBINARY(255) NOT NULL DEFAULT '',
    token       BIGINT NOT NULL,
    acquired_at DATETIME(6) NOT NULL,
    expires_at  DATETIME(6) NOT NULL,
    KEY sqllock_lease_expires (expires_at)
) ENGINE = InnoDB;

INSERT IGNORE INTO sqllock_meta (`key`, `value`) VALUES ('schema_version', '1');
