/*
 * pg_sql.c -- the PostgreSQL dialect: every statement the core runs on
 * PostgreSQL, in one place (DESIGN D1), and the dialect table that hands
 * them to the core.
 */
#include <string.h>

#include "pg.h"

/* A constant key for advisory locks ("sqlo"), paired with a hash of the
 * name. Applications that use two-key advisory locks with the same first
 * key only make some acquires wait a moment; nothing else. */
#define LOCK_CLASS "1936814924"

/*
 * DESIGN D5: no statement depends on what the session's search_path finds
 * for a function. The tables (and the token sequence) are named without a
 * schema, so that the search_path says where they are, as it does for the
 * application's own; every function is named with its schema, pg_catalog,
 * so that a schema listed before pg_catalog in the search_path (a user's
 * own now() or hashtext(), say) cannot take its place. The functions of
 * sqllock's own (sqllock_*_v2) are found through the search_path, as the
 * tables are; inside them, the same rule.
 */
#define NOW "pg_catalog.now()"
#define HASH(name) "pg_catalog.hashtext(" name ")"

/*
 * DESIGN D5: what the statements rely on of the session, whatever it
 * says. Each statement that takes or waits for a lock, or reads what
 * another transaction committed meanwhile, needs READ COMMITTED: a fresh
 * snapshot for each statement (the reader's function below, the
 * writer's RW_EXPIRE), and a row changed since the statement began read
 * again in its latest version rather than failing with a serialization
 * error (the takeover of an expired lease, renewals, the reaper).
 * Setting transaction_isolation to the level it has is allowed at any
 * time, and to another level only before the transaction's first
 * snapshot -- which the statement itself has taken -- so
 * set_config('transaction_isolation', 'read committed', true) here is a
 * check that fails closed: under REPEATABLE READ or SERIALIZABLE the
 * statement fails with 25001 ("SET TRANSACTION ISOLATION LEVEL must be
 * called before any query") before it does anything, and pg_error.c
 * says what to change. The library's own connections never meet it: the
 * connect pins READ COMMITTED (pg_conn.c), and its transactions begin
 * with BEGIN ISOLATION LEVEL READ COMMITTED (pg_txn.c, pg_exec.c).
 * lock_timeout = 0 for the statement's own transaction: a lease
 * statement waits only for another grant of the same name (the advisory
 * lock) or a row that a renewal, a release or a guarded write holds, and
 * a lock_timeout the role or database sets would turn that short wait
 * into an error. The client bounds every round trip itself
 * (statement_timeout_ms + lock_wait_ms).
 */
#define SESSION_PINS                                                          \
    "pg_catalog.set_config('transaction_isolation', 'read committed', true), " \
    "pg_catalog.set_config('lock_timeout', '0', true)"

/* A new lease row's values, as SQL text (the statements' parameters, or
 * a function's parameters and variables), with a token drawn from the
 * sequence, and its columns. */
#define LEASE_COLUMNS "(name, owner, holder, token, acquired_at, expires_at)"
#define LEASE_VALUES(name, owner, holder, ttl_ms)                             \
    name ", " owner ", " holder ", pg_catalog.nextval('sqllock_token_seq'), " \
    NOW ", " NOW " + " ttl_ms " * interval '1 millisecond'"

/* The insert or takeover of `rows` (a SELECT or VALUES of LEASE_VALUES),
 * RETURNING `returning`: the same text in LEASE_ACQUIRE and in the
 * multi-name function, so that both take over by the same rule. The
 * function's texts must stay byte for byte what they were (upgrade()
 * creates a function only where none of its name exists). */
#define LEASE_UPSERT(rows, returning)                                         \
    "INSERT INTO sqllock_lease AS l " LEASE_COLUMNS " " rows " "               \
    "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, "                \
    "holder = EXCLUDED.holder, token = EXCLUDED.token, "                       \
    "acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at "    \
    "WHERE l.expires_at <= EXCLUDED.acquired_at "                              \
    "RETURNING " returning

/* L1 in one statement: insert the lease, or take over a row whose lease
 * has expired by the server clock. The transaction-scoped advisory lock on
 * the name's hash is taken before nextval(), so acquires of one name take
 * their tokens in the order they are granted (L5): a token can never be
 * drawn by a statement that then waits for another acquire of the same
 * name to commit. now() is the statement's start; if the statement waited,
 * the new lease is that much shorter, never longer, than the ttl. The
 * session pins come first in the select list, which is evaluated in
 * order: the lock's wait already has no lock_timeout. */
#define LEASE_ACQUIRE(turn_extra)                                             \
    LEASE_UPSERT("SELECT " LEASE_VALUES("$1", "$2", "$3", "$4::float8") " "   \
                 "FROM (SELECT " SESSION_PINS ", "                             \
                 "pg_catalog.pg_advisory_xact_lock(" LOCK_CLASS ", "           \
                 HASH("$1") ")" turn_extra ") AS turn", "token")

/*
 * L10 whatever the session says. The URL goes to libpq whole, so
 * `options=-c synchronous_commit=off` in it -- or ALTER ROLE/DATABASE ...
 * SET synchronous_commit, or postgresql.conf -- would make every commit
 * of the session asynchronous, durable grants and renewals included: a
 * grant that a crash then forgets could admit a second owner. So a
 * durable grant or renewal sets synchronous_commit for its own
 * transaction (set_config(..., true), in the statement itself: no extra
 * round trip), raising 'off' and 'local' to 'on' and keeping 'on',
 * 'remote_write' and 'remote_apply' as configured, so that a
 * synchronous standby the user asked for is still waited for. ('local'
 * is raised too: with synchronous standbys it would let a failover
 * forget a grant, which is the risk the fast mode documents; without
 * any, 'on' is the same as 'local'.) The functions are named with their
 * schema, so that a search_path the URL sets cannot put others in their
 * place. The session's own setting is left as it was.
 */
#define DURABLE_COMMIT                                                        \
    "pg_catalog.set_config('synchronous_commit', "                             \
    "CASE WHEN pg_catalog.current_setting('synchronous_commit') "              \
    "IN ('off', 'local') THEN 'on' "                                           \
    "ELSE pg_catalog.current_setting('synchronous_commit') END, true)"

static const char SQL_LEASE_ACQUIRE[] = LEASE_ACQUIRE(", " DURABLE_COMMIT);

/* Fast mode (SQLLOCK_LEASE_FAST): the same grant, committed without
 * waiting for the WAL flush. set_config(..., true) is a volatile call in
 * the subquery's select list, which the planner keeps and runs, like the
 * advisory lock beside it; it lasts for this statement's transaction. */
static const char SQL_LEASE_ACQUIRE_FAST[] =
    LEASE_ACQUIRE(", pg_catalog.set_config('synchronous_commit', 'off', "
                  "true)");

/* The EXISTS test on the CTE is a one-time filter that the executor runs
 * before the scan, so the durable setting is made whether or not the row
 * is still ours (as in the fast variant below). */
static const char SQL_LEASE_RENEW[] =
    "WITH durable AS (SELECT " SESSION_PINS ", " DURABLE_COMMIT ") "
    "UPDATE sqllock_lease "
    "SET expires_at = " NOW " + $4::float8 * interval '1 millisecond' "
    "WHERE name = $1 AND owner = $2 AND token = $3 "
    "AND EXISTS (SELECT 1 FROM durable)";

static const char SQL_LEASE_RENEW_FAST[] =
    "WITH async AS (SELECT " SESSION_PINS ", "
    "pg_catalog.set_config('synchronous_commit', 'off', true)) "
    "UPDATE sqllock_lease "
    "SET expires_at = " NOW " + $4::float8 * interval '1 millisecond' "
    "WHERE name = $1 AND owner = $2 AND token = $3 "
    "AND EXISTS (SELECT 1 FROM async)";

/* Batched renewal (LEASE_RENEW_MANY, contract L7): LEASE_RENEW for every
 * element of the JSON array $1, [name, owner, token, ttl_ms] each, in one
 * statement and one transaction. A row is renewed only where name, owner
 * and token all match one element, by the server's clock (now(), the
 * statement's start, as LEASE_RENEW); an element that matches no row is
 * simply not returned, so one lost lease fails nothing else. RETURNING
 * names the leases renewed. The name is compared in the "C" collation of
 * the primary key, so the lookup uses it. The commit is made durable
 * (or, for the fast variant, asynchronous) as in the single renewals. */
#define LEASE_RENEW_MANY(cte)                                                 \
    "WITH c AS (SELECT " SESSION_PINS ", " cte ") "                            \
    "UPDATE sqllock_lease AS l "                                               \
    "SET expires_at = " NOW " + b.ttl * interval '1 millisecond' "             \
    "FROM (SELECT (e->>0) COLLATE \"C\" AS name, e->>1 AS owner, "            \
    "(e->>2)::bigint AS token, (e->>3)::float8 AS ttl "                        \
    "FROM pg_catalog.jsonb_array_elements($1::jsonb) AS e) AS b "              \
    "WHERE l.name = b.name AND l.owner = b.owner AND l.token = b.token "        \
    "AND EXISTS (SELECT 1 FROM c) "                                            \
    "RETURNING l.name, l.token"

static const char SQL_LEASE_RENEW_MANY[] = LEASE_RENEW_MANY(DURABLE_COMMIT);
static const char SQL_LEASE_RENEW_MANY_FAST[] =
    LEASE_RENEW_MANY("pg_catalog.set_config('synchronous_commit', 'off', "
                     "true)");

/* L10: a release need not be durable, so its commit does not wait for the
 * WAL flush. set_config(..., true) lasts for this statement's own
 * transaction, so it costs no extra round trip. L9: when the row was ours
 * and is deleted, pg_notify() in RETURNING wakes the waiters listening on
 * the name's channel ($4, made by the core); the notification goes out at
 * the commit, so a waiter woken by it finds the row gone. A NULL channel
 * (a lease with SQLLOCK_LEASE_NO_WAKEUP) notifies no one. */
static const char SQL_LEASE_RELEASE[] =
    "WITH async AS (SELECT " SESSION_PINS ", "
    "pg_catalog.set_config('synchronous_commit', 'off', true)) "
    "DELETE FROM sqllock_lease "
    "WHERE name = $1 AND owner = $2 AND token = $3 "
    "AND EXISTS (SELECT 1 FROM async) "
    "RETURNING CASE WHEN $4::text IS NOT NULL THEN "
    "pg_catalog.pg_notify($4, '') END";

static const char SQL_LEASE_LIST[] =
    "SELECT name, owner, holder, token, "
    "(extract(epoch FROM acquired_at) * 1000)::bigint, "
    "(extract(epoch FROM expires_at) * 1000)::bigint, "
    "(extract(epoch FROM expires_at - " NOW ") * 1000)::bigint "
    "FROM sqllock_lease ORDER BY name";

/* LEASE_RANGE: LEASE_LIST's columns for lo <= name < hi (the column's "C"
 * collation compares bytes, and its primary key index serves the range). */
static const char SQL_LEASE_RANGE[] =
    "SELECT name, owner, holder, token, "
    "(extract(epoch FROM acquired_at) * 1000)::bigint, "
    "(extract(epoch FROM expires_at) * 1000)::bigint, "
    "(extract(epoch FROM expires_at - " NOW ") * 1000)::bigint "
    "FROM sqllock_lease WHERE name >= $1 AND name < $2 ORDER BY name";

/* LEASE_OBSERVE: LEASE_RANGE's rows for every name of the JSON array $1
 * at once (each name's range an index range scan, in the "C" collation
 * of the primary key), and the server's now; the LEFT JOIN from a row of
 * its own gives one row of NULLs and the time when nothing matches. */
static const char SQL_LEASE_OBSERVE[] =
    "SELECT l.name, l.owner, l.holder, l.token, "
    "(extract(epoch FROM l.acquired_at) * 1000)::bigint, "
    "(extract(epoch FROM l.expires_at) * 1000)::bigint, "
    "(extract(epoch FROM l.expires_at - " NOW ") * 1000)::bigint, "
    "(extract(epoch FROM " NOW ") * 1000)::bigint "
    "FROM (SELECT 1) AS one LEFT JOIN ("
    "pg_catalog.jsonb_array_elements_text($1::jsonb) AS w(n) "
    "JOIN sqllock_lease AS l ON l.name >= w.n COLLATE \"C\" "
    "AND l.name < (w.n || ' ') COLLATE \"C\") ON true ORDER BY l.name";

static const char SQL_SCHEMA_VERSION[] =
    "SELECT value::bigint FROM sqllock_meta WHERE key = 'schema_version'";

/* Versioned records (DESIGN O1). key and value are non-reserved words in
 * PostgreSQL and need no quotes. The value parameter is sent in binary
 * format (see pg_execute()), so the server takes it as bytea from the
 * column it goes to; the value column comes back as bytea text ("\x..."),
 * which pg_column_blob() decodes. */
static const char SQL_RECORD_GET[] =
    "SELECT value, version FROM sqllock_record WHERE key = $1";

static const char SQL_RECORD_RANGE[] =
    "SELECT key, value, version FROM sqllock_record "
    "WHERE key >= $1 AND key < $2 ORDER BY key";

static const char SQL_HISTORY_PUT[] =
    "UPDATE sqllock_record SET value = pg_catalog.convert_to("
    "pg_catalog.replace($1::text, pg_catalog.chr(1), current_user::text), "
    "'UTF8'), version = version + 1 WHERE key = $2 AND version = $3";

static const char SQL_LEASE_FORCE_DELETE[] =
    "DELETE FROM sqllock_lease WHERE name = $1 AND owner = $2 AND token = $3";

static const char SQL_RECORD_CREATE[] =
    "INSERT INTO sqllock_record (key, value, version) VALUES ($1, $2, 1) "
    "ON CONFLICT (key) DO NOTHING";

static const char SQL_RECORD_CAS[] =
    "UPDATE sqllock_record SET value = $3, version = version + 1 "
    "WHERE key = $1 AND version = $2";

static const char SQL_RECORD_DELETE[] =
    "DELETE FROM sqllock_record WHERE key = $1 AND version = $2";

/* Row locks (DESIGN R1-R5). ON CONFLICT DO NOTHING does not wait for a
 * row lock that another transaction holds on an existing row (checked on
 * the server: it returns at once while another session holds the row
 * FOR UPDATE). It does wait for another transaction that inserted the
 * same name and has not committed yet, bounded by lock_timeout. */
static const char SQL_ROW_ENSURE[] =
    "INSERT INTO sqllock_row (name) VALUES ($1) ON CONFLICT (name) DO NOTHING";

/* For the session (set_config(..., false)): the core sets it only when
 * the value changes, so a transaction costs no extra round trip for it.
 * lock_timeout takes at most INT_MAX ms (24.8 days); a longer timeout
 * (SQLLOCK_WAIT_FOREVER, say) waits that long rather than failing. */
static const char SQL_TXN_LOCK_TIMEOUT[] =
    "SELECT pg_catalog.set_config('lock_timeout', "
    "LEAST($1::bigint, 2147483647) || 'ms', false)";

/* A borrowed connection's own lock timeout, to put back after a row-lock
 * transaction (sqllock_borrow()): lock_timeout as the session has it now
 * ('0' = none), in ms. */
static const char SQL_LOCK_TIMEOUT_GET[] =
    "SELECT (EXTRACT(EPOCH FROM pg_catalog.current_setting('lock_timeout')"
    "::interval) * 1000)::bigint";

/* Behind a transaction pooler (pooler=transaction) a session setting
 * would stay on a server connection that other clients get next, and be
 * gone from the next transaction of ours: the timeout is set for the
 * transaction only, and begin() sets it again in every transaction (see
 * sqllock__pg_begin()). */
const char sqllock__pg_sql_lock_timeout_local[] =
    "SELECT pg_catalog.set_config('lock_timeout', "
    "LEAST($1::bigint, 2147483647) || 'ms', true)";

/* P1, P2: the expiry test is in the DELETE itself, by the server's clock
 * and with the same now() as acquire and renew, so a lease renewed a
 * moment earlier no longer matches. The CTE bounds the batch and locks
 * the rows it picks, skipping rows that another reaper (or a renew,
 * release or takeover) has locked, so reapers never wait for each other.
 * It is a MATERIALIZED CTE, run once, and not a subquery in the IN: a
 * plan that put that subquery on the inner side of a nested loop ran it
 * again for every outer row, and each run skipped the rows this DELETE
 * had already removed and took the next ones, so one statement deleted
 * every expired row instead of one batch (test_reaper_P1_batches saw 250
 * for a batch of 100). The outer test runs again on the row as it is
 * when locked (PostgreSQL re-evaluates it on the latest version in READ
 * COMMITTED). */
#define REAP_EXPIRED \
    "expires_at < " NOW " - $1::float8 * interval '1 millisecond'"
static const char SQL_LEASE_REAP[] =
    "WITH pins AS (SELECT " SESSION_PINS "), "
    "victims AS MATERIALIZED ("
    "SELECT name FROM sqllock_lease WHERE " REAP_EXPIRED " "
    "AND EXISTS (SELECT 1 FROM pins) "
    "ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
    "DELETE FROM sqllock_lease WHERE name IN (SELECT name FROM victims) "
    "AND " REAP_EXPIRED;

/*
 * G1: the guard of a write of the application's own (LEASE_GUARD in
 * sqllock_driver.h), a boolean expression for the write's WHERE.
 * - FOR SHARE keeps the lease row until the guarded transaction ends: a
 *   takeover (INSERT ... ON CONFLICT DO UPDATE), a renewal, a release and
 *   a reaper's DELETE all lock the row for writing first, so they wait for
 *   the commit. Not FOR KEY SHARE: the takeover updates no key column and
 *   takes only FOR NO KEY UPDATE, which FOR KEY SHARE does not block.
 * - clock_timestamp() is the time of the check. now() would be the
 *   transaction's start, which in an application's transaction can lie
 *   long before its write. The takeover tests expires_at <= its own
 *   now(), so "expires_at > clock" is exactly its complement.
 * - In READ COMMITTED a row that a takeover changed while the guard
 *   waited for it is read again in its new version (new token: false);
 *   in REPEATABLE READ and SERIALIZABLE locking a row changed after the
 *   snapshot fails with a serialization error: the write fails.
 * The table is named as the other statements name it, through the
 * search_path; the function with its schema. A kind marker's row (N1,
 * core/kind.c; its owner begins "sqllock-kind", which no client's 32 hex
 * digits do) never passes: its token is public and it never expires. No
 * ':' in the text (the core rewrites placeholders for named styles).
 */
static const char SQL_LEASE_GUARD[] =
    "EXISTS (SELECT 1 FROM sqllock_lease WHERE name = $1 AND token = $2 "
    "AND expires_at > pg_catalog.clock_timestamp() "
    "AND owner NOT LIKE 'sqllock-kind%' FOR SHARE)";

/*
 * The session pins of the functions below, as their first statements (in
 * a function, the snapshot of the statement that called it already
 * exists, so the isolation level can only be checked, as SESSION_PINS
 * does), and what creates a function where it is missing: a DO block
 * that also takes "another session created it first" and "this user may
 * not" as done (the core then does without it). A function's name
 * carries a version, as MySQL's routines: upgrade() never replaces a
 * function, so a changed text gets a new name, and clients of an older
 * version keep calling the old one, which stays.
 */
#define FUNCTION_PINS                                                         \
    "  PERFORM pg_catalog.set_config('transaction_isolation', "                \
    "'read committed', true);\n"                                               \
    "  PERFORM pg_catalog.set_config('lock_timeout', '0', true);\n"            \
    "  PERFORM " DURABLE_COMMIT ";\n"
#define CREATE_IF_MISSING(signature, create)                                  \
    "DO $sqllock_do$ BEGIN\n"                                                  \
    "IF pg_catalog.to_regprocedure('" signature "') IS NULL THEN\n"            \
    create                                                                     \
    "END IF;\n"                                                                \
    "EXCEPTION WHEN duplicate_function OR unique_violation OR "                \
    "insufficient_privilege OR read_only_sql_transaction THEN NULL;\n"         \
    "END $sqllock_do$"

/*
 * L12 in one round trip (LEASE_ACQUIRE_MANY): a
 * function that takes every name's advisory lock first -- each key once,
 * in ascending order of the keys, not of the names: two names whose
 * hashtext() is the same share one key, and taken in the order of the
 * names (a < b < c, key(a) = key(c)) one caller holding key(a) and
 * waiting for key(b) and another holding key(b) and waiting for key(c)
 * would deadlock (sqllock_acquire_many_v1 did) -- then, in the order
 * given (the core sorts the names), the insert or takeover of each name
 * exactly as SQL_LEASE_ACQUIRE does it, with a token drawn after the
 * name's lock, inside a block whose exception undoes them all (a
 * subtransaction) when a name is held: RAISE with the held name's
 * position, caught, and answered as the row (position, ''). The tokens
 * drawn before it stay drawn: a gap in the sequence (L5 allows it). Its
 * commit is durable whatever the session says (DURABLE_COMMIT, as the
 * single grant). A single acquire takes one key, a reader one key
 * (shared): no two callers ever wait for each other's keys in opposite
 * orders.
 */
#define ACQUIRE_MANY_SIGNATURE \
    "sqllock_acquire_many_v2(text, text, text, double precision)"
static const char SQL_ACQUIRE_MANY_CREATE[] = CREATE_IF_MISSING(
    ACQUIRE_MANY_SIGNATURE,
    "CREATE FUNCTION sqllock_acquire_many_v2(p_names text, p_owners text, "
    "p_holder text, p_ttl_ms double precision)\n"
    "RETURNS TABLE (o_blocker integer, o_tokens text)\n"
    "LANGUAGE plpgsql VOLATILE SECURITY INVOKER AS $sqllock_f$\n"
    "#variable_conflict use_column\n"
    "DECLARE\n"
    "  v_names text[] := pg_catalog.string_to_array(p_names, E'\\n');\n"
    "  v_owners text[] := pg_catalog.string_to_array(p_owners, E'\\n');\n"
    "  v_tokens text := '';\n"
    "  v_token bigint;\n"
    "  v_key integer;\n"
    "BEGIN\n"
    FUNCTION_PINS
    "  FOR v_key IN SELECT DISTINCT " HASH("n") " "
    "FROM pg_catalog.unnest(v_names) AS n ORDER BY 1 LOOP\n"
    "    PERFORM pg_catalog.pg_advisory_xact_lock(" LOCK_CLASS ", v_key);\n"
    "  END LOOP;\n"
    "  BEGIN\n"
    "    FOR i IN 1 .. pg_catalog.cardinality(v_names) LOOP\n"
    "      v_token := NULL;\n"
    "      " LEASE_UPSERT("VALUES (" LEASE_VALUES("v_names[i]", "v_owners[i]",
                                             "p_holder", "p_ttl_ms") ")",
                         "l.token INTO v_token") ";\n"
    "      IF v_token IS NULL THEN\n"
    "        RAISE EXCEPTION USING ERRCODE = 'SQLL1', MESSAGE = i::text;\n"
    "      END IF;\n"
    "      v_tokens := v_tokens || CASE WHEN i > 1 THEN ' ' ELSE '' END "
    "|| v_token::text;\n"
    "    END LOOP;\n"
    "  EXCEPTION WHEN SQLSTATE 'SQLL1' THEN\n"
    "    RETURN QUERY SELECT SQLERRM::integer, ''::text;\n"
    "    RETURN;\n"
    "  END;\n"
    "  RETURN QUERY SELECT 0, v_tokens;\n"
    "END\n"
    "$sqllock_f$;\n");

static const char SQL_LEASE_ACQUIRE_MANY[] =
    "SELECT o_blocker, o_tokens "
    "FROM sqllock_acquire_many_v2($1, $2, $3, $4::float8)";

/*
 * M2, a reader's grant (RW_READ_ACQUIRE), in one round
 * trip: a function, because the check of the writer's row W must come
 * AFTER the shared advisory lock on W's key (the key every grant of W
 * takes exclusively in LEASE_ACQUIRE), and a statement's snapshot is
 * taken before any lock it waits for: a single statement that waited for
 * a writer's grant would not see the W it committed. In a VOLATILE
 * plpgsql function each statement takes a fresh snapshot -- in READ
 * COMMITTED only: under REPEATABLE READ every statement of the function
 * sees the snapshot its caller took before the wait, and a reader that
 * waited for a writer's grant would not see W (sqllock_read_acquire_v1
 * then granted a reader beside the writer); FUNCTION_PINS refuses any
 * other level. A W that has expired is deleted first, under its row
 * lock (a renewal in flight makes the DELETE wait and then see the new
 * expiry), so that a writer's late renewal finds no row (LOST) rather
 * than extending a W that readers already passed. The shared lock only
 * orders readers against grants of W; readers do not wait for each
 * other. Durable as a grant.
 */
#define READ_ACQUIRE_SIGNATURE \
    "sqllock_read_acquire_v2(text, text, text, text, double precision)"
static const char SQL_READ_ACQUIRE_CREATE[] = CREATE_IF_MISSING(
    READ_ACQUIRE_SIGNATURE,
    "CREATE FUNCTION sqllock_read_acquire_v2(p_w text, p_name text, "
    "p_owner text, p_holder text, p_ttl_ms double precision)\n"
    "RETURNS bigint\n"
    "LANGUAGE plpgsql VOLATILE SECURITY INVOKER AS $sqllock_f$\n"
    "DECLARE\n"
    "  v_token bigint;\n"
    "BEGIN\n"
    FUNCTION_PINS
    "  PERFORM pg_catalog.pg_advisory_xact_lock_shared(" LOCK_CLASS ", "
    HASH("p_w") ");\n"
    "  DELETE FROM sqllock_lease WHERE name = p_w AND expires_at <= " NOW
    ";\n"
    "  IF EXISTS (SELECT 1 FROM sqllock_lease WHERE name = p_w) THEN\n"
    "    RETURN 0;\n"
    "  END IF;\n"
    "  INSERT INTO sqllock_lease " LEASE_COLUMNS " "
    "VALUES (" LEASE_VALUES("p_name", "p_owner", "p_holder", "p_ttl_ms") ") "
    "RETURNING token INTO v_token;\n"
    "  RETURN v_token;\n"
    "END\n"
    "$sqllock_f$;\n");

static const char SQL_RW_READ_ACQUIRE[] =
    "SELECT sqllock_read_acquire_v2($1, $2, $3, $4, $5::float8)";

/* RW_EXPIRE: the writer's check of the readers (and nothing else) relies
 * on this DELETE, which locks each row and re-reads a row a renewal
 * changed meanwhile (READ COMMITTED); durable, as the grant it leads to. */
static const char SQL_RW_EXPIRE[] =
    "WITH durable AS (SELECT " SESSION_PINS ", " DURABLE_COMMIT ") "
    "DELETE FROM sqllock_lease WHERE name >= $1 AND name < $2 "
    "AND expires_at <= " NOW " AND EXISTS (SELECT 1 FROM durable)";

/* sqllock_init() on a current schema: the functions of
 * LEASE_ACQUIRE_MANY and RW_READ_ACQUIRE, where they are missing. */
int sqllock__pg_upgrade(sqllock_conn *c, sqllock_dberr *err)
{
    int rc = sqllock__pg_exec_script(c, SQL_ACQUIRE_MANY_CREATE, err);

    if (rc == SQLLOCK_OK)
        rc = sqllock__pg_exec_script(c, SQL_READ_ACQUIRE_CREATE, err);
    return rc;
}

extern const char sqllock__schema_postgres[];

static const sqllock_sql pg_stmts[SQLLOCK_SQL_COUNT_] = {
    [SQLLOCK_SQL_LEASE_ACQUIRE] = { SQL_LEASE_ACQUIRE, "1234" },
    /* RETURNING: the acquire takes its token itself. */
    [SQLLOCK_SQL_TOKEN_NEXT] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_SET_TOKEN] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEW] = { SQL_LEASE_RENEW, "1234" },
    [SQLLOCK_SQL_LEASE_RELEASE] = { SQL_LEASE_RELEASE, "1234" },
    [SQLLOCK_SQL_LEASE_LIST] = { SQL_LEASE_LIST, "" },
    [SQLLOCK_SQL_SCHEMA_VERSION] = { SQL_SCHEMA_VERSION, "" },
    [SQLLOCK_SQL_RECORD_GET] = { SQL_RECORD_GET, "1" },
    [SQLLOCK_SQL_RECORD_CREATE] = { SQL_RECORD_CREATE, "12" },
    [SQLLOCK_SQL_RECORD_CAS] = { SQL_RECORD_CAS, "123" },
    [SQLLOCK_SQL_RECORD_DELETE] = { SQL_RECORD_DELETE, "12" },
    [SQLLOCK_SQL_ROW_ENSURE] = { SQL_ROW_ENSURE, "1" },
    [SQLLOCK_SQL_TXN_LOCK_TIMEOUT] = { SQL_TXN_LOCK_TIMEOUT, "1" },
    [SQLLOCK_SQL_LEASE_REAP] = { SQL_LEASE_REAP, "12" },
    /* Tokens come from a sequence: no per-name rows to trim. */
    [SQLLOCK_SQL_TOKEN_TRIM] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_ACQUIRE_FAST] = { SQL_LEASE_ACQUIRE_FAST, "1234" },
    [SQLLOCK_SQL_LEASE_RENEW_FAST] = { SQL_LEASE_RENEW_FAST, "1234" },
    [SQLLOCK_SQL_LEASE_GUARD] = { SQL_LEASE_GUARD, "12" },
    [SQLLOCK_SQL_LOCK_TIMEOUT_GET] = { SQL_LOCK_TIMEOUT_GET, "" },
    /* Row locks: no database write lock to take. */
    [SQLLOCK_SQL_TXN_WRITE_LOCK] = { NULL, NULL },
    /* PostgreSQL acquires in one statement and wakes waiters with
     * NOTIFY. */
    [SQLLOCK_SQL_LEASE_ACQUIRE_ONE] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_ACQUIRE_WAKE] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RELEASE_WAKE] = { NULL, NULL },
    [SQLLOCK_SQL_WAKE_WAIT] = { NULL, NULL },
    [SQLLOCK_SQL_LEASE_RENEW_MANY] = { SQL_LEASE_RENEW_MANY, "1" },
    [SQLLOCK_SQL_LEASE_RENEW_MANY_FAST] = { SQL_LEASE_RENEW_MANY_FAST, "1" },
    /* RETURNING names the renewed rows. */
    [SQLLOCK_SQL_LEASE_RENEWED_MANY] = { NULL, NULL },
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

const sqllock_dialect sqllock__pg_dialect = {
    .stmts = pg_stmts,
    .nstmts = sizeof pg_stmts / sizeof pg_stmts[0],
    .schema = sqllock__schema_postgres,
    .ident_quote = '"',
    .placeholder = SQLLOCK_PLACEHOLDER_DOLLAR,
    .for_update = { " FOR UPDATE", " FOR UPDATE NOWAIT",
                    " FOR UPDATE SKIP LOCKED" },
};

int sqllock__pg_stmt_kind(const char *sql)
{
    if (strcmp(sql, SQL_LEASE_ACQUIRE) == 0 ||
        strcmp(sql, SQL_LEASE_ACQUIRE_MANY) == 0 ||
        strcmp(sql, SQL_LEASE_RENEW) == 0 ||
        strcmp(sql, SQL_LEASE_RENEW_MANY) == 0 ||
        strcmp(sql, SQL_RW_READ_ACQUIRE) == 0 ||
        strcmp(sql, SQL_RW_EXPIRE) == 0)
        return PG_STMT_DURABLE;
    if (strcmp(sql, SQL_TXN_LOCK_TIMEOUT) == 0)
        return PG_STMT_LOCK_TIMEOUT;
    return PG_STMT_PLAIN;
}
