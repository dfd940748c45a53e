/*
 * my_sql.c -- the MySQL/MariaDB dialect: the SQL text of every statement
 * the core runs, and of the session set-up the connect runs (my_conn.c).
 */
#include "my.h"

/*
 * The statements. Placeholders are `?`; the `args` string of each entry
 * in sqllock__my_dialect says which core argument binds to each placeholder.
 *
 * L1: one statement inserts the row, or takes it over when it has expired
 * by the server's clock. The assignments of ON DUPLICATE KEY UPDATE are
 * evaluated left to right and each sees the columns as the earlier ones
 * left them, so expires_at, which every condition reads, is assigned
 * last. The affected-row count says what happened: 1 inserted, 2 taken
 * over, 0 held by another owner (the connection must not set
 * CLIENT_FOUND_ROWS, which would count a held row as 1: the library's
 * own connections never do, after_connect() in my_conn.c checks it, and
 * a lease statement never runs on a borrowed one). VALUES() is the
 * one spelling that MySQL 8.0 and MariaDB both accept. The token is 0
 * here; TOKEN_NEXT and LEASE_SET_TOKEN set it in the same transaction.
 */
/* A new lease row with token 0, its four values as SQL text:
 * placeholders here, a routine's parameters or variables in the routines
 * below. The reader's grant inserts it as it is; every other grant
 * through ACQUIRE_UPSERT. */
#define LEASE_INSERT(name, owner, holder, ttl_ms)                             \
    "INSERT INTO sqllock_lease "                                               \
    "(name, owner, holder, token, acquired_at, expires_at) "                   \
    "VALUES (" name ", " owner ", " holder ", 0, NOW(6), "                     \
    "NOW(6) + INTERVAL (" ttl_ms " * 1000) MICROSECOND)"

/* The insert-or-takeover (the same statement everywhere, so that every
 * acquire path takes over by the same rule). */
#define ACQUIRE_UPSERT(name, owner, holder, ttl_ms)                           \
    LEASE_INSERT(name, owner, holder, ttl_ms) " "                              \
    "ON DUPLICATE KEY UPDATE "                                                 \
    "owner = IF(expires_at <= NOW(6), VALUES(owner), owner), "                 \
    "holder = IF(expires_at <= NOW(6), VALUES(holder), holder), "              \
    "token = IF(expires_at <= NOW(6), 0, token), "                             \
    "acquired_at = IF(expires_at <= NOW(6), VALUES(acquired_at), "             \
    "acquired_at), "                                                           \
    "expires_at = IF(expires_at <= NOW(6), VALUES(expires_at), expires_at)"

static const char SQL_LEASE_ACQUIRE[] = ACQUIRE_UPSERT("?", "?", "?", "?");

/* L5: REPLACE gives the name's counter row a new AUTO_INCREMENT value,
 * which is the token (insert_id()). The counter belongs to the table, so
 * it outlives every lease row and increases across all names. */
static const char SQL_TOKEN_NEXT[] =
    "REPLACE INTO sqllock_token (name) VALUES (?)";

static const char SQL_LEASE_SET_TOKEN[] =
    "UPDATE sqllock_lease SET token = ? WHERE name = ? AND owner = ?";

/* MySQL counts a matched row whose values did not change as 0 affected
 * rows, so the new expiry is made to differ from the old one by at least
 * a microsecond: a renewal that matched always reports 1. */
static const char SQL_LEASE_RENEW[] =
    "UPDATE sqllock_lease SET expires_at = "
    "GREATEST(expires_at + INTERVAL 1 MICROSECOND, "
    "NOW(6) + INTERVAL (? * 1000) MICROSECOND) "
    "WHERE name = ? AND owner = ? AND token = ?";

static const char SQL_LEASE_RELEASE[] =
    "DELETE FROM sqllock_lease WHERE name = ? AND owner = ? AND token = ?";

/* Batched renewal (LEASE_RENEW_MANY, contract L7). The batch is one JSON
 * array, [name, owner, token, ttl_ms] each, read with JSON_TABLE (MySQL
 * 8.0, MariaDB 10.6). Names and owners are compared as bytes, as the
 * columns are; the lease row is found by its primary key. The expiry is
 * LEASE_RENEW's, by the server's clock. MySQL's UPDATE returns no rows,
 * so the SELECT that follows on the same connection names the rows that
 * match by name, owner and token, which are exactly those the UPDATE
 * renewed (see LEASE_RENEWED_MANY in sqllock_driver.h). MariaDB 10.11
 * reads the JSON_TABLE first and each lease row by its primary key
 * (EXPLAIN: json_table ALL, then sqllock_lease eq_ref PRIMARY). */
#define RENEW_BATCH_TABLE                                                     \
    "JSON_TABLE(?, '$[*]' COLUMNS ("                                           \
    "n VARCHAR(255) CHARACTER SET utf8mb4 PATH '$[0]', "                       \
    "o VARCHAR(64) CHARACTER SET utf8mb4 PATH '$[1]', "                        \
    "t BIGINT PATH '$[2]', ttl BIGINT PATH '$[3]')) AS b"
#define RENEW_BATCH_MATCH                                                     \
    "l.name = CAST(b.n AS BINARY) AND l.owner = CAST(b.o AS BINARY) "          \
    "AND l.token = b.t"

static const char SQL_LEASE_RENEW_MANY[] =
    "UPDATE sqllock_lease AS l JOIN " RENEW_BATCH_TABLE " ON "
    RENEW_BATCH_MATCH " SET l.expires_at = "
    "GREATEST(l.expires_at + INTERVAL 1 MICROSECOND, "
    "NOW(6) + INTERVAL (b.ttl * 1000) MICROSECOND)";

static const char SQL_LEASE_RENEWED_MANY[] =
    "SELECT l.name, l.token FROM " RENEW_BATCH_TABLE
    " JOIN sqllock_lease AS l ON " RENEW_BATCH_MATCH;

/* Milliseconds since the epoch are counted with TIMESTAMPDIFF from
 * 1970-01-01, which is exact because the session time zone is UTC, and
 * unlike UNIX_TIMESTAMP() it does not stop at the year 2038 on MariaDB. */
#define EPOCH_MS(col) \
    "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " col \
    ") DIV 1000 AS SIGNED)"

static const char SQL_LEASE_LIST[] =
    "SELECT name, owner, holder, token, " EPOCH_MS("acquired_at") ", "
    EPOCH_MS("expires_at") ", "
    "CAST(TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) DIV 1000 AS SIGNED) "
    "FROM sqllock_lease ORDER BY name";

/* LEASE_RANGE: LEASE_LIST's columns for lo <= name < hi (VARBINARY
 * compares bytes). */
static const char SQL_LEASE_RANGE[] =
    "SELECT name, owner, holder, token, " EPOCH_MS("acquired_at") ", "
    EPOCH_MS("expires_at") ", "
    "CAST(TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) DIV 1000 AS SIGNED) "
    "FROM sqllock_lease WHERE name >= ? AND name < ? ORDER BY name";

/* LEASE_OBSERVE: LEASE_RANGE's rows for every name of the JSON array at
 * once (JSON_TABLE, as LEASE_RENEW_MANY; names compared as bytes, each
 * range read by the primary key), and a row of its own with the server's
 * now, always (its name NULL, first in the order). Not a LEFT JOIN from
 * that row onto the join: MariaDB 10.11 then scans the whole primary key
 * once per name (Handler_read_next 100 282 for two names among 50 000
 * rows, against 2 this way). */
static const char SQL_LEASE_OBSERVE[] =
    "SELECT l.name, l.owner, l.holder, l.token, " EPOCH_MS("l.acquired_at")
    ", " EPOCH_MS("l.expires_at") ", "
    "CAST(TIMESTAMPDIFF(MICROSECOND, NOW(6), l.expires_at) DIV 1000 "
    "AS SIGNED), " EPOCH_MS("NOW(6)") " "
    "FROM JSON_TABLE(?, '$[*]' COLUMNS ("
    "n VARCHAR(255) CHARACTER SET utf8mb4 PATH '$')) AS w "
    "JOIN sqllock_lease AS l ON l.name >= CAST(w.n AS BINARY) "
    "AND l.name < CONCAT(CAST(w.n AS BINARY), ' ') "
    "UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    EPOCH_MS("NOW(6)") " ORDER BY 1";

static const char SQL_SCHEMA_VERSION[] =
    "SELECT CAST(`value` AS SIGNED) FROM sqllock_meta "
    "WHERE `key` = 'schema_version'";

/* Versioned records (DESIGN O1). `key` is a reserved word in MySQL and
 * `value` a keyword, so both are quoted.
 *
 * CREATE is a plain INSERT: 1 affected row for a new record, and an
 * existing key fails it with a duplicate-key error (1062,
 * SQLLOCK_EEXISTS), which the core reads as "exists". Neither depends on
 * a session property (DESIGN D5): not on CLIENT_FOUND_ROWS, with which
 * the earlier ON DUPLICATE KEY UPDATE version = version counted an
 * existing key as 1 row, "created" (issue 26 item 4; an application's
 * borrowed connection may have the flag), nor on the isolation level:
 * the INSERT reads nothing, so it takes no gap lock under REPEATABLE
 * READ (an INSERT ... SELECT ... WHERE NOT EXISTS would, and two
 * creators of one key would deadlock), and under any level it waits for
 * another transaction's uncommitted insert of the key, then fails or
 * goes in as that one commits or rolls back. A duplicate-key error ends
 * the statement only, never the transaction it runs in (InnoDB), and
 * INSERT IGNORE, which would also turn other errors into warnings, is
 * not needed. A CAS always changes the version, so a matched row is a
 * changed row (and the driver counts matched rows of an UPDATE anyway,
 * matched_rows() in my_exec.c); a DELETE counts the rows it deleted
 * whatever the flag. */
static const char SQL_RECORD_GET[] =
    "SELECT `value`, version FROM sqllock_record WHERE `key` = ?";

static const char SQL_RECORD_RANGE[] =
    "SELECT `key`, `value`, version FROM sqllock_record "
    "WHERE `key` >= ? AND `key` < ? ORDER BY `key`";

static const char SQL_HISTORY_PUT[] =
    "UPDATE sqllock_record SET `value` = REPLACE(?, CHAR(1), "
    "CURRENT_USER()), version = version + 1 WHERE `key` = ? AND version = ?";

static const char SQL_LEASE_FORCE_DELETE[] =
    "DELETE FROM sqllock_lease WHERE name = ? AND owner = ? AND token = ?";

static const char SQL_RECORD_CREATE[] =
    "INSERT INTO sqllock_record (`key`, `value`, version) VALUES (?, ?, 1)";

static const char SQL_RECORD_CAS[] =
    "UPDATE sqllock_record SET `value` = ?, version = version + 1 "
    "WHERE `key` = ? AND version = ?";

static const char SQL_RECORD_DELETE[] =
    "DELETE FROM sqllock_record WHERE `key` = ? AND version = ?";

/* Row locks (DESIGN R1-R5). The row is created only when no committed
 * row has the name: under the session's READ COMMITTED the NOT EXISTS
 * subquery is a consistent (non-locking) read, so the statement does not
 * wait for another transaction's FOR UPDATE lock on an existing row
 * (checked on MariaDB 10.11; under REPEATABLE READ it would take a shared
 * lock and wait). It does wait for another transaction that inserted the
 * same name and has not committed, then fails with 1062 (EEXISTS) if
 * that one commits. */
static const char SQL_ROW_ENSURE[] =
    "INSERT INTO sqllock_row (name) SELECT ? FROM DUAL "
    "WHERE NOT EXISTS (SELECT 1 FROM sqllock_row WHERE name = ?)";

/* InnoDB counts the lock wait in whole seconds, at least 1. The session
 * variable applies to the statements that follow on this connection;
 * the core sets it at the start of each row-lock transaction. */
static const char SQL_TXN_LOCK_TIMEOUT[] =
    "SET SESSION innodb_lock_wait_timeout = GREATEST(1, CEILING(? / 1000))";

/*
 * P1: the expiry test is in the DELETE, by NOW(6) as in acquire and renew,
 * so a lease renewed a moment earlier no longer matches; LIMIT bounds the
 * batch. P2: InnoDB locks each index entry of the expiry index that the
 * scan reads, then its row. Read in ascending order, the scan also locks
 * the first entry past the range -- a live lease -- and a renewal or
 * release of that lease, which locks the row first and the index entry
 * second, could then deadlock with the reaper and be the one rolled back.
 * Read in descending order from "now - grace", the scan starts inside the
 * range and touches expired entries only (checked on MariaDB 10.11). Two
 * reapers read in the same order, so they wait for each other, never
 * deadlock; a renewal that races the reaper for an expired row may still
 * deadlock with it, and the core retries the reaper's statement.
 */
static const char SQL_LEASE_REAP[] =
    "DELETE FROM sqllock_lease "
    "WHERE expires_at < NOW(6) - INTERVAL (? * 1000) MICROSECOND "
    "ORDER BY expires_at DESC LIMIT ?";

/*
 * L5: sqllock_token keeps a row for every name ever locked. Deleting one
 * loses nothing: tokens come from the table's AUTO_INCREMENT counter,
 * which MySQL 8.0 and MariaDB 10.2.4+ persist, and the next grant of the
 * name inserts a fresh row with a new token, above every earlier one.
 * Servers that recomputed the counter at start-up as MAX(token) + 1 would
 * hand out a token again if the row with the largest token were gone, so
 * that row is kept. The table cannot be named in a subquery of its own
 * DELETE (error 1093): MAX(token) is read through a derived table, which
 * MySQL materializes.
 *
 * The locking is chosen so that the statement cannot deadlock with an
 * acquire (seen on MariaDB 10.11 with each rejected shape, the acquire
 * often being the one rolled back):
 * - Every lock is on primary-key records, taken in key order: MAX reads
 *   the primary key, not the token index, and `token + 0` keeps the range
 *   optimizer off that index. REPLACE locks the record first and the
 *   token index second; a statement holding token-index entries while
 *   waiting for a record can deadlock with it.
 * - MAX reads FOR UPDATE: a plain read in a DELETE takes shared locks,
 *   and upgrading one to exclusive behind a REPLACE already waiting for
 *   the record is a deadlock. Two trims at once now simply queue.
 * - Rows of names that hold a lease are deleted too. Testing for the
 *   lease row would lock it after the token row, the reverse of an
 *   acquire (lease row, then REPLACE).
 */
static const char SQL_TOKEN_TRIM[] =
    "DELETE FROM sqllock_token "
    "WHERE token + 0 < (SELECT m FROM (SELECT MAX(token) AS m "
    "FROM sqllock_token IGNORE INDEX (sqllock_token_token) FOR UPDATE) "
    "AS newest) "
    "ORDER BY name LIMIT ?";

/*
 * G1: the guard of a write of the application's own (LEASE_GUARD in
 * sqllock_driver.h). LOCK IN SHARE MODE (which MySQL 8.0 still accepts,
 * and MariaDB has no FOR SHARE) reads the latest committed row whatever
 * the transaction's isolation level, and keeps a shared lock on it until
 * the transaction ends, so the takeover's INSERT ... ON DUPLICATE KEY
 * UPDATE, a renewal, a release and the reaper wait for the commit.
 * The clock: acquire compares expires_at (DATETIME(6), stored in UTC)
 * with NOW(6) in a session whose time zone is UTC; the application's
 * session may have any time zone, in which NOW(6) is local time, so the
 * guard reads UTC_TIMESTAMP(6): the same instant in UTC, like NOW(6) the
 * start of the statement that evaluates it (not of its transaction).
 */
static const char SQL_LEASE_GUARD[] =
    "EXISTS (SELECT 1 FROM sqllock_lease WHERE name = ? AND token = ? "
    "AND expires_at > UTC_TIMESTAMP(6) AND owner NOT LIKE 'sqllock-kind%' "
    "LOCK IN SHARE MODE)";

extern const char sqllock__schema_mysql[];

/*
 * The routines' shared parts. Their texts must stay byte for byte what
 * they were: upgrade() creates a routine only where none of its name
 * exists, so a routine never changes under its name (a new text gets a
 * new name). The pieces are written once here and put together below;
 * `indent` is the leading spaces of each line, so that the texts keep
 * their layout.
 *
 * TOKEN_DRAW: L5 inside a routine, TOKEN_NEXT and LEASE_SET_TOKEN with
 * the routine's own values: REPLACE gives the name's counter row a new
 * AUTO_INCREMENT value, LAST_INSERT_ID() reads it into v_token, and the
 * lease row the grant just wrote gets it.
 */
#define TOKEN_DRAW(indent, name, owner)                                       \
    indent "REPLACE INTO sqllock_token (name) VALUES (" name ");\n"          \
    indent "SET v_token = LAST_INSERT_ID();\n"                                \
    indent "UPDATE sqllock_lease SET token = v_token "                         \
    "WHERE name = " name " AND owner = " owner ";\n"

/* A grant of one name in a routine: the insert-or-takeover, and when it
 * took the row (ROW_COUNT() 1 inserted, 2 taken over; 0 held), the
 * token; the caller's text goes on inside the IF (an ELSE, END IF). */
#define GRANT_STEP(indent, name, owner, holder, ttl_ms)                       \
    indent ACQUIRE_UPSERT(name, owner, holder, ttl_ms) ";\n"                  \
    indent "IF ROW_COUNT() > 0 THEN\n"                                        \
    TOKEN_DRAW(indent "  ", name, owner)

/* The parameters of the single-name acquire routines, and what follows
 * every routine's parameter list. */
#define ACQUIRE_PARAMS                                                        \
    "(IN p_name VARBINARY(255), "                                              \
    "IN p_owner CHAR(32) CHARACTER SET ascii, IN p_holder VARBINARY(255), "    \
    "IN p_ttl_ms BIGINT)\n"
#define ROUTINE_BEGIN "SQL SECURITY INVOKER MODIFIES SQL DATA\nBEGIN\n"

/* A failure rolls the routine's transaction back and reports the
 * statement's own error. */
#define EXIT_ROLLBACK                                                         \
    "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"

/*
 * L1, L5, L10 in one round trip (LEASE_ACQUIRE_ONE): the statements of
 * the core's acquire transaction -- SQL_LEASE_ACQUIRE, then, when it took
 * the row (ROW_COUNT() 1 inserted, 2 taken over; 0 held, as the
 * affected-row count says without CLIENT_FOUND_ROWS), SQL_TOKEN_NEXT and
 * SQL_LEASE_SET_TOKEN while the row stays locked -- run by the server in
 * a routine, committed (durably, as any commit), and the token returned
 * as a row (0: held). A failure rolls the transaction back and reports
 * the statement's own error (RESIGNAL: a deadlock stays 1213). Its name
 * carries a version: a later routine gets a new name, and a client of
 * this version keeps calling this one. SQL SECURITY INVOKER: it runs with
 * the caller's privileges on the tables, and needs EXECUTE on it.
 * upgrade() creates it once; its text is sent as one statement.
 */
const char sqllock__my_routine_name[] = "sqllock_acquire_v1";
const char sqllock__my_sql_routine_create[] =
    "CREATE PROCEDURE sqllock_acquire_v1" ACQUIRE_PARAMS ROUTINE_BEGIN
    "  DECLARE v_token BIGINT DEFAULT 0;\n"
    EXIT_ROLLBACK
    "  START TRANSACTION;\n"
    GRANT_STEP("  ", "p_name", "p_owner", "p_holder", "p_ttl_ms")
    "  END IF;\n"
    "  COMMIT;\n"
    "  SELECT v_token;\n"
    "END";

static const char SQL_LEASE_ACQUIRE_ONE[] =
    "CALL sqllock_acquire_v1(?, ?, ?, ?)";

/*
 * L9 without polling (LEASE_ACQUIRE_WAKE): the companion session lock of a
 * lease with wake-ups. Its name is derived from the database and the
 * lock's name, hashed to stay within MySQL's 64 characters for a lock
 * name (session locks are the server's, not the database's: two
 * databases on one server with the same lock name must not share one):
 * 'sqllock_' and 40 hex digits of SHA2(database '/' name). The same text
 * in the routines and in the waiter's statement; DATABASE() is the
 * routine's own database there, which is the session's here.
 *
 * A try that finds the lease held says instead whether some session
 * holds the companion (the holder, most likely): the waiter then waits on
 * it again rather than backing off.
 *
 * The holder takes it while its grant's transaction still holds the
 * lease row, just before the COMMIT, so that a waiter whose try was
 * waiting for that row, and then finds it held, also finds the companion
 * taken and waits on it again (taken after the COMMIT, the waiters that
 * lost a handoff often found no companion and backed off: a p99 wait of
 * 350 ms in the 8-process handoff, 65 ms with this order). GET_LOCK and
 * RELEASE_LOCK are not transactional: a grant that fails after taking it
 * lets it go again. The holder waits for it at most 50 ms, since at a
 * release every blocked waiter gets it in turn and lets it go at once; a
 * session that keeps it longer (a holder whose lease was lost while its
 * session lives on) makes the grant go without it, 50 ms late. (MySQL
 * 8.0, if it counts whole seconds, makes that no wait.) It is not taken
 * twice when this session has it already (a lease lost without a release
 * left it: session locks count, and a lock taken twice would outlive the
 * next release). A failure of the session lock never fails the grant:
 * the handler only reports no companion. The release
 * lets the companion go whatever the DELETE found. The lock also ends
 * with the holder's session, which is what wakes the waiters of a holder
 * that died. On a Galera node session locks are the node's own and the
 * driver says the statements may not be used (session_wake()).
 */
#define WAKE_LOCK(name) \
    "CONCAT('sqllock_', LEFT(SHA2(CONCAT(DATABASE(), '/', " name \
    "), 256), 40))"

const char sqllock__my_wake_acquire_name[] = "sqllock_acquire_wake_v1";
const char sqllock__my_sql_wake_acquire_create[] =
    "CREATE PROCEDURE sqllock_acquire_wake_v1" ACQUIRE_PARAMS ROUTINE_BEGIN
    "  DECLARE v_token BIGINT DEFAULT 0;\n"
    "  DECLARE v_wake INT DEFAULT 0;\n"
    "  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii;\n"
    "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN\n"
    "    IF v_token > 0 AND v_wake = 1 THEN DO RELEASE_LOCK(v_lock); END IF;\n"
    "    ROLLBACK; RESIGNAL;\n"
    "  END;\n"
    "  SET v_lock = " WAKE_LOCK("p_name") ";\n"
    "  START TRANSACTION;\n"
    GRANT_STEP("  ", "p_name", "p_owner", "p_holder", "p_ttl_ms")
    "    BEGIN\n"
    "      DECLARE CONTINUE HANDLER FOR SQLEXCEPTION SET v_wake = 0;\n"
    "      IF IS_USED_LOCK(v_lock) <=> CONNECTION_ID() THEN\n"
    "        SET v_wake = 1;\n"
    "      ELSE\n"
    "        SET v_wake = COALESCE(GET_LOCK(v_lock, 0.05), 0);\n"
    "      END IF;\n"
    "    END;\n"
    "  ELSE\n"
    "    SET v_wake = IS_USED_LOCK(v_lock) IS NOT NULL;\n"
    "  END IF;\n"
    "  COMMIT;\n"
    "  SELECT v_token, v_wake;\n"
    "END";

const char sqllock__my_wake_release_name[] = "sqllock_release_wake_v1";
const char sqllock__my_sql_wake_release_create[] =
    "CREATE PROCEDURE sqllock_release_wake_v1(IN p_name VARBINARY(255), "
    "IN p_owner CHAR(32) CHARACTER SET ascii, IN p_token BIGINT)\n"
    ROUTINE_BEGIN
    "  DECLARE v_n BIGINT DEFAULT 0;\n"
    "  DELETE FROM sqllock_lease "
    "WHERE name = p_name AND owner = p_owner AND token = p_token;\n"
    "  SET v_n = ROW_COUNT();\n"
    "  BEGIN\n"
    "    DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;\n"
    "    DO RELEASE_LOCK(" WAKE_LOCK("p_name") ");\n"
    "  END;\n"
    "  SELECT v_n;\n"
    "END";

static const char SQL_LEASE_ACQUIRE_WAKE[] =
    "CALL sqllock_acquire_wake_v1(?, ?, ?, ?)";
static const char SQL_LEASE_RELEASE_WAKE[] =
    "CALL sqllock_release_wake_v1(?, ?, ?)";
/* The waiter: waits in GET_LOCK (seconds, fractions allowed on MariaDB)
 * and lets the lock go in the same statement when it got it; IF() runs
 * RELEASE_LOCK only then. 1 woke, 0 timed out (NULL: an error, such as
 * a killed wait, also 0). */
static const char SQL_WAKE_WAIT[] =
    "SELECT IF(GET_LOCK(" WAKE_LOCK("CAST(? AS BINARY)") ", ? / 1000), "
    "RELEASE_LOCK(" WAKE_LOCK("CAST(? AS BINARY)") ") = 1, 0)";

/*
 * L12 in one round trip (LEASE_ACQUIRE_MANY): the
 * statements of sqllock_acquire_v1 for each name, in the order given
 * (the core sorts them), in ONE transaction, committed only when every
 * name was taken; at the first name held (ROW_COUNT() 0) a rollback
 * undoes the others, and the row says which. AUTO_INCREMENT values drawn
 * for names before it are not given back: gaps in the counter (L5
 * allows them). A deadlock rolls back and is RESIGNALed (1213), for the
 * core to try again. The lists are split on CHAR(10) (no name contains
 * a control character; CHAR() rather than '\n', which
 * NO_BACKSLASH_ESCAPES would change). A multi-name grant takes no
 * companion session lock: waiters on its names poll (docs/contract.md,
 * L12).
 */
const char sqllock__my_many_name[] = "sqllock_acquire_many_v1";
const char sqllock__my_sql_many_create[] =
    "CREATE PROCEDURE sqllock_acquire_many_v1(IN p_names LONGBLOB, "
    "IN p_owners LONGBLOB, IN p_holder VARBINARY(255), IN p_ttl_ms BIGINT)\n"
    ROUTINE_BEGIN
    "  DECLARE v_i INT DEFAULT 0;\n"
    "  DECLARE v_n INT DEFAULT 0;\n"
    "  DECLARE v_blocker INT DEFAULT 0;\n"
    "  DECLARE v_name VARBINARY(255);\n"
    "  DECLARE v_owner CHAR(32) CHARACTER SET ascii;\n"
    "  DECLARE v_token BIGINT DEFAULT 0;\n"
    "  DECLARE v_tokens LONGTEXT CHARACTER SET ascii DEFAULT '';\n"
    EXIT_ROLLBACK
    "  SET v_n = LENGTH(p_owners) - LENGTH(REPLACE(p_owners, CHAR(10), "
    "'')) + 1;\n"
    "  START TRANSACTION;\n"
    "  WHILE v_i < v_n AND v_blocker = 0 DO\n"
    "    SET v_i = v_i + 1;\n"
    "    SET v_name = SUBSTRING_INDEX(SUBSTRING_INDEX(p_names, CHAR(10), "
    "v_i), CHAR(10), -1);\n"
    "    SET v_owner = SUBSTRING_INDEX(SUBSTRING_INDEX(p_owners, CHAR(10), "
    "v_i), CHAR(10), -1);\n"
    GRANT_STEP("    ", "v_name", "v_owner", "p_holder", "p_ttl_ms")
    "      SET v_tokens = CONCAT(v_tokens, IF(v_i > 1, ' ', ''), v_token);\n"
    "    ELSE\n"
    "      SET v_blocker = v_i;\n"
    "    END IF;\n"
    "  END WHILE;\n"
    "  IF v_blocker = 0 THEN COMMIT; ELSE ROLLBACK; SET v_tokens = ''; "
    "END IF;\n"
    "  SELECT v_blocker, v_tokens;\n"
    "END";

static const char SQL_LEASE_ACQUIRE_MANY[] =
    "CALL sqllock_acquire_many_v1(?, ?, ?, ?)";

/*
 * M2, a reader's grant (RW_READ_ACQUIRE), in one round
 * trip and one transaction. READ COMMITTED takes no gap locks, so the
 * absence of the writer's row W cannot be locked; what every grant of W
 * does lock is W's row of sqllock_token, which it REPLACEs (an exclusive
 * lock held to its commit, after its upsert of W). The reader holds that
 * row in share mode (creating it first when missing: INSERT IGNORE then
 * holds it too) until it commits, so a grant of W either committed
 * before -- and the reader's next consistent read, a fresh one per
 * statement, sees W -- or waits until the reader's row is committed,
 * where the writer's check of the readers finds it. Readers only share
 * the lock. A W found expired is deleted under its row lock before the
 * reader goes in (a writer's renewal in flight makes the DELETE wait and
 * see the new expiry; a late one then finds no row: LOST). Only then is
 * the lease row locked, and only when W expired: a writer taking over an
 * expired W (lease row, then token row) can deadlock with it; the
 * deadlock is RESIGNALed (1213) and the core tries again. The reader's
 * token is drawn from the counter as a grant's is, on its own name.
 */
const char sqllock__my_read_name[] = "sqllock_read_acquire_v1";
const char sqllock__my_sql_read_create[] =
    "CREATE PROCEDURE sqllock_read_acquire_v1(IN p_w VARBINARY(255), "
    "IN p_name VARBINARY(255), IN p_owner CHAR(32) CHARACTER SET ascii, "
    "IN p_holder VARBINARY(255), IN p_ttl_ms BIGINT)\n"
    ROUTINE_BEGIN
    "  DECLARE v_token BIGINT DEFAULT 0;\n"
    "  DECLARE v_n INT DEFAULT 0;\n"
    "  DECLARE v_live INT DEFAULT 0;\n"
    EXIT_ROLLBACK
    "  START TRANSACTION;\n"
    "  SELECT COUNT(*) INTO v_n FROM sqllock_token WHERE name = p_w "
    "LOCK IN SHARE MODE;\n"
    "  IF v_n = 0 THEN\n"
    "    INSERT IGNORE INTO sqllock_token (name) VALUES (p_w);\n"
    "    SELECT COUNT(*) INTO v_n FROM sqllock_token WHERE name = p_w "
    "LOCK IN SHARE MODE;\n"
    "  END IF;\n"
    "  SELECT COUNT(*), COALESCE(MAX(expires_at > NOW(6)), 0) "
    "INTO v_n, v_live FROM sqllock_lease WHERE name = p_w;\n"
    "  IF v_n > 0 AND v_live = 0 THEN\n"
    "    DELETE FROM sqllock_lease WHERE name = p_w AND expires_at <= NOW(6);\n"
    "    SELECT COUNT(*) INTO v_n FROM sqllock_lease WHERE name = p_w;\n"
    "  END IF;\n"
    "  IF v_n = 0 THEN\n"
    "    " LEASE_INSERT("p_name", "p_owner", "p_holder", "p_ttl_ms") ";\n"
    TOKEN_DRAW("    ", "p_name", "p_owner")
    "  END IF;\n"
    "  COMMIT;\n"
    "  SELECT v_token;\n"
    "END";

static const char SQL_RW_READ_ACQUIRE[] =
    "CALL sqllock_read_acquire_v1(?, ?, ?, ?, ?)";

/* RW_EXPIRE: a DELETE locks each row of the range (READ COMMITTED keeps
 * only the locks of rows it deletes) and reads a row locked by a renewal
 * again once that commits. */
static const char SQL_RW_EXPIRE[] =
    "DELETE FROM sqllock_lease WHERE name >= ? AND name < ? "
    "AND expires_at <= NOW(6)";

/* Every routine upgrade() installs, one CREATE each. */
const char sqllock__my_sql_routines_present[] =
    "SELECT ROUTINE_NAME FROM information_schema.ROUTINES "
    "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE' "
    "AND ROUTINE_NAME IN ('sqllock_acquire_v1', 'sqllock_acquire_wake_v1', "
    "'sqllock_release_wake_v1', 'sqllock_acquire_many_v1', "
    "'sqllock_read_acquire_v1')";

static const sqllock_sql my_stmts[SQLLOCK_SQL_COUNT_] = {
    [SQLLOCK_SQL_LEASE_ACQUIRE] = { SQL_LEASE_ACQUIRE, "1234" },
    [SQLLOCK_SQL_TOKEN_NEXT] = { SQL_TOKEN_NEXT, "1" },
    [SQLLOCK_SQL_LEASE_SET_TOKEN] = { SQL_LEASE_SET_TOKEN, "312" },
    [SQLLOCK_SQL_LEASE_RENEW] = { SQL_LEASE_RENEW, "4123" },
    [SQLLOCK_SQL_LEASE_RELEASE] = { SQL_LEASE_RELEASE, "123" },
    [SQLLOCK_SQL_LEASE_LIST] = { SQL_LEASE_LIST, "" },
    [SQLLOCK_SQL_SCHEMA_VERSION] = { SQL_SCHEMA_VERSION, "" },
    [SQLLOCK_SQL_RECORD_GET] = { SQL_RECORD_GET, "1" },
    [SQLLOCK_SQL_RECORD_CREATE] = { SQL_RECORD_CREATE, "12" },
    [SQLLOCK_SQL_RECORD_CAS] = { SQL_RECORD_CAS, "312" },
    [SQLLOCK_SQL_RECORD_DELETE] = { SQL_RECORD_DELETE, "12" },
    [SQLLOCK_SQL_ROW_ENSURE] = { SQL_ROW_ENSURE, "11" },
    [SQLLOCK_SQL_TXN_LOCK_TIMEOUT] = { SQL_TXN_LOCK_TIMEOUT, "1" },
    [SQLLOCK_SQL_LEASE_REAP] = { SQL_LEASE_REAP, "12" },
    [SQLLOCK_SQL_TOKEN_TRIM] = { SQL_TOKEN_TRIM, "1" },
    /* No fast mode on MySQL. */
    [SQLLOCK_SQL_LEASE_ACQUIRE_FAST] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEW_FAST] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_GUARD] = { SQL_LEASE_GUARD, "12" },
    /* A borrowed connection's own wait, to put back (sqllock_borrow()). */
    [SQLLOCK_SQL_LOCK_TIMEOUT_GET] =
        { "SELECT @@SESSION.innodb_lock_wait_timeout * 1000", "" },
    /* Row locks: no database write lock to take. */
    [SQLLOCK_SQL_TXN_WRITE_LOCK] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_ACQUIRE_ONE] = { SQL_LEASE_ACQUIRE_ONE, "1234" },
    [SQLLOCK_SQL_LEASE_ACQUIRE_WAKE] = { SQL_LEASE_ACQUIRE_WAKE, "1234" },
    [SQLLOCK_SQL_LEASE_RELEASE_WAKE] = { SQL_LEASE_RELEASE_WAKE, "123" },
    [SQLLOCK_SQL_WAKE_WAIT] = { SQL_WAKE_WAIT, "121" },
    [SQLLOCK_SQL_LEASE_RENEW_MANY] = { SQL_LEASE_RENEW_MANY, "1" },
    [SQLLOCK_SQL_LEASE_RENEW_MANY_FAST] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEWED_MANY] = { SQL_LEASE_RENEWED_MANY, "1" },
    [SQLLOCK_SQL_LEASE_ACQUIRE_MANY] = { SQL_LEASE_ACQUIRE_MANY, "1234" },
    [SQLLOCK_SQL_LEASE_RANGE] = { SQL_LEASE_RANGE, "12" },
    [SQLLOCK_SQL_RECORD_RANGE] = { SQL_RECORD_RANGE, "12" },
    [SQLLOCK_SQL_HISTORY_PUT] = { SQL_HISTORY_PUT, "123" },
    [SQLLOCK_SQL_LEASE_FORCE_DELETE] = { SQL_LEASE_FORCE_DELETE, "123" },
    [SQLLOCK_SQL_LEASE_OBSERVE] = { SQL_LEASE_OBSERVE, "1" },
    [SQLLOCK_SQL_RW_READ_ACQUIRE] = { SQL_RW_READ_ACQUIRE, "12345" },
    [SQLLOCK_SQL_RW_EXPIRE] = { SQL_RW_EXPIRE, "12" },
    /* RW_READ_ACQUIRE does it in its one round trip. */
    [SQLLOCK_SQL_RW_READ_INSERT] = { NULL, NULL },
};

const sqllock_dialect sqllock__my_dialect = {
    .stmts = my_stmts,
    .nstmts = sizeof my_stmts / sizeof my_stmts[0],
    .schema = sqllock__schema_mysql,
    .ident_quote = '`',
    .placeholder = SQLLOCK_PLACEHOLDER_QUESTION,
    /* MariaDB 10.6+ and MySQL 8.0 both have NOWAIT and SKIP LOCKED. */
    .for_update = { " FOR UPDATE", " FOR UPDATE NOWAIT",
                    " FOR UPDATE SKIP LOCKED" },
};

/* The session set-up, run once per connection (see the file comment of
 * mysql.c). */
const char sqllock__my_sql_session_tz[] =
    "SET time_zone = '+00:00', autocommit = 1, sql_mode = '" MY_SQL_MODE "'";
const char sqllock__my_sql_session_isolation[] =
    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
/* Galera and durability (see after_connect() in my_conn.c), in one
 * round trip. MySQL 8.0 runs both and answers no wsrep rows. */
const char sqllock__my_sql_wsrep_on[] =
    "SHOW VARIABLES WHERE Variable_name IN ('wsrep_on', "
    "'innodb_flush_log_at_trx_commit')";
const char sqllock__my_sql_wsrep_ready[] = "SHOW STATUS LIKE 'wsrep_ready'";
