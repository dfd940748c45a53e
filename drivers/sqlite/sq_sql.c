/*
 * sq_sql.c -- the SQLite dialect: every statement the SQLite driver runs,
 * in named constants, and its statement table (sqllock_driver.h).
 */
#include <stddef.h>

#include "sqllock_driver.h"

/* Server time in ms since the Unix epoch. SQLite fixes 'now' for the
 * duration of one statement, so every use in a statement agrees. */
#define NOW_MS "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

/* L1: one statement inserts the lease, or takes over a row whose lease has
 * expired; the token is the fence counter + 1, and the fence triggers
 * (schema/sqlite.sql) advance the counter in the same statement. */
static const char SQL_LEASE_ACQUIRE[] =
    "INSERT INTO sqllock_lease "
    "(name, owner, holder, token, acquired_at, expires_at) "
    "VALUES (?1, ?2, ?3, (SELECT token + 1 FROM sqllock_fence WHERE id = 1), "
    NOW_MS ", " NOW_MS " + ?4) "
    "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, "
    "holder = excluded.holder, token = excluded.token, "
    "acquired_at = excluded.acquired_at, expires_at = excluded.expires_at "
    "WHERE sqllock_lease.expires_at <= excluded.acquired_at "
    "RETURNING token";

static const char SQL_LEASE_RENEW[] =
    "UPDATE sqllock_lease SET expires_at = " NOW_MS " + ?4 "
    "WHERE name = ?1 AND owner = ?2 AND token = ?3";

static const char SQL_LEASE_RELEASE[] =
    "DELETE FROM sqllock_lease WHERE name = ?1 AND owner = ?2 AND token = ?3";

/* Batched renewal (LEASE_RENEW_MANY, contract L7): LEASE_RENEW for every
 * element of the JSON array ?1, [name, owner, token, ttl_ms] each, in one
 * statement (UPDATE ... FROM, SQLite 3.33; json_each; RETURNING, 3.35).
 * NOW_MS is fixed for the statement, so every lease of the batch gets the
 * same server time. RETURNING names the leases renewed. */
static const char SQL_LEASE_RENEW_MANY[] =
    "UPDATE sqllock_lease SET expires_at = " NOW_MS " + b.ttl "
    "FROM (SELECT json_extract(value, '$[0]') AS n, "
    "json_extract(value, '$[1]') AS o, json_extract(value, '$[2]') AS t, "
    "json_extract(value, '$[3]') AS ttl FROM json_each(?1)) AS b "
    "WHERE name = b.n AND owner = b.o AND token = b.t "
    "RETURNING name, token";

static const char SQL_LEASE_LIST[] =
    "SELECT name, owner, holder, token, acquired_at, expires_at, "
    "expires_at - " NOW_MS " FROM sqllock_lease ORDER BY name";

/* LEASE_RANGE: LEASE_LIST's columns for lo <= name < hi (the BINARY
 * collation compares bytes; the primary key's index serves the range). */
static const char SQL_LEASE_RANGE[] =
    "SELECT name, owner, holder, token, acquired_at, expires_at, "
    "expires_at - " NOW_MS " FROM sqllock_lease "
    "WHERE name >= ? AND name < ? ORDER BY name";

/* LEASE_OBSERVE: LEASE_RANGE's rows for every name of the JSON array ?1
 * at once, and the server's now; the LEFT JOIN from a row of its own
 * gives one row of NULLs and the time when nothing matches. */
static const char SQL_LEASE_OBSERVE[] =
    "SELECT l.name, l.owner, l.holder, l.token, l.acquired_at, "
    "l.expires_at, l.expires_at - " NOW_MS ", " NOW_MS " "
    "FROM (SELECT 1) AS one LEFT JOIN (json_each(?1) AS w "
    "JOIN sqllock_lease AS l ON l.name >= w.value "
    "AND l.name < w.value || ' ') ON 1 ORDER BY l.name";

static const char SQL_SCHEMA_VERSION[] =
    "SELECT CAST(value AS INTEGER) FROM sqllock_meta "
    "WHERE key = 'schema_version'";

/* Versioned records (DESIGN O1). The value is a BLOB, so it keeps NUL
 * bytes; an existing key makes CREATE change nothing (0 rows). */
static const char SQL_RECORD_GET[] =
    "SELECT value, version FROM sqllock_record WHERE key = ?1";

static const char SQL_RECORD_RANGE[] =
    "SELECT key, value, version FROM sqllock_record "
    "WHERE key >= ?1 AND key < ?2 ORDER BY key";

/* SQLite has no users: the line is written as given. */
static const char SQL_HISTORY_PUT[] =
    "UPDATE sqllock_record SET value = CAST(?1 AS BLOB), "
    "version = version + 1 WHERE key = ?2 AND version = ?3";

static const char SQL_LEASE_FORCE_DELETE[] =
    "DELETE FROM sqllock_lease WHERE name = ?1 AND owner = ?2 AND token = ?3";

static const char SQL_RECORD_CREATE[] =
    "INSERT INTO sqllock_record (key, value, version) VALUES (?1, ?2, 1) "
    "ON CONFLICT (key) DO NOTHING";

static const char SQL_RECORD_CAS[] =
    "UPDATE sqllock_record SET value = ?3, version = version + 1 "
    "WHERE key = ?1 AND version = ?2";

static const char SQL_RECORD_DELETE[] =
    "DELETE FROM sqllock_record WHERE key = ?1 AND version = ?2";

/* Row locks (DESIGN R5). SQLite has no row locks: the transaction holds
 * the database's write lock, so creating the row never waits for another
 * transaction's lock on it. */
static const char SQL_ROW_ENSURE[] =
    "INSERT OR IGNORE INTO sqllock_row (name) VALUES (?1)";

/* The busy timeout is the connection's, so a SQL function registered at
 * connect (sqllock_busy_timeout(), see busy_timeout_func()) sets it from
 * a bound value. */
static const char SQL_TXN_LOCK_TIMEOUT[] = "SELECT sqllock_busy_timeout(?1)";

/* P1: the expiry test is in the DELETE, by the same clock as acquire and
 * renew (NOW_MS, fixed for the statement). SQLite's DELETE takes no LIMIT
 * unless built with SQLITE_ENABLE_UPDATE_DELETE_LIMIT, so the batch is
 * chosen by a subquery, and the outer test repeats the expiry check. The
 * statement holds the database's write lock, so reapers take turns (P2).
 * Tokens come from the one-row fence table, which is never deleted: there
 * is nothing to trim. */
#define REAP_EXPIRED "expires_at < " NOW_MS " - ?1"
static const char SQL_LEASE_REAP[] =
    "DELETE FROM sqllock_lease WHERE name IN ("
    "SELECT name FROM sqllock_lease WHERE " REAP_EXPIRED " "
    "ORDER BY expires_at LIMIT ?2) AND " REAP_EXPIRED;

/*
 * G1: the guard of a write of the application's own (LEASE_GUARD in
 * sqllock_driver.h). SQLite has no row locks: a write statement takes
 * the database's write lock before it evaluates its WHERE, and keeps it
 * until its transaction ends, so a takeover (a write too) waits for the
 * commit. A deferred transaction that read before it writes holds a
 * snapshot: if a takeover committed since, the write fails
 * (SQLITE_BUSY_SNAPSHOT) instead of reading a stale lease. NOW_MS is the
 * clock of acquire, fixed for the one statement that evaluates it, and
 * "expires_at > now" is the complement of acquire's takeover test.
 */
static const char SQL_LEASE_GUARD[] =
    "EXISTS (SELECT 1 FROM sqllock_lease WHERE name = ?1 AND token = ?2 "
    "AND expires_at > " NOW_MS " AND owner NOT LIKE 'sqllock-kind%')";

/* M2. SQLite has no routine: the core runs RW_EXPIRE on W and
 * RW_READ_INSERT in one transaction, which BEGIN IMMEDIATE makes the only
 * writer of the database (a grant of W waits for it). */
static const char SQL_RW_EXPIRE[] =
    "DELETE FROM sqllock_lease WHERE name >= ?1 AND name < ?2 "
    "AND expires_at <= " NOW_MS;

static const char SQL_RW_READ_INSERT[] =
    "INSERT INTO sqllock_lease "
    "(name, owner, holder, token, acquired_at, expires_at) "
    "SELECT ?2, ?3, ?4, (SELECT token + 1 FROM sqllock_fence WHERE id = 1), "
    NOW_MS ", " NOW_MS " + ?5 "
    "WHERE NOT EXISTS (SELECT 1 FROM sqllock_lease WHERE name = ?1) "
    "RETURNING token";

extern const char sqllock__schema_sqlite[];

static const sqllock_sql sq_stmts[SQLLOCK_SQL_COUNT_] = {
    [SQLLOCK_SQL_LEASE_ACQUIRE] = { SQL_LEASE_ACQUIRE, "1234" },
    /* RETURNING: the acquire takes its token itself. */
    [SQLLOCK_SQL_TOKEN_NEXT] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_SET_TOKEN] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEW] = { SQL_LEASE_RENEW, "1234" },
    [SQLLOCK_SQL_LEASE_RELEASE] = { SQL_LEASE_RELEASE, "123" },
    [SQLLOCK_SQL_LEASE_LIST] = { SQL_LEASE_LIST, "" },
    [SQLLOCK_SQL_SCHEMA_VERSION] = { SQL_SCHEMA_VERSION, "" },
    [SQLLOCK_SQL_RECORD_GET] = { SQL_RECORD_GET, "1" },
    [SQLLOCK_SQL_RECORD_CREATE] = { SQL_RECORD_CREATE, "12" },
    [SQLLOCK_SQL_RECORD_CAS] = { SQL_RECORD_CAS, "123" },
    [SQLLOCK_SQL_RECORD_DELETE] = { SQL_RECORD_DELETE, "12" },
    [SQLLOCK_SQL_ROW_ENSURE] = { SQL_ROW_ENSURE, "1" },
    [SQLLOCK_SQL_TXN_LOCK_TIMEOUT] = { SQL_TXN_LOCK_TIMEOUT, "1" },
    [SQLLOCK_SQL_LEASE_REAP] = { SQL_LEASE_REAP, "12" },
    /* One counter row for every name: nothing to trim. No fast mode on
     * SQLite. */
    [SQLLOCK_SQL_TOKEN_TRIM] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_ACQUIRE_FAST] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEW_FAST] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_GUARD] = { SQL_LEASE_GUARD, "12" },
    [SQLLOCK_SQL_LOCK_TIMEOUT_GET] = { "PRAGMA busy_timeout", "" },
    /* Inside the application's open transaction (a joined row-lock
     * transaction, R5): an UPDATE takes the write lock when it
     * starts, whatever it matches, waiting up to the busy timeout;
     * this one matches and changes nothing. */
    [SQLLOCK_SQL_TXN_WRITE_LOCK] =
        { "UPDATE sqllock_row SET name = name WHERE 0", "" },
    /* RETURNING acquires in one statement; no session locks to wake
     * waiters with (they poll). */
    [SQLLOCK_SQL_LEASE_ACQUIRE_ONE] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_ACQUIRE_WAKE] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RELEASE_WAKE] = { NULL, NULL },
    [SQLLOCK_SQL_WAKE_WAIT] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEW_MANY] = { SQL_LEASE_RENEW_MANY, "1" },
    /* No fast mode on SQLite; RETURNING names the renewed rows. */
    [SQLLOCK_SQL_LEASE_RENEW_MANY_FAST] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEWED_MANY] = { NULL, NULL },
    /* Several names: the core's transaction (BEGIN IMMEDIATE). */
    [SQLLOCK_SQL_LEASE_ACQUIRE_MANY] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RANGE] = { SQL_LEASE_RANGE, "12" },
    [SQLLOCK_SQL_RECORD_RANGE] = { SQL_RECORD_RANGE, "12" },
    [SQLLOCK_SQL_HISTORY_PUT] = { SQL_HISTORY_PUT, "123" },
    [SQLLOCK_SQL_LEASE_FORCE_DELETE] = { SQL_LEASE_FORCE_DELETE, "123" },
    [SQLLOCK_SQL_LEASE_OBSERVE] = { SQL_LEASE_OBSERVE, "1" },
    /* A reader: RW_EXPIRE and RW_READ_INSERT in the core's write
     * transaction. */
    [SQLLOCK_SQL_RW_READ_ACQUIRE] = { NULL, NULL },
    [SQLLOCK_SQL_RW_EXPIRE] = { SQL_RW_EXPIRE, "12" },
    [SQLLOCK_SQL_RW_READ_INSERT] = { SQL_RW_READ_INSERT, "12345" },
};

const sqllock_dialect sqllock__sq_dialect = {
    .stmts = sq_stmts,
    .nstmts = sizeof sq_stmts / sizeof sq_stmts[0],
    .schema = sqllock__schema_sqlite,
    .ident_quote = '"',
    .placeholder = SQLLOCK_PLACEHOLDER_QUESTION,
    /* No row locks (SQLLOCK_CAP_DB_LOCK): a locking SELECT is a plain
     * one inside the write transaction. */
    .for_update = { "", "", "" },
};
